"""Generation: pick the next byte from the model's logits, append it, repeat.

The core is one loop and one sampler. `generation_loop` grows a batch of sequences, a byte per
step, through a KV cache or not, up to EOS (pairs) or for a number of bytes (text); `picker`
makes the function it picks each byte with: greedy, or a draw from `next_byte_probs`
(temperature, top-k, top-p), under one rule for those settings (`check_sampling`). Around them,
thin wrappers: `generate` (a pairs model's output for `text TAB`), `generate_text` (a language
model's continuation of a prompt, shown as it is made if asked) and `continue_ids` (one row of the
loop, for the widgets and notebook 09's cache comparison).
"""
from __future__ import annotations

import math
import operator

import torch

from .devices import device_of
from .kv_cache import KVCache
from .model import evaluating
from .tokens import EOS, TAB, show, to_bytes


def next_byte_probs(logits: torch.Tensor, temperature: float = 1.0, top_k: int | None = None,
                    top_p: float | None = None) -> torch.Tensor:
    """Probabilities (..., V) that sampling draws from, for logits (..., V).

    temperature 0: one-hot on the argmax (greedy). Otherwise softmax(logits / T) restricted to the
    top_k most likely bytes (None: all) and then to the smallest most-likely set whose probability
    reaches top_p (None or 1: all), renormalised so each row sums to 1. T < 1 sharpens the
    distribution towards the most likely byte, T > 1 flattens it towards uniform. The settings go
    through check_sampling first (V is the vocabulary size), like those of every other path.
    """
    temperature = check_sampling(temperature, top_k, top_p, vocab_size=logits.size(-1))
    if temperature == 0:
        return torch.nn.functional.one_hot(logits.argmax(-1), logits.size(-1)).to(logits.dtype)
    logits = logits / temperature
    if top_k is not None:  # everything below the k-th largest logit is dropped
        kth = logits.topk(top_k, dim=-1).values[..., -1:]
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
    if check_sampling(temperature, top_k, top_p, vocab_size=logits.size(-1)) == 0:
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


# How check_sampling names the settings in its messages: the Python parameters by default; the
# command line passes its flags (minitf.cli.run_cmds.SAMPLING_FLAGS) so its messages name those.
SAMPLING_NAMES = {"temperature": "temperature", "top_k": "top_k", "top_p": "top_p",
                  "greedy": "greedy=True"}


def check_sampling(temperature: float | None = None, top_k: int | None = None,
                   top_p: float | None = None, *, greedy: bool = False, vocab_size: int = 256,
                   default: float = 1.0, names: dict | None = None) -> float:
    """The one rule for sampling settings, on every path (next_byte_probs, next_token, generate,
    generate_text, the command line): returns the temperature to use, 0.0 meaning greedy, or
    raises ValueError naming the setting, what it must be and what was given.

    - greedy decoding takes the most likely byte every time. temperature 0 means greedy;
      greedy=True says the same (with temperature None or 0).
    - temperature None: `default` (1.0 for a language model, 0.0 = greedy for pairs), or 0 with
      greedy=True. Otherwise a finite number >= 0: it divides the logits.
    - top_k: a whole number in 1 … vocab_size. top_p: a probability in (0, 1].
    - top_k and top_p narrow the bytes sampling draws from: with greedy decoding they would change
      nothing, so they are refused, as is greedy=True with a temperature above 0. Each asks for
      two things at once; the message says how to ask for one.

    `names` replaces the parameters' names in the messages (SAMPLING_NAMES' keys).
    """
    name = {**SAMPLING_NAMES, **(names or {})}
    T, K, P, G = name["temperature"], name["top_k"], name["top_p"], name["greedy"]
    if temperature is not None:
        try:
            ok = math.isfinite(temperature) and temperature >= 0
        except TypeError:
            ok = False
        if not ok:
            raise ValueError(f"{T} must be a finite number >= 0, got {temperature}: it divides "
                             "the logits (0 is greedy decoding: the most likely byte every time)")
    if top_k is not None:
        try:
            k = operator.index(top_k)
        except TypeError:
            k = None
        if k is None or not 1 <= k <= vocab_size:
            raise ValueError(f"{K} must be between 1 and the vocabulary size {vocab_size}, "
                             f"got {top_k}")
    if top_p is not None:
        try:
            ok = 0 < top_p <= 1
        except TypeError:
            ok = False
        if not ok:
            raise ValueError(f"{P} is a probability in (0, 1], got {top_p}: the share of "
                             "probability mass the most likely bytes must reach")
    if greedy and temperature is not None and temperature > 0:
        raise ValueError(f"{G} takes the most likely byte every time and {T} {temperature} "
                         f"samples: give one of them ({T} 0 is greedy too)")
    if greedy:
        why, temperature = G, 0.0
    elif temperature is None:
        why, temperature = f"the default without {T}", float(default)
    else:
        why, temperature = f"{T} 0", float(temperature)
    if temperature == 0:
        for setting, value in ((K, top_k), (P, top_p)):
            if value is not None:
                raise ValueError(f"{setting} {value} narrows the bytes sampling draws from, but "
                                 f"decoding is greedy ({why}): give {T} > 0 to sample, or leave "
                                 f"out {setting}")
    return temperature


