"""minitf.trace: every recorded number follows from the ones before it by its formula, the pieces
rebuild the model's logits, and they equal the modules' own activations (forward hooks) for every
shipped checkpoint."""
import copy
import math

import pytest
import torch
import torch.nn.functional as F

import minitf
from support import ROOT, assert_close_float32, trained_like
from minitf.views.trace import fmt, trace

CHECKPOINTS = sorted((ROOT / "data" / "checkpoints").glob("*.pt"))
# checkpoints with QK-norm: their trace records q and k after the norm, which the step-by-step
# rebuild below does not redo; test_a_qk_norm_checkpoint_traces_to_its_own_logits checks them
QK_NORM = {"lm_fast"}
CHECKPOINTS = [p for p in CHECKPOINTS if p.stem not in QK_NORM]
TOL = dict(rtol=0, atol=1e-10)

CONFIGS = {
    "tiny": dict(),
    "pre-rms": dict(norm_position="pre", norm="rms"),
    "sinusoidal-gelu": dict(positional="sinusoidal", activation="gelu"),
    "no-positions-silu": dict(positional="none", activation="silu", n_layers=1),
    "rope-on-v": dict(rope_on_v=True, norm_position="pre"),
    "not-causal": dict(causal=False),
    "grown-heads": dict(d_model=6, n_heads=3, head_dim=4, d_ff=10, n_layers=3),  # attn_dim 12 ≠ 6
    "sinusoidal-rope-on-v": dict(positional="sinusoidal", rope_on_v=True, n_heads=1),
    # the ablation switches
    "no-residual": dict(residual=False),
    "no-ffn": dict(ffn=False),
    "no-ffn-pre": dict(ffn=False, norm_position="pre"),
}


def double(model):
    return copy.deepcopy(model).double().eval()


def norm_formula(norm, x):
    """The norm rebuilt from its recorded weights: LayerNorm or RMSNorm."""
    if norm.kind == "layer":
        return F.layer_norm(x, x.shape[-1:], norm.weight, norm.bias, norm.eps)
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + norm.eps) * norm.weight


def check_norm(norm, x):
    """A NormTrace read x, and its statistics and output follow from x."""
    torch.testing.assert_close(norm.input, x, **TOL)
    if norm.kind == "layer":
        torch.testing.assert_close(norm.mean, x.mean(-1), **TOL)
        torch.testing.assert_close(norm.var, x.var(-1, unbiased=False), **TOL)
    else:
        assert norm.mean is None and norm.bias is None
        torch.testing.assert_close(norm.var, x.pow(2).mean(-1), **TOL)
    torch.testing.assert_close(norm.output, norm_formula(norm, x), **TOL)
    return norm.output


def rebuild_logits(tr):
    """The forward pass again, step by step from the trace's own pieces and weights only: each
    recorded piece must be the formula applied to the recorded pieces before it."""
    c, P = tr.config, tr.params
    T, H, hd = len(tr.ids), c.n_heads, c.head_dim
    residual, use_ffn = c.ablations.residual, c.ablations.ffn
    torch.testing.assert_close(tr.embedding, P["embed.weight"][tr.ids], **TOL)
    x = tr.embedding + (tr.positional if tr.positional is not None else 0)
    if c.positions.positional == "sinusoidal":
        torch.testing.assert_close(tr.positional, minitf.sinusoidal_table(T, c.d_model).double(),
                                   **TOL)
    torch.testing.assert_close(tr.x0, x, **TOL)
    for l, layer in enumerate(tr.layers):
        W = {name[len(f"blocks.{l}."):]: p for name, p in P.items() if name.startswith(f"blocks.{l}.")}
        torch.testing.assert_close(layer.input, x, **TOL)
        pre = c.norm_position == "pre"
        attn_in = check_norm(layer.norm1, x) if pre else x
        torch.testing.assert_close(layer.attn_in, attn_in, **TOL)
        qkv = F.linear(attn_in, W["attn.qkv.weight"], W["attn.qkv.bias"])  # (T, 3·H·hd)
        q, k, v = (t.view(T, H, hd).transpose(0, 1) for t in qkv.split(H * hd, -1))
        for name, t in (("q", q), ("k", k), ("v", v)):
            torch.testing.assert_close(getattr(layer, name), t, **TOL)
        if layer.rope_cos is not None:
            cos, sin = minitf.rope_angles(layer.rope_theta, T)
            torch.testing.assert_close(layer.rope_cos, cos, **TOL)
            torch.testing.assert_close(layer.rope_sin, sin, **TOL)

        def rope(t, on):
            return minitf.apply_rope(t[None], layer.rope_cos, layer.rope_sin)[0] if on else t

        torch.testing.assert_close(layer.q_rot, rope(layer.q, c.positions.positional == "rope"), **TOL)
        torch.testing.assert_close(layer.k_rot, rope(layer.k, c.positions.positional == "rope"), **TOL)
        torch.testing.assert_close(layer.v_rot, rope(layer.v, c.positions.rope_on_v), **TOL)
        scores = layer.q_rot @ layer.k_rot.transpose(-1, -2) / math.sqrt(hd)
        torch.testing.assert_close(layer.scores, scores, **TOL)
        if c.ablations.causal:
            assert torch.equal(layer.mask, minitf.causal_mask(T))
            scores = scores.masked_fill(layer.mask, float("-inf"))
        else:
            assert layer.mask is None
        torch.testing.assert_close(layer.weights, scores.softmax(-1), **TOL)
        torch.testing.assert_close(layer.head_out, layer.weights @ layer.v_rot, **TOL)
        torch.testing.assert_close(layer.concat, layer.head_out.transpose(0, 1).reshape(T, H * hd),
                                   **TOL)
        a = F.linear(layer.concat, W["attn.out.weight"], W["attn.out.bias"])
        torch.testing.assert_close(layer.attn_out, a, **TOL)
        torch.testing.assert_close(layer.resid1, x + a if residual else a, **TOL)
        x = layer.resid1 if pre else check_norm(layer.norm1, layer.resid1)
        torch.testing.assert_close(layer.after_attn, x, **TOL)
        if use_ffn:
            ffn_in = check_norm(layer.norm2, x) if pre else x
            torch.testing.assert_close(layer.ffn_in, ffn_in, **TOL)
            u = F.linear(ffn_in, W["ffn.up.weight"], W["ffn.up.bias"])
            torch.testing.assert_close(layer.ffn_pre, u, **TOL)
            act = {"relu": F.relu, "gelu": F.gelu, "silu": F.silu}[c.activation]
            torch.testing.assert_close(layer.ffn_hidden, act(u), **TOL)
            f = F.linear(layer.ffn_hidden, W["ffn.down.weight"], W["ffn.down.bias"])
            torch.testing.assert_close(layer.ffn_out, f, **TOL)
            torch.testing.assert_close(layer.resid2, x + f if residual else f, **TOL)
            x = layer.resid2 if pre else check_norm(layer.norm2, layer.resid2)
        else:
            assert layer.norm2 is None and layer.ffn_out is None
        torch.testing.assert_close(layer.output, x, **TOL)
    if c.norm_position == "pre":
        x = check_norm(tr.final_norm, x)
    else:
        assert tr.final_norm is None
    torch.testing.assert_close(tr.final, x, **TOL)
    logits = F.linear(tr.final, P["head.weight"], P["head.bias"])
    torch.testing.assert_close(tr.logits, logits, **TOL)
    torch.testing.assert_close(tr.probs, logits.softmax(-1), **TOL)
    return logits


