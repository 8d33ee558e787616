"""The position-wise feed-forward network: d_model → d_ff → d_model with a non-linearity.

Attention mixes positions; the FFN transforms each position's vector on its own.
"""
from __future__ import annotations

import torch.nn.functional as F
from torch import nn

from .config import Config

ACTIVATION_FUNCTIONS = {"relu": F.relu, "gelu": F.gelu, "silu": F.silu}


class FeedForward(nn.Module):
    def __init__(self, config: Config):
        super().__init__()
        self.up = nn.Linear(config.d_model, config.d_ff)
        self.down = nn.Linear(config.d_ff, config.d_model)
        self.act = ACTIVATION_FUNCTIONS[config.activation]

    def forward(self, x):  # (B, T, C) → (B, T, C)
        return self.down(self.act(self.up(x)))
