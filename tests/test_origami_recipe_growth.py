"""bench/origami_recipe_growth.py grows models that compute the same function (no timing here).

The benchmark compares growth with training from scratch; that only means something if each growth
step hands over the small model's function unchanged, to exactly the recipe's architecture, with
Adam's moments carried over.
"""

import pytest
import torch

from minitf import Transformer, make_batch, make_pairs, masked_loss, train
from support import script

bench = script("bench/origami_recipe_growth.py", "bench_origami_recipe_growth")


def trained(config, steps=5, seed=0):
    torch.manual_seed(seed)
    model = Transformer(config)
    pairs = make_pairs("shift", 64, seed=seed, max_len=6, repeats=0.33)
    hist = train(model, pairs, steps=steps, batch_size=16, lr=6e-3, seed=seed, progress=False)
    return model, hist.optimizer, pairs


def held_out_loss(model, pairs):
    model.eval()
    with torch.no_grad():
        ids, targets = make_batch(pairs)
        return masked_loss(model(ids), targets).item()


def test_small_and_recipe_are_the_same_family():
    assert bench.SMALL.d_model * 4 == bench.RECIPE.d_model == 32
    assert (bench.SMALL.n_heads, bench.SMALL.head_dim, bench.SMALL.d_ff) == (1, 8, 32)
    assert (bench.RECIPE.n_heads, bench.RECIPE.head_dim, bench.RECIPE.d_ff) == (4, 8, 128)
    assert bench.SMALL.norm_position == bench.RECIPE.norm_position == "pre"
    assert bench.SMALL.dropout_p == bench.RECIPE.dropout_p == 0.0


@pytest.mark.parametrize("path", [[32], [16, 32]], ids=["x4", "x2-x2"])
def test_growth_preserves_the_function_and_lands_on_the_recipe(path):
    model, optimizer, pairs = trained(bench.SMALL)
    before = held_out_loss(model, pairs)
    for i, d in enumerate(path):
        g = bench.grow(model, d, optimizer=optimizer, seed=i)
        assert g.model.config == bench.family(d)
        assert g.max_logit_diff < 1e-4
        # every parameter of the grown model has Adam state carried from the small one
        assert all(g.optimizer.state[p]["exp_avg_sq"].shape == p.shape for p in g.model.parameters())
        model, optimizer = g.model, g.optimizer
    assert model.config == bench.RECIPE
    assert abs(held_out_loss(model, pairs) - before) < 1e-5
    # and it trains on with the carried optimizer
    hist = train(model, pairs, steps=3, batch_size=16, lr=6e-3, seed=1, progress=False, optimizer=optimizer)
    assert hist.optimizer is optimizer and len(hist.loss) == 3


def test_growth_to_a_width_other_than_the_recipe_is_not_mistaken_for_it():
    model, optimizer, _ = trained(bench.SMALL, steps=1)
    g = bench.grow(model, 16, optimizer=optimizer)
    assert g.model.config == bench.family(16) != bench.RECIPE


def test_first_reach_uses_the_right_direction():
    curve = [{"loss": 0.2, "exact_match": 0.5}, {"loss": 0.04, "exact_match": 0.995}]
    assert bench.first_reach(curve, "exact_match", 0.99, 1) is curve[1]
    assert bench.first_reach(curve, "loss", 0.05, -1) is curve[1]
    assert bench.first_reach(curve, "loss", 0.01, -1) is None
