"""The stored growth benchmarks, read through minitf.results: the numbers notebook 07 quotes.

Notebook 07 shows the tables and curves; the claims its text makes about them are checked here,
together with the consistency of the stored files (summaries = the runs, compute = the stages).
"""
import json
import math

import pytest

import minitf
from support import ROOT
from minitf.core.origami import widen
from minitf.experiments.results import RESULTS, load_recipe_growth


@pytest.fixture(scope="module")
def recipe():
    return load_recipe_growth()


@pytest.fixture(scope="module")
def raw():
    return json.loads((RESULTS / "origami_growth.json").read_text())


@pytest.fixture(scope="module")
def rraw():
    return json.loads((RESULTS / "origami_recipe_growth.json").read_text())


def r2(xs):
    return round(min(xs), 2), round(max(xs), 2)


# --- bench/origami_growth.py ----------------------------------------------------------------------

def test_the_stored_growth_summary_is_the_mean_of_its_runs_at_equal_compute(raw):
    runs, seeds = raw["runs"], raw["settings"]["seeds"]
    for name, s in raw["summary"].items():
        rs = [r for r in runs if r["arm"] == name]
        assert len(rs) == len(seeds)
        assert abs(s["loss"] - sum(r["final"]["loss"] for r in rs) / len(rs)) < 1e-9
        assert all(0.98 < r["compute_ratio"] < 1.02 for r in rs)  # every arm used the same compute
        for r in rs:
            target = next(x for x in runs if x["arm"] == "scratch" and x["seed"] == r["seed"])["curve"][-1][1]
            assert any(loss <= target for _, loss in r["curve"]) == (r["reach_scratch_loss_at"] is not None)
    assert raw["big_parameters"] == 33728 and raw["settings"]["steps"] == 1200
    assert raw["settings"]["batch_size"] == 32 and raw["data"]["n_train"] == 3000


def test_load_growth_gives_readable_arms_curves_and_growth_steps(growth, raw):
    assert [a.arm for a in growth.arms] == ["from scratch", "grow after 1,500 steps", "grow after 300 steps",
                                            "grow after 300, Adam kept", "grow after 300, exact copies",
                                            "staged 4→8→16→32"]
    assert len(growth.curves) == len(raw["runs"]) and growth.seeds == [0, 1]
    ticks = {c.arm: len(c.grown_at) for c in growth.curves}
    assert ticks == {"from scratch": 0, "grow after 1,500 steps": 1, "grow after 300 steps": 1,
                     "grow after 300, Adam kept": 1, "grow after 300, exact copies": 1, "staged 4→8→16→32": 3}
    late = next(c for c in growth.curves if c.arm == "grow after 1,500 steps")
    budget = next(c for c in growth.curves if c.arm == "from scratch" and c.seed == late.seed).compute[-1]
    assert 0.08 < late.grown_at[0] / budget < 0.12  # "about 10 % of the budget"
    assert all(c.compute == sorted(c.compute) for c in growth.curves)
    assert "from scratch" in growth.table() and "exact_copies" not in growth.table()


def test_the_growth_notebook_claims(growth):
    scratch = growth.arm("from scratch")
    grown = [a for a in growth.arms if a is not scratch]
    assert all(a.reached_scratch == 0 and a.loss_range[0] > scratch.loss_range[1] for a in grown)
    assert r2([a.loss for a in grown]) == (3.47, 3.94) and round(scratch.loss, 2) == 3.00
    best = min(grown, key=lambda a: a.loss)
    assert best.arm == "grow after 300, Adam kept" and 0.28 < best.scratch_as_good_after < 0.4  # a third
    assert max(grown, key=lambda a: a.loss).arm == "grow after 300, exact copies"
    final = {(c.arm, c.seed): c.loss[-1] for c in growth.curves}
    early = "grow after 300 steps"
    assert all(final["grow after 300, Adam kept", s] < final[early, s] for s in growth.seeds)
    for arm in ("grow after 1,500 steps", "staged 4→8→16→32"):  # mixed: better in one seed, worse in the other
        assert len({final[arm, s] < final[early, s] for s in growth.seeds}) == 2
    tiny = growth.start_model()
    assert minitf.count_parameters(tiny) == growth.small_parameters == 2648
    assert round(tiny.metadata["val"]["char_accuracy"], 2) == 0.15


def test_the_stored_tiny_model_is_the_one_the_benchmark_saw(growth):
    tiny = growth.start_model()
    scores = minitf.evaluate(tiny, minitf.read_pairs(ROOT / "data" / "val.txt"))
    assert all(abs(scores[k] - tiny.metadata["val"][k]) < 1e-4 for k in scores)


# --- bench/origami_recipe_growth.py ---------------------------------------------------------------

