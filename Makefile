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

lab: $(TEST_STAMP)  ## open JupyterLab on the notebooks
	$(VENV)/bin/jupyter lab notebooks/

test: $(TEST_STAMP)  ## unit tests and every notebook re-run and compared with its stored outputs
	$(PY) -m pytest --nbval tests notebooks

test-unit: $(TEST_STAMP)
	$(PY) -m pytest tests

test-notebooks: $(TEST_STAMP)
	$(PY) -m pytest --nbval notebooks

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
