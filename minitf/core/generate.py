"""Generation: pick the next byte from the model's logits, append it, repeat.

Pairs: feed `input TAB`, then append one predicted byte at a time until EOS (`generate`).
Text: continue a prompt for a number of bytes, reading only the new byte each step through a
KV cache (`generate_text`). Both pick bytes with `next_byte_probs`: greedy, temperature, top-k,
top-p.
"""
from __future__ import annotations

import torch

from .devices import device_of
from .kv_cache import KVCache, forward_cached
from .tokens import EOS, TAB, to_bytes


def next_byte_probs(logits: torch.Tensor, temperature: float = 1.0, top_k: int | None = None,
                    top_p: float | None = None) -> torch.Tensor:
    """Probabilities (..., V) that sampling draws from, for logits (..., V).

    temperature 0: one-hot on the argmax (greedy). Otherwise softmax(logits / T) restricted to the
    top_k most likely bytes (None: all) and then to the smallest most-likely set whose probability
    reaches top_p (None or 1: all), renormalised so each row sums to 1. T < 1 sharpens the
    distribution towards the most likely byte, T > 1 flattens it towards uniform.
    """
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if top_k is not None and top_k < 1:
        raise ValueError(f"top_k keeps at least one byte, got {top_k}")
    if top_p is not None and not 0 < top_p <= 1:
        raise ValueError(f"top_p is a probability in (0, 1], got {top_p}")
    if temperature == 0:
        return torch.nn.functional.one_hot(logits.argmax(-1), logits.size(-1)).to(logits.dtype)
    logits = logits / temperature
    if top_k is not None:  # everything below the k-th largest logit is dropped
        kth = logits.topk(min(top_k, logits.size(-1)), dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = logits.softmax(-1)
    if top_p is not None and top_p < 1:
        sorted_probs, order = probs.sort(-1, descending=True)
        before = sorted_probs.cumsum(-1) - sorted_probs  # mass of the more likely bytes
        keep_sorted = before < top_p                     # the most likely byte is always kept
        keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
        probs = probs * keep
        probs = probs / probs.sum(-1, keepdim=True)
    return probs


def next_token(logits: torch.Tensor, temperature: float = 0.0, top_k: int | None = None,
               generator: torch.Generator | None = None, top_p: float | None = None) -> torch.Tensor:
    """Pick the next id from logits (B, vocab): greedy at temperature 0, else sample from
    next_byte_probs (top_k: the k most likely bytes only; top_p: the nucleus)."""
    if temperature == 0:
        return logits.argmax(-1)
    probs = next_byte_probs(logits, temperature, top_k, top_p)
    return sample(probs, generator).squeeze(-1)


def sample(probs: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """One draw per row of probs (..., V): (..., 1), on probs' device.

    With a generator the draw happens on the generator's device (minitf's are on the CPU), so a
    random seed gives the same bytes whether the model runs on a CPU or a GPU (up to the last
    digits of the probabilities); copying 256 probabilities per byte costs next to nothing.
    """
    if generator is None:
        return torch.multinomial(probs, 1)
    return torch.multinomial(probs.to(generator.device), 1, generator=generator).to(probs.device)


def check_sampling(temperature: float, top_k: int | None, top_p: float | None, greedy: bool,
                   vocab_size: int = 256) -> None:
    """Refuse settings that cannot mean what was asked, saying why."""
    if not greedy and not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature}: it divides the logits. "
                         "For the most likely byte every time, ask for greedy decoding "
                         "(greedy=True; CLI: --greedy)")
    if top_k is not None and not 1 <= top_k <= vocab_size:
        raise ValueError(f"top_k must be between 1 and the vocabulary size {vocab_size}, got {top_k}")
    if top_p is not None and not 0 < top_p <= 1:
        raise ValueError(f"top_p is a probability in (0, 1], got {top_p}: the share of probability "
                         "mass the most likely bytes must reach")