def test_the_recipe_benchmark_grows_into_exactly_the_recipe(recipe, rraw):
    r = recipe.recipe_config
    assert (r.d_model, r.n_heads, r.head_dim, r.d_ff, r.norm_position, r.dropout_p) == (32, 4, 8, 128, "pre", 0.0)
    assert widen(minitf.Transformer(recipe.small_config), 4).model.config == r
    s = rraw["settings"]
    assert (s["n_train"], s["repeats"], s["lr"], s["batch_size"], s["n_val"], s["eval_every"]) == \
        (30000, 0.33, 6e-3, 64, 500, 250)
    for run in rraw["runs"]:  # the stored numbers are consistent with the stored curves
        stages = [st for st in run["stages"] if "d_model" in st]
        assert sum(st["steps"] for st in stages) == 3000 and stages[-1]["d_model"] == 32
        assert abs(run["compute"] - sum(6 * st["parameters"] * st["tokens"] for st in stages)) < 1e-3 * run["compute"]
        assert all(st["max_logit_diff"] < 1e-4 for st in run["stages"] if "growth" in st)  # function kept
        for label, (key, target, sign) in [("exact_match >= 0.99", ("exact_match", 0.99, 1)),
                                           ("loss <= 0.05", ("loss", 0.05, -1)),
                                           ("loss <= 0.01", ("loss", 0.01, -1))]:
            first = next((p for p in run["curve"] if sign * p[key] >= sign * target), None)
            stored = rraw["summary"][f"{run['arm']} seed {run['seed']}"]["reach"][label]
            assert (first is None and stored is None) or first["step"] == stored["step"]


def test_load_recipe_growth_marks_each_growth_at_the_end_of_a_small_stage(recipe, rraw):
    for c, run in zip(recipe.curves, rraw["runs"]):
        small_points = [p["compute"] for p in run["curve"] if p["d_model"] != 32]
        assert len(c.grown_at) == len({p["d_model"] for p in run["curve"]}) - 1
        if c.grown_at:
            assert abs(c.grown_at[-1] - max(small_points)) < 1e-6 * max(small_points)
    assert "from scratch" in recipe.table() and "grow_500" not in recipe.table()


def test_the_recipe_notebook_claims(recipe, rraw):
    runs = rraw["runs"]
    grows = [r for r in recipe.runs if r.arm != "from scratch"]
    ratio = {label: [r.reach[label][1] for r in grows] for label in grows[0].reach}
    assert all(r.final_exact_match >= 0.996 for r in recipe.runs)
    assert r2(ratio["exact match ≥ 99 %"]) == (0.88, 1.04)
    assert r2(ratio["loss ≤ 0.05"]) == (1.06, 1.90) and min(ratio["loss ≤ 0.05"]) > 1
    assert r2(ratio["loss ≤ 0.01"]) == (0.91, 1.14)
    for seed in recipe.seeds:
        scratch = next(r for r in runs if r["arm"] == "scratch" and r["seed"] == seed)
        first_99 = next(p for p in scratch["curve"] if p["exact_match"] >= 0.99)
        assert round(scratch["curve"][0]["compute"] / first_99["compute"], 3) == 0.125  # one evaluation
        assert all(r["final"]["loss"] > scratch["final"]["loss"] for r in runs
                   if r["seed"] == seed and r["arm"] != "scratch")
    scratch_compute = {r.seed: r.compute for r in recipe.runs if r.arm == "from scratch"}
    assert r2([r.compute / scratch_compute[r.seed] for r in grows]) == (0.72, 0.86)
    small_points = [p for r in runs for p in r["curve"] if p["d_model"] == 8]
    assert 3.5 <= min(p["loss"] for p in small_points) and max(p["loss"] for p in small_points) <= 4.2
    assert max(p["exact_match"] for p in small_points) <= 0.004 and round(math.log(256), 1) == 5.5
    after_growth = [next(p for p in r["curve"] if p["d_model"] == 32)["loss"] for r in runs
                    if r["arm"] in ("grow_500", "grow_1000")]
    scratch_250 = [r["curve"][0]["loss"] for r in runs if r["arm"] == "scratch"]
    assert 3.15 < min(after_growth) and max(after_growth) < 3.5 and round(max(scratch_250), 1) == 2.5
    assert 6.5 < recipe.recipe_parameters / recipe.small_parameters < 7.5  # a seventh
    leads, behind = [], []
    for seed in recipe.seeds:  # scratch leads until its step 1,000
        scratch = next(r for r in runs if r["arm"] == "scratch" and r["seed"] == seed)
        lead = next(p for p in scratch["curve"] if p["step"] == 1000)
        leads.append(lead["exact_match"])
        behind += [p["exact_match"] for r in runs if r["seed"] == seed and r["arm"] != "scratch"
                   for p in r["curve"] if p["compute"] <= lead["compute"]]
    assert (round(min(leads), 2), round(max(leads), 2), round(max(behind), 2)) == (0.76, 0.94, 0.39)
