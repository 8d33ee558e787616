"""Origami growth: every fold keeps the function (float32 and float64), keeps loss and gradients of
the shared function, carries the optimizer, survives save/load, and breaks the copy symmetry."""
import itertools
import math
import random

import pytest
import torch

import minitf
from minitf import Config, Transformer, make_batch, make_pairs, masked_loss, origami
from minitf.core.origami import GrowthError, deepen, widen, widen_heads
from support import trained_like

ACTIVATIONS = ["relu", "gelu", "silu"]
VARIANTS = list(itertools.product(["post", "pre"], ["layer", "rms"]))


def random_ids(seed, max_len=16):
    g = torch.Generator().manual_seed(seed)
    T = int(torch.randint(1, max_len + 1, (1,), generator=g))
    return torch.randint(0, 256, (3, T), generator=g)


def operators():
    return {"widen": lambda m, ids: widen(m, 2, inputs=ids),
           "widen x3, no noise": lambda m, ids: widen(m, 3, noise=0.0, inputs=ids),
           "widen_heads": lambda m, ids: widen_heads(m, inputs=ids),
           "deepen": lambda m, ids: deepen(m, inputs=ids)}


@pytest.mark.parametrize("norm_position,norm", VARIANTS)
@pytest.mark.parametrize("dtype,bound", [(torch.float32, 1e-5), (torch.float64, 1e-10)])
def test_every_operator_keeps_the_function(norm_position, norm, dtype, bound):
    i = VARIANTS.index((norm_position, norm)) + 4 * (dtype == torch.float64)
    rng = random.Random(i)
    activation = ACTIVATIONS[i % 3]  # the 8 cases cover every activation
    # float64 checks post-norm deepen with a tiny eps: its only error is LayerNorm's eps
    eps = 1e-12 if dtype == torch.float64 else 1e-5
    config = Config(d_model=rng.choice([4, 8]), n_heads=2, d_ff=rng.choice([8, 12]), n_layers=2,
                    norm_position=norm_position, norm=norm, activation=activation,
                    rope_on_v=rng.random() < 0.3, norm_eps=eps)
    model = trained_like(config, dtype, seed=i)
    for name, op in operators().items():
        ids = random_ids(100 * i + len(name))
        grown = op(model, ids)
        limit = bound if not (name == "deepen" and norm_position == "post" and dtype == torch.float32) \
            else 100 * eps * max(1.0, model(ids).abs().max().item())  # exact up to eps
        assert grown.max_logit_diff <= limit, (name, grown)
        with torch.no_grad():
            assert (grown.model.eval()(ids) - model(ids)).abs().max() <= limit, name
        assert next(grown.model.parameters()).dtype == dtype


def test_pre_norm_deepen_is_bit_exact_and_says_so():
    model = trained_like(Config(norm_position="pre", n_layers=3))
    grown = deepen(model, after=[-1, 1, 2, 2])
    assert grown.model.config.n_layers == 7 and grown.max_logit_diff == 0
    assert "max |Δlogits| = 0 (bit-exact)" in str(grown)
    ids = origami.probe_ids()
    assert torch.equal(grown.model(ids), model(ids))


def test_shapes_follow_the_config_and_copied_heads_keep_their_frequencies():
    model = trained_like(Config())
    with torch.no_grad():
        model.blocks[0].attn.inv_freq[1] = 0.25  # give head 1 its own frequency
    wide = widen(model, 2).model
    c = wide.config
    assert (c.d_model, c.n_heads, c.head_dim, c.d_ff) == (8, 4, 2, 16)
    assert wide.blocks[0].attn.inv_freq[:, 0].tolist() == [1.0, 0.25, 1.0, 0.25]
    deep_heads = widen_heads(model).model
    assert deep_heads.config.head_dim == 4 and deep_heads.config.d_model == 4
    # old frequencies on the even pairs, the new one in between
    assert deep_heads.blocks[0].attn.inv_freq[0].tolist() == pytest.approx([1.0, 10000 ** -0.5])
    assert deep_heads.blocks[0].attn.inv_freq[1, 0].item() == 0.25


