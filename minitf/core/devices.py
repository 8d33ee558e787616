"""Devices: where the model's weights live is where its batches are built.

minitf never assumes the CPU: training, evaluation and generation ask the model for its device
(`device_of`) and put every tensor they build there, so `model.to("cuda")` (or "mps") is all it
takes to run on a GPU. Random draws that pick data (batch order, windows, sampled bytes) stay on
the CPU's generator, so the same random seed picks the same data on every device; only the float
arithmetic differs (the last digits of a loss, and speed).
"""
from __future__ import annotations

import itertools

import torch

CHOICES = ("auto", "cpu", "cuda", "mps")


def mps_available() -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps and mps.is_available())


def pick_device(name: str = "auto") -> torch.device:
    """"auto": CUDA if present, else Apple's MPS if present, else the CPU; otherwise the one named,
    refused with the reason if this machine does not have it."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "mps" if mps_available() else "cpu")
    if name not in CHOICES:
        raise ValueError(f"device must be one of {', '.join(CHOICES)}, got {name!r}")
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError("device cuda asked for, but torch sees no CUDA GPU here "
                         f"(torch {torch.__version__}); use --device auto or cpu")
    if name == "mps" and not mps_available():
        raise ValueError("device mps asked for, but torch sees no Apple MPS device here; "
                         "use --device auto or cpu")
    return torch.device(name)


def device_of(model) -> torch.device:
    """The device of the model's first parameter (or buffer); the CPU for a model with neither."""
    tensor = next(itertools.chain(model.parameters(), model.buffers()), None)
    return torch.device("cpu") if tensor is None else tensor.device
