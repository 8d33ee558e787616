"""The course's two tracks and how long each notebook takes a learner.

The main path (00–09) teaches the model and never uses an extra; each extra (10–15) stands on the
main path only. The minutes are counted, not guessed, so that 00's map, the README and the site can
be checked against the notebooks: the required exercises' stated minutes, the prose read at 150
words a minute (Markdown outside `<details>` reveals, code blocks left out) and the measured run
time. An optional exercise (`Exercise.optional`) is not in a notebook's time: the maps show its
minutes beside it ("+N optional"), so the time a track states is the time its required work takes.

`stated_map` gives the numbers the maps print (each notebook to the nearest 5 minutes, each track
the sum of its rows); tools/map_minutes.py writes them into the README and notebook 00.

A tool of the repository, not of the package: it reads the notebooks and `make bench`'s measured
run times (bench/results/), which an installed minitf does not have.

    python tools/course_map.py      # minutes per notebook and per track, counted
"""
from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from minitf.course.exercises import EXERCISES  # noqa: E402
from runtimes import MEASUREMENT, measured  # noqa: E402  (tools/runtimes.py: the run-time tables' reader)

NOTEBOOKS = ROOT / "notebooks"
RUN_TIMES = MEASUREMENT  # make bench's notebooks section: bench/results/bench_notebooks.json
MAIN_PATH = ("00", "01", "02", "03", "04", "05", "06", "07", "08", "09")
EXTRAS = ("10", "11", "12", "13", "14", "15")
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
    return {name[:-6]: seconds for name, seconds in measured(path).items()} if path.is_file() else {}


def minutes(path: Path, seconds: dict[str, float] | None = None) -> dict[str, float]:
    """The parts of a notebook's time: its required exercises (their stated minutes), reading (prose
    at 150 words a minute), running (measured), and their total; its optional exercises' minutes
    apart, outside the total."""
    path = Path(path)
    seconds = run_seconds() if seconds is None else seconds
    here = [e for e in EXERCISES.values() if e.notebook == path.name[:2]]
    parts = {"required": float(sum(e.minutes for e in here if not e.optional)),
             "reading": prose_words(path) / WORDS_PER_MINUTE,
             "running": seconds.get(path.stem, 0.0) / 60}
    parts["total"] = sum(parts.values())
    parts["optional"] = float(sum(e.minutes for e in here if e.optional))
    return parts


def rounded(minutes: float) -> int:
    """A time as the maps state it: to the nearest 5 minutes (halves up), at least 5."""
    return max(5, 5 * math.floor(minutes / 5 + 0.5))


def in_hours(minutes: int) -> str:
    """345 → '5 h 45 min', 120 → '2 h', 45 → '45 min'."""
    h, m = divmod(int(minutes), 60)
    return " ".join(([f"{h} h"] if h else []) + ([f"{m} min"] if m or not h else []))


def stated_map(folder: Path = NOTEBOOKS, seconds: dict[str, float] | None = None) -> dict:
    """What 00's map, the README and the site state: {"notebooks": {stem: (minutes, optional
    minutes)}, "tracks": {track: (minutes, optional minutes)}}; a track's numbers are the sums of its
    rows, so the table adds up."""
    seconds = run_seconds() if seconds is None else seconds
    rows, tracks = {}, {"main path": (0, 0), "extras": (0, 0)}
    for path in notebooks(folder):
        m = minutes(path, seconds)
        rows[path.stem] = (rounded(m["total"]), int(m["optional"]))
        total, optional = tracks[track(path.name)]
        tracks[track(path.name)] = (total + rows[path.stem][0], optional + rows[path.stem][1])
    return {"notebooks": rows, "tracks": tracks}


def notebooks(folder: Path = NOTEBOOKS) -> list[Path]:
    return sorted(Path(folder).glob("[0-9][0-9]_*.ipynb"))


def summary(folder: Path = NOTEBOOKS) -> str:
    """Minutes per notebook and per track, counted and as the course map states them."""
    seconds, lines = run_seconds(), []
    stated = stated_map(folder, seconds)
    lines.append(f"{'notebook':28} {'track':9} {'words':>6}        required + reading + running = total"
                 f"   optional   stated")
    for path in notebooks(folder):
        m = minutes(path, seconds)
        lines.append(f"{path.stem:28} {track(path.name):9} {prose_words(path):6,} words  "
                     f"{m['required']:8.0f} + {m['reading']:7.1f} + {m['running']:7.1f} = {m['total']:5.1f}"
                     f"   {m['optional']:8.0f}   {stated['notebooks'][path.stem][0]:3} min")
    for name, (total, optional) in stated["tracks"].items():
        words = sum(prose_words(p) for p in notebooks(folder) if track(p.name) == name)
        lines.append(f"{name}: {total} min ({in_hours(total)}), +{optional} min of optional exercises; "
                     f"{words:,} words")
    return "\n".join(lines)


if __name__ == "__main__":  # python tools/course_map.py
    print(summary())


# Stored results that only an extra explains (its checkpoint, or the loader of its measurements):
# a main-path notebook that loads one stands on that extra. A forward pointer in prose is fine.
EXTRA_ONLY_RESULTS = {
    "shift_smallest.pt": "11", "load_tiny_sweep": "11",
    "shift_long_small.pt": "12", "load_length_study": "12",
    "load_growth": "13", "load_lm_growth": "13", "load_recipe_growth": "13",
    "lm_fast.pt": "14", "load_lm_envelope": "14", "load_lm_fast": "14",
    "load_bpe": "15", "load_bpe_model": "15",
}
