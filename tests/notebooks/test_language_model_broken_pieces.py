"""Notebook 09 run with the skeleton's pieces deliberately broken (08's twin is in
test_training_parts): each saved slip is named by the model check, the reference solution takes
its place, and lm.pt still speaks minitf's text through the learner's whole model."""
import re

import pytest
import torch

import minitf
from support import ROOT
from minitf import solutions
from test_training_parts import WRONG_PIECES, outputs_text

# piece → a typical slip of its exercise (08's test saves the same ones)
SLIPS = {"softmax": "softmax_without_the_maximum",
         "multi_head_attention": "heads_merged_without_transpose",
         "block": "block_without_residuals",
         "model_forward": "forward_without_the_final_norm"}


@pytest.mark.slow  # runs the whole of notebook 09 in a kernel
def test_notebook_09_with_wrong_pieces_names_each_and_speaks_with_the_reference(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("MINITF_MY_PARTS", str(tmp_path / "my_parts"))
    source = tmp_path / "wrong_pieces.py"  # saving reads a function's source from its file
    source.write_text(WRONG_PIECES)
    namespace = {"torch": torch, "minitf": minitf, "my_attention": solutions.my_attention,
                 "my_causal_mask": solutions.my_causal_mask}
    exec(compile(WRONG_PIECES, str(source), "exec"), namespace)
    for piece, fn in SLIPS.items():
        assert minitf.parts.save(piece, namespace[fn]) is not None
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the kernel imports this minitf
    nb = nbformat.read(ROOT / "notebooks" / "09_language_model.ipynb", as_version=4)
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(ROOT / "notebooks")}}).execute()
    text = outputs_text(nb.cells)
    assert "ERROR" not in text, text
    assert "✗ your model's logits differ from minitf's" in text
    assert "broken piece: softmax — " in text and "overflows" in text
    for piece in SLIPS:
        assert f"broken piece: {piece} — " in text, piece
        assert re.search(rf"^{piece} +reference solution \(yours is broken: see the check above\)$",
                         text, re.MULTILINE), piece
    # the references in their place: the speaking check passes, its greedy text written uncached
    spoken = next(cell for cell in nb.cells if "spoken = check_speaking(yours, lm" in cell.source)
    checks = [line for line in outputs_text([spoken]).splitlines() if line.startswith(("✓", "✗"))]
    assert len(checks) == 5 and all(line.startswith("✓") for line in checks), checks
    assert "through your model_forward → block → multi_head_attention: the same 60 bytes" in checks[4]
