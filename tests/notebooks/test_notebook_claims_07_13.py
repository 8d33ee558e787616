"""What notebook 07 says about whether growing pays (its section 7, a few sentences and one figure),
and the summary of notebook 13, the report it links to, held to the stored benchmark results.
Notebook 13's own sections are held in tests/test_results_origami.py and tests/test_lm_growth.py."""
import statistics
import re

import pytest

import minitf
from support import ROOT, code_cell, markdown, numbers, printed
from minitf.experiments.results import (GROWTH_START, load_lm_growth, load_recipe_growth,
                                        plot_growth_verdict)


@pytest.fixture(scope="module")
def section7():
    text = markdown("07_origami_expansion.ipynb")
    return text[text.index("## 7."):]


@pytest.fixture(scope="module")
def report():
    return markdown("13_growth_report.ipynb")


@pytest.fixture(scope="module")
def lm_growth():
    return load_lm_growth()


def test_07_shift_sentence(section7, growth):
    """"every way of growing the tiny model ×8 in width ended with a higher held-out loss than the big
    model from scratch"; the five ways and their losses are extra 13's (held in test_13_*)."""
    scratch = growth.arm("from scratch")
    grown = [a for a in growth.arms if a is not scratch]
    assert len(grown) == 5 and all(a.loss > scratch.loss for a in grown)
    assert numbers(section7, after="growing the tiny model")[0] == 8


def test_07_language_model_sentence(section7, lm_growth):
    best = lm_growth.best()
    lo, hi = best.ratio_range
    assert best.name == "deepen 2→4, τ=0.8" and len(best.ratios) == len(lm_growth.seeds) == 3
    # "grown from 2 to 4 layers by `deepen` after 0.8 …, with 0.90–0.91 of scratch's FLOPs"
    assert numbers(section7, after="grown from")[:5] == [2, 4, 0.8, round(lo, 2), round(hi, 2)]
    assert 0.085 < 1 - statistics.mean(best.ratios) < 0.115


