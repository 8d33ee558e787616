"""06's "Your turn" (the reverse model's heads, switched off one at a time) is checked: the right
table passes, and each usual wrong one is named instead of passing silently as eight numbers."""
import copy
import functools

import pytest
import torch

import minitf
from support import ROOT, code_cell
from minitf.course import head_census
from minitf.course.solutions import my_ablate_head

REVERSE = minitf.load(ROOT / "data" / "checkpoints" / "reverse.pt")
SHIFT = minitf.load(ROOT / "data" / "checkpoints" / "shift.pt")


@functools.cache  # remade when a test first needs them, not in every xdist worker's collection
def held_out():
    return {name: minitf.checkpoint_pairs(model, n_val=40)[1]  # as notebook 06 makes them
            for name, model in (("reverse", REVERSE), ("shift", SHIFT))}


def table(model=REVERSE, task="reverse", ablate=my_ablate_head):
    """The loop of the notebook's solution, with the notebook's teacher-forced exact match."""
    return dict(measured(model, task, ablate))


@functools.cache  # each table measured once for the file
def measured(model, task, ablate):
    return {(layer, head): head_census.teacher_forced_exact_match(ablate(model, layer, head), held_out()[task])
            for layer in range(2) for head in range(4)}


def in_place(model, layer, head):
    hd = model.config.head_dim
    with torch.no_grad():
        model.blocks[layer].attn.out.weight[:, head * hd:(head + 1) * hd] = 0
    return model


def test_the_check_s_exact_match_is_greedy_generation_s():
    """A learner may measure with minitf.evaluate (generation) instead of the teacher-forced one."""
    ablated, pairs = minitf.ablate_heads(REVERSE, [(1, 3)]), held_out()["reverse"][:20]
    assert head_census.teacher_forced_exact_match(ablated, pairs) == minitf.evaluate(ablated, pairs)["exact_match"]


@pytest.mark.parametrize("found, diagnosis, words", [
    (lambda: {}, "empty", "the loop body is still `pass`"),
    (lambda: table(task="shift"), "all_zero", "another task's held-out pairs"),
    (lambda: table(model=SHIFT), "all_zero", "another task's model"),
    (lambda: {(h, l): v for (l, h), v in table().items()}, "keys_swapped", "the keys are (head, layer)"),
    (lambda: table(ablate=lambda model, layer, head: model), "nothing_switched_off", "no head was switched off"),
    (lambda: table(model=copy.deepcopy(REVERSE), ablate=in_place), "cumulative", "a fresh copy"),
    (lambda: {**table(), (1, 0): 0.5}, "values", "1.0: yours 0.50, measured "),
    (lambda: {k: v for k, v in table().items() if k != (1, 3)}, "keys", "no entry for (1, 3)"),
    (lambda: {**table(), (0, 0): {"exact_match": 0.2}}, "a_dict_of_scores", "store the number"),
    (lambda: list(table().values()), "not_a_dict", "a list, expected a dict"),
])
def test_a_wrong_table_is_named(found, diagnosis, words):
    with pytest.raises(minitf.ExerciseError) as info:
        head_census.diagnose(found(), REVERSE, held_out()["reverse"])
    assert info.value.diagnoses == (diagnosis,)
    assert words in str(info.value) and "\nHint: " in str(info.value)


def test_the_shift_model_s_census_on_its_own_pairs_is_named():
    with pytest.raises(minitf.ExerciseError) as info:
        head_census.diagnose(table(model=SHIFT, task="shift"), REVERSE, held_out()["reverse"],
                             others=({"reverse": REVERSE, "shift": SHIFT}, held_out()))
    assert info.value.diagnoses == ("another_model",)
    assert "the shift model's heads, measured on its own pairs" in str(info.value)


def test_the_solution_block_is_shown_after_the_turn_and_passes_its_check(capsys):
    from support import markdown
    assert " ".join(head_census.solution_markdown().split()) in markdown("06_attention_heatmaps")
    assert "head_census.check(found" in head_census.SOLUTION  # the block ends with its check
    exec(head_census.SOLUTION, {"my_ablate_head": my_ablate_head, "minitf": minitf,
                                "exact_match": head_census.teacher_forced_exact_match,
                                "models": {"reverse": REVERSE, "shift": SHIFT}, "held_out": held_out()})
    assert capsys.readouterr().out.startswith("✓ found agrees with the measurement for all 8 heads")


def test_check_prints_instead_of_raising(capsys):
    head_census.check({}, REVERSE, held_out()["reverse"])
    assert capsys.readouterr().out.startswith("found: empty")


def test_notebook_06_checks_the_learner_s_table():
    turn = code_cell("06_attention_heatmaps", containing="found = {}")
    assert 'head_census.check(found, models["reverse"], held_out["reverse"], others=(models, held_out))' \
        in "".join(turn["source"])
    assert "".join(turn["outputs"][0]["text"]).startswith("found: empty: the loop body is still `pass`")
