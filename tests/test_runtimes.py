"""The run-time tables (README, notebook 00) agree with `make bench`'s stored measurement.

tools/runtimes.py writes them from bench/results/bench_notebooks.json; a row off by
more than 1.5x from its notebook's measured time fails here (run `make runtimes`, or `make bench`).
"""
import importlib.util
import json

import pytest

from conftest import ROOT

spec = importlib.util.spec_from_file_location("runtimes", ROOT / "tools" / "runtimes.py")
runtimes = importlib.util.module_from_spec(spec)
spec.loader.exec_module(runtimes)


def notebook_00_text():
    nb = json.loads((ROOT / "notebooks" / "00_setup_check.ipynb").read_text())
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


@pytest.mark.parametrize("where", ["README.md", "notebooks/00_setup_check.ipynb"])
def test_each_row_is_within_1_5x_of_the_measured_time(where):
    text = (ROOT / where).read_text() if where.endswith(".md") else notebook_00_text()
    times = runtimes.measured()
    assert times, "bench_notebooks.json measured no notebook"
    assert runtimes.problems(text, times, runtimes.notebooks()) == []


def test_drift_new_and_gone_notebooks_are_told_apart(tmp_path):
    """A doubled row fails; a notebook the measurement lacks gets 'not measured yet' and may miss."""
    (tmp_path / "notebooks").mkdir()
    for name in ("00_a.ipynb", "01_b.ipynb", "02_new.ipynb"):
        (tmp_path / "notebooks" / name).write_text("{}")
    measurement = tmp_path / "bench_notebooks.json"
    measurement.write_text(json.dumps({
        "date": "2026-01-01 00:00 UTC", "loadavg_start": [1.0], "notebooks": ["00_a.ipynb", "01_b.ipynb"],
        "runs": [{"per_notebook_seconds": {"00_a.ipynb": 3.0, "01_b.ipynb": 8.0}},
                 {"per_notebook_seconds": {"00_a.ipynb": 3.4, "01_b.ipynb": 9.0}}]}))
    block = runtimes.table(measurement, tmp_path)
    times = runtimes.measured(measurement)
    present = runtimes.notebooks(tmp_path)
    assert times == {"00_a.ipynb": 3.2, "01_b.ipynb": 8.5}  # medians
    assert runtimes.rows(block) == {"00_a": 3.2, "01_b": 8.5, "02_new": None}
    assert "| `02_new` | not measured yet |" in block
    assert runtimes.problems(block, times, present) == []
    assert runtimes.problems(block.replace("8.5 s", "12.0 s"), times, present) == []  # 1.41x: within
    assert runtimes.problems(block.replace("8.5 s", "13.0 s"), times, present) == [
        "01_b: the table says 13.0 s, the measurement 8.5 s"]
    assert runtimes.problems(block.replace("3.2 s", "1.0 s"), times, present) == [
        "00_a: the table says 1.0 s, the measurement 3.2 s"]
    without_new = block.replace("| `02_new` | not measured yet |\n", "")
    assert runtimes.problems(without_new, times, present) == []  # a new notebook may wait for bench
    assert runtimes.problems(block.replace("| `01_b` | 8.5 s |\n", ""), times, present) == [
        "01_b: measured 8.5 s, but the table has no time for it"]
    assert runtimes.problems(block, times, ["00_a.ipynb", "02_new.ipynb"]) == [
        "01_b: a row, but no such notebook"]


def test_the_generator_rewrites_only_its_block(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"before\n\n{runtimes.START}\nold\n{runtimes.END}\n\nafter\n")
    assert runtimes.update(readme, runtimes.table())
    text = readme.read_text()
    assert text.startswith("before\n\n" + runtimes.START) and text.endswith(runtimes.END + "\n\nafter\n")
    assert not runtimes.update(readme, runtimes.table())  # a second run changes nothing


def test_make_bench_rewrites_the_tables_after_measuring_the_notebooks():
    source = (ROOT / "bench" / "run.py").read_text()
    assert "runtimes.py" in source or "import runtimes" in source
