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


# ---- More causal tools: a head's output recorded, replaced by its mean, or patched in from another run.
# A head's output is what enters W_O (`attn.out`) in its head_dim columns: the tensor a forward
# pre-hook on `attn.out` sees, (B, T, H·hd), heads side by side.

def _head_slice(model, head: int) -> slice:
    hd = model.config.head_dim
    return slice(head * hd, (head + 1) * hd)


def _check_heads(model, heads):
    n_layers, n_heads = model.config.n_layers, model.config.n_heads
    for layer, head in heads:
        if not (0 <= layer < n_layers and 0 <= head < n_heads):
            raise ValueError(f"no head ({layer}, {head}): the model has {n_layers} layers of {n_heads} heads")


def head_outputs(model, ids: torch.Tensor) -> list[torch.Tensor]:
    """Every head's output on `ids`: one (B, T, H, head_dim) tensor per layer, what W_O reads."""
    outputs = []
    hooks = [block.attn.out.register_forward_pre_hook(lambda _, args: outputs.append(args[0].detach()))
             for block in model.blocks]
    try:
        with torch.no_grad():
            model.eval()(ids)
    finally:
        for hook in hooks:
            hook.remove()
    H, hd = model.config.n_heads, model.config.head_dim
    return [y.view(*y.shape[:2], H, hd) for y in outputs]


def mean_ablate_heads(model, heads, ids: torch.Tensor, keep: torch.Tensor | None = None) -> torch.nn.Module:
    """A copy of `model` in which each (layer, head) always outputs its mean output over `ids`.

    Zeroing a head (`ablate_heads`) removes what it says *and* its average, which later layers may
    rely on like a constant; the mean keeps the average and removes only what varies with the input.
    The mean is over the positions where `keep` is True (all of them if None), e.g. `ids != PAD`.
    It is folded into W_O's bias, so the copy is an ordinary model: it can be evaluated and generate.
    """
    _check_heads(model, heads)
    outputs = head_outputs(model, ids)
    keep = torch.ones(ids.shape, dtype=torch.bool) if keep is None else keep
    model = copy.deepcopy(model)
    with torch.no_grad():
        for layer, head in heads:
            mean = outputs[layer][keep][:, head].mean(0)           # (hd,)
            out = model.blocks[layer].attn.out
            cols = _head_slice(model, head)
            out.bias += out.weight[:, cols] @ mean.to(out.weight.dtype)
            out.weight[:, cols] = 0
    return model


def patch_heads(model, heads, clean_ids: torch.Tensor, corrupted_ids: torch.Tensor,
                positions=None) -> torch.Tensor:
    """Activation patching: the logits of the corrupted run with each (layer, head)'s output taken
    from the clean run, at `positions` (all if None). (B, T, vocab).

    If the patch restores the clean answer, what the corrupted input changed reaches the output
    through these heads at these positions. The two runs need the same length, so that their
    positions line up.
    """
    if clean_ids.shape != corrupted_ids.shape:
        raise ValueError(f"clean and corrupted ids must have one shape, got {tuple(clean_ids.shape)} "
                         f"and {tuple(corrupted_ids.shape)}")
    _check_heads(model, heads)
    clean = head_outputs(model, clean_ids)
    where = slice(None) if positions is None else list(positions)

    def patcher(layer):
        def hook(_, args):
            y = args[0].clone()                                       # (B, T, H·hd)
            for l, head in heads:
                if l == layer:
                    cols = _head_slice(model, head)
                    y[:, where, cols] = clean[layer].flatten(2)[:, where, cols]
            return (y,)
        return hook

    hooks = [block.attn.out.register_forward_pre_hook(patcher(layer))
             for layer, block in enumerate(model.blocks) if any(l == layer for l, _ in heads)]
    try:
        with torch.no_grad():
            return model.eval()(corrupted_ids)
    finally:
        for hook in hooks:
            hook.remove()