def test_07_states_the_verdict_against_the_best_fixed_size_as_14_measured_it(section7, lm_growth):
    """07's verdict carries 14's caveat: the 4-layer target is not the best size for the budget, and
    against the best fixed size (lm_envelope) the same arm needs 1.43× the compute; so does the figure."""
    from minitf.experiments.lm_envelope import load_lm_envelope
    env, best = load_lm_envelope(), lm_growth.best()
    assert env.envelope[1.0][0] == "4L d32"
    ratio = env.rescored[best.name]["vs_envelope"]
    assert ratio > 1
    # "a fixed 4-layer model of width 32 reaches the grown model's loss with less compute, and against it
    # growing needs 1.43× the compute"; "growing did not pay on either task"
    assert numbers(section7, after="a fixed")[:3] == [4, 32, round(ratio, 2)] and "did not pay" in section7
    fig = plot_growth_verdict(envelope=env)
    texts = " ".join(t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text")))
    assert numbers(texts, after="best fixed size")[0] == round(ratio, 2)   # "best fixed size (4L d32):\n1.43× its compute"


def test_07_keeps_only_the_answer_and_13_holds_the_research(section7):
    """07's section 7 is the answer in one figure and two sentences; the growth-vs-scratch research
    (the arms, the recipe model, published savings) is extra 13's."""
    assert len(section7[:section7.index("## Recap")].split()) < 200
    for phrase in ("five ways to grow", "Published savings", "scratch's compute"):
        assert phrase not in section7 and phrase in markdown("13_growth_report.ipynb")


def test_13_what_it_means_sentences(growth, lm_growth, report):
    """The paragraph moved from 07 to 13's summary: the shift arms, the recipe growth, the four arms
    that beat scratch, the 2-layer model's lead at half the budget, the published range."""
    scratch = growth.arm("from scratch")
    grown = [a for a in growth.arms if a is not scratch]
    best = min(grown, key=lambda a: a.loss)
    # "the best of five ways to grow ends at … 3.47 nats, … scratch at 3.00, … ended worse (3.47–3.94)"
    assert numbers(report, after="five ways to grow")[:4] == [round(x, 2) for x in (
        best.loss, scratch.loss, min(a.loss for a in grown), max(a.loss for a in grown))]
    tiny = minitf.load(GROWTH_START)
    assert numbers(report, after="tiny shift model got")[0] == round(100 * tiny.metadata["val"]["char_accuracy"])
    recipe = load_recipe_growth()
    grows = [r for r in recipe.runs if r.arm != "from scratch"]
    (reach_99,) = [k for k in grows[0].reach if numbers(k) == [99]]   # "exact match ≥ 99 %"
    ratios = [r.reach[reach_99][1] for r in grows]
    assert numbers(report, after="a draw: it needed")[:3] == [round(min(ratios), 2), round(max(ratios), 2), 99]
    for seed in recipe.seeds:  # "and ended with a worse loss"
        scratch_run = recipe.run("from scratch", seed)
        assert all(r.final_loss > scratch_run.final_loss for r in grows if r.seed == seed)
    claimed = [a for a in lm_growth.arms if a.beats_scratch_range]
    saved = [x for a in claimed for x in a.ratios]
    assert len(claimed) == 4 and "four ways of growing" in report
    assert numbers(report, after="beat scratch saved")[:2] == [round(100 * (1 - max(saved))), round(100 * (1 - min(saved)))]
    assert not any(a.goal_met for a in lm_growth.arms) and min(saved) > 0.85
    two = statistics.mean(lm_growth.arm("deepen 2→4, τ=0.8").loss_at[0.5])
    scratch_lm = statistics.mean(lm_growth.arm("scratch").loss_at[0.5])
    assert numbers(report, after="same compute (")[:2] == [round(two, 2), round(scratch_lm, 2)] and two < scratch_lm


def revealed_table(notebook, starts):
    """The table a cell shows behind its "The table" reveal (minitf.views.reveal), as plain text."""
    (table,) = ["".join(o["data"]["text/plain"]) for o in code_cell(notebook, starts)["outputs"]
                if "<details>" in "".join(o.get("data", {}).get("text/html", ""))]
    return table


def test_13_no_growth_arms_range_overlaps_scratchs():
    """Section 1: "every growth arm ends with a higher held-out loss than the big model trained from
    scratch (3.47–3.94 nats against 3.00 …), and the ranges over the seeds do not even overlap", held
    to the table the notebook printed."""
    rows = {}
    for line in revealed_table("13_growth_report", "growth = load_growth()").splitlines()[1:]:
        loss, low, high = re.search(r"(\d\.\d\d) \((\d\.\d\d)–(\d\.\d\d)\)", line).groups()
        rows[line[:32].strip()] = float(loss), float(low), float(high)
    scratch = rows.pop("from scratch")
    assert len(rows) == 5 and all(low > scratch[2] for _, low, _ in rows.values())
    losses = [loss for loss, _, _ in rows.values()]
    assert numbers(markdown("13_growth_report"), after="trained from scratch (")[:3] == [min(losses), max(losses), scratch[0]]


def test_13_the_small_model_widened_x4_is_the_recipe_model():
    """Section 2: "`widen(small, 4)` lands exactly on the recipe", as the notebook printed it."""
    lines = printed("13_growth_report", "recipe = load_recipe_growth()").splitlines()
    assert numbers(lines[0]) == [42112, 6112] and lines[1].endswith("config: True")


def test_13_published_range_is_the_one_it_cites(report):
    cited = [numbers(report, after=name)[0] for name in ("staged training saved", "bert2BERT", "LiGO", "G_stack")]
    assert cited == [22, 45, 40, 54.6]
    assert numbers(report, after="Published savings of")[:2] == [min(cited), round(max(cited))]


def test_the_verdict_figure_draws_the_arms_the_text_names(growth, lm_growth):
    fig = plot_growth_verdict(growth, lm_growth)
    texts = " ".join(t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text")))
    assert "grow after 300" in texts and "2 → 4 layers" in texts and "deepen after 0.8" in texts
    lo, hi = lm_growth.best().ratio_range
    assert f"{lo:.2f}–{hi:.2f}" in texts


def test_13_summary(lm_growth, report):
    best = lm_growth.best()
    assert numbers(report, after="a small, reliable saving")[:2] == [10, 30]   # about 10 %, far from 30 %
    assert 0.085 < 1 - statistics.mean(best.ratios) < 0.115 and max(best.ratios) < min(
        x for x in lm_growth.arm("scratch").ratios if x is not None)


@pytest.mark.slow
def test_07_try_this_the_gap_grows_with_the_noise_and_widen_keeps_the_function():
    """"about 1 % of the embedding's largest entry at noise 0.01, 5 % at 0.1 and 14 % at 1.0", and
    widen passes its function check at noise 1.0 (it raises GrowthError where it does not)."""
    from minitf.core.origami import widen
    from minitf.experiments.exact_copies import train_watching_copies
    tiny = minitf.load(GROWTH_START)
    val_pairs = minitf.read_pairs(ROOT / "data" / "val.txt")
    train_pairs = minitf.make_pairs("shift", 3000, seed=2026, max_len=12, exclude=[p.input for p in val_pairs])
    probe = minitf.make_batch(val_pairs).ids
    largest = tiny.embed.weight.abs().max().item()
    share = {noise: train_watching_copies(widen(tiny, 2, noise=noise, dropout=0.0, inputs=probe).model,
                                          train_pairs)[-1] / largest for noise in (0.01, 0.1, 1.0)}
    assert [round(100 * s) for s in share.values()] == [1, 5, 14]


def test_13s_summary_gives_the_best_arms_ratio_against_the_envelope(report):
    from minitf.experiments.results import load_lm_envelope
    env = load_lm_envelope()
    best = env.rescored["deepen 2→4, τ=0.8"]
    (into,) = [a for name, a in env.into_best.items() if name.startswith("deepen") and name.endswith("τ=0.8")]
    size, _ = env.envelope[1.0]
    assert size == "4L d32"
    # "the best arm needs 1.43× …: a 4-layer model of width 32 …; growing into that best size (2 → 4
    # layers of width 32, late) does not beat it either: 1.36×"
    stated = numbers(report, after="the best arm needs")
    assert stated[:3] == [round(best["vs_envelope"], 2), 4, 32] and stated[6] == round(into["vs_envelope"], 2)


def test_13_counts_flops_as_it_says():
    """13's sentence: 6 per parameter but the embedding, and trained byte, plus attention's part."""
    from minitf import Config, Transformer
    from minitf.core.flops import flops_per_token, non_embedding_parameters

    assert numbers(markdown("13_growth_report.ipynb"), after="the backward pass, so")[0] == 6   # FLOPs per parameter and token
    config = Config()
    model = Transformer(config)
    weights = 6 * non_embedding_parameters(model)
    assert flops_per_token(model, context=1) > weights  # attention's scores come on top
    assert flops_per_token(model, context=8) - flops_per_token(model, context=4) == \
        6 * config.n_layers * 4 * config.attn_dim  # and grow with the context


# --- notebook 07: the sentences held against what the executed notebook printed ----------------------

def test_07_no_doubling_compounds_and_each_missing_half_does_damage():
    """Section 3: the stream leaving each block keeps its size (LayerNorm), the scores grow 2–4×, the
    branches about 4×, the logits up to 2×; each part alone costs loss, all together the most, and
    what each costs, as the sentences after the table say."""
    rows = {}
    for line in printed("07_origami_expansion", containing="missing_half(widen").splitlines()[1:]:
        sizes = re.search(r"\s(\d+\.\d+(?: / \d+\.\d+)?)\s+\d+\.\d\d$", line)
        rows[line[:16].strip()] = ([float(x) for x in sizes[1].split(" / ")] if sizes else [],
                                   float(line.split()[-1]))
    assert set(rows) == {"none (exact)", "W_Q, W_K", "W_V, W_O", "FFN", "head", "all"}
    assert all(0.8 < f < 1.1 for f in rows["all"][0])                 # no compounding
    assert 2 < rows["W_Q, W_K"][0][0] < 4 and 1.5 < rows["head"][0][0] <= 2 and rows["W_V, W_O"][0][0] > 3
    losses = {name: loss for name, (_, loss) in rows.items()}
    assert losses["none (exact)"] < min(v for k, v in losses.items() if k != "none (exact)")
    assert losses["all"] == max(losses.values())
    # "the recipe without ½ costs almost two nats: the head's 2× alone costs 0.8, the FFN's mix with the
    # residual 0.6", and the call-out's "6.07 instead of the small model's 4.14"
    text = markdown("07_origami_expansion.ipynb")
    base, head, ffn, every = (losses[k] for k in ("none (exact)", "head", "FFN", "all"))
    assert 1.85 < every - base < 2 and "almost two nats" in text
    assert numbers(text, after="almost two nats")[1:3] == [round(head - base, 1), round(ffn - base, 1)]
    assert numbers(text, after="starts at a held-out")[:2] == [every, base]


def test_07_exact_copies_never_part_and_the_noisy_split_parts_steadily():
    """Section 6: "With exact copies the gap is exactly zero at every step … With the noisy split the
    copies start identical too … and part steadily"."""
    text = printed("07_origami_expansion", "watched = {noise")
    lines = text.splitlines()[1:3]
    exact, noisy = ([int(x) for x in re.findall(r"(\d+)%", line)] for line in lines)
    assert lines[0].startswith("  noise 0.0") and lines[0].endswith("(largest gap 0)")
    assert exact == [0] * 6
    assert noisy[0] == 0 and noisy[-1] >= 3 and all(b >= a for a, b in zip(noisy, noisy[1:]))
