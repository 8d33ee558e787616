"""What every exercise's cases and slips are made of: seeded random inputs, and "is yours a slip?".

One helper makes the random numbers of every case (`random_case`), so a case is the same on every
machine, and one comparison (`same`) decides whether a learner's result is what a known slip
computes, so every exercise recognises slips to the same tolerance.
"""
from __future__ import annotations

from typing import Callable

import torch


def random_case(*shape, seed: int | torch.Generator, low: float = -1.0,
                high: float = 1.0) -> torch.Tensor:
    """float64 uniform numbers in [low, high) from a fixed generator: the same on every CPU.
    `seed` is a number, or a seeded torch.Generator to draw several tensors of one case from."""
    g = seed if isinstance(seed, torch.Generator) else torch.Generator().manual_seed(seed)
    return torch.rand(*shape, generator=g, dtype=torch.float64) * (high - low) + low


def same(got, candidate) -> bool:
    """got equals what a slip computes, to the checks' tolerance (looser in float32). Only float
    tensors of one shape can be the same; NaN where the slip has NaN counts as the same."""
    if not isinstance(got, torch.Tensor) or not isinstance(candidate, torch.Tensor) \
            or got.shape != candidate.shape or not got.is_floating_point():
        return False
    loose = 10.0 if got.dtype == torch.float32 else 1.0
    return bool(torch.allclose(got.double(), candidate.double(), atol=1e-5 * loose, rtol=1e-4 * loose,
                               equal_nan=True))


def first_slip(slips) -> Callable:
    """A recogniser (got, expected) -> the words of the first (result, words) slip equal to yours."""
    def recognise(got, expected):
        return next((words for result, words in slips if same(got, result)), None)
    return recognise
