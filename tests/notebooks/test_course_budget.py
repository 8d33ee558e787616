"""The main path's budget (issue 30) and the course map's numbers.

The main path (00–09) has at most 20,000 words of prose, no notebook over 3,000, and a stated time
of at most 6 hours: its required exercises, its reading and its run time, counted by
`tools/course_map.py`; an optional exercise's minutes are stated beside it, not in it. The
numbers notebook 00's map, the README's map and the site's navigation state are the count's
(`course_map.stated_map`; `python tools/map_minutes.py` writes them).
"""
import importlib.util
import json
import re
import sys

import pytest

from support import ROOT, joined, numbers
from minitf.course.exercises import EXERCISES
sys.path.insert(0, str(ROOT / "tools"))
import course_map  # noqa: E402  (tools/course_map.py: the tracks and a learner's minutes)

MAIN = [p for p in course_map.notebooks() if course_map.track(p.name) == "main path"]


def tool(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


map_minutes, site = tool("map_minutes"), tool("site")


# --- the budget ------------------------------------------------------------------------------------

def test_the_main_path_has_at_most_20000_words_of_prose():
    words = {p.stem: course_map.prose_words(p) for p in MAIN}
    assert sum(words.values()) <= course_map.MAIN_PATH_WORD_BUDGET, words


@pytest.mark.parametrize("path", MAIN, ids=lambda p: p.stem)
def test_no_main_path_notebook_has_more_than_3000_words_of_prose(path):
    assert course_map.prose_words(path) <= course_map.NOTEBOOK_WORD_BUDGET


def test_the_main_paths_stated_time_is_at_most_six_hours():
    minutes, optional = course_map.stated_map()["tracks"]["main path"]
    assert minutes <= 360, course_map.summary()


# --- how the minutes are counted -------------------------------------------------------------------

def test_a_notebooks_time_counts_its_required_exercises_and_states_the_optional_ones_apart(tmp_path):
    """A made-up 01 of 300 words that runs 90 s: 01's required exercise (embed, 5 min) + 2 min of
    reading + 1.5 min of running; count_parameters (optional, 10 min) outside the total."""
    (tmp_path / "01_x.ipynb").write_text(json.dumps({"cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["word " * 300]},
        {"cell_type": "markdown", "metadata": {}, "source": ["<details><summary>Hint</summary>\n\n" + "hidden " * 500 +
                                                             "\n\n</details>"]}]}))
    required = sum(e.minutes for e in EXERCISES.values() if e.notebook == "01" and not e.optional)
    optional = sum(e.minutes for e in EXERCISES.values() if e.notebook == "01" and e.optional)
    assert (required, optional) == (EXERCISES["embed"].minutes, EXERCISES["count_parameters"].minutes)
    m = course_map.minutes(tmp_path / "01_x.ipynb", {"01_x": 90.0})
    assert m == {"required": required, "reading": 2.0, "running": 1.5, "total": required + 3.5, "optional": optional}
    stated = course_map.stated_map(tmp_path, {"01_x": 90.0})
    assert stated["notebooks"] == {"01_x": (course_map.rounded(required + 3.5), optional)}
    assert stated["tracks"] == {"main path": (course_map.rounded(required + 3.5), optional), "extras": (0, 0)}


def test_a_stated_time_is_the_nearest_5_minutes_and_reads_in_hours():
    assert [course_map.rounded(m) for m in (0.3, 7.4, 7.5, 12.6, 71.2)] == [5, 5, 10, 15, 70]
    assert [course_map.in_hours(m) for m in (45, 60, 120, 345, 370)] == \
        ["45 min", "1 h", "2 h", "5 h 45 min", "6 h 10 min"]


# --- the maps state the count ----------------------------------------------------------------------

def counted():
    return map_minutes.counted()


@pytest.mark.parametrize("where", ["README.md", "notebooks/00_setup_check.ipynb"])
def test_the_maps_minutes_are_the_counts(where):
    stated = map_minutes.stated_in(map_minutes.map_text(ROOT / where))
    want = counted()
    assert stated["notebooks"] == want["notebooks"], where
    assert stated["tracks"] == want["tracks"], where
    for name, (minutes, optional) in want["tracks"].items():  # each track's time is the sum of its rows
        rows = [v for n, v in stated["notebooks"].items() if course_map.track(n) == name]
        assert (minutes, optional) == (sum(m for m, _ in rows), sum(o for _, o in rows))


@pytest.mark.parametrize("where", ["README.md", "notebooks/00_setup_check.ipynb"])
def test_the_maps_mark_every_optional_exercise_and_no_other(where):
    cells = map_minutes.stated_in(map_minutes.map_text(ROOT / where))["you write"]
    for name, ex in EXERCISES.items():
        if course_map.track(ex.notebook) == "main path":
            assert f"`{name}`" in cells[ex.notebook], (where, name)
            assert (f"`{name}` (optional)" in cells[ex.notebook]) == ex.optional, (where, name)


@pytest.mark.parametrize("where", ["README.md", "notebooks/00_setup_check.ipynb"])
def test_each_tracks_time_reads_the_same_in_hours_and_minutes(where):
    text = map_minutes.map_text(ROOT / where)
    # "The main path: about 6 h** (360 minutes of a learner's time, …)"
    found = [line.split("about ", 1)[1].split(" (", 1) for line in text.splitlines()
             if re.search(r"The (main path|extras): about", line)]
    assert len(found) == 2, where
    for words, minutes in found:
        assert words.strip("* ") == course_map.in_hours(int(numbers(minutes)[0])), (where, words, minutes)


def test_the_sites_navigation_states_the_counts():
    """The site reads the README's map: each notebook's and each track's time as the count gives it."""
    readme = (ROOT / "README.md").read_text()
    want = counted()
    assert {stem[:2]: v for stem, v in site.course_minutes(readme).items()} == want["notebooks"]
    tracks = site.track_minutes(readme)
    assert {t: (m, o) for t, (_, m, o) in tracks.items()} == want["tracks"]
    main = want["tracks"]["main path"]
    assert site.nav_time(tracks["main path"]) == \
        f"about {course_map.in_hours(main[0])}" + (f", +{main[1]} min optional" if main[1] else "")
    assert site.nav_time(site.course_minutes(readme)["01_embeddings"]).startswith("about ")


def test_00s_map_says_how_the_minutes_are_counted_and_what_optional_means():
    text = " ".join(joined("00_setup_check", "markdown").split())
    # "the exercises' stated times, plus the prose read at 150 words a minute, plus the run time"
    assert numbers(text, after="prose read at")[0] == course_map.WORDS_PER_MINUTE
    assert "the exercises' stated times" in text and "plus the run time" in text
    # "An exercise marked *(optional)* is counted apart: skip it and nothing later breaks"
    assert "*(optional)* is counted apart" in text and "nothing later breaks" in text


# --- the tool that writes them ---------------------------------------------------------------------

def test_the_tool_rewrites_a_wrong_number_and_a_missing_mark_and_nothing_else():
    readme = (ROOT / "README.md").read_text()
    stated = course_map.stated_map()
    assert map_minutes.rewrite(readme, stated) == readme  # the README states the count already
    wrong = readme.replace("`adamw` (optional)", "`adamw`")
    wrong = re.sub(r"(\| `03_attention` \|.*\| )\d+ min \|", r"\g<1>999 min |", wrong)
    wrong = re.sub(r"(### The main path: about )[^(]*\(\d+", r"\g<1>9 h (540", wrong)
    assert wrong != readme and map_minutes.rewrite(wrong, stated) == readme
    assert map_minutes.differences(ROOT / "README.md") == []
