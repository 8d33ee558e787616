"""The Explorer's picture: what a stored notebook shows without a kernel. A matplotlib summary of the
followed position (the bytes and their embedding rows, every head's weights, layer 0's FFN
hidden units, the top next bytes), laid out in inches so the same input always draws the same
picture."""
from __future__ import annotations

import functools
import math

import numpy as np
import torch

from .explorer_model import TOP, model_summary
from .trace import Trace

PT = 9                 # the smallest font in the picture: 9 pt is 14 px at the notebooks' 110 dpi
NUMBERS_UP_TO = 8      # an attention panel writes its weights in its cells up to T = 8 ...
HEADS_WIDTH = 7.0      # ... if a layer's heads then fit in this many inches (0.42 inch a cell)
FRAME = "tab:red"      # the frame around the followed position, in every panel
LEFT, GAP = 1.3, 0.12  # inches: room for the row labels; between the heads of a layer
BAR = 0.13             # inches: the width of a colorbar


def picture(tr: Trace, t: int, caption: str):
    """A summary of the explorer at position t, as a matplotlib Figure: (a) the bytes and their
    embedding rows, (b) every head's attention weights, (c) layer 0's FFN hidden units at t,
    (d) the top next bytes after t. Bytes are labelled as heatmaps.byte_labels shows them."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    from .heatmaps import byte_labels

    labels = [_safe(b) for b in byte_labels(tr.ids)]
    at = f"t={t} '{labels[t]}'"
    sheet = _Sheet()
    sheet.text(caption, 0.27, weight="bold")
    nxt = _safe(byte_labels([tr.next_byte(t)])[0])
    sheet.text(f"input {''.join(labels)} ({len(labels)} bytes), following position {at}; "
               f"greedy next byte '{nxt}'", 0.22, fontsize=PT)
    sheet.text(model_summary(tr.config), 0.3, fontsize=PT)
    keys = [Line2D([], [], color=FRAME, lw=2.2, label=f"frame: the followed position {at}")]
    if tr.layers[0].mask is not None:
        keys.append(Patch(facecolor="white", edgecolor="0.55", hatch="///",
                          label="hatched: masked (a later position), weight 0"))
    sheet.keys(keys, 0.4)
    _embedding_section(sheet, tr, t, labels)
    _attention_section(sheet, tr, t, labels)
    has_ffn = tr.layers[0].ffn_pre is not None  # a model built with ffn=False has none
    if has_ffn:
        _ffn_section(sheet, tr, t, at)
    _next_byte_section(sheet, tr, t, at, "(d)" if has_ffn else "(c)")
    return sheet.figure()


def _embedding_section(sheet, tr: Trace, t: int, labels: list[str]) -> None:
    """(a) one row per position: its byte, its id, and the embedding row E[id]."""
    E = tr.embedding.numpy()  # (T, C)
    T, C = E.shape
    written = C <= 12 and T <= 16  # numbers in the cells
    cell_w = 0.6 if written else max(0.08, min(0.2, 5.4 / C))
    width, height = C * cell_w, T * (0.32 if written else 0.22)
    style = _diverging(E)
    sheet.text(f"(a) the bytes and their embedding rows E[id]: {C} numbers per byte", 0.3)

    def draw(ax):
        ax.imshow(E, aspect="auto", **style)
        if written:
            _cells(ax, E, ".2f", _ink_on_diverging(style["vmax"]))
        ax.set_yticks(range(T), [f"{j}: {label}  id {b}"
                                 for j, (label, b) in enumerate(zip(labels, tr.ids))])
        columns = _ticks(C, width)
        ax.set_xticks(columns, [str(d) for d in columns])
        ax.set_xlabel("dimension of the embedding row", fontsize=PT)
        ax.tick_params(length=0, pad=2, labelsize=PT)
        _frame(ax, -0.5, t - 0.5, C, 1)

    sheet.panel(LEFT, width, height, draw)
    sheet.colorbar(LEFT + width + 0.15, max(height, 0.65), style, "value")
    sheet.y += max(height, 0.65) + 0.5


def _attention_section(sheet, tr: Trace, t: int, labels: list[str]) -> None:
    """(b) one row of heads per layer, each head's (T, T) weights; masked cells hatched."""
    from matplotlib import colormaps

    T, H = len(labels), tr.config.n_heads
    written = T <= NUMBERS_UP_TO and H * 0.42 * T <= HEADS_WIDTH
    size = max(1.45, 0.42 * T) if written else max(1.45, min(3.0, 6.0 / H))  # inches per panel
    ticks = _ticks(T, size)
    style = {"cmap": colormaps["viridis"].with_extremes(bad="white"), "vmin": 0, "vmax": 1}
    sheet.text("(b) the attention weights of each head: row t attends to column j; each row "
               "sums to 1", 0.36)
    first = sheet.y
    for l, layer in enumerate(tr.layers):
        for h in range(H):
            w = layer.weights[h].numpy().copy()  # (T, T)
            if layer.mask is not None:
                w[layer.mask.numpy()] = float("nan")  # drawn white, then hatched

            def draw(ax, w=w, l=l, h=h, mask=layer.mask):
                ax.imshow(w, **style)
                if written:
                    _cells(ax, w, ".2f", lambda v: "white" if v < 0.55 else "black")
                if mask is not None:
                    _hatch(ax, mask)
                ax.set_xticks(ticks, [labels[j] for j in ticks])
                ax.set_yticks(ticks, [f"{j} {labels[j]}" for j in ticks] if h == 0 else [])
                ax.tick_params(length=0, pad=2, labelsize=PT)
                ax.set_title(f"layer {l} · head {h}", fontsize=PT + 1, pad=4)
                _frame(ax, -0.5, t - 0.5, T, 1)

            sheet.panel(LEFT + h * (size + GAP), size, size, draw)
        sheet.y += size + (0.6 if l < len(tr.layers) - 1 else 0)
    height, sheet.y = sheet.y - first, first
    sheet.colorbar(LEFT + H * (size + GAP) + 0.05, height, style, "attention weight")
    sheet.y += height + 0.6


