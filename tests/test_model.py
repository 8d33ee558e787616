"""The model against PyTorch's own reference implementations, and the properties the course claims."""
import itertools
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import minitf
from minitf import Config, Transformer


def test_seed_model_has_2648_parameters_where_the_seed_says_2904():
    model = Transformer(Config())
    assert minitf.count_parameters(model) == 2648
    table = dict((name, n) for name, _, n in minitf.parameter_table(model))
    assert table["embed.weight"] == 256 * 4
    assert table["head.weight"] + table["head.bias"] == 4 * 256 + 256
    per_layer = sum(n for name, n in table.items() if name.startswith("blocks.0."))
    assert per_layer == 172  # 80 attention + 40 + 36 FFN + 16 LayerNorm
    assert "total" in minitf.format_parameter_table(model)
    # 01: the seed documents' 2,904 is 256 too many; their breakdown forgets the head's bias
    assert 2904 - minitf.count_parameters(model) == 256 == Config().vocab_size
    assert table["embed.weight"] + table["head.weight"] + 2 * per_layer == 2392


def test_default_config_is_the_seed():
    c = Config()
    assert (c.vocab_size, c.d_model, c.n_heads, c.head_dim, c.n_layers, c.d_ff) == (256, 4, 2, 2, 2, 8)
    assert (c.norm_position, c.norm, c.activation, c.positions.positional) == ("post", "layer", "relu", "rope")
    assert c.dropout_p == pytest.approx(min(0.1, 0.5 * 4 / 256))
    assert Config(d_model=64, n_heads=4).dropout_p == 0.1


def test_config_rejects_bad_values_with_a_reason():
    with pytest.raises(ValueError, match="norm_position"):
        Config(norm_position="middle")
    with pytest.raises(ValueError, match="divisible"):
        Config(d_model=6, n_heads=4)


def test_replace_rederives_head_dim_unless_given():
    assert Config().replace(d_model=32, n_heads=4).head_dim == 8
    assert Config().replace(d_model=8, n_heads=4, head_dim=2).head_dim == 2


@pytest.mark.parametrize("kind,reference", [("layer", nn.LayerNorm), ("rms", nn.RMSNorm)])
def test_norms_equal_pytorch(kind, reference):
    torch.manual_seed(0)
    ours, ref = minitf.norms.make_norm(kind, 6), reference(6, eps=1e-5)
    with torch.no_grad():
        for p in ours.parameters():
            p.uniform_(-2, 2)
        ref.load_state_dict(ours.state_dict())
    x = torch.randn(3, 5, 6, dtype=torch.float64) * 3 + 1
    assert torch.allclose(ours.double()(x), ref.double()(x), atol=1e-12)
    if kind == "layer":  # forward is the fused kernel; the written-out formula must agree with it
        assert torch.allclose(ours.formula(x), ref(x), atol=1e-12)
        x32 = x.float()
        assert torch.allclose(ours.float().formula(x32), ours(x32), atol=1e-5)


@pytest.mark.parametrize("causal", [True, False])
def test_attention_equals_scaled_dot_product_attention(causal):
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 7, 4, dtype=torch.float64) for _ in range(3))
    out, weights = minitf.attention(q, k, v, minitf.causal_mask(7) if causal else None)
    assert torch.allclose(out, F.scaled_dot_product_attention(q, k, v, is_causal=causal), atol=1e-12)
    assert torch.allclose(weights.sum(-1), torch.ones(2, 3, 7, dtype=torch.float64))
    if causal:
        assert (weights.masked_select(minitf.causal_mask(7)) == 0).all()


@pytest.mark.parametrize("norm_position,rope_on_v", [("post", False), ("pre", True)])
def test_fast_and_teaching_attention_paths_agree(norm_position, rope_on_v):
    torch.manual_seed(1)
    model = Transformer(Config(d_model=8, n_heads=2, norm_position=norm_position,
                               rope_on_v=rope_on_v)).double().eval()
    ids = torch.randint(0, 256, (3, 9))
    logits, weights = model(ids, return_attention=True)
    assert torch.allclose(model(ids), logits, atol=1e-12)
    assert len(weights) == 2 and weights[0].shape == (3, 2, 9, 9)


def test_rope_keeps_norms_and_scores_depend_only_on_relative_position():
    torch.manual_seed(0)
    inv_freq = minitf.rope_frequencies(8, n_heads=1, dtype=torch.float64)
    cos, sin = minitf.rope_angles(inv_freq, 20)
    q, k = torch.randn(2, 1, 1, 8, dtype=torch.float64)
    rq = minitf.apply_rope(q.expand(1, 1, 20, 8), cos, sin)[0, 0]  # q at every position
    rk = minitf.apply_rope(k.expand(1, 1, 20, 8), cos, sin)[0, 0]
    assert torch.allclose(rq.norm(dim=-1), q.norm().expand(20))
    for offset in (0, 3, 7):
        scores = torch.stack([rq[m + offset] @ rk[m] for m in range(20 - offset)])
        assert torch.allclose(scores, scores[0].expand_as(scores), atol=1e-12)


