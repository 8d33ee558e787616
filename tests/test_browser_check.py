"""The real-browser check's own logic, without a browser: what it calls a failure, and how it says so."""
import json

import pytest
from support import script


check = script("tests/browser/check_notebooks.py")


def output(**kw):
    base = {"type": "display_data", "error": None, "stderr": None, "widget": False, "png": False,
            "repr": "", "view": False, "picture": False, "text": ""}
    return base | kw


def cells(*outputs):
    return [{"index": 3, "count": 1, "trusted": False, "outputs": list(outputs)}]


def test_a_stored_widget_must_show_its_picture():
    shown = output(widget=True, png=True, picture=True, repr="RopeExplorer(m = 5)")
    assert check.output_problems(cells(shown), "stored") == []
    as_text = output(widget=True, repr="VBox(children=(…", text="VBox(children=(HBox(children=(IntSlider(")
    [problem] = check.output_problems(cells(as_text), "stored")
    assert problem.startswith("cell [3] output 0 (stored): a widget shown as its repr text")
    assert "ShowsPicture" in problem  # says how to fix it


def test_a_run_widget_must_be_live_and_fallback_texts_fail():
    assert check.output_problems(cells(output(widget=True, view=True)), "after run-all") == []
    [problem] = check.output_problems(cells(output(widget=True, picture=True)), "after run-all")
    assert "not rendered as a live widget" in problem
    [problem] = check.output_problems(
        cells(output(widget=True, text="Error displaying widget: model not found")), "after run-all")
    assert "instead of the widget" in problem
    [problem] = check.output_problems(cells(output(type="error", error="ValueError: no")), "stored")
    assert problem == "cell [3] output 0 (stored): error output ValueError: no"


def test_widget_outputs_are_named_by_their_repr():
    found = check.widget_outputs(cells(output(), output(widget=True, repr="Explorer(text='Hi')")))
    assert found == [(3, 1, "Explorer")] and "Explorer" in check.INTERACTIONS


@pytest.mark.parametrize("value, shown", [("72", "72"), ("0.25871", "0.259"), ("-0.0001", "0.000"),
                                          ("-Infinity", "−∞")])
def test_numbers_read_as_the_explorer_writes_them(value, shown):
    assert check.shown_like_explorer(value) == shown


def test_the_stored_file_needs_a_picture_and_the_saved_widget_state(tmp_path):
    view = {check.WIDGET_MIME: {"model_id": "abc", "version_major": 2, "version_minor": 0},
            "text/plain": "RopeExplorer()"}
    nb = {"cells": [{"cell_type": "code", "outputs": [{"output_type": "display_data", "data": view}]}],
          "metadata": {}}
    path = tmp_path / "x.ipynb"
    path.write_text(json.dumps(nb))
    problems = check.stored_widget_problems(path)
    assert len(problems) == 2
    assert "no image/png" in problems[0] and "not in the notebook's saved widget state" in problems[1]
    view["image/png"] = "iVBORw0KGgo="
    nb["metadata"]["widgets"] = {check.WIDGET_STATE: {"state": {"abc": {}}}}
    path.write_text(json.dumps(nb))
    assert check.stored_widget_problems(path) == []


def test_a_training_view_is_trained_again_and_must_redraw_three_times():
    assert check.INTERACTIONS["TrainingView"] is check.use_training_view
    assert check.MIN_REDRAWS >= 3 and "MutationObserver" in check.JS_WATCH_PICTURES
    found = check.widget_outputs(cells(output(widget=True, repr="TrainingView(shift, 2,920 parameters, …)")))
    assert found == [(3, 0, "TrainingView")]
