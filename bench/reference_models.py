"""Two reference formulations of the same decoder-only Transformer, for `make bench` only.

SeedStyleTransformer re-creates the *formulation* of the seed documents (000/003), written anew
here: separate Q/K/V/O linears, RoPE angles recomputed inside every layer's forward, attention as an
explicit masked softmax, and LayerNorm `ln1` applied twice per layer (before attention and after the
residual). `seed_quirks=False` turns the two functional quirks off (the double norm and RoPE
frequencies derived from d_model instead of head_dim), so the smoke test can check that the
formulation computes exactly minitf's function; the benchmark times it with the quirks on.

ExpertTransformer is how a practitioner would write it compactly: one fused QKV linear, RoPE cos/sin
tables computed once at construction (in the rotate-half layout), `F.scaled_dot_product_attention`,
`nn.LayerNorm` (one fused kernel). Loading a minitf model permutes the Q/K head dimensions from
minitf's interleaved pairs (0,1)(2,3)… to the half layout (0,h)(1,h+1)…; scores q·k are unchanged
because the same permutation is applied to both.

MinitfFastPath is the prototype of a proposed change to minitf (see bench/REPORT.md): the same
modules and parameters, with the hot spots the profile found swapped for fused equivalents.

Only post-norm (the seed's layout) and pre-norm are covered, RoPE on Q and K, causal attention,
ReLU/GELU/SiLU FFN and LayerNorm: the configurations the benchmark runs.
"""
from __future__ import annotations

import math
import types

import torch
import torch.nn.functional as F
from torch import nn

import minitf
from minitf import Config, Transformer

ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu, "silu": F.silu}


def _check_supported(config: Config):
    p = config.positions
    if p.positional != "rope" or p.rope_on_v or not config.ablations.causal or config.norm != "layer":
        raise ValueError("reference models cover RoPE on Q/K, causal attention and LayerNorm only")
    if config.attn_dim != config.d_model:
        raise ValueError("reference models need n_heads · head_dim == d_model")


# --- (a) the seed's formulation -----------------------------------------------------------------

class SeedStyleLayer(nn.Module):
    def __init__(self, config: Config, seed_quirks: bool):
        super().__init__()
        C = config.d_model
        self.n_heads, self.head_dim, self.seed_quirks = config.n_heads, config.head_dim, seed_quirks
        self.rope_dim = C if seed_quirks else config.head_dim  # seed: 10000^(2i/d_model)
        self.base = config.positions.rope_base
        self.Wq, self.Wk, self.Wv, self.Wo = (nn.Linear(C, C) for _ in range(4))
        self.ff_in, self.ff_out = nn.Linear(C, config.d_ff), nn.Linear(config.d_ff, C)
        self.act = ACTIVATIONS[config.activation]
        self.ln1, self.ln2 = nn.LayerNorm(C, eps=config.norm_eps), nn.LayerNorm(C, eps=config.norm_eps)
        self.drop = nn.Dropout(config.dropout_p)

    def rope(self, x):
        """Angles built from scratch on every call, as the seed does (x: (B, H, T, hd))."""
        T, hd = x.size(-2), x.size(-1)
        pos = torch.arange(T, dtype=torch.float32)[:, None]                     # (T, 1)
        i = torch.arange(hd // 2, dtype=torch.float32)[None, :]                 # (1, hd/2)
        angle = pos / self.base ** (2 * i / self.rope_dim)                      # (T, hd/2)
        cos, sin = torch.cos(angle), torch.sin(angle)
        even, odd = x[..., 0::2], x[..., 1::2]
        return torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1).flatten(-2)

    def forward(self, h):
        B, T, C = h.shape
        x = self.ln1(h) if self.seed_quirks else h  # the seed normalises before attention too
        q, k, v = (W(x).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
                   for W in (self.Wq, self.Wk, self.Wv))                        # (B, H, T, hd)
        q, k = self.rope(q), self.rope(k)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)             # (B, H, T, T)
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        weights = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
        y = (weights @ v).transpose(1, 2).reshape(B, T, C)
        h = self.ln1(h + self.drop(self.Wo(y)))                                 # add & norm
        return self.ln2(h + self.drop(self.ff_out(self.act(self.ff_in(h)))))


