"""What a residual connection does for the gradient (notebook 04).

Each sub-layer f adds to the stream, h ← h + f(h), so ∂(h + f(h))/∂h = I + ∂f/∂h: the gradient has a
direct path past every layer. Through a stack of freshly initialised FFNs without it, the gradient
that reaches the input all but vanishes. Computed live, in float64.
"""
from __future__ import annotations

import torch

from ..core.config import Config
from ..core.ffn import FeedForward


def gradient_through_stack(depth: int = 16, seed: int = 0) -> None:
    """Prints the size of the gradient that reaches the input through `depth` fresh FFNs of the tiny
    model, stacked plainly (h = f(h)) and with residual connections (h = h + f(h))."""
    torch.manual_seed(seed)
    stack = [FeedForward(Config()).double() for _ in range(depth)]
    x = torch.rand(8, 4, dtype=torch.float64, requires_grad=True)  # 8 positions, d_model 4
    print(f"size of the gradient that reaches the input through {depth} FFNs:")
    for name, step in (("plain    h = f(h)", lambda h, f: f(h)), ("residual h = h + f(h)", lambda h, f: h + f(h))):
        h = x
        for f in stack:
            h = step(h, f)
        grad, = torch.autograd.grad(h.sum(), x)
        print(f"  {name:22s} |d out / d input| = {grad.norm().item():.0e}")
