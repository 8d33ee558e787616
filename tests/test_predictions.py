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


# ---- the answer stays out of sight until the learner acts: for each prompt, the answer's text is
# neither in the prompt, nor in the code that runs it (a hard-coded print or an assert), nor in the
# first line of a collapsed output (JupyterLab shows it), nor in the markdown right after the run
# outside a <details> reveal; and that markdown opens with the reveal.
ANSWERS = {  # notebook: [(words of the prompt, texts that give its answer away)]
    "08_assemble_your_model": [("Will the two models' logits be *exactly* equal",
                                ["✓", "computes minitf's logits", "within 1e-09", "Equal up to rounding", "not exactly"]),
                               ("Which will it write", ["follows the number", "The byte for input k + 1"])],
    "09_language_model": [("will 160 greedy bytes", ["loops", "the straight of the straight", "Worse"]),
                          ("Will the cached and the uncached", ["✓", "All the same", "The same, both times", ": True"])],
}


def outside_details(text: str) -> str:
    return re.sub(r"<details>.*?</details>", "", text, flags=re.S)


def first_output_line(cell) -> str:
    for output in cell.get("outputs", []):
        text = "".join(output.get("text", "")) or "".join(output.get("data", {}).get("text/plain", ""))
        if text.strip():
            return text.strip().splitlines()[0]
    return ""


@pytest.mark.parametrize("stem", sorted(ANSWERS))
def test_no_answer_is_visible_before_the_learner_acts(stem):
    path = ROOT / "notebooks" / f"{stem}.ipynb"
    found = {words: False for words, _ in ANSWERS[stem]}
    for i, text, cells in prompts(path, "Predict"):
        matching = [(words, answers) for words, answers in ANSWERS[stem] if words in text]
        assert matching, f"{path.name}, markdown cell {i}: a prediction this test does not know; add its answers"
        words, answers = matching[0]
        found[words] = True
        j = i + 1
        run = []
        while j < len(cells) and cells[j]["cell_type"] == "code":
            run.append(cells[j])
            j += 1
        after = "".join(cells[j]["source"]) if j < len(cells) else ""
        assert after.lstrip().startswith("<details>"), \
            f"{path.name}: the markdown after the prediction in cell {i} does not open with a <details> reveal"
        visible = [outside_details(text), outside_details(after)]
        visible += ["".join(c["source"]) for c in run] + [first_output_line(c) for c in run]
        for answer in answers:
            shown = [v for v in visible if answer in v]
            assert not shown, f"{path.name}: the answer to cell {i}'s prediction ({answer!r}) is visible: {shown[0][:200]!r}"
    assert all(found.values()), f"{path.name}: predictions no longer there: {[w for w, f in found.items() if not f]}"
