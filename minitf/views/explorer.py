"""The every-number explorer: type an input, see every number of the forward pass, hover one to
see how it was computed.

`Explorer(model, text="Hello")` traces the model on the input (`minitf.trace`, float64) and shows,
for the position you follow: the byte ids, the embedding rows, per layer and head q, k, v before
and after RoPE, the scores with the causal mask, the softmax weights with their row sums, the head
outputs, their concatenation, W_O, the residual sums, the norms (mean, variance), the FFN's hidden
units, and the top logits and next-byte probabilities. Hovering (or clicking, on a touch screen) a
number shows its formula with the values that went into it; the text comes from
`Trace.explain(key)`, so the tests check it against the trace. "generate next byte" appends the
greedy next byte, so you can step through generation one byte at a time.

Why anywidget and not ipywidgets: hovering over thousands of numbers must answer at once, in the
browser. With ipywidgets every hover would be a round trip to the kernel and a custom view would
need a compiled JupyterLab extension; anywidget (0.11, pinned) runs our own plain ES module
(`static/explorer.js`, no CDN, works offline) on top of ipywidgets' traitlet sync. The kernel is
needed only to recompute the trace when the input, the followed position or the step changes.

Without a kernel (a stored notebook, a static page) the output shows `static_png()`, a matplotlib
summary of the followed position (the bytes and their embedding rows, every head's weights, layer
0's FFN hidden units, the top next bytes): `_repr_mimebundle_` holds it beside the widget view and
a stable text/plain (nbval compares that).

Text box: bytes as text; type `\\t` for TAB, `\\n` for the end-of-output byte, `\\\\` for a
backslash and `\\xNN` for any other byte (the steps write the same escapes).

DOM hooks for a browser check (all inside the widget's `.mtf-explorer` root):
    input.mtf-text              the text box (recomputes 0.4 s after the last key, or on Enter)
    button.mtf-step             "generate next byte"
    .mtf-pos[data-position=t]   the byte chips; clicking one follows position t (.mtf-selected)
    .mtf-cell[data-key][data-value]   every number: its trace key (e.g. "L0.h1.weights.3.1":
                                layer 0, head 1, weights[3, 1]; layers and heads count from 0)
                                and its full-precision value as JavaScript prints it (parse it as
                                a float; "-Infinity" for a masked score); the cell shows 2 decimals
    .mtf-tooltip                the provenance of the hovered or clicked cell (hidden otherwise);
                                its .mtf-tooltip-text is Trace.explain(key)
    .mtf-prediction[data-byte]  the greedy next byte after the followed position
    .mtf-error                  shown instead of the numbers when the input cannot be traced
"""
from __future__ import annotations

import math
import pathlib

import numpy as np
import torch

from ..core.tokens import EOS, TAB, show
from .pictures import FIGURE_DPI, ShowsPicture, figure_png
from .trace import Trace, trace

STATIC = pathlib.Path(__file__).with_name("static")
WRAP = 8         # a long vector is shown in rows of this many numbers
TOP = 10         # logits and probabilities shown per position
MAX_BYTES = 32   # longer inputs would not be legible
FULL_T = 16      # up to this length every row of the (T, T) scores and weights is shown, else the
                 # followed row only (a 32 × 32 grid of numbers is not legible, and grows as T²)


def to_text(ids) -> str:
    """Bytes as the text box shows them: printable ASCII as is, \\t, \\n, \\\\ and \\xNN else."""
    out = []
    for b in ids:
        b = int(b)
        out.append({9: "\\t", 10: "\\n", 92: "\\\\"}.get(b, chr(b) if 32 <= b < 127 else f"\\x{b:02x}"))
    return "".join(out)


def from_text(text: str) -> list[int]:
    """The inverse of to_text; other characters are UTF-8 encoded, a lone backslash kept."""
    ids, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt in "tn\\":
                ids.append({"t": 9, "n": 10, "\\": 92}[nxt])
                i += 2
                continue
            hex_digits = text[i + 2:i + 4]
            if nxt == "x" and len(hex_digits) == 2 and all(c in "0123456789abcdefABCDEF"
                                                           for c in hex_digits):
                ids.append(int(hex_digits, 16))
                i += 4
                continue
        ids.extend(ch.encode("utf-8"))
        i += 1
    return ids


