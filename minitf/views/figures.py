"""Teaching pictures the notebooks draw from minitf's own functions, so they cannot drift.

`draw_batch`: a training batch as two grids of bytes, what the model reads and what it must
predict, each square coloured by its role, so the output-only loss can be seen at a glance.
`plot_training`: the curves a checkpoint recorded while it trained, beside baselines.
"""
from __future__ import annotations

from ..core.attention import attention, causal_mask
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
    # curves often coincide (every model at 100 % on the lengths it saw): each later one is drawn
    # thinner and with smaller open marks than the one before, rings inside rings, so a curve
    # under another still shows
    widths, marks = [3.4, 2.2, 1.4, 0.9], [11, 8, 5.5, 3.5]
    for i, ((name, by_length), style) in enumerate(zip(rows.items(), styles)):
        lengths = sorted(by_length)
        ax.plot(lengths, [100 * by_length[n] for n in lengths], style, lw=widths[i], ms=marks[i],
                mfc="none", mew=1.5, label=name)
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


def plot_logged(metrics: dict, names=("train_loss", "val_loss")):
    """Logged losses against the step they were logged at, one marked line per metric and its
    count of points in the legend (a logger that writes every 50 steps draws 4 points of 200).
    metrics: name → [(step, value)], as minitf.lightning.logged_metrics reads them. A Figure."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 3))
    ax = fig.subplots()
    for name, marker in zip(names, ("s-", "o-", "^-", "v-")):
        steps, values = zip(*metrics[name])
        gaps = sorted({b - a for a, b in zip(steps, steps[1:])})
        every = f", logged every {gaps[0]} steps" if len(gaps) == 1 else ""
        ax.plot(steps, values, marker, label=f"{name} ({len(steps)} points{every})")
    ax.set(xlabel="step", ylabel="loss (nats)")
    ax.legend(fontsize=9)
    return fig


# ---- Notebook 04's activations

def plot_activations(names=("relu", "gelu", "silu"), lo: float = -4.0, hi: float = 4.0):
    """Each activation φ (left) and its slope dφ/dx (right) on [lo, hi], from torch's own functions:
    the smooth ones dip below 0 and pass a gradient for negative inputs, ReLU does neither. A
    matplotlib Figure."""
    import torch
    import torch.nn.functional as F
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 3.6), layout="constrained")
    axes = fig.subplots(1, 2)
    grid = torch.linspace(lo, hi, 161)
    for k, name in enumerate(names):
        g = grid.clone().requires_grad_()
        y = getattr(F, name)(g)
        slope, = torch.autograd.grad(y.sum(), g)
        label = {"relu": "ReLU", "gelu": "GELU", "silu": "SiLU"}.get(name, name)
        axes[0].plot(grid, y.detach(), color=f"C{k}", label=label)
        axes[1].plot(grid, slope, color=f"C{k}", label=label)
    for ax, what in zip(axes, ("φ(x)", "slope dφ/dx")):
        ax.axhline(0, color="grey", lw=0.6)
        ax.axvline(0, color="grey", lw=0.6)
        ax.set(xlabel="x", ylabel=what, title=what)
        ax.legend(loc="upper left")
    axes[0].set_ylim(-0.6, 4)
    axes[1].set_ylim(-0.2, 1.2)
    return fig


# ---- Notebook 03's two pictures of attention, drawn by one call each

def _matrix_panel(ax, M, title, cmap, vmin, vmax, text=None, followed: int = 1):
    """A T×T heatmap with its numbers (or `text`) in the cells; row `followed` outlined."""
    from matplotlib.patches import Rectangle

    T = M.shape[0]
    im = ax.imshow(M, cmap=cmap, vmin=vmin, vmax=vmax)
    for i in range(T):
        for j in range(T):
            x = float(M[i, j])
            r, g, b, _ = im.cmap(im.norm(x))  # white text on dark cells
            ax.text(j, i, text[i][j] if text else f"{x:.2f}", ha="center", va="center", fontsize=11,
                    color="white" if 0.3 * r + 0.6 * g + 0.1 * b < 0.5 else "black")
    ax.add_patch(Rectangle((-0.5, followed - 0.5), T, 1, fill=False, ec="darkorange", lw=3))
    ax.set(title=title, xlabel="key position j", ylabel="query position i", xticks=range(T), yticks=range(T))
    return im


def plot_attention_steps(Q, K, V, followed: int = 1):
    """The four steps of causal attention for queries Q, keys K and values V, (T, d_k) each, numbers
    in the cells: ① the scaled scores, ② the causal mask, ③ softmax without it, ④ softmax with it
    (minitf.attention's weights); the followed query's row outlined. A matplotlib Figure."""
    from matplotlib.colors import ListedColormap
    from matplotlib.figure import Figure

    scores = Q @ K.T / Q.size(-1) ** 0.5
    mask = causal_mask(len(Q))
    weights_open, weights = (attention(Q[None, None], K[None, None], V[None, None], m)[1][0, 0] for m in (None, mask))

    fig = Figure(figsize=(8.5, 7), layout="constrained")
    axes = fig.subplots(2, 2)
    im = _matrix_panel(axes[0, 0], scores, "① scores q·k / √d_k", "RdBu_r", -1.2, 1.2, followed=followed)
    fig.colorbar(im, ax=axes[0, 0], label="score (0 = no agreement)")
    hidden = [["hidden" if m else "visible" for m in row] for row in mask.tolist()]
    im = _matrix_panel(axes[0, 1], mask.double(), "② causal mask", ListedColormap(["#e8f1e4", "#555555"]),
                       0, 1, text=hidden, followed=followed)
    bar = fig.colorbar(im, ax=axes[0, 1], ticks=[0.25, 0.75])
    bar.ax.set_yticklabels(["False:\nmay look", "True:\nhidden"])
    for ax, M, title in ((axes[1, 0], weights_open, "③ softmax without the mask"),
                         (axes[1, 1], weights, "④ softmax with the mask (−∞ → 0)")):
        im = _matrix_panel(ax, M, title, "Blues", 0, 1, followed=followed)
        fig.colorbar(im, ax=ax, label="attention weight")
    return fig


def draw_attention_flow(config, B: int = 1, T: int = 5):
    """Boxes and arrows: the shapes of x, q/k/v, the heads, the weights and the output of one
    multi-head attention with `config`'s sizes. A matplotlib Figure."""
    from matplotlib.figure import Figure
    from matplotlib.patches import FancyBboxPatch

    C, H, hd = config.d_model, config.n_heads, config.head_dim
    fig = Figure(figsize=(9, 6.4))
    ax = fig.subplots()
    ax.set(xlim=(-0.6, 9.6), ylim=(-0.6, 10.4))
    ax.axis("off")

    def box(x, y, text, color, w=2.3):
        ax.add_patch(FancyBboxPatch((x - w / 2, y - 0.47), w, 0.94, boxstyle="round,pad=0.05",
                                    fc=color, ec="black", lw=1))
        ax.text(x, y, text, ha="center", va="center", fontsize=10)

    def arrow(x0, y0, x1, y1, label="", dx=0.12):
        ax.annotate("", (x1, y1 + 0.53), (x0, y0 - 0.53), arrowprops=dict(arrowstyle="->", lw=1.3))
        if label:
            ax.text((x0 + x1) / 2 + dx, (y0 + y1) / 2, label, fontsize=9, color="#333333", va="center")

    def shape(y, text):  # the symbolic shape of a row, in the left margin
        ax.text(-0.5, y, text, fontsize=9, color="#666666", style="italic", va="center")

    cols = {"q": 2.6, "k": 5.0, "v": 7.4}
    box(5.0, 9.8, f"x  ({B}, {T}, {C})", "#dddddd", w=2.3)
    shape(9.8, "(B, T, C)")
    for name, x0 in cols.items():
        arrow(5.0, 9.8, x0, 8.4)
        box(x0, 8.4, f"{name}  ({B}, {T}, {C})", "#cfe2f3", w=2.1)
        arrow(x0, 8.4, x0, 7.0, "view" if name == "v" else "")
        box(x0, 7.0, f"({B}, {T}, {H}, {hd})", "#cfe2f3", w=2.1)
        arrow(x0, 7.0, x0, 5.6, "transpose" if name == "v" else "")
        box(x0, 5.6, f"{name}  ({B}, {H}, {T}, {hd})", "#fce5cd", w=2.1)
    ax.text(6.8, 9.55, "one linear layer:\n[W_Q; W_K; W_V]", fontsize=9, color="#333333", va="center")
    shape(8.4, "(B, T, C)")
    shape(7.0, "(B, T, H, hd)")
    shape(5.6, "(B, H, T, hd)")
    for name in ("q", "k"):
        arrow(cols[name], 5.6, 3.8, 4.2)
    ax.text(0.35, 4.85, "RoPE rotates\nq and k (02)", fontsize=9, color="#333333", va="center")
    box(3.8, 4.2, f"weights  ({B}, {H}, {T}, {T})\n= softmax(q kᵀ/√hd + mask)", "#f4cccc", w=3.0)
    shape(4.2, "(B, H, T, T)")
    arrow(3.8, 4.2, 5.0, 2.8)
    arrow(cols["v"], 5.6, 5.0, 2.8)
    box(5.0, 2.8, f"weights @ v  ({B}, {H}, {T}, {hd})", "#fce5cd", w=3.2)
    shape(2.8, "(B, H, T, hd)")
    arrow(5.0, 2.8, 5.0, 1.4, "transpose + reshape: heads side by side")
    box(5.0, 1.4, f"({B}, {T}, {H}·{hd}) = ({B}, {T}, {C})", "#cfe2f3", w=3.2)
    shape(1.4, "(B, T, H·hd)")
    arrow(5.0, 1.4, 5.0, 0.0, "W_O mixes the heads")
    box(5.0, 0.0, f"output  ({B}, {T}, {C})", "#dddddd", w=2.3)
    shape(0.0, "(B, T, C)")
    ax.text(8.9, 5.6, f"{H} heads,\neach its own\n({T}, {hd})\nproblem", fontsize=9, va="center")
    return fig


def draw_widen(W: torch.Tensor, k: int = 2):
    """A figure of W beside widen_weight(W, k): the k×k grid of blocks W/k, one colour scale for both
    (diverging, centred on 0) with a colorbar, every entry written in its cell."""
    from matplotlib.colors import TwoSlopeNorm
    from matplotlib.figure import Figure

    from ..core.origami import widen_weight

    W = W.detach().double()
    wide = widen_weight(W, k)
    out, inp = W.shape
    limit = max(W.abs().max().item(), 1e-12)
    norm = TwoSlopeNorm(vcenter=0.0, vmin=-limit, vmax=limit)
    cell = 0.62
    fig = Figure(figsize=(cell * (inp + k * inp) + 3.2, cell * k * out + 1.6))
    axes = fig.subplots(1, 2, gridspec_kw={"width_ratios": [inp, k * inp]})
    for ax, M, title in ((axes[0], W, f"W  ({out}×{inp})"),
                         (axes[1], wide, f"widen_weight(W, {k})  ({k * out}×{k * inp}): "
                                         f"{k}×{k} blocks of W/{k}")):
        image = ax.imshow(M.numpy(), cmap="RdBu_r", norm=norm)
        for (i, j), v in zip(((i, j) for i in range(M.shape[0]) for j in range(M.shape[1])),
                             M.flatten().tolist()):
            ax.text(j, i, f"{v:.2g}", ha="center", va="center", fontsize=10,
                    color="white" if abs(v) > 0.6 * limit else "black")
        ax.set_xticks(range(M.shape[1]))
        ax.set_yticks(range(M.shape[0]))
        ax.tick_params(labelsize=9)
        ax.set_xlabel("input feature", fontsize=10)
        ax.set_ylabel("output feature", fontsize=10)
        ax.set_title(title, fontsize=11)
    for b in range(1, k):  # the block boundaries: where one copy of x (or of Wx) ends
        axes[1].axvline(b * inp - 0.5, color="black", lw=2.5)
        axes[1].axhline(b * out - 0.5, color="black", lw=2.5)
    fig.colorbar(image, ax=list(axes), shrink=0.8, label="weight value")
    return fig


def plot_copied_layer(W, x, k: int = 2):
    """What the recipe of copies does to one layer: W x beside the output of the (k·out, k·in) grid
    filled with plain copies of W, applied to [x, …, x]. Built here, out of sight, because writing the
    right grid is notebook 07's exercise. A bar per output entry; a matplotlib Figure."""
    import torch
    from matplotlib.figure import Figure

    copies = torch.cat([torch.cat([W] * k, dim=1)] * k, dim=0)
    small, grown = (W @ x).tolist(), (copies @ torch.cat([x] * k)).tolist()
    fig = Figure(figsize=(7, 3.2), layout="constrained")
    ax = fig.subplots()
    ax.bar(range(len(small)), small, color="tab:blue", label="W x")
    ax.bar(range(len(small), len(small) + len(grown)), grown, color="tab:orange",
           label=f"copies of W ({k}×{k} grid) applied to {k} copies of x")
    for i, v in enumerate(small + grown):
        ax.annotate(f"{v:g}", (i, v), ha="center", va="bottom" if v >= 0 else "top", fontsize=9)
    ax.set_xticks(range(len(small) + len(grown)),
                  [f"W x\nentry {i}" for i in range(len(small))]
                  + [f"copy {c}\nentry {i}" for c in range(k) for i in range(len(small))], fontsize=9)
    ax.axhline(0, color="grey", lw=1)
    ax.set_ylabel("output value", fontsize=9)
    ax.margins(y=0.2)
    fig.legend(fontsize=9, loc="outside upper center", ncol=2)  # above the bars, never over them
    return fig
