"""Your pieces in a real model: a `minitf.Transformer` whose computations are your functions.

Each exercise of the course writes one piece of the model (the embedding lookup, RoPE, the causal
mask, attention, LayerNorm, RMSNorm, the FFN, the batch). `assemble(config, parts)` builds a
Transformer in which the pieces you give replace minitf's own. Parameter names stay the same, so
weights move between your model and minitf's with `load_state_dict`, and `check` can say whether
your model computes exactly minitf's logits, and if not, which piece breaks it.

The pieces themselves, and where a learner's passed pieces are saved, are `minitf.course.my_parts`
(re-exported here: `minitf.parts.Parts`, `minitf.parts.mine`). minitf's normal model never goes
through this module: it costs nothing when unused.
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import torch
from torch import nn

from ..core.attention import MultiHeadAttention, attention, causal_mask
from ..core.config import Config
from ..core.ffn import FeedForward
from ..core.model import Block, Transformer
from ..core.norms import LayerNorm, RMSNorm
from ..core.tokens import TAB
from .check_report import CheckReport
from .exercises import run_check
from .feedback import ExerciseError
from .my_parts import PIECES, Parts, calling, folder, mine, save  # noqa: F401  (minitf.parts.mine, …)
# your file: minitf.parts.model_file() writes it, minitf.parts.modules_of(path) shows its modules
from .learner_file import modules as modules_of, my_model, write as model_file  # noqa: F401

# --- the modules that call your functions ----------------------------------------------------------

class YourEmbedding(nn.Embedding):
    def __init__(self, fn, num_embeddings: int, dim: int):
        super().__init__(num_embeddings, dim)
        self.fn = fn

    def forward(self, ids):
        return self.fn(ids, self.weight)


class YourLayerNorm(LayerNorm):
    def __init__(self, fn, dim: int, eps: float):
        super().__init__(dim, eps)
        self.fn = fn

    def forward(self, x):
        return self.fn(x, self.weight, self.bias, self.eps)


class YourRMSNorm(RMSNorm):
    def __init__(self, fn, dim: int, eps: float):
        super().__init__(dim, eps)
        self.fn = fn

    def forward(self, x):
        return self.fn(x, self.weight, self.eps)


class YourFeedForward(FeedForward):
    def __init__(self, fn, config: Config):
        super().__init__(config)
        self.fn = fn

    def forward(self, x):
        return self.fn(x, self.up.weight, self.up.bias, self.down.weight, self.down.bias)


class YourGatedFeedForward(FeedForward):
    """The gated FFN (Config(ffn_gate=True, activation="silu", bias=False)) calling your swiglu."""
    def __init__(self, fn, config: Config):
        super().__init__(config)
        self.fn = fn

    def forward(self, x):
        return self.fn(x, self.up.weight, self.gate.weight, self.down.weight)


class YourAttention(MultiHeadAttention):
    """minitf's multi-head attention with your rotation, mask and attention in its two steps, or
    your whole multi_head_attention (with your attention and mask inside)."""

    def __init__(self, parts: Parts, config: Config):
        super().__init__(config)
        self.parts = parts
        # the names your pieces call each other by are the Parts' pieces: your attention's
        # my_softmax, your multi_head_attention's my_attention and my_causal_mask
        self.attention_fn = parts.attention and calling(parts.attention, my_softmax=parts.softmax)
        # (the library's stand-in for an unwritten multi_head_attention calls `attention` and `causal_mask`)
        self.forward_fn = parts.multi_head_attention and calling(
            parts.multi_head_attention, my_attention=self.attention_fn, my_causal_mask=parts.causal_mask,
            attention=self.attention_fn, causal_mask=parts.causal_mask)

    def rotate(self, x, cos, sin):
        fn = self.parts.apply_rope
        return fn(x, cos, sin) if fn else super().rotate(x, cos, sin)

    def forward(self, x, rope_cos=None, rope_sin=None, need_weights: bool = False, kv=None):
        """Your multi_head_attention where it applies: a causal RoPE layer without QK-norm, read
        without a KV cache (the cached step is notebook 09's exercise); minitf's forward, with your
        rotation and attention inside, everywhere else."""
        fn = self.forward_fn
        if fn is None or kv is not None or not (self.rope and self.causal) or self.q_norm is not None \
                or self.rope_on_v:
            return super().forward(x, rope_cos, rope_sin, need_weights, kv)
        y, weights = fn(self, x, rope_cos, rope_sin)
        return y, (weights if need_weights else None)

    def attend(self, q, k, v, need_weights: bool):
        if not (self.parts.attention or self.parts.causal_mask):
            return super().attend(q, k, v, need_weights)
        make_mask = self.parts.causal_mask or causal_mask
        T, S = q.size(-2), k.size(-2)  # S > T when earlier keys come from a KV cache
        mask = make_mask(S).to(q.device)[S - T:] if self.causal else None
        return (self.attention_fn or attention)(q, k, v, mask)


class YourBlock(Block):
    """minitf's block whose forward is your block function, where it applies: both sub-layers with
    their residuals, no dropout, no KV cache (minitf's forward, with your pieces inside, elsewhere)."""

    def __init__(self, fn, config: Config):
        super().__init__(config)
        self.fn = fn

    def forward(self, h, rope_cos=None, rope_sin=None, need_weights: bool = False, kv=None):
        if kv is not None or not self.residual or self.ffn is None or (self.training and self.drop.p):
            return super().forward(h, rope_cos, rope_sin, need_weights, kv)
        h, weights = self.fn(self, h, rope_cos, rope_sin)
        return h, (weights if need_weights else None)


class YourTransformer(Transformer):
    """minitf's Transformer whose forward is your model_forward, where it applies: a RoPE model read
    whole (no KV cache, no attention weights asked for, no logit soft-cap, no random position
    offsets in training); minitf's forward, with your pieces inside, elsewhere."""

    def __init__(self, fn, config: Config):
        super().__init__(config)
        self.fn = fn

    def forward(self, ids, return_attention: bool = False, cache=None):
        c = self.config
        if return_attention or cache is not None or c.positions.positional != "rope" \
                or c.modern_block.logit_softcap or (self.training and c.positions.position_offset):
            return super().forward(ids, return_attention, cache)
        return self.fn(self, ids)


def _swap(parent: nn.Module, name: str, new: nn.Module) -> None:
    """Replace a child module, keeping its parameters (same names, same values)."""
    new.load_state_dict(getattr(parent, name).state_dict())
    setattr(parent, name, new)


def unfit(piece: str, config: Config) -> str:
    """Why your `piece` cannot compute this config's model ("" when it can): the FFN exercises write
    one FFN each, feed_forward the plain ReLU one with biases, swiglu the SiLU-gated one without;
    a config whose FFN is another is refused rather than computed wrongly."""
    c, block = config, config.modern_block
    if piece == "feed_forward" and not block.ffn_gate:
        if c.activation != "relu":
            return f"your feed_forward uses ReLU; this config's activation is {c.activation!r}"
        if not block.bias:
            return "your feed_forward adds the biases b_up and b_down; this config has bias=False"
    if piece == "swiglu" and block.ffn_gate and (c.activation != "silu" or block.bias):
        return ("your swiglu is SiLU-gated without biases; this config has activation "
                f"{c.activation!r} and bias={block.bias}")
    return ""


def assemble(config: Config | None = None, parts: Parts | None = None, **pieces) -> Transformer:
    """A Transformer whose pieces are yours where given: `assemble(config, Parts(...))` or
    `assemble(config, attention=my_attention, …)`. Its starting weights are those
    `Transformer(config)` would get with the same random state."""
    config = config or Config()
    parts = parts or Parts(**pieces)
    for name in parts.given():
        if unfit(name, config):
            raise ValueError(unfit(name, config))
    model = YourTransformer(parts.model_forward, config) if parts.model_forward else Transformer(config)
    c = config
    if parts.embed:
        _swap(model, "embed", YourEmbedding(parts.embed, c.vocab_size, c.d_model))
        if c.tie_embeddings:  # the head reads the same table as your embedding
            model.head.weight = model.embed.weight
    norm_fn = parts.layer_norm if c.norm == "layer" else parts.rms_norm
    YourNorm = YourLayerNorm if c.norm == "layer" else YourRMSNorm
    for i, block in enumerate(model.blocks):
        if parts.block:  # your block first: the swaps below then go inside it
            _swap(model.blocks, str(i), YourBlock(parts.block, c))
            block = model.blocks[i]
        if parts.apply_rope or parts.causal_mask or parts.attention or parts.multi_head_attention:
            _swap(block, "attn", YourAttention(parts, c))
        gated = c.modern_block.ffn_gate  # the gated FFN is your swiglu's, the plain one your feed_forward's
        ffn_fn, YourFFN = (parts.swiglu, YourGatedFeedForward) if gated else (parts.feed_forward, YourFeedForward)
        if ffn_fn and getattr(block, "ffn", None) is not None:
            _swap(block, "ffn", YourFFN(ffn_fn, c))
        if norm_fn:
            for name in ("norm1", "norm2"):
                if getattr(block, name, None) is not None:
                    _swap(block, name, YourNorm(norm_fn, c.d_model, c.norm_eps))
    if norm_fn and model.final_norm is not None:
        _swap(model, "final_norm", YourNorm(norm_fn, c.d_model, c.norm_eps))
    if parts.position_ids and c.positions.position_ids == "coupled":  # your numbering, where the model asks for one
        model.positions = lambda ids: parts.position_ids(ids).to(ids.device)
    model.parts = parts
    return model


def yours() -> Parts:
    """Your saved pieces, the reference solution standing in for each required one you have not
    written yet and the library's own for each optional one: what notebooks 08 and 09 build your
    model from, so that they run before every exercise is done. Shown in a cell, it is the table of
    which piece is whose."""
    from . import solutions
    return mine(fallback=lambda name: getattr(solutions, f"my_{name}"))


# --- does your model compute minitf's function? ----------------------------------------------------

@dataclass(repr=False)
class PartsCheck(CheckReport):
    """The outcome of `check`: the largest logit difference, and the pieces that cause one.

    max_diff is the float64 model's (inf when it gave no logits: `problem` says why); float32 is
    the float32 model's largest difference, or what went wrong there (a piece that changes the
    dtype raises or gives float64 logits only in float32, the dtype a model trains in).
    """
    max_diff: float
    broken: dict  # piece → the logit difference it causes on its own (or the error it raised)
    tolerance: float
    float32: float | str = 0.0
    tolerance32: float = 1e-4
    problem: str = ""

    @property
    def float32_ok(self) -> bool:
        return not isinstance(self.float32, str) and self.float32 <= self.tolerance32

    @property
    def ok(self) -> bool:
        return not self.broken and self.max_diff <= self.tolerance and self.float32_ok

    def __str__(self):
        agree = f"every one within {self.tolerance:.0e}"
        if self.ok:
            return (f"✓ your model computes minitf's logits: the largest difference is "
                    f"{_under(self.max_diff)} in float64 (the check allows {self.tolerance:.0e}) and "
                    f"{_under(self.float32)} in float32 (it allows {self.tolerance32:.0e}), each "
                    f"dtype's rounding")
        if self.problem:
            headline = f"✗ your model does not compute minitf's logits: {self.problem}"
        elif self.max_diff > self.tolerance:
            headline = f"✗ your model's logits differ from minitf's (largest difference {self.max_diff:.3g})"
        elif not self.float32_ok:
            how = (f"it {_clause(self.float32)}" if isinstance(self.float32, str)
                   else f"largest difference {self.float32:.3g}")
            headline = (f"✗ your model computes minitf's logits in float64 ({agree}), but not in "
                        f"float32, the dtype it trains in ({how})")
        elif list(self.broken) == ["make_batch"]:  # the logits agree: only the batches are wrong
            headline = (f"✗ your model computes minitf's logits ({agree}), but your make_batch builds "
                        f"other batches than minitf's: the model would train on the wrong targets")
        else:
            headline = f"✗ your model computes minitf's logits ({agree}), but a piece is broken"
        lines = [headline]
        for piece, why in self.broken.items():
            nb = PIECES[piece][1]
            lines.append(f"  broken piece: {piece} — {why}; re-run its check in notebook {nb}: "
                         f"minitf.exercise({piece!r}, your_function)")
        return "\n".join(lines)


def _under(diff: float) -> str:
    """A rounding difference as the power of ten above it ('under 1e-05'): its digits vary from CPU
    to CPU, and near a power of ten so does the power (1e-15 here, 1e-14 under another instruction
    set), so nbval compares these words without the power (notebooks/sanitize.cfg) and the claim
    tests hold the stored power to a range."""
    if diff == 0:
        return "0 (exactly equal)"
    return f"under 1e{math.ceil(math.log10(diff)):+03d}"


def _clause(problem: str) -> str:
    """'raises RuntimeError' from 'raises RuntimeError: …'; other problems as they are."""
    return problem.split(":", 1)[0] if problem.startswith("raises ") else problem


def _logits(model, ids) -> torch.Tensor:
    with torch.no_grad():
        return model.eval()(ids)


def check(parts: Parts, config: Config | None = None, *, seed: int = 0,
          tolerance: float = 1e-9, tolerance32: float = 1e-4) -> PartsCheck:
    """Compare the model built from `parts` with minitf's, on the same weights, in float64 (to
    `tolerance`) and in float32 (to `tolerance32`), the dtype a model trains in: a piece that
    changes the dtype (float64 out of float32 in) only shows there.

    When they differ, each of your pieces is put alone into minitf's model: a piece whose model
    differs is named as broken, with the difference it causes (or the error it raises). A
    make_batch is checked by its exercise (the logits do not depend on it).
    """
    config = config or Config()
    torch.manual_seed(seed)
    references = {torch.float32: Transformer(config)}
    references[torch.float64] = copy.deepcopy(references[torch.float32]).double()
    limits = {torch.float64: tolerance, torch.float32: tolerance32}
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(32, 127, (2, 9), generator=g)  # two rows of printable bytes, (B, T)
    if config.positions.position_ids == "coupled":
        ids[0, 4] = TAB  # one row a pair, input TAB output, so that the coupled ids restart
    expected = {dtype: _logits(model, ids) for dtype, model in references.items()}

    def difference(model_parts: Parts, dtype) -> float | str:
        model = assemble(config, model_parts).to(dtype)
        model.load_state_dict(references[dtype].state_dict())
        try:
            got = _logits(model, ids)
        except Exception as e:  # a learner's piece may raise anything: report it, don't crash
            return f"raises {type(e).__name__}: {e}"
        if got.shape != expected[dtype].shape:
            return f"the model's output has shape {tuple(got.shape)}, expected {tuple(expected[dtype].shape)}"
        if got.dtype != dtype:
            return f"the model's logits are {str(got.dtype).removeprefix('torch.')}, not {str(dtype).removeprefix('torch.')}"
        if got.isnan().any():
            return "the model's logits are NaN (a softmax over a row whose every entry is masked?)"
        return float((got - expected[dtype]).abs().max())

    def bad(diff, dtype) -> bool:
        return isinstance(diff, str) or diff > limits[dtype]

    forward_parts = Parts(**{name: getattr(parts, name) for name in parts.given()
                             if name not in ("make_batch", "softmax")})
    total = difference(forward_parts, torch.float64)
    total32 = difference(forward_parts, torch.float32)
    broken = {}
    if bad(total, torch.float64) or bad(total32, torch.float32):
        for name in forward_parts.given():
            alone = _alone(name, getattr(parts, name))
            diff = difference(alone, torch.float64)
            if bad(diff, torch.float64):
                broken[name] = diff if isinstance(diff, str) else f"alone it changes the logits by {diff:.3g}"
                continue
            diff = difference(alone, torch.float32)
            if isinstance(diff, str):
                if diff.startswith("raises "):  # "raises RuntimeError: why" → "it raises RuntimeError (why)"
                    kind, _, why = diff.partition(": ")
                    diff = f"it {kind} ({why.rstrip('.')})"
                broken[name] = (f"right in float64, but in float32, the dtype the model trains in, {diff}: "
                                f"it does not keep its inputs' dtype (a .double() or dtype=torch.float64 "
                                f"inside?)")
            elif diff > tolerance32:
                broken[name] = f"right in float64, but in float32 alone it changes the logits by {diff:.3g}"
    for name in ("softmax", "make_batch"):  # pieces without a slot of their own: checked by their exercise
        if getattr(parts, name):
            try:
                run_check(name, getattr(parts, name), own_work=False)
            except ExerciseError as e:
                broken[name] = " ".join(line.strip() for line in str(e).splitlines()[:3])
    return PartsCheck(total if isinstance(total, float) else float("inf"), broken, tolerance,
                      total32, tolerance32,
                      "" if isinstance(total, float) else f"it {_clause(total)}" if total.startswith("raises ")
                      else total)


# the pieces another piece calls by its exercise's name (my_softmax in your attention, my_attention
# and my_causal_mask in your multi_head_attention)
CALLED_BY_NAME = ("softmax", "attention", "causal_mask")


def _alone(name: str, piece) -> Parts:
    """Parts with `piece` the only one of yours: the pieces it calls by name are the reference
    solutions, not yours, so a broken softmax is blamed on softmax, not on the attention that calls it."""
    from . import solutions
    callees = {callee: getattr(solutions, f"my_{callee}") for callee in CALLED_BY_NAME if callee != name}
    return Parts(**{**callees, name: piece})


BLOCK_CONFIGS = {"LayerNorm": Config(), "RMSNorm": Config(norm="rms"), "Config.modern()": Config.modern()}


def check_yours(configs: dict[str, Config] | None = None, **pieces) -> dict[str, PartsCheck]:
    """Your pieces in a whole model, compared with minitf's under each named config (notebook 04's
    three layouts by default), in one call that prints one sentence: a notebook then shows the
    comparison, not the wiring. Each piece is yours where it passes its check and the reference
    solution where not yet (the sentence names those), so the notebook runs to its end before every
    exercise is written; a config whose logits differ gets the check's full report below it."""
    from .exercises import EXERCISES, passes
    configs = BLOCK_CONFIGS if configs is None else configs
    passed = {name: passes(name, fn) for name, fn in pieces.items()}
    parts = Parts(**{name: fn if passed[name] else EXERCISES[name].solution for name, fn in pieces.items()})
    outcomes = {name: check(parts, config) for name, config in configs.items()}
    print(_yours_sentence(passed, outcomes))
    for name, outcome in outcomes.items():
        if not outcome.ok:
            print(f"{name}: {outcome}")
    return outcomes


def _and(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _yours_sentence(passed: dict[str, bool], outcomes: dict[str, PartsCheck]) -> str:
    """'✓ Your layer_norm and block (with the reference solution for swiglu, not passed yet) compute
    minitf's logits under LayerNorm, RMSNorm and Config.modern(), to rounding in float64 and float32.'"""
    yours = [name for name, ok in passed.items() if ok]
    stand_ins = [name for name, ok in passed.items() if not ok]
    if not yours:
        who = f"The reference solutions of {_and(stand_ins)} (none of yours passes its check yet)"
    elif stand_ins:
        who = (f"Your {_and(yours)}, with the reference solution for {_and(stand_ins)} (not passed "
               "yet),")
    else:
        who = f"Your {_and(yours)}"
    one = len(yours) == 1  # "Your block computes", "Your block and ffn compute"
    good = [name for name, o in outcomes.items() if o.ok]
    bad = [name for name, o in outcomes.items() if not o.ok]
    if not bad:
        return (f"✓ {who} {'computes' if one else 'compute'} minitf's logits under {_and(good)}, to "
                "rounding in float64 and float32.")
    return (f"✗ {who} {'does' if one else 'do'} not compute minitf's logits under {_and(bad)}: the "
            "report for each follows.")
