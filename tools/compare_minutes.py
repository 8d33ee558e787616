"""The course before and after, notebook by notebook: words, cells, exercises and stated minutes
under the old time model (prose at 150 words a minute, as the maps counted until issue 42) and
under the time model of tools/course_map.py.

    python tools/compare_minutes.py 2b28c5b            # that commit against the working tree
    python tools/compare_minutes.py 2b28c5b nb0304     # against another commit or branch
    python tools/compare_minutes.py main ../wt/nb0304  # against another checkout's notebooks, uncommitted
    python tools/compare_minutes.py --fit 2b28c5b      # the calibration: the retry share fitted there
    python tools/compare_minutes.py --budget main      # the main path's parts against its 6 hours
    python tools/compare_minutes.py 2b28c5b main --with ../wt/nb0002 ../wt/nb0304
                                   # main with each checkout's changed notebooks laid over it (a merge's count)

A side is the working tree, a git revision or another checkout's folder: its notebooks and its
`make bench` run times (bench/results/bench_notebooks.json) are read with `git show` or from that
folder; nothing is checked out. The words are the prose outside reveals, counted as the map counts them; "exercises" are the
statements "Difficulty … · about N min", required/optional (06's census is one).
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import course_map  # noqa: E402  (tools/course_map.py: the tracks and the time model)

WORKING_TREE = "working tree"


@dataclass
class Side:
    """One side of the comparison: notebook stem → its parsed JSON, and the measured run seconds."""
    name: str
    notebooks: dict[str, dict]
    seconds: dict[str, float] = field(default_factory=dict)


def _git(*args: str) -> str:
    done = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"git {' '.join(args)}: {done.stderr.strip() or 'failed'}")
    return done.stdout


def from_folder(folder: Path, seconds: dict[str, float] | None = None, name: str = "") -> Side:
    """The notebooks in `folder` (NN_name.ipynb), with these run seconds (none: no run time)."""
    books = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in course_map.notebooks(folder)}
    return Side(name or str(folder), books, dict(seconds or {}))


def from_revision(revision: str) -> Side:
    """The notebooks and run times of a git revision (a commit, a branch), read with `git show`."""
    if revision == WORKING_TREE:
        return from_folder(course_map.NOTEBOOKS, course_map.run_seconds(), WORKING_TREE)
    if Path(revision).is_dir():  # another checkout: its notebooks/ and its bench measurement
        root = Path(revision)
        folder = root / "notebooks" if (root / "notebooks").is_dir() else root
        seconds = course_map.run_seconds(root / "bench" / "results" / "bench_notebooks.json")
        return from_folder(folder, seconds, revision)
    names = _git("ls-tree", "--name-only", revision, "notebooks/").split()
    books = {}
    for name in names:
        stem = Path(name).stem
        if name.endswith(".ipynb") and stem[:2].isdigit() and stem[2] == "_":
            try:
                books[stem] = json.loads(_git("show", f"{revision}:{name}"))
            except json.JSONDecodeError as e:
                raise SystemExit(f"{revision}:{name}: not a notebook's JSON ({e})") from None
    seconds = {}
    try:
        bench = json.loads(_git("show", f"{revision}:bench/results/bench_notebooks.json"))
        runs = [r["per_notebook_seconds"] for r in bench["runs"]]
        seconds = {n[:-6]: statistics.median(r[n] for r in runs if n in r)
                   for n in bench["notebooks"] if any(n in r for r in runs)}
    except SystemExit:
        pass  # never measured at that revision: run time 0
    return Side(revision, books, seconds)


def overlaid(base: Side, checkouts: list[str]) -> Side:
    """`base` with each checkout's notebooks that differ from base's laid over it, as a merge of those
    branches would have them; two checkouts that change the same notebook are refused, by name."""
    books, changed_by = dict(base.notebooks), {}
    for checkout in checkouts:
        for stem, nb in from_revision(checkout).notebooks.items():
            if nb == base.notebooks.get(stem):
                continue
            if stem in changed_by:
                raise SystemExit(f"{stem}: changed by both {changed_by[stem]} and {checkout}; compare them apart")
            changed_by[stem], books[stem] = checkout, nb
    return Side(f"{base.name} with " + ", ".join(checkouts), books, base.seconds)


def row(stem: str, nb: dict, seconds: dict[str, float]) -> dict:
    """One notebook's numbers: words, cells, exercises, and (minutes, optional) under each model."""
    path = Path(stem + ".ipynb")
    old = course_map.old_minutes(path, seconds, notebook=nb)
    new = course_map.minutes(path, seconds, notebook=nb)
    here = course_map.tasks(nb)
    return {"words": course_map.prose_words(nb), "cells": len(nb["cells"]),
            "required": sum(not t.optional for t in here), "optional": sum(t.optional for t in here),
            "old": (course_map.rounded(old["total"]), int(old["optional"])),
            "new": (course_map.rounded(new["total"]), course_map.rounded_optional(new["optional"])),
            "new exact": new}


def rows(side: Side) -> dict[str, dict]:
    return {stem: row(stem, nb, side.seconds) for stem, nb in sorted(side.notebooks.items())}


def totals(table: dict[str, dict], which: str) -> dict:
    """A track's sums ("main path", "extras", or "course" for both)."""
    picked = [r for stem, r in table.items() if which == "course" or course_map.track(stem) == which]
    out = {key: sum(r[key] for r in picked) for key in ("words", "cells", "required", "optional")}
    for model in ("old", "new"):
        out[model] = (sum(r[model][0] for r in picked), sum(r[model][1] for r in picked))
    return out


def _minutes(m: tuple[int, int]) -> str:
    return f"{m[0]}" + (f" (+{m[1]})" if m[1] else "")


