"""Notebook 03: the causal mask, a stable softmax, attention and multi-head attention's forward."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ...core.attention import MultiHeadAttention, attention, causal_mask
from ...core.config import Config
from ...core.rope import apply_rope, rope_angles
from ..cases import (merge_heads as _merge_heads, named_slip as _named_slip, random_case as _rand,
                     split_heads as _split_heads)
from ..declaration import Exercise, Piece, on_face, refused


def _attention_cases():
    cases = []
    for seed, (B, H, T, hd) in enumerate([(1, 1, 3, 4), (2, 2, 5, 2), (1, 2, 6, 8)]):
        q, k, v = _rand(3, B, H, T, hd, seed=seed).unbind(0)
        cases.append((q, k, v, causal_mask(T)))
    q, k, v = _rand(3, 1, 1, 4, 2, seed=9).unbind(0)
    cases.append((q, k, v, None))  # no mask: every position sees every other
    return cases


def _softmax_cases():
    """Ordinary and masked scores, then rows whose e^x overflows (x + 100: in float32; x + 1000: in
    float64 too) and rows far apart (x, x + 1000, x − 1000: one maximum for all of them fails)."""
    x = _rand(3, 6, seed=3, low=-3, high=3)
    masked = _rand(1, 2, 4, 4, seed=1, low=-3, high=3).masked_fill(causal_mask(4), float("-inf"))
    return [(_rand(2, 5, seed=0, low=-3, high=3),), (masked,), (_rand(3, 6, seed=2) + 100,),
            (_rand(2, 6, seed=4) + 1000,), (torch.stack([x[0], x[1] + 1000, x[2] - 1000]),)]


def _softmax_slips(x):
    """NaN or inf where the softmax is finite: e^x overflowed (or every e^x of a row underflowed),
    because no maximum was subtracted, or one maximum for the whole tensor was."""
    def overflow(got, expected):
        if not (isinstance(got, torch.Tensor) and got.shape == expected.shape):
            return None
        bad = ~torch.isfinite(got).all(-1) & torch.isfinite(expected).all(-1)  # rows that broke
        if not bad.any():
            return None
        row_max = x.amax(-1)
        if torch.isfinite(got[row_max == row_max.max()]).all() and \
                (row_max.max() - row_max[bad].min()) > 80:
            return ("yours subtracts one maximum for the whole tensor: a row far below it (here one "
                    f"{float(row_max.max() - row_max[bad].min()):.0f} lower) has every e^(x − max) "
                    "round to 0, and 0/0 is NaN. Subtract each row's own maximum, "
                    "x.amax(-1, keepdim=True)")
        return ("yours overflows: e^x is inf above x ≈ 88.7 in float32 (709.8 in float64), and "
                "inf/inf is NaN (a row of large negative scores gives 0/0 the same way). Subtract "
                "the row's maximum first: softmax(x − max) is the same softmax, and its largest "
                "e^(x − max) is e^0 = 1")
    overflow.__name__ = "_softmax_overflow"
    return (overflow,)


def _mha_cases():
    """Two modules (heads of 4 and of 2, H ≠ T so a wrong axis cannot line up by chance) and their
    RoPE angles; the module's own weights are the case."""
    cases = []
    for seed, (C, H, B, T) in enumerate([(8, 2, 2, 5), (8, 4, 1, 3)]):
        torch.manual_seed(seed)
        attn = MultiHeadAttention(Config(d_model=C, n_heads=H, dropout=0.0)).double().requires_grad_(False)
        cos, sin = rope_angles(attn.inv_freq, T)
        cases.append((attn, _rand(B, T, C, seed=seed + 10), cos, sin))
    return cases


