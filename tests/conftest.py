"""pytest's set-up for the suite: fixtures, the thread count and a quick exit. What test files
share (ROOT, the notebook readers, the float32 comparison, the model factories) is in
tests/support.py.

Under xdist (`make test`) the controller process runs no test, so nothing here imports torch at
module level: the controller would spend ~1 s importing it before it starts the workers, and more
tearing it down at the end."""
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]  # as support.ROOT, without importing support (torch)
collect_ignore = ["browser"]  # the real-browser check runs through `make test-browser`


def _runs_tests(config) -> bool:
    """This process runs tests: an xdist worker, or a run without xdist (`-n 0` or no -n)."""
    return hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None)


def _exit_at_once() -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def pytest_configure(config):
    if not _runs_tests(config):
        import gc
        gc.enable()  # tests/fast_start.py turned it off for the start-up
        return
    import torch
    # the models are tiny: one thread is as fast, and steady on a busy machine. MINITF_THREADS=2 runs
    # the suite with two, to check that no result depends on how a sum was split between threads.
    torch.set_num_threads(int(os.environ.get("MINITF_THREADS", "1")))


def pytest_collection_finish(session):
    """Python's cyclic garbage collector took ~6 s of a one-process run of the unit tests (12 %):
    its full collections walk every object alive, and torch, matplotlib and the collected tests
    are hundreds of thousands of them. Frozen after collection, those are left out of every later
    collection, and rarer full collections (gen0 at 10,000 allocations, not 700) bring the
    collector's time to ~2 s. Garbage is still collected, less often. (tests/fast_start.py turned
    the collector off for the start-up; it is on again from here.)"""
    if _runs_tests(session.config):
        import gc
        gc.collect()
        gc.freeze()
        gc.set_threshold(10_000, 20, 20)
        gc.enable()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    if hasattr(config, "workerinput"):
        # An xdist worker has sent its results by now (xdist sends them at sessionfinish, and a
        # channel's send is a synchronous write). What remains is teardown the controller waits
        # for before it reports: pytest's cleanup and freeing every object the tests made (~0.5 s
        # on a busy machine), then the libraries' atexit handlers (zmq contexts, jupyter_client's
        # kernel managers, torch, matplotlib: 0.5-2.5 s). The last unconfigure hook ends the
        # process at once; nbval has shut each notebook's kernel down already.
        _exit_at_once()


@pytest.fixture(autouse=True)
def _run_from_repo_root(monkeypatch):
    """Tests name data files relative to the repository, wherever pytest was started."""
    monkeypatch.chdir(ROOT)


@pytest.fixture
def one_thread():
    """One thread for tests whose numbers were stored from one-thread runs (the checkpoints, the
    notebooks' training claims), whatever MINITF_THREADS says: small models also train fastest so."""
    import torch
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def growth():
    """The stored growth study (minitf/experiments/stored/origami_growth.json), read once per file:
    notebook 07's section 7 and notebook 13 quote it."""
    from minitf.experiments.results import load_growth
    return load_growth()
