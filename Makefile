# The course's entry points. `make lab` and `make test` set up .venv themselves on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
TEST_STAMP := $(VENV)/.installed-lightning-stamp

.PHONY: lab test test-all test-unit test-notebooks test-perturbed bench data clean-venv

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e .
	touch $(STAMP)

# the optional Lightning extra (minitf.lightning, notebook 10): small, so the course's own commands
# install it; `pip install -e .` alone leaves it out
$(TEST_STAMP): $(STAMP)
	$(PY) -m pip install --quiet --disable-pip-version-check -e ".[lightning]"
	touch $(TEST_STAMP)

# the optional `site` extra (MathJax as files, for `make site` and its tests in `make test`)
SITE_STAMP := $(VENV)/.installed-site-stamp
SITE_OUT   ?= build/site

$(SITE_STAMP): $(STAMP)
	$(PY) -m pip install --quiet --disable-pip-version-check -e ".[site]"
	touch $(SITE_STAMP)

# JupyterLab refuses to start as root (containers, many cloud machines) unless told it may
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root,)
LAB_ARGS ?=

lab: $(TEST_STAMP) lab-settings  ## open JupyterLab on the notebooks (options: make lab LAB_ARGS="--port 8899 --no-browser")
	$(VENV)/bin/jupyter lab $(ALLOW_ROOT) $(LAB_ARGS) notebooks/

# every core (pytest-xdist); --dist loadscope keeps each notebook whole on one worker (nbval's README)
PARALLEL ?= -n auto --dist loadscope --no-loadscope-reorder
# an early plugin that spares each pytest process ~1.5 s of start-up (tests/fast_start.py says how);
# `-p` loads it before nbval, which conftest.py cannot; it imports from the repository root (python -m).
# PYTHONDONTWRITEBYTECODE (set on some machines, this project's among them) would stop pytest caching
# its rewritten test files: every xdist worker then rewrites and compiles them all again, ~3.5 s each
# tests.kernel_fork forks each notebook's kernel from one process that has imported torch and
# minitf already (~2 s less per notebook; tests/kernel_fork.py says how)
PYTEST := env -u PYTHONDONTWRITEBYTECODE $(PY) -m pytest -p tests.fast_start -p tests.kernel_fork

# minitf's bytecode, compiled once before the run (0.03 s when up to date): otherwise each process
# that imports minitf (every notebook's kernel, each xdist worker) compiles it again, ~0.2 s each,
# on a fresh clone or wherever PYTHONDONTWRITEBYTECODE is set
.PHONY: bytecode
bytecode:
	$(PY) -m compileall -q minitf

test: $(TEST_STAMP) $(SITE_STAMP) bytecode  ## every notebook re-run and compared with its stored outputs, and the fast unit tests
	$(PYTEST) $(PARALLEL) -m "not slow" --nbval tests notebooks

test-all: $(TEST_STAMP) $(SITE_STAMP) bytecode  ## `make test` and the slow tests (subprocesses, DDP, the wheel, JupyterLab, re-training)
	$(PYTEST) $(PARALLEL) --nbval tests notebooks

test-unit: $(TEST_STAMP) $(SITE_STAMP) bytecode  ## the fast unit tests alone: the quick loop while you change minitf
	$(PYTEST) $(PARALLEL) -m "not slow" tests

test-notebooks: $(TEST_STAMP) bytecode
	$(PYTEST) $(PARALLEL) --nbval notebooks

# a stand-in for another CPU: every new model starts one ulp away (MINITF_PERTURB, minitf/core/perturb.py),
# so a float32 training run drifts as it would on a learner's machine; two seeds, everything
PERTURB_SEEDS ?= 1 2
test-perturbed: $(TEST_STAMP) $(SITE_STAMP) bytecode  ## the whole suite with each new model's weights nudged by one ulp (seeds 1, 2)
	set -e; for seed in $(PERTURB_SEEDS); do echo "== MINITF_PERTURB=$$seed"; \
	  MINITF_PERTURB=$$seed $(PYTEST) $(PARALLEL) -q --nbval tests notebooks; done

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

bench: $(STAMP) $(SITE_STAMP)  ## speed of the package and the course, side by side: writes bench/REPORT.md (BENCH_ARGS=--quick for a smoke run)
	$(PY) bench/run.py $(BENCH_ARGS)

# --- the course as a site, the spoiler-free copy, the run-time table (issue 25) --------------------
.PHONY: lab-settings site test-site student runtimes map-minutes
# JupyterLab's scrolling glitch in long notebooks: windowing mode `none`, written as a settings
# override into .venv/share/jupyter/lab/settings/overrides.json (docs/troubleshooting.md); a learner's
# own settings still win. Cheap, so `make lab` writes it every time.
lab-settings: $(STAMP)  ## write make lab's JupyterLab setting (windowing mode none) into .venv
	$(PY) tools/lab_settings.py

site: $(SITE_STAMP)  ## the course as static HTML in build/site/, from the stored notebooks, offline (SITE_OUT=DIR)
	$(PY) tools/site.py --out $(SITE_OUT)
	@echo "view it: $(PY) -m http.server --bind 127.0.0.1 --directory $(SITE_OUT) 8000, then http://127.0.0.1:8000/"

test-site: $(SITE_STAMP)  ## build the site with no network and check it in headless Chromium
	bash tests/browser/install.sh $(PY)
	$(PY) tests/browser/check_site.py

student: $(STAMP)  ## copies of the notebooks without the collapsed solutions, in student/ (kept if they exist; STUDENT_ARGS=--force)
	$(PY) tools/student.py $(STUDENT_ARGS)

runtimes: $(STAMP)  ## rewrite the run-time tables (README, notebook 00) from make bench's stored measurement
	$(PY) tools/runtimes.py
	$(PY) tools/map_minutes.py

map-minutes: $(STAMP)  ## rewrite the course map's minutes (README, notebook 00) from tools/course_map.py's count
	$(PY) tools/map_minutes.py