def test_widen_heads_from_standard_frequencies_gives_the_standard_ones():
    model = trained_like(Config(d_model=8, n_heads=2))  # head_dim 4
    grown = widen_heads(model).model
    expected = minitf.rope_frequencies(8, 10000.0, 2)
    assert torch.allclose(grown.blocks[1].attn.inv_freq, expected)


def test_widen_weight_is_the_halved_tiling():
    W = torch.arange(6.0).view(2, 3)
    W2 = origami.widen_weight(W, 2)
    assert torch.equal(W2, 0.5 * torch.cat([torch.cat([W, W], 1)] * 2, 0))
    x = torch.tensor([1.0, -2.0, 0.5])
    assert torch.allclose(W2 @ torch.cat([x, x]), torch.cat([W @ x, W @ x]))


def test_split_inputs_noise_sums_to_zero_over_the_copies():
    torch.manual_seed(0)
    W = torch.randn(5, 3, dtype=torch.float64)
    S = origami.split_inputs(W, 3, noise=0.5, generator=torch.Generator().manual_seed(1))
    blocks = S.view(5, 3, 3).permute(1, 0, 2)  # (k, out, in)
    assert torch.allclose(blocks.sum(0), W, atol=1e-14)
    assert (blocks[0] - blocks[1]).abs().max() > 0.05  # the copies really differ


def test_norms_are_unchanged_by_duplication_but_not_by_zero_padding():
    x = torch.tensor([[0.3, -1.2, 2.0, 0.1]], dtype=torch.float64)
    for norm in (minitf.LayerNorm(4).double(), minitf.RMSNorm(4).double()):
        wide = minitf.norms.make_norm("layer" if isinstance(norm, minitf.LayerNorm) else "rms", 8).double()
        assert torch.allclose(wide(torch.cat([x, x], -1)), torch.cat([norm(x)] * 2, -1), atol=1e-12)
        padded = wide(torch.cat([x, torch.zeros_like(x)], -1))[..., :4]
        assert not torch.allclose(padded, norm(x), atol=1e-3)


def loss_and_grads(model, batch):
    model.zero_grad()
    loss = masked_loss(model(batch.ids), batch.targets)
    loss.backward()
    return loss.item(), {n: p.grad.clone() for n, p in model.named_parameters()}


@pytest.mark.parametrize("norm_position", ["post", "pre"])
def test_widen_keeps_loss_and_maps_gradients_exactly(norm_position):
    """As in staged-training's growth test: right after growth the loss is the same and every
    gradient is the small model's gradient mapped (a copied output shares it 1/k per copy)."""
    model = trained_like(Config(norm_position=norm_position, dropout=0.0), torch.float64)
    batch = make_batch(make_pairs("shift", 8, seed=3, max_len=6))
    k = 2
    grown = widen(model, k, noise=0.0, inputs=batch.ids).model.double()
    loss, grads = loss_and_grads(model, batch)
    loss2, grads2 = loss_and_grads(grown, batch)
    assert loss2 == pytest.approx(loss, abs=1e-12)
    for name, g in grads.items():
        scale = 1.0 if name.startswith("head.") else 1 / k
        if name == "embed.weight":
            mapped = g.repeat(1, k) * scale
        elif name.startswith("head."):
            mapped = g.repeat(1, k) if g.dim() == 2 else g
        else:
            groups = 3 if "qkv" in name else 1
            rows = torch.cat([c.repeat(k, *([1] * (g.dim() - 1))) for c in g.chunk(groups)])
            mapped = (rows.repeat(1, k) if g.dim() == 2 else rows) * scale
        assert torch.allclose(grads2[name], mapped, atol=1e-12), name


