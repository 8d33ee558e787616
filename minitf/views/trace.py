"""Every number of one forward pass: `trace(model, ids)` keeps each intermediate the model computes.

The pass runs in float64 on a copy of the model and is written out from the model's weights, one
formula per line, rather than by calling the modules: so the trace is a second, readable account of
the forward pass, and the tests hold it to the modules' own activations (forward hooks) and rebuild
the logits from the recorded pieces alone.

Every recorded number has a key, e.g. "L0.h1.weights.3.1" (layer 0, head 1, row 3, column 1):
`Trace.value(key)` reads it and `Trace.explain(key)` says how it was computed from its inputs, with
their values ("L0.h1.weights[3,1] = exp(s[3,1] − m)/Σ_j exp(s[3,j] − m), … = 0.420"). The
Explorer widget shows both.

Key names (t, j: positions; c: model dimension; d: head dimension; i: concatenated-heads
dimension; u: FFN unit; b: byte):
    ids.t  embed.t.c  pos.t.c (sinusoidal only)  x0.t.c (the stream entering layer 0)
    L{l}.input.t.c  L{l}.attn_in.t.c  L{l}.concat.t.i  L{l}.attn_out.t.c  L{l}.resid1.t.c
    L{l}.ffn_in.t.c  L{l}.ffn_pre.t.u  L{l}.ffn_hidden.t.u  L{l}.ffn_out.t.c  L{l}.resid2.t.c
    L{l}.output.t.c
    L{l}.h{h}.{q,k,v,q_rot,k_rot,v_rot}.t.d  L{l}.h{h}.{scores,weights}.t.j  L{l}.h{h}.rowsum.t
    L{l}.h{h}.out.t.d
    {L{l}.norm1, L{l}.norm2, final_norm}.{mean,var}.t (LayerNorm) or .ms.t (RMSNorm), .out.t.c
    final.t.c  logits.t.b  probs.t.b
"""
from __future__ import annotations

import copy
import itertools
import math
from dataclasses import dataclass

import torch

from ..core.attention import causal_mask
from ..core.tokens import byte_label, to_bytes
from .trace_provenance import explain, fmt, locate  # noqa: F401 (fmt: the explanations' number format)


@dataclass
class NormTrace:
    """One norm over T vectors.

    LayerNorm: y = (x − mean) / √(var + eps) · γ + β, var the biased variance.
    RMSNorm:   y = x / √(ms + eps) · γ, ms = mean(x²); `mean` and `bias` are None, `var` holds ms.
    """
    kind: str                    # "layer" or "rms"
    input: torch.Tensor          # (T, C)
    mean: torch.Tensor | None    # (T,)
    var: torch.Tensor            # (T,) what sits under the square root, before eps
    output: torch.Tensor         # (T, C)
    weight: torch.Tensor         # γ (C,)
    bias: torch.Tensor | None    # β (C,)
    eps: float


@dataclass
class LayerTrace:
    """One block. Post-norm: norm1 follows the attention residual and norm2 the FFN residual;
    pre-norm: norm1 feeds attention and norm2 the FFN (as in the model's Block)."""
    input: torch.Tensor          # (T, C) the stream entering the block
    norm1: NormTrace
    attn_in: torch.Tensor        # (T, C) what attention reads: norm1.output (pre) or input (post)
    q: torch.Tensor              # (H, T, hd) attn_in · W_Q + b, per head (then RMS-normalised: qk_norm)
    k: torch.Tensor              # (H, T, hd)
    v: torch.Tensor              # (H, T, hd)
    rope_theta: torch.Tensor | None  # (H, hd/2) θ_i per head, when RoPE is on (q/k or v)
    rope_cos: torch.Tensor | None    # (H, T, hd/2) cos(t·θ_i)
    rope_sin: torch.Tensor | None
    q_rot: torch.Tensor          # (H, T, hd) after RoPE (q itself when RoPE is off)
    k_rot: torch.Tensor
    v_rot: torch.Tensor          # v rotated only with rope_on_v
    scores: torch.Tensor         # (H, T, T) q_rot · k_rot / √hd, before the mask
    mask: torch.Tensor | None    # (T, T) bool, True where t may NOT look at j; None without causal
    masked_scores: torch.Tensor  # (H, T, T) the scores softmax reads: −∞ where the mask is True
    weights: torch.Tensor        # (H, T, T) softmax over j of the masked scores
    head_out: torch.Tensor       # (H, T, hd) Σ_j weights · v_rot
    concat: torch.Tensor         # (T, H·hd) the heads side by side
    attn_out: torch.Tensor       # (T, C) concat · W_O + b
    resid1: torch.Tensor         # (T, C) input + attn_out (attn_out alone with residual=False)
    after_attn: torch.Tensor     # (T, C) the stream after the attention sub-layer
    norm2: NormTrace | None      # None when the config has no FFN
    ffn_in: torch.Tensor | None  # (T, C)
    ffn_pre: torch.Tensor | None     # (T, d_ff) ffn_in · W_up + b, before the activation
    ffn_hidden: torch.Tensor | None  # (T, d_ff) after it
    ffn_out: torch.Tensor | None     # (T, C) ffn_hidden · W_down + b
    resid2: torch.Tensor | None      # (T, C) after_attn + ffn_out
    output: torch.Tensor         # (T, C) the stream leaving the block


