"""How well a model does on pairs: loss, character accuracy, exact match."""
from __future__ import annotations

from collections import defaultdict

import torch
import torch.nn.functional as F

from . import generate as generation
from .data import Pair, make_batch
from .devices import device_of
from .model import evaluating
from .tokens import EOS, IGNORE, TAB


def masked_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over the positions whose target is not IGNORE (output bytes and EOS)."""
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=IGNORE)


@torch.no_grad()
def greedy_outputs(model, inputs: list[bytes], max_new_tokens: int) -> list[bytes | None]:
    """Greedy outputs for many inputs, batched by input length; None where no EOS came in time."""
    by_len = defaultdict(list)
    for i, x in enumerate(inputs):
        by_len[len(x)].append(i)
    outs: list[bytes | None] = [None] * len(inputs)
    for n, rows in by_len.items():
        prompts = torch.tensor([[*inputs[i], TAB] for i in rows], device=device_of(model))
        # the loop generate runs (no cache, up to EOS), greedy, a batch of one length at a time
        seq, _ = generation.generation_loop(model, prompts, max_new_tokens, generation.picker(),
                                            cache=False, until_eos=True)
        for i, row in zip(rows, seq[:, n + 1:].tolist()):
            outs[i] = bytes(row[:row.index(EOS)]) if EOS in row else None
    return outs


@torch.no_grad()
def evaluate(model, pairs: list[Pair], batch_size: int = 512) -> dict:
    """loss and char_accuracy are teacher-forced over output bytes + EOS; exact_match asks the
    model to generate the whole output greedily and stop at EOS, with nothing given."""
    if not pairs:
        raise ValueError("evaluate needs at least one pair")
    device = device_of(model)
    total_loss, correct, count = 0.0, 0, 0
    with evaluating(model):
        for start in range(0, len(pairs), batch_size):
            ids, targets = (t.to(device) for t in make_batch(pairs[start:start + batch_size]))
            logits = model(ids)
            keep = targets != IGNORE
            n = int(keep.sum())
            total_loss += masked_loss(logits, targets).item() * n
            correct += int((logits.argmax(-1) == targets)[keep].sum())
            count += n
        longest = max(len(p.output) for p in pairs) + 1
        outs = greedy_outputs(model, [p.input for p in pairs], longest)
    exact = sum(o == p.output for o, p in zip(outs, pairs))
    return {"loss": total_loss / count, "char_accuracy": correct / count,
            "exact_match": exact / len(pairs)}


@torch.no_grad()
def exact_match_by_length(model, pairs: list[Pair]) -> dict[int, float]:
    """Exact match for each input length {length: share right}, shortest first: a model that
    learned shift only for the lengths it was trained on cannot hide that in an average."""
    if not pairs:
        raise ValueError("exact_match_by_length needs at least one pair")
    longest = max(len(p.output) for p in pairs) + 1
    with evaluating(model):
        outs = greedy_outputs(model, [p.input for p in pairs], longest)
    right, count = defaultdict(int), defaultdict(int)
    for out, p in zip(outs, pairs):
        count[len(p.input)] += 1
        right[len(p.input)] += out == p.output
    return {n: right[n] / count[n] for n in sorted(count)}


def teacher_forced_exact_match(model, pairs: list[Pair]) -> float:
    """The fraction of pairs whose every output byte and EOS is the model's top choice given the
    true bytes before it: greedy generation's exact match, in one forward pass."""
    ids, targets = make_batch(pairs)
    with torch.no_grad():
        top = model.eval()(ids).argmax(-1)
    return ((top == targets) | (targets == IGNORE)).all(-1).sum().item() / len(pairs)
