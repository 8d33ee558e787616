"""The course's two tracks and how long each notebook takes a learner.

The main path (00–09) teaches the model and never uses an extra; each extra (10–15) stands on the
main path only. 00's map, the README and the site state each notebook's minutes from this count, so
they can be checked against the notebooks. The count is a model of a learner's time, calibrated to
one learner's estimate (below), not a measurement of learners.

**The time model.** A notebook's minutes are the sum of

- reading its prose (Markdown outside `<details>` reveals, code blocks and HTML comments left out)
  at `PROSE_WORDS_PER_MINUTE`, 138: Carver's "memorizing" rate, for text read to be used at once
  (R. P. Carver, "Reading rate: theory, research and practical implications", Journal of Reading
  36(2), 1992: learning 200, memorizing 138 words a minute); ordinary non-fiction is read at 238
  (M. Brysbaert, "How many words do we read per minute?", J. Memory and Language 109, 2019);
- reading its code cells (every non-blank line) at `CODE_LINES_PER_MINUTE`, 500 lines an hour:
  the preparation rate for reviewing application code (W. Humphrey, "Managing the Software
  Process", 1989, as cited in S. McConnell, "Code Complete", 2nd ed., 2004), the fastest rate at
  which review still finds most defects in the Cisco/SmartBear study of 2,500 reviews (2006);
- looking at each stored figure (an image output; a widget stores one) for `FIGURE_MINUTES`, 1:
  a simple four-value graph and a two-way question took 15.5 s (SD 5.6) in an eye-tracking study
  (after Carpenter & Shah 1998; VSS 2017), and a figure here has two to eight panels;
- each exercise (a statement "Difficulty … · about N min": the checked exercises and 06's census)
  for its stated minutes times 1 + `RETRY_SHARE`: its statement is read with the prose, and the
  share is the first attempt that fails and its feedback read;
- and the notebook's measured run time (`make bench`, bench/results/).

**The calibration.** The rates above are published; `RETRY_SHARE` is the one fitted number. A
learner who worked every exercise of the main path at commit 2b28c5b (optional ones included)
estimated about 11 hours, 9–13 h (the review of the course, issue 42). At 2b28c5b the main path
holds 18,481 words of prose (134 min), 1,131 lines of code (136 min), 41 figures (41 min), 330
minutes of stated exercises and 0.8 min of run time: 641 min before any retry, so the 660 min of
11 h leave 19 min, `RETRY_SHARE` = 19 / 330 = 0.06 (residual 0 at the one point fitted; the
reviewer's range 9–13 h would give any share from 0 to 0.42). The check: the same model gives the
whole course at 2b28c5b (15 notebooks) 849 minutes, 14 h 9 min, where the reviewer estimated about
15 h: a residual of −51 min (−6 %). `python tools/compare_minutes.py --fit 2b28c5b` recomputes both.
Other rates refit to other shares but state nearly the same required path: with prose at 138–238
words a minute and code at 8 lines a minute or not counted at all, the share comes out 0.06–0.64, the
whole-course check −51 to −100 min (these published rates check best), and the main path at 444dd42
(after the prose cuts) states 490–525 min (520 here).

An optional exercise (its heading says "(optional)") is not in a notebook's time: the maps show its
minutes beside it ("+N optional"), so the time a track states is the time its required work takes.
`stated_map` gives the numbers the maps print (each notebook to the nearest 5 minutes, each track
the sum of its rows); tools/map_minutes.py writes them into the README and notebook 00.

A tool of the repository, not of the package: it reads the notebooks and `make bench`'s measured
run times (bench/results/), which an installed minitf does not have.

    python tools/course_map.py                    # minutes per notebook and per track, counted
    python tools/course_map.py --compare 2b28c5b  # that commit and the working tree, old model and new
                                                  # (tools/compare_minutes.py; its --help says more)
"""
from __future__ import annotations

import functools
import json
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from runtimes import MEASUREMENT, measured  # noqa: E402  (tools/runtimes.py: the run-time tables' reader)

NOTEBOOKS = ROOT / "notebooks"
RUN_TIMES = MEASUREMENT  # make bench's notebooks section: bench/results/bench_notebooks.json
MAIN_PATH = ("00", "01", "02", "03", "04", "05", "06", "07", "08", "09")
EXTRAS = ("10", "11", "12", "13", "14", "15")
MAIN_PATH_WORD_BUDGET = 13_000
NOTEBOOK_WORD_BUDGET = 2_000
MAIN_PATH_MINUTES_BUDGET = 360  # issue 42: a main path a learner finishes in a day, 6 h stated

