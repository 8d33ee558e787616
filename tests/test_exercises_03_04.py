"""Reference solutions for the exercises of notebooks 03 (attention) and 04 (FFN and block).

Each solution must pass minitf.check_function against minitf's own code, and typical wrong answers
must get an ExerciseError that says in words what is wrong. The last tests run the notebooks' own
check cells with the solutions filled in, so the notebooks and these solutions cannot drift apart.
"""
import contextlib
import io
import json
import math

import pytest
import torch

import minitf
from conftest import ROOT


# --- reference solutions -------------------------------------------------------------------------

def solution_causal_mask(T):
    i = torch.arange(T)[:, None]  # query positions, as a column
    j = torch.arange(T)[None, :]  # key positions, as a row
    return j > i


def solution_attention(q, k, v):
    T = q.size(-2)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # (B, H, T, T)
    scores = scores.masked_fill(minitf.causal_mask(T), float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def solution_layer_norm(x, norm):
    mean = x.mean(-1, keepdim=True)
    var = x.var(-1, unbiased=False, keepdim=True)
    return (x - mean) / torch.sqrt(var + norm.eps) * norm.weight + norm.bias


def solution_rms_norm(x, norm):
    return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + norm.eps) * norm.weight


# --- the cases the notebooks use -----------------------------------------------------------------

MASK_CASES = [1, 2, 5, 8]


def attention_cases():
    return [tuple(torch.rand(3, 1, 1, 3, 4).unbind(0)), tuple(torch.rand(3, 2, 2, 5, 2).unbind(0))]


def layer_norm_case(shape, seed):
    g = torch.Generator().manual_seed(seed)
    norm = minitf.LayerNorm(shape[-1])
    with torch.no_grad():
        norm.weight.copy_(torch.rand(shape[-1], generator=g) + 0.5)
        norm.bias.copy_(torch.rand(shape[-1], generator=g) - 0.5)
    return torch.rand(shape, generator=g) * 4 - 1, norm


def layer_norm_cases():
    return [layer_norm_case((1, 4), 0), layer_norm_case((2, 3, 4), 1), layer_norm_case((5, 8), 2)]


def rms_norm_cases():
    cases = []
    for x, ln in layer_norm_cases():
        norm = minitf.RMSNorm(x.size(-1))
        with torch.no_grad():
            norm.weight.copy_(ln.weight)
        cases.append((x, norm))
    return cases


def apply_module(x, norm):
    return norm(x)


# --- solutions pass ------------------------------------------------------------------------------

def test_causal_mask_solution_passes():
    msg = minitf.check_function(solution_causal_mask, minitf.causal_mask, MASK_CASES)
    assert msg.startswith("✓") and "4 cases" in msg


def test_attention_solution_passes():
    torch.manual_seed(0)
    assert minitf.check_function(solution_attention, minitf.attention, attention_cases()).startswith("✓")


def test_layer_norm_solution_passes():
    assert minitf.check_function(solution_layer_norm, apply_module, layer_norm_cases()).startswith("✓")


def test_rms_norm_solution_passes():
    assert minitf.check_function(solution_rms_norm, apply_module, rms_norm_cases()).startswith("✓")


# --- wrong answers get a message that says what is wrong -----------------------------------------

def check_fails(learner, reference, cases, hint="") -> str:
    with pytest.raises(minitf.ExerciseError) as info:
        minitf.check_function(learner, reference, cases, hint=hint)
    return str(info.value)


def test_unwritten_stub_is_reported_as_not_written():
    def stub(T):
        raise NotImplementedError

    assert "not written yet" in check_fails(stub, minitf.causal_mask, MASK_CASES)


def test_mask_that_hides_the_diagonal_is_explained():
    msg = check_fails(lambda T: torch.ones(T, T, dtype=torch.bool).triu(0), minitf.causal_mask,
                      MASK_CASES, hint="the diagonal is False")
    # case 0 (T = 1): the single entry, the diagonal, is wrong
    assert "on case 0" in msg and "1 of 1 entries differ" in msg and "index (0, 0)" in msg
    assert "Hint: the diagonal is False" in msg