@dataclass
class Trace:
    """One forward pass of `model` on `ids`, every intermediate in float64 (see the module doc)."""
    config: object
    ids: list[int]
    embedding: torch.Tensor      # (T, C) rows of the embedding table
    positional: torch.Tensor | None  # (T, C) the sinusoidal table's rows, if used
    x0: torch.Tensor             # (T, C) embedding (+ positional): the stream entering layer 0
    layers: list[LayerTrace]
    final_norm: NormTrace | None  # pre-norm models only
    final: torch.Tensor          # (T, C) what the output head reads
    logits: torch.Tensor         # (T, vocab)
    probs: torch.Tensor          # (T, vocab) softmax of the logits: the next-byte distribution
    params: dict                 # the float64 weights the pass used, by the model's parameter names
    positions: list[int] | None = None  # the position id of each byte (0 … T−1 unless coupled)

    @property
    def labels(self) -> list[str]:
        """One printable label per byte (space as ␣, TAB as ⇥, EOS as ⏎)."""
        return [byte_label(b) for b in self.ids]

    def next_byte(self, position: int = -1) -> int:
        """The greedy (argmax) next byte after `position`."""
        return int(self.logits[position].argmax())

    def keys(self):
        """Every key, in the order the forward pass computes the numbers."""
        T = len(self.ids)

        def grid(prefix, tensor):
            return (f"{prefix}.{'.'.join(map(str, i))}" for i in _indices(tensor.shape))

        def norm_keys(prefix, norm):
            yield from (f"{prefix}.{'mean' if norm.kind == 'layer' else 'ms'}.{t}" for t in range(T))
            if norm.kind == "layer":
                yield from (f"{prefix}.var.{t}" for t in range(T))
            yield from grid(f"{prefix}.out", norm.output)

        yield from (f"ids.{t}" for t in range(T))
        yield from grid("embed", self.embedding)
        if self.positional is not None:
            yield from grid("pos", self.positional)
        yield from grid("x0", self.x0)
        for l, layer in enumerate(self.layers):
            L = f"L{l}"
            yield from grid(f"{L}.input", layer.input)
            if self.config.norm_position == "pre":
                yield from norm_keys(f"{L}.norm1", layer.norm1)
            yield from grid(f"{L}.attn_in", layer.attn_in)
            for h in range(self.config.n_heads):
                for name in ("q", "k", "v", "q_rot", "k_rot", "v_rot", "scores", "weights"):
                    yield from grid(f"{L}.h{h}.{name}", getattr(layer, name)[h])
                yield from (f"{L}.h{h}.rowsum.{t}" for t in range(T))
                yield from grid(f"{L}.h{h}.out", layer.head_out[h])
            for name in ("concat", "attn_out", "resid1"):
                yield from grid(f"{L}.{name}", getattr(layer, name))
            if self.config.norm_position == "post":
                yield from norm_keys(f"{L}.norm1", layer.norm1)
            yield from grid(f"{L}.after_attn", layer.after_attn)
            if layer.norm2 is not None:
                if self.config.norm_position == "pre":
                    yield from norm_keys(f"{L}.norm2", layer.norm2)
                for name in ("ffn_in", "ffn_pre", "ffn_hidden", "ffn_out", "resid2"):
                    yield from grid(f"{L}.{name}", getattr(layer, name))
                if self.config.norm_position == "post":
                    yield from norm_keys(f"{L}.norm2", layer.norm2)
            yield from grid(f"{L}.output", layer.output)
        if self.final_norm is not None:
            yield from norm_keys("final_norm", self.final_norm)
        yield from grid("final", self.final)
        yield from grid("logits", self.logits)
        yield from grid("probs", self.probs)

    def value(self, key: str):
        """The recorded number under `key` (an int for ids, else a float; −inf for masked scores)."""
        if key.startswith("ids."):
            return self.ids[int(key.split(".")[1])]
        tensor, index, _ = locate(self, key)
        return float(tensor[index])

    def explain(self, key: str) -> str:
        """How the number under `key` was computed from its inputs, with their values."""
        return explain(self, key)


