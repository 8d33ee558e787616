"""The main path's budget (issues 30 and 42) and the course map's numbers.

The main path (00–09) has at most 13,000 words of prose, no notebook over 2,000 (issue 42), and a stated time
of at most 6 hours under the time model of `tools/course_map.py` (prose, code, figures, exercises
with a retry share, run time; calibrated to the review of 2b28c5b); an optional exercise's minutes
are stated beside it, not in it. The numbers notebook 00's map, the README's map and the site's
navigation state are the count's (`course_map.stated_map`; `python tools/map_minutes.py` writes
them). `tools/compare_minutes.py` prints the course before and after, under the old model and this one.
"""
import importlib.util
import json
import re
import subprocess

import pytest

from support import course_map, ROOT, joined, numbers
from minitf.course.exercises import EXERCISES

MAIN = [p for p in course_map.notebooks() if course_map.track(p.name) == "main path"]


def tool(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


map_minutes, site = tool("map_minutes"), tool("site")
import compare_minutes  # noqa: E402  (tools/compare_minutes.py: the course before and after)
REVIEWED = course_map.CALIBRATION["commit"]  # the commit the review timed, the calibration's


def at_reviewed_commit():
    """Skip where the clone lacks the reviewed commit (a shallow clone, an unpacked sdist)."""
    known = subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", f"{REVIEWED}^{{commit}}"],
                           capture_output=True).returncode == 0
    if not known:
        pytest.skip(f"commit {REVIEWED} is not in this clone")
    return compare_minutes.from_revision(REVIEWED)


# --- the budget ------------------------------------------------------------------------------------

def test_the_main_path_has_at_most_13000_words_of_prose():
    words = {p.stem: course_map.prose_words(p) for p in MAIN}
    assert sum(words.values()) <= course_map.MAIN_PATH_WORD_BUDGET, words


@pytest.mark.parametrize("path", MAIN, ids=lambda p: p.stem)
def test_no_main_path_notebook_has_more_than_2000_words_of_prose(path):
    assert course_map.prose_words(path) <= course_map.NOTEBOOK_WORD_BUDGET


def test_the_main_paths_stated_time_is_at_most_six_hours():
    minutes, optional = course_map.stated_map()["tracks"]["main path"]
    assert minutes <= course_map.MAIN_PATH_MINUTES_BUDGET == 360, course_map.summary()


# --- how the minutes are counted -------------------------------------------------------------------

def made_up_notebook(words=276, lines=25, images=2, required=10, optional=20):
    """`words` of prose, a hidden reveal, one code cell with stored images, and two exercise statements
    (required, optional; optional=0: none): what the time model counts, in numbers that divide evenly.
    The statements' words are part of the prose: 6 for the required one, 7 for the optional one."""
    image = {"output_type": "display_data", "metadata": {}, "data": {"image/png": "", "text/plain": ""}}
    return {"cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["word " * (words - 6 - (7 if optional else 0))]},
        {"cell_type": "markdown", "metadata": {}, "source": ["<details><summary>Hint</summary>\n\n" + "hidden " * 500 +
                                                             "\n\n</details>"]},
        {"cell_type": "code", "metadata": {}, "execution_count": 1, "outputs": [image] * images,
         "source": ["x = 1\n\n"] * lines},
        {"cell_type": "markdown", "metadata": {}, "source": [f"### Exercise · one\n**Difficulty ●○○○○ · about {required} min.**"]},
        {"cell_type": "code", "metadata": {}, "execution_count": 2, "outputs": [], "source": ['minitf.exercise("one", my_one)']}]
        + ([{"cell_type": "markdown", "metadata": {}, "source": [f"### Exercise · two (optional)\n**Difficulty ●○○○○ · about {optional} min.**"]},
            {"cell_type": "code", "metadata": {}, "execution_count": 3, "outputs": [], "source": ['minitf.exercise("two", my_two)']}]
           if optional else [])}


