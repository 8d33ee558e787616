"""Growth on the language model: FLOP accounting, the WSD schedule, deepen's moment growth, stacking,
the exactness of each growth step with the optimizer carried, and bench/lm_growth.py end to end."""
import json
import math

import pytest
import torch

import minitf
from minitf import origami
from minitf.core.flops import flops_per_token, non_embedding_parameters
from minitf.core.text import random_windows
from minitf.core.train import make_optimizer, train_step
from minitf.experiments.results import load_lm_growth
from support import ROOT, markdown, script

SMALL = minitf.Config(d_model=8, n_heads=2, n_layers=2, d_ff=16, norm_position="pre", dropout=0.0,
                      max_len=16)


@pytest.fixture(scope="module")
def bench():
    return script("bench/lm_growth.py")


def test_flops_per_token_matches_a_hand_count():
    # one pre-norm layer of d_model 8, d_ff 16: qkv 8·24 + 24, out 8·8 + 8, up 8·16 + 16,
    # down 16·8 + 8, two LayerNorms 2·(8 + 8)
    layer = (8 * 24 + 24) + (8 * 8 + 8) + (8 * 16 + 16) + (16 * 8 + 8) + 2 * 16
    assert layer == 600
    head, final_norm = 8 * 256 + 256, 16
    n = 2 * layer + final_norm + head  # the embedding (256·8) is not counted
    assert non_embedding_parameters(minitf.Transformer(SMALL)) == n == 3520
    assert flops_per_token(SMALL, 16) == 6 * 3520 + 6 * 2 * 16 * 8 == 22656
    assert flops_per_token(minitf.Transformer(SMALL)) == 22656  # context defaults to max_len
    post = SMALL.replace(norm_position="post")  # no final norm
    assert flops_per_token(post, 4) == 6 * (2 * layer + head) + 6 * 2 * 4 * 8


def test_flops_per_token_of_the_language_model_and_its_small_stages():
    lm = minitf.Config(d_model=64, n_heads=4, n_layers=4, d_ff=256, norm_position="pre", dropout=0.0,
                       max_len=64)
    assert flops_per_token(lm, 64) == 6 * (233_088 - 256 * 64) + 6 * 4 * 64 * 64 == 1_398_528
    assert flops_per_token(lm.replace(n_layers=1), 64) == 425_088
    with pytest.raises(ValueError, match="context"):
        flops_per_token(lm, 65)


def test_the_budget_wsd_schedule_of_the_growth_study(bench):
    wsd_by_budget = bench.wsd_by_budget
    assert wsd_by_budget(0.0, 1.0, 0.1, 0.2) == 0.0
    assert wsd_by_budget(0.05, 1.0, 0.1, 0.2) == pytest.approx(0.5)
    assert wsd_by_budget(0.1, 1.0, 0.1, 0.2) == wsd_by_budget(0.5, 1.0, 0.1, 0.2) \
        == wsd_by_budget(0.8, 1.0, 0.1, 0.2) == 1.0
    assert wsd_by_budget(0.9, 2.0, 0.1, 0.2) == pytest.approx(1.0)
    assert wsd_by_budget(1.0, 1.0, 0.1, 0.2) == 0.0
    with pytest.raises(ValueError, match="warmup \\+ decay <= 1"):
        wsd_by_budget(0.5, 1.0, 0.9, 0.2)


def _trained(config=SMALL, steps=4, seed=0):
    """A small model and its AdamW after a few steps on byte windows (moments are non-zero)."""
    text = minitf.read_text(ROOT / "data" / "text" / "tinyshakespeare.txt", config.max_len)
    torch.manual_seed(seed)
    model = minitf.Transformer(config)
    opt = make_optimizer(model, 3e-3)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        train_step(model, opt, *random_windows(text.train, 8, gen))
    ids, targets = random_windows(text.val, 16, torch.Generator().manual_seed(1))
    return model, opt, ids, targets


def _loss(model, ids, targets):
    model.eval()
    with torch.no_grad():
        return torch.nn.functional.cross_entropy(model(ids).flatten(0, 1), targets.flatten()).item()