@torch.no_grad()
def generation_loop(model, ids: torch.Tensor, max_new_tokens: int, pick, *, cache: bool = True,
                    until_eos: bool = False, on_step=None):
    """The one generation loop (pairs, text and the widgets all run it): (ids, logits).

    ids (B, T0) grow by up to max_new_tokens columns, each `pick(logits (B, V)) → (B,)`; logits
    (B, steps, V) are the rows each new byte was picked from. The model reads a window of at most
    max_len bytes.
    - until_eos (pairs): a row that wrote EOS keeps writing EOS, the loop ends once every row has,
      or when the sequence reaches max_len.
    - otherwise (text): when the window is full it keeps its last half and reads it afresh.
    With `cache` only the new byte goes through the model at each step (`KVCache`); without, the
    whole window is re-read. The two give the same logits (to float precision). on_step(new ids
    (B,)) is called after every step, as soon as the bytes are picked (to show them as they come).
    """
    max_len, B = model.config.max_len, ids.size(0)
    start = max(0, ids.size(1) - max_len)  # the window: ids[:, start:]
    done = torch.zeros(B, dtype=torch.bool, device=ids.device)
    kv, rows = None, []
    with evaluating(model):
        for _ in range(max_new_tokens):
            if until_eos and ids.size(1) >= max_len:
                break
            if ids.size(1) - start > max_len:  # the window is full: keep its last half
                start, kv = ids.size(1) - max_len // 2, None
            if not cache:
                logits = model(ids[:, start:])[:, -1]             # (B, V)
            elif kv is None:  # read the whole window, filling the cache
                kv = KVCache(len(model.blocks))
                logits = model(ids[:, start:], cache=kv)[:, -1]
            else:             # only the byte appended last
                logits = model(ids[:, -1:], cache=kv)[:, -1]
            nxt = pick(logits)  # (B,)
            if until_eos:
                nxt = torch.where(done, torch.full_like(nxt, EOS), nxt)
                done |= nxt == EOS
            ids = torch.cat([ids, nxt[:, None]], dim=1)
            rows.append(logits.contiguous())  # a copy: a view would keep the step's (B, T, V) alive
            if on_step is not None:
                on_step(nxt)
            if until_eos and done.all():
                break
    if not rows:
        return ids, torch.empty(B, 0, model.config.vocab_size, device=ids.device)
    return ids, torch.stack(rows, 1)


def picker(temperature: float = 0.0, top_k: int | None = None, top_p: float | None = None,
           generator: torch.Generator | None = None, drawn_from: list | None = None):
    """pick(logits (..., V)) → the next ids (...): next_token with these settings. drawn_from, a
    list, collects the probabilities of every step (the sampling widgets draw them)."""
    def pick(logits):
        if drawn_from is not None:
            drawn_from.append(next_byte_probs(logits, temperature, top_k, top_p))
        return next_token(logits, temperature, top_k, generator, top_p)
    return pick