@torch.no_grad()
def trace(model, ids) -> Trace:
    """Run `model` on one sequence, in float64, keeping every intermediate.

    ids: bytes, str (UTF-8), a list of ints, or a (T,) / (1, T) tensor.
    """
    ids = _as_ids(ids)
    config = model.config
    if not 1 <= len(ids) <= config.max_len:
        raise ValueError(f"need 1 to max_len = {config.max_len} bytes, got {len(ids)}")
    unwritten = [name for name in ("ffn_gate", "logit_softcap")
                 if getattr(config.modern_block, name) not in (None, False)]
    if unwritten:
        raise ValueError(f"trace writes out the block without {', '.join(unwritten)}; this model "
                         "has them (Config's modern options), so its trace would not be its "
                         "forward pass")
    m = copy.deepcopy(model).double().eval()  # the learner's model stays as it is
    for module in m.modules():  # bias=False: the copy gets zero biases, so every formula reads "+ 0"
        if isinstance(module, torch.nn.Linear) and module.bias is None:
            module.bias = torch.nn.Parameter(module.weight.new_zeros(module.weight.size(0)))
    pos = m.positions(torch.tensor([ids]))  # the model's own numbering (coupled), or None
    pos = torch.arange(len(ids)) if pos is None else pos[0]  # (T,)
    embedding = m.embed.weight[ids]  # (T, C)
    positional = m.pos_table[pos] if config.positions.positional == "sinusoidal" else None
    x0 = embedding + positional if positional is not None else embedding
    h, layers = x0, []
    for block in m.blocks:
        layers.append(_block(config, block, h, pos))
        h = layers[-1].output
    final_norm = _norm(config.norm, h, m.final_norm) if m.final_norm is not None else None
    final = final_norm.output if final_norm is not None else h
    logits = final @ m.head.weight.T + m.head.bias  # (T, vocab); tied: head.weight is embed.weight
    e = torch.exp(logits - logits.max(-1, keepdim=True).values)
    probs = e / e.sum(-1, keepdim=True)
    params = {name: p.detach() for name, p in m.named_parameters(remove_duplicate=False)}
    return Trace(config, ids, embedding, positional, x0, layers, final_norm, final, logits, probs,
                 params, pos.tolist())