@pytest.mark.parametrize("after", [[0, 1], [0, 0, 0], [-1, 1]])
def test_deepen_keeps_the_loss_bit_for_bit_with_the_optimizer_carried(after):
    model, opt, ids, targets = _trained()
    before = _loss(model, ids, targets)
    g = origami.deepen(model, after, optimizer=opt)
    assert _loss(g.model, ids, targets) == before  # pre-norm: the zeroed layers are an identity
    assert g.model.config.n_layers == 2 + len(after)
    loss = train_step(g.model.train(), g.optimizer, ids, targets)  # the carried optimizer steps
    assert torch.isfinite(loss)


def test_deepen_grows_the_moments_of_new_layers():
    model, opt, _, _ = _trained()
    g = origami.deepen(model, [0, 1], optimizer=opt)  # new order: old 0, new, old 1, new
    old = dict(model.named_parameters())
    new_state = {n: g.optimizer.state[p] for n, p in g.model.named_parameters()}
    for j, source in ((0, 0), (2, 1)):  # old layers keep their moments
        for rest in ("attn.qkv.weight", "ffn.down.bias", "norm1.weight"):
            s_old, s_new = opt.state[old[f"blocks.{source}.{rest}"]], new_state[f"blocks.{j}.{rest}"]
            assert torch.equal(s_old["exp_avg"], s_new["exp_avg"])
            assert torch.equal(s_old["exp_avg_sq"], s_new["exp_avg_sq"])
    for j, neighbour in ((1, 0), (3, 1)):  # new layers: m = 0, v = the neighbour's mean, its step
        for rest in ("attn.qkv.weight", "attn.out.weight", "ffn.up.bias", "norm2.weight"):
            s_old, s_new = opt.state[old[f"blocks.{neighbour}.{rest}"]], new_state[f"blocks.{j}.{rest}"]
            assert torch.count_nonzero(s_new["exp_avg"]) == 0
            assert torch.allclose(s_new["exp_avg_sq"], s_old["exp_avg_sq"].mean().expand_as(s_new["exp_avg_sq"]))
            assert s_new["exp_avg_sq"].min() > 0
            assert s_new["step"] == s_old["step"] == 4


def test_stack_copies_layers_and_their_moments_and_reports_the_jump():
    model, opt, ids, targets = _trained()
    g = origami.stack(model, [0, 1, 0, 1], optimizer=opt)
    assert g.model.config.n_layers == 4 and g.exactness == "not function-preserving"
    assert g.max_logit_diff > 0 and math.isinf(g.tolerance)
    assert "not function-preserving" in str(g)
    old = dict(model.named_parameters())
    for j, i in enumerate([0, 1, 0, 1]):
        for rest in ("attn.qkv.weight", "ffn.down.weight", "norm2.bias"):
            p_new = dict(g.model.named_parameters())[f"blocks.{j}.{rest}"]
            assert torch.equal(p_new, old[f"blocks.{i}.{rest}"])
            s_old, s_new = opt.state[old[f"blocks.{i}.{rest}"]], g.optimizer.state[p_new]
            assert torch.equal(s_new["exp_avg"], s_old["exp_avg"])
            assert torch.equal(s_new["exp_avg_sq"], s_old["exp_avg_sq"])
            assert s_new["exp_avg"] is not s_old["exp_avg"] and s_new["step"] == s_old["step"]
    p0, p2 = g.model.blocks[0].attn.qkv.weight, g.model.blocks[2].attn.qkv.weight
    assert p0.data_ptr() != p2.data_ptr()  # copies, not one shared tensor
    assert _loss(g.model, ids, targets) != _loss(model, ids, targets)  # the function changed
    assert torch.equal(origami.stack(model, [0, 1]).model(ids), model(ids))  # the same order: the same model
    with pytest.raises(origami.GrowthError, match="order"):
        origami.stack(model, [0, 2])
    with pytest.raises(origami.GrowthError, match="order"):
        origami.stack(model, [])


def test_widen_keeps_the_loss_within_rounding_with_the_optimizer_carried():
    model, opt, ids, targets = _trained()
    before = _loss(model, ids, targets)
    g = origami.widen(model, 2, optimizer=opt)
    assert g.model.config.d_model == 16
    assert abs(_loss(g.model, ids, targets) - before) < 1e-5
    assert torch.isfinite(train_step(g.model.train(), g.optimizer, ids, targets))


