"""The course's two tracks and how long each notebook takes a learner.

The main path (00–09) teaches the model and never uses an extra; each extra (10–14) stands on the
main path only. The minutes are counted, not guessed, so that 00's map, the README and the site can
be checked against the notebooks: the exercises' stated minutes, the prose read at 150 words a
minute (Markdown outside `<details>` reveals, code blocks left out) and the measured run time.
"""
from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

from .exercises import EXERCISES

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
RUN_TIMES = ROOT / "bench" / "results" / "bench_notebooks.json"
MAIN_PATH = ("00", "01", "02", "03", "04", "05", "06", "07", "08", "09")
EXTRAS = ("10", "11", "12", "13", "14")
WORDS_PER_MINUTE = 150
MAIN_PATH_WORD_BUDGET = 20_000
NOTEBOOK_WORD_BUDGET = 3_000

_REVEAL = re.compile(r"<details>.*?</details>", re.S)
_CODE_BLOCK = re.compile(r"```.*?```", re.S)
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_WORD = re.compile(r"[A-Za-z0-9][\w'’.-]*")


def track(notebook: str) -> str:
    """'main path' or 'extras', from a notebook's name or number ("05_training…", "05")."""
    number = notebook[:2]
    if number in MAIN_PATH:
        return "main path"
    if number in EXTRAS:
        return "extras"
    raise ValueError(f"{notebook}: not a notebook of either track (main path {MAIN_PATH[0]}–"
                     f"{MAIN_PATH[-1]}, extras {EXTRAS[0]}–{EXTRAS[-1]})")


def prose_words(path: Path) -> int:
    """Words a learner reads in the notebook's Markdown: reveals (hints, solutions, answers), code
    blocks and HTML comments left out."""
    count = 0
    for cell in json.loads(Path(path).read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] == "markdown":
            text = "".join(cell["source"])
            for pattern in (_REVEAL, _CODE_BLOCK, _COMMENT):
                text = pattern.sub(" ", text)
            count += len(_WORD.findall(text))
    return count


def run_seconds(path: Path = RUN_TIMES) -> dict[str, float]:
    """Notebook stem → median seconds top to bottom, as last measured (empty if never measured)."""
    if not path.is_file():
        return {}
    data = json.loads(path.read_text())
    runs = [r["per_notebook_seconds"] for r in data["runs"]]
    return {n[:-6]: statistics.median(r[n] for r in runs if n in r)
            for n in data["notebooks"] if any(n in r for r in runs)}


def minutes(path: Path, seconds: dict[str, float] | None = None) -> dict[str, float]:
    """The parts of a notebook's time: exercises (their stated minutes), reading (prose at 150
    words a minute) and running (measured), and their total."""
    path = Path(path)
    seconds = run_seconds() if seconds is None else seconds
    parts = {"exercises": float(sum(e.minutes for e in EXERCISES.values() if e.notebook == path.name[:2])),
             "reading": prose_words(path) / WORDS_PER_MINUTE,
             "running": seconds.get(path.stem, 0.0) / 60}
    parts["total"] = sum(parts.values())
    return parts


def notebooks(folder: Path = NOTEBOOKS) -> list[Path]:
    return sorted(Path(folder).glob("[0-9][0-9]_*.ipynb"))


def summary(folder: Path = NOTEBOOKS) -> str:
    """Minutes per notebook and per track, as the course map should state them."""
    seconds, lines, totals = run_seconds(), [], {"main path": 0.0, "extras": 0.0}
    for path in notebooks(folder):
        m = minutes(path, seconds)
        totals[track(path.name)] += m["total"]
        lines.append(f"{path.stem:28} {track(path.name):9} {prose_words(path):6,} words  "
                     f"{m['exercises']:3.0f} + {m['reading']:3.0f} + {m['running']:.1f} = {m['total']:4.0f} min")
    lines += [f"{name}: {total:.0f} min ({total / 60:.1f} h)" for name, total in totals.items()]
    return "\n".join(lines)


if __name__ == "__main__":  # python -m minitf.course.course_map
    print(summary())


# Stored results that only an extra explains (its checkpoint, or the loader of its measurements):
# a main-path notebook that loads one stands on that extra. A forward pointer in prose is fine.
EXTRA_ONLY_RESULTS = {
    "shift_smallest.pt": "11", "load_tiny_sweep": "11",
    "shift_long_small.pt": "12", "load_length_study": "12",
    "load_growth": "13", "load_lm_growth": "13", "load_recipe_growth": "13",
    "lm_fast.pt": "14", "load_lm_envelope": "14", "load_lm_fast": "14",
}
