"""Your model speaks: a trained language model's weights in the model built from your pieces.

Notebook 09's last step, the offline equivalent of loading GPT-2's weights into code of your own:
`speaking_model(config, parts, cached_attention)` is `parts.assemble` (your embedding, RoPE, mask,
attention, norms, FFN) with your cached attention step in every layer's `model(ids, cache=kv)`
path; `load_state_dict(lm.state_dict())` gives it lm.pt's weights, since the parameter names are
minitf's. `speak` continues a prompt with your sampler (`next_byte_probs` plus one seeded draw).

`check_speaking` says whether it all holds: your model's float32 logits against minitf's (to a
tolerance that scales with the logits), your cached generation against your uncached one, your
sampler's distributions against minitf's, and your text against minitf's own for the same random
seed. A short greedy text written without the cache, by your model's forward (model_forward →
block → multi_head_attention at every step), is compared byte for byte with
`minitf.generate_text(greedy=True)` and with your cached run: the text is your whole model's, not
only the cached path's (which runs minitf's forward with your pieces inside). Where something
differs it names the piece, with what that piece's exercise says about it.

`your_checked_parts(config)` is what 09 builds the model from: your saved pieces, checked, each
one that breaks the model replaced by the reference solution (the check says why), as 08 does.
`your_language_model(lm, next_byte_probs, cached_attention)` is 09's one call for all of it: the
checked pieces, your sampler and cached step (or the reference where yours does not pass), the
speaking model with lm's weights, and one sentence saying whose pieces run.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Callable

import torch

from ..core.config import Config
from ..core.generate import check_sampling, continue_ids, generate_text, next_byte_probs, sample
from ..core.model import Transformer
from ..core.tokens import to_bytes
from .check_report import CheckReport
from .exercises import EXERCISES, passes, run_check
from .feedback import ExerciseError
from .my_parts import NOT_SAVED_YET, OPTIONAL_NOT_WRITTEN
from .parts import Parts, PartsCheck, YourAttention, _swap, assemble, check, yours

# float32 keeps 24 bits; two correct programs computing the same logits differ by rounding only,
# about 1e-6 of the logits' size. 2**-12 of the largest logit leaves a wide margin, and a wrong
# piece misses by whole units (the tests' FLOAT32_RELATIVE, the same reasoning).
FLOAT32_RELATIVE = 2.0 ** -12
# the greedy text written without the cache: each byte re-reads the whole prompt and text so far
GREEDY_BYTES = 60
# the pieces that, when given, write an uncached text: your forward, calling your block, calling
# your multi-head attention
WHOLE_MODEL = ("model_forward", "block", "multi_head_attention")


def your_checked_parts(config: Config) -> tuple[Parts, PartsCheck]:
    """(the Parts 09 builds its speaking model from, the check that chose them): your saved pieces
    (`minitf.parts.yours`) checked in a model of `config`, each one the check names as broken
    replaced by the reference solution, so that lm.pt still speaks while a piece is wrong."""
    from .training_parts import usable
    parts = yours()
    found = check(parts, config)
    return usable(parts, found.broken), found


class YourCachedAttention(YourAttention):
    """Your attention pieces, and with a KV cache your `cached_attention(attn, x, keys, values)`
    step instead of minitf's: it rotates, appends and masks by itself."""

    def __init__(self, parts: Parts, config: Config, step: Callable | None):
        super().__init__(parts, config)
        self.step = step

    def forward(self, x, rope_cos=None, rope_sin=None, need_weights: bool = False, kv=None):
        if kv is None or self.step is None:
            return super().forward(x, rope_cos, rope_sin, need_weights, kv)
        empty = x.new_zeros(x.size(0), self.n_heads, 0, self.head_dim)  # nothing cached yet
        keys = empty if kv.keys is None else kv.keys
        values = empty if kv.values is None else kv.values
        out, kv.keys, kv.values = self.step(self, x, keys, values)
        return out, None


def speaking_model(config: Config, parts: Parts, cached_attention: Callable | None = None) -> Transformer:
    """`assemble(config, parts)` whose cached path runs your `cached_attention` in every layer."""
    p = config.positions
    if p.positional != "rope" or p.rope_on_v or p.position_ids != "sequence":
        raise ValueError("your cached_attention rotates queries and keys by RoPE at positions "
                         "0, 1, 2, …: it needs positional='rope', rope_on_v=False and "
                         f"position_ids='sequence' (this config: {p.positional!r}, "
                         f"rope_on_v={p.rope_on_v}, {p.position_ids!r})")
    model = assemble(config, parts)
    for block in model.blocks:
        _swap(block, "attn", YourCachedAttention(parts, config, cached_attention))
    model.cached_attention = cached_attention
    return model