def _mha_reference(attn, x, cos, sin):
    """Multi-head attention from the module's parts (qkv, rotate, out) around minitf's attention and
    mask, never the module's forward: where yours is not written it stands in, and then the module's
    forward (08's MyAttention, or a model built from your pieces) calls this. A model built from your
    pieces binds `attention` and `causal_mask` here to yours."""
    B, T, _ = x.shape
    H, hd = attn.n_heads, attn.head_dim
    q, k, v = (t.view(B, T, H, hd).transpose(1, 2) for t in attn.qkv(x).split(H * hd, dim=-1))
    q, k = attn.rotate(q, cos, sin), attn.rotate(k, cos, sin)
    y, weights = attention(q, k, v, causal_mask(T).to(x.device))
    return attn.out(y.transpose(1, 2).reshape(B, T, H * hd)), weights


def _causal_mask_reference(T):
    """minitf's mask, with the exercise's signature."""
    return causal_mask(T)


def _mha_slips(attn, x, cos, sin):
    """The module's forward with one step wrong, computed with minitf's own pieces."""
    B, T, _ = x.shape
    H, hd = attn.n_heads, attn.head_dim

    def forward(split=lambda t: _split_heads(t, H), merge=_merge_heads, out=True, mask=True,
                swap_kv=False, rotate=True):
        with torch.no_grad():
            q, k, v = (split(t) for t in attn.qkv(x).split(H * hd, dim=-1))
            if swap_kv:
                k, v = v, k
            if rotate:
                q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
            y, w = attention(q, k, v, causal_mask(T) if mask else None)
            y = merge(y)
            return (attn.out(y) if out else y), w

    return (
        _named_slip("_mha_merge", forward(merge=lambda y: y.reshape(B, T, H * hd)),
                    "yours merges the heads without moving the head dimension back: y is (B, H, T, "
                    "hd), so y.reshape(B, T, H·hd) mixes positions and heads. y.transpose(1, 2) "
                    "first, then reshape"),
        _named_slip("_mha_split", forward(split=lambda t: t.reshape(B, H, T, hd)),
                    "yours splits the heads with a view to (B, H, T, hd) straight from (B, T, H·hd): "
                    "that cuts the positions, not each position's vector. view(B, T, H, hd), then "
                    "transpose(1, 2)"),
        _named_slip("_mha_no_out", forward(out=False),
                    "yours leaves out the output projection: the merged heads go through attn.out "
                    "(W_O), which mixes them"),
        _named_slip("_mha_no_mask", forward(mask=False),
                    "yours attends without the causal mask: every position sees its future. Pass "
                    "my_causal_mask(T) to your attention"),
        _named_slip("_mha_kv_swapped", forward(swap_kv=True),
                    "yours swaps K and V: attn.qkv(x) holds [q, k, v] in this order along the last "
                    "dimension"),
        _named_slip("_mha_no_rope", forward(rotate=False),
                    "yours leaves out RoPE: q and k are rotated (attn.rotate(q, cos, sin)) after the "
                    "split and before the scores; v is not"))


def my_causal_mask(T):
    i = torch.arange(T)[:, None]  # query positions, as a column
    j = torch.arange(T)[None, :]  # key positions, as a row
    return j > i                  # True where the key is in the query's future


def my_softmax(x):
    z = x - x.amax(-1, keepdim=True)      # the row's largest entry becomes 0: e^z ≤ 1, no overflow
    e = z.exp()                           # a masked −inf entry gives e^−inf = 0
    return e / e.sum(-1, keepdim=True)    # each row sums to 1


def my_attention(q, k, v, mask):
    d = q.size(-1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)  # (B, H, T, T)
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))  # the future gets weight e^-inf = 0
    weights = my_softmax(scores)                         # yours, over the keys: each row sums to 1
    return weights @ v, weights


def my_multi_head_attention(attn, x, cos, sin):
    B, T, C = x.shape
    H, hd = attn.n_heads, attn.head_dim
    q, k, v = attn.qkv(x).split(H * hd, dim=-1)                        # (B, T, H·hd) each
    q, k, v = (t.view(B, T, H, hd).transpose(1, 2) for t in (q, k, v))  # (B, H, T, hd): one per head
    q, k = attn.rotate(q, cos, sin), attn.rotate(k, cos, sin)          # RoPE on each head's q and k
    y, weights = my_attention(q, k, v, my_causal_mask(T).to(x.device))  # (B, H, T, hd), (B, H, T, T)
    y = y.transpose(1, 2).reshape(B, T, H * hd)                        # heads side by side again
    return attn.out(y), weights                                        # W_O mixes the heads


