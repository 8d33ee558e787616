"""The architecture diagram, drawn from a model itself so its shapes and counts cannot drift.

`draw_architecture(model)` reads every number it prints from the model: the widths from its
config, each parameter count from the module it labels (`components`). Post-norm and pre-norm
blocks are drawn in their own order, with the residual path beside the sub-layer it skips.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core.config import Config
from ..core.model import Transformer, count_parameters


@dataclass(frozen=True)
class Box:
    """One box of the diagram: what it is, a line of detail, its parameters, where it sits."""
    key: str       # "embed", "attn", "norm1", "ffn", "norm2", "final_norm", "head"
    title: str
    detail: str
    params: int
    in_block: bool  # drawn once inside the repeated layer


def _norm_name(config: Config) -> str:
    return "LayerNorm (γ, β)" if config.norm == "layer" else "RMSNorm (γ)"


def components(model: Transformer) -> list[Box]:
    """The diagram's boxes, top to bottom, each with the parameter count of the module it names.

    Boxes inside the layer carry layer 0's counts; every layer has the same shapes.
    """
    c = model.config
    block = model.blocks[0]
    C, V = c.d_model, c.vocab_size
    heads = f"{c.n_heads} heads × head_dim {c.head_dim}"
    positions = {"rope": ", RoPE on q and k", "sinusoidal": "", "none": ", no positions"}[c.positions.positional]
    attn = Box("attn", "attention", f"{heads}{positions}", count_parameters(block.attn), True)
    ffn_module = getattr(block, "ffn", None)
    ffn = None if ffn_module is None else Box(
        "ffn", "feed-forward (FFN)", f"{C} → {c.d_ff} → {C}, {c.activation}",
        count_parameters(ffn_module), True)
    residual = c.ablations.residual
    add = "add & " if residual else ""

    def norm(key):
        return Box(key, f"{add}norm", _norm_name(c), count_parameters(getattr(block, key)), True)

    if c.norm_position == "post":  # h = norm(h + f(h))
        inner = [attn, norm("norm1"), *([ffn, norm("norm2")] if ffn else [])]
    else:  # h = h + f(norm(h)): the norm comes first, the addition after
        inner = [Box("norm1", "norm", _norm_name(c), count_parameters(block.norm1), True), attn,
                 *([Box("norm2", "norm", _norm_name(c), count_parameters(block.norm2), True), ffn]
                   if ffn else [])]
    embed_detail = f"{V} × {C} table" + (" + sinusoidal positions" if c.positions.positional == "sinusoidal" else "")
    boxes = [Box("embed", "embedding", embed_detail, count_parameters(model.embed), False), *inner]
    if model.final_norm is not None:
        boxes.append(Box("final_norm", "final norm", _norm_name(c), count_parameters(model.final_norm),
                         False))
    boxes.append(Box("head", "output head", f"{C} → {V}, weight and bias", count_parameters(model.head),
                     False))
    return boxes


def draw_architecture(model: Transformer | Config | None = None, width: float = 7.6):
    """A matplotlib Figure of the model: bytes in, scores for the next byte out.

    Each box shows its parameter count; arrows show the tensor shapes between the boxes
    (B = batch, T = sequence length). Accepts a Transformer or a Config (built on the fly).
    """
    from matplotlib.figure import Figure
    from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch

    if model is None or isinstance(model, Config):
        model = Transformer(model or Config())
    c = model.config
    boxes = components(model)
    residual = c.ablations.residual
    pre = c.norm_position == "pre"

    half, gap = 0.3, 0.35                      # half a box's height; extra room around the layer
    ys, y = [], 0.0                             # centres, top to bottom: bytes, boxes, scores
    for i, b in enumerate([None, *boxes, None]):
        prev = boxes[i - 2] if i >= 2 else None
        if i > 0:
            y -= 1.0
            if b is not None and prev is not None and b.in_block != prev.in_block:
                y -= gap
            elif (b is None or prev is None) and i > 1 and (prev or b) and (prev or b).in_block:
                y -= gap
        ys.append(y)
    fig = Figure(figsize=(width, 0.62 * (-y + 1.6)), layout="constrained")
    ax = fig.subplots()
    ax.set(xlim=(0.6, 9.6), ylim=(y - 0.5, 0.5), xticks=[], yticks=[])
    ax.axis("off")
    x0, x1 = 2.5, 7.1                           # box left and right edges
    mid = (x0 + x1) / 2
    colour = {"embed": "#dbe9f6", "head": "#dbe9f6", "attn": "#fde3c8", "ffn": "#d9f0d3",
              "norm1": "#ece7f2", "norm2": "#ece7f2", "final_norm": "#ece7f2"}

    def label(x, y, text, **kw):
        ax.text(x, y, text, va="center", fontsize=kw.pop("fontsize", 10), **kw)

    def arrow(y_from, y_to, text=None, at=0.5):
        ax.add_patch(FancyArrowPatch((mid, y_from), (mid, y_to), arrowstyle="-|>",
                                     mutation_scale=12, color="0.3", lw=1.2))
        if text:  # `at`: where along the arrow the shape is written (clear of the layer's frame)
            label(mid + 0.15, y_from + at * (y_to - y_from), text, fontsize=9, color="0.25")

    stream = f"(B, T, {c.d_model})"
    label(mid, ys[0], "byte ids  (B, T)", ha="center", fontsize=11, weight="bold")
    prev_bottom = ys[0] - 0.2
    for i, b in enumerate(boxes):
        y = ys[i + 1]
        entering = b.in_block and i > 0 and not boxes[i - 1].in_block
        leaving = not b.in_block and i > 0 and boxes[i - 1].in_block
        arrow(prev_bottom, y + half, stream if i > 0 else None,
              at=0.25 if entering else 0.75 if leaving else 0.5)
        ax.add_patch(FancyBboxPatch((x0, y - half), x1 - x0, 2 * half,
                                    boxstyle="round,pad=0.02,rounding_size=0.12",
                                    fc=colour.get(b.key, "white"), ec="0.35", lw=1))
        label(x0 + 0.15, y + 0.1, b.title, weight="bold")
        label(x0 + 0.15, y - 0.15, b.detail, fontsize=9, color="0.2")
        label(x1 + 0.3, y, f"{b.params:,} params", fontsize=10)
        prev_bottom = y - half
    # the last box is the head: what leaves it is a score per byte value, not the stream
    arrow(prev_bottom, ys[-1] + 0.2, f"(B, T, {c.vocab_size})" if boxes[-1].key == "head" else stream,
          at=0.75 if boxes[-1].in_block else 0.5)
    label(mid, ys[-1], f"scores for the next byte  (B, T, {c.vocab_size})", ha="center",
          fontsize=11, weight="bold")

    # the repeated layer: a frame, its count, and the residual paths
    inside = [ys[i + 1] for i, b in enumerate(boxes) if b.in_block]
    top, bottom = inside[0] + half + gap + 0.05, inside[-1] - half - 0.2
    ax.add_patch(FancyBboxPatch((x0 - 1.3, bottom), 9.35 - (x0 - 1.3), top - bottom,
                                boxstyle="round,pad=0.02,rounding_size=0.15", fc="none",
                                ec="0.5", lw=1.2, ls="--"))
    per_layer = sum(b.params for b in boxes if b.in_block)
    label(x0 - 1.55, (top + bottom) / 2, f"× {c.n_layers} layers  ({per_layer:,} params each)",
          fontsize=10, weight="bold", rotation=90, ha="center")
    if residual:
        # post: the sub-layer's input joins its output in "add & norm";
        # pre: the stream skips norm + sub-layer and is added right after the sub-layer
        keys = [b.key for b in boxes]
        spans = [("attn", "norm1"), ("ffn", "norm2")] if not pre else [("norm1", "attn"), ("norm2", "ffn")]
        for n, (start, end) in enumerate(spans):
            if start not in keys or end not in keys:
                continue
            y_start = ys[keys.index(start) + 1] + half + (0.17 if not pre else 0.27)
            y_end = ys[keys.index(end) + 1] - (0 if not pre else half + 0.12)
            xr = x0 - 0.45
            ax.plot([mid, xr, xr], [y_start, y_start, y_end], color="tab:red", lw=1.3)
            r = 0.13  # pre-norm: the sum is a ⊕ on the stream, after the sub-layer
            ax.add_patch(FancyArrowPatch((xr, y_end), (x0 if not pre else mid - r, y_end),
                                         arrowstyle="-|>", mutation_scale=10, color="tab:red", lw=1.3,
                                         shrinkA=0, shrinkB=0))
            if pre:
                ax.add_patch(Circle((mid, y_end), r, fc="white", ec="tab:red", lw=1.3, zorder=3))
                label(mid, y_end, "+", fontsize=11, color="tab:red", ha="center", zorder=4)
            if n == 0:
                label(xr - 0.22, (y_start + y_end) / 2, "residual", fontsize=9, color="tab:red",
                      rotation=90, ha="center")
    total = count_parameters(model)
    ax.set_title(f"{c.norm_position}-norm Transformer, d_model {c.d_model}: {total:,} parameters",
                 fontsize=11)
    return fig


def draw_lookup(table, ids, names=None):
    """An embedding lookup as a picture: the whole table, the rows `ids` picks, and the result.

    table: (V, C); ids: a list of row numbers; names: how to label each id (default: the number).
    One diverging colour scale, centred on 0, for the table and the result, with a colorbar.
    """
    import matplotlib.colors as mcolors
    from matplotlib.figure import Figure
    from matplotlib.patches import ConnectionPatch, Rectangle

    table = table.detach().double()
    V, C = table.shape
    picked = table[list(ids)]  # (T, C): what the lookup returns
    names = names or [str(i) for i in ids]
    limit = float(table.abs().flatten().quantile(0.99))  # a few extreme entries would wash out the rest
    norm = mcolors.TwoSlopeNorm(vmin=-limit, vcenter=0.0, vmax=limit)
    fig = Figure(figsize=(8.2, 4.6), layout="constrained")
    left, gap, right, bar = fig.subplots(1, 4, width_ratios=(1.0, 0.5, 2.6, 0.12))
    gap.axis("off")  # room for the arrows
    left.imshow(table, aspect="auto", cmap="RdBu_r", norm=norm, interpolation="nearest")
    marks = sorted({0, V - 1, *ids})
    left.set(xticks=range(C), xlabel=f"its {C} numbers", ylabel="row = byte id",
             title=f"the table: {V} × {C}", yticks=marks,
             yticklabels=[names[list(ids).index(i)] if i in ids else str(i) for i in marks])
    image = right.imshow(picked, cmap="RdBu_r", norm=norm)
    right.set(xticks=range(C), yticks=range(len(ids)), yticklabels=names, xlabel=f"its {C} numbers",
              title="the lookup: one row per id, in order")
    right.yaxis.tick_right()
    for t, row in enumerate(picked.tolist()):
        for c, value in enumerate(row):
            right.text(c, t, f"{value:.2f}", ha="center", va="center", fontsize=10,
                       color="white" if abs(value) > 0.6 * limit else "black")
    for t, i in enumerate(ids):
        left.add_patch(Rectangle((-0.5, i - 1.5), C, 3, fill=False, ec="black", lw=1.5, clip_on=False))
        fig.add_artist(ConnectionPatch((C - 0.5, i), (-0.5, t), "data", "data", axesA=left,
                                       axesB=right, arrowstyle="-|>", color="0.35", lw=1.1))
    fig.colorbar(image, cax=bar, label="value (colour scale shared)")
    return fig
