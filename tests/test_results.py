"""minitf.results reads the stored ablation ladder (minitf/experiments/stored/ablation.json) the notebooks show."""
import math
import subprocess
import sys

import pytest
from matplotlib.figure import Figure

from support import ROOT
from minitf.experiments.results import ABLATION_JSON, Ablation, Row, load_ablation


@pytest.fixture(scope="module")
def ladder() -> Ablation:
    return load_ablation()


def test_every_variant_of_every_rung_is_there_on_both_tasks(ladder):
    assert ABLATION_JSON.exists()
    assert ladder.tasks == ["copy", "shift"]
    for task in ladder.tasks:
        for rung, variants in ladder.rungs.items():
            for variant in variants:
                row = ladder.row(task, variant)
                assert isinstance(row, Row) and len(row.seeds) >= 2, (task, variant)


def test_fields_are_sane(ladder):
    for r in ladder.rows:
        assert 0 <= r.exact_min <= r.exact_match <= r.exact_max <= 1
        assert 0 <= r.char_accuracy <= 1
        assert 0 <= r.loss < 20 and math.isfinite(r.loss)
        assert r.params > 0 and r.train_seconds > 0
        assert r.change
    assert ladder.row("copy", "tiny: 4 = 2×2").params == 2648
    assert ladder.row("copy", "no FFN").params < ladder.row("copy", "base").params


def test_baselines_are_ordered(ladder):
    for task in ladder.tasks:
        b = ladder.baselines[task]
        assert b["uniform_256"] > b["uniform_96"] > b["unigram"] > b["length_oracle"] > 0


def test_the_base_learns_and_the_table_reads(ladder):
    for task in ladder.tasks:
        base = ladder.row(task, "base")
        assert base.exact_match > 0.9
        assert base.loss < ladder.baselines[task]["length_oracle"]
    text = repr(ladder)
    assert text.splitlines()[0].startswith("held-out exact match")
    assert "copy baselines (loss)" in text and "no FFN" in text
    assert "| rung |" in ladder.markdown()


def test_one_rung_alone(ladder):
    two_by_two = ladder.only("tiny 2×2")
    assert {r.variant for r in two_by_two.rows} == {"tiny: 4 = 2×2", "4 = 1×4", "8 = 4×2", "8 = 1×8"}
    assert list(two_by_two.rungs) == ["tiny 2×2"] and "positions" not in repr(two_by_two)
    with pytest.raises(KeyError, match="no rung"):
        ladder.only("dropout")


def test_unknown_row_is_a_key_error(ladder):
    with pytest.raises(KeyError, match="no results"):
        ladder.row("copy", "a variant that was never run")


def test_plot_is_a_figure_with_two_panels(ladder):
    fig = ladder.plot()
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    assert fig.axes[1].get_yscale() == "log"


def test_plot_reads_at_its_size_with_one_baseline_line_and_no_empty_slot(ladder):
    """Rung names ≥ 10 pt; only the length oracle drawn (the other baselines crowd it on a log axis
    and are in the table); the axis ends just after the last bar, even for a single rung."""
    for rungs in (("causal mask",), ("FFN", "residual", "norm position", "norm", "head_dim")):
        top, bottom = ladder.only(*rungs).plot().axes
        titles = [t for t in top.texts if t.get_text().replace("\n", " ") in rungs]
        assert len(titles) == len(rungs) and all(t.get_fontsize() >= 10 for t in titles)
        oracle = ladder.baselines["copy"]["length_oracle"]
        lines = [line.get_ydata()[0] for line in bottom.get_lines()]
        assert lines == [oracle] and bottom.get_legend() is None
        assert any(t.get_text().startswith(f"length oracle {oracle:.2f}") for t in bottom.texts)
        right_edge = max(bar.get_x() + bar.get_width() for bar in bottom.patches if bar.get_height() > 0
                         and bar.get_width() < 1)
        assert bottom.get_xlim()[1] - right_edge < 0.6


@pytest.mark.slow
def test_the_ladder_script_runs_and_writes_what_the_loader_reads(tmp_path):
    # --out is the folder that receives ablation.json and ablation.md (bench/store.py)
    subprocess.run([sys.executable, str(ROOT / "bench" / "ablation.py"), "--quick", "--tasks", "copy",
                    "--variants", "base", "no FFN", "--out", str(tmp_path)], check=True, capture_output=True)
    quick = load_ablation(tmp_path / "ablation.json")
    assert [r.variant for r in quick.rows if r.rung == "FFN"] == ["base", "no FFN"]
    assert (tmp_path / "ablation.md").read_text().startswith("# The ablation ladder")


