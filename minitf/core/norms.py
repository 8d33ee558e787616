"""LayerNorm and RMSNorm written as their formulas (tests check them against nn.LayerNorm and
nn.RMSNorm).

Both normalise each position's feature vector on its own, so a model of any batch size or length
behaves the same. Both are unchanged when every feature is duplicated ([x, x] has the same mean,
variance and RMS as x), which is what lets Origami widen a model exactly.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class LayerNorm(nn.Module):
    """y = (x − mean(x)) / sqrt(var(x) + eps) · γ + β, over the last dimension (biased variance)."""

    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))  # γ
        self.bias = nn.Parameter(torch.zeros(dim))   # β

    def formula(self, x):
        """The definition, written out: what the notebooks teach and the tests hold forward to."""
        mean = x.mean(-1, keepdim=True)
        var = (x - mean).pow(2).mean(-1, keepdim=True)
        return (x - mean) * torch.rsqrt(var + self.eps) * self.weight + self.bias

    def forward(self, x):
        # the same formula as one fused kernel: ~8 elementwise ops and their backward fewer per norm
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, self.eps)


class RMSNorm(nn.Module):
    """y = x / sqrt(mean(x²) + eps) · γ: no centring, no β (as in LLaMA)."""

    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def make_norm(kind: str, dim: int, eps: float = 1e-5) -> nn.Module:
    return {"layer": LayerNorm, "rms": RMSNorm}[kind](dim, eps)