def compare(before: Side, after: Side) -> str:
    """The before/after table in Markdown: one row per notebook, then each track and the course."""
    a, b = rows(before), rows(after)
    head = ("| notebook | words outside reveals | cells | exercises required/optional | "
            "minutes, old model | minutes, new model |\n|---|---|---|---|---|---|")
    lines = [f"Before: {before.name}; after: {after.name}. Minutes as the map states them "
             f"(+ optional exercises); old model: prose at {course_map.WORDS_PER_MINUTE} words a minute; "
             f"new model: tools/course_map.py.", "", head]

    def cell(key, x, y, fmt=str):
        return fmt(x.get(key, 0) if x else 0) + " → " + fmt(y.get(key, 0) if y else 0)

    def line(label, x, y):
        ex = lambda r: f"{r['required']}/{r['optional']}" if r else "—"  # noqa: E731
        mins = lambda r, m: _minutes(r[m]) if r else "—"  # noqa: E731
        return (f"| {label} | {cell('words', x, y, lambda v: f'{v:,}')} | {cell('cells', x, y)} | "
                f"{ex(x)} → {ex(y)} | {mins(x, 'old')} → {mins(y, 'old')} | {mins(x, 'new')} → {mins(y, 'new')} |")

    for stem in sorted(set(a) | set(b), key=lambda s: s[:2]):
        lines.append(line(f"`{stem}`", a.get(stem), b.get(stem)))
    for which in ("main path", "extras", "course"):
        lines.append(line(f"**{which}**", totals(a, which), totals(b, which)))
    return "\n".join(lines)


def fit(side: Side) -> dict:
    """The calibration on `side`: the retry share that makes the main path with every exercise take
    the reviewer's estimate, and what the model then gives the whole course against the other one."""
    target = course_map.CALIBRATION
    parts = {"main path": [0.0, 0.0], "extras": [0.0, 0.0]}  # [minutes before any retry, exercise minutes]
    for stem, nb in side.notebooks.items():
        m = course_map.minutes(Path(stem + ".ipynb"), side.seconds, notebook=nb)
        exercise = (m["required"] + m["optional"]) / (1 + course_map.RETRY_SHARE)
        parts[course_map.track(stem)][0] += m["total"] - m["required"] + exercise
        parts[course_map.track(stem)][1] += exercise
    (main_base, main_exercise), (extra_base, extra_exercise) = parts["main path"], parts["extras"]
    share = (target["main path, every exercise"] - main_base) / main_exercise
    course = main_base + extra_base + share * (main_exercise + extra_exercise)
    return {"main path before retries": main_base, "main path exercise minutes": main_exercise,
            "retry share": share, "whole course": course,
            "residual": course - target["whole course, every exercise"]}


def budget(side: Side) -> str:
    """The main path's time by part against its budget, and its required exercises in path order
    with the minutes each would take out of the stated time if it became optional."""
    parts = {"required": 0.0, "reading": 0.0, "code": 0.0, "figures": 0.0, "running": 0.0}
    exercises = []
    for stem, nb in sorted(side.notebooks.items()):
        if course_map.track(stem) != "main path":
            continue
        m = course_map.minutes(Path(stem + ".ipynb"), side.seconds, notebook=nb)
        for key in parts:
            parts[key] += m[key]
        exercises += [(stem[:2], t.name or "(census)", t.minutes) for t in course_map.tasks(nb) if not t.optional]
    stated = sum(r["new"][0] for stem, r in rows(side).items() if course_map.track(stem) == "main path")
    limit = course_map.MAIN_PATH_MINUTES_BUDGET
    lines = [f"{side.name}: the main path states {stated} min ({course_map.in_hours(stated)}), budget {limit}: "
             f"{stated - limit:+d} min",
             "  parts (unrounded): " + ", ".join(f"{k} {v:.0f}" for k, v in parts.items()),
             f"  without any prose it would state about {stated - parts['reading']:.0f} min",
             "  required exercises in path order (stated min → min out of the time if optional):"]
    lines += [f"    {number} {name:22} {m:3} → {m * (1 + course_map.RETRY_SHARE):5.1f}" for number, name, m in exercises]
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("before", help="a git revision (commit or branch) or a checkout's folder")
    p.add_argument("after", nargs="?", default=WORKING_TREE,
                   help="a git revision or a checkout's folder; default: the working tree")
    p.add_argument("--fit", action="store_true", help="print the calibration fitted on BEFORE instead")
    p.add_argument("--budget", action="store_true", help="print the main path against its budget instead "
                   "(AFTER's, BEFORE's where AFTER is not given)")
    p.add_argument("--with", dest="checkouts", nargs="+", default=[], metavar="CHECKOUT",
                   help="lay each checkout's (or revision's) changed notebooks over AFTER's")
    args = p.parse_args(argv)
    after_given = args.after != WORKING_TREE or args.checkouts
    after = overlaid(from_revision(args.after), args.checkouts) if args.checkouts else None
    if args.budget:
        print(budget(after or (from_revision(args.after) if after_given else from_revision(args.before))))
        return 0
    if args.fit:
        f = fit(from_revision(args.before))
        print(f"at {args.before}: the main path with every exercise is {f['main path before retries']:.1f} min "
              f"before any retry, of which {f['main path exercise minutes']:.0f} min of stated exercises; "
              f"{course_map.CALIBRATION['main path, every exercise']} min needs a retry share of "
              f"{f['retry share']:.3f} (RETRY_SHARE = {course_map.RETRY_SHARE}); the whole course is then "
              f"{f['whole course']:.0f} min ({course_map.in_hours(round(f['whole course']))}), "
              f"{f['residual']:+.0f} min from the estimate of "
              f"{course_map.CALIBRATION['whole course, every exercise']}")
        return 0
    print(compare(from_revision(args.before), after or from_revision(args.after)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
