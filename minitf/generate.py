"""Generation: feed `input TAB`, then append one predicted byte at a time until EOS."""
from __future__ import annotations

import torch

from .tokens import EOS, TAB, to_bytes


def next_token(logits: torch.Tensor, temperature: float = 0.0, top_k: int | None = None,
               generator: torch.Generator | None = None) -> torch.Tensor:
    """Pick the next id from logits (B, vocab): greedy at temperature 0, else sample.

    top_k keeps only the k most likely bytes before sampling.
    """
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if temperature == 0:
        return logits.argmax(-1)
    logits = logits / temperature
    if top_k is not None:
        kth = logits.topk(min(top_k, logits.size(-1)), dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    return torch.multinomial(logits.softmax(-1), 1, generator=generator).squeeze(-1)


@torch.no_grad()
def generate_ids(model, prompts: torch.Tensor, max_new_tokens: int, temperature: float = 0.0,
                 top_k: int | None = None, generator: torch.Generator | None = None) -> torch.Tensor:
    """Continue equal-length prompts (B, T0) by up to max_new_tokens each: (B, T0 + new).

    Rows that produced EOS keep producing EOS, so the batch stops once every row has ended.
    No cache: the whole sequence is re-read each step, which is plenty for sequences this short.
    """
    was_training = model.training
    model.eval()
    seq, done = prompts, torch.zeros(len(prompts), dtype=torch.bool)
    for _ in range(max_new_tokens):
        if seq.size(1) >= model.config.max_len:
            break
        nxt = next_token(model(seq)[:, -1], temperature, top_k, generator)
        nxt = torch.where(done, torch.full_like(nxt, EOS), nxt)
        seq = torch.cat([seq, nxt[:, None]], dim=1)
        done |= nxt == EOS
        if done.all():
            break
    model.train(was_training)
    return seq


def generate(model, text: bytes | str, max_new_tokens: int = 64, temperature: float = 0.0,
             top_k: int | None = None, seed: int | None = None, tab: bool = True) -> bytes:
    """The model's output for `text`: reads `text TAB` and returns the bytes before EOS.

    tab=False continues `text` as plain next-byte prediction instead.
    """
    prompt = list(to_bytes(text)) + ([TAB] if tab else [])
    if not prompt:
        raise ValueError("generate needs a non-empty prompt")
    gen = torch.Generator().manual_seed(seed) if seed is not None else None
    out = generate_ids(model, torch.tensor([prompt]), max_new_tokens, temperature, top_k, gen)
    new = out[0, len(prompt):].tolist()
    return bytes(new[:new.index(EOS)] if EOS in new else new)
