"""Teaching pictures the notebooks draw from minitf's own functions, so they cannot drift.

`draw_batch`: a training batch as two grids of bytes, what the model reads and what it must
predict, each square coloured by its role, so the output-only loss can be seen at a glance.
"""
from __future__ import annotations

from ..core.data import make_batch, sequence
from ..core.tokens import IGNORE, byte_label

# one colour per role, named in the figure's key
READ_COLOURS = {"input": "#d9d9d9", "TAB": "#6baed6", "output": "#fdae6b", "pad": "#ffffff"}
SMALL_GLYPHS = {"⇥", "⏎", "␣"}  # drawn small by the font: enlarged to read like letters
TARGET_COLOURS = {"counted in the loss": "#74c476", "IGNORE (−100): not counted": "#f0f0f0"}


def batch_roles(pairs) -> list[list[str]]:
    """The role of every position of make_batch(pairs)'s ids: input, TAB, output or pad."""
    ids, _ = make_batch(pairs)
    roles = []
    for pair in pairs:
        n, read = len(pair.input), len(sequence(pair)) - 1  # the last byte (EOS) is never read
        row = ["input"] * n + ["TAB"] + ["output"] * (read - n - 1)
        roles.append(row + ["pad"] * (ids.size(1) - read))
    return roles


def draw_batch(pairs, cell: float = 0.62):
    """make_batch(pairs) as a picture: top, the ids the model reads (coloured by role); bottom, the
    targets (green where the loss counts them). `cell` is the side of one square in inches."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch, Rectangle

    ids, targets = make_batch(pairs)  # (B, T) each
    roles = batch_roles(pairs)
    B, T = ids.shape
    width, height = T * cell + 3.6, 2 * B * cell + 1.6
    fig = Figure(figsize=(width, height))
    fig.subplots_adjust(left=0.75 / width, right=1 - 2.85 / width, bottom=0.65 / height,
                        top=1 - 0.35 / height, hspace=0.6 / (B * cell))
    top, bottom = fig.subplots(2, 1)
    panels = ((top, "ids: what the model reads", ids,
               lambda b, t: READ_COLOURS[roles[b][t]], READ_COLOURS),
              (bottom, "targets: what it must predict at each position", targets,
               lambda b, t: TARGET_COLOURS["counted in the loss" if targets[b, t] != IGNORE
                                           else "IGNORE (−100): not counted"], TARGET_COLOURS))
    for ax, title, values, colour, key in panels:
        for b in range(B):
            for t in range(T):
                ax.add_patch(Rectangle((t - 0.5, b - 0.5), 1, 1, facecolor=colour(b, t),
                                       edgecolor="0.55", lw=0.8))
                v = int(values[b, t])
                if v == IGNORE:
                    label = "·"
                elif roles[b][t] == "pad" and values is ids:
                    label = "pad"
                else:
                    label = byte_label(v)
                size = 9 if label == "pad" else 22 if label in SMALL_GLYPHS else 15
                ax.text(t, b, label, ha="center", va="center", family="monospace", fontsize=size)
        ax.set(xlim=(-0.5, T - 0.5), ylim=(B - 0.5, -0.5), aspect="equal")
        ax.set_xticks(range(T), [str(t) for t in range(T)], fontsize=10)
        ax.set_yticks(range(B), [f"pair {b}" for b in range(B)], fontsize=10)
        ax.tick_params(length=0)
        ax.set_title(title, fontsize=11, loc="left")
        ax.legend(handles=[Patch(facecolor=c, edgecolor="0.55", label=name) for name, c in key.items()],
                  loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=10, frameon=False)
    bottom.set_xlabel("position t  (the target at t is the byte at t + 1)", fontsize=10)
    return fig


def plot_exact_by_length(rows: dict, trained_up_to: int | None = None):
    """Exact match against input length, one line per model ({name: {length: share}}, as
    `minitf.exact_match_by_length` gives it), with the lengths seen in training shaded: a model
    that learned a rule holds beyond them, one that learned the lengths falls off."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.0, 3.2), layout="constrained")
    ax = fig.subplots()
    if trained_up_to:
        ax.axvspan(0.5, trained_up_to + 0.5, color="0.92", lw=0)
        ax.text(trained_up_to / 2 + 0.5, 50, "lengths the trained\nmodels saw", ha="center",
                va="center", fontsize=9, color="0.35")
    styles = ["o-", "s--", "^:", "d-."]
    for (name, by_length), style in zip(rows.items(), styles):
        lengths = sorted(by_length)
        ax.plot(lengths, [100 * by_length[n] for n in lengths], style, ms=4, label=name)
    ax.set(xlabel="input length (bytes)", ylabel="exact match (%)", ylim=(-5, 105))
    ax.legend(loc="center right", fontsize=9)
    return fig