def test_the_new_layers_learning_rate_rule_boosts_exactly_the_layers_deepen_added(bench):
    arm = bench.ARMS["deepen 2→4, τ=0.75, new layers 2× LR"]
    assert bench.new_layers(arm, 2) == [1, 3]
    small, opt, _, _ = _trained()  # 2 layers, moments non-zero
    g = origami.deepen(small, arm["after"], optimizer=opt)
    moments = {id(p): g.optimizer.state[p]["exp_avg_sq"].clone() for p in g.model.parameters()}
    bench.boost(g.model, g.optimizer, bench.new_layers(arm, 2), 2.0)
    boosted = {id(p) for group in g.optimizer.param_groups if group.get("lr_scale") == 2.0
               for p in group["params"]}
    new = {id(p) for j in (1, 3) for p in g.model.blocks[j].parameters()}
    assert boosted == new and len(g.optimizer.param_groups) == 4
    assert sum(len(group["params"]) for group in g.optimizer.param_groups) == len(list(g.model.parameters()))
    assert all(torch.equal(g.optimizer.state[p]["exp_avg_sq"], moments[id(p)]) for p in g.model.parameters())


def test_reach_interpolates_between_evaluations(bench):
    curve = [{"flops": 10, "val_loss": 3.0}, {"flops": 20, "val_loss": 2.0}, {"flops": 30, "val_loss": 1.5}]
    assert bench.reach(curve, 2.5) == pytest.approx(15)
    assert bench.reach(curve, 1.75) == pytest.approx(25)
    assert bench.reach(curve, 3.5) == 10
    assert bench.reach(curve, 1.0) is None


@pytest.mark.slow
def test_quick_bench_runs_every_arm_and_keeps_the_function_where_it_should(tmp_path, bench):
    arms = ["deepen 2→4, τ=0.5", "stack 2→4, τ=0.75", "widen d32→64, τ=0.75", "scratch, 0.7 budget"]
    assert bench.main(["--quick", "--out", str(tmp_path), "--arms", *arms]) == 0
    result = json.loads((tmp_path / "lm_growth.json").read_text())
    assert set(result["summary"]["arms"]) == {"scratch", *arms}
    budget = result["budget_flops"]
    for run in result["runs"].values():
        share = bench.ARMS[run["arm"]].get("budget", 1.0)
        assert budget * share <= run["flops"] * (1 + 1e-12) < budget * share + 64 * 32 * 1_398_528
        assert [p["fraction"] for p in run["curve"]] == result["fractions"]
        growth = run["growth"]
        if growth and growth["operation"].startswith("deepen"):
            assert growth["loss_after"] == growth["loss_before"] and growth["max_logit_diff"] == 0
        if growth and growth["operation"].startswith("widen"):
            assert abs(growth["loss_after"] - growth["loss_before"]) < 1e-5
    assert (tmp_path / "lm_growth.md").read_text().startswith("# Growth on the language model")


# --- the stored result (minitf/experiments/stored/lm_growth.json), read through minitf.results ----------------

@pytest.fixture(scope="module")
def stored():
    return json.loads((ROOT / "minitf" / "experiments" / "stored" / "lm_growth.json").read_text())


def test_the_stored_runs_are_complete_and_spent_the_same_budget(stored, bench):
    assert not stored["quick"] and stored["seeds"] == [0, 1, 2] and set(stored["summary"]["arms"]) == set(bench.ARMS)
    full = stored["budget_flops"]
    assert full == stored["budget_steps"] * 32 * 64 * 1_398_528
    for name, arm in bench.ARMS.items():
        for seed in stored["seeds"]:
            run = stored["runs"][bench.key(name, seed, stored["lr"])]
            budget = arm.get("budget", 1.0) * full
            assert budget <= run["flops"] * (1 + 1e-12) < budget + 32 * 64 * 1_398_528  # at most one step over
            assert run["tokens"] == run["steps"] * 32 * 64
            assert [p["fraction"] for p in run["curve"]] == stored["fractions"]


def test_the_stored_growth_steps_kept_the_function_where_the_operator_is_exact(stored):
    for run in stored["runs"].values():
        g = run["growth"]
        if g is None:
            continue
        if g["operation"].startswith("deepen"):   # pre-norm: bit-exact, with the optimizer carried
            assert g["max_logit_diff"] == 0 and g["loss_after"] == g["loss_before"], run["arm"]
        elif g["operation"].startswith("widen"):  # the split: exact up to float32 rounding
            assert abs(g["loss_after"] - g["loss_before"]) < 1e-4, run["arm"]
        else:                                     # stacking copies layers: the function changes
            assert g["operation"].startswith("stack") and g["loss_after"] != g["loss_before"]


