# The course's entry points. `make lab` and `make test` set up .venv themselves on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
TEST_STAMP := $(VENV)/.installed-lightning-stamp

.PHONY: lab test test-unit test-notebooks bench data clean-venv

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e .
	touch $(STAMP)

# the optional Lightning extra (minitf.lightning, notebook 10): small, so the course's own commands
# install it; `pip install -e .` alone leaves it out
$(TEST_STAMP): $(STAMP)
	$(PY) -m pip install --quiet --disable-pip-version-check -e ".[lightning]"
	touch $(TEST_STAMP)

# JupyterLab refuses to start as root (containers, many cloud machines) unless told it may
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root,)
LAB_ARGS ?=

lab: $(TEST_STAMP)  ## open JupyterLab on the notebooks (options: make lab LAB_ARGS="--port 8899 --no-browser")
	$(VENV)/bin/jupyter lab $(ALLOW_ROOT) $(LAB_ARGS) notebooks/

test: $(TEST_STAMP)  ## unit tests and every notebook re-run and compared with its stored outputs
	$(PY) -m pytest --nbval tests notebooks

test-unit: $(TEST_STAMP)
	$(PY) -m pytest tests

test-notebooks: $(TEST_STAMP)
	$(PY) -m pytest --nbval notebooks

# every CPU instruction set torch offers on this machine, with 1 and 2 threads: a learner's CPU is
# not yours, and float32 results differ in their last digits between them
.PHONY: test-matrix
test-matrix: $(TEST_STAMP)  ## the unit tests and the notebooks under each ATEN_CPU_CAPABILITY and thread count
	bash tests/matrix.sh $(PY)

.PHONY: test-browser
test-browser: $(TEST_STAMP)  ## every notebook in JupyterLab in headless Chromium: stored outputs and widget pictures, run all, use each widget
	bash tests/browser/install.sh $(PY)
	$(PY) tests/browser/check_notebooks.py

data: $(STAMP)  ## regenerate data/train.txt and data/val.txt (the documented command)
	$(PY) -m minitf data make --task shift --n 450 --seed 0 --out data/train.txt --force
	$(PY) -m minitf data make --task shift --n 75 --seed 1 --exclude data/train.txt --out data/val.txt --force

clean-venv:
	rm -rf $(VENV)

bench: $(STAMP)  ## speed of the package and the course, side by side: writes bench/REPORT.md (BENCH_ARGS=--quick for a smoke run)
	$(PY) bench/run.py $(BENCH_ARGS)
