"""`make student`: copies of the notebooks without the collapsed solutions, for a learner who
would rather not have the answer one click away.

    python tools/student.py [--out student]

Each exercise's solution sits in a Markdown cell as `<details><summary>Solution</summary> …
</details>` (beside the two hints, which stay). The copy replaces each such block with one line
saying where the solution is, and changes nothing else: every code cell and stored output is the
notebook's own, so a copy runs exactly as the notebook does, and each exercise's check says the
function is "not written yet" until the learner writes it. The copies sit one folder below the
repository's root like notebooks/, so their relative paths (`../data/...`) still hold. Passed
pieces are saved to `my_parts/` beside the copies, as for the notebooks. A copy that exists is
kept (it may hold your work) unless `--force`.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOLUTION = re.compile(r"<details>\s*<summary>\s*Solution\s*</summary>.*?</details>", re.S)
LEFT_OUT = ("*The solution is left out of this copy (`make student`); the course's own notebook in "
            "`notebooks/` has it, collapsed.*")


def strip_solutions(nb: dict) -> tuple[dict, int]:
    """The notebook (nbformat JSON) with every solution block replaced by LEFT_OUT, and how many."""
    count = 0
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        text = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        new, n = SOLUTION.subn(LEFT_OUT, text)
        if n:
            count += n
            cell["source"] = new.splitlines(keepends=True)
    return nb, count


def write(out: Path, force: bool = False) -> tuple[dict[str, int], list[str]]:
    """Write every notebooks/NN_*.ipynb's copy into `out`; returns (name → solutions removed, the
    names kept because a copy exists: a learner's work in it is never overwritten unless `force`)."""
    out.mkdir(parents=True, exist_ok=True)
    removed, kept = {}, []
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        if (out / path.name).exists() and not force:
            kept.append(path.name)
            continue
        nb, removed[path.name] = strip_solutions(json.loads(path.read_text()))
        (out / path.name).write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    return removed, kept


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, default=ROOT / "student")
    p.add_argument("--force", action="store_true", help="replace copies that exist (your work in them is lost)")
    args = p.parse_args(argv)
    removed, kept = write(args.out, args.force)
    print(f"wrote {len(removed)} notebooks to {args.out}, {sum(removed.values())} solutions left out; "
          f"open them with: .venv/bin/jupyter lab {args.out}")
    if kept:
        print(f"kept {len(kept)} copies that exist (your work): {', '.join(kept)}; "
              "remove one, or pass --force (make student STUDENT_ARGS=--force), to write it anew")
    return 0


if __name__ == "__main__":
    sys.exit(main())
