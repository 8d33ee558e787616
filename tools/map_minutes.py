"""The minutes of the course map, written from tools/course_map.py's count.

    python tools/map_minutes.py            # rewrite the numbers in README.md and notebook 00
    python tools/map_minutes.py --check    # change nothing; exit 1 and say where a number is off

The course map (README.md's "The course", notebook 00's "A map of the course") has one table per
track: the track's heading states its time, each row a notebook's time, and an optional exercise's
minutes stand beside them ("+N optional"), not in them. This rewrites only those numbers, and the
"you write" column's names (an exercise declared since is added) and the "(optional)" mark after
each optional exercise's name there, from the declarations and the count
(`course_map.stated_map`); the words of the map stay as they are. Run it after a change to a
notebook's prose, an exercise's minutes or `make bench`'s run times; tests/notebooks/
test_course_budget.py fails while a stated number and the count differ. The site (tools/site.py)
reads the README's map, so it follows.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import course_map  # noqa: E402  (tools/course_map.py)
from minitf.course.exercises import EXERCISES  # noqa: E402
from normalize_notebooks import as_saved, normalized  # noqa: E402

README = ROOT / "README.md"
NOTEBOOK_00 = ROOT / "notebooks" / "00_setup_check.ipynb"

# a row of either map: README's `| `01_embeddings` | … |`, 00's `| 01 · embeddings | … |`; its last
# cell is the time, "25 min" or "25 min (+10 optional)"
ROW = re.compile(r"^(?P<head>\| (?:`(?P<stem>\d\d)_\w+`|(?P<number>\d\d) · [^|]*?) \|[^|\n]*\|)"
                 r"(?P<write>[^|\n]*)\| (?P<minutes>\d+) min(?: \(\+(?P<optional>\d+) optional\))? \|[ \t]*$",
                 re.M)
# a track's heading: README's `### The main path: about …`, 00's `**The main path: about …** (…)`
HEADING = re.compile(r"^(?P<md>### |\*\*)The (?P<track>main path|extras): about [^\n(*]*?(?:\*\*)? "
                     r"\((?P<minutes>\d+) minutes of a learner's time(?:, \+(?P<optional>\d+) min of "
                     r"optional exercises)?\)[ \t]*$", re.M)
OPTIONAL_MARK = " (optional)"


def time_cell(minutes: int, optional: int) -> str:
    return f"{minutes} min" + (f" (+{optional} optional)" if optional else "")


def heading(md: str, track: str, minutes: int, optional: int) -> str:
    about = f"about {course_map.in_hours(minutes)}"
    about = f"**The {track}: {about}**" if md == "**" else f"### The {track}: {about}"
    extra = f", +{optional} min of optional exercises" if optional else ""
    return f"{about} ({minutes} minutes of a learner's time{extra})"


def you_write(cell: str, number: str) -> str:
    """The "you write" cell with each exercise of notebook `number` in it (one declared since is
    added at the end) and "(optional)" after each optional one, and after no other."""
    for name, ex in EXERCISES.items():
        if ex.notebook != number:
            continue
        if f"`{name}`" not in cell:
            cell = f"{cell.rstrip()}, `{name}` " if cell.strip() not in ("", "—") else f" `{name}` "
        cell = cell.replace(f"`{name}`{OPTIONAL_MARK}", f"`{name}`")
        if ex.optional:
            cell = cell.replace(f"`{name}`", f"`{name}`{OPTIONAL_MARK}")
    return cell


def rewrite(text: str, stated: dict) -> str:
    """`text` (a map's Markdown) with every row's and heading's numbers as `stated` says."""
    by_number = {stem[:2]: numbers for stem, numbers in stated["notebooks"].items()}

    def row(m):
        number = m["stem"] or m["number"]
        if number not in by_number:
            return m[0]
        return f"{m['head']}{you_write(m['write'], number)}| {time_cell(*by_number[number])} |"

    def head(m):
        return heading(m["md"], m["track"], *stated["tracks"][m["track"]])

    return HEADING.sub(head, ROW.sub(row, text))


def stated_in(text: str) -> dict:
    """The numbers a map states, as `course_map.stated_map` gives them: {"notebooks": {number:
    (minutes, optional)}, "tracks": {track: (minutes, optional)}}, and each row's "you write" cell."""
    return {"notebooks": {(m["stem"] or m["number"]): (int(m["minutes"]), int(m["optional"] or 0))
                          for m in ROW.finditer(text)},
            "tracks": {m["track"]: (int(m["minutes"]), int(m["optional"] or 0)) for m in HEADING.finditer(text)},
            "you write": {(m["stem"] or m["number"]): m["write"].strip() for m in ROW.finditer(text)}}


def counted() -> dict:
    """course_map's numbers, keyed as stated_in keys them (notebook numbers)."""
    stated = course_map.stated_map()
    return {"notebooks": {stem[:2]: n for stem, n in stated["notebooks"].items()}, "tracks": stated["tracks"]}


def map_text(path: Path) -> str:
    """The map's Markdown: the README's whole text, or notebook 00's Markdown cells joined."""
    if path.suffix == ".ipynb":
        nb = json.loads(path.read_text(encoding="utf-8"))
        return "\n\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    return path.read_text(encoding="utf-8")


def update(path: Path, stated: dict) -> bool:
    """Rewrite the map's numbers in a Markdown file or a notebook's Markdown cells; True if changed."""
    if path.suffix == ".ipynb":
        nb = json.loads(path.read_text(encoding="utf-8"))
        changed = False
        for cell in nb["cells"]:
            if cell["cell_type"] == "markdown":
                src = "".join(cell["source"])
                new = rewrite(src, stated)
                if new != src:
                    cell["source"] = new.splitlines(keepends=True)
                    changed = True
        if changed:
            path.write_text(as_saved(normalized(nb)), encoding="utf-8")
        return changed
    text = path.read_text(encoding="utf-8")
    new = rewrite(text, stated)
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


def differences(path: Path) -> list[str]:
    """Where the map in `path` states another number than the count (or misses a notebook)."""
    found, want = stated_in(map_text(path)), counted()
    out = [f"{path.name}: notebook {n}: states {found['notebooks'].get(n)}, the count gives {v} "
           f"(minutes, optional minutes)" for n, v in want["notebooks"].items() if found["notebooks"].get(n) != v]
    out += [f"{path.name}: the {t}: states {found['tracks'].get(t)}, the count gives {v}"
            for t, v in want["tracks"].items() if found["tracks"].get(t) != v]
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--check", action="store_true", help="change nothing; exit 1 if a number is off")
    args = p.parse_args(argv)
    if args.check:
        problems = [d for path in (README, NOTEBOOK_00) for d in differences(path)]
        print("\n".join(problems) or "the course map's minutes are the count's")
        return 1 if problems else 0
    rewritten = set()
    for _ in range(3):  # 00's map is counted in 00's own minutes: rewrite until the count holds still
        stated = course_map.stated_map()
        changed = {path for path in (README, NOTEBOOK_00) if update(path, stated)}
        if not changed:
            break
        rewritten |= changed
    for path in (README, NOTEBOOK_00):
        print(f"{path.relative_to(ROOT)}: {'rewritten' if path in rewritten else 'unchanged'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