# --- the view: what the JavaScript draws, built from a trace -----------------------------------

def _card(tr: Trace, title: str, keys: list[list[str]], rows: list[str], cols=None, *,
          note: str = "", highlight: int | None = None, masked=None, colscale: bool = False):
    """A block of numbers: keys (ragged rows allowed) → values, row and column labels."""
    return {"title": title, "note": note, "rows": rows, "cols": cols, "keys": keys,
            "values": [[_json_number(tr.value(k)) for k in row] for row in keys],
            "highlight": highlight, "masked": masked, "colscale": colscale}


def _json_number(v):
    """JSON has no infinities: a masked score (−∞) travels as null."""
    return None if isinstance(v, float) and v == float("-inf") else v


def _vector(tr: Trace, title: str, prefix: str, n: int, row_label: str, note: str = ""):
    """A vector of n numbers (keys prefix.i): one row when short, rows of WRAP when long."""
    keys = [f"{prefix}.{i}" for i in range(n)]
    if n <= WRAP:
        return _card(tr, title, [keys], [row_label], [str(i) for i in range(n)], note=note)
    chunks = [keys[i:i + WRAP] for i in range(0, n, WRAP)]
    rows = [f"{i}–{min(i + WRAP, n) - 1}" for i in range(0, n, WRAP)]
    return _card(tr, title, chunks, rows, [f"+{i}" for i in range(WRAP)], note=note)


def _matrix(tr: Trace, title: str, prefix: str, rows: list[int], n_cols: int, labels, t: int,
            masked=None, **kw):
    """The given rows of a (T, n_cols) tensor; the followed position t is highlighted."""
    keys = [[f"{prefix}.{r}.{c}" for c in range(n_cols)] for r in rows]
    return _card(tr, title, keys, [labels[r] for r in rows], [str(c) for c in range(n_cols)],
                 highlight=rows.index(t) if t in rows else None,
                 masked=None if masked is None else [masked[r] for r in rows], **kw)


def _norm_cards(tr: Trace, name: str, prefix: str, norm, t: int, pos: str, role: str) -> list:
    stat = "var" if norm.kind == "layer" else "ms"
    stats = ["mean", stat] if norm.kind == "layer" else [stat]
    what = {"layer": "LayerNorm: (x − mean)/√(var + ε)·γ + β",
            "rms": "RMSNorm: x/√(ms + ε)·γ, ms = mean(x²)"}[norm.kind]
    return [_card(tr, f"{name} statistics at {pos}", [[f"{prefix}.{s}.{t}" for s in stats]], [pos],
                  stats, note=f"{role}; {what}"),
            _vector(tr, f"{name} output at {pos}", f"{prefix}.out.{t}", norm.output.size(-1), pos)]


