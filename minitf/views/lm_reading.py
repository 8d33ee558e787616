"""What a trained language model reads (notebook 09): its loss against how many bytes it has read,
and the causal mask held to account (a changed byte changes no logit before it).
"""
from __future__ import annotations

import math

import torch

from ..core.text import TextPart, loss_by_position
from .figures import plot_bytes_read

SPANS = [(1, 1), (2, 4), (5, 8), (9, 16), (17, 32), (33, 64)]  # bytes read: first, last


def bytes_read(model, part: TextPart, bigram_nats: float, max_windows: int = 400, spans=SPANS):
    """Print the model's bits per byte averaged over each span of bytes read, on `max_windows`
    windows of `part`, and return the figure of every position beside the bigram."""
    bits = loss_by_position(model, part, max_windows=max_windows) / math.log(2)  # (T,)
    for a, b in spans:
        print(f"{a:>2}–{b:<2} bytes read: {bits[a - 1:b].mean():.2f} bits per byte")
    return plot_bytes_read(bits, spans, ("bigram: reads 1 byte", bigram_nats / math.log(2)),
                           title=f"How far back the model reads ({max_windows} validation windows)")


@torch.no_grad()
def changed_byte(model, part: TextPart, at: int = 20, length: int = 32, byte: str = "#") -> str:
    """Change byte `at` of the first window of `part` and say which logits changed: none before it."""
    window = part.data[:length].long()[None]  # (1, length)
    changed = window.clone()
    changed[0, at] = ord(byte)
    a, b = model(window), model(changed)
    return (f"logits before position {at} unchanged: {torch.equal(a[0, :at], b[0, :at])}"
            f" | from {at} on: {not torch.equal(a[0, at:], b[0, at:])}")