def _ffn_section(sheet, tr: Trace, t: int, at: str) -> None:
    """(c) layer 0's FFN hidden units at t before and after the activation: numbers in a heatmap
    for a few units, lines for many."""
    layer, act = tr.layers[0], tr.config.activation
    both = torch.stack([layer.ffn_pre[t], layer.ffn_hidden[t]]).numpy()  # (2, F)
    F = both.shape[1]
    sheet.text(f"(c) layer 0 · feed-forward at {at}: the {F} hidden units before and after {act}",
               0.3)
    if F <= 12:
        style = _diverging(both)

        def draw(ax):
            ax.imshow(both, aspect="auto", **style)
            _cells(ax, both, ".2f", _ink_on_diverging(style["vmax"]))
            ax.set_yticks([0, 1], [f"before {act}", f"after {act}"])
            ax.set_xticks(range(F), [str(u) for u in range(F)])
            ax.set_xlabel("hidden unit", fontsize=PT)
            ax.tick_params(length=0, pad=2, labelsize=PT)

        width, height = F * 0.6, 0.8
        sheet.panel(LEFT, width, height, draw)
        sheet.colorbar(LEFT + width + 0.15, height, style, "value")
    else:
        def draw(ax):
            # one line per unit: vlines draws them as one collection (bars would be F patches)
            lw = min(4.0, 0.6 * width * 72 / F)  # points
            ax.vlines(range(F), 0, both[0], color="0.7", lw=lw, label=f"before {act}")
            ax.vlines(range(F), 0, both[1], color="tab:red", lw=lw, label=f"after {act}")
            ax.axhline(0, color="0.3", lw=0.8)
            ax.set_xlim(-0.7, F - 0.3)
            ax.set_xlabel("hidden unit", fontsize=PT)
            ax.set_ylabel("value", fontsize=PT)
            ax.tick_params(labelsize=PT)
            ax.legend(fontsize=PT, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)

        width, height = 5.0, 1.5
        sheet.panel(LEFT, width, height, draw)
        sheet.width = max(sheet.width, LEFT + width + 1.6)  # the legend on the right
    sheet.y += height + 0.5


def _next_byte_section(sheet, tr: Trace, t: int, at: str, letter: str = "(d)") -> None:
    """(d), or (c) without an FFN section: the TOP most likely next bytes after t, as bars."""
    from .heatmaps import byte_labels

    top = tr.probs[t].topk(TOP)
    p, ids = top.values.numpy(), top.indices.tolist()
    sheet.text(f"{letter} the next byte after {at}: the top {TOP} of 256 probabilities", 0.3)

    def draw(ax):
        rows = range(TOP)[::-1]  # the most likely byte on top
        ax.barh(rows, p, color="tab:blue", height=0.7)
        for r, v in zip(rows, p):
            ax.text(v + 0.01, r, "<0.001" if v < 0.0005 else f"{v:.3f}" if v < 0.01 else f"{v:.2f}",
                    va="center", fontsize=PT)
        ax.set_yticks(rows, [f"{_safe(byte_labels([b])[0])}  ({b})" for b in ids])
        ax.set_xlim(0, 1.15)
        ax.set_xticks([0, 0.25, 0.5, 0.75, 1])
        ax.set_xlabel("probability", fontsize=PT)
        ax.tick_params(labelsize=PT)
        ax.spines[["top", "right"]].set_visible(False)

    sheet.panel(LEFT, 3.6, TOP * 0.24, draw)
    sheet.y += TOP * 0.24 + 0.5


