"""Why attention divides its scores by √d_k (notebook 03).

A score q·k sums d_k products: with entries of mean 0 and variance 1 its variance is d_k. Wide
scores put almost all the weight on one key, where the softmax passes little gradient; dividing by
√d_k keeps the variance, the largest weight and the gradient the same at every head width.
"""
from __future__ import annotations

import math

import torch


def softmax_stats(s: torch.Tensor) -> tuple[float, float, float]:
    """Score variance, mean largest weight and mean Jacobian norm of the softmax over s's last dim."""
    w = s.softmax(-1)                                               # (N, keys)
    jac = torch.diag_embed(w) - w[:, :, None] * w[:, None, :]       # dw/ds per query
    return s.var().item(), w.amax(-1).mean().item(), jac.norm(dim=(1, 2)).mean().item()


def by_width(widths=(2, 16, 64), queries: int = 2000, keys: int = 8, seed: int = 0) -> None:
    """For random queries and keys (entries uniform, mean 0, variance 1) at each d_k: the stats of
    the raw scores and of the scaled ones. Prints them as a table."""
    g = torch.Generator().manual_seed(seed)
    print("         variance of scores   largest weight    softmax gradient")
    print("d_k      raw      scaled      raw    scaled     raw    scaled")
    for d_k in widths:
        q = (torch.rand(queries, 1, d_k, generator=g, dtype=torch.float64) * 2 - 1) * math.sqrt(3)
        k = (torch.rand(queries, keys, d_k, generator=g, dtype=torch.float64) * 2 - 1) * math.sqrt(3)
        s = (q @ k.transpose(-2, -1))[:, 0]                          # (queries, keys)
        raw, scaled = softmax_stats(s), softmax_stats(s / math.sqrt(d_k))
        print(f"{d_k:3d}  {raw[0]:7.1f}  {scaled[0]:8.2f}    {raw[1]:7.2f}  {scaled[1]:6.2f}   "
              f"{raw[2]:7.2f}  {scaled[2]:6.2f}")