def build_view(tr: Trace, position: int) -> dict:
    """Everything the widget draws for one followed position, as JSON-ready data.

    Every card lists its cells' trace keys; `prov` maps each key to Trace.explain(key).
    """
    c, T, t = tr.config, len(tr.ids), position
    labels = tr.labels
    pos_labels = [f"{j} {lab}" for j, lab in enumerate(labels)]
    pos = f"t={t} '{labels[t]}'"
    pre = c.norm_position == "pre"
    hd, H, C = c.head_dim, c.n_heads, c.d_model
    sections = []

    every = list(range(T))
    cards = [_card(tr, "byte ids", [[f"ids.{j}" for j in every]], ["id"], pos_labels,
                   note="a token is a byte: its id is the byte's value"),
             _matrix(tr, "embedding rows E[id]", "embed", every, C, pos_labels, t,
                     note="row id of the embedding table, for every position")]
    if tr.positional is not None:
        cards.append(_matrix(tr, "sinusoidal positions", "pos", every, C, pos_labels, t))
        cards.append(_matrix(tr, "x0 = embedding + position", "x0", every, C, pos_labels, t))
    sections.append({"title": "Bytes → vectors", "note": "the input, one row per position",
                     "cards": cards, "heads": []})

    rows = every if T <= FULL_T else [t]  # of the (T, T) scores and weights
    for l, layer in enumerate(tr.layers):
        L = f"L{l}"
        cards = []
        if pre:
            cards += _norm_cards(tr, "norm1", f"{L}.norm1", layer.norm1, t, pos,
                                 "pre-norm: attention reads norm1(x)")
        else:
            cards.append(_vector(tr, f"input x at {pos}", f"{L}.input.{t}", C, pos,
                                 note="post-norm: attention reads the stream itself"))
        heads = []
        rope_q = c.positional == "rope"
        mask = layer.mask.tolist() if layer.mask is not None else None
        for h in range(H):
            P = f"{L}.h{h}"
            hcards = [_card(tr, f"q at {pos}" + (" before / after RoPE" if rope_q else ""),
                            [[f"{P}.q.{t}.{d}" for d in range(hd)]]
                            + ([[f"{P}.q_rot.{t}.{d}" for d in range(hd)]] if rope_q else []),
                            ["q", "q rot"] if rope_q else ["q"], [str(d) for d in range(hd)]),
                      _matrix(tr, "k, every position", f"{P}.k", every, hd, pos_labels, t)]
            if rope_q:
                hcards.append(_matrix(tr, "k after RoPE", f"{P}.k_rot", every, hd, pos_labels, t))
            hcards.append(_matrix(tr, "v, every position", f"{P}.v", every, hd, pos_labels, t))
            if c.rope_on_v:
                hcards.append(_matrix(tr, "v after RoPE", f"{P}.v_rot", every, hd, pos_labels, t))
            hcards.append(_matrix(tr, f"scores q·k/√{hd}" + (" (masked: −∞)" if mask else ""),
                                  f"{P}.scores", rows, T, pos_labels, t, masked=mask,
                                  note="row = the attending position, column = the attended"))
            w = _matrix(tr, "weights = softmax of each row", f"{P}.weights", rows, T, pos_labels, t,
                        masked=mask)
            for i, j in enumerate(rows):  # each row's sum, as a last column
                w["keys"][i].append(f"{P}.rowsum.{j}")
                w["values"][i].append(tr.value(f"{P}.rowsum.{j}"))
            w["cols"].append("Σ")
            hcards.append(w)
            hcards.append(_vector(tr, f"output at {pos} = Σ_j w·v", f"{P}.out.{t}", hd, pos))
            heads.append({"title": f"layer {l} · head {h}", "cards": hcards})
        after = [_vector(tr, f"heads concatenated at {pos}", f"{L}.concat.{t}", H * hd, pos),
                 _vector(tr, f"W_O · concat at {pos}", f"{L}.attn_out.{t}", C, pos),
                 _vector(tr, f"residual sum at {pos}", f"{L}.resid1.{t}", C, pos,
                         note="x + attention" if c.residual else
                         "no residual: attention alone")]
        if not pre:
            after += _norm_cards(tr, "norm1", f"{L}.norm1", layer.norm1, t, pos,
                                 "post-norm: the sum is normalised")
        sections.append({"title": f"Layer {l} · attention", "note": _layer_note(c),
                         "cards": cards, "heads": heads, "after": after})
        if layer.norm2 is None:
            continue
        cards = []
        if pre:
            cards += _norm_cards(tr, "norm2", f"{L}.norm2", layer.norm2, t, pos,
                                 "pre-norm: the FFN reads norm2(x)")
        F = layer.ffn_pre.size(-1)
        cards += [_vector(tr, f"FFN hidden before {c.activation} at {pos}", f"{L}.ffn_pre.{t}", F, pos),
                  _vector(tr, f"FFN hidden after {c.activation} at {pos}", f"{L}.ffn_hidden.{t}", F,
                          pos),
                  _vector(tr, f"FFN output at {pos}", f"{L}.ffn_out.{t}", C, pos),
                  _vector(tr, f"residual sum at {pos}", f"{L}.resid2.{t}", C, pos)]
        if not pre:
            cards += _norm_cards(tr, "norm2", f"{L}.norm2", layer.norm2, t, pos,
                                 "post-norm: the sum is normalised")
        sections.append({"title": f"Layer {l} · feed-forward", "note": f"{C} → {F} → {C}, "
                         f"each position on its own", "cards": cards, "heads": []})

    cards = []
    if tr.final_norm is not None:
        cards += _norm_cards(tr, "final norm", "final_norm", tr.final_norm, t, pos,
                             "pre-norm models normalise once more before the head")
    top = tr.probs[t].topk(TOP).indices.tolist()
    cards.append(_card(tr, f"top {TOP} next bytes after {pos}",
                       [[f"logits.{t}.{b}", f"probs.{t}.{b}"] for b in top],
                       [f"{b} '{show([b])}'" for b in top], ["logit", "p"], colscale=True,
                       note="logit = final · W_head + b; p = softmax over all 256 bytes"))
    sections.append({"title": "Output head", "note": "", "cards": cards, "heads": []})

    keys = [k for s in sections for card in _all_cards(s) for row in card["keys"] for k in row]
    nxt = tr.next_byte(t)
    return {"meta": {"ids": tr.ids, "labels": labels, "position": t, "T": T,
                     "summary": _summary(c), "max_bytes": min(MAX_BYTES, c.max_len),
                     "prediction": {"byte": nxt, "label": show([nxt]), "name": BYTE_NAMES.get(nxt, ""),
                                    "p": float(tr.probs[t, nxt])},
                     "ended": output_ended(tr.ids)},
            "sections": sections, "prov": {k: tr.explain(k) for k in keys}}