def your_language_model(lm: Transformer, next_byte_probs: Callable | None = None,
                        cached_attention: Callable | None = None) -> Transformer:
    """lm's weights in the model built from your checked pieces (`your_checked_parts`), your
    `cached_attention` in its cached path; it prints one sentence saying whose pieces run (and,
    when a piece breaks the model, the check that names it). The model carries `.parts`,
    `.parts_check`, `.cached_attention` and `.next_byte_probs`: yours where it passes its exercise,
    else the reference solution, so that the notebook runs to its end before you write them."""
    parts, found = your_checked_parts(lm.config)
    chosen = {}
    for name, fn in (("next_byte_probs", next_byte_probs), ("cached_attention", cached_attention)):
        chosen[name] = fn if fn is not None and passes(name, fn) else EXERCISES[name].solution
    model = speaking_model(lm.config, parts, chosen["cached_attention"])
    model.load_state_dict(lm.state_dict())
    model.parts_check, model.next_byte_probs = found, chosen["next_byte_probs"]
    print(_whose(model, parts, found, yours={name: chosen[name] is fn for name, fn in
                                             (("next_byte_probs", next_byte_probs),
                                              ("cached_attention", cached_attention))}))
    return model


def _whose(model, parts: Parts, found: PartsCheck, yours: dict[str, bool]) -> str:
    """The sentence `your_language_model` prints: the check's verdict, then whose each piece is."""
    origin = {piece: parts.origin.get(piece, "yours") for piece in type(parts).__dataclass_fields__
              if piece != "origin"}
    stand_ins = [piece for piece, said in origin.items() if said.startswith("reference solution (yours is broken")]
    groups = [(sum(said.startswith("yours") for said in origin.values()), "yours"),
              (sum(said == NOT_SAVED_YET for said in origin.values()), "reference solutions (not saved yet)"),
              (sum(said == OPTIONAL_NOT_WRITTEN for said in origin.values()), "minitf's (optional, not written)"),
              (len(stand_ins), "reference solutions for yours that break the model")]
    pieces = ", ".join(f"{n} {what}" for n, what in groups if n)
    if yours["next_byte_probs"] == yours["cached_attention"]:
        steps = "sampler and cached step: " + ("yours" if yours["next_byte_probs"] else
                                               "the reference solutions (yours do not pass their checks yet)")
    else:
        steps = "; ".join(f"{label}: " + ("yours" if yours[name] else
                                          "the reference solution (yours does not pass its check yet)")
                          for name, label in (("next_byte_probs", "sampler"), ("cached_attention", "cached step")))
    weights = f"lm.pt's {sum(p.numel() for p in model.parameters()):,} weights"
    sentence = f"Its {len(origin)} pieces: {pieces}; {steps}."
    if found.ok:
        return f"✓ your model computes minitf's logits with {weights}. {sentence}"
    width = max(len(piece) for piece in origin)
    return "\n".join([str(found), f"Your model runs {weights}. {sentence}"]
                     + [f"{piece:<{width}}  {origin[piece]}" for piece in stand_ins])


def your_sampler(probs: Callable, temperature: float = 1.0, top_k: int | None = None,
                 top_p: float | None = None, generator: torch.Generator | None = None):
    """pick(logits (V,)) → the next byte: one draw from `probs(logits, temperature, top_k, top_p)`,
    as minitf draws (so the same random seed draws the same bytes from the same distribution)."""
    check_sampling(temperature, top_k, top_p)

    def pick(logits):
        return sample(probs(logits, temperature, top_k, top_p), generator).squeeze(-1)
    return pick


def speak(model, probs: Callable, prompt: bytes | str, max_new_tokens: int, *, temperature: float = 1.0,
          top_k: int | None = None, top_p: float | None = None, seed: int = 0, cache: bool = True):
    """What `model` writes after `prompt` with your sampler: (the new bytes, the logits (steps, V)
    each was drawn from). The same loop as minitf.generate_text, with or without the cache."""
    pick = your_sampler(probs, temperature, top_k, top_p, torch.Generator().manual_seed(seed))
    new, logits = continue_ids(model, list(to_bytes(prompt)), max_new_tokens, pick, cache=cache)
    return bytes(new), logits


def _greedy(model, prompt: bytes | str, max_new_tokens: int, cache: bool) -> bytes:
    """What `model` writes after `prompt` taking the most likely byte every time (no sampler)."""
    new, _ = continue_ids(model, list(to_bytes(prompt)), max_new_tokens, lambda logits: logits.argmax(-1),
                          cache=cache)
    return bytes(new)


