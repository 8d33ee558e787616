"""Predictions stay predictions: a stored answer below a "Predict, then run" prompt is collapsed (JupyterLab's
per-cell "outputs hidden"; nbval still compares it), and every "Try this" says what to expect."""
import json
import re

import pytest

from conftest import ROOT

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def prompts(path, word):
    cells = json.loads(path.read_text())["cells"]
    for i, cell in enumerate(cells):
        text = "".join(cell["source"])
        if cell["cell_type"] == "markdown" and f"**{word}" in text:
            yield i, text, cells


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_answer_to_each_prediction_is_stored_collapsed(path):
    for i, text, cells in prompts(path, "Predict"):
        # the answer: the code cells up to the next text (a widget may come first, its reading after it)
        following = []
        for cell in cells[i + 1:]:
            if cell["cell_type"] != "code":
                break
            following.append(cell)
        assert following and all(c.get("outputs") for c in following), \
            f"{path.name}: the prediction in markdown cell {i} has no stored answer below it"
        assert any(c["metadata"].get("jupyter", {}).get("outputs_hidden") is True for c in following), \
            f"{path.name}: the answer to the prediction in markdown cell {i} is shown, not collapsed"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_try_this_says_what_to_expect(path):
    for i, text, _ in prompts(path, "Try this"):
        paragraph = text[text.index("Try this"):].split("\n\n")[0]
        assert re.search(r"\b(expect|you should see|you will see|you'll see|should)\b", paragraph, re.I), \
            f"{path.name}, markdown cell {i}: the try-this does not say what to expect:\n{paragraph}"


# --- 03 and 04: no answer in sight before the learner acts (issue 30) ---------------------------
# The convention of tests/browser/predict_regions.py: prompt, run cells (outputs hidden), then a
# reveal `<details><summary>Answer</summary>` whose first **bold** phrase is the answer key. Once
# that module is on this branch, these two notebooks belong in its REVEALED list.
SPOILER_FREE = ["03_attention", "04_ffn_block"]


def _first_shown_line(cell):
    """The line JupyterLab shows of a hidden output: the first non-empty line of the first output."""
    if not cell.get("outputs"):
        return ""
    out = cell["outputs"][0]
    text = out.get("text") if out.get("output_type") == "stream" else out.get("data", {}).get("text/plain", "")
    text = "".join(text) if isinstance(text, list) else (text or "")
    return next((line for line in text.splitlines() if line.strip()), "")


def _normal(text):
    return " ".join(text.replace("\u2212", "-").split()).lower()


@pytest.mark.parametrize("stem", SPOILER_FREE)
def test_no_predict_answer_is_in_sight_in_03_and_04(stem):
    cells = json.loads((ROOT / "notebooks" / f"{stem}.ipynb").read_text())["cells"]
    found = 0
    for i, text, _ in prompts(ROOT / "notebooks" / f"{stem}.ipynb", "Predict"):
        found += 1
        j = i + 1
        run = []
        while cells[j]["cell_type"] == "code":
            run.append(cells[j])
            j += 1
        reveal = "".join(cells[j]["source"])
        m = re.match(r"\s*<details>\s*<summary>\s*Answer\b[^<]*</summary>(.*?)</details>(.*)", reveal, re.S)
        assert m, f"{stem}: the cell after prediction {i}'s run cells is not an Answer reveal:\n{reveal[:200]}"
        key = re.search(r"\*\*(.+?)\*\*", m.group(1), re.S)
        assert key, f"{stem}: prediction {i}'s reveal has no **answer key**"
        key = _normal(key.group(1).rstrip(".:"))
        in_sight = {"the prompt": text, "the text after the reveal": m.group(2)}
        for c in run:
            assert c["metadata"].get("jupyter", {}).get("outputs_hidden") is True, \
                f"{stem}: a run cell of prediction {i} shows its output"
            assert "assert" not in "".join(c["source"]), f"{stem}: a run cell of prediction {i} asserts the answer"
            in_sight[f"code of a run cell"] = "".join(c["source"])
            in_sight[f"the first shown line of a run cell's output"] = _first_shown_line(c)
        for where, shown in in_sight.items():
            assert key not in _normal(shown), f"{stem}: prediction {i}'s answer {key!r} is in sight in {where}"
        # every number of the key (0.58, 1e-11, 8 …) stays out of the first shown line
        for number in re.findall(r"\d+(?:\.\d+)?(?:e-\d+)?", key):
            for c in run:
                assert number not in _first_shown_line(c), \
                    f"{stem}: prediction {i}'s answer ({number}) is on a run cell's first shown line"
    assert found, f"{stem}: no Predict prompt found"
