"""Positions: rotary embeddings (RoPE) and the additive sinusoidal table they replace.

RoPE rotates each pair of dimensions (2i, 2i+1) of a query or key at position m by the angle
m·θ_i, with θ_i = base^(−2i / head_dim). A rotation keeps the vector's norm, and the dot product
of a query rotated by m and a key rotated by n depends on m − n only: attention sees relative
positions. The frequencies come from head_dim (the standard choice), one row per head, so a grown
model can keep each old head's frequencies and give new head dimensions new ones.
"""
from __future__ import annotations

import math

import torch


def rope_frequencies(head_dim: int, base: float = 10000.0, n_heads: int = 1,
                     dtype=torch.float32) -> torch.Tensor:
    """θ_i = base^(−2i / head_dim) for i < head_dim / 2, repeated per head: (n_heads, head_dim/2).

    With head_dim 2 there is a single frequency θ_0 = 1 rad per position: a head's scores repeat
    every 2π ≈ 6.3 positions.
    """
    if head_dim % 2:
        raise ValueError(f"RoPE needs an even head_dim, got {head_dim}")
    i = torch.arange(head_dim // 2, dtype=torch.float64)
    theta = base ** (-2 * i / head_dim)
    return theta.to(dtype).expand(n_heads, -1).clone()


def rope_angles(inv_freq: torch.Tensor, seq_len: int, offset: int = 0):
    """cos and sin of m·θ for positions m = offset … offset+seq_len−1: each (n_heads, T, head_dim/2)."""
    pos = torch.arange(offset, offset + seq_len, dtype=inv_freq.dtype, device=inv_freq.device)
    angles = pos[None, :, None] * inv_freq[:, None, :]  # (H, T, hd/2)
    return angles.cos(), angles.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate each pair (x_2i, x_2i+1) of x (B, H, T, hd) by its angle.

    (a, b) → (a·cos − b·sin, a·sin + b·cos): a 2-D rotation, pair by pair.
    """
    a, b = x[..., 0::2], x[..., 1::2]  # (B, H, T, hd/2) each
    return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)


def sinusoidal_table(max_len: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """The additive encoding of "Attention is all you need": (max_len, d_model).

    PE[m, 2i] = sin(m / base^(2i/d_model)), PE[m, 2i+1] = cos(m / base^(2i/d_model)).
    """
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]
    div = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float64) * (-math.log(base) / d_model))
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)
    return pe.float()
