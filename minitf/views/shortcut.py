"""The content shortcut of shift_uniform.pt, found (notebook 05), looked at and tested (notebook 06).

The model trained on random inputs writes `Ifmp` for `Hello` and fails where a byte is doubled
(`by_repeats`). Row 8 of
`Hello⇥Ifmmp` must give the second `m`, whose source is the second `l` (column 3), and it looks at
the `o` after it instead, as if it looked by content for "the byte after an `l`". Each function here
draws or prints one step of testing that story: the row beside a model without the shortcut, one
layer-0 head patched at the `o` over many clean runs, layer 1's heads voting on two inputs, and the
same heads mean-replaced on many inputs with a doubled byte.
"""
from __future__ import annotations

import torch

from ..core.checkpoint import checkpoint_pairs
from ..core.data import Pair, make_pairs, shift_bytes
from ..core.evaluate import evaluate, teacher_forced_exact_match
from ..core.generate import generate
from ..core.heads import patch_heads
from ..core.tokens import show
from .heatmaps import attention_weights, mark_sources, mean_ablated, model_input, plot_heads

HELLO = Pair(b"Hello", b"Ifmmp")
ROW, SOURCE, AFTER = 8, 3, 4   # the row that writes the second m; the second l; the o after it
# mean-replaced heads of layer 1, and what they are called
VOTERS = (([], "all heads"), ([(1, 0), (1, 1)], "without 1.0 and 1.1"), ([(1, 2)], "without 1.2"))


def plot_row(shortcut, fixed, pair: Pair = HELLO, layer: int = 1, head: int = 0):
    """Both models' head (layer, head) on the right `pair`, rings on the sources and row 8 outlined;
    prints each row 8's weight on the second l and on the o, and what each model generates. A Figure."""
    from matplotlib.patches import Rectangle

    (w_shortcut, labels), (w_fixed, _) = attention_weights(shortcut, pair), attention_weights(fixed, pair)
    fig = plot_heads([(f"shortcut model (shift_uniform.pt), layer {layer} · head {head}", w_shortcut[layer][head]),
                      (f"fixed model (shift.pt), layer {layer} · head {head}", w_fixed[layer][head])], labels, size=3.6)
    for ax in fig.axes[:2]:
        mark_sources(ax, "shift", len(pair.input), len(pair.output))
        ax.add_patch(Rectangle((-0.5, ROW - 0.5), len(labels), 1, fill=False, edgecolor="white", lw=2, ls="--",
                               label=f"row {ROW}: predicts the second m"))
    fig.axes[0].legend(loc="upper right", fontsize=9, facecolor="0.35", labelcolor="white")
    for name, w in (("shortcut", w_shortcut), ("fixed", w_fixed)):
        print(f"{name:8s} row {ROW}: weight on the second l {w[layer][head, ROW, SOURCE]:.2f}, "
              f"on the o after it {w[layer][head, ROW, AFTER]:.2f}")
    print("generated: shortcut", show(generate(shortcut, pair.input)), "| fixed", show(generate(fixed, pair.input)))
    return fig


def p_m(logits: torch.Tensor) -> float:
    """Row 8's probability of the right m."""
    return logits[0, ROW].softmax(-1)[ord("m")].item()


def patch_over_letters(model, pair: Pair = HELLO, letters: str = "abcdefghijkmnopqrstuvwxyz") -> dict:
    """Each layer-0 head's output at the o patched from a clean run `Hel?o`, one run per letter (every
    lowercase letter but l): prints, per head, row 8's p(m) over the runs; returns head → the list."""
    corrupted, p_after = model_input(pair), {}
    for head in range(model.config.n_heads):
        clean = [model_input((f"Hel{b}o".encode(), shift_bytes(f"Hel{b}o".encode()))) for b in letters]
        p_after[head] = [p_m(patch_heads(model, [(0, head)], ids, corrupted, positions=[AFTER])) for ids in clean]
    print(f"row {ROW}'s p(m) after the patch, over {len(letters)} clean runs Hel?o:")
    for head, ps in p_after.items():
        ps = torch.tensor(ps)
        print(f"  head 0.{head} at the o: median {ps.median():.2f}, lowest {ps.min():.2f}, highest {ps.max():.2f}")
    return p_after


def vote(model) -> None:
    """Layer 1's heads on `Hello` (row 8) and `Hello Hello` (row 14, its second m): each head's weight
    on the second l / on the o; then what the model writes for both with heads mean-replaced."""
    rows = (("Hello", ROW, attention_weights(model, HELLO)[0]),
            ("Hello Hello", 14, attention_weights(model, Pair(b"Hello Hello", b"Ifmmp!Ifmmp"))[0]))
    print("weight on the second l / on the o, per head of layer 1")
    for text, row, w in rows:
        print(f"  {text:11s} row {row:2d}:", "   ".join(f"1.{h} {w[1][h, row, SOURCE]:.2f}/{w[1][h, row, AFTER]:.2f}"
                                                    for h in range(model.config.n_heads)))
    for heads, what in VOTERS:
        without = mean_ablated(model, heads)
        print(f"{what:20s} Hello → {show(generate(without, 'Hello')):6s}"
              f"  Hello Hello → {show(generate(without, 'Hello Hello'))}")


def doubled_bytes(model, n: int = 200, seed: int = 21) -> dict[str, float]:
    """The same mean-replacements on n fresh inputs (never in the model's training) with a doubled
    byte: prints and returns each one's exact match."""
    seen = [p.input for p in checkpoint_pairs(model, n_val=0)[0]]
    pairs = [p for p in make_pairs("shift", 3000, seed=seed, exclude=seen) if doubled(p.input)][:n]
    found = {}
    for heads, what in VOTERS:
        found[what] = teacher_forced_exact_match(mean_ablated(model, heads), pairs)
        print(f"{what:20s} exact match on {len(pairs)} inputs with a doubled byte: {found[what]:.0%}")
    return found


def doubled(text: bytes) -> bool:
    """The same byte twice in a row (`ll`)."""
    return any(a == b for a, b in zip(text, text[1:]))


def by_repeats(models: dict, pairs: list[Pair]) -> None:
    """Each model's exact match on `pairs` split by how their input bytes repeat (all distinct;
    repeats, none doubled; a byte doubled), and what each writes for `Hello`."""
    groups = {"all bytes distinct": [p for p in pairs if len(set(p.input)) == len(p.input)],
              "repeats, none doubled": [p for p in pairs if len(set(p.input)) < len(p.input) and not doubled(p.input)],
              "a byte doubled (ll)": [p for p in pairs if doubled(p.input)]}
    print(f"{'':22s} {'pairs':>5s}   " + "   ".join(models))
    for name, group in groups.items():
        print(f"{name:22s} {len(group):5d}   " + "   ".join(
            f"{evaluate(model, group)['exact_match']:{len(label)}.0%}" for label, model in models.items()))
    print("Hello → " + ", ".join(f"{show(generate(model, b'Hello'))} ({label})" for label, model in models.items()))