BYTE_NAMES = {TAB: "TAB: the input ends", EOS: "EOS: the output ends"}


def output_ended(ids) -> bool:
    """A pair's output has ended: the bytes hold a TAB and end with EOS. Generation stops there (a
    language model's text has no TAB, and its newline is only a byte)."""
    ids = list(ids)
    return len(ids) > 0 and ids[-1] == EOS and TAB in ids


def _all_cards(section: dict):
    yield from section["cards"]
    for head in section["heads"]:
        yield from head["cards"]
    yield from section.get("after", [])


def _summary(c) -> str:
    norm = {"layer": "LayerNorm", "rms": "RMSNorm"}[c.norm]
    positions = {"rope": "RoPE on q, k", "sinusoidal": "sinusoidal positions",
                 "none": "no positions"}[c.positional] + (" and v" if c.rope_on_v else "")
    if c.position_ids == "coupled":
        positions += " (coupled ids)"
    heads = f"{c.n_heads} head{'s' if c.n_heads > 1 else ''} × {c.head_dim}"
    ffn = f"FFN {c.d_ff} ({c.activation})" if c.ffn else "no FFN"
    return (f"d_model {c.d_model} · {heads} · {c.n_layers} layer{'s' if c.n_layers > 1 else ''} · "
            f"{ffn} · {c.norm_position}-norm {norm} · {positions}"
            + (" · head tied to the embedding" if c.tie_embeddings else "")
            + ("" if c.causal else " · NO causal mask") + ("" if c.residual else " · no residual"))


def _layer_note(c) -> str:
    if c.norm_position == "pre":
        return "pre-norm: x + attention(norm1(x)); every head reads the same input"
    return "post-norm: norm1(x + attention(x)); every head reads the same input"


# --- the picture: what a stored notebook shows without a kernel --------------------------------

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
    sheet.text(_summary(tr.config), 0.3, fontsize=PT)
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


def _safe(text: str) -> str:
    """Text for matplotlib: a pair of `$` would start mathtext."""
    return text.replace("$", r"\$")


TEXT_WIDTH = 7.0 - 0.25  # inches: the narrowest picture (`_Sheet.figure`'s min_width) less its margins
LINE_SPACING = 1.25      # of the font size, between the lines of a broken text


