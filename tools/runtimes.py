"""The run-time table of the notebooks, written from `make bench`'s measurement.

    python tools/runtimes.py            # rewrite the tables in README.md and notebooks/00_setup_check.ipynb
    python tools/runtimes.py --print    # print the table only

`make bench` (its `notebooks` section) stores each notebook's time, top to bottom with its kernel
start, and the CPU's model name in bench/results/bench_notebooks.json, and rewrites these
tables itself; the table names that CPU, and one figure measured on another CPU (OTHER_CPU) says how
far another machine's times can be from it. Each
table sits between the two markers below; everything else in the files stays as it is. A notebook
the measurement does not have yet (a new one) gets a row saying so. tests/test_runtimes.py fails
when a row and the measurement drift apart by more than 1.5x.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MEASUREMENT = ROOT / "bench" / "results" / "bench_notebooks.json"
START = "<!-- run times: written by tools/runtimes.py from make bench's measurement -->"
END = "<!-- end of run times -->"
BLOCK = re.compile(re.escape(START) + r".*?" + re.escape(END), re.S)
ROW = re.compile(r"^\| `(\d\d_\w+)` \| (?:(\d+(?:\.\d+)?) s|not measured yet) \|", re.M)
NOT_MEASURED = "not measured yet"
TARGETS = (ROOT / "README.md", ROOT / "notebooks" / "00_setup_check.ipynb")
# a notebook's time on another CPU, measured on a quiet machine by a learner, beside its time on
# the table's CPU at that version of the notebook (the ratio holds; the notebook has changed since)
OTHER_CPU = {"notebook": "05_training_base64_pairs.ipynb", "seconds": 16.8, "here": 9.1,
             "cpu": "a 2-core Intel Xeon (AVX-512), quiet"}


def measured(path: Path = MEASUREMENT) -> dict[str, float]:
    """notebook file name → median seconds over the measurement's runs."""
    data = json.loads(path.read_text())
    runs = [r["per_notebook_seconds"] for r in data["runs"]]
    return {n: statistics.median(r[n] for r in runs if n in r)
            for n in data["notebooks"] if any(n in r for r in runs)}


def notebooks(root: Path = ROOT) -> list[str]:
    return sorted(p.name for p in (root / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def table(path: Path = MEASUREMENT, root: Path = ROOT, for_learners: bool = False) -> str:
    """The block, markers included: one row per notebook in notebooks/. For learners (notebook
    00) it says when and on which CPU, without the measuring harness (the command, the load)."""
    data = json.loads(path.read_text())
    times = measured(path)
    load = data.get("loadavg_start")
    how = (f"Measured on {data['date'][:10]} on {cpu(data)}, the median of {len(data['runs'])} "
           "runs: each notebook top to bottom, its kernel start included." if for_learners else
           f"Measured by `make bench` on {data['date']} on {cpu(data)}, the median of "
           f"{len(data['runs'])} run(s) (load average {load[0] if load else '?'} at the start): each notebook top "
           "to bottom, its kernel start included, as `pytest --nbval` runs it.")
    lines = [START, "", how, "",
             f"| notebook | runs in, on {cpu(data)} |", "|---|---|"]
    for name in notebooks(root):
        t = times.get(name)
        lines.append(f"| `{name[:-6]}` | {f'{t:.1f} s' if t is not None else NOT_MEASURED} |")
    if OTHER_CPU["notebook"] in times:
        lines += ["", f"Another CPU takes other times: an earlier `{OTHER_CPU['notebook'][:-6]}` took "
                  f"{OTHER_CPU['seconds']} s on {OTHER_CPU['cpu']}, where it took {OTHER_CPU['here']} s "
                  f"on the CPU above: {OTHER_CPU['seconds'] / OTHER_CPU['here']:.1f}×."]
    return "\n".join(lines + ["", END])


def cpu(data: dict) -> str:
    """The CPU a measurement was made on, as the table names it."""
    if not data.get("cpu"):
        return "a CPU the measurement did not record (run `make bench` again)"
    detail = ", ".join(str(x) for x in (f"{data['cores']} cores" if data.get("cores") else None,
                                         data.get("instructions")) if x)
    name = f"{data['cpu']} ({detail})" if detail else data["cpu"]
    return ("an " if name[0].upper() in "AEIOU" else "a ") + name


def rows(text: str) -> dict[str, float | None]:
    """notebook stem → seconds (None: not measured) from the block in `text`."""
    m = BLOCK.search(text)
    if not m:
        return {}
    return {r[1]: float(r[2]) if r[2] else None for r in ROW.finditer(m[0])}


def problems(text: str, times: dict[str, float], present: list[str], tolerance: float = 1.5) -> list[str]:
    """Where a table (`text`) and the measurement (`times`, file name → s) disagree: a measured
    notebook of `present` without a row or with a row off by more than `tolerance`x, or a row for a
    notebook that is gone. A notebook the measurement lacks (a new one) may have no row yet."""
    table_rows, found = rows(text), []
    if not table_rows:
        return ["no run-time table"]
    for name in present:
        stem, t = name[:-6], times.get(name)
        if t is None:
            continue
        row = table_rows.get(stem)
        if row is None:
            found.append(f"{stem}: measured {t:.1f} s, but the table has no time for it")
        elif max(row / t, t / row) > tolerance:
            found.append(f"{stem}: the table says {row:.1f} s, the measurement {t:.1f} s")
    found += [f"{stem}: a row, but no such notebook" for stem in table_rows
              if f"{stem}.ipynb" not in present]
    return found


def update(path: Path, block: str) -> bool:
    """Replace the block in a Markdown file or in a notebook's Markdown cell; True if it changed."""
    if path.suffix == ".ipynb":
        nb = json.loads(path.read_text())
        changed = False
        for cell in nb["cells"]:
            src = "".join(cell["source"])
            if cell["cell_type"] == "markdown" and BLOCK.search(src):
                new = BLOCK.sub(lambda _: block, src)
                changed |= new != src
                cell["source"] = new.splitlines(keepends=True)
        if changed:
            path.write_text(json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n")  # as Jupyter writes it
        return changed
    text = path.read_text()
    if not BLOCK.search(text):
        raise SystemExit(f"{path}: no run-time block ({START} … {END})")
    new = BLOCK.sub(lambda _: block, text)
    path.write_text(new)
    return new != text


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--print", action="store_true", help="print the table, change nothing")
    args = p.parse_args(argv)
    if args.print:
        print(table())
        return 0
    for path in TARGETS:
        block = table(for_learners=path.suffix == ".ipynb")
        print(f"{path.relative_to(ROOT)}: {'rewritten' if update(path, block) else 'unchanged'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
