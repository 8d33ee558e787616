"""A text as a language model reads it and as a counter sees it (notebook 09): a batch is windows
at random offsets, each target the same window one byte on; the counts behind the unigram and
bigram baselines are bytes, and bytes that follow bytes.
"""
from __future__ import annotations

import torch

from ..core.text import TextPart, random_windows
from ..core.tokens import show


def windows(part: TextPart, n: int = 2, seed: int = 1) -> str:
    """`n` training windows at random offsets, each over its target: the same bytes one on."""
    ids, targets = random_windows(part, n, torch.Generator().manual_seed(seed))
    return "\n".join(f"reads    {show(ids[row])}\npredicts {show(targets[row])}" for row in range(n))


def counts(part: TextPart, first: str = "q", most: int = 4) -> str:
    """How many of the 256 byte values occur, the most common ones, and what follows `first`:
    the numbers the unigram and bigram count."""
    data = part.data.long()
    seen = torch.bincount(data, minlength=256)
    after = torch.bincount(data[1:][data[:-1] == ord(first)], minlength=256)
    common = ", ".join(f"{show([b])!r} {int(seen[b]):,}" for b in seen.argsort(descending=True)[:most].tolist())
    following = ", ".join(f"{show([b])!r} {int(after[b])}" for b in after.nonzero().flatten().tolist())
    return (f"bytes seen in training: {int((seen > 0).sum())} of 256;  most common: {common}\n"
            f"after {first!r} ({int(after.sum())} times): {following}")
