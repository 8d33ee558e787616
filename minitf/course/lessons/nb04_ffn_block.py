"""Notebook 04: LayerNorm, RMSNorm, the FFN, SwiGLU and the block."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ...core.config import Config
from ...core.ffn import FeedForward
from ...core.model import Block
from ...core.norms import LayerNorm, RMSNorm
from ...core.rope import rope_angles
from ..cases import first_slip as _first_slip, named_slip as _named_slip, random_case as _rand
from ..declaration import Exercise, Piece, on_face, refused


def _norm_slips(x, weight, bias, eps):
    """LayerNorm's γ and β left out, swapped or applied in the wrong order."""
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    x_hat = (x - mean) / torch.sqrt(var + eps)
    slips = [(x_hat, "yours is the normalised x̂ without γ and β: LayerNorm ends with × weight (γ) "
                     "+ bias (β), the two numbers per feature it learns"),
             (x_hat * weight, "yours multiplies by γ (weight) but leaves β (bias) out: add the bias at "
                              "the end"),
             (x_hat + bias, "yours adds β (bias) but leaves γ (weight) out: multiply by the weight before "
                            "adding the bias"),
             (x_hat * bias + weight, "yours swaps γ and β: multiply by weight (γ), then add bias (β)"),
             ((x_hat + bias) * weight, "yours adds β before multiplying by γ: it is x̂ · γ + β, in that "
                                       "order")]
    C = x.size(-1)
    unbiased = var * C / (C - 1)  # x.var(-1) divides by C − 1
    return (_first_slip(slips, "_gamma_beta"),
            _named_slip("_unbiased_variance", [(x - mean) / torch.sqrt(unbiased + eps) * weight + bias,
                                               (x - mean) / (torch.sqrt(unbiased) + eps) * weight + bias],
                        f"yours divides the squared deviations by C − 1 = {C - 1} (x.var(-1) does, "
                        f"unbiased by default): LayerNorm's variance divides by C = {C}, "
                        "x.var(-1, unbiased=False) or ((x − mean)²).mean(-1)"),
            _named_slip("_eps_outside_sqrt", [(x - mean) / (torch.sqrt(var) + eps) * weight + bias],
                        "yours adds eps after the square root, sqrt(var) + eps: it goes inside, "
                        "sqrt(var + eps)"))


def _rms_slips(x, weight, eps):
    """RMSNorm's γ left out, or eps added after the square root."""
    mean_square = (x ** 2).mean(-1, keepdim=True)
    return (_named_slip("_gamma_beta", [x / torch.sqrt(mean_square + eps)],
                        "yours is x / rms without γ: multiply by weight (γ) at the end"),
            _named_slip("_eps_outside_sqrt", [x / (torch.sqrt(mean_square) + eps) * weight],
                        "yours adds eps after the square root, sqrt(mean(x²)) + eps: it goes "
                        "inside, sqrt(mean(x²) + eps)"))


def _ffn_slips(x, w_up, b_up, w_down, b_down):
    """A bias left out, or the ReLU in the wrong place."""
    up = lambda bias=True: x @ w_up.T + (b_up if bias else 0)
    down = lambda h, bias=True: h @ w_down.T + (b_down if bias else 0)
    bias = _first_slip([
        (down(torch.relu(up(False)), False), "yours leaves out both biases: x @ w_up.T + b_up, and "
                                             "hidden @ w_down.T + b_down"),
        (down(torch.relu(up(False))), "yours leaves out b_up, the first map's bias: x @ w_up.T + b_up, "
                                      "before the ReLU"),
        (down(torch.relu(up()), False), "yours leaves out b_down, the second map's bias: "
                                        "hidden @ w_down.T + b_down"),
        (down(torch.relu(x @ w_up.T) + b_up), "yours adds b_up after the ReLU: it belongs to the first "
                                              "map, inside the ReLU"),
    ], "_ffn_bias")
    relu = _first_slip([
        (torch.relu(down(up())), "yours puts the ReLU after the second map: it goes between the two"),
        (torch.relu(down(torch.relu(up()))), "yours has a second ReLU after the second map: only one, "
                                             "between the two"),
        (down(up()), "yours has no ReLU: without it the two maps are one linear map"),
    ], "_relu_placement")
    return (bias, relu)


