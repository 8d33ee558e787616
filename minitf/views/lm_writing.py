"""How a language model writes (notebook 09): samples at several temperatures, each scored by the
share of its words that occur in the training text, and the KV cache's logits against a full pass.
"""
from __future__ import annotations

import torch

from ..core.generate import continue_ids, generate_text
from ..core.text import TextPart


def word_share(sample: bytes, words: set) -> tuple[float, int]:
    """The share of a sample's words found in `words`, and how many it has (the last, perhaps cut
    short, left out)."""
    written = sample.decode("utf-8", errors="replace").split()[:-1]
    return sum(w in words for w in written) / max(1, len(written)), len(written)


def temperatures(model, train: TextPart, prompt: str = "ROMEO:\n", length: int = 120,
                 temps=(0.5, 1.0, 1.5), seed: int = 0) -> None:
    """Print one sample per temperature (the same random seed), each headed by its word share."""
    words = set(bytes(train.data.tolist()).decode().split())  # every word of the training split
    for temperature in temps:
        sample = generate_text(model, prompt, length, temperature=temperature, seed=seed)
        share, n = word_share(sample, words)
        print(f"--- T = {temperature}: {share:.0%} of its {n} words occur in the training text ---")
        print(prompt + sample.decode("utf-8", errors="replace"))


@torch.no_grad()
def cache_check(model, prompt: bytes = b"ROMEO:", new: int = 50, tolerance: float = 1e-10) -> str:
    """Greedy bytes with the KV cache; their logits against one full pass over the whole text, and
    how many positions each way sends through the model."""
    ids, cached = continue_ids(model, list(prompt), new, lambda logits: logits.argmax(), cache=True)
    full = model(torch.tensor([list(prompt) + ids]))[0, len(prompt) - 1:-1]  # the rows that chose each byte
    same = bool((cached - full).abs().max() < tolerance)
    n = len(prompt)
    return (f"cached logits equal the full pass (max difference < {tolerance:g}): {same}\n"
            f"positions through the model for {new} bytes: {n + new - 1} with the cache, "
            f"{sum(range(n, n + new))} without")
