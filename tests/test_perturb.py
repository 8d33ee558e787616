"""MINITF_PERTURB, the stand-in for another CPU: what it changes and what it must leave alone."""
import pytest
import torch

import minitf
from minitf.core.perturb import ENV, perturbation_seed, perturb_weights


def _model(monkeypatch, seed=None):
    if seed is None:
        monkeypatch.delenv(ENV, raising=False)
    else:
        monkeypatch.setenv(ENV, str(seed))
    torch.manual_seed(0)
    model = minitf.Transformer(minitf.Config(d_model=8, n_heads=2, zero_init=False))
    after = torch.rand(3)  # the caller's random state after the model is built
    return model, after


def test_unset_changes_nothing(monkeypatch):
    a, _ = _model(monkeypatch)
    monkeypatch.setenv(ENV, "")
    torch.manual_seed(0)
    b = minitf.Transformer(minitf.Config(d_model=8, n_heads=2, zero_init=False))
    for (name, p), q in zip(a.named_parameters(), b.parameters()):
        assert torch.equal(p, q), name


@torch.no_grad()
def test_each_random_weight_moves_by_a_rounding_error_and_constants_stay(monkeypatch):
    plain, after_plain = _model(monkeypatch)
    nudged, after_nudged = _model(monkeypatch, seed=1)
    eps = torch.finfo(torch.float32).eps
    moved = 0
    for (name, p), q in zip(plain.named_parameters(), nudged.parameters()):
        if bool((p == p.reshape(-1)[0]).all()):
            assert torch.equal(p, q), f"{name} is a constant and must stay exact"
            continue
        ratio = (q.detach().double() / p.detach().double())[p != 0]
        # x·(1 ± ε) rounds to one or two ulps of x: a relative change of at most 2ε
        assert float((ratio - 1).abs().max()) <= 2 * eps, name
        moved += int((q != p).sum())
    assert moved > 0.9 * sum(p.numel() for p in plain.parameters() if p.numel() > 1 and p.std() > 0)
    assert torch.equal(after_plain, after_nudged), "the switch must not draw from the global generator"


def test_two_seeds_draw_different_signs():
    a = torch.nn.Linear(16, 16)
    b, c = torch.nn.Linear(16, 16), torch.nn.Linear(16, 16)
    b.load_state_dict(a.state_dict()), c.load_state_dict(a.state_dict())
    perturb_weights(b, 1), perturb_weights(c, 2)
    assert not torch.equal(b.weight, c.weight)


def test_a_float32_trajectory_parts_under_it(monkeypatch):
    """The point of the switch: starting one ulp away, a float32 training run's losses part from the
    unperturbed run's within a few steps, as they do between CPUs."""
    pairs = minitf.make_pairs("shift", 64, seed=0, max_len=6)
    losses = []
    for seed in (None, 1):
        model, _ = _model(monkeypatch, seed)
        torch.manual_seed(1)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
        ids, targets = minitf.make_batch(pairs[:16])
        for _ in range(20):
            loss = minitf.masked_loss(model(ids), targets)
            opt.zero_grad(), loss.backward(), opt.step()
        losses.append(loss.item())
    assert losses[0] != losses[1]


def test_a_bad_value_is_named(monkeypatch):
    monkeypatch.setenv(ENV, "one")
    with pytest.raises(ValueError, match="MINITF_PERTURB='one': expected an integer seed"):
        perturbation_seed()