class SeedStyleTransformer(nn.Module):
    def __init__(self, config: Config, seed_quirks: bool = True):
        super().__init__()
        _check_supported(config)
        if config.norm_position != "post":
            raise ValueError("the seed's formulation is post-norm")
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.d_model)
        self.drop = nn.Dropout(config.dropout_p)
        self.layers = nn.ModuleList(SeedStyleLayer(config, seed_quirks) for _ in range(config.n_layers))
        self.output_proj = nn.Linear(config.d_model, config.vocab_size)

    def forward(self, ids):
        h = self.drop(self.embed(ids))  # (B, T, C)
        for layer in self.layers:
            h = layer(h)
        return self.output_proj(h)      # (B, T, vocab)

    @classmethod
    def from_minitf(cls, model: Transformer, seed_quirks: bool = True) -> "SeedStyleTransformer":
        ref = cls(model.config, seed_quirks)
        src = model.state_dict()
        C = model.config.d_model
        with torch.no_grad():
            ref.embed.weight.copy_(src["embed.weight"])
            ref.output_proj.load_state_dict({"weight": src["head.weight"], "bias": src["head.bias"]})
            for i, layer in enumerate(ref.layers):
                p = f"blocks.{i}."
                for j, W in enumerate((layer.Wq, layer.Wk, layer.Wv)):
                    W.weight.copy_(src[p + "attn.qkv.weight"][j * C:(j + 1) * C])
                    W.bias.copy_(src[p + "attn.qkv.bias"][j * C:(j + 1) * C])
                layer.Wo.load_state_dict({"weight": src[p + "attn.out.weight"], "bias": src[p + "attn.out.bias"]})
                layer.ff_in.load_state_dict({"weight": src[p + "ffn.up.weight"], "bias": src[p + "ffn.up.bias"]})
                layer.ff_out.load_state_dict({"weight": src[p + "ffn.down.weight"], "bias": src[p + "ffn.down.bias"]})
                layer.ln1.load_state_dict({"weight": src[p + "norm1.weight"], "bias": src[p + "norm1.bias"]})
                layer.ln2.load_state_dict({"weight": src[p + "norm2.weight"], "bias": src[p + "norm2.bias"]})
        return ref


# --- (b) a compact expert formulation -----------------------------------------------------------