def _norm_cases(with_bias: bool):
    """Three cases with the usual eps = 1e-5, and one with small inputs and eps = 0.1, where eps
    outside the square root (sqrt(var) + eps) is not lost in the tolerance."""
    cases = []
    for seed, (shape, scale, eps) in enumerate([((1, 4), 1, 1e-5), ((2, 3, 4), 1, 1e-5),
                                                ((5, 8), 1, 1e-5), ((2, 6), 0.1, 0.1)]):
        x = _rand(*shape, seed=seed, low=-scale, high=3 * scale)
        weight = _rand(shape[-1], seed=seed + 10, low=0.5, high=1.5)
        bias = _rand(shape[-1], seed=seed + 20, low=-0.5, high=0.5)
        cases.append((x, weight, bias, eps) if with_bias else (x, weight, eps))
    return cases


def _ffn_cases():
    cases = []
    for seed, (C, Fd) in enumerate([(4, 8), (3, 5)]):
        x = _rand(2, 3, C, seed=seed)
        cases.append((x, _rand(Fd, C, seed=seed + 1), _rand(Fd, seed=seed + 2),
                      _rand(C, Fd, seed=seed + 3), _rand(C, seed=seed + 4)))
    return cases


def _swiglu_cases():
    """Two sizes, no biases (the modern block has none), weights of both signs."""
    cases = []
    for seed, (C, Fd) in enumerate([(4, 6), (3, 8)]):
        cases.append((_rand(2, 3, C, seed=seed, low=-2, high=2), _rand(Fd, C, seed=seed + 1),
                      _rand(Fd, C, seed=seed + 2), _rand(C, Fd, seed=seed + 3)))
    return cases


def _swiglu_reference(x, w_up, w_gate, w_down):
    """minitf's gated FeedForward (Config(ffn_gate=True, activation="silu", bias=False)) with these weights."""
    C, d_ff = x.size(-1), w_up.size(0)
    ffn = FeedForward(Config(d_model=C, n_heads=1, d_ff=d_ff, ffn_gate=True, activation="silu",
                             bias=False, positional="none")).to(x.dtype)
    ffn.load_state_dict({"up.weight": w_up, "gate.weight": w_gate, "down.weight": w_down})
    with torch.no_grad():
        return ffn(x)


def _swiglu_slips(x, w_up, w_gate, w_down):
    up, gate = x @ w_up.T, x @ w_gate.T
    down = lambda h: h @ w_down.T
    swapped = _named_slip("_swiglu_swapped", [down(F.silu(gate) * up)], (
        "yours puts the SiLU on the gate branch and leaves up linear: here SiLU goes on up "
        "(x @ w_up.T) and the gate (x @ w_gate.T) multiplies it as it is. (LLaMA's code names the "
        "two the other way round, gate_proj activated: the same function with the names swapped)"))
    no_gate = _first_slip([
        (down(F.silu(up)), "yours leaves out the gate: down(silu(up x)) is the plain two-matrix FFN "
                           "with SiLU; SwiGLU multiplies silu(up x) by gate x, element by element"),
        (down(F.silu(gate)), "yours leaves out up and applies SiLU to the gate alone: SwiGLU is "
                             "silu(x @ w_up.T) * (x @ w_gate.T)"),
        (down(up * gate), "yours has no SiLU: up x ⊙ gate x alone is a bilinear map; SwiGLU is "
                          "silu(up x) ⊙ gate x")], "_swiglu_no_gate")
    activation = _first_slip([
        (down(torch.relu(up) * gate), "yours uses ReLU where SwiGLU uses SiLU, x·σ(x) (F.silu)"),
        (down(torch.sigmoid(up) * gate), "yours uses the sigmoid σ(x) (that is GLU); SiLU is x·σ(x), "
                                         "F.silu"),
        (down(F.silu(up * gate)), "yours applies SiLU after multiplying: SiLU goes on up x alone, "
                                  "then the product with gate x")], "_swiglu_activation")
    return (swapped, no_gate, activation)