# --- claims the notebooks make about the ladder ------------------------------------------------------
# Each sentence of notebooks 02 §7, 03 §8, 04 §6 and 05 §4 about the stored ladder, checked on the
# loaded numbers: if bench/ablation.py is re-run and a claim stops holding, the text must change.

def ratio(ladder, task, variant, over="base"):
    """How many times `variant`'s held-out loss is `over`'s."""
    return ladder.row(task, variant).loss / ladder.row(task, over).loss


def overlap(a: Row, b: Row) -> bool:
    """The min–max ranges of exact match over the random seeds overlap."""
    return max(a.exact_min, b.exact_min) <= min(a.exact_max, b.exact_max)


def test_02_positions(ladder):
    for task in ladder.tasks:
        none, rope, sine = (ladder.row(task, v) for v in ("no positions", "base", "sinusoidal"))
        oracle = ladder.baselines[task]["length_oracle"]
        # "beats every baseline by far (loss 1.2–1.3 against the length oracle's 3.58)"
        assert 1.15 <= none.loss < 1.35 and none.loss < oracle - 2 and abs(oracle - 3.58) < 0.005
        # "only about a quarter to a third of the outputs right, on both tasks and in every run"
        assert 0.25 <= none.exact_min and none.exact_max <= 0.35
        # "added sine waves land in between, with about 3.5 times RoPE's loss on both tasks"
        assert none.exact_match < sine.exact_match < rope.exact_match
        assert 3.3 < ratio(ladder, task, "sinusoidal") < 3.8
    # "RoPE 95 % copy, 99 % shift; sine waves 84 % and 93 %"
    assert [round(ladder.row(t, "base").exact_match, 2) for t in ladder.tasks] == [0.95, 0.99]
    assert [round(ladder.row(t, "sinusoidal").exact_match, 2) for t in ladder.tasks] == [0.84, 0.93]
    # "RoPE's worst copy run (86 %) did no better than the sine waves' best (87 %)"
    rope, sine = ladder.row("copy", "base"), ladder.row("copy", "sinusoidal")
    assert (round(rope.exact_min, 2), round(sine.exact_max, 2)) == (0.86, 0.87)


def test_03_causal_mask(ladder):
    for task in ladder.tasks:
        masked, open_ = ladder.row(task, "base"), ladder.row(task, "no causal mask")
        # "the held-out loss is 0.006 on both tasks, lower than the masked model's (0.051 and 0.028)"
        assert round(open_.loss, 3) == 0.006 and open_.loss < masked.loss
        # "every next byte is right while the model can read the true output"
        assert open_.char_accuracy > 0.999
        # "in all three runs": the unmasked model's best run writes worse than the masked one's worst
        assert open_.exact_max < masked.exact_min - 0.5
    # "a fifth of the copy outputs right and not one shift output"
    assert round(ladder.row("copy", "no causal mask").exact_match, 2) == 0.20
    assert ladder.row("shift", "no causal mask").exact_max == 0
    assert [round(ladder.row(t, "base").loss, 3) for t in ladder.tasks] == [0.051, 0.028]


