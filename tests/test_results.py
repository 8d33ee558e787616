"""minitf.results reads the stored ablation ladder (bench/results/ablation.json) the notebooks show."""
import math
import subprocess
import sys

import pytest
from matplotlib.figure import Figure

from conftest import ROOT
from minitf.results import ABLATION_JSON, Ablation, Row, load_ablation


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


def test_the_ladder_script_runs_and_writes_what_the_loader_reads(tmp_path):
    out = tmp_path / "ladder.json"
    subprocess.run([sys.executable, str(ROOT / "bench" / "ablation.py"), "--quick", "--tasks", "copy",
                    "--variants", "base", "no FFN", "--out", str(out)], check=True, capture_output=True)
    quick = load_ablation(out)
    assert [r.variant for r in quick.rows if r.rung == "FFN"] == ["base", "no FFN"]
    assert (tmp_path / "ladder.md").read_text().startswith("# The ablation ladder")
