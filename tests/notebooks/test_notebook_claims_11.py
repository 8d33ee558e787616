"""Claims notebook 11 ("How small can it be?") makes in words, held to the stored sweep
(minitf/experiments/stored/tiny_sweep.json), the shipped checkpoint and minitf's own functions."""
import json
import math

import pytest
import torch

import minitf
from support import ROOT, joined, markdown, numbers, printed
from minitf import Config, Transformer, count_parameters
from minitf.core.data import make_splits
from minitf.views.heatmaps import attention_weights, head_scores
from minitf.core.rope import alias_margin, config_frequencies, position_ids
from minitf.experiments.smallest import load_tiny_sweep

NOTEBOOK = ROOT / "notebooks" / "11_how_small.ipynb"
CHECKPOINT = ROOT / "data" / "checkpoints" / "shift_smallest.pt"


@pytest.fixture(scope="module")
def sweep():
    return load_tiny_sweep()


pytestmark = pytest.mark.usefixtures("one_thread")  # conftest.one_thread


def test_the_source_is_L_back_in_sequence_ids_and_plus_1_in_coupled_ids():
    for L in range(1, 13):
        x = bytes(range(65, 65 + L))
        seq = torch.tensor([[*x, minitf.TAB, *minitf.shift_bytes(x), minitf.EOS]])
        for scheme, expected in (("sequence", -L), ("coupled", 1)):
            pos = position_ids(seq, scheme)[0]
            # output byte i is predicted at position L + i from input byte i
            assert {int(pos[i] - pos[L + i]) for i in range(L)} == {expected}


def test_parameter_counts_quoted():
    seed = Transformer(Config())
    tables = 256 * 4 + 4 * 256 + 256
    assert round(100 * tables / count_parameters(seed)) == 87
    d6 = dict(d_model=6, n_heads=1, n_layers=1, d_ff=12, norm_position="pre")
    untied, tied = (count_parameters(Transformer(Config(**d6, tie_embeddings=t))) for t in (False, True))
    assert untied - tied == 1536 and tied == 2158
    assert "1,536" in joined(NOTEBOOK, "markdown") and "87 %" in joined(NOTEBOOK, "markdown")


def test_margins_quoted():
    text = joined(NOTEBOOK, "markdown")
    assert f"{alias_margin([1.0]):.3f}" == "0.040" and "0.040" in text
    assert f"{alias_margin([2 * math.pi / 13]):.3f}" == "0.115" and "0.115" in text
    m6 = alias_margin(config_frequencies(Config(d_model=6, n_heads=1, rope_base=20.0))[0])
    assert f"margin {m6:.3f}" in text.replace("\n", " ") and m6 > 7 * alias_margin([1.0])
    assert round(math.cos(6), 2) == 0.96


def pct(x: float) -> float:
    return round(100 * x, 1)


def test_the_sweep_numbers_in_the_text(sweep):
    text = markdown(NOTEBOOK)
    s, d6, d5, d4 = (sweep[n] for n in (sweep.smallest_solver, "d6", "d5", "d4"))
    longer, d8, d16 = sweep["d4, 2× steps"], sweep["seq d8 2L"], sweep["seq d16 2L"]
    assert s.params == 1984 and sweep.smallest_solver == "d6, no FFN"
    # "… reaches 99 % is **d6, no FFN: 1,984 parameters**: …, 100.0% median (97.6%–100.0%), 2 of 3 seeds"
    assert numbers(text, after="reaches 99 % is")[:6] == [
        s.params, pct(s.exact_median), pct(min(s.exact)), pct(max(s.exact)), s.solved_seeds, len(s.exact)]
    assert d6.solved_seeds == len(d6.exact) == 3
    assert numbers(text, after="With the FFN back")[:2] == [d6.params, pct(min(d6.exact))]
    # d_model 5 (params) median, d_model 4 (params) median, twice as long: median (seeds from … to …)
    assert numbers(text, after="falls short:")[:9] == [5, d5.params, pct(d5.exact_median), 4, d4.params,
                                                       pct(d4.exact_median), pct(longer.exact_median),
                                                       pct(min(longer.exact)), pct(max(longer.exact))]
    assert max(d5.exact_median, d4.exact_median) < 0.99
    # the usual numbering: d_model 8 (params) median; d_model 16 (params, …) one seed of two: best and worst
    stated = numbers(text, after="two layers and")
    assert stated[1:4] == [8, d8.params, pct(d8.exact_median)] and d8.solved_seeds == 0
    assert stated[4:6] == [16, d16.params]
    assert numbers(text, after="one seed of two:")[:2] == [pct(max(d16.exact)), pct(min(d16.exact))]
    assert d16.solved_seeds == 1 and len(d16.exact) == 2 and d16.params > 4 * s.params
    # the smallest solver is smaller than the seed, and nothing smaller in the sweep has a median >= 99 %
    assert s.params < 2648
    assert not [c for c in sweep.configs.values() if c.params < s.params and c.exact_median >= 0.99]


