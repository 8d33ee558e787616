"""Notebook 06's "Your turn": the learner's table {(layer, head): exact match without that head},
checked against the same measurement made here, with the slip named when it differs.

The answer is a measurement, not a function, so it is checked as numbers: a table left empty, keys
in the other order, every head at 0.0 (pairs of another task), every head at the whole model's
score (nothing switched off) and heads switched off one on top of the other each get their own
sentence, as the other exercises' slips do (minitf.course.feedback).
"""
from __future__ import annotations

import numbers

import torch

from ..core.data import Pair
from ..core.evaluate import teacher_forced_exact_match  # noqa: F401 (notebook 06 calls it from here)
from ..core.heads import ablate_heads
from .feedback import ExerciseError

HINT = ("inside the loop, ablated = my_ablate_head(model, layer, head) (a fresh copy of the whole "
        "model each time), then found[(layer, head)] = exact_match(ablated, pairs), with the "
        "held-out pairs of the model's own task")


def census(model, pairs: list[Pair], cumulative: bool = False) -> dict[tuple[int, int], float]:
    """{(layer, head): exact match on pairs with that head switched off}; cumulative: with every
    head before it switched off too (the slip of ablating one model in place)."""
    found, off = {}, []
    for layer in range(model.config.n_layers):
        for head in range(model.config.n_heads):
            off = [*off, (layer, head)] if cumulative else [(layer, head)]
            found[(layer, head)] = teacher_forced_exact_match(ablate_heads(model, off), pairs)
    return found


# the Solution block notebook 06 shows after its "Your turn" (tests/test_head_census.py runs it)
SOLUTION = """\
found = {}
for layer in range(2):
    for head in range(4):
        ablated = my_ablate_head(models["reverse"], layer, head)
        found[(layer, head)] = exact_match(ablated, held_out["reverse"])
minitf.course.head_census.check(found, models["reverse"], held_out["reverse"], others=(models, held_out))
sorted(found.items(), key=lambda item: item[1])   # the heads the model needs most come first"""


def solution_markdown() -> str:
    """The collapsed Solution block of 06's "Your turn", as exercises.solution_markdown writes one."""
    return f"<details><summary>Solution</summary>\n\n```python\n{SOLUTION}\n```\n\n</details>"


def diagnose(found, model, pairs: list[Pair], others=None) -> str:
    """The success line, or ExerciseError saying what is wrong with `found` (and a hint).
    `others`, the notebook's (models, held_out) dicts, lets it recognise the census of another
    task's model measured on that model's own pairs."""
    def wrong(message: str, key: str):
        return ExerciseError(f"found: {message}\nHint: {HINT}", (key,))

    if not isinstance(found, dict):
        raise wrong(f"a {type(found).__name__}, expected a dict {{(layer, head): exact match}}",
                    "not_a_dict")
    L, H = model.config.n_layers, model.config.n_heads
    keys = {(layer, head) for layer in range(L) for head in range(H)}
    if not found:
        raise wrong(f"empty: the loop body is still `pass`; it needs one entry per head, "
                    f"{len(keys)} in all", "empty")
    if set(found) != keys:
        if set(found) == {(head, layer) for layer, head in keys}:
            raise wrong("the keys are (head, layer); the key is (layer, head): layer 0 or 1 first, "
                        "then the head", "keys_swapped")
        missing, extra = sorted(keys - set(found)), sorted(set(found) - keys)
        parts = ([f"no entry for {', '.join(map(str, missing))}"] if missing else []) + \
                ([f"keys that are no head of this model: {', '.join(map(repr, extra))}"] if extra else [])
        raise wrong("; ".join(parts) + f" (the keys are (layer, head), layer 0…{L - 1}, head 0…{H - 1})",
                    "keys")
    for key, value in found.items():
        if isinstance(value, dict) and "exact_match" in value:
            raise wrong(f"found[{key}] is the whole dict of scores; store the number, "
                        "minitf.evaluate(...)['exact_match'] (or exact_match(...))", "a_dict_of_scores")
        if isinstance(value, torch.Tensor) and value.numel() == 1:
            value = value.item()
        if not isinstance(value, numbers.Real) or not 0 <= value <= 1:
            raise wrong(f"found[{key}] = {value!r}; an exact match is a fraction from 0 to 1",
                        "not_a_fraction")
    got = {k: float(v) for k, v in found.items()}
    expected = census(model, pairs)
    close = 1 / len(pairs) + 1e-9  # one pair either way: generation and teacher forcing may break a tie differently

    def same(a, b):
        return all(abs(a[k] - b[k]) <= close for k in keys)

    if same(got, expected):
        needed = sorted(expected, key=expected.get)[:2]
        return (f"✓ found agrees with the measurement for all {len(keys)} heads; switching off "
                + " or ".join(f"{l}.{h} ({expected[l, h]:.0%})" for l, h in needed)
                + " costs the most")
    whole = teacher_forced_exact_match(model, pairs)
    if all(v == 0 for v in got.values()):
        raise wrong(f"every head scores 0.0, yet without any head switched off the model gets "
                    f"{whole:.0%} of these pairs right: measured on another task's held-out pairs, "
                    "or with another task's model? (The reverse model gets no shift pair right, "
                    "with or without its heads.)", "all_zero")
    if all(abs(v - whole) <= close for v in got.values()):
        raise wrong(f"every entry is the whole model's score ({whole:.0%}): no head was switched "
                    "off; measure the model my_ablate_head returns, not the one you gave it",
                    "nothing_switched_off")
    if same(got, census(model, pairs, cumulative=True)):
        raise wrong("each entry has every head before it switched off too: switch off one head in "
                    "a fresh copy of the model each time (does your my_ablate_head change the model "
                    "it is given, or do you pass the last ablated model on?)", "cumulative")
    models, held_out = others or ({}, {})
    for task, other in models.items():
        if other is model or task not in held_out or \
                (other.config.n_layers, other.config.n_heads) != (L, H):
            continue
        if same(got, census(other, held_out[task])):
            raise wrong(f"these are the {task} model's heads, measured on its own pairs: the census "
                        f"asks for the model you were given here, the one whose held-out pairs are "
                        f"passed to the check (my_ablate_head(models[\"reverse\"], layer, head))",
                        "another_model")
    differ = [k for k in sorted(keys) if abs(got[k] - expected[k]) > close]
    shown = ", ".join(f"{l}.{h}: yours {got[l, h]:.2f}, measured {expected[l, h]:.2f}"
                      for l, h in differ[:3])
    raise wrong(f"{len(differ)} of {len(keys)} heads differ from the measurement ({shown}"
                f"{', …' if len(differ) > 3 else ''})", "values")


def check(found, model, pairs: list[Pair], others=None) -> None:
    """Print whether `found` is the measurement, or what is wrong with it (never a traceback)."""
    try:
        print(diagnose(found, model, pairs, others))
    except ExerciseError as e:
        print(e)