# the time model (the module docstring says where each number comes from)
PROSE_WORDS_PER_MINUTE = 138    # Carver's "memorizing" rate: prose read to be used in the next cell
CODE_LINES_PER_MINUTE = 500 / 60  # Humphrey's review-preparation rate for application code, 500 lines an hour
FIGURE_MINUTES = 1.0            # one stored figure (two to eight panels) looked at and understood
RETRY_SHARE = 0.06              # fitted: a first failing attempt, as a share of an exercise's stated minutes
# the one learner's estimates the model is calibrated to and checked against (the review of 2b28c5b)
CALIBRATION = {"commit": "2b28c5b", "main path, every exercise": 11 * 60, "whole course, every exercise": 15 * 60}
# the model the maps used until issue 42 (kept to compare: tools/compare_minutes.py)
WORDS_PER_MINUTE = 150          # the old model's prose rate; it counted no code, no figure, no retry

_REVEAL = re.compile(r"<details>.*?</details>", re.S)
_CODE_BLOCK = re.compile(r"```.*?```", re.S)
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_WORD = re.compile(r"[A-Za-z0-9][\w'’.-]*")
# an exercise's statement: "**Difficulty ●●○○○ · about 15 min.**"; its heading says "(optional)"
_STATEMENT = re.compile(r"\*\*Difficulty [●○]+ · about (\d+) min\.?\*\*")
_HEADING = re.compile(r"^#+ .*$", re.M)
_CHECK = re.compile(r"""minitf\.exercise\(\s*["'](\w+)["']""")


def track(notebook: str) -> str:
    """'main path' or 'extras', from a notebook's name or number ("05_training…", "05")."""
    number = notebook[:2]
    if number in MAIN_PATH:
        return "main path"
    if number in EXTRAS:
        return "extras"
    raise ValueError(f"{notebook}: not a notebook of either track (main path {MAIN_PATH[0]}–"
                     f"{MAIN_PATH[-1]}, extras {EXTRAS[0]}–{EXTRAS[-1]})")


def cells(notebook) -> list[dict]:
    """A notebook's cells, from its path or its parsed JSON (tests/support reads notebooks with it)."""
    if isinstance(notebook, dict):
        return notebook["cells"]
    path = Path(notebook)
    stat = path.stat()
    return _parsed_cells(path, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=64)
def _parsed_cells(path: Path, mtime_ns: int, size: int) -> list[dict]:
    """A notebook file's cells, parsed once per version of the file (the maps count each
    notebook several times)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))["cells"]
    except (json.JSONDecodeError, KeyError) as e:
        raise ValueError(f"{path}: not a notebook's JSON with a 'cells' list ({e})") from None


def _text(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def prose_words(notebook) -> int:
    """Words a learner reads in the notebook's Markdown: reveals (hints, solutions, answers), code
    blocks and HTML comments left out."""
    count = 0
    for cell in cells(notebook):
        if cell["cell_type"] == "markdown":
            text = _text(cell)
            for pattern in (_REVEAL, _CODE_BLOCK, _COMMENT):
                text = pattern.sub(" ", text)
            count += len(_WORD.findall(text))
    return count


def code_lines(notebook) -> int:
    """The non-blank lines of the notebook's code cells (comments included: they are read too)."""
    return sum(1 for cell in cells(notebook) if cell["cell_type"] == "code"
               for line in _text(cell).splitlines() if line.strip())


def figures(notebook) -> int:
    """The stored figures: each code-cell output that holds an image (a widget stores one too)."""
    return sum(1 for cell in cells(notebook) if cell["cell_type"] == "code"
               for out in cell.get("outputs", []) if any(k.startswith("image/") for k in out.get("data", {})))


@dataclass(frozen=True)
class Task:
    """An exercise as its notebook states it: minutes, (optional) in its heading, and the name its
    check cell gives (`minitf.exercise("name", …)`), "" for a task checked otherwise (06's census)."""
    minutes: int
    optional: bool
    name: str


def tasks(notebook) -> list[Task]:
    """Every exercise statement ("**Difficulty … · about N min.**") in the notebook, in order."""
    every, found, heading = cells(notebook), [], ""
    for i, cell in enumerate(every):
        if cell["cell_type"] != "markdown":
            continue
        text = _text(cell)
        statement = _STATEMENT.search(text)
        headings = _HEADING.findall(text[:statement.start()] if statement else text)
        heading = headings[-1] if headings else heading
        if not statement:
            continue
        name = ""
        for later in every[i + 1:]:
            if later["cell_type"] == "markdown" and _STATEMENT.search(_text(later)):
                break
            check = _CHECK.search(_text(later)) if later["cell_type"] == "code" else None
            if check:
                name = check[1]
                break
        found.append(Task(int(statement[1]), "(optional)" in heading, name))
    return found


def run_seconds(path: Path = RUN_TIMES) -> dict[str, float]:
    """Notebook stem → median seconds top to bottom, as last measured (empty if never measured)."""
    return {name[:-6]: seconds for name, seconds in measured(path).items()} if path.is_file() else {}


