"""A shift solver whose every weight is set by hand: no training, and it works on any input length
up to the one it was built for.

The model is one pre-norm layer with one head, no FFN, a tied head and coupled position ids
(input byte j and output byte j share id j+1, TAB has 0; `minitf.core.rope.position_ids`). Each
piece does one job, and a few named numbers (`HandSet`) set them:

- **the byte circle** (embedding): printable byte b sits at angle k·2π(b − 32)/95 in a plane (f₁, f₂),
  so "the next byte, 126 wrapping to 32" is one rotation by k·2π/95. TAB and EOS share a third
  direction t. The three directions are orthogonal to (1, 1, 1, 1), so LayerNorm only rescales.
- **the query that looks one step ahead**: the query is a constant (a bias), rotated by RoPE at
  frequency ω, so the score of a key at relative id Δ is S·cos(ω(Δ − 1)): highest at Δ = +1, the
  source byte of the next output. ω = 2π/(longest + 3) keeps every other Δ the task can meet away
  from the peak.
- **the end-of-output key**: TAB's key, on a second RoPE pair whose frequency is nearly 0 (a
  position-free channel; `Config` refuses 0), scores B = S(1 + cos ω)/2 at every position: below a
  byte at Δ = +1, above every other byte. So TAB wins exactly when no byte is left to shift.
- **the value rotation**: W_V keeps t and rotates the byte plane by k·2π/95: byte b's value is the
  code of b + 1, and TAB's value is t, which the head reads as EOS.
- **the readout**: W_O = λ·I drowns the current byte's own embedding in the residual stream, the
  final norm's gain γ sets the logits' scale, and the head's biases rule out every byte that is
  neither printable nor EOS (TAB shares EOS's direction).

`shift_by_hand()` builds it. `value_circuit(model)` reads any one-layer solver the same way: the
byte each printable byte's value turns into, through the norms, W_V, W_O and the head.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ..core.config import Config
from ..core.model import Transformer
from ..core.tokens import EOS, TAB

PRINTABLE = range(32, 127)  # the 95 bytes shift maps among themselves


@dataclass(frozen=True)
class HandSet:
    """The named numbers of the hand-set solver.

    d_model 4 with LayerNorm (1,376 parameters), or 3 with RMSNorm (1,093): RMSNorm subtracts no
    mean, so all three directions are free for t and the byte plane.
    """
    d_model: int = 4
    longest: int = 24        # the longest input it must shift (L_max)
    k: int = 34              # the code's step: byte b at angle k·2π(b − 32)/95 (k coprime to 95)
    S: float = 1500.0        # score scale: the source byte scores S, its neighbours S·cos ω
    lam: float = 3000.0      # W_O = λ·I
    gamma: float = 6000.0    # the final norm's gain: the logits' scale
    slow: float = 1e-4       # the near-zero RoPE frequency of the end-of-output channel
    off: float = -50.0       # head bias of the bytes that are neither printable nor EOS
    max_len: int = 64        # the longest sequence it reads (input TAB output EOS: 2·length + 2)

    @property
    def omega(self) -> float:
        """The query's RoPE frequency: one turn every longest + 3 ids, so no offset the task
        meets (|Δ − 1| ≤ longest) comes back round to the peak."""
        return 2 * math.pi / (self.longest + 3)

    def config(self) -> Config:
        if self.d_model not in (3, 4):
            raise ValueError(f"the hand-set solver is written for d_model 4 (LayerNorm) or 3 "
                             f"(RMSNorm), got {self.d_model}")
        return Config(d_model=self.d_model, n_heads=1, head_dim=4, n_layers=1,
                      norm_position="pre", norm="layer" if self.d_model == 4 else "rms",
                      ffn=False, tie_embeddings=True, position_ids="coupled", dropout=0.0,
                      rope_freqs=(self.omega, self.slow), max_len=self.max_len)

    def directions(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """t (TAB and EOS), f₁ and f₂ (the byte plane): orthonormal. At d_model 4 they are
        orthogonal to (1, 1, 1, 1), the mean LayerNorm subtracts, so the norm only rescales them."""
        if self.d_model == 3:
            return tuple(torch.eye(3, dtype=torch.float64))
        rows = torch.tensor([[1.0, -1.0, 1.0, -1.0], [1.0, 1.0, -1.0, -1.0],
                             [1.0, -1.0, -1.0, 1.0]], dtype=torch.float64) / 2
        return tuple(rows)


def byte_angle(b: int, k: int) -> float:
    """Where printable byte b sits on the circle."""
    return k * 2 * math.pi * (b - 32) / 95


def byte_circle(n: HandSet) -> torch.Tensor:
    """The embedding (256, d): printable bytes on a circle, TAB and EOS on t, the rest 0."""
    t, f1, f2 = n.directions()
    E = torch.zeros(256, n.d_model, dtype=torch.float64)
    for b in PRINTABLE:
        a = byte_angle(b, n.k)
        E[b] = math.cos(a) * f1 + math.sin(a) * f2
    E[TAB] = E[EOS] = t
    return E


def value_rotation(n: HandSet) -> torch.Tensor:
    """W_V (d, d): t stays, the byte plane turns by k·2π/95 (b's code becomes b + 1's)."""
    turn = n.k * 2 * math.pi / 95
    R = torch.tensor([[math.cos(turn), -math.sin(turn)], [math.sin(turn), math.cos(turn)]],
                     dtype=torch.float64)
    A = torch.stack(n.directions(), dim=1)  # (d, 3)
    inner = torch.eye(3, dtype=torch.float64)
    inner[1:, 1:] = R
    return A @ inner @ A.T


def shift_by_hand(numbers: HandSet | None = None) -> Transformer:
    """The hand-set shift solver, float32, in evaluation mode."""
    n = numbers or HandSet()
    model = Transformer(n.config()).double()
    attn, root, d = model.blocks[0].attn, math.sqrt(n.S), n.d_model
    t = n.directions()[0]
    B = n.S * (1 + math.cos(n.omega)) / 2  # TAB's score: between the peak S and its neighbours
    with torch.no_grad():
        t_after_norm = float(model.blocks[0].norm1(t) @ t)  # how long t is after the first norm
    u = torch.tensor([-root, 0.0, B / root, 0.0], dtype=torch.float64)
    W_Q = torch.zeros(4, d, dtype=torch.float64)
    W_K = torch.outer(u, t) / t_after_norm  # only TAB (and EOS) have a key of their own
    W_V = torch.zeros(4, d, dtype=torch.float64)
    W_V[:d] = value_rotation(n)
    b_q = root * torch.tensor([math.cos(n.omega), math.sin(n.omega), 1.0, 0.0], dtype=torch.float64)
    b_k = root * torch.tensor([1.0, 0.0, 0.0, 0.0], dtype=torch.float64)
    W_O = torch.zeros(d, 4, dtype=torch.float64)
    W_O[:, :d] = n.lam * torch.eye(d, dtype=torch.float64)
    head_bias = torch.full((256,), n.off, dtype=torch.float64)
    head_bias[list(PRINTABLE)] = 0.0
    head_bias[EOS] = 0.0
    with torch.no_grad():
        model.embed.weight.copy_(byte_circle(n))  # the head reads the same table (tied)
        attn.qkv.weight.copy_(torch.cat([W_Q, W_K, W_V]))
        attn.qkv.bias.copy_(torch.cat([b_q, b_k, torch.zeros(4, dtype=torch.float64)]))
        attn.out.weight.copy_(W_O)
        attn.out.bias.zero_()
        model.final_norm.weight.fill_(n.gamma)
        if getattr(model.final_norm, "bias", None) is not None:
            model.final_norm.bias.zero_()
        model.head.bias.copy_(head_bias)
    return model.float().eval()


@torch.no_grad()
def value_circuit(model) -> dict[int, int]:
    """For a one-layer model: printable byte b → the printable byte the head ranks first when
    attention copies b's value, norm(E[b])·W_V·W_O, alone into the final norm and the head
    (E·W_V·W_O·Eᵀ with the norms and biases on the way). A shift solver maps b to b + 1."""
    block = model.blocks[0]
    A = model.config.attn_dim
    printable = torch.tensor(list(PRINTABLE))
    x = block.norm1(model.embed.weight[printable])  # what attention reads of each byte
    W, b = block.attn.qkv.weight[2 * A:], block.attn.qkv.bias[2 * A:]
    out = block.attn.out(x @ W.T + b)
    h = model.final_norm(out) if model.final_norm is not None else out
    logits = model.head(h)[:, printable]
    return dict(zip(printable.tolist(), (logits.argmax(-1) + 32).tolist()))
