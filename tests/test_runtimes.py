"""The run-time tables (README, notebook 00) agree with `make bench`'s stored measurement.

tools/runtimes.py writes them from bench/results/bench_notebooks.json; a row off by
more than 1.5x from its notebook's measured time fails here (run `make runtimes`, or `make bench`).
"""
import json

import pytest

from support import ROOT, joined, script

runtimes = script("tools/runtimes.py")


@pytest.mark.parametrize("where", ["README.md", "notebooks/00_setup_check.ipynb"])
def test_each_row_is_within_1_5x_of_the_measured_time(where):
    text = (ROOT / where).read_text() if where.endswith(".md") else joined(ROOT / where, "markdown")
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


# --- every documented time names the CPU it was measured on, or is a ratio -----------------------

import argparse  # noqa: E402
import re  # noqa: E402

from minitf import cli  # noqa: E402
from minitf.core import recipes  # noqa: E402

DOCS = ["README.md", *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md")),
        "data/checkpoints/README.md",
        "notebooks/00_setup_check.ipynb", "notebooks/14_faster_language_model.ipynb"]
# a duration: "7.7 s", "about 90 s", "41 seconds", "35 minutes", "a minute", "5 min", "12 ms"
TIME = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?:–\d+(?:\.\d+)?)?\s?(?:s|ms|sec|seconds?|min|minutes?|hours?)\b"
                  r"|\b(?:a|an|one) (?:minute|hour)\b|\b(?:few|several|two|three) (?:seconds|minutes|hours)\b"
                  r"|\bminutes\b|\bseconds\b")
CPUS = re.compile(r"AMD EPYC|Intel Xeon|A100|H100")  # a GPU time names its GPU
# and a CPU time its instruction set, as `python -m minitf doctor` prints it: one name ("AMD EPYC")
# covers CPUs three times apart, and bf16 decides Muon's speed
INSTRUCTIONS = re.compile(r"AVX2|AVX-512|A100|H100")
RATIO = re.compile(r"\d\s?[x×]|[x×]\s?\d|÷|\bratio\b|\bfaster\b|\bslower\b|\bthe (?:same|time) of\b")


def units(text: str) -> list[str]:
    """What one time must name its CPU in: a table row (with its header and the paragraph just
    above it, which captions it), a code line, or a sentence of prose."""
    out, para, table, caption = [], [], [], ""
    lines = text.splitlines() + [""]
    in_code = False
    for line in lines:
        if line.startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            out.append(line)
            continue
        if line.startswith("|"):
            if not table:
                caption = " ".join(para[-1:]) if para else caption
                para = []
            table.append(line)
            continue
        if table:
            head = table[0]
            out += [f"{caption} {head} {row}" for row in table[2:]]
            table = []
        if line.strip():
            para.append(line.strip())
            continue
        if para:
            joined = " ".join(para)
            out += re.split(r"(?<=[.!?])\s+(?=[A-Z*`(\[])", joined)
            caption = joined.rsplit(". ", 1)[-1]
            para = []
    return out


def doc_text(path: str) -> str:
    if path.endswith(".ipynb"):
        return joined(ROOT / path, "markdown", sep="\n\n")
    return (ROOT / path).read_text()


def help_texts() -> list[str]:
    """Every help string of the command line: each option's, each command's, each recipe's."""
    found = [r.description for r in recipes.RECIPES.values()]

    def walk(p):
        found.extend(t for t in (p.description, p.epilog) if t)
        for action in p._actions:
            if action.help and action.help != argparse.SUPPRESS:
                found.append(action.help)
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    walk(sub)
    walk(cli.parser())
    return [" ".join(t.split()) for t in found]


def unnamed(texts) -> list[str]:
    """The units that state a time without naming a CPU and its instruction set, and without being
    a ratio. A reading time or a learner's time (the course map: how long a person takes) is not a
    machine's time."""
    return [u for u in texts if TIME.search(u) and not (CPUS.search(u) and INSTRUCTIONS.search(u))
            and not RATIO.search(u) and "reading time" not in u and "a learner's time" not in u]


@pytest.mark.parametrize("where", DOCS)
def test_every_documented_time_names_its_cpu_or_is_a_ratio(where):
    assert unnamed(units(doc_text(where))) == []


def test_every_time_in_the_command_line_help_names_its_cpu_or_is_a_ratio():
    assert unnamed(help_texts()) == []


def test_the_check_finds_a_time_without_a_cpu():
    """The README once said 'about a minute' and 'in 8 s' with no CPU: caught; 'on a busy 2-core
    AMD EPYC' without its instruction set: caught; with both, a ratio or a reading time: passed."""
    old = ("```bash\nmake lab     # first run sets up .venv (about a minute), then opens JupyterLab\n"
           "python -m minitf train --recipe shift-fast --out f.pt   # the same task in 8 s\n```\n\n"
           "It took 7.7 s on the busy 2-core CPU. It took 7.7 s on a busy 2-core AMD EPYC. "
           "It took 7.7 s on a busy 2-core AMD EPYC (AVX-512, bf16). "
           "It is 14× faster, 7.7 s against 110 s.\n\n"
           "The times are rough reading times.\n\n| notebook | about |\n|---|---|\n| 01 | 30 min |\n\n"
           "On a quiet machine:\n\n| run | wall |\n|---|---|\n| shift | 68 s |\n")
    assert unnamed(units(old)) == [
        "make lab     # first run sets up .venv (about a minute), then opens JupyterLab",
        "python -m minitf train --recipe shift-fast --out f.pt   # the same task in 8 s",
        "It took 7.7 s on the busy 2-core CPU.",
        "It took 7.7 s on a busy 2-core AMD EPYC.",
        "On a quiet machine: | run | wall | | shift | 68 s |"]
    assert unnamed(["lm-fast's training for about nanoGPT's CPU time (~90 s here)"])
    assert not unnamed(["340 steps", "3 seeds", "(B, T, 256)", "1.89 nats per byte", "a second view"])
    assert not unnamed(["1.449-1.462 in 9 min on an H100", "68 s on a quiet 2-core Intel Xeon (AVX2)"])


def test_the_stored_notebook_times_name_their_cpu():
    data = json.loads(runtimes.MEASUREMENT.read_text())
    assert data.get("cpu"), "bench_notebooks.json has no CPU model: run make bench --only notebooks"
    assert data["cpu"] in runtimes.table()