def test_a_notebooks_time_counts_prose_code_figures_exercises_and_run_time(tmp_path):
    """A made-up 01: 276 words of prose (13 of them in the two statements), 25 lines of code, 2 figures,
    a required exercise of 10 min and an optional one of 20 (their check cells 2 more lines), run in 90 s."""
    (tmp_path / "01_x.ipynb").write_text(json.dumps(made_up_notebook()))
    share = 1 + course_map.RETRY_SHARE
    m = course_map.minutes(tmp_path / "01_x.ipynb", {"01_x": 90.0})
    want = {"required": 10 * share, "reading": 276 / course_map.PROSE_WORDS_PER_MINUTE,
            "code": (25 + 2) / course_map.CODE_LINES_PER_MINUTE, "figures": 2 * course_map.FIGURE_MINUTES,
            "running": 1.5}
    assert m == pytest.approx(dict(want, total=sum(want.values()), optional=20 * share))
    assert course_map.tasks(tmp_path / "01_x.ipynb") == [course_map.Task(10, False, "one"), course_map.Task(20, True, "two")]
    stated = course_map.stated_map(tmp_path, {"01_x": 90.0})
    row = (course_map.rounded(m["total"]), course_map.rounded_optional(m["optional"]))
    assert stated == {"notebooks": {"01_x": row}, "tracks": {"main path": row, "extras": (0, 0)}}
    # the old model: the checked required exercise, prose at 150 words a minute, the run time
    old = course_map.old_minutes(tmp_path / "01_x.ipynb", {"01_x": 90.0})
    assert old == pytest.approx({"required": 10, "reading": 276 / 150, "running": 1.5,
                                 "total": 10 + 276 / 150 + 1.5, "optional": 20})


def test_the_exercises_the_notebooks_state_are_the_declared_ones():
    """Every declared exercise is stated in its notebook with its minutes and its (optional); the
    one statement without a minitf.exercise check is 06's census of the reverse model's heads."""
    found = {}
    for path in course_map.notebooks():
        for task in course_map.tasks(path):
            found.setdefault(task.name, []).append((path.name[:2], task.minutes, task.optional))
    unchecked = found.pop("", [])
    assert found == {name: [(ex.notebook, ex.minutes, ex.optional)] for name, ex in EXERCISES.items()}
    assert [number for number, _, _ in unchecked] == ["06"]


def test_a_file_that_is_not_a_notebook_is_named(tmp_path):
    (tmp_path / "01_broken.ipynb").write_text('{"cells": [')
    with pytest.raises(ValueError, match="01_broken.ipynb: not a notebook's JSON"):
        course_map.prose_words(tmp_path / "01_broken.ipynb")


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
    # "… prose at 138 words a minute, code at 8 lines a minute, a minute a figure, and each exercise's
    # stated time plus 6 % for a first attempt that fails, calibrated to …"
    assert numbers(text, after="prose at")[0] == course_map.PROSE_WORDS_PER_MINUTE
    assert numbers(text, after="code at")[0] == round(course_map.CODE_LINES_PER_MINUTE)
    assert numbers(text, after="stated time plus")[0] == round(100 * course_map.RETRY_SHARE)
    assert "calibrated" in text
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


# --- the calibration and the before/after table ------------------------------------------------------

def test_the_retry_share_is_the_fit_to_the_reviewers_estimate_and_the_whole_course_checks_it():
    """RETRY_SHARE makes 2b28c5b's main path with every exercise take the reviewer's 11 h (to its two
    digits); the model then gives the whole course within 10 % of the reviewer's 15 h (the check)."""
    fit = compare_minutes.fit(at_reviewed_commit())
    assert round(fit["retry share"], 2) == course_map.RETRY_SHARE
    assert abs(fit["residual"]) <= 0.10 * course_map.CALIBRATION["whole course, every exercise"]


def test_the_old_model_at_the_reviewed_commit_states_what_its_map_stated():
    """The table's old-model column recounts 2b28c5b as its README's map stated it (345 min, +105)."""
    side = at_reviewed_commit()
    readme = subprocess.run(["git", "-C", str(ROOT), "show", f"{REVIEWED}:README.md"],
                            capture_output=True, text=True, check=True).stdout
    stated = map_minutes.stated_in(readme)
    rows = compare_minutes.rows(side)
    assert {stem[:2]: r["old"] for stem, r in rows.items()} == stated["notebooks"]
    assert {t: compare_minutes.totals(rows, t)["old"] for t in ("main path", "extras")} == stated["tracks"]


