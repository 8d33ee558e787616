"""Positions: rotary embeddings (RoPE) and the additive sinusoidal table they replace.

RoPE rotates each pair of dimensions (2i, 2i+1) of a query or key at position m by the angle
m·θ_i, with θ_i = base^(−2i / head_dim). A rotation keeps the vector's norm, and the dot product
of a query rotated by m and a key rotated by n depends on m − n only: attention sees relative
positions. The frequencies come from head_dim (the standard choice), one row per head, so a grown
model can keep each old head's frequencies and give new head dimensions new ones.

Position ids need not be 0, 1, 2, …: with `position_ids="coupled"` the output's numbering restarts
after the TAB, so input byte j and output byte j share an id (Cho et al. 2024, "position
coupling"). The byte that predicts output j then finds its source at the constant relative id +1,
whatever the input's length.
"""
from __future__ import annotations

import itertools
import math

import torch

from .tokens import TAB


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


def config_frequencies(config, dtype=torch.float32) -> torch.Tensor:
    """The θ a config asks for: (n_heads, head_dim/2).

    rope_freqs given: those numbers (one row repeated for every head, or one row per head).
    Otherwise base^(−2i/head_dim), times rope_scale (scaling every θ is scaling the positions).
    """
    H, pairs = config.n_heads, config.head_dim // 2
    if config.positions.rope_freqs is not None:
        theta = torch.tensor(config.positions.rope_freqs, dtype=torch.float64)
        return theta.reshape(-1, pairs).expand(H, pairs).to(dtype).clone()
    theta = rope_frequencies(config.head_dim, config.positions.rope_base, H, dtype=torch.float64)
    if config.positions.rope_scale != 1.0:
        theta = theta * config.positions.rope_scale
    return theta.to(dtype)


def position_ids(ids: torch.Tensor, scheme: str = "sequence") -> torch.Tensor:
    """The position id of every token of ids (B, T): (B, T), long.

    sequence: 0, 1, 2, … in every row.
    coupled: a row `x_0 … x_{L−1} TAB y_0 … y_{L−1} EOS` gets x_j → j+1, TAB → 0, y_j → j+1,
    EOS → L+1: the token at id i reads the input byte at id i+1 to write the output byte at id
    i+1, a constant offset. Tokens after the first TAB count from it (t − L, padding included);
    tokens before it, or in a row without TAB (plain text), are t + 1. A token's id depends only
    on the tokens up to it, so a causal model reads the same ids however the row continues.
    """
    B, T = ids.shape
    t = torch.arange(T, device=ids.device).expand(B, T)
    if scheme == "sequence":
        return t
    if scheme != "coupled":
        raise ValueError(f"position_ids must be 'sequence' or 'coupled', got {scheme!r}")
    is_tab = ids == TAB
    seen = is_tab.cumsum(1) > 0  # at or after the first TAB
    first = torch.where(is_tab.any(1), is_tab.int().argmax(1), T)  # (B,) the first TAB's index
    return torch.where(seen, t - first[:, None], t + 1)


def rope_angles(inv_freq: torch.Tensor, seq_len: int, offset: int = 0, positions=None):
    """cos and sin of m·θ for positions m = offset … offset+seq_len−1: each (n_heads, T, head_dim/2).

    positions (B, T), e.g. `position_ids(ids, "coupled")`, gives every row its own: (B, H, T, hd/2).
    """
    if positions is not None:
        angles = positions.to(inv_freq.dtype)[:, None, :, None] * inv_freq[None, :, None, :]
        return angles.cos(), angles.sin()  # (B, H, T, hd/2)
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


def alias_margin(theta, offsets=range(1, 13), steps: int = 100, weights: bool = False):
    """How sharply one head with frequencies theta (rad/position) can single out offset 0.

    A head whose query and key put weight a_i on rotation pair i scores relative offset m as
    Σ_i a_i·cos(θ_i·m) (times its score scale). The margin is the best, over weights a ≥ 0 with
    Σ a = 1, of min over the competing offsets m of Σ_i a_i·(1 − cos θ_i·m): how far the target
    stays above every other offset. One frequency of 1 rad (a head_dim-2 head, any base) leaves
    0.040 over offsets 1–12, as cos 6 = 0.96. Weights are searched on a grid of `steps` per unit;
    weights=True returns (margin, the best weights (k,)).
    """
    theta = torch.as_tensor(theta, dtype=torch.float64).flatten()  # (k,)
    m = torch.tensor(list(offsets), dtype=torch.float64)
    gap = 1 - torch.cos(theta[:, None] * m[None, :])  # (k, offsets)
    k = theta.numel()
    # every a on the simplex in multiples of 1/steps (stars and bars): (n, k)
    bars = torch.tensor(list(itertools.combinations(range(steps + k - 1), k - 1)),
                        dtype=torch.float64).reshape(max(1, math.comb(steps + k - 1, k - 1)), k - 1)
    edges = torch.cat([torch.full((len(bars), 1), -1.0, dtype=torch.float64), bars,
                       torch.full((len(bars), 1), float(steps + k - 1), dtype=torch.float64)], 1)
    a = (edges.diff(dim=1) - 1) / steps  # (n, k), rows sum to 1
    worst = (a @ gap).min(1).values  # (n,) each weighting's closest competitor
    best = int(worst.argmax())
    return (float(worst[best]), a[best]) if weights else float(worst[best])
