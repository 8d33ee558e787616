"""What notebook 07 says about whether growing pays (its section 7, a few sentences and one figure),
and the summary of notebook 13, the report it links to, held to the stored benchmark results.
Notebook 13's own sections are held in tests/test_results_origami.py and tests/test_lm_growth.py."""
import json
import statistics

import pytest

import minitf
from conftest import ROOT
from minitf.experiments.results import (GROWTH_START, load_growth, load_lm_growth, load_recipe_growth,
                                        plot_growth_verdict)


def markdown(name: str) -> str:
    nb = json.loads((ROOT / "notebooks" / name).read_text())
    return " ".join(" ".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown").split())


@pytest.fixture(scope="module")
def section7():
    text = markdown("07_origami_expansion.ipynb")
    return text[text.index("## 7. Does growing pay?"):]


@pytest.fixture(scope="module")
def growth():
    return load_growth()


@pytest.fixture(scope="module")
def lm_growth():
    return load_lm_growth()


def test_07_shift_sentences(section7, growth):
    scratch = growth.arm("from scratch")
    grown = [a for a in growth.arms if a is not scratch]
    best = min(grown, key=lambda a: a.loss)
    assert len(grown) == 5 and "the best of five ways to grow" in section7
    assert f"ends at a held-out loss of {best.loss:.2f} nats, the big model from scratch at {scratch.loss:.2f}" in section7
    assert all(a.loss > scratch.loss for a in grown)  # "every way of growing ended worse than scratch"
    assert f"({min(a.loss for a in grown):.2f}–{max(a.loss for a in grown):.2f})" in section7
    big = json.loads((ROOT / "minitf/experiments/stored/origami_growth.json").read_text())["big_config"]
    assert (big["n_heads"], big["head_dim"]) == (16, 2) and "sixteen random heads" in section7
    tiny = minitf.load(GROWTH_START)
    assert f"got {tiny.metadata['val']['char_accuracy']:.0%} of held-out characters right".replace("%", " %") in section7


def test_07_recipe_sentence(section7):
    recipe = load_recipe_growth()
    grows = [r for r in recipe.runs if r.arm != "from scratch"]
    ratios = [r.reach["exact match ≥ 99 %"][1] for r in grows]
    assert f"needed {min(ratios):.2f}–{max(ratios):.2f} of scratch's compute to get 99 %" in section7
    for seed in recipe.seeds:  # "and ended with a worse loss"
        scratch = recipe.run("from scratch", seed)
        assert all(r.final_loss > scratch.final_loss for r in grows if r.seed == seed)


def test_07_language_model_sentences(section7, lm_growth):
    best = lm_growth.best()
    lo, hi = best.ratio_range
    assert best.name == "deepen 2→4, τ=0.8" and len(best.ratios) == len(lm_growth.seeds) == 3
    assert "grown from 2 to 4 layers by `deepen` after 0.8 of the budget" in section7
    assert f"with {lo:.2f}–{hi:.2f} of scratch's FLOPs, in each of three seeds: about 10 % saved" in section7
    assert 0.085 < 1 - statistics.mean(best.ratios) < 0.115
    claimed = [a for a in lm_growth.arms if a.beats_scratch_range]
    ratios = [x for a in claimed for x in a.ratios]
    assert len(claimed) == 4 and "The four ways of growing that beat scratch saved" in section7
    assert f"saved {round(100 * (1 - max(ratios)))} %–{round(100 * (1 - min(ratios)))} %" in section7
    assert not any(a.goal_met for a in lm_growth.arms) and min(ratios) > 0.85  # "none came near 30 %"
    # "ahead of scratch at the same compute (1.94 against 2.00 nats at half the budget)"
    two = statistics.mean(lm_growth.arm("deepen 2→4, τ=0.8").loss_at[0.5])
    scratch = statistics.mean(lm_growth.arm("scratch").loss_at[0.5])
    assert f"({two:.2f} against {scratch:.2f} nats at half the budget)" in section7 and two < scratch
    # the takeaway: "9 %–10 % fewer FLOPs in every seed"
    assert f"{round(100 * (1 - hi))} %–{round(100 * (1 - lo))} % fewer FLOPs in every seed" in section7


def test_07_published_range_is_the_one_notebook_12_cites(section7):
    report = markdown("13_growth_report.ipynb")
    cited = {"saved 22 % of compute": 22, "bert2BERT about 45 %": 45, "LiGO about 40 %": 40,
             "G_stack 54.6 % at 7B": 54.6}
    assert all(phrase in report for phrase in cited)
    assert f"Published savings of {min(cited.values()):.0f}–{max(cited.values()):.0f} %" in section7
    assert "models of 10⁸–10¹⁰ parameters" in section7 and "models of 10⁸–10¹⁰ parameters" in report  # 7B < 10¹⁰


def test_the_verdict_figure_draws_the_arms_the_text_names(growth, lm_growth):
    fig = plot_growth_verdict(growth, lm_growth)
    texts = " ".join(t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text")))
    assert "grow after 300, Adam kept" in texts and "2 → 4 layers" in texts and "deepen after 0.8" in texts
    lo, hi = lm_growth.best().ratio_range
    assert f"{lo:.2f}–{hi:.2f}" in texts


def test_12_summary(lm_growth):
    summary = markdown("13_growth_report.ipynb")
    summary = summary[summary.index("## Summary"):]
    best = lm_growth.best()
    assert "about 10 % of the FLOPs in every seed, far from the 30 %" in summary
    assert 0.085 < 1 - statistics.mean(best.ratios) < 0.115 and max(best.ratios) < min(
        x for x in lm_growth.arm("scratch").ratios if x is not None)


def test_07_what_the_missing_half_costs():
    """Section 3: "the recipe without ½ costs almost two nats: the head's 2× alone costs 0.8, the FFN's
    mix with the residual 0.6", and the call-out's "6.07 instead of the small model's 4.14"."""
    import copy

    import torch
    from minitf.core.origami import widen

    text = markdown("07_origami_expansion.ipynb")
    tiny = minitf.load(GROWTH_START)
    val = minitf.make_batch(minitf.read_pairs(ROOT / "data" / "val.txt"))
    exact = widen(tiny, 2, noise=0.0, inputs=val.ids).model

    def loss(model):
        model.eval()
        with torch.no_grad():
            return minitf.masked_loss(model(val.ids), val.targets).item()

    def doubled(part):  # the notebook's `double`: the weights of `part` without their ½
        out = copy.deepcopy(exact)
        with torch.no_grad():
            for block in out.blocks:
                if part in ("FFN", "all"):
                    block.ffn.up.weight *= 2
                    block.ffn.down.weight *= 2
                if part == "all":
                    block.attn.qkv.weight *= 2
                    block.attn.out.weight *= 2
            if part in ("head", "all"):
                out.head.weight *= 2
        return out

    base, head, ffn, every = loss(exact), loss(doubled("head")), loss(doubled("FFN")), loss(doubled("all"))
    assert 1.85 < every - base < 2 and "costs almost two nats" in text
    assert f"the head's 2× alone costs {head - base:.1f}, the FFN's mix with the residual {ffn - base:.1f}" in text
    assert f"starts at a held-out loss of {every:.2f} instead of the small model's {base:.2f}" in text
    assert abs(base - loss(tiny)) < 1e-3  # the exact widening keeps the tiny model's loss


@pytest.mark.slow
def test_07_try_this_the_gap_grows_with_the_noise_and_widen_keeps_the_function():
    """"about 1 % of the embedding's largest entry at noise 0.01, 5 % at 0.1 and 14 % at 1.0", and
    widen passes its function check at noise 1.0 (it raises GrowthError where it does not)."""
    from minitf.core.origami import train_watching_copies, widen
    from minitf.experiments.results import GROWTH_START
    tiny = minitf.load(GROWTH_START)
    val_pairs = minitf.read_pairs(ROOT / "data" / "val.txt")
    train_pairs = minitf.make_pairs("shift", 3000, seed=2026, max_len=12, exclude=[p.input for p in val_pairs])
    probe = minitf.make_batch(val_pairs).ids
    largest = tiny.embed.weight.abs().max().item()
    share = {noise: train_watching_copies(widen(tiny, 2, noise=noise, dropout=0.0, inputs=probe).model,
                                          train_pairs)[-1] / largest for noise in (0.01, 0.1, 1.0)}
    assert [round(100 * s) for s in share.values()] == [1, 5, 14]


def test_13s_summary_gives_the_best_arms_ratio_against_the_envelope():
    from minitf.experiments.results import load_lm_envelope
    env = load_lm_envelope()
    best = env.rescored["deepen 2→4, τ=0.8"]
    assert f"{best['vs_envelope']:.2f}× that model's compute" in markdown("13_growth_report.ipynb")
    size, _ = env.envelope[1.0]
    assert size == "4L d32" and "a 4-layer model of width 32" in markdown("13_growth_report.ipynb")
    into = env.into_best["deepen 2→4 of d32, τ=0.8"]
    assert f"does not beat it either: {into['vs_envelope']:.2f}×" in markdown("13_growth_report.ipynb")


# --- notebook 12: what its Try-this and its takeaways say -----------------------------------------

@pytest.mark.slow
def test_12_a_small_S_breaks_every_length_past_one_not_the_long_ones_first():
    """The Try-this reveal, on the notebook's own pairs, in float64 (the float32 model gives the
    same counts; float64 keeps them off the last bits)."""
    from minitf.core.evaluate import exact_match_by_length
    from minitf.course.by_hand import HandSet, shift_by_hand

    text = markdown("12_weights_by_hand.ipynb")
    assert "0 % at each length from 2 to 24, 100 % at length 1 only" in text
    assert "S = 100 and 200 do little better (at most 7 % at any length from 2 on); S = 400 is right " \
           "at every length" in text
    pairs = minitf.make_pairs("shift", 1200, 12, min_len=1, max_len=24, repeats=0.33)
    score = {S: exact_match_by_length(shift_by_hand(HandSet(S=S)).double(), pairs) for S in (50, 100, 200, 400)}
    assert score[50][1] == 1.0 and max(score[50][n] for n in range(2, 25)) == 0.0
    for S in (100, 200):
        assert 0 < max(score[S][n] for n in range(2, 25)) <= 0.07, S
    assert min(score[400].values()) == 1.0


def test_12_takeaway_training_needed_the_slow_frequency_and_a_larger_layout():
    from minitf.experiments.length import load_length_study

    study = load_length_study()
    text = markdown("12_weights_by_hand.ipynb")
    assert "not the capacity" not in text
    assert ("the 2,624-parameter layout holds at every length for every seed, while the 1,984-parameter "
            "layout given the same ω does not learn shift at all (0–1.7 % even at 1–12 bytes)") in text
    held, small = study["d8, ω=2π/27"], study["small, ω=2π/27"]
    assert (held.params, small.params) == (2624, 1984)
    assert held.solved and len(held.seeds) == 3
    assert small.buckets["1-12"][2] == pytest.approx(0.017, abs=5e-4)  # the best seed
    assert max(small.buckets[b][2] for b in study.buckets) <= 0.017 + 5e-4
    assert not study["d8"].solved  # the same larger layout with the usual frequencies does not hold


def test_07_counts_flops_as_notebook_13_does():
    """07's sentence: 6 per parameter but the embedding, and trained byte, plus attention's part."""
    from minitf import Config, Transformer
    from minitf.core.flops import flops_per_token, non_embedding_parameters

    assert "6 per\nparameter (the embedding left out) and trained byte, plus attention's" in \
        "\n".join("".join(c["source"]) for c in json.loads(
            (ROOT / "notebooks" / "07_origami_expansion.ipynb").read_text())["cells"])
    config = Config()
    model = Transformer(config)
    weights = 6 * non_embedding_parameters(model)
    assert flops_per_token(model, context=1) > weights  # attention's scores come on top
    assert flops_per_token(model, context=8) - flops_per_token(model, context=4) == \
        6 * config.n_layers * 4 * config.attn_dim  # and grow with the context