def _block(config, block, x, pos) -> LayerTrace:
    """One block on x (T, C) at position ids pos (T,), written out as Block.forward computes it."""
    T, H, hd = x.size(0), config.n_heads, config.head_dim
    A = H * hd
    pre = config.norm_position == "pre"
    residual = config.ablations.residual  # the ablation switches (config.ablations)
    use_ffn = config.ablations.ffn
    attn = block.attn

    norm1 = _norm(config.norm, x, block.norm1) if pre else None
    attn_in = norm1.output if pre else x
    qkv = attn_in @ attn.qkv.weight.T + attn.qkv.bias  # (T, 3A): [q | k | v]
    q, k, v = (qkv[:, i * A:(i + 1) * A].reshape(T, H, hd).transpose(0, 1) for i in range(3))
    if config.modern_block.qk_norm:  # QK-norm: q and k are each head's RMS-normalised ones
        q = q / torch.sqrt(q.pow(2).mean(-1, keepdim=True) + attn.q_norm.eps) * attn.q_norm.weight
        k = k / torch.sqrt(k.pow(2).mean(-1, keepdim=True) + attn.k_norm.eps) * attn.k_norm.weight
    theta = cos = sin = None
    if config.positions.positional == "rope" or config.positions.rope_on_v:
        theta = attn.inv_freq  # (H, hd/2)
        angles = pos.to(torch.float64)[None, :, None] * theta[:, None, :]
        cos, sin = angles.cos(), angles.sin()  # (H, T, hd/2)
    q_rot = _rotate(q, cos, sin) if config.positions.positional == "rope" else q
    k_rot = _rotate(k, cos, sin) if config.positions.positional == "rope" else k
    v_rot = _rotate(v, cos, sin) if config.positions.rope_on_v else v
    scores = q_rot @ k_rot.transpose(1, 2) / math.sqrt(hd)  # (H, T, T)
    mask = causal_mask(T) if config.ablations.causal else None
    masked = scores.masked_fill(mask, float("-inf")) if mask is not None else scores
    e = torch.exp(masked - masked.max(-1, keepdim=True).values)  # masked entries: exp(−∞) = 0
    weights = e / e.sum(-1, keepdim=True)
    head_out = weights @ v_rot  # (H, T, hd)
    concat = head_out.transpose(0, 1).reshape(T, A)
    attn_out = concat @ attn.out.weight.T + attn.out.bias  # (T, C)
    resid1 = x + attn_out if residual else attn_out
    if not pre:
        norm1 = _norm(config.norm, resid1, block.norm1)
    after_attn = resid1 if pre else norm1.output

    norm2 = ffn_in = ffn_pre = ffn_hidden = ffn_out = resid2 = None
    output = after_attn
    if use_ffn:
        norm2 = _norm(config.norm, after_attn, block.norm2) if pre else None
        ffn_in = norm2.output if pre else after_attn
        ffn_pre = ffn_in @ block.ffn.up.weight.T + block.ffn.up.bias  # (T, d_ff)
        ffn_hidden = ACTIVATIONS[config.activation](ffn_pre)
        ffn_out = ffn_hidden @ block.ffn.down.weight.T + block.ffn.down.bias  # (T, C)
        resid2 = after_attn + ffn_out if residual else ffn_out
        if not pre:
            norm2 = _norm(config.norm, resid2, block.norm2)
        output = resid2 if pre else norm2.output
    return LayerTrace(x, norm1, attn_in, q, k, v, theta, cos, sin, q_rot, k_rot, v_rot, scores,
                      mask, masked, weights, head_out, concat, attn_out, resid1, after_attn, norm2,
                      ffn_in, ffn_pre, ffn_hidden, ffn_out, resid2, output)


ACTIVATIONS = {  # written out; F.gelu's default is the exact (erf) form
    "relu": lambda u: u.clamp_min(0),
    "gelu": lambda u: 0.5 * u * (1 + torch.erf(u / math.sqrt(2))),
    "silu": lambda u: u / (1 + torch.exp(-u)),
    "relu2": lambda u: u.clamp_min(0) ** 2,
}


def _as_ids(ids) -> list[int]:
    if isinstance(ids, (bytes, bytearray, str)):
        return list(to_bytes(ids))
    if isinstance(ids, torch.Tensor):
        if ids.dim() == 2 and ids.size(0) == 1:
            ids = ids[0]
        if ids.dim() != 1:
            raise ValueError(f"trace reads one sequence: (T,) or (1, T), got {tuple(ids.shape)}")
        return [int(i) for i in ids]
    return [int(i) for i in ids]


def _indices(shape):
    """Every index tuple of a tensor of `shape`, row-major."""
    return itertools.product(*(range(n) for n in shape))


def _norm(kind: str, x: torch.Tensor, module) -> NormTrace:
    if kind == "layer":
        mean = x.mean(-1)  # (T,)
        var = (x - mean[:, None]).pow(2).mean(-1)
        y = (x - mean[:, None]) / torch.sqrt(var[:, None] + module.eps) * module.weight + module.bias
        bias = module.bias.detach()
    else:
        mean, bias = None, None
        var = x.pow(2).mean(-1)  # the mean of squares
        y = x / torch.sqrt(var[:, None] + module.eps) * module.weight
    return NormTrace(kind, x, mean, var, y, module.weight.detach(), bias, module.eps)


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """RoPE: each pair (x_2i, x_2i+1) at position t turned by t·θ_i. x: (H, T, hd)."""
    a, b = x[..., 0::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., 0::2] = a * cos - b * sin
    out[..., 1::2] = a * sin + b * cos
    return out
