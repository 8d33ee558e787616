"""What the bench studies' reports share, written once: the run's date and command line, the
machine's load, a spread over seeds as "median (min–max)", a difference paired by seed, and a
table the package already prints set into a report.

Every study writes its result as `<study>.json` beside a Markdown report `<study>.md` rendered from
that JSON alone, so the report can be rendered again from what is stored (tests/test_bench_store.py
checks that each stored report is what its study renders from its stored JSON).
"""
from __future__ import annotations

import datetime as dt
import os
import platform
import statistics
import sys
from pathlib import Path


def utc_now() -> str:
    """The date a run finished, as every report states it: '2026-11-28 16:40 UTC'."""
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def command_line(script: str, argv: list[str] | None = None) -> str:
    """The command that ran a study, as its report quotes it: 'python bench/lm.py --quick'."""
    return " ".join([f"python bench/{script}", *(sys.argv[1:] if argv is None else argv)])


def loadavg() -> list[float]:
    """The 1-, 5- and 15-minute load averages, rounded: a shared machine's times say how busy it was."""
    return [round(x, 2) for x in os.getloadavg()]


def cpu_model(cores: bool = False) -> str:
    """The CPU's model name (/proc/cpuinfo; platform's guess elsewhere), with its core count if
    asked: a stored time names the CPU it was measured on."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        lines = []
    name = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")),
                platform.processor() or platform.machine())
    return f"{name}, {os.cpu_count()} cores" if cores else name


def spread(values, digits: int = 4, unit: str = "") -> str:
    """'median (min–max)' of values over seeds or rounds: spread([1.2, 1.0, 1.1], 2) → '1.10 (1.00–1.20)'."""
    v = list(values)
    return f"{statistics.median(v):.{digits}f}{unit} ({min(v):.{digits}f}–{max(v):.{digits}f}{unit})"


def signed_spread(values, digits: int = 4) -> str:
    """A difference's 'median (min to max)', each with its sign: '+0.0123 (-0.0040 to +0.0310)'."""
    v = list(values)
    return f"{statistics.median(v):+.{digits}f} ({min(v):+.{digits}f} to {max(v):+.{digits}f})"


def paired_deltas(runs, base_runs, key: str = "val_loss") -> list[float]:
    """Each run's `key` minus the base arm's run with the same seed (the same first weights and
    batches), for the seeds both have."""
    base = {r["seed"]: r[key] for r in base_runs}
    return [r[key] - base[r["seed"]] for r in runs if r["seed"] in base]


def text_report(title: str, lead: str, table: str) -> str:
    """A report whose table the package prints already (a notebook shows the same text): the title,
    a sentence on how it was made, the table as a code block."""
    return "\n".join([f"# {title}", "", lead, "", "```", table, "```"])
