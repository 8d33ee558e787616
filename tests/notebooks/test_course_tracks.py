"""The two tracks stand as the course map says: the main path (00–09) never uses an
extra's exercise or an extra-only stored result (a forward pointer in prose is fine), every
notebook is listed in its track by the README and the site, and no main-path cell shows the harness."""
import json
import re

import pytest

from support import course_map, ROOT, indexed, outputs
from minitf.course.exercises import EXERCISES

NOTEBOOKS = course_map.notebooks()
MAIN = [p for p in NOTEBOOKS if course_map.track(p.name) == "main path"]
EXTRA_EXERCISES = {name for name, ex in EXERCISES.items() if course_map.track(ex.notebook) == "extras"}


def markdown(path):
    """(index, text) of every markdown cell, its HTML comments left out."""
    return [(i, re.sub(r"<!--.*?-->", " ", text, flags=re.S)) for i, text in indexed(path, "markdown")]


def extra_uses(source, printed=""):
    """What a piece of code takes from the extras: their exercises (named in the code, or listed
    among the learner's pieces a model was built from, minitf.course.my_parts), their stored results."""
    used = [f"exercise {name!r}" for name in EXTRA_EXERCISES
            if re.search(rf"""(["']){name}\1|\bmy_{name}\b""", source)
            or re.search(rf"\b{name}\s+(?:yours \(|reference solution)", printed)]
    used += [f"{thing} (extra {owner})" for thing, owner in course_map.EXTRA_ONLY_RESULTS.items()
             if re.search(rf"\b{re.escape(thing)}\b", source)]
    return used


@pytest.mark.parametrize("path", MAIN, ids=lambda p: p.stem)
def test_a_main_path_notebook_uses_nothing_from_an_extra(path):
    found = {f"code cell {i}": u for (i, src), (_, out) in zip(indexed(path, "code"), outputs(path))
             if (u := extra_uses(src, out))}
    assert found == {}


def test_every_extra_only_result_is_used_by_its_extra():
    """The list of extra-only results stays true: each is loaded by the extra it names."""
    for thing, owner in course_map.EXTRA_ONLY_RESULTS.items():
        (path,) = [p for p in NOTEBOOKS if p.name.startswith(owner)]
        assert any(re.search(rf"\b{re.escape(thing)}\b", src) for _, src in indexed(path, "code")), (thing, owner)


def test_the_rule_catches_an_extras_exercise_and_result():
    assert extra_uses('minitf.exercise("byte_circle", my_byte_circle)')
    assert extra_uses('m = minitf.load("../data/checkpoints/shift_smallest.pt")')
    assert extra_uses("sweep = load_tiny_sweep()")
    assert extra_uses("model = minitf.parts.assemble(config, parts)",
                      "byte_circle  reference solution")
    assert extra_uses("minitf.load('../data/checkpoints/shift.pt')  # extra 11") == []


def test_every_notebook_belongs_to_one_track():
    assert [course_map.track(p.name) for p in NOTEBOOKS] == ["main path"] * 10 + ["extras"] * 6
    with pytest.raises(ValueError, match="16_x"):
        course_map.track("16_x")


# --- the map in the README (and so on the site's front page and navigation) --------------------

def readme_tracks():
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## The course"):]
    tracks = {}   # "### The main path: about …" then rows "| `03_attention` | … | 55 min |"
    for block in re.split(r"^### ", section, flags=re.M)[1:]:
        heading, _, body = block.partition("\n")
        if heading.startswith(("The main path", "The extras")):
            tracks[heading[4:].split(":")[0]] = re.findall(r"^\| `(\d\d_\w+)` \|", body, re.M)
    return tracks


def test_the_readme_lists_every_notebook_in_its_track():
    """Its minutes, and 00's, are the count's: test_course_budget.py."""
    tracks = readme_tracks()
    assert set(tracks) == {"main path", "extras"}
    for name, rows in tracks.items():
        assert rows == [p.stem for p in NOTEBOOKS if course_map.track(p.name) == name]


# --- no harness in the main path ---------------------------------------------------------------

HARNESS_CODE = {
    "parses JSON or metadata": re.compile(r"\bjson\.|\bmetadata\["),
    "imports from the CLI": re.compile("|".join([r"\bminitf\.cli\b", r"from minitf import cli\b", r"from \.?cli import"])),
}
HARNESS_PROSE = {
    "mentions bench/": re.compile(r"\bbench/|`make bench`"),
    "mentions tests/": re.compile(r"\btests/|\btest_\w+\.py\b"),
    "talks of issues": re.compile(r"\bthe issue\b|\bissue \d+\b|\bgoals?\b", re.I),
    "talks of load averages": re.compile(r"\bload average", re.I),
}
def harness(path):
    found = [f"code cell {i} {what}" for i, src in indexed(path, "code")
             for what, r in HARNESS_CODE.items() if r.search(src)]
    found += [f"markdown cell {i} {what}" for i, src in markdown(path) for what, r in HARNESS_PROSE.items()
              if r.search(src)]
    return found


@pytest.mark.parametrize("path", MAIN, ids=lambda p: p.stem)
def test_no_main_path_cell_shows_the_harness(path):
    assert harness(path) == []


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p not in MAIN], ids=lambda p: p.stem)
def test_an_extras_prose_points_to_bench_once_at_most_and_to_no_other_harness(path):
    """An extra may say once how to run its study again (a `bench/` command); its prose names no
    test file, issue, goal or load average (its code may read a checkpoint's metadata)."""
    prose = [found for found in harness(path) if found.startswith("markdown")]
    bench = [found for found in prose if found.endswith("mentions bench/")]
    assert len(bench) <= 1 and [found for found in prose if found not in bench] == []


def test_the_harness_rule_catches_what_it_names():
    cell = {"cell_type": "markdown", "metadata": {}, "source": ["`make bench`, load average"]}
    import tempfile, pathlib
    with tempfile.TemporaryDirectory() as d:
        p = pathlib.Path(d) / "05_x.ipynb"
        p.write_text(json.dumps({"cells": [cell, {"cell_type": "code", "metadata": {}, "outputs": [],
                                                  "source": ['curve = json.loads(m.metadata["val_curve"])']}]}))
        json_rule, bench_rule, load_rule = list(HARNESS_CODE)[0], list(HARNESS_PROSE)[0], list(HARNESS_PROSE)[-1]
        assert harness(p) == [f"code cell 1 {json_rule}", f"markdown cell 0 {bench_rule}", f"markdown cell 0 {load_rule}"]

# The main path's budget (words, minutes) and the maps' exact numbers: test_course_budget.py.
