"""Your pieces in a real model: a `minitf.Transformer` whose computations are your functions.

Each exercise of the course writes one piece of the model (the embedding lookup, RoPE, the causal
mask, attention, LayerNorm, RMSNorm, the FFN, the batch). `assemble(config, parts)` builds a
Transformer in which the pieces you give replace minitf's own. Parameter names stay the same, so
weights move between your model and minitf's with `load_state_dict`, and `check` can say whether
your model computes exactly minitf's logits, and if not, which piece breaks it.

A piece that passes its exercise check is saved as source (`save`), one file per piece, in
`my_parts/` beside the notebooks (or in $MINITF_MY_PARTS), so notebook 08 can build the model from
the learner's code although it was written in other notebooks. minitf's normal model never goes
through this module: it costs nothing when unused.
"""
from __future__ import annotations

import inspect
import os
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import torch
from torch import nn

from .attention import MultiHeadAttention, attention, causal_mask
from .config import Config
from .ffn import FeedForward
from .model import Transformer
from .norms import LayerNorm, RMSNorm
from .tokens import TAB

# piece → (the call the model makes, the notebook whose exercise writes it)
PIECES = {
    "embed": ("embed(ids, table) → (B, T, C)", "01"),
    "apply_rope": ("apply_rope(x, cos, sin) → x with each pair rotated", "02"),
    "causal_mask": ("causal_mask(T) → (T, T) bool, True where i may not look at j", "03"),
    "attention": ("attention(q, k, v, mask) → (output, weights)", "03"),
    "layer_norm": ("layer_norm(x, weight, bias, eps)", "04"),
    "rms_norm": ("rms_norm(x, weight, eps)", "04"),
    "feed_forward": ("feed_forward(x, w_up, b_up, w_down, b_down), ReLU", "04"),
    "make_batch": ("make_batch(pairs) → (ids, targets)", "05"),
    "position_ids": ("position_ids(ids) → (B, T) coupled ids (used when config.position_ids='coupled')", "11"),
}


@dataclass(frozen=True)
class Parts:
    """The learner's functions, one per piece; None keeps minitf's own."""
    embed: Callable | None = None
    apply_rope: Callable | None = None
    causal_mask: Callable | None = None
    attention: Callable | None = None
    layer_norm: Callable | None = None
    rms_norm: Callable | None = None
    feed_forward: Callable | None = None
    make_batch: Callable | None = None
    position_ids: Callable | None = None
    origin: dict = field(default_factory=dict, compare=False)  # piece → where it came from

    def given(self) -> list[str]:
        return [name for name in PIECES if getattr(self, name) is not None]

    def __repr__(self):
        width = max(len(name) for name in PIECES)
        rows = [f"{name:<{width}}  {self.origin.get(name, 'yours') if getattr(self, name) else 'minitf'}"
                for name in PIECES]
        return "\n".join(rows)


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


class YourAttention(MultiHeadAttention):
    """minitf's multi-head attention with your rotation, mask and attention in its two steps."""

    def __init__(self, parts: Parts, config: Config):
        super().__init__(config)
        self.parts = parts

    def rotate(self, x, cos, sin):
        fn = self.parts.apply_rope
        return fn(x, cos, sin) if fn else super().rotate(x, cos, sin)

    def attend(self, q, k, v, need_weights: bool):
        if not (self.parts.attention or self.parts.causal_mask):
            return super().attend(q, k, v, need_weights)
        make_mask = self.parts.causal_mask or causal_mask
        mask = make_mask(q.size(-2)).to(q.device) if self.causal else None
        return (self.parts.attention or attention)(q, k, v, mask)


def _swap(parent: nn.Module, name: str, new: nn.Module) -> None:
    """Replace a child module, keeping its parameters (same names, same values)."""
    new.load_state_dict(getattr(parent, name).state_dict())
    setattr(parent, name, new)


def assemble(config: Config | None = None, parts: Parts | None = None, **pieces) -> Transformer:
    """A Transformer whose pieces are yours where given: `assemble(config, Parts(...))` or
    `assemble(config, attention=my_attention, …)`. Its starting weights are those
    `Transformer(config)` would get with the same random state."""
    config = config or Config()
    parts = parts or Parts(**pieces)
    if parts.feed_forward and config.activation != "relu":
        raise ValueError(f"your feed_forward uses ReLU; this config's activation is {config.activation!r}")
    model = Transformer(config)
    c = config
    if parts.embed:
        _swap(model, "embed", YourEmbedding(parts.embed, c.vocab_size, c.d_model))
        if c.tie_embeddings:  # the head reads the same table as your embedding
            model.head.weight = model.embed.weight
    norm_fn = parts.layer_norm if c.norm == "layer" else parts.rms_norm
    YourNorm = YourLayerNorm if c.norm == "layer" else YourRMSNorm
    for block in model.blocks:
        if parts.apply_rope or parts.causal_mask or parts.attention:
            _swap(block, "attn", YourAttention(parts, c))
        if parts.feed_forward and getattr(block, "ffn", None) is not None:
            _swap(block, "ffn", YourFeedForward(parts.feed_forward, c))
        if norm_fn:
            for name in ("norm1", "norm2"):
                if getattr(block, name, None) is not None:
                    _swap(block, name, YourNorm(norm_fn, c.d_model, c.norm_eps))
    if norm_fn and model.final_norm is not None:
        _swap(model, "final_norm", YourNorm(norm_fn, c.d_model, c.norm_eps))
    if parts.position_ids and c.position_ids == "coupled":  # your numbering, where the model asks for one
        model.positions = lambda ids: parts.position_ids(ids).to(ids.device)
    model.parts = parts
    return model


