"""The course's exercises: every reference solution passes its own check, the notebooks show exactly
those solutions, and a learner's answer is saved only when it passes."""
import json

import pytest
import torch

import minitf
from conftest import ROOT
from minitf import parts, solutions, workbook

NAMES = list(workbook.EXERCISES)


@pytest.mark.parametrize("name", NAMES)
def test_every_reference_solution_passes_its_check(name):
    message = workbook.run_check(name, getattr(solutions, f"my_{name}"))
    assert message.startswith("✓"), message


@pytest.mark.parametrize("name", NAMES)
def test_a_stub_is_reported_as_not_written(name, capsys):
    def stub(*args):
        raise NotImplementedError

    minitf.exercise(name, stub)
    assert "not written yet" in capsys.readouterr().out


def test_every_exercise_says_what_it_teaches_how_hard_and_how_long():
    for ex in workbook.EXERCISES.values():
        assert 1 <= ex.difficulty <= 5 and 1 <= ex.minutes <= 60 and ex.teaches and ex.hint
        assert ex.header.startswith("difficulty ") and f"about {ex.minutes} min" in ex.header


def test_an_unknown_exercise_names_the_known_ones():
    with pytest.raises(KeyError, match="apply_rope"):
        minitf.exercise("rope", solutions.my_apply_rope)


