"""What RoPE's scores depend on (notebook 02): the offset m − n only, and how finely a head tells
offsets apart.

Three live measurements, each printed, two of them drawn: RoPE keeps lengths and makes every
diagonal of the score matrix constant; a head of 2 numbers (one speed) scores offsets 44 apart
alike, a head of 8 does not; added sine waves (the original Transformer) make the score depend on
absolute positions, RoPE does not. All in float64, from fixed seeds.
"""
from __future__ import annotations

import torch

from ..core.rope import apply_rope, rope_angles, rope_frequencies, sinusoidal_table


def _turned(v: torch.Tensor, T: int) -> torch.Tensor:
    """v (head_dim,) turned to positions 0 … T−1 by RoPE: (T, head_dim)."""
    hd = v.numel()
    cos, sin = rope_angles(rope_frequencies(hd, dtype=torch.float64), T)
    return apply_rope(v.expand(1, 1, T, hd), cos, sin)[0, 0]


def _is_relative(S: torch.Tensor) -> bool:
    """True when S[m, n] depends on m − n only (every diagonal constant)."""
    T = len(S)
    return all(torch.allclose(S.diagonal(o), S.diagonal(o)[0].expand_as(S.diagonal(o)), atol=1e-6)
               for o in range(-T + 1, T))


def two_promises(head_dim: int = 4, T: int = 6, seed: int = 0) -> None:
    """A random query and key turned to positions 0 … T−1: prints the query's lengths and every
    score q_m · k_n (rows m, columns n)."""
    q, k = torch.rand(2, head_dim, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) * 2 - 1
    q_at, k_at = _turned(q, T), _turned(k, T)
    print(f"|q_m| for m = 0 … {T - 1}:", q_at.norm(dim=-1).numpy().round(4), " |q| =", round(q.norm().item(), 4))
    print("q_m · k_n (rows m, columns n):")
    print((q_at @ k_at.T).numpy().round(3))


def offset_drift(later=(6, 44), offsets: int = 40, seed: int = 3) -> tuple[dict, dict]:
    """For head_dim 2 and 8 (random q, k): the normalised score at offsets Δ = 1 … `offsets`
    (curves[hd]) and the largest change from Δ to Δ + each of `later` (drift[hd])."""
    D = torch.arange(1, offsets + 1)
    curves, drift = {}, {}
    for hd in (2, 8):
        q, k = torch.rand(2, hd, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) * 2 - 1
        curves[hd] = _turned(q, 90) @ k / (q.norm() * k.norm())  # k at n = 0, q at m = 0 … 89
        drift[hd] = [(curves[hd][D + d] - curves[hd][D]).abs().max().item() for d in later]
    return curves, drift


def plot_offset_drift(later=(6, 44), offsets: int = 40):
    """Prints the largest change of the score from offset Δ to Δ + 6 and Δ + 44, for head_dim 2 and 8,
    and draws each change against Δ. A Figure."""
    from matplotlib.figure import Figure
    curves, drift = offset_drift(later, offsets)
    print(f"{'':10} largest |score(Δ + {later[0]}) − score(Δ)|   largest |score(Δ + {later[1]}) − score(Δ)|")
    for hd in (2, 8):
        print(f"head_dim {hd}: {drift[hd][0]:27.3f} {drift[hd][1]:35.3f}")
    D = torch.arange(1, offsets + 1)
    fig = Figure(figsize=(9, 4), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    for ax, hd in zip(axes, (2, 8)):
        ax.axhline(0, color="0.5", lw=1, ls="--")
        for d, colour, marker in zip(later, ("tab:orange", "tab:blue"), ("s", "o")):
            ax.plot(D, curves[hd][D + d] - curves[hd][D], color=colour, marker=marker, ms=4, lw=1.2,
                    label=f"score at Δ + {d} − score at Δ")
        ax.set(xlabel="offset Δ", ylim=(-0.45, 0.45),
               title="head_dim 2 (the tiny model)" if hd == 2 else "head_dim 8: speeds 1, 0.1, 0.01, 0.001")
    axes[0].set_ylabel("change of the score, in units of |q| |k|")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=2)
    return fig


def added_or_rotated(T: int = 16, d_model: int = 4, seed: int = 4):
    """One pair of bytes at every pair of positions, scored through random W_q, W_k with sine waves
    added to the embeddings, and with RoPE: prints which depend on m − n only, draws both. A Figure."""
    from matplotlib.figure import Figure
    g = torch.Generator().manual_seed(seed)
    W_q, W_k = torch.rand(2, d_model, d_model, generator=g, dtype=torch.float64) * 2 - 1  # (C, hd) each
    e_q, e_k = torch.rand(2, d_model, generator=g, dtype=torch.float64) * 2 - 1            # two bytes
    pe = sinusoidal_table(T, d_model).double()                                              # (T, C)
    added = ((e_q + pe) @ W_q) @ ((e_k + pe) @ W_k).T        # byte e_q at m, byte e_k at n
    rotary = _turned(e_q @ W_q, T) @ _turned(e_k @ W_k, T).T
    print("PE_m · PE_n depends on m − n only:", _is_relative(pe @ pe.T))
    print("added sine waves, the score depends on m − n only:", _is_relative(added))
    print("RoPE, the score depends on m − n only:", _is_relative(rotary))
    fig = Figure(figsize=(9, 4.2), layout="constrained")
    for ax, S, title in zip(fig.subplots(1, 2), (added, rotary), ("added sine waves", "RoPE")):
        limit = S.abs().max().item()
        im = ax.imshow(S, cmap="RdBu_r", vmin=-limit, vmax=limit)  # white = 0
        ax.set(title=title, xlabel="key position n", ylabel="query position m")
        fig.colorbar(im, ax=ax, shrink=0.85, label="score q·k (red +, blue −)")
    return fig
