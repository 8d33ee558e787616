"""Training: AdamW, linear warm-up then cosine decay, gradient clipping, a progress bar."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import torch
from tqdm.auto import tqdm

from . import data
from .data import Pair
from .evaluate import evaluate, masked_loss
from .tokens import IGNORE


def lr_at(step: int, steps: int, lr: float, warmup: int, min_lr_ratio: float = 0.1) -> float:
    """Learning rate for step (0-based): linear warm-up to lr, then cosine down to lr·min_lr_ratio."""
    if step < warmup:
        return lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return lr * (min_lr_ratio + (1 - min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


@dataclass
class History:
    loss: list[float] = field(default_factory=list)  # training loss, one per step
    lr: list[float] = field(default_factory=list)
    val: list[dict] = field(default_factory=list)    # {"step": …, "loss", "char_accuracy", "exact_match"}
    tokens: int = 0      # target tokens the loss was taken over (output bytes + EOS)
    seconds: float = 0.0
    optimizer: torch.optim.Optimizer | None = field(default=None, repr=False)

    def last_val(self) -> dict | None:
        return self.val[-1] if self.val else None


def make_optimizer(model, lr: float, weight_decay: float = 0.01) -> torch.optim.AdamW:
    """AdamW with decay on matrices only (not on biases and norm gains, as usual)."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                              {"params": rest, "weight_decay": 0.0}], lr=lr)


def train_step(model, optimizer, ids, targets, clip: float = 1.0) -> torch.Tensor:
    """One update: forward, output-only loss, backward, gradient clipping, optimizer step."""
    loss = masked_loss(model(ids), targets)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if clip:
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()
    return loss


def train(model, train_pairs: list[Pair], val_pairs: list[Pair] | None = None, *, steps: int = 1000,
          batch_size: int = 64, lr: float = 3e-3, weight_decay: float = 0.01, warmup: int = 50,
          min_lr_ratio: float = 0.1, clip: float = 1.0, seed: int = 0, eval_every: int | None = None,
          progress: bool = True, optimizer: torch.optim.Optimizer | None = None,
          make_batch=None) -> History:
    """Train `model` in place on the output part of each pair; returns the History.

    Batches are drawn without replacement, epoch after epoch, from a generator seeded with `seed`.
    val_pairs are evaluated every eval_every steps (default: only at the end). Pass the optimizer
    of an earlier run (history.optimizer) to continue with its moments. `make_batch` replaces
    minitf.make_batch (a learner's own, in notebook 08).
    """
    if not train_pairs:
        raise ValueError("train needs at least one training pair")
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    torch.manual_seed(seed)  # dropout masks
    gen = torch.Generator().manual_seed(seed)
    all_ids, all_targets = (make_batch or data.make_batch)(train_pairs)  # encode once, slice rows per step
    lengths = (all_targets != IGNORE).long().cumsum(1).argmax(1) + 1  # last real target + 1
    batch_size = min(batch_size, len(train_pairs))
    opt = optimizer or make_optimizer(model, lr, weight_decay)
    history = History(optimizer=opt)
    order = torch.randperm(len(train_pairs), generator=gen)
    cursor = 0
    model.train()
    start = time.perf_counter()
    bar = tqdm(range(steps), desc="train", disable=not progress, leave=False)
    for step in bar:
        if cursor + batch_size > len(order):
            order, cursor = torch.randperm(len(train_pairs), generator=gen), 0
        rows = order[cursor:cursor + batch_size]
        cursor += batch_size
        T = int(lengths[rows].max())
        ids, targets = all_ids[rows, :T], all_targets[rows, :T]
        rate = lr_at(step, steps, lr, warmup, min_lr_ratio)
        for group in opt.param_groups:
            group["lr"] = rate
        loss = train_step(model, opt, ids, targets, clip)
        history.loss.append(loss.item())
        history.lr.append(rate)
        history.tokens += int((targets != IGNORE).sum())
        if val_pairs and ((eval_every and (step + 1) % eval_every == 0) or step + 1 == steps):
            history.val.append({"step": step + 1, **evaluate(model, val_pairs)})
            model.train()
            bar.set_postfix(loss=f"{loss.item():.3f}", val_exact=f"{history.val[-1]['exact_match']:.2f}")
        elif step % 20 == 0:
            bar.set_postfix(loss=f"{loss.item():.3f}")
    history.seconds = time.perf_counter() - start
    model.eval()
    return history