def test_the_stored_summary_follows_from_the_runs(stored, bench):
    lr, runs, full = stored["lr"], stored["runs"], stored["budget_flops"]
    assert lr == min(stored["lrs"], key=lambda x: stored["lr_tuning"][f"{x:g}"])
    assert min(stored["lrs"]) < lr < max(stored["lrs"])  # scratch's best rate is inside the tuned range
    scratch = [runs[bench.key("scratch", s, lr)]["final_val_loss"] for s in stored["seeds"]]
    s = stored["summary"]
    assert s["target_loss"] == pytest.approx(sum(scratch) / 3)
    best_scratch = min(x for x in s["arms"]["scratch"]["ratios"] if x is not None)
    for name, a in s["arms"].items():
        rs = [runs[bench.key(name, seed, lr)] for seed in stored["seeds"]]
        ratios = [None if bench.reach(r["curve"], s["target_loss"]) is None
                  else bench.reach(r["curve"], s["target_loss"]) / full for r in rs]
        assert a["ratios"] == pytest.approx(ratios) if None not in ratios else a["ratios"] == ratios
        claimed = "grow" in bench.ARMS[name] and None not in ratios and max(ratios) < best_scratch
        assert a["beats_scratch_range"] == claimed
        assert a["goal_met"] == ("grow" in bench.ARMS[name] and None not in ratios and max(ratios) <= 0.7)


def test_load_lm_growth_gives_arms_curves_and_growth_steps(stored):
    r = load_lm_growth()
    assert [a.name for a in r.arms] == list(stored["summary"]["arms"])
    assert len(r.curves) == 3 * len(r.arms) and r.lr == stored["lr"]
    for c in r.curves:
        arm = r.arm(c.arm)
        assert (c.grown_at is not None) == arm.grown
        assert c.compute[-1] == pytest.approx(arm.budget, abs=0.01)
        if c.grown_at is not None:
            assert c.loss_before is not None and 0 < c.grown_at < arm.budget
    assert r.arm("scratch").bound == 0 and not r.arm("scratch").grown
    assert r.arm("deepen 1→4, τ=0.75").bound == pytest.approx(0.75 * (1 - 425_088 / 1_398_528))
    assert "scratch" in r.table() and len(r.table().splitlines()) == len(r.arms) + 1


# --- notebook 13 (the growth report), section 3: its sentences held to the stored result ----------

@pytest.fixture(scope="module")
def section9():
    """Notebook 13's section on the language model (section 9 of notebook 07 until it moved there),
    up to the report's summary."""
    text = markdown("13_growth_report")
    return text[text.index("## 3. Growth on the language model"):text.index("## Summary")]


def _mean(xs):
    return sum(xs) / len(xs)


def test_notebook_13_states_the_command_the_budget_and_the_bounds(section9, stored):
    r = load_lm_growth()
    text = markdown("13_growth_report")
    intro = text[:text.index("## 1.")]
    assert f"`{r.command}`" in intro and r.command == "python bench/lm_growth.py"  # how to run it again
    assert f"{r.budget_steps} steps" in section9 and f"{r.budget_flops / 1e12:.2f} TFLOP" in section9
    assert f"{r.lr:g} was best" in section9
    lm = minitf.Config(d_model=64, n_heads=4, n_layers=4, d_ff=256, norm_position="pre", max_len=64)
    big = flops_per_token(lm, 64)
    bound = {L: [round(t * (1 - flops_per_token(lm.replace(n_layers=L), 64) / big), 2) for t in (0.5, 0.75)]
             for L in (1, 2)}
    assert bound == {1: [0.35, 0.52], 2: [0.23, 0.35]}
    assert "0.35 and 0.52 for 1 → 4 layers" in section9 and "0.23 and 0.35 for 2 → 4" in section9
    assert "One layer costs 0.30 of four" in section9
    assert round(flops_per_token(lm.replace(n_layers=1), 64) / big, 2) == 0.30
    assert round(6 * (64 * 256 + 256) / flops_per_token(lm.replace(n_layers=1), 64), 2) == 0.23  # the head's share