def test_the_before_after_table_counts_each_side(tmp_path):
    """Two throw-away courses: 01 loses prose and its optional exercise, 02 is new; each cell of the
    table is that side's count, and the track's line their sums."""
    before, after = tmp_path / "before", tmp_path / "after"
    before.mkdir(), after.mkdir()
    (before / "01_x.ipynb").write_text(json.dumps(made_up_notebook(words=414)))
    (after / "01_x.ipynb").write_text(json.dumps(made_up_notebook(words=276, optional=0)))
    (after / "02_y.ipynb").write_text(json.dumps(made_up_notebook(images=0)))
    a = compare_minutes.from_folder(before, {"01_x": 60.0}, "before")
    b = compare_minutes.from_folder(after, {}, "after")
    rows = compare_minutes.rows(a)["01_x"]
    assert (rows["words"], rows["cells"], rows["required"], rows["optional"]) == (414, 7, 1, 1)
    assert rows["old"] == (course_map.rounded(10 + 414 / 150 + 1), 20)
    assert rows["new"] == (course_map.rounded(course_map.minutes(before / "01_x.ipynb", {"01_x": 60.0})["total"]),
                           course_map.rounded_optional(20 * (1 + course_map.RETRY_SHARE)))
    table = compare_minutes.compare(a, b)
    line = next(l for l in table.splitlines() if l.startswith("| `01_x`"))
    assert "| 414 → 276 | 7 → 5 | 1/1 → 1/0 |" in line
    assert next(l for l in table.splitlines() if l.startswith("| `02_y`")).startswith("| `02_y` | 0 → 276 | 0 → 7 | — → 1/1 |")
    totals = compare_minutes.totals(compare_minutes.rows(b), "main path")
    assert (totals["words"], totals["cells"], totals["required"], totals["optional"]) == (552, 12, 2, 1)


def test_the_budget_lists_the_main_paths_parts_and_its_required_exercises(tmp_path):
    (tmp_path / "01_x.ipynb").write_text(json.dumps(made_up_notebook()))
    (tmp_path / "10_y.ipynb").write_text(json.dumps(made_up_notebook(required=50)))  # an extra: not listed
    side = compare_minutes.from_folder(tmp_path, {}, "made up")
    text = compare_minutes.budget(side)
    stated = compare_minutes.rows(side)["01_x"]["new"][0]
    assert text.splitlines()[0] == (f"made up: the main path states {stated} min ({course_map.in_hours(stated)}), "
                                    f"budget 360: {stated - 360:+d} min")
    assert [line.split()[:3] for line in text.splitlines()[4:]] == [["01", "one", "10"]]


def test_checkouts_laid_over_a_base_count_as_their_merge_and_a_clash_is_named(tmp_path):
    """Each checkout's changed notebooks replace the base's; two that change one notebook are refused."""
    for folder, words in (("base", 100), ("a", 200), ("b", 100), ("c", 300)):
        (tmp_path / folder / "notebooks").mkdir(parents=True)
        (tmp_path / folder / "notebooks" / "01_x.ipynb").write_text(json.dumps(made_up_notebook(words=words)))
        (tmp_path / folder / "notebooks" / "02_y.ipynb").write_text(
            json.dumps(made_up_notebook(words=400 if folder == "b" else 100)))
    base = compare_minutes.from_folder(tmp_path / "base" / "notebooks")
    merged = compare_minutes.overlaid(base, [str(tmp_path / "a"), str(tmp_path / "b")])
    assert {stem: r["words"] for stem, r in compare_minutes.rows(merged).items()} == {"01_x": 200, "02_y": 400}
    with pytest.raises(SystemExit, match=r"01_x: changed by both .*a and .*c"):
        compare_minutes.overlaid(base, [str(tmp_path / "a"), str(tmp_path / "c")])


INTRO_TIME = re.compile(r"About (\d+) minutes(?:[^.]*?plus (\d+) for the optional)?")


@pytest.mark.parametrize("path", [p for p in course_map.notebooks() if INTRO_TIME.search(joined(p, "markdown"))],
                         ids=lambda p: p.stem)
def test_a_notebook_that_states_its_minutes_states_the_maps(path):
    """A notebook's "About N minutes, plus M for the optional …" is its row of the course map."""
    m = INTRO_TIME.search(" ".join(joined(path, "markdown").split()))
    minutes, optional = course_map.stated_map()["notebooks"][path.stem]
    assert (int(m[1]), int(m[2] or 0)) == (minutes, optional), (m[0], minutes, optional)