def test_widen_heads_and_deepen_keep_loss_and_old_gradients():
    model = trained_like(Config(norm_position="pre", dropout=0.0), torch.float64)
    batch = make_batch(make_pairs("shift", 8, seed=4, max_len=6))
    loss, grads = loss_and_grads(model, batch)
    deep = deepen(model).model.double()
    loss2, grads2 = loss_and_grads(deep, batch)
    assert loss2 == loss
    assert torch.allclose(grads2["blocks.2.ffn.up.weight"], grads["blocks.1.ffn.up.weight"], atol=1e-12)
    assert grads2["blocks.1.attn.out.weight"].abs().max() > 0  # the zeroed projection can learn
    heads = widen_heads(model).model.double()
    loss3, grads3 = loss_and_grads(heads, batch)
    assert loss3 == pytest.approx(loss, abs=1e-12)
    pos = origami._head_positions(2)
    qkv3, qkv = grads3["blocks.0.attn.qkv.weight"], grads["blocks.0.attn.qkv.weight"]  # rows [Q; K; V]
    k_old = qkv3[8:16].view(2, 4, 4)[:, pos]  # 2 heads × head_dim 4 × d_model 4
    assert torch.allclose(k_old, qkv[4:8].view(2, 2, 4), atol=1e-12)
    q_old = qkv3[0:8].view(2, 4, 4)[:, pos]
    assert torch.allclose(q_old, qkv[0:4].view(2, 2, 4) / math.sqrt(2), atol=1e-12)
    q_new = qkv3[0:8].view(2, 4, 4)[:, [2, 3]]
    assert q_new.abs().max() > 0  # the zero half of Q receives a gradient: the new frequency learns


def test_a_construction_that_changes_the_function_is_reported_not_returned():
    model = trained_like(Config())
    with pytest.raises(GrowthError, match=r"not the same function: max \|Δlogits\|"):
        widen(model, 2, tol=0.0, noise=0.5)  # float rounding alone exceeds a zero tolerance


def copies_differ(model, d):
    w = model.embed.weight
    return (w[:, :d] - w[:, d:]).abs().max().item()


def test_exact_copies_stay_copies_and_the_noisy_split_breaks_the_symmetry():
    pairs = make_pairs("shift", 64, seed=0, max_len=6)
    small = trained_like(Config(dropout=0.0))
    results = {}
    for noise in (0.0, 0.1):
        grown = widen(small, 2, noise=noise).model
        minitf.train(grown, pairs, steps=20, batch_size=8, lr=1e-2, progress=False)
        results[noise] = copies_differ(grown, 4)
    assert results[0.0] <= 1e-6
    assert results[0.1] > 1e-3


def test_grown_optimizer_carries_the_moments_and_training_continues():
    pairs = make_pairs("shift", 64, seed=0, max_len=6)
    torch.manual_seed(0)
    small = Transformer(Config(dropout=0.0))
    hist = minitf.train(small, pairs, steps=4, batch_size=16, lr=1e-2, progress=False)
    old = hist.optimizer
    for op in (lambda m, o: widen(m, 2, optimizer=o), lambda m, o: widen_heads(m, optimizer=o),
               lambda m, o: deepen(m, after=[1], optimizer=o)):
        grown = op(small, old)
        opt = grown.optimizer
        assert [g["weight_decay"] for g in opt.param_groups] == [g["weight_decay"] for g in old.param_groups]
        params = dict(grown.model.named_parameters())
        for name, p in params.items():
            st = opt.state.get(p)
            if st:
                assert st["exp_avg"].shape == p.shape and st["step"].item() == 4
        h2 = minitf.train(grown.model, pairs, steps=5, batch_size=16, lr=1e-2, progress=False,
                          optimizer=opt)
        assert all(math.isfinite(x) for x in h2.loss)
    g = widen(small, 2, optimizer=old)
    emb_old = old.state[small.embed.weight]["exp_avg"]
    assert torch.allclose(g.optimizer.state[g.model.embed.weight]["exp_avg"][:, :4], emb_old / 2)
    deep = deepen(small, after=[1], optimizer=old)
    new_layer = dict(deep.model.named_parameters())["blocks.2.attn.qkv.weight"]
    state = deep.optimizer.state[new_layer]  # a new layer: zero momentum, its neighbour's scale
    assert torch.count_nonzero(state["exp_avg"]) == 0 and state["step"].item() == 4
    assert torch.allclose(state["exp_avg_sq"],
                          old.state[small.blocks[1].attn.qkv.weight]["exp_avg_sq"].mean().expand_as(new_layer))
    moved = dict(deep.model.named_parameters())["blocks.2.norm2.weight"]
    assert torch.equal(deep.optimizer.state[moved]["exp_avg"],
                       old.state[small.blocks[1].norm2.weight]["exp_avg"])