def _text_width(text: str, fontsize: float, weight: str = "normal") -> float:
    """How wide `text` is drawn, in inches (measured on the glyphs' outlines, no figure needed)."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextPath

    path = TextPath((0, 0), text, size=fontsize, prop=FontProperties(weight=weight))
    return path.get_extents().width / 72 if text.strip() else 0.0


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


# --- the widget --------------------------------------------------------------------------------

_WIDGET_CLASS = None


def _widget_class():
    """The anywidget class, made on first use so `import minitf` does not import anywidget."""
    global _WIDGET_CLASS
    if _WIDGET_CLASS is None:
        import anywidget
        import traitlets

        class ExplorerWidget(anywidget.AnyWidget):
            _esm = STATIC / "explorer.js"
            _css = STATIC / "explorer.css"
            text = traitlets.Unicode("").tag(sync=True)
            position = traitlets.Int(0).tag(sync=True)
            view = traitlets.Dict().tag(sync=True)

            def __repr__(self):
                return "ExplorerWidget()"

        _WIDGET_CLASS = ExplorerWidget
    return _WIDGET_CLASS


class Explorer(ShowsPicture):
    """Every number of `model` on `text`, live: see the module docstring.

    `.text` (escaped, as in the text box), `.position` (the followed position; it stays on the
    last byte while you type or step) and `.step()` drive it from Python as the buttons do from the
    browser; `.trace` is the current minitf.Trace and `.view` what the browser draws.
    """

    def __init__(self, model, text: str = "Hello", position: int | None = None):
        self.model = model
        self.trace: Trace | None = None
        self.error: str | None = None
        # the text box shows TAB and EOS as the escapes \t and \n, also where `text` holds them raw
        self.widget = _widget_class()(text=to_text(from_text(text)))
        self._updating = False  # True while the kernel itself moves the position
        self._recompute(position)
        self.widget.observe(self._on_text, names="text")
        self.widget.observe(self._on_position, names="position")
        self.widget.on_msg(self._on_msg)

    # the learner's controls, from Python
    @property
    def text(self) -> str:
        return self.widget.text

    @text.setter
    def text(self, value: str) -> None:
        self.widget.text = value

    @property
    def position(self) -> int:
        return self.widget.position

    @position.setter
    def position(self, value: int) -> None:
        self.widget.position = value

    @property
    def view(self) -> dict:
        return self.widget.view

    def step(self) -> int | None:
        """Append the greedy next byte (the argmax after the last position); returns it, or None
        where generation stops: at the length limit, or once a pair's output has ended (EOS)."""
        if self.trace is None or len(self.trace.ids) >= min(MAX_BYTES, self.model.config.max_len):
            return None
        if output_ended(self.trace.ids):
            return None
        nxt = self.trace.next_byte(-1)
        self.text = self.text + to_text([nxt])
        return nxt

    # kernel side of the widget
    def _on_text(self, change) -> None:
        self._recompute(None)

    def _on_position(self, change) -> None:
        if self.trace is not None and not self._updating:
            self._show()

    def _on_msg(self, widget, content, buffers) -> None:
        if isinstance(content, dict) and content.get("type") == "step":
            self.step()

    def _recompute(self, position: int | None) -> None:
        """Trace the text again; position None keeps the followed one, or the last byte if that
        was followed."""
        ids = from_text(self.widget.text)
        limit = min(MAX_BYTES, self.model.config.max_len)
        if not 1 <= len(ids) <= limit:
            self.error = f"type 1 to {limit} bytes (got {len(ids)})"
            self.trace = None
            self.widget.view = {"error": self.error}
            return
        self.error = None
        old_last = len(self.trace.ids) - 1 if self.trace is not None else None
        self.trace = trace(self.model, ids)
        T = len(ids)
        if position is None:
            position = T - 1 if old_last is None or self.position == old_last else self.position
        self._updating = True
        try:
            self.widget.position = max(0, min(position, T - 1))
        finally:
            self._updating = False
        self._show()

    def _show(self) -> None:
        self.widget.view = build_view(self.trace, self.widget.position)

    # how it looks without a browser
    def __repr__(self) -> str:
        if self.trace is None:
            return f'Explorer("{self.text}": {self.error})'
        t = self.position
        nxt = self.trace.next_byte(t)
        return (f'Explorer("{show(self.trace.ids)}", following position {t} '  # TAB as ⇥
                f"'{self.trace.labels[t]}', greedy next byte '{show([nxt])}')")

    def static_figure(self):
        """The picture a stored notebook shows: a summary of the widget at the followed position
        (the bytes and embedding rows, every head's weights, layer 0's FFN, the next bytes)."""
        if self.trace is None:
            from matplotlib.figure import Figure

            fig = Figure(figsize=(6, 0.6))
            fig.text(0.02, 0.5, _safe(f"minitf.Explorer: {self.error}"), va="center",
                     fontsize=PT + 1)
            return fig
        return picture(self.trace, self.position, "A picture of minitf.Explorer: run the cell to "
                       "see and hover every number")

    def static_png(self) -> bytes:
        """static_figure() as PNG bytes at the notebooks' resolution: what a stored notebook shows
        beside the live widget (ShowsPicture)."""
        return figure_png(self.static_figure(), dpi=FIGURE_DPI)

    picture = static_png
