import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
collect_ignore = ["browser"]  # the real-browser check runs through `make test-browser`


@pytest.fixture(autouse=True)
def _run_from_repo_root(monkeypatch):
    """Tests name data files relative to the repository, wherever pytest was started."""
    monkeypatch.chdir(ROOT)


import torch  # noqa: E402

torch.set_num_threads(1)  # the models are tiny: one thread is as fast, and steady on a busy machine
