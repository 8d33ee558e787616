"""Notebook 09 run with the skeleton's pieces deliberately broken (08's twin is in
test_training_parts): each saved slip is named by the model check, the reference solution takes
its place, and lm.pt still speaks minitf's text through the learner's whole model."""
import re

import pytest

from support import numbers, outputs_text, run_with_saved_pieces
from test_training_parts import WRONG_PIECES

# piece → a typical slip of its exercise (08's test saves the same ones)
SLIPS = {"softmax": "softmax_without_the_maximum",
         "multi_head_attention": "heads_merged_without_transpose",
         "block": "block_without_residuals",
         "model_forward": "forward_without_the_final_norm"}


@pytest.mark.slow  # runs the whole of notebook 09 in a kernel
def test_notebook_09_with_wrong_pieces_names_each_and_speaks_with_the_reference(tmp_path, monkeypatch):
    text, cells = run_with_saved_pieces("09_language_model.ipynb", SLIPS, WRONG_PIECES, tmp_path, monkeypatch)
    assert "ERROR" not in text, text
    assert "✗ your model's logits differ" in text
    assert "broken piece: softmax — " in text and "overflows" in text
    for piece in SLIPS:
        assert f"broken piece: {piece} — " in text, piece
        assert re.search(rf"^{piece} +reference solution \(yours is broken: see the check above\)$",
                         text, re.MULTILINE), piece
    # the references in their place: the speaking check passes, its greedy text written uncached
    spoken = next(cell for cell in cells if "spoken = check_speaking(yours, lm" in cell.source)
    checks = [line for line in outputs_text([spoken]).splitlines() if line.startswith(("✓", "✗"))]
    assert len(checks) == 5 and all(line.startswith("✓") for line in checks), checks
    # "✓ greedy, without the cache, through your model_forward → block → multi_head_attention: the same 60 bytes …"
    assert "your model_forward → block" in checks[4] and numbers(checks[4]) == [60], checks[4]