def _exercise_says(name: str, fn: Callable) -> str:
    """The first lines of what exercise `name` says about fn, or "" when it passes."""
    try:
        run_check(name, fn, own_work=False)
    except ExerciseError as e:
        lines = [line.strip() for line in str(e).splitlines()]
        named = next((line for line in lines if line.startswith("Yours ")), None)  # a recognised slip
        evidence = lines[1] if len(lines) > 1 and not lines[1].startswith("Hint:") else lines[0]
        hint = next((line for line in lines if line.startswith("Hint: ")), "")
        return " ".join(filter(None, (named or evidence, hint)))
    return ""


def _sampler_difference(probs: Callable, rows: torch.Tensor, temperature, top_k, top_p) -> float:
    """The largest difference between your sampler's probabilities and minitf's on rows (steps, V)."""
    with torch.no_grad():
        return float((probs(rows, temperature, top_k, top_p)
                      - next_byte_probs(rows, temperature, top_k, top_p)).abs().max())


@dataclass(repr=False)
class SpeakingCheck(CheckReport):
    """What `check_speaking` found. Differences are largest absolute ones; `scale` is the largest
    logit magnitude the float32 comparison is relative to."""
    logits32: float
    scale: float
    cache: float        # cached against uncached logits, float64
    sampler: float      # your probabilities against minitf's on the same logits, float64
    same_text_cached: bool
    same_as_minitf: bool | None  # None: not compared, your sampler is broken
    text: bytes
    broken: dict = field(default_factory=dict)  # piece → why
    # greedy, float64: written without the cache by your forward, by minitf's generate_text, and
    # by your model with the cache (None: writing raised, `broken` says what)
    greedy_uncached: bytes | None = None
    greedy_minitf: bytes = b""
    greedy_cached: bytes | None = None
    writers: tuple = ()  # your pieces that wrote greedy_uncached (WHOLE_MODEL's given ones)

    @property
    def greedy_ok(self) -> bool:
        return self.greedy_uncached == self.greedy_minitf == self.greedy_cached

    @property
    def tolerance32(self) -> float:
        return FLOAT32_RELATIVE * max(self.scale, 1e-6)

    def __str__(self):
        # a passing line states its bound, not the rounding-level difference (that differs between
        # CPUs); a failing one gives the difference, which is then large
        logits_ok, cache_ok = self.logits32 <= self.tolerance32, self.cache <= 1e-9 and self.same_text_cached
        lines = [
            f"{'✓' if logits_ok else '✗'} your model's float32 logits against minitf's: "
            + (f"every one within 2^-12 of the largest ({self.scale:.1f})" if logits_ok else
               f"largest difference {self.logits32:.3g}, allowed {self.tolerance32:.2g} "
               f"(2^-12 of the largest logit, {self.scale:.1f})"),
            f"{'✓' if cache_ok else '✗'} cached against uncached generation (float64): "
            + ("the same bytes, logits within 1e-9" if cache_ok else
               f"largest logit difference {self.cache:.3g}, the same bytes: {self.same_text_cached}"),
            f"{'✓' if self.sampler <= 1e-9 else '✗'} your sampler's probabilities against minitf's: "
            + ("within 1e-9" if self.sampler <= 1e-9 else f"largest difference {self.sampler:.3g}"),
            f"{'✓' if self.same_as_minitf else '✗'} the same text as minitf.generate_text with the "
            f"same settings and random seed: " + ("not compared (your sampler is broken: the cache was "
                                                  "checked with minitf's)" if self.same_as_minitf is None
                                                  else str(self.same_as_minitf)),
            f"{'✓' if self.greedy_ok else '✗'} greedy, without the cache, through "
            + (f"your {' → '.join(self.writers)}" if self.writers else "minitf's forward with your pieces")
            + ": " + (f"the same {len(self.greedy_minitf)} bytes as minitf.generate_text(greedy=True) and "
                      "as your cached run" if self.greedy_ok else
                      f"the same bytes as minitf.generate_text(greedy=True): "
                      f"{self.greedy_uncached == self.greedy_minitf}, as your cached run: "
                      f"{self.greedy_uncached == self.greedy_cached}")]
        lines += [f"  broken piece: {piece} — {why}" for piece, why in self.broken.items()]
        return "\n".join(lines)