def _block_cases():
    """A post-norm and a pre-norm block (H ≠ T), their RoPE angles and a stream h."""
    cases = []
    for seed, (position, B, T) in enumerate([("post", 2, 5), ("pre", 1, 3)]):
        torch.manual_seed(seed)
        block = Block(Config(d_model=8, n_heads=2, d_ff=16, norm_position=position, dropout=0.0)).double()
        with torch.no_grad():  # norms away from γ = 1, β = 0, so that a norm in the wrong place shows
            for i, norm in enumerate((block.norm1, block.norm2)):
                norm.weight.copy_(_rand(8, seed=10 * seed + i + 20, low=0.5, high=1.5))
                norm.bias.copy_(_rand(8, seed=10 * seed + i + 30, low=-0.5, high=0.5))
        cos, sin = rope_angles(block.attn.inv_freq, T)
        block.requires_grad_(False)  # numbers to compare, not a graph: the learner's result has none
        cases.append((block, _rand(B, T, 8, seed=seed + 40, low=-2, high=2), cos, sin))
    return cases


def _block_reference(block, h, cos, sin):
    with torch.no_grad():
        return block(h, cos, sin, need_weights=True)


def _block_slips(block, h, cos, sin):
    """The block with one slip, in both layouts, computed with its own modules."""
    attn = lambda x: block.attn(x, cos, sin, need_weights=True)
    n1, n2, ffn = block.norm1, block.norm2, block.ffn

    def pre(residual=True, second=n2, ffn_input=None, ffn_residual=True):
        a, w = attn(n1(h))
        h1 = h + a if residual else a
        f = ffn(second(h if ffn_input == "attention's" else h1))
        return (h1 + f if residual and ffn_residual else f), w

    def post(residual=True, second=n2, ffn_input=None, double=False, ffn_residual=True):
        a, w = attn(n1(h) if double else h)
        h1 = n1(h + a if residual else a)
        f = ffn(h if ffn_input == "attention's" else h1)
        return second(h1 + f if residual and ffn_residual else f), w

    def slip(name, result, words, on_weights=True):  # on_weights=False: named by h alone (two
        # slips that differ only in h would otherwise share the same wrong weights)
        return _named_slip(name, result if on_weights else result[:1], words)

    this, other = (pre, post) if block.pre_norm else (post, pre)
    layout = "pre-norm" if block.pre_norm else "post-norm"
    with torch.no_grad():
        return (
            slip("_block_no_residual", this(residual=False),
                 "yours has no residual connection: each sub-layer adds to the stream, h + f(…), "
                 "it does not replace it"),
            slip("_block_no_residual", this(ffn_residual=False),
                 "yours adds attention to the stream but not the FFN: its output replaces the stream, "
                 + ("h = ffn(norm2(h)) where it is h = h + ffn(norm2(h))" if block.pre_norm
                    else "norm2(ffn(h)) where it is norm2(h + ffn(h))")
                 + ". Each sub-layer has its residual"),
            slip("_block_norm_side", other(),
                 f"yours puts the norms where the other layout has them: this block is {layout} "
                 f"(block.pre_norm is {block.pre_norm}): "
                 + ("h + f(norm(h)), the stream itself never normalised" if block.pre_norm
                    else "norm(h + f(h)), the sum normalised"), on_weights=False),
            slip("_block_shared_norm", this(second=n1),
                 "yours uses norm1 for both sub-layers: each has its own, norm1 with attention and "
                 "norm2 with the FFN (one γ and β cannot serve two jobs)"),
            slip("_block_ffn_input", this(ffn_input="attention's"),
                 "yours feeds the FFN the block's input h: it reads the stream after attention's "
                 "residual addition"),
            slip("_block_double_norm", post(double=True),
                 "yours normalises before attention and again after the addition, "
                 "norm1(h + attn(norm1(h))): that is neither layout (the seed documents' bug)",
                 on_weights=False))


def my_layer_norm(x, weight, bias, eps):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)  # biased: divide by C, not C − 1
    return (x - mean) / torch.sqrt(var + eps) * weight + bias


def my_rms_norm(x, weight, eps):
    rms = torch.sqrt((x ** 2).mean(-1, keepdim=True) + eps)
    return x / rms * weight