def test_save_load_grow_save_round_trip(tmp_path):
    model = trained_like(Config())
    path = minitf.save(model, tmp_path / "small.pt")
    loaded = minitf.load(path)
    grown = deepen(widen_heads(widen(loaded, 2).model).model, after=[0]).model
    minitf.save(grown, tmp_path / "grown.pt")
    again = minitf.load(tmp_path / "grown.pt")
    ids = origami.probe_ids()
    assert again.config == grown.config
    assert torch.equal(again(ids), grown.eval()(ids))
    assert (again(ids) - model(ids)).abs().max() < 1e-3  # three folds, post-norm deepen included


def test_draw_widen_shows_w_beside_its_tiling_on_one_centred_scale():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    W = torch.tensor([[1.0, -2.0, 0.5], [3.0, 0.0, -1.0]])
    from minitf.views.figures import draw_widen
    fig = draw_widen(W, 3)
    small, wide, bar = fig.axes
    assert small.images[0].get_array().shape == (2, 3)
    assert torch.allclose(torch.tensor(wide.images[0].get_array().data), origami.widen_weight(W, 3).double())
    norm = wide.images[0].norm
    assert small.images[0].norm is norm and (norm.vmin, norm.vcenter, norm.vmax) == (-3.0, 0.0, 3.0)
    assert bar.get_ylabel() == "weight value"
    assert len(wide.texts) == 6 * 9 and len(wide.lines) == 2 * 2  # every entry written; block borders
    assert all(t.get_fontsize() >= 9 for ax in (small, wide) for t in ax.get_xticklabels() + ax.texts)
    plt.close(fig)


REFUSED = [  # (config, growth, the reason its refusal gives)
    (Config(), lambda m: deepen(m, after=[-1]), "post-norm.*pre-norm"),  # before the first layer
    (Config(positional="sinusoidal"), widen, "sinusoidal"),
    (Config(norm_position="pre", tie_embeddings=True), lambda m: widen(m, 2), "tied embeddings.*cannot be both"),
    *[(Config.modern(d_model=16, n_heads=2), grow, "modern block") for grow in (widen, lambda m: deepen(m, [0]))],
    *[(Config(norm_position="pre", **ablation), grow, "ablation") for ablation in ({"residual": False}, {"ffn": False})
      for grow in (lambda m: widen(m, 2), widen_heads, deepen)],
]


@pytest.mark.parametrize("config, grow, reason", REFUSED, ids=[f"refused-{i}" for i in range(len(REFUSED))])
def test_a_growth_that_cannot_keep_the_function_is_refused_with_the_reason(config, grow, reason):
    with pytest.raises(GrowthError, match=reason):
        grow(trained_like(config))


@pytest.mark.parametrize("grow", [lambda m: deepen(m), lambda m: widen_heads(m),
                                  lambda m: origami.stack(m, [0, 1, 1])])
def test_tied_embeddings_stay_tied_when_deepened_stacked_or_given_wider_heads(grow):
    model = Transformer(Config(norm_position="pre", tie_embeddings=True))
    grown = grow(model).model
    assert grown.config.tie_embeddings and grown.head.weight is grown.embed.weight
    assert torch.equal(grown.embed.weight, model.embed.weight)


def test_widen_keeps_explicit_per_head_frequencies_and_widen_heads_refuses_them():
    model = Transformer(Config(norm_position="pre", rope_freqs=(0.5, 0.3)))  # head 0: 0.5, head 1: 0.3
    grown = widen(model, 2)
    assert grown.model.config.positions.rope_freqs == (0.5, 0.3, 0.5, 0.3)
    rebuilt = Transformer(grown.model.config)  # what a checkpoint of the grown model rebuilds
    assert torch.equal(rebuilt.blocks[0].attn.inv_freq, grown.model.blocks[0].attn.inv_freq)
    with pytest.raises(GrowthError, match="no rule to extend"):
        widen_heads(model)