def test_a_passing_piece_is_saved_and_loads_back(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINITF_MY_PARTS", str(tmp_path))
    minitf.exercise("attention", solutions.my_attention)
    assert "saved to" in capsys.readouterr().out
    assert (tmp_path / "attention.py").is_file()
    mine = parts.mine()
    assert mine.given() == ["attention"] and "yours" in mine.origin["attention"]
    q, k, v = torch.rand(3, 1, 2, 4, 2, dtype=torch.float64).unbind(0)
    out, w = mine.attention(q, k, v, minitf.causal_mask(4))
    assert torch.allclose(out, minitf.attention(q, k, v, minitf.causal_mask(4))[0])


def test_a_failing_piece_is_not_saved(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINITF_MY_PARTS", str(tmp_path))

    def my_causal_mask(T):
        return torch.ones(T, T, dtype=torch.bool).tril()  # inverted meaning

    minitf.exercise("causal_mask", my_causal_mask)
    assert "Hint:" in capsys.readouterr().out
    assert not list(tmp_path.iterdir())


def test_a_lambda_passes_but_is_not_saved(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINITF_MY_PARTS", str(tmp_path))
    minitf.exercise("causal_mask", lambda T: torch.ones(T, T, dtype=torch.bool).triu(1))
    assert "write it with `def`" in capsys.readouterr().out
    assert not list(tmp_path.iterdir())


def test_ablate_head_that_changes_the_given_model_is_refused():
    def in_place(model, layer, head):
        hd = model.config.head_dim
        with torch.no_grad():
            model.blocks[layer].attn.out.weight[:, head * hd:(head + 1) * hd] = 0
        return model

    with pytest.raises(minitf.ExerciseError, match="changed its argument `model` in place"):
        workbook.run_check("ablate_head", in_place)


# --- typical wrong answers get the diagnosis (and the hint) written for that mistake ------------

def rope_cat(x, cos, sin):
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)


def attention_unscaled(q, k, v, mask):
    return solutions.my_attention(q * q.size(-1) ** 0.5, k, v, mask)


def attention_softmax_dim(q, k, v, mask):
    scores = (q @ k.transpose(-2, -1) / q.size(-1) ** 0.5)
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    w = torch.nan_to_num(scores.softmax(-2))
    return w @ v, w


def layer_norm_no_keepdim(x, weight, bias, eps):
    return (x - x.mean(-1)) / torch.sqrt(x.var(-1, unbiased=False) + eps) * weight + bias


def batch_padded_with_ignore(pairs):
    ids, targets = solutions.my_make_batch(pairs)
    ids[targets == minitf.IGNORE] = torch.where(ids == minitf.PAD, minitf.IGNORE, ids)[targets == minitf.IGNORE]
    return ids, targets


MISTAKES = [  # (exercise, wrong answer, diagnosis, words the feedback must contain)
    ("count_parameters", lambda c: solutions.my_count_parameters(c) - c.vocab_size, "count_difference",
     "output head"),
    ("apply_rope", rope_cat, "permutation", "wrong slots"),
    ("causal_mask", lambda T: torch.ones(T, T, dtype=torch.bool).triu(0), "mask_diagonal", "position i may look at itself"),
    ("causal_mask", lambda T: torch.ones(T, T, dtype=torch.bool).tril(), "mask_inverted", "NOT look"),
    ("attention", attention_unscaled, "scores_scaled", "√head_dim"),
    ("attention", attention_softmax_dim, "softmax_over_wrong_dim", "dim=-1"),
    ("layer_norm", layer_norm_no_keepdim, "raised", "keepdim=True"),
    ("make_batch", batch_padded_with_ignore, "padding", "PAD = 0"),
    ("position_ids", lambda ids: solutions.my_position_ids(ids) + 1, "offset", "the TAB 0"),
    ("position_ids", lambda ids: solutions.my_position_ids(ids).float(), "dtype", "torch.arange"),
    ("widen_weight", lambda W, k: torch.block_diag(*[W / k] * k), "_zeros_where_copies_should_be", "off the diagonal too"),
    ("widen_weight", lambda W, k: torch.cat([torch.cat([W] * k, 1)] * k, 0), "factor", "(= k)"),
]


@pytest.mark.parametrize("name, wrong, diagnosis, words", MISTAKES,
                         ids=[f"{m[0]}-{m[2]}" for m in MISTAKES])
def test_a_typical_mistake_gets_its_own_diagnosis(name, wrong, diagnosis, words):
    with pytest.raises(minitf.ExerciseError) as info:
        workbook.run_check(name, wrong)
    assert diagnosis in info.value.diagnoses, str(info.value)
    assert words in str(info.value), str(info.value)


# --- the notebooks show these exercises, with their solutions, and no answer before them ----------

def notebook_cells(name):
    return json.loads((ROOT / "notebooks" / name).read_text())["cells"]


def exercise_uses():
    """(notebook, exercise name, index of the cell that checks it) for every minitf.exercise call."""
    found = []
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for i, cell in enumerate(notebook_cells(nb.name)):
            src = "".join(cell["source"])
            if cell["cell_type"] == "code" and "minitf.exercise(" in src:
                name = src.split("minitf.exercise(", 1)[1].split(",", 1)[0].strip("\"' ")
                found.append((nb.name, name, i))
    return found


def test_every_exercise_appears_in_its_notebook():
    used = {name: nb for nb, name, _ in exercise_uses()}
    for name, ex in workbook.EXERCISES.items():
        assert name in used, f"exercise {name} is not used in any notebook"
        assert used[name].startswith(ex.notebook), (name, used[name], ex.notebook)


@pytest.mark.parametrize("notebook, name, index", exercise_uses())
def test_each_exercise_has_hints_and_the_reference_solution_after_it(notebook, name, index):
    cells = notebook_cells(notebook)
    after = "\n".join("".join(c["source"]) for c in cells[index + 1:index + 4] if c["cell_type"] == "markdown")
    assert after.count("<details>") >= 2 and "Hint" in after, f"{notebook}: {name} has no hints after it"
    assert workbook.solution_markdown(name) in after, \
        f"{notebook}: the solution block of {name} differs from minitf/course/solutions.py " \
        "(paste minitf.workbook.solution_markdown(name))"


@pytest.mark.parametrize("notebook, name, index", exercise_uses())
def test_no_reference_source_is_shown_before_its_exercise(notebook, name, index):
    cells = notebook_cells(notebook)
    for cell in cells[:index]:
        src = "".join(cell["source"])
        assert not ("getsource" in src and name in src), \
            f"{notebook}: minitf's {name} is printed before the exercise that asks for it"
        assert "minitf.solutions" not in src, f"{notebook}: a solution is used before exercise {name}"


def test_passes_is_quiet_and_says_whether_a_function_passes(capsys):
    assert workbook.passes("rms_norm", solutions.my_rms_norm)
    assert not workbook.passes("rms_norm", solutions.my_layer_norm)
    assert capsys.readouterr().out == ""