# --- does your model compute minitf's function? ----------------------------------------------------

@dataclass
class PartsCheck:
    """The outcome of `check`: the largest logit difference, and the pieces that cause one."""
    max_diff: float
    broken: dict  # piece → the logit difference it causes on its own (or the error it raised)
    tolerance: float

    @property
    def ok(self) -> bool:
        return not self.broken and self.max_diff <= self.tolerance

    def __repr__(self):  # a notebook cell ending in check(...) shows the sentence, not the fields
        return str(self)

    def __str__(self):
        if self.ok:
            return f"✓ your model computes minitf's logits (every one within {self.tolerance:.0e})"
        lines = [f"✗ your model's logits differ from minitf's (largest difference {self.max_diff:.3g})"]
        for piece, why in self.broken.items():
            nb = PIECES[piece][1]
            lines.append(f"  broken piece: {piece} — {why}; re-run its check in notebook {nb}: "
                         f"minitf.exercise({piece!r}, your_function)")
        return "\n".join(lines)


def _logits(model, ids) -> torch.Tensor:
    with torch.no_grad():
        return model.eval()(ids)


def check(parts: Parts, config: Config | None = None, *, seed: int = 0,
          tolerance: float = 1e-9) -> PartsCheck:
    """Compare the model built from `parts` with minitf's, in float64, on the same weights.

    When they differ, each of your pieces is put alone into minitf's model: a piece whose model
    differs is named as broken, with the difference it causes (or the error it raises).
    """
    config = config or Config()
    torch.manual_seed(seed)
    reference = Transformer(config).double()
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(32, 127, (2, 9), generator=g)  # two rows of printable bytes, (B, T)
    if config.position_ids == "coupled":
        ids[0, 4] = TAB  # one row a pair, input TAB output, so that the coupled ids restart
    expected = _logits(reference, ids)

    def difference(model_parts: Parts) -> float | str:
        model = assemble(config, model_parts).double()
        model.load_state_dict(reference.state_dict())
        try:
            got = _logits(model, ids)
        except Exception as e:  # a learner's piece may raise anything: report it, don't crash
            return f"raises {type(e).__name__}: {e}"
        if got.shape != expected.shape:
            return f"the model's output has shape {tuple(got.shape)}, expected {tuple(expected.shape)}"
        if got.isnan().any():
            return "the model's logits are NaN (a softmax over a row whose every entry is masked?)"
        return float((got - expected).abs().max())

    forward_parts = Parts(**{name: getattr(parts, name) for name in parts.given() if name != "make_batch"})
    total = difference(forward_parts)
    max_diff = total if isinstance(total, float) else float("inf")
    broken = {}
    if isinstance(total, str) or total > tolerance:
        for name in forward_parts.given():
            alone = difference(Parts(**{name: getattr(parts, name)}))
            if isinstance(alone, str) or alone > tolerance:
                broken[name] = alone if isinstance(alone, str) else f"alone it changes the logits by {alone:.3g}"
    if parts.make_batch:
        from .exercises import ExerciseError
        from .workbook import run_check
        try:
            run_check("make_batch", parts.make_batch)
        except ExerciseError as e:
            broken["make_batch"] = " ".join(line.strip() for line in str(e).splitlines()[:3])
    return PartsCheck(max_diff, broken, tolerance)


# --- the learner's saved pieces ---------------------------------------------------------------------

def folder() -> Path:
    """Where passed pieces are saved: $MINITF_MY_PARTS, else my_parts/ in the working directory."""
    return Path(os.environ.get("MINITF_MY_PARTS") or Path.cwd() / "my_parts")


def save(piece: str, fn: Callable) -> Path | None:
    """Save the source of a function that passed its check; None if it has no source of its own
    (a lambda, or a function defined outside a file or cell)."""
    if fn.__name__ == "<lambda>":
        return None
    try:
        source = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        return None
    path = folder() / f"{piece}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# {piece}: saved by minitf.exercise when it passed its check\n{source}\n"
                    f"__piece__ = {fn.__name__}\n", encoding="utf-8")
    return path


def mine(fallback: Callable[[str], Callable] | None = None) -> Parts:
    """Your saved pieces as Parts. Pieces you have not saved are filled by `fallback(name)` (for
    instance the reference solutions: `lambda name: getattr(minitf.solutions, "my_" + name)`) or
    left to minitf. All files share one namespace, so one piece may call another."""
    import minitf
    from .tokens import EOS, IGNORE, PAD
    # what the notebooks' cells had at hand when the pieces were written
    namespace = {"torch": torch, "math": __import__("math"), "F": torch.nn.functional, "minitf": minitf,
                 "TAB": TAB, "EOS": EOS, "PAD": PAD, "IGNORE": IGNORE}
    found, origin = {}, {}
    for name in PIECES:
        path = folder() / f"{name}.py"
        if path.is_file():
            exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), namespace)
            found[name], origin[name] = namespace.pop("__piece__"), f"yours ({path.parent.name}/{path.name})"
        elif fallback is not None:
            found[name], origin[name] = fallback(name), "reference solution (you have not saved one yet)"
    return Parts(**found, origin=origin)
