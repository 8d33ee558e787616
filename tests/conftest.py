import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
collect_ignore = ["browser"]  # the real-browser check runs through `make test-browser`


@pytest.fixture(autouse=True)
def _run_from_repo_root(monkeypatch):
    """Tests name data files relative to the repository, wherever pytest was started."""
    monkeypatch.chdir(ROOT)


import os  # noqa: E402

import torch  # noqa: E402

# the models are tiny: one thread is as fast, and steady on a busy machine. MINITF_THREADS=2 runs
# the suite with two, to check that no result depends on how a sum was split between threads.
torch.set_num_threads(int(os.environ.get("MINITF_THREADS", "1")))

# float32 keeps 24 bits. A float32 forward pass compared with the float64 one loses some of them
# where a LayerNorm divides by a small deviation: measured on every shipped checkpoint under the
# default, AVX2 and AVX-512 kernels with 1 and 2 threads, the largest gap was 1.6e-5 of the logits'
# largest magnitude (the post-norm shift model). 2**-12 (2.4e-4) of that magnitude leaves a margin
# of 15x, and a wrong piece still misses by whole units.
FLOAT32_RELATIVE = 2.0 ** -12


def assert_close_float32(actual, expected, relative=FLOAT32_RELATIVE):
    """A float32 result against its float64 (or float32) reference, to a tolerance that grows with
    the size of what is compared rather than a bare 1e-4 that is tight for logits of 50 and loose for
    values of 1e-3."""
    expected = expected.to(actual.dtype)
    scale = float(expected.abs().max()) if expected.numel() else 0.0
    torch.testing.assert_close(actual, expected, rtol=0, atol=relative * max(scale, 1e-6))


@pytest.fixture
def one_thread():
    """One thread for tests whose numbers were stored from one-thread runs (the checkpoints, the
    notebooks' training claims), whatever MINITF_THREADS says: small models also train fastest so."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
