"""One call at the top of every notebook: same seed, same numbers, same pictures everywhere."""
from __future__ import annotations

import os
import random
import warnings

import torch

from .views.pictures import FIGURE_DPI, inline_png  # the pictures' resolution is the figures' too


def _short_warning(message, category, filename, lineno, line=None) -> str:
    """A warning without the file path: still shown to the learner, identical on every machine."""
    return f"{category.__name__}: {message}\n"


def deterministic_algorithms() -> None:
    """torch.use_deterministic_algorithms(True), without its cost at the top of every notebook.

    The public call also imports torch's compiler (torch._inductor, about 1.2 s here) only to set
    that compiler's own flag; minitf never compiles, so the flag that governs eager operations is
    set directly. If a later torch moves that function, the public call is used.
    """
    set_flag = getattr(torch._C, "_set_deterministic_algorithms", None)
    if set_flag is None:
        torch.use_deterministic_algorithms(True)
    else:
        set_flag(True, warn_only=False)


def setup(seed: int = 0, precision: int = 4, threads: int | None = None) -> None:
    """Seed everything, make torch deterministic, print rounded tensors, draw inline PNGs that
    record their smallest text's size (so a test can check every stored figure is legible).

    One thread: float sums then add up in the same order on every machine, and models this small
    run no slower on one core (MINITF_THREADS=2 in the environment checks that nothing shown
    depends on it). Warnings keep showing (they may be about your own code), printed
    without machine paths.
    """
    random.seed(seed)
    torch.manual_seed(seed)
    deterministic_algorithms()
    torch.set_num_threads(threads or int(os.environ.get("MINITF_THREADS", "1")))
    torch.set_printoptions(precision=precision, sci_mode=False)
    warnings.formatwarning = _short_warning
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
        from matplotlib.figure import Figure
        # the same PNG, with its smallest text's size in it (tests/test_figure_legibility.py reads it)
        ip.display_formatter.formatters["image/png"].for_type(Figure, inline_png)
        matplotlib.rcParams.update({"figure.dpi": FIGURE_DPI, "savefig.dpi": FIGURE_DPI,
                                    "font.size": 10, "legend.fontsize": 9, "legend.framealpha": 0.9})


def check_setup() -> None:
    """Print whether this set-up computes the stored notebooks' numbers (notebook 00's first check):
    one sentence when every check of minitf.doctor passes, so the harness stays out of the lesson;
    each check's verdict, and what to do, when one differs (`python -m minitf doctor`: the details)."""
    from . import doctor

    report = doctor.check()
    if report.ok:
        print(f"{report.conclusion().rstrip('.')} (all {len(report.findings)} checks of `python -m minitf doctor` pass).")
    else:
        print(report.verdict())