def error_picture(message: str):
    """A one-line figure saying why there is no trace to draw (the input cannot be traced)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 0.6))
    fig.text(0.02, 0.5, _safe(message), va="center", fontsize=PT + 1)
    return fig


def _safe(text: str) -> str:
    """Text for matplotlib: a pair of `$` would start mathtext."""
    return text.replace("$", r"\$")


TEXT_WIDTH = 7.0 - 0.25  # inches: the narrowest picture (`_Sheet.figure`'s min_width) less its margins
LINE_SPACING = 1.25      # of the font size, between the lines of a broken text


@functools.lru_cache(maxsize=4096)
def _text_width(text: str, fontsize: float, weight: str = "normal") -> float:
    """How wide `text` is drawn, in inches (measured on the glyphs' outlines, no figure needed;
    remembered: every picture of a model measures its summary again)."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextPath

    if not text.strip():
        return 0.0
    left, right = _x_extent(TextPath((0, 0), text, size=fontsize, prop=FontProperties(weight=weight)))
    return (right - left) / 72


def _x_extent(path) -> tuple[float, float]:
    """The leftmost and rightmost x of a path's outline: its points and its curves' extremes.
    What `path.get_extents()` gives (to its last bit or so: it sums with numpy), some 30 times
    faster for a TrueType font's quadratic curves: it builds a numpy object for each of a line's
    ~700 curves, and a picture measures ~80 lines."""
    from matplotlib.path import Path

    if Path.CURVE4 in path.codes:  # a cubic outline (CFF fonts): matplotlib's own
        extents = path.get_extents()
        return extents.x0, extents.x1
    x, codes = path.vertices[:, 0].tolist(), path.codes.tolist()
    xs, i, last = [], 0, 0.0
    while i < len(codes):
        if codes[i] == Path.CURVE3:  # one extreme where the curve's derivative is 0
            p0, p1, p2 = last, x[i], x[i + 1]
            den = p0 - 2 * p1 + p2
            t = (p0 - p1) / den if den else -1.0
            if 0 < t < 1:
                xs.append((1 - t) ** 2 * p0 + 2 * t * (1 - t) * p1 + t * t * p2)
            last, i = p2, i + 2
        elif codes[i] in (Path.MOVETO, Path.LINETO):
            last, i = x[i], i + 1
        else:  # CLOSEPOLY, STOP: a vertex that is no point of the outline
            i += 1
            continue
        xs.append(last)
    return min(xs), max(xs)


def _wrap(text: str, fontsize: float, weight: str, width: float) -> list[str]:
    """`text` broken into lines at most `width` inches wide: between the " · " parts of a
    summary first, between words where a part alone is too wide."""
    lines: list[str] = []
    for word in _pieces(text):
        joined = lines[-1] + word if lines else word.lstrip()
        if lines and _text_width(joined, fontsize, weight) <= width:
            lines[-1] = joined
        else:
            lines.append(word.lstrip(" ·").lstrip())
    return lines or [text]


def _pieces(text: str) -> list[str]:
    """The places a line may break: before each " · ", and between words inside a part that is
    too long to keep whole (kept with their leading separators, so joining them restores text)."""
    parts = text.split(" · ")
    pieces = [parts[0]] + [" · " + part for part in parts[1:]]
    out = []
    for piece in pieces:
        if len(piece) <= 60:
            out.append(piece)
        else:
            words = piece.split(" ")
            out += [words[0]] + [" " + w for w in words[1:]]
    return out