def test_rope_frequencies_come_from_head_dim():
    f = minitf.rope_frequencies(4, base=10000.0, n_heads=3)
    assert f.shape == (3, 2)
    assert torch.allclose(f[0], torch.tensor([1.0, 0.01]))
    assert minitf.rope_frequencies(2).tolist() == [[1.0]]


def test_no_position_sees_the_future():
    torch.manual_seed(0)
    for config in (Config(), Config(norm_position="pre", positional="sinusoidal"),
                   Config(d_model=8, rope_on_v=True, norm="rms", activation="silu")):
        model = Transformer(config).eval()
        ids = torch.randint(0, 256, (2, 10))
        changed = ids.clone()
        changed[:, 6:] = (changed[:, 6:] + 1) % 256
        a, b = model(ids), model(changed)
        assert torch.equal(a[:, :6], b[:, :6])
        assert not torch.allclose(a[:, 6:], b[:, 6:])


def test_non_causal_variant_sees_the_future():
    model = Transformer(Config(causal=False)).eval()
    ids = torch.randint(0, 256, (1, 8), generator=torch.Generator().manual_seed(0))
    changed = ids.clone()
    changed[0, -1] += 1
    assert not torch.allclose(model(ids)[:, 0], model(changed)[:, 0])


OPTIONS = list(itertools.product(["post", "pre"], ["layer", "rms"], ["relu", "gelu", "silu"],
                                 ["rope", "sinusoidal", "none"]))


@pytest.mark.parametrize("norm_position,norm,activation,positional", OPTIONS)
def test_every_variant_runs_on_a_batch_whose_size_differs_from_its_length(norm_position, norm,
                                                                          activation, positional):
    config = Config(norm_position=norm_position, norm=norm, activation=activation,
                    positional=positional)
    model = Transformer(config)
    logits = model(torch.randint(0, 256, (3, 11)))
    assert logits.shape == (3, 11, 256)
    loss = logits.logsumexp(-1).mean()
    loss.backward()
    assert all(p.grad is not None for p in model.parameters())
    extra = 8 if norm_position == "pre" else 0  # the final norm
    if norm == "rms":
        extra = 4 if norm_position == "pre" else 0
        assert minitf.count_parameters(model) == 2648 - 4 * 4 + extra  # RMSNorm has no β
    else:
        assert minitf.count_parameters(model) == 2648 + extra


def test_without_positions_a_repeated_byte_looks_the_same_everywhere():
    torch.manual_seed(0)
    ids = torch.tensor([[65, 65, 65, 65]])  # the same byte four times
    without = Transformer(Config(positional="none", n_layers=1)).eval()
    # without positions and with a causal mask, position 0 sees only itself; nothing distinguishes
    # the later positions except how many equal bytes they see, which gives them the same output
    out = without(ids)
    assert torch.allclose(out[0, 1:], out[0, :1].expand(3, -1), atol=1e-5)
    # RoPE only moves the weights, and a weighted mean of equal values is that value: still equal
    out = Transformer(Config(n_layers=1)).eval()(ids)
    assert torch.allclose(out[0, 1:], out[0, :1].expand(3, -1), atol=1e-5)
    for config in (Config(n_layers=1, positional="sinusoidal"), Config(n_layers=1, rope_on_v=True)):
        out = Transformer(config).eval()(ids)  # positions added to x, or rotated values, differ
        assert not torch.allclose(out[0, 1:], out[0, :1].expand(3, -1), atol=1e-3)


def test_dropout_only_in_training_mode():
    model = Transformer(Config(d_model=64, n_heads=4))
    assert model.config.dropout_p == 0.1
    ids = torch.randint(0, 256, (2, 6))
    model.eval()
    assert torch.equal(model(ids), model(ids))
    model.train()
    assert not torch.equal(model(ids), model(ids))


def test_too_long_input_is_refused_clearly():
    model = Transformer(Config(max_len=8))
    with pytest.raises(ValueError, match="max_len 8"):
        model(torch.zeros(1, 9, dtype=torch.long))


def test_sinusoidal_table_formula():
    pe = minitf.sinusoidal_table(10, 4)
    assert pe[3, 0] == pytest.approx(math.sin(3))
    assert pe[3, 3] == pytest.approx(math.cos(3 / 100))