def test_04_block(ladder):
    copy, shift = "copy", "shift"
    # FFN: "a third fewer parameters and does as well: 96 % against 95 % on copy, 99 % on shift"
    assert 0.3 < 1 - ladder.row(copy, "no FFN").params / ladder.row(copy, "base").params < 0.4
    for task in ladder.tasks:
        no_ffn, base = ladder.row(task, "no FFN"), ladder.row(task, "base")
        assert abs(no_ffn.exact_match - base.exact_match) < 0.02 and overlap(no_ffn, base)
    assert round(ladder.row(copy, "no FFN").exact_match, 2) == 0.96
    assert round(ladder.row(shift, "no FFN").exact_match, 2) == round(ladder.row(shift, "base").exact_match, 2) == 0.99
    # residual: "the loss is 7 to 9 times the base's; on copy anywhere from 58 % to 100 %"
    for task in ladder.tasks:
        assert 6.5 < ratio(ladder, task, "no residual") < 9.5
        assert ladder.row(task, "no residual").exact_match > 0.8  # three layers still learn
    no_res = ladder.row(copy, "no residual")
    assert round(no_res.exact_min, 2) == 0.58 and no_res.exact_max > 0.995
    # norm position: "post-norm ended better, every run perfect on both tasks, 3 to 7 times less loss"
    for task in ladder.tasks:
        post, pre = ladder.row(task, "post-norm"), ladder.row(task, "base")
        assert post.exact_min > 0.995 and post.exact_min >= pre.exact_max - 0.005
        assert 3 < 1 / ratio(ladder, task, "post-norm") < 7.5
    # "one of the three pre-norm runs stopped short (86 % on copy), and that pulls its mean down":
    # with three runs, mean·3 = worst + best + the third, so the third equals the best
    pre = ladder.row(copy, "base")
    assert len(pre.seeds) == 3 and round(pre.exact_min, 2) == 0.86
    assert abs(3 * pre.exact_match - pre.exact_min - 2 * pre.exact_max) < 1e-9
    # RMSNorm: "ahead on copy (98 % against 95 %), behind on shift (96 % against 99 %), ranges overlap"
    rms = {t: ladder.row(t, "RMSNorm") for t in ladder.tasks}
    assert rms[copy].exact_match > ladder.row(copy, "base").exact_match
    assert rms[shift].exact_match < ladder.row(shift, "base").exact_match
    assert all(overlap(rms[t], ladder.row(t, "base")) for t in ladder.tasks)
    assert [round(rms[t].exact_match, 2) for t in ladder.tasks] == [0.98, 0.96]
    # head_dim: "all write at least 95 % right, and none is best on both tasks"
    heads = ("8 heads of 2", "base", "2 heads of 8")
    assert all(ladder.row(t, v).exact_match >= 0.95 for t in ladder.tasks for v in heads)
    best = {t: max(heads, key=lambda v: ladder.row(t, v).exact_match) for t in ladder.tasks}
    assert best[copy] != best[shift]
    # takeaway: of the block's changes, dropping the residual costs the most loss, on both tasks
    block = ("no FFN", "no residual", "post-norm", "RMSNorm", "8 heads of 2", "2 heads of 8")
    for task in ladder.tasks:
        assert max(block, key=lambda v: ratio(ladder, task, v)) == "no residual"


def test_05_the_2x2_width_not_head_dim(ladder):
    width4, width8 = ("tiny: 4 = 2×2", "4 = 1×4"), ("8 = 4×2", "8 = 1×8")
    for task in ladder.tasks:
        b = ladder.baselines[task]
        # width 4, either head layout: at the length oracle (loss 3.5 against 3.58), below the unigram,
        # and no output right
        for v in width4:
            r = ladder.row(task, v)
            assert abs(r.loss - b["length_oracle"]) < 0.15 and r.loss < b["unigram"] - 0.5
            assert r.exact_max == 0
        # "one head of 4 is barely better than two heads of 2": head_dim at the same width changes little
        assert 0 < ladder.row(task, "tiny: 4 = 2×2").loss - ladder.row(task, "4 = 1×4").loss < 0.1
        # "from 4 to 8 numbers the loss falls to 2.0–2.4 with either layout"
        for v in width8:
            assert 1.95 < ladder.row(task, v).loss < 2.45
        assert min(ladder.row(task, v).loss for v in width4) - max(ladder.row(task, v).loss for v in width8) > 1
        # "at width 8 the heads of 2 were even a little better than one head of 8"
        two, eight = ladder.row(task, "8 = 4×2"), ladder.row(task, "8 = 1×8")
        assert two.loss < eight.loss and two.exact_match > eight.exact_match
        # caveat: "at width 8 they write only 2–8 % of the outputs right" (under-trained)
        assert all(0.015 < ladder.row(task, v).exact_match < 0.085 for v in width8)
        # the larger layout: width 4 at the length oracle, 8 learns in some runs only, 16 and 32 learn
        d4, d8 = ladder.row(task, "d_model 4"), ladder.row(task, "d_model 8")
        assert d4.exact_max < 0.01 and abs(d4.loss - b["length_oracle"]) < 0.15
        assert d8.exact_min < 0.1 and d8.exact_max > 0.95
        assert ladder.row(task, "base").exact_match >= 0.95 and ladder.row(task, "d_model 32").exact_match >= 0.99
    assert round(ladder.row("copy", "4 = 1×4").loss, 2) == 3.48 and round(ladder.row("copy", "tiny: 4 = 2×2").loss, 2) == 3.55
    # caveat: inputs of at most 5 bytes never look back as far as one rotation's period, 2π
    assert ladder.settings["max_len"] < 2 * math.pi and ladder.settings["steps"] == 500
    assert ladder.settings["lr"] == 0.01