class _Sheet:
    """Panels, colorbars and lines of text placed in inches from the top of the picture, drawn
    once its height is known.

    Fixed positions instead of a layout engine: a dozen panels stay quick to draw, and the same
    input always gives the same picture.
    """

    def __init__(self):
        self.y = 0.15      # inches from the top: where the next row starts
        self.width = 0.0   # the right edge of the widest row so far, in inches
        self.items = []    # (draw(fig, W, H)) once the figure exists

    def text(self, text: str, height: float, **style) -> None:
        """A line of text (`$` already escaped) at the left edge; the next row starts `height`
        inches lower. A line longer than the narrowest picture is broken (after a " · " where it
        can), each extra line adding its height: nothing is cut off at the right edge."""
        y, style = self.y, {"fontsize": PT + 1, **style}
        lines = _wrap(text, style["fontsize"], style.get("weight", "normal"), TEXT_WIDTH)
        self.items.append(lambda fig, W, H: fig.text(0.1 / W, 1 - y / H, "\n".join(lines), va="top",
                                                     ha="left", linespacing=LINE_SPACING, **style))
        self.y += height + (len(lines) - 1) * LINE_SPACING * style["fontsize"] / 72

    def keys(self, handles, height: float) -> None:
        """A one-line legend for the colours and marks every panel uses."""
        y = self.y
        self.items.append(lambda fig, W, H: fig.legend(
            handles=handles, loc="upper left", bbox_to_anchor=(0.1 / W, 1 - y / H),
            ncol=len(handles), fontsize=PT, frameon=False, borderaxespad=0, handlelength=1.6))
        self.y += height

    def panel(self, x: float, w: float, h: float, draw) -> None:
        """Axes of w × h inches at x, on the current row; draw(ax) fills them."""
        y = self.y
        self.items.append(lambda fig, W, H: draw(fig.add_axes((x / W, 1 - (y + h) / H, w / W,
                                                               h / H))))
        self.width = max(self.width, x + w)

    def colorbar(self, x: float, h: float, style: dict, label: str) -> None:
        """The key of an imshow `style` (cmap, vmin, vmax), h inches high."""
        from matplotlib.cm import ScalarMappable
        from matplotlib.colors import Normalize

        def draw(ax):
            scale = ScalarMappable(Normalize(style["vmin"], style["vmax"]), style["cmap"])
            bar = ax.figure.colorbar(scale, cax=ax)
            bar.set_label(label, fontsize=PT)
            bar.ax.tick_params(labelsize=PT)

        self.panel(x, BAR, h, draw)
        self.width = max(self.width, x + 0.8)  # the bar, its ticks and its label

    def figure(self, min_width: float = 7.0):
        from matplotlib.figure import Figure

        W, H = max(min_width, self.width + 0.25), self.y + 0.1
        fig = Figure(figsize=(W, H))
        for draw in self.items:
            draw(fig, W, H)
        return fig


def _cells(ax, values, fmt: str, ink) -> None:
    """Write each finite value of a (rows, cols) array in its cell, in the colour ink(v)."""
    for (i, j), v in np.ndenumerate(values):
        if np.isfinite(v):
            ax.text(j, i, format(v, fmt), ha="center", va="center", fontsize=PT, color=ink(v))


def _frame(ax, x0: float, y0: float, w: float, h: float) -> None:
    """The followed position's frame, drawn on the cell borders (never through a number)."""
    from matplotlib.patches import Rectangle

    ax.add_patch(Rectangle((x0, y0), w, h, fill=False, edgecolor=FRAME, lw=2.2, clip_on=False,
                           zorder=3))


def _hatch(ax, mask) -> None:
    """Hatch the masked cells: one patch for all of them, quick to draw even for a long input."""
    from matplotlib.patches import PathPatch
    from matplotlib.path import Path
    from matplotlib.transforms import Affine2D

    cells = [Path.unit_rectangle().transformed(Affine2D().translate(j - 0.5, i - 0.5))
             for i, j in mask.nonzero().tolist()]
    if cells:
        # add_artist: the image already set the limits; add_patch would walk every cell again
        ax.add_artist(PathPatch(Path.make_compound_path(*cells), facecolor="none",
                                edgecolor="0.55", hatch="///", lw=0))


def _ticks(n: int, room: float) -> list[int]:
    """Which of n ticks to label so that 9 pt labels fit in `room` inches."""
    step = max(1, math.ceil(n * 0.17 / room))
    return list(range(0, n, step))


def _diverging(values) -> dict:
    """imshow arguments for signed numbers: blue below 0, white at 0, red above."""
    vmax = max(float(abs(values).max()), 1e-9)
    return {"cmap": "RdBu_r", "vmin": -vmax, "vmax": vmax}


def _ink_on_diverging(vmax: float):
    return lambda v: "white" if abs(v) > 0.65 * vmax else "black"
