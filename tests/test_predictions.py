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
