"""Reading changes nothing: a notebook is stored exactly as JupyterLab 4.6 saves it, so
opening and saving it in `make lab` leaves `git status` clean. The browser check saves each notebook
in JupyterLab itself (stage 0); this fast check applies tools/normalize_notebooks.py's rules."""
import importlib.util

import pytest

from support import ROOT

spec = importlib.util.spec_from_file_location("normalize_notebooks", ROOT / "tools" / "normalize_notebooks.py")
normalize = importlib.util.module_from_spec(spec)
spec.loader.exec_module(normalize)

# every notebook is stored this way (tools/normalize_notebooks.py after each re-execution)
STORED_AS_SAVED = sorted(p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


@pytest.mark.parametrize("stem", STORED_AS_SAVED)
def test_the_notebook_is_stored_as_jupyterlab_saves_it(stem):
    path = ROOT / "notebooks" / f"{stem}.ipynb"
    assert normalize.main(["--check", str(path)]) == 0, \
        f"{path.name}: run python tools/normalize_notebooks.py notebooks/{path.name}"


def test_the_rules_are_jupyterlabs():
    printed = {"name": "stdout", "output_type": "stream", "text": ["one\ntwo\n", "three"]}
    nb = {"cells": [{"cell_type": "code", "metadata": {"jupyter": {"outputs_hidden": True}}, "source": [],
                     "outputs": [printed], "execution_count": 1, "id": "c3851bb8"}],
          "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                       "widgets": {"state": {"values": [1.0, 0.5, -0.0, 2e21]}}},
          "nbformat": 4, "nbformat_minor": 4}
    out = normalize.normalized(nb)
    assert out["cells"][0]["metadata"]["collapsed"] is True
    assert "id" not in out["cells"][0]  # format 4.4 has no cell ids; 4.5 keeps them
    assert normalize.normalized({**nb, "nbformat_minor": 5})["cells"][0]["id"] == "c3851bb8"
    assert out["cells"][0]["outputs"][0]["text"] == ["one\n", "two\n", "three"]  # a line each
    assert out["metadata"]["kernelspec"]["display_name"] == "Python 3 (ipykernel)"
    assert normalize.as_saved(out).count('"values": [\n') == 1
    assert out["metadata"]["widgets"]["state"]["values"] == [1, 0.5, 0, 2e21]
    assert [type(v) for v in out["metadata"]["widgets"]["state"]["values"]] == [int, float, int, float]