EXERCISES = [
    Exercise(name="causal_mask", notebook="03", teaches="the causal mask: position i may look at j ≤ i only",
             difficulty=1, minutes=5,
             solution=my_causal_mask, reference=_causal_mask_reference, cases=lambda: [(4,), (1,), (2,), (8,)],
             hint="True marks what is hidden: key j is hidden from query i when j > i; the diagonal "
             "(a position looking at itself) is allowed",
             options={"hints_by_diagnosis": {
                 "mask_inverted": "True means 'may NOT look': mark the future (j > i), not the past",
                 "mask_diagonal": "compare with >, not >=: position i may look at itself",
                 "transpose": "rows are queries i, columns are keys j: hide j > i (above the diagonal)",
                 "dtype": "build it from a comparison (j > i gives bools) or pass dtype=torch.bool"}},
             library=refused(on_face(causal_mask),
                             (nn.Transformer.generate_square_subsequent_mask,
                              "nn.Transformer.generate_square_subsequent_mask")),
             own_work="torch.arange and a comparison, or torch.triu / torch.tril with the right "
                      "diagonal, are fine (choosing what to hide is the exercise): minitf.causal_mask "
                      "is the mask itself",
             piece=Piece(fills="model", order=2,
                         call='causal_mask(T) → (T, T) bool, True where i may not look at j'),
             optional=True),
    Exercise(name="softmax", notebook="03",
             teaches="a softmax that does not overflow: subtract each row's maximum first",
             difficulty=2, minutes=10, solution=my_softmax, reference=lambda x: torch.softmax(x, dim=-1),
             cases=_softmax_cases,
             hint="over the last dimension: e^(x − max) / Σ e^(x − max), with max = x.amax(-1, "
             "keepdim=True) the row's largest entry; a −inf entry (masked) gets weight 0",
             options={"diagnoses": _softmax_slips,
                      "case_names": ["ordinary scores", "masked scores (−inf), as attention gives",
                                     "x + 100", "x + 1000", "rows at x, x + 1000 and x − 1000"],
                      "hints_by_diagnosis": {
                 "_softmax_overflow": "subtract the row's maximum first: z = x - x.amax(-1, "
                                      "keepdim=True), then z.exp() / z.exp().sum(-1, keepdim=True)",
                 "softmax_over_wrong_dim": "each row is one softmax: the max and the sum over "
                                           "dim=-1, with keepdim=True",
                 "rows_not_summing_to_1": "divide by the sum of the same row's e^(x − max): "
                                          ".sum(-1, keepdim=True)",
                 "raised": "x.max(-1, keepdim=True) returns (values, indices): take .values, or "
                           "use x.amax(-1, keepdim=True); keepdim=True lines the row's maximum up "
                           "with its entries"}},
             library=refused(torch.softmax, F.softmax, torch.Tensor.softmax, torch.log_softmax,
                             F.log_softmax, torch.Tensor.log_softmax,
                             (torch.special.softmax, "torch.special.softmax"), nn.Softmax.forward),
             own_work=".amax (or .max(...).values), - , .exp(), .sum and / are fine, and so is "
                      "torch.logsumexp, the stable log of the sum (the stable form is the exercise): "
                      "torch.softmax, F.softmax and .softmax() are the softmax itself, log_softmax "
                      "its logarithm",
             piece=Piece(fills="model", order=3,
                         call='softmax(x) over the last dimension, stable (your attention calls it)'),
             optional=True),
    Exercise(name="attention", notebook="03",
             teaches="scaled dot-product attention, with the mask, returning its weights",
             difficulty=3, minutes=20, solution=my_attention, reference=attention, cases=_attention_cases,
             hint="scores = q·kᵀ/√head_dim, the entries the mask marks True set to −inf before a softmax "
             "over the keys (the last dimension); mask may be None: then nothing is hidden; "
             "output = weights @ v", result_names=("output", "weights"),
             options={"factors": lambda q, k, v, mask: {"√head_dim": q.size(-1) ** 0.5,
                                                        "1/√head_dim": q.size(-1) ** -0.5},
                      "hints_by_diagnosis": {
                 "scores_scaled": "divide the scores q·kᵀ by √head_dim (q.size(-1) ** 0.5), once",
                 "softmax_over_wrong_dim": "each query's weights are one row: softmax over dim=-1",
                 "rows_not_summing_to_1": "mask with −inf BEFORE the softmax, so the softmax itself "
                                          "makes each row sum to 1",
                 "future_leak": "use the mask: scores.masked_fill(mask, float('-inf'))",
                 "results_swapped": "return (output, weights), in this order",
                 "not_finite": "a row whose every entry is hidden gives NaN (softmax of all −inf): use "
                               "the mask you are given; position i always sees itself"}},
             library=refused(on_face(attention), F.scaled_dot_product_attention,
                             F.multi_head_attention_forward, nn.MultiheadAttention.forward,
                             on_face(MultiHeadAttention.attend)),
             own_work="@, .transpose, masked_fill and your my_softmax (or torch.softmax, "
                      "F.softmax) are fine (putting them together is the exercise): minitf.attention "
                      "and F.scaled_dot_product_attention are attention itself",
             piece=Piece(fills="model", order=4, call='attention(q, k, v, mask) → (output, weights)')),
    Exercise(name="multi_head_attention", notebook="03",
             teaches="multi-head attention's forward: project, split into "
             "heads, RoPE, attention, merge, project", difficulty=3, minutes=20,
             solution=my_multi_head_attention, reference=_mha_reference, cases=_mha_cases,
             hint="q, k, v = attn.qkv(x).split(H·hd, dim=-1), each .view(B, T, H, hd).transpose(1, 2); "
             "rotate q and k (attn.rotate(t, cos, sin)); y, weights = my_attention(q, k, v, "
             "my_causal_mask(T)); y.transpose(1, 2).reshape(B, T, H·hd); return attn.out(y), weights",
             result_names=("output", "weights"),
             options={"diagnoses": _mha_slips, "hints_by_diagnosis": {
                 "_mha_merge": "y.transpose(1, 2).reshape(B, T, H * hd): heads back beside each other",
                 "_mha_split": "t.view(B, T, H, hd).transpose(1, 2) for each of q, k and v",
                 "_mha_no_out": "return attn.out(y), weights",
                 "_mha_no_mask": "my_attention(q, k, v, my_causal_mask(T).to(x.device))",
                 "_mha_kv_swapped": "q, k, v = attn.qkv(x).split(H * hd, dim=-1), in this order",
                 "_mha_no_rope": "q, k = attn.rotate(q, cos, sin), attn.rotate(k, cos, sin), after "
                                 "the split",
                 "raised": "split first, (B, T, H·hd) → view(B, T, H, hd) → transpose(1, 2) → "
                           "(B, H, T, hd): RoPE and attention work on each head's (T, hd)"}},
             library=refused((MultiHeadAttention.forward, "minitf.MultiHeadAttention (its forward)"),
                             F.multi_head_attention_forward, nn.MultiheadAttention.forward,
                             on_face(attention)),
             own_work="attn.qkv, attn.out, attn.rotate, .view, .transpose, .reshape and your "
                      "my_attention and my_causal_mask are fine (the heads are the exercise): the "
                      "module's own forward is the answer itself, and the heads go around your "
                      "attention, not minitf.attention",
             piece=Piece(fills="model", order=5,
                         call='multi_head_attention(attn, x, cos, sin) → (output, weights): the projections and heads around your attention'),
             optional=True),
]
