"""One call at the top of every notebook: same seed, same numbers, same pictures everywhere."""
from __future__ import annotations

import random
import warnings

import torch


def setup(seed: int = 0, precision: int = 4, threads: int = 1) -> None:
    """Seed everything, make torch deterministic, print rounded tensors, draw inline PNGs.

    One thread: float sums then add up in the same order on every machine, and models this small
    run no slower on one core.
    """
    random.seed(seed)
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(threads)
    torch.set_printoptions(precision=precision, sci_mode=False)
    warnings.filterwarnings("ignore")  # warnings print machine paths into the stored outputs
    try:
        from IPython import get_ipython
    except ImportError:
        return
    ip = get_ipython()
    if ip is not None:
        ip.run_line_magic("matplotlib", "inline")
        from matplotlib_inline.backend_inline import set_matplotlib_formats
        set_matplotlib_formats("png")
        import matplotlib
        matplotlib.rcParams.update({"figure.dpi": 80, "savefig.dpi": 80})
