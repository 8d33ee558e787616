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

from dataclasses import dataclass

import torch
from torch import nn

from ..core.attention import MultiHeadAttention, attention, causal_mask
from ..core.config import Config
from ..core.ffn import FeedForward
from ..core.model import Transformer
from ..core.norms import LayerNorm, RMSNorm
from ..core.tokens import TAB
from .exercises import run_check
from .feedback import ExerciseError
from .my_parts import PIECES, Parts, folder, mine, save  # noqa: F401  (minitf.parts.mine, …)

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
        T, S = q.size(-2), k.size(-2)  # S > T when earlier keys come from a KV cache
        mask = make_mask(S).to(q.device)[S - T:] if self.causal else None
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
        try:
            run_check("make_batch", parts.make_batch)
        except ExerciseError as e:
            broken["make_batch"] = " ".join(line.strip() for line in str(e).splitlines()[:3])
    return PartsCheck(max_diff, broken, tolerance)
