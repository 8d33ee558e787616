"""The position-wise feed-forward network: d_model → d_ff → d_model with a non-linearity.

Attention mixes positions; the FFN transforms each position's vector on its own. The gated form
(config.modern_block.ffn_gate; Shazeer 2020) multiplies the activation by a second, linear projection of the
same input: down(act(up x) ⊙ gate x); with SiLU it is LLaMA's SwiGLU.
"""
from __future__ import annotations

import torch.nn.functional as F
from torch import nn

from .config import Config


def relu2(u):
    """ReLU(u)²: sparse like ReLU, smooth at 0 (Primer, So et al. 2021; modded-nanogpt)."""
    return F.relu(u).square()


ACTIVATION_FUNCTIONS = {"relu": F.relu, "gelu": F.gelu, "silu": F.silu, "relu2": relu2}


class FeedForward(nn.Module):
    def __init__(self, config: Config):
        super().__init__()
        bias = config.modern_block.bias
        self.up = nn.Linear(config.d_model, config.d_ff, bias=bias)
        self.down = nn.Linear(config.d_ff, config.d_model, bias=bias)
        # the gate: a second projection the activation is multiplied by (a gated FFN only)
        self.gate = nn.Linear(config.d_model, config.d_ff, bias=bias) \
            if config.modern_block.ffn_gate else None
        self.act = ACTIVATION_FUNCTIONS[config.activation]

    def forward(self, x):  # (B, T, C) → (B, T, C)
        hidden = self.act(self.up(x))
        if self.gate is not None:
            hidden = hidden * self.gate(x)
        return self.down(hidden)