def seeded(seed: int | None) -> torch.Generator | None:
    """The generator a seed stands for (a CPU one: the same draws on every device), or None:
    torch's global generator."""
    return None if seed is None else torch.Generator().manual_seed(seed)


def new_byte_count(max_new_tokens: int | None, max_new: int | None, default: int) -> int:
    """How many bytes to generate: max_new_tokens, or max_new (the command line's --max-new: the
    two names mean the same), or the default; both given is a mistake."""
    if max_new_tokens is not None and max_new is not None:
        raise TypeError(f"give max_new_tokens ({max_new_tokens}) or max_new ({max_new}), not both: "
                        "they are two names for the number of bytes to generate")
    n = default if max_new_tokens is None and max_new is None else (
        max_new if max_new_tokens is None else max_new_tokens)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        # >= 1, as the command line's --max-new (and Hugging Face's max_new_tokens): a call
        # that may write nothing is more often a slip (a count left at 0) than a wish
        raise ValueError(f"max_new_tokens must be a whole number >= 1 (bytes to generate), "
                         f"got {n!r}")
    return n


def pair_prompt(model, text: bytes | str, tab: bool = True) -> list[int]:
    """The ids a pairs model reads for `text`: its bytes and a TAB; ValueError if the text is empty,
    holds a TAB or newline (the pair's own separators: the model would read the input as ended
    there), or leaves the model no room for an output."""
    prompt = list(to_bytes(text)) + ([TAB] if tab else [])
    if len(prompt) == int(tab):
        raise ValueError("text is empty: a pairs model answers an input, and every pair's input "
                         "has at least one byte" if tab else "text is empty: nothing to continue")
    for byte, name, role in ((TAB, "a TAB", "ends the input"), (EOS, "a newline", "ends the pair")):
        if tab and byte in prompt[:-1]:
            raise ValueError(f"text {show(bytes(prompt[:-1]))!r} holds {name} (byte {byte}) at "
                             f"position {prompt.index(byte)}: to a pairs model {name} {role}, "
                             "so no pair's input holds one; give the input without it")
    if len(prompt) >= model.config.max_len:
        room = model.config.max_len - 1 - tab
        raise ValueError(f"text is {len(prompt) - tab} bytes, and the model reads at most max_len "
                         f"= {model.config.max_len}: {'with the TAB after it ' if tab else ''}that "
                         f"leaves no room for an output; give at most {room} bytes")
    return prompt


PAIRS_MAX_NEW = 64  # generate's bound on a pairs output when none is given


def is_language_model(model) -> bool:
    """True for a model `python -m minitf train --text` trained (its checkpoint records the text):
    it continues text, and a TAB or a newline is a byte like any other to it."""
    return "text" in (getattr(model, "metadata", None) or {})


def generate(model, text: bytes | str | list, max_new_tokens: int | None = None,
             temperature: float = 0.0, top_k: int | None = None, seed: int | None = None,
             tab: bool | None = None, top_p: float | None = None, greedy: bool = False, *,
             max_new: int | None = None) -> bytes | list[bytes]:
    """The model's output for `text`: reads `text TAB` and returns the bytes before EOS.

    A list of texts gives the list of their outputs (each checked before any is generated, and
    each sampled with the same seed, so an output does not depend on its neighbours).
    max_new_tokens (or max_new, the command line's name; default 64) bounds the output; the
    sequence also ends at the model's max_len. Greedy by default (temperature 0, or greedy=True):
    the most likely byte every time; a temperature > 0 samples, with top_k and top_p if given
    (check_sampling has the rule). tab=False continues `text` as plain next-byte prediction
    instead, still up to EOS. A language model (is_language_model: a checkpoint of `train --text`)
    has no pairs, so no TAB is added: it continues `text` as `generate_text` does (the same
    settings, greedy by default), for which a newline is just a byte.
    """
    max_new_tokens = new_byte_count(max_new_tokens, max_new, PAIRS_MAX_NEW)
    temperature = check_sampling(temperature, top_k, top_p, greedy=greedy,
                                 vocab_size=model.config.vocab_size, default=0.0)
    if tab is None and is_language_model(model):
        return generate_text(model, text, max_new_tokens, temperature=temperature, top_k=top_k,
                             top_p=top_p, seed=seed)
    tab = True if tab is None else tab
    if isinstance(text, (list, tuple)):
        for one in text:
            pair_prompt(model, one, tab)
        return [generate(model, one, max_new_tokens, temperature, top_k, seed, tab, top_p)
                for one in text]
    prompt = pair_prompt(model, text, tab)
    pick = picker(temperature, top_k, top_p, seeded(seed))
    # no cache: outputs are short, and re-reading keeps the numbers of `model(ids)`
    out, _ = generation_loop(model, torch.tensor([prompt], device=device_of(model)),
                             max_new_tokens, pick, cache=False, until_eos=True)
    new = out[0, len(prompt):].tolist()
    return bytes(new[:new.index(EOS)] if EOS in new else new)


