"""The modern block's options (Config: bias, ffn_gate, qk_norm, logit_softcap, zero_init,
activation relu2; the "modern" preset) against references written here with PyTorch's own
modules (torch.nn.RMSNorm, F.scaled_dot_product_attention) and the formulas, plus every place a
model goes: checkpoints, the KV cache, the trace, Origami, the CLI, the optimizer and schedule."""
import math

import pytest
import torch
import torch.nn.functional as F

import minitf
from minitf import cli
from minitf.core.config import MODERN, Config
from minitf.core.kv_cache import KVCache
from minitf.core.muon import Muon
from minitf.core.train import Combined, block_matrices, make_lm_optimizer, wsd_at
from minitf.views.trace import fmt, trace
from support import assert_close_float32

def modern(**kw):
    return Config.modern(**{"d_model": 16, "n_heads": 2, "n_layers": 2, "d_ff": 24, "dropout": 0.0,
                            "max_len": 32, **kw})


def reference_forward(model, ids):
    """The modern Transformer written anew: torch.nn.RMSNorm, explicit RoPE on (2i, 2i+1) pairs,
    F.scaled_dot_product_attention, W2(silu(W1 x) ⊙ W3 x), F.linear without biases."""
    c = model.config
    B, T = ids.shape
    H, hd = c.n_heads, c.head_dim

    def rms(x, weight):
        n = torch.nn.RMSNorm(x.size(-1), eps=c.norm_eps).double()
        n.weight.data.copy_(weight)
        return n(x)

    theta = c.positions.rope_base ** (-torch.arange(0, hd, 2, dtype=torch.float64) / hd)
    ang = torch.arange(T, dtype=torch.float64)[:, None] * theta  # (T, hd/2)

    def rope(x):  # (B, H, T, hd)
        a, b = x[..., 0::2], x[..., 1::2]
        out = torch.empty_like(x)
        out[..., 0::2] = a * ang.cos() - b * ang.sin()
        out[..., 1::2] = a * ang.sin() + b * ang.cos()
        return out

    h = model.embed.weight[ids]
    for blk in model.blocks:
        x = rms(h, blk.norm1.weight)
        q, k, v = F.linear(x, blk.attn.qkv.weight).split(H * hd, -1)
        q, k, v = (t.view(B, T, H, hd).transpose(1, 2) for t in (q, k, v))
        q, k = rms(q, blk.attn.q_norm.weight), rms(k, blk.attn.k_norm.weight)
        y = F.scaled_dot_product_attention(rope(q), rope(k), v, is_causal=True)
        h = h + F.linear(y.transpose(1, 2).reshape(B, T, H * hd), blk.attn.out.weight)
        x = rms(h, blk.norm2.weight)
        f = blk.ffn
        h = h + F.linear(F.silu(F.linear(x, f.up.weight)) * F.linear(x, f.gate.weight), f.down.weight)
    logits = F.linear(rms(h, model.final_norm.weight), model.head.weight)
    cap = c.modern_block.logit_softcap
    if cap:
        logits = cap * torch.tanh(logits / cap)
    return logits


@pytest.mark.parametrize("softcap", [None, 5.0])
def test_modern_transformer_matches_a_pytorch_reference(softcap):
    torch.manual_seed(0)
    model = minitf.Transformer(modern(logit_softcap=softcap)).eval()
    with torch.no_grad():  # non-trivial gains, so a norm applied in the wrong place shows
        for name, p in model.named_parameters():
            if name.endswith("norm.weight") or "norm1" in name or "norm2" in name:
                p.uniform_(0.5, 1.5)
    ids = torch.randint(0, 256, (3, 20))
    with torch.no_grad():
        expected = reference_forward(model.double(), ids)
        actual = model.float()(ids)
    assert_close_float32(actual, expected)
    if softcap:
        assert actual.abs().max() < softcap


def test_swiglu_is_w2_of_silu_w1x_times_w3x():
    torch.manual_seed(1)
    ffn = minitf.Transformer(modern()).blocks[0].ffn
    x = torch.randn(2, 5, 16, dtype=torch.float64)
    W1, W2, W3 = (w.detach().double() for w in (ffn.up.weight, ffn.down.weight, ffn.gate.weight))
    u, g = x @ W1.T, x @ W3.T
    expected = (u / (1 + torch.exp(-u)) * g) @ W2.T
    assert_close_float32(ffn(x.float()).detach(), expected)


