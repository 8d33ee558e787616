"""The course's seed model in plain PyTorch, to read top to bottom: `Transformer(Config())` without
the options.

Bytes in (vocabulary 256), d_model 4, two heads of dimension 2, two post-norm layers, an FFN
4→8→4 with ReLU, RoPE on queries and keys, a causal mask and an untied 4→256 head: 2,648
parameters. Its parameter names are minitf.Transformer's, so weights move between the two
(`MinimalTransformer().load_state_dict(Transformer(Config()).state_dict())`) and a test holds
their logits equal. What it leaves out: dropout (the library's is 0.0078 here, off in eval mode),
the KV cache, returning the attention weights and every variant `Config` switches on.
"""
from __future__ import annotations

import math

import torch
from torch import nn

VOCAB, D_MODEL, N_HEADS, HEAD_DIM, N_LAYERS, D_FF, MAX_LEN = 256, 4, 2, 2, 2, 8, 128
ROPE_BASE = 10000.0


def rotate_pairs(x, positions, inv_freq):
    """RoPE: turn each pair (x_2i, x_2i+1) of x (B, H, T, hd) by the angle position · θ_i.

    A rotation keeps a vector's length, and q at m rotated against k at n leaves their dot product
    a function of m − n only: attention sees how far apart two bytes are, not where they are.
    """
    angles = positions[:, None] * inv_freq[:, None, :]  # (H, T, hd/2)
    cos, sin = angles.cos(), angles.sin()
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)


class Attention(nn.Module):
    """Every position mixes the values of the positions up to it, weighted by query · key."""

    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(D_MODEL, 3 * N_HEADS * HEAD_DIM)  # W_Q, W_K, W_V in one matrix
        self.out = nn.Linear(N_HEADS * HEAD_DIM, D_MODEL)      # W_O: the heads back into the stream
        # θ_i = base^(−2i/hd), one row per head (minitf keeps them per head so a grown model can
        # keep the old ones); with hd 2 the one frequency is 1 rad per position
        theta = ROPE_BASE ** (-torch.arange(0, HEAD_DIM, 2, dtype=torch.float64) / HEAD_DIM)
        self.register_buffer("inv_freq", theta.float().expand(N_HEADS, -1).clone())

    def forward(self, x):  # (B, T, C) → (B, T, C)
        B, T, _ = x.shape
        q, k, v = self.qkv(x).split(N_HEADS * HEAD_DIM, dim=-1)
        q, k, v = (t.view(B, T, N_HEADS, HEAD_DIM).transpose(1, 2) for t in (q, k, v))  # (B, H, T, hd)
        positions = torch.arange(T, dtype=self.inv_freq.dtype, device=x.device)
        q, k = rotate_pairs(q, positions, self.inv_freq), rotate_pairs(k, positions, self.inv_freq)
        scores = q @ k.transpose(-2, -1) / math.sqrt(HEAD_DIM)  # (B, H, T, T)
        future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)
        weights = scores.masked_fill(future, float("-inf")).softmax(dim=-1)  # no peeking ahead
        y = (weights @ v).transpose(1, 2).reshape(B, T, N_HEADS * HEAD_DIM)  # heads side by side
        return self.out(y)


class FeedForward(nn.Module):
    """Each position on its own: up to 8 units, ReLU, back down to 4."""

    def __init__(self):
        super().__init__()
        self.up = nn.Linear(D_MODEL, D_FF)
        self.down = nn.Linear(D_FF, D_MODEL)

    def forward(self, x):
        return self.down(torch.relu(self.up(x)))


class Block(nn.Module):
    """Attention then the FFN, each added to the stream and normalised after (post-norm, as in the
    original Transformer): h = LN(h + f(h))."""

    def __init__(self):
        super().__init__()
        self.norm1, self.attn = nn.LayerNorm(D_MODEL), Attention()
        self.norm2, self.ffn = nn.LayerNorm(D_MODEL), FeedForward()

    def forward(self, h):
        h = self.norm1(h + self.attn(h))
        return self.norm2(h + self.ffn(h))


class MinimalTransformer(nn.Module):
    """ids (B, T) → logits (B, T, 256): row t scores the byte that follows ids[:, t]."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D_MODEL)  # one learned vector per byte
        self.blocks = nn.ModuleList(Block() for _ in range(N_LAYERS))
        self.head = nn.Linear(D_MODEL, VOCAB)     # its own matrix: not tied to the embedding

    def forward(self, ids):
        if ids.dim() != 2 or ids.size(1) > MAX_LEN:
            raise ValueError(f"ids must be (batch, length ≤ {MAX_LEN}), got shape {tuple(ids.shape)}")
        h = self.embed(ids)  # no position is added: RoPE inside attention gives the order
        for block in self.blocks:
            h = block(h)
        return self.head(h)