def test_the_ablation_numbers_in_the_text(sweep):
    text = markdown(NOTEBOOK)
    abl = {c.name: c for c in sweep.configs.values() if c.group == "ablation"}

    def said(start):  # median (solved of seeds) of the arm whose name starts so
        (name,) = [n for n in abl if n.startswith(start)]
        return [pct(abl[name].exact_median), abl[name].solved_seeds, len(abl[name].exact)]
    uncoupled, untied = abl["− coupled ids"], abl["− tied head"]
    # "the numbering decides": 0.2% median (best seed 0.6%)
    assert numbers(text, after="learn almost nothing:")[:2] == [pct(uncoupled.exact_median), pct(max(uncoupled.exact))]
    assert max(uncoupled.exact) < 0.05
    # "tying takes nothing away": untying costs 1,536 parameters and buys median (solved of seeds)
    assert numbers(text, after="Untying the head costs")[:4] == [untied.params - abl["solver"].params, *said("− tied head")]
    assert untied.solved_seeds <= abl["solver"].solved_seeds
    # "the frequencies matter less": base 10⁴'s margin and result, three heads of dimension 2's
    base_10k = alias_margin(config_frequencies(Config(d_model=6, n_heads=1, rope_base=1e4))[0])
    assert numbers(text, after="(margin")[:4] == [round(base_10k, 3), *said("− 2+ frequencies")]
    assert numbers(text, after="reached")[:3] == said("− one wide head")
    assert said("− one wide head")[1] >= abl["solver"].solved_seeds
    p, two = abl["post-norm"], abl["+ a second layer"]
    assert numbers(text, after="Post-norm:")[:3] == [pct(p.exact_median), pct(min(p.exact)), pct(max(p.exact))]
    assert numbers(text, after="A second layer:")[:3] == said("+ a second layer") and two.solved_seeds < 3
    # "coupling alone does not rescue the seed's layout": the seed, + coupled ids, + a tied head
    layouts = sorted((n for n in abl if n.startswith("seed")), key=len)   # "seed", "seed + coupled", "… + tied"
    assert len(layouts) == 3 and layouts[-1].endswith("tied")
    seeds = [abl[name].exact_median for name in layouts]
    assert numbers(text, after="the seed itself gets")[:3] == [pct(x) for x in seeds] and max(seeds) < 0.05


def test_the_shipped_smallest_solver_solves_fresh_pairs_with_repeats():
    model = minitf.load(CHECKPOINT)
    assert count_parameters(model) == 1984
    assert model.config.positions.position_ids == "coupled" and model.config.tie_embeddings
    assert not model.config.ablations.ffn and model.config.n_layers == 1 and model.config.n_heads == 1
    assert "--seed 1 " in model.metadata["command"]
    runs = json.loads((ROOT / "minitf" / "experiments" / "stored" / "tiny_sweep.json").read_text())["runs"]
    seed0 = runs["pareto/d6, no FFN/seed0"]
    assert seed0["exact_match"] < 0.99 and f"stopped at {seed0['exact_match']:.1%}" in joined(NOTEBOOK, "markdown")
    train_pairs, val_pairs = make_splits("shift", 20000, 1000, seed=1, repeats=0.33)
    fresh = minitf.make_pairs("shift", 1000, seed=11, repeats=0.33,
                              exclude=[p.input for p in train_pairs + val_pairs])
    assert sum(len(set(p.input)) < len(p.input) for p in fresh) > 300  # repeated bytes included
    assert minitf.core.evaluate.teacher_forced_exact_match(model, fresh) >= 0.99  # greedy's, in one pass


def test_its_head_copies_by_position_and_eos_falls_back_on_the_tab():
    model = minitf.load(CHECKPOINT)
    pairs = minitf.make_pairs("shift", 200, seed=11, repeats=0.33)
    assert head_scores(model, pairs, "shift")[0, 0] >= 0.99
    x = b"hello world!"
    weights, _ = attention_weights(model, (x, minitf.shift_bytes(x)))
    last = weights[0][0, -1]  # the row that predicts EOS
    assert int(last.argmax()) == len(x)  # the TAB


def test_the_recipe_named_in_the_text_trains_the_shipped_model():
    # that the recipe's flags are the shipped model's recorded command: test_recipes' test_shift_smallest_is_…
    assert "--recipe shift-smallest" in joined(NOTEBOOK, "markdown")


