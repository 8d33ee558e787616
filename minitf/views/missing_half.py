"""Origami without the 1/k (notebook 07, section 3): does a missing ½ compound through the layers?

The recipe of plain copies, [[W, W], [W, W]], is the exact ×2 widening with the ½ left out of some
weights. `missing_half` doubles each group of weights in turn (and all of them together), sizes
what that group scales in a `trace` of one sequence, doubled ÷ exact, and measures the held-out
loss: the stream leaving each post-norm block keeps its size, while the scores, the branches and the
logits grow, and each costs loss.
"""
from __future__ import annotations

import copy

import torch

from ..core.evaluate import masked_loss
from ..core.model import Transformer
from .trace import trace

PARTS = ("W_Q, W_K", "W_V, W_O", "FFN", "head", "all")


def double(model: Transformer, part: str) -> Transformer:
    """A copy of `model` with the weights of `part` (one of PARTS) doubled: without their ½, as the
    recipe of copies has them."""
    out = copy.deepcopy(model)
    rows = out.config.n_heads * out.config.head_dim  # qkv holds W_Q's rows, then W_K's, then W_V's
    with torch.no_grad():
        for block in out.blocks:
            if part in ("W_Q, W_K", "all"):
                block.attn.qkv.weight[:2 * rows] *= 2
            if part in ("W_V, W_O", "all"):
                block.attn.qkv.weight[2 * rows:] *= 2
                block.attn.out.weight *= 2
            if part in ("FFN", "all"):
                block.ffn.up.weight *= 2
                block.ffn.down.weight *= 2
        if part in ("head", "all"):
            out.head.weight *= 2
    return out


def _rms(t: torch.Tensor) -> float:
    return t.pow(2).mean().sqrt().item()


def _sizes(t, t0) -> dict[str, tuple[str, list[float]]]:
    """part → (what its doubling scales, the size of that quantity in trace t ÷ in trace t0)."""
    allowed = ~t0.layers[0].mask  # the scores the causal mask lets through
    centred = [logits - logits.mean(-1, keepdim=True) for logits in (t.logits, t0.logits)]  # softmax ignores a shift
    return {"W_Q, W_K": ("attention scores, layer 0",
                         [_rms(t.layers[0].scores[:, allowed]) / _rms(t0.layers[0].scores[:, allowed])]),
            "W_V, W_O": ("attention output, layer 0", [_rms(t.layers[0].attn_out) / _rms(t0.layers[0].attn_out)]),
            "FFN": ("FFN output, layer 0", [_rms(t.layers[0].ffn_out) / _rms(t0.layers[0].ffn_out)]),
            "head": ("logits", [_rms(centred[0]) / _rms(centred[1])]),
            "all": ("the stream leaving layer 0 / 1", [_rms(a.output) / _rms(b.output) for a, b in zip(t.layers, t0.layers)])}


def missing_half(exact: Transformer, seq: bytes, batch) -> dict[str, float]:
    """Print, for each part of the exact ×2 widening `exact` doubled, what grows and by how much
    (sized on `seq`) and the held-out loss on `batch` (ids, targets); return part → that loss
    ("none": the exact widening)."""
    def held_out_loss(model):
        with torch.no_grad():
            return masked_loss(model.eval()(batch.ids), batch.targets).item()

    t0 = trace(exact, seq)
    loss = {"none": held_out_loss(exact)}
    print(f"{'weights doubled':<16} {'what grows':<32} {'× size':>11} {'held-out loss':>14}")
    print(f"{'none (exact)':<16} {'':<32} {'':>11} {loss['none']:>14.2f}")
    for part in PARTS:
        doubled = double(exact, part)
        what, factors = _sizes(trace(doubled, seq), t0)[part]
        loss[part] = held_out_loss(doubled)
        size = " / ".join(f"{f:.2f}" for f in factors) if part == "all" else f"{factors[0]:.1f}"
        print(f"{part:<16} {what:<32} {size:>11} {loss[part]:>14.2f}")
    return loss
