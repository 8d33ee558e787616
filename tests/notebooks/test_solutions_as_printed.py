"""Every Solution works as printed: the code in a notebook's collapsed Solution block, pasted into
the exercise's cell as it stands, passes the exercise's check.

A learner pastes it into a notebook whose cells above have run, so the Solution sees what those
cells imported and the functions of the exercises above it, and nothing else (solutions.py's own
module imports do not travel with it). The namespace here is built from those cells' import
statements, run in order, and the earlier exercises' Solutions as printed: the names a Solution
may rely on without defining them. A Solution that reads a name no cell above imports fails here
as it fails in the notebook, with the feedback the learner would see ("add `from minitf import
IGNORE`"). A slow test does the same in a kernel, the notebook's own cells run from the top.
"""
import ast
import linecache
import re

import pytest
from IPython.core.inputtransformer2 import TransformerManager

from support import ROOT, cells, exercise_checks
from minitf import exercises as workbook
from minitf.course.feedback import ExerciseError

SOLUTION = re.compile(r"<details><summary>Solution</summary>\s*```python\n(.*?)\n```", re.S)


def printed_solution(notebook: str, check: int) -> str:
    """The code of the first Solution block in the markdown after the check cell, as shown."""
    for cell in cells(notebook)[check + 1:]:
        if cell["cell_type"] == "code":
            break
        found = SOLUTION.search("".join(cell["source"]))
        if found:
            return found.group(1)
    raise AssertionError(f"{notebook}: no Solution block after cell {check}")


def imports_above(notebook: str, stop: int) -> dict:
    """The namespace the imports of code cells 0 … stop−1 make, run in order (magics turned into
    Python first, as IPython does; a cell that is not Python even then is skipped)."""
    namespace: dict = {}
    for i, cell in enumerate(cells(notebook)[:stop]):
        if cell["cell_type"] != "code":
            continue
        try:
            tree = ast.parse(TransformerManager().transform_cell("".join(cell["source"])))
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                exec(compile(ast.Module([node], []), f"<{notebook} cell {i}>", "exec"), namespace)
    return namespace


def paste(source: str, namespace: dict, where: str):
    """Run the Solution as the learner's cell would, keeping its lines for the feedback's
    'in the line:' (Jupyter does the same with linecache)."""
    linecache.cache[where] = (len(source), None, source.splitlines(True), where)
    exec(compile(source, where, "exec"), namespace)


@pytest.mark.parametrize("notebook, name, check", exercise_checks(),
                         ids=[f"{nb[:2]}-{name}" for nb, name, _ in exercise_checks()])
def test_every_solution_passes_its_check_as_printed(notebook, name, check):
    stub = check - 1  # the cell holding `def my_<name>(…)` (or `class <Name>(…)`): raise NotImplementedError
    answer = workbook.EXERCISES[name].answer
    assert f"def {answer}(" in "".join(cells(notebook)[stub]["source"]) or \
        f"class {answer}(" in "".join(cells(notebook)[stub]["source"]), \
        f"{notebook}: the cell before the check of {name} is not its exercise cell"
    namespace = imports_above(notebook, stub)
    for earlier_notebook, earlier, earlier_check in exercise_checks():  # the learner wrote these above
        if earlier_notebook == notebook and earlier_check < check:
            paste(printed_solution(notebook, earlier_check), namespace,
                  f"<{notebook} cell {earlier_check - 1}, the Solution of {earlier}>")
    paste(printed_solution(notebook, check), namespace, f"<{notebook} cell {stub}, the Solution pasted>")
    try:
        message = workbook.run_check(name, namespace[answer])
    except ExerciseError as e:
        message = f"{notebook}: the Solution of {name}, pasted as printed, fails its check:\n{e}"
    assert message.startswith("✓"), message


def test_a_solution_that_needs_a_name_no_cell_imports_fails_here_with_the_import_named():
    """The test itself catches what it is for: notebook 12 before its cells imported TAB and EOS."""
    notebook, name, check = next(e for e in exercise_checks() if e[1] == "byte_circle")
    namespace = imports_above(notebook, check - 1)
    namespace.pop("TAB", None), namespace.pop("EOS", None)
    paste(printed_solution(notebook, check), namespace, "<solution without TAB, EOS>")
    with pytest.raises(ExerciseError) as info:
        workbook.run_check(name, namespace[f"my_{name}"])
    assert "import TAB, EOS" in str(info.value)
    assert "E[TAB] = E[EOS]" in str(info.value)  # the line that raised, as the learner sees it


@pytest.mark.slow
@pytest.mark.parametrize("notebook", sorted({nb for nb, _, _ in exercise_checks()}), ids=lambda nb: nb[:2])
def test_in_a_kernel_every_solution_pasted_passes_as_the_learner_sees_it(notebook, tmp_path, monkeypatch):
    """What a learner does, whole: the notebook's own cells run in a kernel from the top, with every
    exercise cell holding its Solution as printed, up to the last check; each check must print ✓.
    The fast test above builds the namespace from the imports alone; this one leaves nothing out."""
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("MINITF_MY_PARTS", str(tmp_path / "my_parts"))  # the saved pieces go here
    monkeypatch.setenv("MINITF_THREADS", "1")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    nb = nbformat.read(ROOT / "notebooks" / notebook, as_version=4)
    checks = {check: name for n, name, check in exercise_checks() if n == notebook}
    for check in checks:
        nb.cells[check - 1].source = printed_solution(notebook, check)
    nb.cells = nb.cells[:max(checks) + 1]
    NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(ROOT / "notebooks")}}).execute()
    failed = []
    for check, name in checks.items():
        shown = "".join(o.get("text", "") if o.get("output_type") == "stream" else
                        f"{o.get('ename')}: {o.get('evalue')}" if o.get("output_type") == "error" else ""
                        for o in nb.cells[check].outputs)
        if not shown.startswith("✓"):
            failed.append(f"{name}: {shown.strip()}")
    assert not failed, f"{notebook}: Solutions that fail as printed, in the notebook:\n" + "\n\n".join(failed)