@pytest.mark.parametrize("name", CONFIGS)
def test_logits_rebuilt_from_the_trace_equal_the_model(name):
    model = trained_like(minitf.Config(**CONFIGS[name]))
    ids = minitf.encode("Hi\tIj!")
    tr = trace(model, ids)
    assert tr.logits.dtype == torch.float64 and tr.ids == ids
    expected = double(model)(torch.tensor([ids]))[0]
    torch.testing.assert_close(rebuild_logits(tr), expected, **TOL)
    # the model itself is untouched: still float32, still its own weights
    assert next(model.parameters()).dtype == torch.float32


def hooked_activations(model, ids):
    """The modules' own outputs during one forward pass (model in float64)."""
    seen = {}

    def keep(name):
        return lambda module, inputs, output: seen.__setitem__(name, output)

    def keep_input(name):
        return lambda module, inputs: seen.__setitem__(name, inputs[0])

    handles = [model.embed.register_forward_hook(keep("embed")),
               model.head.register_forward_hook(keep("head")),
               model.head.register_forward_pre_hook(keep_input("head_in"))]
    if model.final_norm is not None:
        handles.append(model.final_norm.register_forward_hook(keep("final_norm")))
    for l, block in enumerate(model.blocks):
        handles += [block.register_forward_hook(keep(f"{l}.block")),
                    block.register_forward_pre_hook(keep_input(f"{l}.block_in")),
                    block.attn.register_forward_hook(keep(f"{l}.attn")),
                    block.attn.register_forward_pre_hook(keep_input(f"{l}.attn_in")),
                    block.attn.qkv.register_forward_hook(keep(f"{l}.qkv")),
                    block.norm1.register_forward_hook(keep(f"{l}.norm1"))]
        if block.ffn is not None:  # shift_smallest.pt has attention only
            handles += [block.norm2.register_forward_hook(keep(f"{l}.norm2")),
                        block.ffn.register_forward_hook(keep(f"{l}.ffn")),
                        block.ffn.up.register_forward_hook(keep(f"{l}.ffn_pre"))]
    try:
        logits, weights = model(torch.tensor([ids]), return_attention=True)
    finally:
        for h in handles:
            h.remove()
    return seen, logits, weights