def check_speaking(model, reference, probs: Callable, ids: torch.Tensor, prompt: bytes | str,
                   max_new_tokens: int = 120, *, temperature: float = 0.8, top_k: int | None = None,
                   top_p: float | None = 0.9, seed: int = 0) -> SpeakingCheck:
    """Your speaking model (`speaking_model`, with the reference's weights) and your sampler
    `probs` against minitf's `reference` model: logits in float32 on `ids` (B, T), then a
    generation of max_new_tokens bytes in float64 with and without the cache."""
    broken = {}
    with torch.no_grad():  # on copies: .float() and .double() change a module in place
        want = copy.deepcopy(reference).float().eval()(ids)
        try:
            got = copy.deepcopy(model).float().eval()(ids)
            logits32 = float((got.double() - want.double()).abs().max()) if got.dtype == want.dtype \
                else float("inf")  # float64 logits out of a float32 model: a piece changed the dtype
        except Exception:  # a learner's piece may raise anything; `check` below names it
            logits32 = float("inf")
    scale = float(want.abs().max())
    if not logits32 <= FLOAT32_RELATIVE * max(scale, 1e-6):
        found = check(model.parts, model.config)
        if found.broken:
            broken.update(found.broken)
        else:
            broken["the model"] = (f"its float32 logits differ by {logits32:.3g}, but each of your pieces "
                                   "alone computes minitf's: are these lm.pt's weights?")
    mine64, theirs64 = copy.deepcopy(model).double(), copy.deepcopy(reference).double()
    settings = dict(temperature=temperature, top_k=top_k, top_p=top_p, seed=seed)
    # your sampler against minitf's on the rows your model writes with it, uncached (so the cache
    # plays no part); where it differs or raises, on the rows your model writes with minitf's
    try:
        uncached_text, uncached = speak(mine64, probs, prompt, max_new_tokens, cache=False, **settings)
        sampler = _sampler_difference(probs, uncached, temperature, top_k, top_p)
    except Exception:  # a learner's piece may raise anything: named below, on minitf's rows
        sampler = float("inf")
    if not sampler <= 1e-9:  # NaN included
        uncached_text, uncached = speak(mine64, next_byte_probs, prompt, max_new_tokens, cache=False,
                                        **settings)
        try:
            sampler = _sampler_difference(probs, uncached.clone(), temperature, top_k, top_p)
            problem = f"its probabilities differ from minitf's by {sampler:.3g} on your model's logits"
        except Exception as e:
            sampler, problem = float("inf"), f"it raises {type(e).__name__}: {e}"
        why = _exercise_says("next_byte_probs", probs)
        broken["next_byte_probs"] = problem + (f"; its exercise says: {why}" if why else "")
        probs = next_byte_probs  # the cache is checked with minitf's sampler then
    try:
        text, cached = speak(mine64, probs, prompt, max_new_tokens, **settings)
        steps = min(len(cached), len(uncached))
        cache = float((cached[:steps] - uncached[:steps]).abs().max()) if steps else 0.0
        problem = f"the cached generation's logits differ from the uncached ones by {cache:.3g}"
    except Exception as e:
        text, cache, problem = b"", float("inf"), f"the cached generation raises {type(e).__name__}: {e}"
    if not (cache <= 1e-9 and text == uncached_text) and model.cached_attention is not None:
        why = _exercise_says("cached_attention", model.cached_attention)
        # with a broken piece in the uncached path the two differ anyway: blame the step only if
        # its own exercise fails, or if the uncached model is right
        if why or not broken:
            broken["cached_attention"] = problem + (f"; its exercise says: {why}" if why else "")
    same = None if "next_byte_probs" in broken else \
        text == generate_text(theirs64, prompt, max_new_tokens, **settings)
    if same is False and not broken:
        broken["the text"] = "differs from minitf's, yet every piece checks out: a different seed?"
    # your whole model writes: greedy (no sampler, so no seed), float64, without the cache, then
    # compared with minitf's greedy text and with your cached model's
    n = min(max_new_tokens, GREEDY_BYTES)
    greedy = {}
    for cached in (False, True):
        try:
            greedy[cached] = _greedy(mine64, prompt, n, cache=cached)
        except Exception as e:  # a learner's piece may raise anything: the checks above name it
            greedy[cached] = None
            if not broken:
                broken["the model"] = (f"writing {'with' if cached else 'without'} the cache raises "
                                       f"{type(e).__name__}: {e}")
    greedy_minitf = generate_text(theirs64, prompt, n, greedy=True)
    if greedy[False] != greedy_minitf and not broken:
        broken["the model"] = ("its greedy text without the cache differs from minitf's, yet its "
                               "logits and every piece check out")
    # yours only: an optional piece not written (model_forward) is the library's, and not named as yours
    writers = tuple(name for name in WHOLE_MODEL if getattr(model.parts, name, None)
                    and model.parts.origin.get(name) != OPTIONAL_NOT_WRITTEN)
    return SpeakingCheck(logits32, scale, cache, sampler, text == uncached_text, same, text, broken,
                         greedy[False], greedy_minitf, greedy[True], writers)