# --- text: continue a prompt, one new byte through the model per step ------------------------------

def continue_ids(model, prompt: list[int], max_new_tokens: int, pick, cache: bool = True,
                 until_eos: bool = False, on_byte=None):
    """One row of `generation_loop`: append up to max_new_tokens ids to `prompt`, each
    `pick(logits (V,))` → (new ids, logits (steps, V)). until_eos stops after EOS (kept in new).
    on_byte(id) is called with each new id as soon as it is picked."""
    if not prompt:
        raise ValueError("generation needs a non-empty prompt")
    device = device_of(model)

    def pick_row(logits):  # (1, V) → (1,)
        return torch.as_tensor(pick(logits[0]), device=device).reshape(1)

    each = None if on_byte is None else (lambda nxt: on_byte(int(nxt[0])))
    ids, logits = generation_loop(model, torch.tensor([prompt], device=device), max_new_tokens,
                                  pick_row, cache=cache, until_eos=until_eos, on_step=each)
    return ids[0, len(prompt):].tolist(), logits[0]


def text_prompt(prompt: bytes | str) -> list[int]:
    """The ids a language model continues: the prompt's bytes; ValueError if there are none."""
    ids = list(to_bytes(prompt))
    if not ids:
        raise ValueError("prompt is empty: a language model continues a prompt of at least one "
                         "byte")
    return ids


def generate_text(model, prompt: bytes | str | list, max_new_tokens: int | None = None, *,
                  temperature: float | None = None, top_k: int | None = None,
                  top_p: float | None = None, greedy: bool = False, seed: int | None = None,
                  cache: bool = True, max_new: int | None = None,
                  on_byte=None) -> bytes | list[bytes]:
    """The next max_new_tokens bytes (or max_new, the command line's name; default 200) a
    language model writes after `prompt`; for a list of prompts, the list of their continuations
    (each checked before any is generated, each sampled with the same seed).

    greedy=True (or temperature 0) takes the most likely byte every time; otherwise each byte is
    drawn from next_byte_probs(logits, temperature, top_k, top_p) (temperature None: 1.0), with a
    torch.Generator seeded with `seed` (None: torch's global generator), so the same seed gives
    the same text. check_sampling has the rule for the settings. on_byte(b), if given, is called
    with each new byte (an int) as soon as it is picked: a long text can be shown as it is made.
    """
    max_new_tokens = new_byte_count(max_new_tokens, max_new, 200)
    temperature = check_sampling(temperature, top_k, top_p, greedy=greedy,
                                 vocab_size=model.config.vocab_size)
    for one in prompt if isinstance(prompt, (list, tuple)) else [prompt]:
        text_prompt(one)
    if isinstance(prompt, (list, tuple)):
        return [generate_text(model, one, max_new_tokens, temperature=temperature, top_k=top_k,
                              top_p=top_p, seed=seed, cache=cache, on_byte=on_byte)
                for one in prompt]
    pick = picker(temperature, top_k, top_p, seeded(seed))
    new, _ = continue_ids(model, text_prompt(prompt), max_new_tokens, pick, cache,
                          on_byte=on_byte)
    return bytes(new)
