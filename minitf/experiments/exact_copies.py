"""Do exact copies stay copies? Notebook 07, section 6: a model widened ×2 with an exact split
(noise 0) trains as two copies forever, since identical copies get identical gradients; a noisy
split lets them part. `train_watching_copies` trains a widened model and records the gap."""
from __future__ import annotations

import torch

from ..core.data import make_batch
from ..core.model import Transformer
from ..core.train import make_optimizer, train_step


def copies_gap(model: Transformer) -> float:
    """The largest difference between the two halves of a ×2-widened model's embedding: exactly 0
    while the copies are exact copies."""
    d = model.config.d_model // 2
    return (model.embed.weight[:, :d] - model.embed.weight[:, d:]).abs().max().item()


def train_watching_copies(model: Transformer, pairs, steps: int = 150, every: int = 5, lr: float = 3e-3,
                          batch_size: int = 32, seed: int = 1) -> list[float]:
    """Train `model` in place on random batches of `pairs` and return copies_gap at step 0 and every
    `every` steps: identical copies get identical gradients, so only a split that is not exact parts."""
    optimizer = make_optimizer(model, lr=lr)
    batches = torch.Generator().manual_seed(seed)
    gaps = [copies_gap(model)]
    for step in range(1, steps + 1):
        pick = torch.randint(len(pairs), (batch_size,), generator=batches).tolist()
        batch = make_batch([pairs[i] for i in pick])
        train_step(model, optimizer, batch.ids, batch.targets)
        if step % every == 0:
            gaps.append(copies_gap(model))
    return gaps
