"""Predictions stay predictions: below a "Predict, then run" prompt the run cell is stored without
output (the learner predicts, runs it, sees what it prints, then opens the answer), and every
"Try this" says what to expect. The answers are held against a real run in test_predictions_run.py."""
import re

import pytest

from browser.predict_regions import first_shown_line, notebook_regions, visible_answers
from support import course_map, ROOT, cells, indexed


NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def prompts(path, word):
    found = cells(path)
    for i, text in indexed(path, "markdown"):
        if f"**{word}" in text:
            yield i, text, found


def hidden(cell):
    return cell["metadata"].get("jupyter", {}).get("outputs_hidden") is True


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_each_prediction_is_run_by_the_learner_then_revealed(path):
    """Prompt, run cell, closed reveal with an answer key, and the answer nowhere in sight before the
    learner acts (tests/browser/predict_regions.py). The cell right after the prompt stores no text
    (JupyterLab would show its first line) and no run cell asserts (an assert states the result); a
    run cell that stores nothing is tagged nbval-ignore-output (nbval still runs it, and an error
    still fails) and is not marked hidden, so the output the learner's run prints is in view; a run
    cell that keeps a stored output (a figure, or a printout after a widget) keeps it collapsed."""
    cells, found = notebook_regions(path)
    if path.stem[:2] in course_map.MAIN_PATH:
        assert found, f"{path.name}: no Predict prompt on the main path"
    for r in found:
        where = f"{path.name}: the prediction in markdown cell {r.prompt}"
        assert r.run, f"{where} has no code cell to run after it"
        first = cells[r.run[0]]
        text = [o for o in first.get("outputs", []) if o["output_type"] in ("stream", "execute_result", "error")]
        assert not text, f"{where}: its run cell stores text, shown even collapsed: {first_shown_line(first)!r}"
        for j in r.run:
            cell, tags = cells[j], cells[j]["metadata"].get("tags", [])
            assert not re.search(r"^\s*assert\b", "".join(cell["source"]), re.M), f"{where}: cell {j} asserts"
            if not cell.get("outputs"):
                assert "nbval-ignore-output" in tags, f"{where}: cell {j} stores no output, so tag it nbval-ignore-output"
                assert not hidden(cell) and "collapsed" not in cell["metadata"], \
                    f"{where}: cell {j} stores no output but is marked hidden: the learner's run would be collapsed"
            else:
                assert hidden(cell), f"{where}: cell {j}'s stored output is in view"
        assert r.reveal is not None, f"{where}: the cell after its run is not a closed <details> reveal"
        assert re.match(r"\s*<details>", "".join(cells[r.reveal]["source"])), f"{where}: its reveal is open"
        assert r.problems == [] and visible_answers(cells, r) == [], where


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_try_this_says_what_to_expect(path):
    for i, text, _ in prompts(path, "Try this"):
        paragraph = text[text.index("Try this"):].split("\n\n")[0]
        assert re.search(r"\b(expect|should|you('ll| will) see)\b", paragraph, re.I), \
            f"{path.name}, markdown cell {i}: the try-this does not say what to expect:\n{paragraph}"


def test_an_answer_in_sight_is_caught():
    """The rule itself, on made-up cells: each way of giving the answer away is found."""
    from browser.predict_regions import regions

    def md(text):
        return {"cell_type": "markdown", "metadata": {}, "source": [text]}

    def code(text, out, hidden=True):
        meta = {"jupyter": {"outputs_hidden": True}} if hidden else {}
        return {"cell_type": "code", "metadata": meta, "source": [text],
                "outputs": [{"output_type": "stream", "name": "stdout", "text": [out]}]}

    reveal = md("<details><summary>Answer</summary>\n\n**(1, 11, 256)**</details>")
    good = [md("**Predict, then run.** Shape?"), code("print(x.shape)", "shape:\n(1, 11, 256)\n"), reveal]
    (r,) = regions(good)
    assert r.key == "(1, 11, 256)" and visible_answers(good, r) == []
    first_line = [good[0], code("print(x.shape)", "(1, 11, 256)\n"), reveal]
    assert "first line" in visible_answers(first_line, regions(first_line)[0])[0]
    shown = [good[0], code("print(x.shape)", "shape:\n(1, 11, 256)\n", hidden=False), reveal]
    assert "cell 1" in visible_answers(shown, regions(shown)[0])[0]
    told = [good[0], good[1], md(reveal["source"][0] + "\nSo: (1, 11, 256).")]
    assert "outside the <details>" in visible_answers(told, regions(told)[0])[0]
    no_reveal = [good[0], good[1], md("Shape: (1, 11, 256).")]
    assert "is not a reveal" in regions(no_reveal)[0].problems[0]


# ---- the answer stays out of sight until the learner acts (05 and 11 so far): for each prompt, the
# answer's text is neither in the prompt, nor in the code that runs it (a hard-coded print or an
# assert), nor in the first line of a collapsed output (JupyterLab shows it), nor in the markdown
# right after the run outside a <details> reveal; and that markdown opens with the reveal.
ANSWERS = {  # notebook: [(words of the prompt, texts that give its answer away)]
    "05_training_base64_pairs": [("held-out loss land", ["4.35", "b''", "unigram baseline"]),
                                 ("writes output byte 7", ["[12]", "12 back"]),
                                 ("Which climbs first", ["Looking comes first", "first, then"])],
    "11_how_small": [("the distance the same", ["from\npair to pair", "No: the distance"]),
                     ("your numbering need", ["100 steps", "only about 100"])],
    "08_assemble_your_model": [("*exactly* equal",
                                ["✓", "computes minitf's logits", "within 1e-09", "Equal up to rounding", "not exactly"]),
                               ("Which will it write", ["follows the number", "The byte for input"])],
    "09_language_model": [("160 greedy bytes", ["loops", "straight of the straight", "Worse"]),
                          ("and the uncached", ["✓", "All the same", "The same, both times", ": True"])],
}


def outside_details(text: str) -> str:
    return re.sub(r"<details>.*?</details>", "", text, flags=re.S)


@pytest.mark.parametrize("stem", sorted(ANSWERS))
def test_no_answer_is_visible_before_the_learner_acts(stem):
    path = ROOT / "notebooks" / f"{stem}.ipynb"
    found = {words: False for words, _ in ANSWERS[stem]}
    cells, regions_found = notebook_regions(path)
    for region in regions_found:
        i, text = region.prompt, "".join(cells[region.prompt]["source"])
        matching = [(words, answers) for words, answers in ANSWERS[stem] if words in text]
        assert matching, f"{path.name}, markdown cell {i}: a prediction this test does not know; add its answers"
        words, answers = matching[0]
        found[words] = True
        assert region.reveal is not None, \
            f"{path.name}: the markdown after the prediction in cell {i} does not open with a <details> reveal"
        run = [cells[j] for j in region.run]
        visible = [outside_details(text), outside_details("".join(cells[region.reveal]["source"]))]
        visible += ["".join(c["source"]) for c in run] + [first_shown_line(c) for c in run]
        for answer in answers:
            shown = [v for v in visible if answer in v]
            assert not shown, f"{path.name}: the answer to cell {i}'s prediction ({answer!r}) is visible: {shown[0][:200]!r}"
    assert all(found.values()), f"{path.name}: predictions no longer there: {[w for w, f in found.items() if not f]}"
