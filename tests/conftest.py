"""pytest's set-up for the suite: fixtures and the thread count. What test files share (ROOT, the
notebook readers, the float32 comparison, the model factories) is in tests/support.py."""
import os

import pytest
import torch

from support import ROOT

collect_ignore = ["browser"]  # the real-browser check runs through `make test-browser`

# the models are tiny: one thread is as fast, and steady on a busy machine. MINITF_THREADS=2 runs
# the suite with two, to check that no result depends on how a sum was split between threads.
torch.set_num_threads(int(os.environ.get("MINITF_THREADS", "1")))


@pytest.fixture(autouse=True)
def _run_from_repo_root(monkeypatch):
    """Tests name data files relative to the repository, wherever pytest was started."""
    monkeypatch.chdir(ROOT)


@pytest.fixture
def one_thread():
    """One thread for tests whose numbers were stored from one-thread runs (the checkpoints, the
    notebooks' training claims), whatever MINITF_THREADS says: small models also train fastest so."""
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
