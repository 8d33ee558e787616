"""A stand-in for another CPU: `MINITF_PERTURB=SEED` nudges every new model's initial weights by
about one unit in the last place.

float32 results differ in their last bits between instruction sets, thread counts and even CPUs of
the same instruction set (AMD against Intel AVX-512). Over hundreds of training steps such a
difference grows until a discrete outcome — the step a run stops at, a threshold crossed by step N —
can flip. One machine cannot run another's kernels, but it can start a trajectory one ulp away: each
randomly drawn weight is multiplied by 1 ± ε (ε = the dtype's machine epsilon, 2⁻²³ in float32) with a sign drawn
from SEED. A claim that survives two seeds of this survives the learner's CPU; `make test-perturbed`
and CI run the suite so. Unset (the default), nothing changes.
"""
from __future__ import annotations

import os

import torch
from torch import nn

ENV = "MINITF_PERTURB"


def perturbation_seed() -> int | None:
    """The seed `MINITF_PERTURB` names, or None when it is unset or empty."""
    value = os.environ.get(ENV, "").strip()
    if not value:
        return None
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{ENV}={value!r}: expected an integer seed (or unset it)") from None


@torch.no_grad()
def perturb_weights(model: nn.Module, seed: int) -> nn.Module:
    """Multiply every randomly drawn parameter by 1 ± ε, the signs drawn from `seed` by a generator
    of its own: the caller's random state is left exactly as it was, so everything drawn after the
    model (batches, dropout) is the same as in an unperturbed run."""
    generator = torch.Generator().manual_seed(seed)
    for p in model.parameters():
        if not p.is_floating_point() or p.numel() == 0 or bool((p == p.reshape(-1)[0]).all()):
            continue  # a constant (LayerNorm's ones, a zero-initialised projection) is exact on every CPU
        sign = torch.randint(0, 2, p.shape, generator=generator).to(p.dtype) * 2 - 1
        p.mul_(1 + sign.to(p.device) * torch.finfo(p.dtype).eps)
    return model


def perturb_if_asked(model: nn.Module) -> nn.Module:
    """`perturb_weights(model, seed)` when `MINITF_PERTURB` is set, else the model untouched."""
    seed = perturbation_seed()
    return model if seed is None else perturb_weights(model, seed)
