"""Where a "Predict, then run" prompt's answer may and may not be seen, read from a stored notebook.

A predict region is three things, in this order:

1. the prompt: a Markdown cell with **Predict, then run.** (or **Predict**…);
2. the run cells: the code cells right after it. The one right after the prompt is stored without
   output, tagged nbval-ignore-output: the learner predicts, runs it and sees what it prints, then
   opens the reveal (tests/notebooks/test_predictions_run.py holds each answer key against a real
   run). A run cell that keeps a stored output (a figure, or a printout after a widget) keeps it
   hidden: JupyterLab then shows only the first line of the first output, and "•••";
3. the reveal: the next Markdown cell, which starts with a `<details>` block whose summary starts
   with "Answer". Inside it, the first **bold** phrase is the *answer key*: the words or the number
   that answer the question ("(1, 11, 256)", "the same score").

Before the learner acts, the answer key must not be in sight: not in the prompt, not in a run cell's
code, not in a stored output (on the first line JupyterLab shows of a hidden one), not in the reveal's
summary nor in its text outside `<details>`. tests/notebooks/test_predictions.py checks this in the files; the browser check
(check_notebooks.py) checks what JupyterLab actually shows.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

PROMPT = re.compile(r"\*\*Predict\b")
REVEAL = re.compile(r"\A\s*<details>\s*<summary>\s*Answer\b[^<]*</summary>(?P<body>.*?)</details>", re.S)
BOLD = re.compile(r"\*\*(.+?)\*\*", re.S)


@dataclass
class PredictRegion:
    prompt: int                      # cell index of the prompt
    run: list[int]                   # cell indices of the run cells
    reveal: int | None               # cell index of the reveal, None if there is none
    key: str | None                  # the answer key, None if the reveal has none
    problems: list[str] = field(default_factory=list)  # what breaks the convention, in words

    @property
    def cells(self) -> list[int]:
        return [self.prompt, *self.run] + ([self.reveal] if self.reveal is not None else [])


def source(cell: dict) -> str:
    return "".join(cell["source"])


def normal(text: str) -> str:
    """Text compared as a reader sees it: Unicode minus as '-', runs of spaces as one, no case."""
    return " ".join(text.replace("\u2212", "-").replace("\u00a0", " ").split()).lower()


def first_shown_line(cell: dict) -> str:
    """The line JupyterLab 4.6 shows of a hidden output: the first non-empty line of the first
    output's text (a stream's text, or the text/plain of a display)."""
    if not cell.get("outputs"):
        return ""
    out = cell["outputs"][0]
    text = out.get("text") if out.get("output_type") == "stream" else out.get("data", {}).get("text/plain", "")
    text = "".join(text) if isinstance(text, list) else (text or "")
    return next((line for line in text.splitlines() if line.strip()), "")


def output_text(cell: dict) -> str:
    """Every output's text, as shown when the outputs are not hidden."""
    parts = []
    for out in cell.get("outputs", []):
        text = out.get("text") if out.get("output_type") == "stream" else out.get("data", {}).get("text/plain", "")
        parts.append("".join(text) if isinstance(text, list) else (text or ""))
    return "\n".join(parts)


def regions(cells: list[dict]) -> list[PredictRegion]:
    found = []
    for i, cell in enumerate(cells):
        if cell["cell_type"] != "markdown" or not PROMPT.search(source(cell)):
            continue
        run, j = [], i + 1
        while j < len(cells) and cells[j]["cell_type"] == "code":
            run.append(j)
            j += 1
        region = PredictRegion(i, run, None, None)
        if not run:
            region.problems.append(f"markdown cell {i}: a prediction with no code cell to run after it")
        m = REVEAL.match(source(cells[j])) if j < len(cells) and cells[j]["cell_type"] == "markdown" else None
        if m is None:
            region.problems.append(f"markdown cell {i}: the cell after the run cell(s) is not a reveal "
                                   "(a Markdown cell starting <details><summary>Answer…</summary>)")
        else:
            region.reveal = j
            bold = BOLD.search(m["body"])
            if bold is None or len(bold[1].strip()) < 4:
                region.problems.append(f"markdown cell {j}: the reveal has no answer key (its first "
                                       "**bold** phrase, at least 4 characters)")
            else:
                region.key = bold[1].strip()
        found.append(region)
    return found


def visible_answers(cells: list[dict], region: PredictRegion) -> list[str]:
    """Where the region's answer key is in sight in the stored notebook, in words."""
    if region.key is None:
        return []
    key, seen = normal(region.key), []
    if key in normal(source(cells[region.prompt])):
        seen.append(f"the prompt (cell {region.prompt}) states it")
    for j in region.run:
        if key in normal(source(cells[j])):
            seen.append(f"the code of cell {j} shows it")
        hidden = cells[j]["metadata"].get("jupyter", {}).get("outputs_hidden") is True
        shown = first_shown_line(cells[j]) if hidden else output_text(cells[j])
        if key in normal(shown):
            seen.append(f"the output of cell {j} shows it" + (" on its first line, which JupyterLab shows "
                                                               "while the output is hidden" if hidden else ""))
    if region.reveal is not None:
        text = source(cells[region.reveal])
        summary = re.search(r"<summary>(.*?)</summary>", text, re.S)
        outside = REVEAL.sub("", text, count=1)
        if summary and key in normal(summary[1]):
            seen.append(f"the reveal's summary (cell {region.reveal}) states it")
        if key in normal(outside):
            seen.append(f"cell {region.reveal} states it outside the <details> reveal")
    return seen


def notebook_regions(path: Path) -> tuple[list[dict], list[PredictRegion]]:
    cells = json.loads(Path(path).read_text(encoding="utf-8"))["cells"]
    return cells, regions(cells)