def minutes(path: Path, seconds: dict[str, float] | None = None, notebook=None) -> dict[str, float]:
    """The parts of a notebook's time under the time model: its required exercises (stated minutes
    and the retry share), reading its prose, its code, looking at its figures, running it, and their
    total; its optional exercises' minutes (with the same share) apart, outside the total.
    `notebook`: the parsed JSON, where `path` names a notebook not on disk (another commit's)."""
    path = Path(path)
    seconds = run_seconds() if seconds is None else seconds
    nb = notebook if notebook is not None else path
    here = tasks(nb)
    parts = {"required": sum(t.minutes for t in here if not t.optional) * (1 + RETRY_SHARE),
             "reading": prose_words(nb) / PROSE_WORDS_PER_MINUTE,
             "code": code_lines(nb) / CODE_LINES_PER_MINUTE,
             "figures": figures(nb) * FIGURE_MINUTES,
             "running": seconds.get(path.stem, 0.0) / 60}
    parts["total"] = sum(parts.values())
    parts["optional"] = sum(t.minutes for t in here if t.optional) * (1 + RETRY_SHARE)
    return parts


def old_minutes(path: Path, seconds: dict[str, float] | None = None, notebook=None) -> dict[str, float]:
    """A notebook's time as the maps counted it until issue 42: the checked required exercises'
    stated minutes, the prose at 150 words a minute and the run time; optional exercises apart."""
    path = Path(path)
    seconds = run_seconds() if seconds is None else seconds
    nb = notebook if notebook is not None else path
    checked = [t for t in tasks(nb) if t.name]
    parts = {"required": float(sum(t.minutes for t in checked if not t.optional)),
             "reading": prose_words(nb) / WORDS_PER_MINUTE,
             "running": seconds.get(path.stem, 0.0) / 60}
    parts["total"] = sum(parts.values())
    parts["optional"] = float(sum(t.minutes for t in checked if t.optional))
    return parts


def rounded(minutes: float) -> int:
    """A time as the maps state it: to the nearest 5 minutes (halves up), at least 5."""
    return max(5, 5 * math.floor(minutes / 5 + 0.5))


def rounded_optional(minutes: float) -> int:
    """Optional minutes as the maps state them: 0 when there are none, else as `rounded`."""
    return rounded(minutes) if minutes > 0 else 0


def in_hours(minutes: int) -> str:
    """345 → '5 h 45 min', 120 → '2 h', 45 → '45 min'."""
    h, m = divmod(int(minutes), 60)
    return " ".join(([f"{h} h"] if h else []) + ([f"{m} min"] if m or not h else []))


def stated_map(folder: Path = NOTEBOOKS, seconds: dict[str, float] | None = None, model=None) -> dict:
    """What 00's map, the README and the site state: {"notebooks": {stem: (minutes, optional
    minutes)}, "tracks": {track: (minutes, optional minutes)}}; a track's numbers are the sums of its
    rows, so the table adds up. `model`: `minutes` (the default) or `old_minutes`."""
    seconds = run_seconds() if seconds is None else seconds
    model = model or minutes
    rows, tracks = {}, {"main path": (0, 0), "extras": (0, 0)}
    for path in notebooks(folder):
        m = model(path, seconds)
        optional = int(m["optional"]) if model is old_minutes else rounded_optional(m["optional"])
        rows[path.stem] = (rounded(m["total"]), optional)
        total, extra = tracks[track(path.name)]
        tracks[track(path.name)] = (total + rows[path.stem][0], extra + rows[path.stem][1])
    return {"notebooks": rows, "tracks": tracks}


def notebooks(folder: Path = NOTEBOOKS) -> list[Path]:
    return sorted(Path(folder).glob("[0-9][0-9]_*.ipynb"))


def summary(folder: Path = NOTEBOOKS) -> str:
    """Minutes per notebook and per track, counted and as the course map states them."""
    seconds, lines = run_seconds(), []
    stated = stated_map(folder, seconds)
    lines.append(f"{'notebook':26} {'track':9} {'words':>6} {'lines':>5} {'figs':>4}   "
                 f"required + reading +  code + figures + running = total   optional   stated")
    for path in notebooks(folder):
        m = minutes(path, seconds)
        lines.append(f"{path.stem[:26]:26} {track(path.name):9} {prose_words(path):6,} {code_lines(path):5} "
                     f"{figures(path):4}   {m['required']:8.1f} + {m['reading']:7.1f} + {m['code']:5.1f} + "
                     f"{m['figures']:7.1f} + {m['running']:7.1f} = {m['total']:5.1f}   {m['optional']:8.1f}   "
                     f"{stated['notebooks'][path.stem][0]:3} min")
    for name, (total, optional) in stated["tracks"].items():
        words = sum(prose_words(p) for p in notebooks(folder) if track(p.name) == name)
        lines.append(f"{name}: {total} min ({in_hours(total)}), +{optional} min of optional exercises; "
                     f"{words:,} words")
    return "\n".join(lines)


if __name__ == "__main__":  # python tools/course_map.py [--compare REVISION [AFTER]]
    if sys.argv[1:2] == ["--compare"]:
        import compare_minutes  # tools/compare_minutes.py, which imports this module
        sys.exit(compare_minutes.main(sys.argv[2:]))
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