def test_the_fast_recipe_sentence_matches_the_stored_bench():
    import statistics
    # "reaches 99.8 % in 150–200 steps, in about a fourteenth of the wall time of the 42,112-parameter
    # shift recipe, measured side by side"
    exact, fewest, most = numbers(markdown(NOTEBOOK), after="command line it reaches")[:3]
    assert "about a fourteenth" in markdown(NOTEBOOK)
    bench = json.loads((ROOT / "minitf" / "experiments" / "stored" / "fast_recipe.json").read_text())
    fast = [r for r in bench["runs"] if r["name"] == "fast"]
    assert len(fast) >= 3 and all(r["exit_code"] == 0 for r in fast)
    readme = [r for r in bench["runs"] if r["name"] == "readme"]   # run interleaved with the fast ones
    ratio = statistics.median(r["wall_seconds"] for r in readme) / statistics.median(r["wall_seconds"] for r in fast)
    assert round(ratio) == 14
    assert all(fewest <= r["confirm"]["steps_trained"] <= most and round(100 * r["confirm"]["cli_val_exact"], 1) >= exact
               for r in fast)
    assert all(r["confirm"][kind]["errors"] == 0 for r in fast for kind in ("uniform", "repeats"))


def test_four_numbers_need_a_huge_weight_scale_and_give_rank_5_logits():
    """Section 4 (from 05): one circle about 1,300, two circles about 35; the tiny head's logits
    have rank 5 = 4 + 1."""
    circles, logits = printed(NOTEBOOK, "N = 95").splitlines()[-2:]
    one, _, two = numbers(circles, after="byte:")   # one circle 1,322, two circles (all 4 numbers) 35
    assert round(one, -2) == 1300 and two == 35     # "about 1,300", "about 35"
    assert numbers(logits, after="shape") == [40, 256, 5]
    tiny = minitf.load(ROOT / "data" / "checkpoints" / "tiny.pt")
    hidden = torch.rand(40, 4, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    assert torch.linalg.matrix_rank(tiny.head.double()(hidden).detach()).item() == 5
    assert minitf.rope_frequencies(head_dim=2).item() == 1.0


def test_the_2x2_parameter_counts_quoted():
    """"the parameters go from 2,648 to 5,552"."""
    tiny_2x2 = str(minitf.results.load_ablation().only("tiny 2×2"))
    assert "5,552" in tiny_2x2 and "2,648" in tiny_2x2
    assert "from 2,648 to 5,552" in joined(NOTEBOOK, "markdown").replace("\n", " ")


def test_the_value_circuit_maps_all_95_bytes_to_their_successor():
    assert numbers(printed(NOTEBOOK, "circuit = value_circuit(model)").splitlines()[-1]) == [95, 95]
    from minitf.course.by_hand import value_circuit
    circuit = value_circuit(minitf.load(CHECKPOINT))
    assert len(circuit) == 95 and all(circuit[b] == minitf.shift_bytes(bytes([b]))[0] for b in circuit)


def test_the_sweep_figures_key_every_colour_and_name_every_arm(sweep):
    """11's two figures: the sweep's keys every colour it draws, below the axes, and the dashed
    Pareto front crosses no configuration's name; the ablation's names every arm and keys both
    colours of its bars."""
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import to_hex
    bars = sweep.plot_ablation()
    FigureCanvasAgg(bars)
    bars.canvas.draw()
    names = [t.get_text() for t in bars.axes[0].get_yticklabels()]
    arms = [c for c in sweep.configs.values() if c.group == "ablation"]
    assert [n.split("  (")[0] for n in names] == [c.name for c in arms]
    keyed = {to_hex(h.get_facecolor()) for h in bars.legends[0].legend_handles if hasattr(h, "get_facecolor")}
    drawn = {to_hex(p.get_facecolor()) for p in bars.axes[0].patches}
    assert drawn <= keyed
    fig = sweep.plot()
    FigureCanvasAgg(fig)
    ax = fig.axes[0]
    fig.canvas.draw()
    keyed = {to_hex(h.get_color()) for h in fig.legends[0].legend_handles}
    assert {to_hex(c.get_facecolor()[0]) for c in ax.collections} <= keyed | {to_hex("0.5")}
    assert all(t.get_fontsize() >= 9 for t in ax.texts)
    renderer = fig.canvas.get_renderer()
    [front] = [line for line in ax.lines if line.get_linestyle() == "--"]
    xy = ax.transData.transform(front.get_xydata())
    # the step line's corners (where="post"), sampled densely along each segment
    corners = [xy[0]]
    for (x0, y0), (x1, y1) in zip(xy, xy[1:]):
        corners += [(x1, y0), (x1, y1)]
    points = np.concatenate([np.linspace(a, b, 200) for a, b in zip(corners, corners[1:])])
    for name in sweep.front:
        [label] = [t for t in ax.texts if t.get_text().replace(",\n", ", ") == name] or [None]
        if label is None:
            continue
        box = label.get_window_extent(renderer)
        inside = (points[:, 0] > box.x0) & (points[:, 0] < box.x1) & (points[:, 1] > box.y0) & (points[:, 1] < box.y1)
        assert not inside.any(), f"the dashed front crosses the name {name!r}"
