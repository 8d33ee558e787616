"""Muon whose Newton–Schulz orthogonalisation runs in the precision this machine is fast in.

torch.optim.Muon orthogonalises every update in bfloat16. Where the CPU has native bf16 (AVX-512
with avx512_bf16, or AMX) a bf16 matrix product is faster than a float32 one; where it has not
(AVX2, or AVX-512 without it) oneDNN emulates bf16 and the same product is 1.4x (AVX-512) to about
25x (AVX2) slower than in float32, which made a Muon training step twice an AdamW step. So this
Muon orthogonalises in bf16 on CUDA and on a CPU with fast bf16 (the same arithmetic as
torch.optim.Muon, bit for bit) and in float32 on any other CPU. Its state dict is
torch.optim.Muon's (it is a subclass), so saved runs still load and resume."""
from __future__ import annotations

import functools
import math
import os

import torch

# oneDNN ISA caps (ONEDNN_MAX_CPU_ISA) that still include native bf16 dot products
_BF16_ISA_WORDS = ("BF16", "AMX", "FP16", "AVX10", "ALL", "DEFAULT")


@functools.lru_cache(maxsize=None)
def cpu_has_fast_bf16() -> bool:
    """True where oneDNN runs bf16 matrix products natively: an x86 CPU with avx512_bf16 or AMX,
    oneDNN's bf16 path on, and no ONEDNN_MAX_CPU_ISA (or DNNL_MAX_CPU_ISA) cap below it. Decided
    from the CPU's flags, not timed, so a run's arithmetic does not depend on the machine's load."""
    if not (torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()):
        return False
    if not torch.ops.mkldnn._is_mkldnn_bf16_supported():
        return False
    cap = (os.environ.get("ONEDNN_MAX_CPU_ISA") or os.environ.get("DNNL_MAX_CPU_ISA") or "").upper()
    return not cap or any(word in cap for word in _BF16_ISA_WORDS)


def orthogonal_dtype(device: torch.device) -> torch.dtype:
    """The precision of the Newton–Schulz iteration for a parameter on `device`: bfloat16 on CUDA
    and on a CPU with fast bf16 (as torch.optim.Muon), float32 on any other CPU."""
    if device.type == "cpu" and not cpu_has_fast_bf16():
        return torch.float32
    return torch.bfloat16


def orthogonalise(update: torch.Tensor, coefficients, ns_steps: int, eps: float,
                  dtype: torch.dtype) -> torch.Tensor:
    """The quintic Newton–Schulz iteration of torch.optim.Muon (Keller Jordan's), in `dtype`:
    about U·S'·Vᵀ with S' near 1, for update = U·S·Vᵀ. In bfloat16 it is torch's, step for step."""
    a, b, c = coefficients
    x = update.to(dtype, copy=True)
    tall = update.size(0) > update.size(1)
    if tall:
        x = x.T
    x.div_(x.norm().clamp(min=eps))  # spectral norm at most 1
    for _ in range(ns_steps):
        gram = x @ x.T
        x = torch.addmm(x, torch.addmm(gram, gram, gram, beta=b, alpha=c), x, beta=a)
    return x.T if tall else x


def adjusted_lr(lr: float, adjust_lr_fn: str | None, shape) -> float:
    """torch.optim.Muon's per-matrix rate: "match_rms_adamw" 0.2·√max(A, B) (an update RMS like
    AdamW's), "original" (or None) √max(1, A/B)."""
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return lr * math.sqrt(max(1, rows / cols))
    if adjust_lr_fn == "match_rms_adamw":
        return lr * 0.2 * math.sqrt(max(rows, cols))
    return lr


class Muon(torch.optim.Muon):
    """torch.optim.Muon with the orthogonalisation's precision chosen per device
    (orthogonal_dtype), or fixed by `dtype` (torch.bfloat16 reproduces torch.optim.Muon)."""

    def __init__(self, params, *args, dtype: torch.dtype | None = None, **kwargs):
        super().__init__(params, *args, **kwargs)
        self.dtype = dtype

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            lr = float(group["lr"])
            momentum = group["momentum"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad, state = p.grad, self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = torch.zeros_like(grad, memory_format=torch.preserve_format)
                buf = state["momentum_buffer"]
                buf.lerp_(grad, 1 - momentum)
                update = grad.lerp(buf, momentum) if group["nesterov"] else buf
                update = orthogonalise(update, group["ns_coefficients"], group["ns_steps"], group["eps"],
                                       self.dtype or orthogonal_dtype(p.device))
                p.mul_(1 - lr * group["weight_decay"])
                p.add_(update, alpha=-adjusted_lr(lr, group["adjust_lr_fn"], p.shape))
        return loss