def my_feed_forward(x, w_up, b_up, w_down, b_down):
    hidden = torch.relu(x @ w_up.T + b_up)  # (B, T, d_ff); nn.Linear stores W as (out, in)
    return hidden @ w_down.T + b_down        # (B, T, C)


def my_swiglu(x, w_up, w_gate, w_down):
    import torch.nn.functional as F
    hidden = F.silu(x @ w_up.T) * (x @ w_gate.T)  # (..., d_ff): SiLU on up, times the linear gate
    return hidden @ w_down.T                       # back to (..., C); the modern block has no biases


def my_block(block, h, cos, sin):
    if block.pre_norm:  # h + f(norm(h)): the stream itself is never normalised
        a, weights = block.attn(block.norm1(h), cos, sin, need_weights=True)
        h = h + a
        h = h + block.ffn(block.norm2(h))      # the FFN reads the stream after attention's addition
    else:               # post-norm: norm(h + f(h)), each sub-layer with its own norm
        a, weights = block.attn(h, cos, sin, need_weights=True)
        h = block.norm1(h + a)
        h = block.norm2(h + block.ffn(h))
    return h, weights


EXERCISES = [
    Exercise(name="layer_norm", notebook="04",
             teaches="LayerNorm: centre, scale to unit variance, then γ and β", difficulty=2, minutes=10,
             solution=my_layer_norm, reference=lambda x, w, b, eps: F.layer_norm(x, w.shape, w, b, eps),
             cases=lambda: _norm_cases(True),
             hint="mean and variance over the last dimension with keepdim=True; the variance is biased "
             "(divide by C, like unbiased=False); eps goes inside the square root",
             options={"diagnoses": _norm_slips, "hints_by_diagnosis": {
                 "raised": "x.mean(-1) drops the last dimension; keepdim=True keeps it, so (x − mean) "
                           "lines up position by position",
                 "_gamma_beta": "γ and β come last, in this order: (x − mean) / sqrt(var + eps) "
                                "* weight + bias",
                 "_eps_outside_sqrt": "torch.sqrt(var + eps): eps keeps the square root away from 0",
                 "_unbiased_variance": "var = ((x - mean) ** 2).mean(-1, keepdim=True), or "
                                       "x.var(-1, unbiased=False, keepdim=True): divide by C"}},
             library=refused(F.layer_norm, torch.layer_norm, torch.native_layer_norm,
                             nn.LayerNorm.forward, on_face(LayerNorm.forward),
                             on_face(LayerNorm.formula)),
             own_work="x.mean, x.var(unbiased=False), torch.sqrt and torch.rsqrt are fine (the "
                      "formula is the exercise): F.layer_norm and nn.LayerNorm are LayerNorm itself",
             piece=Piece(fills="model", order=6, call='layer_norm(x, weight, bias, eps)'),
             optional=True),
    Exercise(name="rms_norm", notebook="04", teaches="RMSNorm: LayerNorm without the centring and without β",
             difficulty=1, minutes=5,
             solution=my_rms_norm, reference=lambda x, w, eps: F.rms_norm(x, w.shape, w, eps),
             cases=lambda: _norm_cases(False),
             hint="divide by sqrt(mean(x²) + eps) over the last dimension (keepdim=True); no mean is "
             "subtracted",
             options={"diagnoses": _rms_slips, "hints_by_diagnosis": {
                 "_gamma_beta": "RMSNorm ends with × weight (γ): x / sqrt(mean(x²) + eps) * weight",
                 "_eps_outside_sqrt": "torch.sqrt((x ** 2).mean(-1, keepdim=True) + eps): eps inside "
                                      "the square root"}},
             library=refused(F.rms_norm, torch.rms_norm, nn.RMSNorm.forward,
                             on_face(RMSNorm.forward)),
             own_work="x ** 2, .mean, torch.sqrt and torch.rsqrt are fine (the formula is the "
                      "exercise): F.rms_norm and nn.RMSNorm are RMSNorm itself",
             piece=Piece(fills="model", order=7, call='rms_norm(x, weight, eps)'),
             optional=True),
    Exercise(name="feed_forward", notebook="04",
             teaches="the FFN: two linear maps with a ReLU between, per position",
             difficulty=1, minutes=5, solution=my_feed_forward,
             reference=lambda x, wu, bu, wd, bd: F.linear(F.relu(F.linear(x, wu, bu)), wd, bd),
             cases=_ffn_cases,
             hint="nn.Linear stores its weight as (out, in): x @ W.T + b; ReLU between the two layers, "
             "not after the second",
             options={"diagnoses": _ffn_slips, "hints_by_diagnosis": {
                 "_ffn_bias": "each map has its own bias: x @ w_up.T + b_up before the ReLU, "
                              "hidden @ w_down.T + b_down after it",
                 "_relu_placement": "one ReLU, between the two maps: relu(x @ w_up.T + b_up), then "
                                    "the second map"}},
             library=refused(on_face(FeedForward.forward)),
             own_work="F.linear (or x @ W.T + b) and torch.relu are fine (the FFN's shape, two maps "
                      "with a ReLU between, is the exercise): minitf.FeedForward is the FFN itself",
             piece=Piece(fills="model", order=8, call='feed_forward(x, w_up, b_up, w_down, b_down), ReLU')),
    Exercise(name="swiglu", notebook="04",
             teaches="SwiGLU: the FFN's hidden units gated by a second projection of the input",
             difficulty=2, minutes=10, solution=my_swiglu, reference=_swiglu_reference, cases=_swiglu_cases,
             hint="three maps, no biases: hidden = silu(x @ w_up.T) * (x @ w_gate.T), element by element, "
             "(..., d_ff); then hidden @ w_down.T",
             options={"diagnoses": _swiglu_slips, "hints_by_diagnosis": {
                 "_swiglu_swapped": "F.silu(x @ w_up.T) * (x @ w_gate.T): SiLU on up, the gate linear",
                 "_swiglu_no_gate": "the hidden units are silu(x @ w_up.T) times (x @ w_gate.T)",
                 "_swiglu_activation": "F.silu(x @ w_up.T) (SiLU = x·σ(x)), then times the gate",
                 "raised": "nn.Linear stores W as (out, in): x @ w.T; up and gate are (d_ff, C), "
                           "down is (C, d_ff)"}},
             library=refused(on_face(FeedForward.forward)),
             own_work="F.silu (or x * torch.sigmoid(x)), @ and F.linear are fine (the gate is the "
                      "exercise): minitf.FeedForward with ffn_gate is SwiGLU itself",
             piece=Piece(fills="model", order=9,
                         call='swiglu(x, w_up, w_gate, w_down), the gated FFN (used when config.modern_block.ffn_gate)'),
             optional=True),
    Exercise(name="block", notebook="04",
             teaches="the block: attention and FFN, each with its residual and its norm, "
             "pre-norm or post-norm", difficulty=3, minutes=15, solution=my_block, reference=_block_reference,
             cases=_block_cases,
             hint="pre-norm: a, weights = block.attn(block.norm1(h), cos, sin, need_weights=True); "
             "h = h + a; h = h + block.ffn(block.norm2(h)). Post-norm: a, weights = block.attn(h, …); "
             "h = block.norm1(h + a); h = block.norm2(h + block.ffn(h)). Return (h, weights)",
             result_names=("h", "weights"),
             options={"diagnoses": _block_slips, "hints_by_diagnosis": {
                 "_block_no_residual": "h = h + a, then h = h + ffn(…) (pre-norm) or the same sums "
                                       "inside the norms (post-norm)",
                 "_block_norm_side": "if block.pre_norm: h + f(norm(h)); else: norm(h + f(h))",
                 "_block_shared_norm": "block.norm1 with attention, block.norm2 with the FFN",
                 "_block_ffn_input": "the FFN reads h after h = h + a (pre) or h = norm1(h + a) (post)",
                 "_block_double_norm": "post-norm: attention reads h itself; the norm comes after "
                                       "the addition only"}},
             library=refused((Block.forward, "minitf.Block (its forward)")),
             own_work="block.attn, block.norm1, block.norm2, block.ffn, block.pre_norm and + are "
                      "fine (where the norms and the sums go is the exercise): the block's own "
                      "forward is the answer itself",
             piece=Piece(fills="model", order=10,
                         call='block(block, h, cos, sin) → (h, weights): the sub-layers, their residuals and norms')),
]
