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


# Notebooks whose predictions are held to the stricter rule below: nothing on screen gives the answer
# before the learner opens it. (A notebook joins the list once its predict cells are rebuilt so.)
ANSWER_OUT_OF_SIGHT = ["06_attention_heatmaps", "07_origami_expansion"]


def answer_region(cells, i):
    """The code cells that answer the prompt in markdown cell i, and the markdown cell after them."""
    following = []
    for cell in cells[i + 1:]:
        if cell["cell_type"] != "code":
            return following, "".join(cell["source"])
        following.append(cell)
    return following, ""


@pytest.mark.parametrize("name", ANSWER_OUT_OF_SIGHT)
def test_no_answer_to_a_prediction_is_on_screen_before_the_learner_opens_it(name):
    """JupyterLab shows a collapsed output's first line, so an answer cell stores no text at all
    (a figure, collapsed, is the answer); it asserts nothing (an assert states the result); and the
    text after it opens with a <details> reveal, so the explanation waits for a click."""
    path = ROOT / "notebooks" / f"{name}.ipynb"
    found = list(prompts(path, "Predict"))
    assert found, f"{path.name}: no prediction prompt found"
    for i, text, cells in found:
        answers, after = answer_region(cells, i)
        for cell in answers:
            shown = [o for o in cell.get("outputs", []) if o["output_type"] in ("stream", "execute_result", "error")]
            first = "".join(shown[0].get("text", "") or shown[0].get("data", {}).get("text/plain", "")
                            ).split("\n")[0] if shown else ""
            assert not shown, (f"{path.name}: the answer to the prediction in markdown cell {i} prints text, "
                               f"and its first line shows even collapsed: {first!r}")
            assert not re.search(r"^\s*assert\b", "".join(cell["source"]), re.M), \
                f"{path.name}: an assert in the answer to the prediction in markdown cell {i} states the result"
        assert after.lstrip().startswith("<details>"), \
            (f"{path.name}: the text after the prediction in markdown cell {i} states the answer outside a "
             f"<details> reveal: {after.strip()[:80]!r}")