@pytest.mark.parametrize("path", CHECKPOINTS, ids=[p.stem for p in CHECKPOINTS])
@pytest.mark.parametrize("text", ["Hello\t", "ab ba\tcb!cb"])
def test_the_trace_equals_the_modules_activations_for_every_checkpoint(path, text):
    model = minitf.load(path)
    tr = trace(model, text)
    seen, logits, weights = hooked_activations(double(model), minitf.encode(text))
    c = model.config
    T, A = len(tr.ids), c.n_heads * c.head_dim

    def same(actual, expected):
        torch.testing.assert_close(actual, expected[0] if expected.dim() == actual.dim() + 1
                                   else expected, **TOL)

    same(tr.embedding, seen["embed"])
    for l, layer in enumerate(tr.layers):
        same(layer.input, seen[f"{l}.block_in"])
        same(layer.attn_in, seen[f"{l}.attn_in"])
        q, k, v = seen[f"{l}.qkv"][0].split(A, -1)  # (T, A) each, before RoPE
        for name, t in (("q", q), ("k", k), ("v", v)):
            same(getattr(layer, name), t.view(T, c.n_heads, c.head_dim).transpose(0, 1))
        same(layer.weights, weights[l])
        same(layer.attn_out, seen[f"{l}.attn"][0])
        same(layer.norm1.output, seen[f"{l}.norm1"])
        if c.ablations.ffn:
            same(layer.norm2.output, seen[f"{l}.norm2"])
            same(layer.ffn_pre, seen[f"{l}.ffn_pre"])
            same(layer.ffn_out, seen[f"{l}.ffn"])
        same(layer.output, seen[f"{l}.block"][0])
    if tr.final_norm is not None:
        same(tr.final_norm.output, seen["final_norm"])
    same(tr.final, seen["head_in"])
    same(tr.logits, seen["head"])
    same(tr.logits, logits)
    # and the float32 model the learner holds agrees to float32 precision
    assert_close_float32(model(torch.tensor([tr.ids]))[0], tr.logits.float())


@pytest.mark.parametrize("name", ["tiny", "not-causal", "grown-heads"])
def test_weights_rows_sum_to_one_and_the_future_gets_nothing(name):
    tr = trace(trained_like(minitf.Config(**CONFIGS[name])), "Hello, world")
    T = len(tr.ids)
    for layer in tr.layers:
        torch.testing.assert_close(layer.weights.sum(-1), torch.ones(tr.config.n_heads, T,
                                                                     dtype=torch.float64), **TOL)
        assert (layer.weights >= 0).all()
        if tr.config.ablations.causal:
            assert (layer.weights[:, layer.mask] == 0).all()
            assert (layer.weights[:, ~layer.mask] > 0).all()
            assert layer.weights[:, 0, 0].eq(1).all()  # the first byte can only look at itself
        else:
            assert (layer.weights > 0).all()
    torch.testing.assert_close(tr.probs.sum(-1), torch.ones(T, dtype=torch.float64), **TOL)


@pytest.mark.parametrize("name", ["tiny", "pre-rms", "sinusoidal-gelu", "rope-on-v", "not-causal"])
def test_every_key_has_a_value_and_an_explanation_that_ends_in_it(name):
    tr = trace(trained_like(minitf.Config(**CONFIGS[name])), "Hey\tI")
    keys = list(tr.keys())
    assert len(keys) == len(set(keys))
    for key in keys:
        value, text = tr.value(key), tr.explain(key)
        formula = text.split("   (")[0]  # a remark in brackets may follow the value
        assert formula.endswith(" = " + fmt(value)), (key, text)


def test_explanations_show_the_numbers_they_use():
    tr = trace(trained_like(minitf.Config()), "Hey")
    layer = tr.layers[0]
    text = tr.explain("L0.h1.weights.2.0")
    assert text.startswith("L0.h1.weights[2,0] = exp(s[2,0] − m)/Σ_j exp(s[2,j] − m)")
    assert fmt(float(layer.scores[1, 2, 0])) in text
    assert text.endswith(" = " + fmt(float(layer.weights[1, 2, 0])))
    text = tr.explain("L0.h0.out.2.1")
    for j in range(3):
        assert f"{fmt(float(layer.weights[0, 2, j]))}·" in text
    assert "masked" in tr.explain("L0.h0.scores.0.2") and tr.value("L0.h0.scores.0.2") == -math.inf
    assert tr.value("L0.h0.weights.0.2") == 0.0
    assert tr.value("L0.h1.rowsum.2") == pytest.approx(1.0, abs=1e-12)
    assert tr.explain("ids.1").startswith(f"ids[1] = {ord('e')}")
    with pytest.raises(KeyError):
        tr.explain("L0.nothing.0.0")


def test_inputs_are_checked():
    model = trained_like(minitf.Config())
    with pytest.raises(ValueError, match="max_len"):
        trace(model, "")
    with pytest.raises(ValueError, match="max_len"):
        trace(model, "x" * (model.config.max_len + 1))
    assert trace(model, torch.tensor([[72, 105]])).ids == trace(model, b"Hi").ids == [72, 105]


def test_a_qk_norm_checkpoint_traces_to_its_own_logits():
    folder = ROOT / "data" / "checkpoints"
    for name in QK_NORM:
        model = minitf.load(folder / f"{name}.pt")
        tr = trace(model, "Hello\tworld")
        with torch.no_grad():
            expected = double(model)(torch.tensor([minitf.encode("Hello\tworld")]))[0]
        torch.testing.assert_close(tr.logits, expected, **TOL)
        assert "QK-norm" in tr.explain("L1.h0.k.4.3")
