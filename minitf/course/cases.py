"""What every exercise's cases and slips are made of: seeded random inputs, and "is yours a slip?".

One helper makes the random numbers of every case (`random_case`), so a case is the same on every
machine, and one comparison (`same`) decides whether a learner's result is what a known slip
computes, so every exercise recognises slips to the same tolerance (`first_slip` for a result,
`named_slip` for one slip's several results, `driven_slips` for the numbers a driver reads off a
piece that acts: a training step, a loop). `numbers` and `tiny_model` are what those drivers
measure and train; `split_heads` and `merge_heads` are the plumbing every attention slip shares.
"""
from __future__ import annotations

from typing import Callable

import torch

from ..core.config import Config
from ..core.model import Transformer


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


def first_slip(slips, name: str = "") -> Callable:
    """A recogniser (got, expected) -> the words of the first (result, words) slip equal to yours.
    `name` is the diagnosis it reports, its key in the exercise's hints_by_diagnosis."""
    def recognise(got, expected):
        return next((words for result, words in slips if same(got, result)), None)
    if name:
        recognise.__name__ = name
    return recognise


def named_slip(name: str, results, words: str) -> Callable:
    """One slip, `name` in hints_by_diagnosis: yours equal to any of its results (a wrong forward's
    output, or its weights) gets `words`."""
    return first_slip([(result, words) for result in results], name)


def driven_slips(name: str, results: list[tuple[object, str]], reference: tuple | None = None) -> Callable:
    """A recogniser (got, expected) → the words of the first slip whose result equals yours.
    A driver's result is a tuple (losses, weights, …): then `reference` is the expected tuple, and a
    slip is recognised on the first of its parts that differs from the reference's, once."""
    def recognise(got, expected):
        for result, words in results:
            if reference is None:
                if same(got, result) and not same(expected, result):
                    return words
                continue
            first = next((i for i, (a, b) in enumerate(zip(result, reference)) if not same(a, b)), None)
            if first is not None and same(expected, reference[first]) and same(got, result[first]):
                return words
        return None
    recognise.__name__ = name
    return recognise


def split_heads(t: torch.Tensor, n_heads: int) -> torch.Tensor:
    """(B, T, H·hd) → (B, H, T, hd): each position's vector cut into its heads."""
    B, T, C = t.shape
    return t.view(B, T, n_heads, C // n_heads).transpose(1, 2)


def merge_heads(y: torch.Tensor) -> torch.Tensor:
    """(B, H, T, hd) → (B, T, H·hd): the heads side by side again."""
    B, H, T, hd = y.shape
    return y.transpose(1, 2).reshape(B, T, H * hd)


def numbers(values, dtype=torch.float64):
    """A list of numbers (floats, or 0-d tensors, which keep their dtype) as one tensor; the first
    odd value as it is, for the check to describe ("expected a tensor …, got None")."""
    out = []
    for v in values:
        if isinstance(v, torch.Tensor) and v.numel() == 1:
            out.append(v.detach().reshape(()))
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            out.append(torch.tensor(float(v), dtype=dtype))
        else:
            return v
    return torch.stack(out) if out else torch.zeros(0, dtype=dtype)


def tiny_model(seed: int, **config) -> Transformer:
    torch.manual_seed(seed)
    return Transformer(Config(**{**dict(d_model=8, n_heads=2, n_layers=1, d_ff=16, dropout=0.0,
                                        norm_position="pre"), **config})).double()