def test_mask_with_the_wrong_dtype_is_explained():
    msg = check_fails(lambda T: torch.ones(T, T).triu(1), minitf.causal_mask, MASK_CASES)
    assert "dtype torch.float32, expected torch.bool" in msg


def test_transposed_mask_is_explained():
    msg = check_fails(lambda T: torch.ones(T, T, dtype=torch.bool).tril(-1), minitf.causal_mask,
                      MASK_CASES)
    assert "on case 1" in msg and "2 of 4 entries differ" in msg  # T = 2: both off-diagonal entries


def test_attention_without_scaling_is_explained():
    def unscaled(q, k, v):
        scores = (q @ k.transpose(-2, -1)).masked_fill(minitf.causal_mask(q.size(-2)), float("-inf"))
        w = scores.softmax(-1)
        return w @ v, w

    torch.manual_seed(0)
    msg = check_fails(unscaled, minitf.attention, attention_cases())
    assert "entries differ" in msg and "[0]" in msg  # the output (result 0) is already wrong


def test_attention_without_mask_is_explained():
    torch.manual_seed(0)
    msg = check_fails(lambda q, k, v: minitf.attention(q, k, v, causal=False), minitf.attention,
                      attention_cases())
    assert "entries differ" in msg


def test_attention_returning_only_the_output_is_explained():
    torch.manual_seed(0)
    msg = check_fails(lambda q, k, v: minitf.attention(q, k, v)[0], minitf.attention, attention_cases())
    assert "expected 2 results" in msg


def test_layer_norm_with_unbiased_variance_is_explained():
    def unbiased(x, norm):
        return (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True) + norm.eps) \
            * norm.weight + norm.bias

    msg = check_fails(unbiased, apply_module, layer_norm_cases(), hint="biased variance")
    assert "entries differ" in msg and "Hint: biased variance" in msg


def test_layer_norm_forgetting_the_parameters_is_explained():
    def no_affine(x, norm):
        return (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + norm.eps)

    assert "entries differ" in check_fails(no_affine, apply_module, layer_norm_cases())


def test_rms_norm_that_centres_is_explained():
    def centred(x, norm):
        x = x - x.mean(-1, keepdim=True)
        return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + norm.eps) * norm.weight

    assert "entries differ" in check_fails(centred, apply_module, rms_norm_cases())


def test_rms_norm_with_wrong_shape_is_explained():
    msg = check_fails(lambda x, norm: (x / x.pow(2).mean().sqrt() * norm.weight).sum(-1),
                      apply_module, rms_norm_cases())
    assert "shape (1,), expected (1, 4)" in msg


# --- the notebooks' own check cells accept the solutions -----------------------------------------

def exercise_checks(notebook):
    """(name of the learner's function, source of the check cell after it) for each exercise."""
    cells = json.loads((ROOT / "notebooks" / notebook).read_text())["cells"]
    found = []
    for i, cell in enumerate(cells):
        if "exercise" in cell.get("metadata", {}).get("tags", []):
            src = "".join(cell["source"])
            name = src.split("def ", 1)[1].split("(", 1)[0]
            found.append((name, "".join(cells[i + 1]["source"])))
    return found


SOLUTIONS = {"my_causal_mask": solution_causal_mask, "my_attention": solution_attention,
             "my_layer_norm": solution_layer_norm, "my_rms_norm": solution_rms_norm}


@pytest.mark.parametrize("notebook, names", [
    ("03_attention.ipynb", ["my_causal_mask", "my_attention"]),
    ("04_ffn_block.ipynb", ["my_layer_norm", "my_rms_norm"]),
])
def test_notebook_check_cells_pass_with_the_solutions_and_fail_without(notebook, names):
    checks = exercise_checks(notebook)
    assert [name for name, _ in checks] == names
    namespace = {"minitf": minitf, "torch": torch, "math": math}  # shared, as in the notebook
    for name, check_src in checks:
        for learner, expect in ((SOLUTIONS[name], "✓"), (lambda *a: None, "expected")):
            out = io.StringIO()
            namespace[name] = learner
            with contextlib.redirect_stdout(out):
                exec(check_src, namespace)
            ok = out.getvalue().startswith("✓") if expect == "✓" else expect in out.getvalue()
            assert ok, (name, out.getvalue())