def rotate_half(x):
    """(x1, x2) → (−x2, x1) on the two halves of the last dimension."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class ExpertBlock(nn.Module):
    def __init__(self, config: Config):
        super().__init__()
        C = config.d_model
        self.n_heads, self.head_dim = config.n_heads, config.head_dim
        self.pre_norm = config.norm_position == "pre"
        self.qkv, self.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.up, self.down = nn.Linear(C, config.d_ff), nn.Linear(config.d_ff, C)
        self.act = ACTIVATIONS[config.activation]
        self.norm1, self.norm2 = nn.LayerNorm(C, eps=config.norm_eps), nn.LayerNorm(C, eps=config.norm_eps)
        self.drop = nn.Dropout(config.dropout_p)

    def attn(self, x, cos, sin):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin   # (B, H, T, hd)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))

    def forward(self, h, cos, sin):
        if self.pre_norm:
            h = h + self.drop(self.attn(self.norm1(h), cos, sin))
            return h + self.drop(self.down(self.act(self.up(self.norm2(h)))))
        h = self.norm1(h + self.drop(self.attn(h, cos, sin)))
        return self.norm2(h + self.drop(self.down(self.act(self.up(h)))))


class ExpertTransformer(nn.Module):
    def __init__(self, config: Config):
        super().__init__()
        _check_supported(config)
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.d_model)
        self.drop = nn.Dropout(config.dropout_p)
        self.blocks = nn.ModuleList(ExpertBlock(config) for _ in range(config.n_layers))
        self.final_norm = nn.LayerNorm(config.d_model, eps=config.norm_eps) \
            if config.norm_position == "pre" else nn.Identity()
        self.head = nn.Linear(config.d_model, config.vocab_size)
        hd = config.head_dim
        inv_freq = config.positions.rope_base ** (-torch.arange(0, hd, 2, dtype=torch.float64) / hd)
        angles = torch.arange(config.max_len, dtype=torch.float64)[:, None] * inv_freq  # (L, hd/2)
        angles = torch.cat((angles, angles), dim=-1)                                    # (L, hd)
        self.register_buffer("cos", angles.cos().float(), persistent=False)
        self.register_buffer("sin", angles.sin().float(), persistent=False)

    def forward(self, ids):
        T = ids.size(1)
        cos, sin = self.cos[:T], self.sin[:T]  # (T, hd): sliced from the tables, not recomputed
        h = self.drop(self.embed(ids))
        for block in self.blocks:
            h = block(h, cos, sin)
        return self.head(self.final_norm(h))

    @classmethod
    def from_minitf(cls, model: Transformer) -> "ExpertTransformer":
        config = model.config
        for block in model.blocks:
            if not torch.equal(block.attn.inv_freq, block.attn.inv_freq[:1].expand_as(block.attn.inv_freq)):
                raise ValueError("ExpertTransformer keeps one RoPE table: all heads need the same frequencies")
        ref = cls(config)
        C, H, hd = config.d_model, config.n_heads, config.head_dim
        # within each head, interleaved (2i, 2i+1) pairs → halves (i, i + hd/2)
        within = torch.cat((torch.arange(0, hd, 2), torch.arange(1, hd, 2)))
        perm = torch.cat([h * hd + within for h in range(H)])
        qk_rows = torch.cat((perm, C + perm, torch.arange(2 * C, 3 * C)))
        src = model.state_dict()
        dst = {"embed.weight": src["embed.weight"], "head.weight": src["head.weight"],
               "head.bias": src["head.bias"]}
        if config.norm_position == "pre":
            dst.update({"final_norm.weight": src["final_norm.weight"], "final_norm.bias": src["final_norm.bias"]})
        for i in range(config.n_layers):
            p = f"blocks.{i}."
            dst[p + "qkv.weight"] = src[p + "attn.qkv.weight"][qk_rows]
            dst[p + "qkv.bias"] = src[p + "attn.qkv.bias"][qk_rows]
            for ours, theirs in (("proj", "attn.out"), ("up", "ffn.up"), ("down", "ffn.down"),
                                 ("norm1", "norm1"), ("norm2", "norm2")):
                for t in ("weight", "bias"):
                    dst[f"{p}{ours}.{t}"] = src[f"{p}{theirs}.{t}"]
        ref.load_state_dict(dst)
        return ref


# --- minitf with the proposed fast path (a prototype, applied per instance) ---------------------

def _fused_layer_norm(self, x):
    """minitf.LayerNorm's formula in one fused kernel (F.layer_norm) instead of eight small ops."""
    return F.layer_norm(x, self.weight.shape, self.weight, self.bias, self.eps)


def _rope_tables(model, T):
    """Each layer's (cos, sin) for length T, computed once per length and reused.

    Holds exactly what rope_angles returns; keyed by the inv_freq tensor's version so an in-place
    change of the frequencies (growth) is seen.
    """
    cache = model.__dict__.setdefault("_rope_cache", {})
    tables = []
    for block in model.blocks:
        f = block.attn.inv_freq
        key = (id(f), f._version, T)
        if key not in cache:
            cos, sin = minitf.rope_angles(f, T)
            cache[key] = (cos, sin, torch.complex(cos, sin))
        tables.append(cache[key])
    return tables


