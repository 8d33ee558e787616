"""Causal multi-head self-attention, written out so its weights can be looked at.

softmax(Q Kᵀ / √head_dim + causal mask) V, per head. `attention` is the teaching path (it returns
the weights); the module uses PyTorch's fused `F.scaled_dot_product_attention` when nobody asks for
the weights. Tests check that the two agree.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .config import Config
from .norms import RMSNorm
from .rope import apply_rope, config_frequencies


def causal_mask(T: int, device=None) -> torch.Tensor:
    """(T, T) bool, True where position i may NOT look: the future j > i."""
    return torch.triu(torch.ones(T, T, dtype=torch.bool, device=device), diagonal=1)


def attention(q, k, v, mask: torch.Tensor | None = None):
    """Scaled dot-product attention. q, k, v: (B, H, T, hd) → output (B, H, T, hd), weights (B, H, T, T).

    mask: (T, T) bool, True where query i may NOT look at key j (`causal_mask(T)`), or None.
    """
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # (B, H, T, T)
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = scores.softmax(dim=-1)  # each row sums to 1 over the positions it may see
    return weights @ v, weights


class MultiHeadAttention(nn.Module):
    """Q, K, V from one fused projection, RoPE on Q and K, causal attention per head, then W_O."""

    def __init__(self, config: Config):
        super().__init__()
        self.n_heads, self.head_dim = config.n_heads, config.head_dim
        self.rope = config.positions.positional == "rope"
        self.rope_on_v = config.positions.rope_on_v
        self.causal = config.ablations.causal
        bias = config.modern_block.bias
        self.qkv = nn.Linear(config.d_model, 3 * config.attn_dim, bias=bias)  # [W_Q; W_K; W_V]
        self.out = nn.Linear(config.attn_dim, config.d_model, bias=bias)       # W_O
        # QK-norm (config.modern_block.qk_norm): each head's q and k are RMS-normalised before RoPE, so a score
        # q·k/√hd is bounded by the gains and cannot grow without limit as the weights do
        if config.modern_block.qk_norm:
            self.q_norm = RMSNorm(config.head_dim, config.norm_eps)
            self.k_norm = RMSNorm(config.head_dim, config.norm_eps)
        else:
            self.q_norm = self.k_norm = None
        if self.rope or self.rope_on_v:
            # one row of frequencies per head, so a grown model can keep them per head
            self.register_buffer("inv_freq", config_frequencies(config))

    def forward(self, x, rope_cos=None, rope_sin=None, need_weights: bool = False, kv=None):
        """x: (B, T, C) → (B, T, C), and the weights (B, H, T, S) if asked for.

        kv, one layer of a `KVCache`: x holds the T positions that follow the S − T already
        cached; their keys and values join the cache and their queries attend over all S.
        """
        B, T, _ = x.shape
        q, k, v = self.qkv(x).split(self.n_heads * self.head_dim, dim=-1)  # (B, T, H·hd) each
        q, k, v = (t.view(B, T, self.n_heads, self.head_dim).transpose(1, 2) for t in (q, k, v))
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        # contiguous first: apply_rope's every-other-element slices of a transposed view are slow
        if self.rope:
            q = self.rotate(q.contiguous(), rope_cos, rope_sin)
            k = self.rotate(k.contiguous(), rope_cos, rope_sin)
        if self.rope_on_v:
            v = self.rotate(v.contiguous(), rope_cos, rope_sin)
        if kv is not None:
            k, v = kv.append(k, v)  # (B, H, S, hd): the cached positions, then these
        y, weights = self.attend(q, k, v, need_weights)  # (B, H, T, hd), (B, H, T, S) or None
        y = y.transpose(1, 2).reshape(B, T, self.n_heads * self.head_dim)  # heads side by side
        return self.out(y), weights

    # The two steps a learner's own pieces can replace (minitf.parts); these are minitf's.
    def rotate(self, x, cos, sin):
        return apply_rope(x, cos, sin)

    def attend(self, q, k, v, need_weights: bool):
        """The written-out attention when the weights are wanted, else PyTorch's fused kernel.

        With a cache the T queries are the last of S positions: their rows of the (S, S) causal
        mask, `causal_mask(S)[S - T:]`, say which keys each may see.
        """
        T, S = q.size(-2), k.size(-2)
        if need_weights:
            mask = causal_mask(S, q.device)[S - T:] if self.causal else None
            return attention(q, k, v, mask)
        if T == S or not self.causal:
            return F.scaled_dot_product_attention(q, k, v, is_causal=self.causal), None
        allowed = None if T == 1 else ~causal_mask(S, q.device)[S - T:]  # one new query sees all
        return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed), None
