"""Switching heads off: causal evidence for what a head does.

A heatmap shows where a head looks; it does not show that the model *needs* what the head reads.
Removing the head and measuring again does. A head reaches the rest of the model only through
its head_dim columns of W_O (the heads sit side by side before W_O), so zeroing those columns
removes exactly that head's contribution and leaves everything else as it was.
"""
from __future__ import annotations

import copy

import torch


def ablate_heads(model, heads) -> torch.nn.Module:
    """A copy of `model` with each (layer, head) in `heads` switched off; the model itself is kept."""
    model = copy.deepcopy(model)
    hd, n_layers, n_heads = model.config.head_dim, model.config.n_layers, model.config.n_heads
    with torch.no_grad():
        for layer, head in heads:
            if not (0 <= layer < n_layers and 0 <= head < n_heads):
                raise ValueError(f"no head ({layer}, {head}): the model has {n_layers} layers of "
                                 f"{n_heads} heads")
            model.blocks[layer].attn.out.weight[:, head * hd:(head + 1) * hd] = 0
    return model
