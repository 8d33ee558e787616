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
    """The point of the switch: a training run started one ulp away drifts, as between CPUs. After
    40 steps of AdamW the weights of the two runs differ by 1e-4 to 1e-3 of their size (measured
    under the AVX2, default and AVX-512 kernels: 8.7e-5, 6.9e-4 and 2.4e-3), hundreds to
    thousands of times the 1.6e-7 they started apart; the test asks for a hundred times."""
    pairs = minitf.make_pairs("shift", 512, seed=0, max_len=6)
    runs = []
    for seed in (None, 1):
        model, _ = _model(monkeypatch, seed)
        start = [p.detach().clone() for p in model.parameters()]
        torch.manual_seed(1)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
        for step in range(40):
            first = (step * 16) % len(pairs)
            ids, targets = minitf.make_batch(pairs[first:first + 16])
            loss = minitf.masked_loss(model(ids), targets)
            opt.zero_grad(), loss.backward(), opt.step()
        runs.append((start, [p.detach().clone() for p in model.parameters()]))
    (start0, end0), (start1, end1) = runs

    def apart(a, b):
        return max(float(((x - y).abs() / (y.abs() + 1e-3)).max()) for x, y in zip(a, b))
    assert 0 < apart(start1, start0) < 1e-6
    assert apart(end1, end0) > 100 * apart(start1, start0)


def test_a_bad_value_is_named(monkeypatch):
    monkeypatch.setenv(ENV, "one")
    with pytest.raises(ValueError, match="MINITF_PERTURB='one': expected an integer seed"):
        perturbation_seed()