@torch.no_grad()
def generate_ids(model, prompts: torch.Tensor, max_new_tokens: int, temperature: float = 0.0,
                 top_k: int | None = None, generator: torch.Generator | None = None,
                 top_p: float | None = None) -> torch.Tensor:
    """Continue equal-length prompts (B, T0) by up to max_new_tokens each: (B, T0 + new).

    Rows that produced EOS keep producing EOS, so the batch stops once every row has ended.
    No cache: the whole sequence is re-read each step, which is plenty for sequences this short.
    """
    was_training = model.training
    model.eval()
    seq, done = prompts, torch.zeros(len(prompts), dtype=torch.bool, device=prompts.device)
    for _ in range(max_new_tokens):
        if seq.size(1) >= model.config.max_len:
            break
        nxt = next_token(model(seq)[:, -1], temperature, top_k, generator, top_p)
        nxt = torch.where(done, torch.full_like(nxt, EOS), nxt)
        seq = torch.cat([seq, nxt[:, None]], dim=1)
        done |= nxt == EOS
        if done.all():
            break
    model.train(was_training)
    return seq


def generate(model, text: bytes | str, max_new_tokens: int = 64, temperature: float = 0.0,
             top_k: int | None = None, seed: int | None = None, tab: bool = True,
             top_p: float | None = None) -> bytes:
    """The model's output for `text`: reads `text TAB` and returns the bytes before EOS.

    tab=False continues `text` as plain next-byte prediction instead, still up to EOS; a language
    model, for which a newline is just a byte, continues text with `generate_text`.
    """
    prompt = list(to_bytes(text)) + ([TAB] if tab else [])
    if not prompt:
        raise ValueError("generate needs a non-empty prompt")
    gen = torch.Generator().manual_seed(seed) if seed is not None else None
    prompts = torch.tensor([prompt], device=device_of(model))  # (1, T0)
    out = generate_ids(model, prompts, max_new_tokens, temperature, top_k, gen, top_p)
    new = out[0, len(prompt):].tolist()
    return bytes(new[:new.index(EOS)] if EOS in new else new)


# --- text: continue a prompt, one new byte through the model per step ------------------------------

@torch.no_grad()
def continue_ids(model, prompt: list[int], max_new_tokens: int, pick, cache: bool = True):
    """Append max_new_tokens ids to prompt, each `pick(logits (V,))`: (new ids, logits (steps, V)).

    The model reads a window of at most max_len bytes. With `cache` (the default) only the new byte
    goes through the model at each step (minitf.kv_cache); without, the whole window is re-read.
    When the window is full it keeps its last half and reads it afresh — the same rule either way,
    so the two give the same logits.
    """
    if not prompt:
        raise ValueError("generation needs a non-empty prompt")
    was_training = model.training
    model.eval()
    max_len, device = model.config.max_len, device_of(model)
    window = list(prompt[-max_len:])
    kv, new, rows = None, [], []
    for _ in range(max_new_tokens):
        if not cache:
            logits = model(torch.tensor([window], device=device))[0, -1]  # (V,)
        elif kv is None:  # read the whole window, filling the cache
            kv = KVCache(len(model.blocks))
            logits = forward_cached(model, torch.tensor([window], device=device), kv)[0, -1]
        else:             # only the byte appended last
            logits = forward_cached(model, torch.tensor([window[-1:]], device=device), kv)[0, -1]
        nxt = int(pick(logits))
        rows.append(logits)
        new.append(nxt)
        window.append(nxt)
        if len(window) > max_len:
            window, kv = window[-(max_len // 2):], None
    model.train(was_training)
    return new, torch.stack(rows) if rows else torch.empty(0, model.config.vocab_size, device=device)


def generate_text(model, prompt: bytes | str, max_new_tokens: int = 200, *, temperature: float = 1.0,
                  top_k: int | None = None, top_p: float | None = None, greedy: bool = False,
                  seed: int | None = None, cache: bool = True) -> bytes:
    """The next max_new_tokens bytes a language model writes after `prompt`.

    greedy=True takes the most likely byte every time; otherwise each byte is drawn from
    next_byte_probs(logits, temperature, top_k, top_p), with a torch.Generator seeded with `seed`
    (None: torch's global generator), so the same seed gives the same text.
    """
    check_sampling(temperature, top_k, top_p, greedy, model.config.vocab_size)
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
    gen = torch.Generator().manual_seed(seed) if seed is not None else None

    def pick(logits):
        if greedy:
            return logits.argmax()
        return sample(next_byte_probs(logits, temperature, top_k, top_p), gen)

    new, _ = continue_ids(model, list(to_bytes(prompt)), max_new_tokens, pick, cache)
    return bytes(new)
