"""`make student` (tools/student.py): copies without the collapsed solutions, which still run.

The copies change Markdown only (each `<details><summary>Solution</summary>…</details>` becomes a
line saying where it is); their code cells and outputs are the notebook's, so a copy runs like the
notebook, and each exercise's check says the function "is not written yet".
"""
import json

import nbformat
import pytest

from support import ROOT, script

student = script("tools/student.py")

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
NOT_WRITTEN = "is not written yet"


def exercise_cells(nb: dict) -> list[int]:
    return [i for i, c in enumerate(nb["cells"])
            if c["cell_type"] == "code" and "minitf.exercise(" in "".join(c["source"])]


@pytest.fixture(scope="module")
def copies(tmp_path_factory):
    """The copies as `make student` writes them, one folder below a root that has the data."""
    root = tmp_path_factory.mktemp("course")
    (root / "data").symlink_to(ROOT / "data")
    removed, kept = student.write(root / "student")
    assert kept == []
    return root / "student", removed


def test_no_solution_is_left_and_nothing_else_changes(copies):
    out, removed = copies
    assert sum(removed.values()) >= 10
    for path in NOTEBOOKS:
        original, copy = json.loads(path.read_text()), json.loads((out / path.name).read_text())
        text = json.dumps(copy)
        assert "<summary>Solution</summary>" not in text, path.name
        assert text.count(student.LEFT_OUT.replace('"', '\\"')[:40]) == removed[path.name]
        assert removed[path.name] == json.dumps(original).count("<summary>Solution</summary>")
        assert copy["metadata"] == original["metadata"] and len(copy["cells"]) == len(original["cells"])
        for a, b in zip(original["cells"], copy["cells"]):
            if a["cell_type"] == "code" or "<summary>Solution" not in "".join(a["source"]):
                assert a == b, path.name  # code, outputs and every other cell: the notebook's own
            else:
                assert "<summary>Hint 1</summary>" not in "".join(a["source"]) or \
                    "<summary>Hint 1</summary>" in "".join(b["source"])  # hints stay


def test_every_exercise_in_a_copy_says_not_written_yet(copies):
    out, _ = copies
    n = 0
    for path in NOTEBOOKS:
        nb = json.loads((out / path.name).read_text())
        for i in exercise_cells(nb):
            text = "".join("".join(o.get("text", "")) for o in nb["cells"][i]["outputs"])
            assert NOT_WRITTEN in text, f"{path.name} cell {i}"
            n += 1
    assert n >= 10


@pytest.mark.slow
def test_a_copy_runs_to_its_end_and_its_exercises_say_not_written_yet(copies, tmp_path, monkeypatch):
    """Run the copy of notebook 03 (four exercises) in a kernel, from its own folder."""
    from nbclient import NotebookClient  # here, not at the top: only this slow test needs it (0.2 s to import)

    out, _ = copies
    nb = nbformat.read(out / "03_attention.ipynb", as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    monkeypatch.setenv("MINITF_MY_PARTS", str(tmp_path / "my_parts"))  # nothing passes; nothing is saved
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(out)}}).execute()
    said = ["".join(o.get("text", "")) for i in exercise_cells(nb) for o in nb.cells[i].outputs]
    assert len(exercise_cells(nb)) == 4
    assert all(NOT_WRITTEN in s for s in said) and len(said) == 4, said
    assert not any(o.output_type == "error" for c in nb.cells if c.cell_type == "code" for o in c.outputs)


def test_a_learners_copy_is_never_overwritten(tmp_path):
    out = tmp_path / "student"
    out.mkdir()
    mine = out / "03_attention.ipynb"
    mine.write_text("my work")
    removed, kept = student.write(out)
    assert kept == ["03_attention.ipynb"] and mine.read_text() == "my work"
    assert "03_attention.ipynb" not in removed and "02_rope.ipynb" in removed
    student.write(out, force=True)
    assert mine.read_text() != "my work"


def test_student_copies_are_git_ignored():
    assert "student/" in (ROOT / ".gitignore").read_text().splitlines()