def test_notebook_13_stack_demo_sentence_matches_the_checkpoint():
    from minitf.core.text import tiled_windows
    lm = minitf.load(ROOT / "data" / "checkpoints" / "lm.pt")
    text = minitf.read_text(ROOT / "data" / "text" / "tinyshakespeare.txt", 64)
    ids, targets = tiled_windows(text.val, 64)
    base = _loss(lm, ids, targets)
    jump = _loss(origami.stack(lm, [0, 1, 2, 3, 2, 3]).model, ids, targets) - base
    assert round(jump, 2) == 0.32
    assert _loss(origami.deepen(lm, [1, 3]).model, ids, targets) == base


def test_notebook_13_result_and_explanation_match_the_stored_numbers(section9):
    r = load_lm_growth()
    arms = {a.name: a for a in r.arms}
    claimed = [a for a in r.arms if a.beats_scratch_range]
    assert [a.name for a in claimed] == ["deepen 2→4, τ=0.75", "stack 2→4, τ=0.75", "deepen 2→4, τ=0.8",
                                         "deepen 2→4, τ=0.75, new layers 2× LR"]
    assert "Four arms reach that loss" in section9
    for a in claimed:
        lo, hi = a.ratio_range
        assert f"{a.name} ({lo:.2f}–{hi:.2f} of scratch's FLOPs)" in section9
    best = r.best()
    lo, hi = best.ratio_range
    assert best.name == "deepen 2→4, τ=0.8" and f"its bound was {best.bound:.2f}" in section9
    # "moved the ratio by about a hundredth": the added arms against the arm they push further
    base = arms["deepen 2→4, τ=0.75"]
    for name in ("deepen 2→4, τ=0.8", "deepen 2→4, τ=0.75, new layers 2× LR"):
        assert abs(_mean(arms[name].ratios) - _mean(base.ratios)) < 0.015
    saving = f"{round(100 * (1 - hi))} %–{round(100 * (1 - lo))} %"
    assert f"saves {saving} of the compute" in section9
    wide = arms["widen d32→64, τ=0.75"]
    assert f"after {wide.ratio_range[0]:.2f}–{wide.ratio_range[1]:.2f} of the FLOPs" in section9
    assert _mean(wide.final_losses) < r.target_loss and not wide.beats_scratch_range
    assert 1 - hi < 0.3 and not any(a.goal_met for a in r.arms)  # "but not 30 %": the goal is missed
    assert f"Scratch ends at {r.target_loss:.3f}" in section9
    short = [a for a in r.arms if a.budget < 1]
    assert all(None not in a.final_losses and min(a.final_losses) > r.target_loss for a in short)
    best_short = min((a for a in short if a.grown), key=lambda a: _mean(a.final_losses))
    assert f"ends at {_mean(best_short.final_losses):.3f}" in section9
    assert f"scratch at {_mean(arms['scratch, 0.7 budget'].final_losses):.3f}" in section9
    L = {n: {f: _mean(v) for f, v in a.loss_at.items() if None not in v} for n, a in arms.items()}
    d24 = "deepen 2→4, τ=0.75"
    for name in ("scratch", d24, "deepen 1→4, τ=0.75", "widen d32→64, τ=0.75"):
        assert f"{L[name][0.5]:.3f}" in section9
    assert L["widen d32→64, τ=0.75"][0.5] < L[d24][0.5] < L["scratch"][0.5]  # the small stages lead
    assert f"by {L['scratch'][0.75] - L[d24][0.75]:.3f} nats; at the end by {r.target_loss - L[d24][1.0]:.3f}" in section9
    assert (f"worth {L['scratch'][0.75] - L['scratch'][1.0]:.3f} nats to scratch and only "
            f"{L[d24][0.75] - L[d24][1.0]:.3f}") in section9
    s14, s24 = arms["stack 1→4, τ=0.75"], arms["stack 2→4, τ=0.75"]
    assert f"costs {_mean(s24.growth_jump):.2f} nats at once" in section9
    assert f"costs {_mean(s14.growth_jump):.2f} nats" in section9
    assert all(abs(j) < 1e-4 for n, a in arms.items() if n.startswith(("deepen", "widen")) for j in a.growth_jump)
