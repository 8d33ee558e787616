"""Reference solutions of the exercises in notebooks 01 and 02, run through the notebooks' own check
cells: a right answer passes, a typical wrong one gets a message that says what is wrong."""
import contextlib
import io
import json

import torch

import minitf
from conftest import ROOT


def run_check_cell(notebook: str, **learner) -> str:
    """Execute the notebook's cell tagged `exercise-check` with the learner's function(s); its output."""
    cells = json.loads((ROOT / "notebooks" / notebook).read_text())["cells"]
    checks = [c for c in cells if "exercise-check" in c["metadata"].get("tags", [])]
    assert len(checks) == 1, f"{notebook}: expected one exercise-check cell"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec("".join(checks[0]["source"]), {**learner})
    return out.getvalue()


# --- 01_embeddings: count the parameters -----------------------------------------------------

def count_by_hand(vocab_size, d_model, n_layers, d_ff):
    V, C, L, F = vocab_size, d_model, n_layers, d_ff
    attention = 4 * (C * C + C)          # W_Q, W_K, W_V, W_O with biases
    ffn = (C * F + F) + (F * C + C)      # up and down with biases
    norms = 2 * (C + C)                  # two LayerNorms: γ and β
    return V * C + L * (attention + ffn + norms) + (C * V + V)


def test_parameter_count_solution_passes_the_notebook_check():
    assert count_by_hand(256, 4, 2, 8) == 2648
    assert run_check_cell("01_embeddings.ipynb", count_by_hand=count_by_hand).startswith(
        "✓ count_by_hand agrees with minitf on 4 cases")


def test_forgetting_the_head_bias_is_explained():
    def no_head_bias(V, C, L, F):
        return count_by_hand(V, C, L, F) - V

    out = run_check_cell("01_embeddings.ipynb", count_by_hand=no_head_bias)
    assert "count_by_hand on case 0: got 2392, expected 2648" in out
    assert "Hint:" in out and "LayerNorm" in out


def test_the_unwritten_stub_says_so():
    def stub(*args):
        raise NotImplementedError

    out = run_check_cell("01_embeddings.ipynb", count_by_hand=stub)
    assert "not written yet" in out


# --- 02_rope: write RoPE yourself --------------------------------------------------------------

def my_apply_rope(x, cos, sin):
    a, b = x[..., 0::2], x[..., 1::2]  # the pairs are neighbouring dimensions
    out = torch.empty_like(x)
    out[..., 0::2] = a * cos - b * sin
    out[..., 1::2] = a * sin + b * cos
    return out


def test_rope_solution_passes_the_notebook_check():
    assert run_check_cell("02_rope.ipynb", my_apply_rope=my_apply_rope).startswith(
        "✓ my_apply_rope agrees with minitf on 3 cases")


def test_rotating_halves_instead_of_neighbours_is_caught_from_head_dim_4_on():
    def rotate_half(x, cos, sin):  # the GPT-NeoX layout: pairs (i, i + hd/2)
        a, b = x.chunk(2, dim=-1)
        return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)

    out = run_check_cell("02_rope.ipynb", my_apply_rope=rotate_half)
    # head_dim 2 has one pair, where both layouts agree: the first failing case is case 1
    assert "my_apply_rope on case 1:" in out and "entries differ" in out
    assert "Hint: pair i is the neighbours" in out


def test_a_rope_with_the_wrong_sign_is_caught():
    def backwards(x, cos, sin):
        return my_apply_rope(x, cos, -sin)

    out = run_check_cell("02_rope.ipynb", my_apply_rope=backwards)
    assert "on case 0:" in out and "entries differ" in out


def test_check_function_directly_with_the_reference_solutions():
    x = torch.rand(2, 2, 5, 6, dtype=torch.float64)
    cos, sin = minitf.rope_angles(minitf.rope_frequencies(6, n_heads=2, dtype=torch.float64), 5)
    assert minitf.check_function(my_apply_rope, minitf.apply_rope, [(x, cos, sin)]).startswith("✓")