def _fast_transformer_forward(self, ids, return_attention: bool = False):
    """Transformer.forward with the RoPE tables from the cache (no per-layer recomputation)."""
    B, T = ids.shape
    h = self.drop(self.embed(ids))  # (B, T, C)
    all_weights = []
    for block, rope in zip(self.blocks, _rope_tables(self, T)):
        h, weights = block(h, *rope, need_weights=return_attention)
        all_weights.append(weights)
    if self.final_norm is not None:
        h = self.final_norm(h)
    logits = self.head(h)
    return (logits, all_weights) if return_attention else logits


def _rope_contiguous(x, cos, sin, cis):
    """minitf.apply_rope on a contiguous copy: bit-identical, but the strided pair slices of a
    contiguous tensor vectorise, those of the transposed qkv view do not."""
    return minitf.apply_rope(x.contiguous(), cos, sin)


def _rope_complex(x, cos, sin, cis):
    """The same rotation as complex multiplication: pair (a, b) is a + ib, times e^{imθ}."""
    z = torch.view_as_complex(x.unflatten(-1, (-1, 2)).contiguous())  # (B, H, T, hd/2) complex
    return torch.view_as_real(z * cis).flatten(-2)


def _make_fast_attention_forward(rope_fn):
    def forward(self, x, rope_cos=None, rope_sin=None, rope_cis=None, need_weights: bool = False):
        B, T, _ = x.shape
        q, k, v = self.qkv(x).split(self.n_heads * self.head_dim, dim=-1)  # (B, T, H·hd) each
        q, k, v = (t.view(B, T, self.n_heads, self.head_dim).transpose(1, 2) for t in (q, k, v))
        q, k = rope_fn(q, rope_cos, rope_sin, rope_cis), rope_fn(k, rope_cos, rope_sin, rope_cis)
        if need_weights:
            y, weights = minitf.attention(q, k, v, minitf.causal_mask(T) if self.causal else None)
        else:
            y, weights = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal), None
        y = y.transpose(1, 2).reshape(B, T, self.n_heads * self.head_dim)
        return self.out(y), weights
    return forward


def _block_forward(self, h, rope_cos, rope_sin, rope_cis, need_weights: bool = False):
    """minitf.Block.forward, passing the complex table on to attention."""
    rope = (rope_cos, rope_sin, rope_cis)
    if self.pre_norm:
        a, weights = self.attn(self.norm1(h), *rope, need_weights)
        h = h + self.drop(a)
        h = h + self.drop(self.ffn(self.norm2(h)))
    else:
        a, weights = self.attn(h, *rope, need_weights)
        h = self.norm1(h + self.drop(a))
        h = self.norm2(h + self.drop(self.ffn(h)))
    return h, weights


ROPE_VARIANTS = {"contiguous": _rope_contiguous, "complex": _rope_complex}


def minitf_fast_path(model: Transformer, fused_norm: bool = True, rope: str = "complex") -> Transformer:
    """Patch one minitf model in place with the proposed changes (nothing global is touched).

    fused_norm: LayerNorm through F.layer_norm. rope: "contiguous" (bit-identical to minitf) or
    "complex"; either way the cos/sin tables are cached per length instead of recomputed per layer.
    """
    c = model.config
    if c.positions.positional != "rope" or c.positions.rope_on_v or c.norm != "layer":
        raise ValueError("the fast-path prototype covers RoPE on Q/K with LayerNorm only")
    if fused_norm:
        for m in model.modules():
            if isinstance(m, minitf.LayerNorm):
                m.forward = types.MethodType(_fused_layer_norm, m)
    attn_forward = _make_fast_attention_forward(ROPE_VARIANTS[rope])
    for block in model.blocks:
        block.forward = types.MethodType(_block_forward, block)
        block.attn.forward = types.MethodType(attn_forward, block.attn)
    model.forward = types.MethodType(_fast_transformer_forward, model)
    return model