def test_relu2_is_relu_squared_and_the_gate_takes_any_activation():
    torch.manual_seed(2)
    ffn = minitf.Transformer(Config(d_model=8, d_ff=12, activation="relu2", ffn_gate=True)).blocks[0].ffn
    x = torch.randn(4, 8)
    u, g = ffn.up(x), ffn.gate(x)
    torch.testing.assert_close(ffn(x), ffn.down(u.clamp_min(0) ** 2 * g))


def test_qk_norm_matches_torch_rmsnorm_per_head():
    torch.manual_seed(3)
    attn = minitf.Transformer(Config(d_model=16, n_heads=2, qk_norm=True, positional="none",
                                     dropout=0.0)).blocks[0].attn
    with torch.no_grad():
        attn.q_norm.weight.uniform_(0.5, 2)
        attn.k_norm.weight.uniform_(0.5, 2)
    x = torch.randn(2, 7, 16)
    q, k, v = attn.qkv(x).split(16, -1)
    q, k, v = (t.view(2, 7, 2, 8).transpose(1, 2) for t in (q, k, v))
    ref_q, ref_k = torch.nn.RMSNorm(8, eps=1e-5), torch.nn.RMSNorm(8, eps=1e-5)
    ref_q.weight.data.copy_(attn.q_norm.weight)
    ref_k.weight.data.copy_(attn.k_norm.weight)
    y = F.scaled_dot_product_attention(ref_q(q), ref_k(k), v, is_causal=True)
    expected = attn.out(y.transpose(1, 2).reshape(2, 7, 16))
    torch.testing.assert_close(attn(x)[0], expected, rtol=0, atol=1e-5)


def test_no_bias_leaves_out_every_bias_and_counts_match():
    model = minitf.Transformer(Config(d_model=16, n_heads=2, d_ff=32, bias=False))
    names = [n for n, _ in model.named_parameters()]
    assert not [n for n in names if n.endswith(".bias") and "norm" not in n]
    with_bias = minitf.count_parameters(minitf.Transformer(Config(d_model=16, n_heads=2, d_ff=32)))
    per_layer = 3 * 16 + 16 + 32 + 16  # qkv, W_O, up, down
    assert with_bias - minitf.count_parameters(model) == 2 * per_layer + 256


def test_zero_init_blocks_start_as_the_identity():
    torch.manual_seed(4)
    model = minitf.Transformer(modern(zero_init=True)).eval()
    ids = torch.randint(0, 256, (2, 9))
    h = model.embed(ids)
    with torch.no_grad():
        expected = model.head(model.final_norm(h))
        torch.testing.assert_close(model(ids), expected)


def test_the_preset():  # the defaults and their checks: test_config
    cfg = Config.modern(d_model=8)
    assert {k: v for k, v in cfg.flat().items() if k in MODERN} == MODERN
    assert Config.from_dict(cfg.to_dict()) == cfg


def test_checkpoint_round_trip(tmp_path):
    torch.manual_seed(5)
    model = minitf.Transformer(modern(logit_softcap=30.0, activation="relu2"))
    minitf.save(model, tmp_path / "m.pt")
    back = minitf.load(tmp_path / "m.pt")
    assert back.config == model.config
    ids = torch.randint(0, 256, (2, 12))
    with torch.no_grad():
        assert torch.equal(back.eval()(ids), model.eval()(ids))


def test_kv_cache_gives_the_full_pass_logits():
    torch.manual_seed(6)
    model = minitf.Transformer(modern(logit_softcap=10.0)).eval()
    ids = torch.randint(0, 256, (2, 10))
    with torch.no_grad():
        full = model(ids)
        kv = KVCache(len(model.blocks))
        steps = torch.cat([model(ids[:, :4], cache=kv)] +
                          [model(ids[:, t:t + 1], cache=kv) for t in range(4, 10)], dim=1)
    torch.testing.assert_close(steps, full, rtol=0, atol=1e-5)


def test_trace_without_biases_and_refuses_what_it_does_not_write_out():
    torch.manual_seed(7)
    model = minitf.Transformer(Config(d_model=8, n_heads=2, d_ff=16, bias=False, activation="relu2",
                                      norm="rms", norm_position="pre")).eval()
    tr = trace(model, b"hello")
    with torch.no_grad():
        expected = model.double()(torch.tensor([list(b"hello")]))[0]
    torch.testing.assert_close(tr.logits, expected)
    assert "+ 0" in tr.explain("L0.ffn_out.1.2") and "max(0" in tr.explain("L0.ffn_hidden.1.2")
    with pytest.raises(ValueError, match="ffn_gate"):
        trace(minitf.Transformer(modern()), b"hi")


