"""What a loss is worth: the loss of predictors that know nothing about the rule.

Every number is the quantity `minitf.evaluate` reports as "loss": the mean cross-entropy in nats
over all target positions of the pairs (each output byte and the EOS after it, pooled over pairs).
A model's loss means something only next to these:

- uniform over 256 — every byte value equally likely: ln 256 = 5.545 everywhere.
- uniform over 96 — the 95 printable bytes (32–126) and EOS equally likely: ln 96 = 4.564.
  (Uniform over the 95 printable bytes alone, ln 95 = 4.554, gives EOS probability 0: an
  infinite loss at every end of output.)
- unigram — each symbol's frequency among the *training* pairs' targets (output bytes and EOS),
  evaluated on the pairs given. Smoothing: 0.01 is added to the count of each of the 256 values, so
  a byte never seen in training costs about ln(total/0.01) instead of infinity, and a seen one's
  probability barely moves (add-one would give the 161 bytes that never occur in an output about
  5 % of the probability on a 450-pair training set). It knows how often outputs end (EOS) and
  which bytes are common, nothing about order or the input.
- length oracle — told each output's length n: EOS with probability 1 after n bytes, the 95
  printable bytes uniformly before (infinite if an output holds a byte outside them).
  Per pair n·ln 95 nats over n + 1 targets.

A model below the unigram has learned something about the input; below the length oracle, it
predicts output bytes themselves from the input, the task's rule.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from .data import PRINTABLE, Pair
from .tokens import EOS, VOCAB



def targets(pair: Pair) -> list[int]:
    """The positions a model is scored on: the output bytes, then EOS."""
    return [*pair.output, EOS]


def uniform_loss(pairs: list[Pair], n_symbols: int) -> float:
    """Every target has probability 1/n_symbols: the loss is ln n_symbols whatever the pairs."""
    if not pairs:
        raise ValueError("need at least one pair")
    return math.log(n_symbols)


def unigram_loss(pairs: list[Pair], train_pairs: list[Pair], smoothing: float = 0.01) -> float:
    """p(s) = (count of s among train_pairs' targets + smoothing) / (total + 256 · smoothing)."""
    if not pairs or not train_pairs:
        raise ValueError("need at least one pair and one training pair")
    counts = Counter(s for p in train_pairs for s in targets(p))
    total = sum(counts.values()) + VOCAB * smoothing
    nll = [-math.log((counts[s] + smoothing) / total) for p in pairs for s in targets(p)]
    return sum(nll) / len(nll)


def length_oracle_loss(pairs: list[Pair], alphabet: bytes = PRINTABLE) -> float:
    """EOS is certain after exactly len(output) bytes; before it, uniform over `alphabet`."""
    if not pairs:
        raise ValueError("need at least one pair")
    allowed = set(alphabet)
    if any(b not in allowed for p in pairs for b in p.output):
        return math.inf
    n_bytes = sum(len(p.output) for p in pairs)
    return n_bytes * math.log(len(allowed)) / (n_bytes + len(pairs))


@dataclass(frozen=True)
class Baselines:
    """The baseline losses of one pair set, in nats per target (output bytes and EOS)."""
    uniform_256: float
    uniform_96: float
    unigram: float | None  # None when no training pairs were given
    length_oracle: float
    n_pairs: int
    n_targets: int

    LABELS = {"uniform_256": "uniform over 256 bytes",
              "uniform_96": "uniform over 95 printable + EOS",
              "unigram": "unigram of the training targets",
              "length_oracle": "length oracle"}

    def items(self) -> list[tuple[str, float]]:
        """(label, loss) from the weakest to the strongest baseline; the unigram only if known."""
        return [(label, getattr(self, key)) for key, label in self.LABELS.items()
                if getattr(self, key) is not None]

    def __repr__(self):
        width = max(len(label) for label in self.LABELS.values())
        lines = [f"{'baseline':<{width}}  loss (nats per target)",
                 *(f"{label:<{width}}  {loss:.3f}" for label, loss in self.items()),
                 f"({self.n_pairs:,} pairs, {self.n_targets:,} targets: output bytes + EOS)"]
        return "\n".join(lines)


def baseline_losses(pairs: list[Pair], train_pairs: list[Pair] | None = None) -> Baselines:
    """All baselines on `pairs`; the unigram is fitted on train_pairs (skipped without them)."""
    return Baselines(uniform_256=uniform_loss(pairs, VOCAB),
                     uniform_96=uniform_loss(pairs, len(PRINTABLE) + 1),
                     unigram=unigram_loss(pairs, train_pairs) if train_pairs else None,
                     length_oracle=length_oracle_loss(pairs),
                     n_pairs=len(pairs), n_targets=sum(len(p.output) + 1 for p in pairs))
