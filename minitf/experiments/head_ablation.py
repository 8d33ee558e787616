"""Which heads does a model need? Switch each off in turn and measure (notebook 06).

A head can be switched off two ways: its output zeroed (`ablate_heads`), or replaced by its mean
over the output rows of the held-out pairs (`mean_ablate_heads`). Zeroing also removes the head's
average, a constant the later layers expect; the mean keeps it and removes only what the head read
from this input. Each is measured as held-out exact match, teacher-forced in one pass.

    zeroed = ablation(models, held_out)             # (task, layer, head) → exact match without it
    mean = ablation(models, held_out, mean=True)
    print_table(zeroed, mean)
"""
from __future__ import annotations

from ..core.data import make_batch
from ..core.evaluate import teacher_forced_exact_match
from ..core.heads import ablate_heads, mean_ablate_heads
from ..core.tokens import IGNORE, PAD


def _heads(model) -> list[tuple[int, int]]:
    return [(layer, head) for layer in range(model.config.n_layers) for head in range(model.config.n_heads)]


def ablation(models: dict, held_out: dict, tasks=("shift", "reverse"), mean: bool = False) -> dict:
    """{(task, layer, head): held-out exact match of the task's model without that head}, each head
    zeroed, or with mean=True replaced by its mean over the output rows of the held-out pairs."""
    found = {}
    for task in tasks:
        model, pairs = models[task], held_out[task]
        ids, targets = make_batch(pairs)
        for layer, head in _heads(model):
            off = (mean_ablate_heads(model, [(layer, head)], ids, targets != IGNORE) if mean
                   else ablate_heads(model, [(layer, head)]))
            found[task, layer, head] = teacher_forced_exact_match(off, pairs)
    return found


def print_rows(zeroed: dict, models: dict, held_out: dict) -> None:
    """One line per task: exact match with every head, then without each head ("1.3  40%")."""
    for task in dict.fromkeys(task for task, _, _ in zeroed):
        whole = teacher_forced_exact_match(models[task], held_out[task])
        print(f"{task:8s} all heads {whole:4.0%} | without one:",
              " ".join(f"{l}.{h}{e:5.0%}" for (t, l, h), e in zeroed.items() if t == task))


def print_table(zeroed: dict, mean: dict) -> None:
    """Zeroed against replaced by its mean, a row per head, shift and reverse side by side."""
    print("held-out exact match without one head:  zeroed   replaced by its mean")
    for layer, head in dict.fromkeys((l, h) for _, l, h in zeroed):
        print(f"  head {layer}.{head}   shift  {zeroed['shift', layer, head]:4.0%}  {mean['shift', layer, head]:4.0%}"
              f"      reverse  {zeroed['reverse', layer, head]:4.0%}  {mean['reverse', layer, head]:4.0%}")


def mean_over_every_row(model, pairs, head: tuple[int, int]) -> float:
    """Exact match with `head` replaced by its mean over every row of the pairs, input rows too (not
    only the output rows it serves): the mean depends on the rows averaged."""
    ids = make_batch(pairs).ids
    return teacher_forced_exact_match(mean_ablate_heads(model, [head], ids, ids != PAD), pairs)