def test_trace_writes_out_qk_norm():
    torch.manual_seed(8)
    model = minitf.Transformer(Config(d_model=16, n_heads=2, d_ff=32, qk_norm=True, norm="rms",
                                      norm_position="pre", dropout=0.0)).eval()
    with torch.no_grad():
        model.blocks[0].attn.q_norm.weight.uniform_(0.5, 2)
    tr = trace(model, b"hello there")
    with torch.no_grad():
        expected = model.double()(torch.tensor([list(b"hello there")]))[0]
    torch.testing.assert_close(tr.logits, expected)
    q = tr.layers[0].q
    text = tr.explain("L0.h1.q.3.2")
    assert "QK-norm" in text and text.split("= ")[-1].startswith(fmt(float(q[1, 3, 2])))


def test_cli_preset_and_flags():
    args = cli.parser().parse_args(["train", "--out", "x.pt", "--preset", "modern", "--d-model", "16",
                                    "--activation", "relu2", "--logit-softcap", "15", "--zero-init"])
    cfg = cli.config_from_args(args)
    m = cfg.modern_block
    assert (cfg.norm, cfg.norm_position, m.bias, m.ffn_gate, m.qk_norm) == ("rms", "pre", False, True, True)
    assert cfg.activation == "relu2" and m.logit_softcap == 15 and m.zero_init  # given flags win
    plain = cli.config_from_args(cli.parser().parse_args(["train", "--out", "x.pt"]))
    assert plain == Config(d_ff=8, max_len=128)


def test_wsd_schedule_by_steps():
    rates = [wsd_at(s, 100, 1.0, 10, 0.3) for s in range(100)]
    assert rates[0] == 0.1 and rates[9] == 1.0 and rates[69] == 1.0
    assert rates[70] == 1.0 and math.isclose(rates[71], 29 / 30) and math.isclose(rates[99], 1 / 30)


def test_muon_takes_the_block_matrices():
    torch.manual_seed(8)
    model = minitf.Transformer(modern())
    opt = make_lm_optimizer(model, 1e-3, kind="muon", embed_lr=3.0, muon_lr=2e-2)
    assert isinstance(opt, Combined) and type(opt.optimizers[0]) is Muon  # minitf's (tests/test_muon.py)
    assert opt.optimizers[0].dtype is None  # its precision chosen per device at each step
    muon = {id(p) for g in opt.optimizers[0].param_groups for p in g["params"]}
    assert muon == {id(p) for p in block_matrices(model)} and len(muon) == 2 * 5  # qkv, W_O, up, gate, down
    assert {g["lr_scale"] for g in opt.param_groups} == {20.0, 3.0, 1.0}


def test_muon_wsd_run_stops_and_resumes_bit_for_bit():
    from minitf.core.text import TextPart
    data = TextPart("random", "train", torch.randint(0, 256, (4000,), dtype=torch.uint8), 16)
    options = dict(steps=12, batch_size=4, lr=1e-3, warmup=2, schedule="wsd", cooldown=0.5,
                   progress=False, seed=1)

    def run(stop_at=None, resume=None, model=None):
        torch.manual_seed(9)
        model = model or minitf.Transformer(modern(max_len=16))
        opt = make_lm_optimizer(model, 1e-3, kind="muon", embed_lr=3.0, muon_lr=2e-2)
        hist = minitf.train(model, data, optimizer=opt, resume=resume,
                            should_stop=(lambda: len(hist_box) and hist_box[0].step >= stop_at)
                            if stop_at else None, after_step=lambda h: hist_box[:1] or hist_box.append(h),
                            **options)
        return model, hist

    hist_box = []
    straight, full = run()
    hist_box = []
    half, part = run(stop_at=5)
    assert part.interrupted and part.step == 5
    state = part.state()
    hist_box = []
    resumed, rest = run(resume=state, model=half)
    assert rest.step == 12 and rest.loss == full.loss
    assert all(torch.equal(a, b) for a, b in zip(resumed.state_dict().values(), straight.state_dict().values()))


def test_lightning_refuses_the_fast_optimizer_flags(tmp_path, capsys):
    code = cli.main(["train", "--trainer", "lightning", "--optimizer", "muon", "--text",
                     "data/text/tinyshakespeare.txt", "--out", str(tmp_path / "m.pt")])
    assert code != 0 and "--trainer minitf" in capsys.readouterr().err
