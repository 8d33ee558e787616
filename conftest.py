"""pytest set-up shared by the unit tests and the notebook run (`pytest --nbval notebooks`).

Notebook 08 builds a model from the pieces a learner saved in my_parts/. Under test it must build
the same model on every machine, so the kernels nbval starts (they inherit this environment) see an
empty folder of their own instead of the learner's.
"""
import os
import tempfile

# xdist's workers inherit the controller's folder: one environment for every kernel (tests/kernel_fork.py)
os.environ.setdefault("MINITF_MY_PARTS", tempfile.mkdtemp(prefix="minitf-my-parts-"))


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (`make test`: --dist loadscope, each notebook and each test file one unit
    of work), hand out the longest units first: the notebooks by their time in make bench's stored
    measurement (bench/results/bench_notebooks.json; one not measured yet counts as the longest),
    then the test files, the most tests first. The last units handed out are then small, and no
    worker is left running a long notebook while the other waits (the Makefile passes
    --no-loadscope-reorder, xdist's own order by the number of tests in a unit).

    Where there are both, each worker's first unit is a test file: the notebooks' kernels fork
    from a process that is still importing torch when the workers are ready (tests/kernel_fork.py),
    and a worker whose first unit is a notebook would wait ~2 s for it with nothing to do."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    import json
    import pathlib

    measurement = pathlib.Path(__file__).parent / "bench" / "results" / "bench_notebooks.json"
    try:
        seconds = json.loads(measurement.read_text())["runs"][-1]["per_notebook_seconds"]
    except (OSError, ValueError, KeyError, IndexError):
        seconds = {}
    units: dict[str, list] = {}
    for item in items:
        units.setdefault(item.nodeid.split("::")[0], []).append(item)

    def cost(unit: str):
        if unit.endswith(".ipynb"):
            return (0, -seconds.get(pathlib.Path(unit).name, float("inf")))
        return (1, -len(units[unit]))

    order = sorted(units, key=cost)
    tests = [unit for unit in order if not unit.endswith(".ipynb")]
    if len(tests) < len(order):
        first = tests[:int(config.workerinput.get("workercount", 1))]
        order = first + [unit for unit in order if unit not in first]
    items[:] = [item for unit in order for item in units[unit]]
