"""Teaching pictures the notebooks draw from minitf's own functions, so they cannot drift.

`draw_batch`: a training batch as two grids of bytes, what the model reads and what it must
predict, each square coloured by its role, so the output-only loss can be seen at a glance.
`plot_training`: the curves a checkpoint recorded while it trained, beside baselines.
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
    ax.legend(loc="lower left", fontsize=9)  # below the shaded label, clear of the falling curves
    return fig


def plot_training(metadata: dict, baselines: dict | None = None, title: str | None = None,
                  legend_below: bool = False):
    """The curves `python -m minitf train` stores in a checkpoint's metadata: the training loss (the
    mean of every `loss_curve_every` steps) and the validation loss, in bits per byte for a text
    model (its validation entries have `bits_per_byte`), else in nats; each baseline of `baselines`
    (a dict label → nats, or `text_baselines(...)`) as a dashed line. A matplotlib Figure.
    `legend_below` moves the legend under the axes, for curves that fill the upper right."""
    import math

    from matplotlib.figure import Figure

    val = metadata["val_curve"]
    bits = "bits_per_byte" in val[0]
    unit, scale = ("bits per byte", 1 / math.log(2)) if bits else ("loss (nats)", 1.0)
    lines = list(baselines.items()) if baselines is not None else []  # a dict or TextBaselines
    every = metadata["loss_curve_every"]
    fig = Figure(figsize=(7, 3.4))
    ax = fig.subplots()
    ax.plot([every * (i + 0.5) for i in range(len(metadata["loss_curve"]))],
            [loss * scale for loss in metadata["loss_curve"]], lw=1, label=f"training (mean of {every} steps)")
    ax.plot([v["step"] for v in val], [v["loss"] * scale for v in val], "ko-", ms=4, label="validation")
    for (label, loss), colour in zip(lines, ("0.6", "tab:orange", "tab:red", "tab:purple")):
        ax.axhline(loss * scale, ls="--", color=colour, lw=1, label=label)
    top = max([*(loss * scale for _, loss in lines), *(v["loss"] * scale for v in val)])
    ax.set(xlabel="step", ylabel=unit, ylim=(None, 1.06 * top), title=title or "learning curve")
    if legend_below:
        ax.legend(fontsize=9, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=2)
    else:
        ax.legend(fontsize=9, loc="upper right")
    return fig


def plot_bytes_read(bits, spans, baseline: tuple[str, float] | None = None, title: str | None = None):
    """A text model's loss against how many bytes it has read (`core.text.loss_by_position`, here
    in bits per byte: entry t has read t + 1 bytes), on a log axis: each position as a dot, the mean
    over each span (first, last bytes read) as a bar across it, and a baseline (label, bits) as a
    dashed line. A matplotlib Figure."""
    from matplotlib.figure import Figure

    read = list(range(1, len(bits) + 1))
    fig = Figure(figsize=(7, 3.2))
    ax = fig.subplots()
    ax.plot(read, [float(b) for b in bits], "o", ms=3, color="tab:blue", alpha=0.45, label="each position")
    for i, (a, b) in enumerate(spans):
        mean = float(sum(bits[a - 1:b]) / (b - a + 1))
        ax.plot([a - 0.3 * a / 4 if a == b else a, b + 0.3 * b / 4 if a == b else b], [mean, mean],
                color="tab:blue", lw=3, solid_capstyle="butt", label="mean over a span" if i == 0 else None)
    if baseline is not None:
        ax.axhline(baseline[1], ls="--", color="tab:red", lw=1, label=baseline[0])
    ticks = [2 ** k for k in range(len(bits).bit_length()) if 2 ** k <= len(bits)]
    ax.set_xscale("log")
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.minorticks_off()
    ax.set(xlabel="bytes read (the byte to predict is the next one)", ylabel="bits per byte",
           title=title or "Loss against how much the model has read")
    ax.legend(fontsize=9, loc="center right")
    return fig


def plot_missing_half(exact, naive, losses: dict):
    """Origami without the 1/k (notebook 07, section 3). Left: the size (RMS) of each layer's
    attention output, FFN output and the stream leaving the block, in two `trace`s of the same
    sequence: the exact ×2 widening and the recipe of copies, every ½ left out. Right: the held-out
    loss with each part's weights doubled (`losses`: part → loss; "none" is the exact widening,
    "all" the recipe of copies). A matplotlib Figure."""
    from matplotlib.figure import Figure

    def rms(t):
        return t.pow(2).mean().sqrt().item()

    labels, sizes = [], {"exact ×2 (with ½)": [], "copies without ½": []}
    for l, (a, b) in enumerate(zip(exact.layers, naive.layers)):
        for name, part in (("attention", "attn_out"), ("FFN", "ffn_out"), ("stream", "output")):
            labels.append(f"{name}\nlayer {l}")
            sizes["exact ×2 (with ½)"].append(rms(getattr(a, part)))
            sizes["copies without ½"].append(rms(getattr(b, part)))
    fig = Figure(figsize=(7.6, 3.6), layout="constrained")
    left, right = fig.subplots(1, 2, width_ratios=[1.6, 1])
    for i, (name, ys) in enumerate(sizes.items()):
        left.bar([x + (i - 0.5) * 0.38 for x in range(len(labels))], ys, width=0.38, label=name,
                 color=["tab:blue", "tab:orange"][i])
    left.set_xticks(range(len(labels)), labels, fontsize=9)
    left.set_yscale("log")
    left.set_ylabel("size (RMS, log scale)", fontsize=9)
    left.set_title("Branches grow, LayerNorm resets the stream", fontsize=10)
    left.set_xlabel("attention and FFN outputs; the stream leaving each block", fontsize=9)
    left.tick_params(labelsize=9)
    left.legend(fontsize=9)
    parts = [p for p in losses if p != "none"]
    right.barh(range(len(parts)), [losses[p] for p in parts],
               color=["tab:red" if p == "all" else "tab:orange" for p in parts])
    right.axvline(losses["none"], color="tab:blue", ls="--", lw=2, label=f"exact ×2: {losses['none']:.2f}")
    right.set_yticks(range(len(parts)), [f"{p} doubled" for p in parts], fontsize=9)
    right.invert_yaxis()
    right.set_xlim(0.85 * losses["none"], None)
    right.set_xlabel("held-out loss (nats)", fontsize=9)
    right.set_title("What each missing ½ costs", fontsize=10)
    right.tick_params(labelsize=9)
    right.legend(fontsize=9, loc="lower right")
    return fig
