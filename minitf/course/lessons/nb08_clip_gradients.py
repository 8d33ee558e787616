"""Notebook 08's gradient clipping as a function, checked through a driver that hands it
parameters holding copies of the case's gradients."""
from __future__ import annotations

import inspect as _inspect

import torch
from torch.nn.utils import clip_grad as _clip_grad

from .. import training_checks
from ..cases import random_case as _rand, driven_slips as _slips
from ..declaration import Exercise, Piece, refused


# --- 6 · gradient clipping as a function --------------------------------------------------------------

def _clip_grads(seed: int, scale: float) -> list:
    """Three gradients of different sizes (and one parameter without a gradient, None)."""
    return [_rand(2, 3, seed=seed) * scale, _rand(4, seed=seed + 1) * scale * 0.1, None,
            _rand(3, 2, seed=seed + 2) * scale * 3]


def _clip_cases():
    """Above the limit (scaled down), below it (left alone), and far above with a small limit."""
    return [(_clip_grads(0, 1.0), 1.0), (_clip_grads(1, 0.1), 5.0), (_clip_grads(2, 10.0), 0.5)]


def drive_clip(fn, grads, max_norm):
    """The gradients after fn(parameters, max_norm), one flat tensor: fn gets fresh parameters
    holding copies of `grads` (None: a parameter without a gradient), as a generator, the way
    model.parameters() hands them over."""
    params = []
    for g in grads:
        p = torch.nn.Parameter(torch.zeros(2, dtype=torch.float64) if g is None else torch.zeros_like(g))
        p.grad = None if g is None else g.clone()
        params.append(p)
    fn((p for p in params), max_norm)
    after = [p.grad for p in params if p.grad is not None]
    return torch.cat([g.reshape(-1) for g in after]) if after else None


def _clip_slips(grads, max_norm):
    present = [g for g in grads if g is not None]
    flat = lambda gs: torch.cat([g.reshape(-1) for g in gs])
    total = torch.sqrt(sum((g ** 2).sum() for g in present))
    per_tensor = flat([g * min(1.0, max_norm / (float(g.norm()) + 1e-6)) for g in present])
    always = flat([g * (max_norm / (total + 1e-6)) for g in present])
    summed = sum(float(g.norm()) for g in present)
    sum_of_norms = flat([g * min(1.0, max_norm / (summed + 1e-6)) for g in present])
    return (_slips("_clip_per_tensor", [(per_tensor, (
                "yours clips each tensor by its own norm: the limit is on ONE norm over all the "
                "gradients together, √(Σ over every tensor of Σ g²), and every tensor is scaled by "
                "the same factor"))]),
            _slips("_clip_below_limit", [(always, (
                f"yours scales the gradients although their norm ({float(total):.4g}) is below "
                f"max_norm ({max_norm:g}): clipping only ever scales DOWN, by max_norm / norm when "
                "the norm is above the limit, and leaves them alone otherwise"))]),
            _slips("_clip_sum_of_norms", [(sum_of_norms, (
                "yours adds up the tensors' norms: the total norm is the square root of the sum of "
                "every squared entry, √(Σ ‖g‖²), not Σ ‖g‖"))]),
            _slips("_clip_never", [(flat(present), (
                f"yours leaves the gradients as they were, though their norm ({float(total):.4g}) is "
                f"above max_norm ({max_norm:g}). If you loop over `parameters` twice, make it a "
                "list first: model.parameters() is a generator, empty after the first pass"))]))


def my_clip_gradients(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]  # a list: a generator is used up once
    total = torch.stack([g.norm() for g in grads]).norm()       # √(‖g₁‖² + ‖g₂‖² + …): ONE norm
    if total > max_norm:                                        # only ever scale down
        for g in grads:
            g.mul_(max_norm / (total + 1e-6))                   # in place; + 1e-6 as PyTorch does


EXERCISES = [
    Exercise(name="clip_gradients", notebook="08",
             teaches="gradient clipping: one norm over all the gradients, scaled "
             "down to max_norm only when above it", difficulty=2, minutes=10, solution=my_clip_gradients,
             reference=training_checks.torch_clip,
             cases=_clip_cases,
             hint="keep the gradients that exist (p.grad is not None) in a list; their total norm is "
             "√(Σ g²) over every entry of every tensor; if it is above max_norm, multiply every "
             "gradient in place by max_norm / (norm + 1e-6), else leave them alone",
             drive=drive_clip,
             options={"diagnoses": _clip_slips,
                      "case_names": ["gradients above the limit", "gradients below it",
                                     "far above a small limit"], "hints_by_diagnosis": {
                 "_clip_per_tensor": "one norm for all, √(‖g₁‖² + ‖g₂‖² + …): total = "
                                     "torch.stack([g.norm() for g in grads]).norm(), and the same "
                                     "factor for every tensor",
                 "_clip_below_limit": "if total > max_norm: scale; otherwise leave the gradients "
                                      "as they are",
                 "_clip_sum_of_norms": "the norms add like the sides of a right angle: "
                                       "√(‖g₁‖² + ‖g₂‖² + …), torch.stack([g.norm() for g in "
                                       "grads]).norm()",
                 "_clip_never": "grads = [p.grad for p in parameters if p.grad is not None] once, "
                                "then work on that list; scale with g.mul_(…) so the change stays "
                                "in p.grad",
                 "raised": "a parameter may have no gradient (p.grad is None): leave it out"}},
             library=refused((_inspect.unwrap(_clip_grad.clip_grad_norm_),
                              "torch.nn.utils.clip_grad_norm_"),
                             (_inspect.unwrap(_clip_grad.clip_grad_norm),
                              "torch.nn.utils.clip_grad_norm"),
                             (_inspect.unwrap(torch.nn.utils.get_total_norm),
                              "torch.nn.utils.get_total_norm"),
                             (_inspect.unwrap(torch.nn.utils.clip_grads_with_norm_),
                              "torch.nn.utils.clip_grads_with_norm_"),
                             training_checks.torch_clip),
             own_work="p.grad, ** 2, .sum(), torch.sqrt (or .norm() on one tensor) and .mul_ are "
                      "fine (the one norm and the only-when-above are the exercise): "
                      "torch.nn.utils.clip_grad_norm_ is clipping itself",
             piece=Piece(fills="training", order=1,
                         call='clip_gradients(parameters, max_norm): one norm over all gradients, scaled down to max_norm when above it'),
             optional=True),
]
