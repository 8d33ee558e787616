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
summary (every head's weights, the top next bytes): `_repr_mimebundle_` holds it beside the widget
view and a stable text/plain (nbval compares that).

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

import base64
import io
import itertools
import pathlib

import torch

from .tokens import show
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
                         note="x + attention" if getattr(c, "residual", True) else
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
                     "prediction": {"byte": nxt, "label": show([nxt]),
                                    "p": float(tr.probs[t, nxt])}},
            "sections": sections, "prov": {k: tr.explain(k) for k in keys}}


def _all_cards(section: dict):
    yield from section["cards"]
    for head in section["heads"]:
        yield from head["cards"]
    yield from section.get("after", [])


def _summary(c) -> str:
    norm = {"layer": "LayerNorm", "rms": "RMSNorm"}[c.norm]
    positions = {"rope": "RoPE on q, k", "sinusoidal": "sinusoidal positions",
                 "none": "no positions"}[c.positional] + (" and v" if c.rope_on_v else "")
    ablations = [name for name in ("residual", "ffn") if not getattr(c, name, True)]
    return (f"d_model {c.d_model} · {c.n_heads} heads × {c.head_dim} · {c.n_layers} layers · "
            f"FFN {c.d_ff} ({c.activation}) · {c.norm_position}-norm {norm} · {positions}"
            + ("" if c.causal else " · NO causal mask")
            + "".join(f" · no {name}" for name in ablations))


def _layer_note(c) -> str:
    if c.norm_position == "pre":
        return "pre-norm: x + attention(norm1(x)); every head reads the same input"
    return "post-norm: norm1(x + attention(x)); every head reads the same input"


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


class Explorer:
    """Every number of `model` on `text`, live: see the module docstring.

    `.text` (escaped, as in the text box), `.position` (the followed position; it stays on the
    last byte while you type or step) and `.step()` drive it from Python as the buttons do from the
    browser; `.trace` is the current minitf.Trace and `.view` what the browser draws.
    """

    def __init__(self, model, text: str = "Hello", position: int | None = None):
        self.model = model
        self.trace: Trace | None = None
        self.error: str | None = None
        self.widget = _widget_class()(text=text)
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
        """Append the greedy next byte (the argmax after the last position); returns it."""
        if self.trace is None or len(self.trace.ids) >= min(MAX_BYTES, self.model.config.max_len):
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
        return (f'Explorer("{self.text}", following position {t} '
                f"'{self.trace.labels[t]}', greedy next byte '{show([nxt])}')")

    def static_figure(self):
        """A matplotlib summary of what the widget shows: every head's weights with their numbers
        and the top next-byte probabilities at the followed position (for stored notebooks)."""
        from matplotlib.figure import Figure

        tr, t = self.trace, self.position
        if tr is None:
            fig = Figure(figsize=(6, 1))
            fig.text(0.02, 0.5, f"minitf.Explorer: {self.error}")
            return fig
        c, T = tr.config, len(tr.ids)
        numbers = T * T * c.n_heads * c.n_layers <= 600  # more text would be illegible (and slow)
        size = max(2.2, T * (0.42 if numbers else 0.2))
        width, height = size * c.n_heads + 1.2, (size + 0.5) * c.n_layers + 2.6
        fig = Figure(figsize=(width, height))
        # fixed margins in inches: a layout engine would lay out every label again on each draw
        fig.subplots_adjust(left=0.8 / width, right=1 - 0.15 / width, bottom=0.35 / height,
                            top=1 - 0.55 / height, wspace=0.35, hspace=0.45)
        grid = fig.add_gridspec(c.n_layers + 1, c.n_heads,
                                height_ratios=[size] * c.n_layers + [1.6])
        for l, layer in enumerate(tr.layers):
            for h in range(c.n_heads):
                ax = fig.add_subplot(grid[l, h])
                w = layer.weights[h].numpy()
                ax.imshow(w, cmap="Reds", vmin=0, vmax=1)
                for i, j in itertools.product(range(T), range(T)) if numbers else ():
                    if layer.mask is None or not layer.mask[i, j]:
                        ax.text(j, i, f"{w[i, j]:.2f}", ha="center", va="center", fontsize=6.5,
                                color="white" if w[i, j] > 0.6 else "black")
                ax.axhline(t, color="tab:blue", lw=0.8, alpha=0.6)
                ax.set_xticks(range(T), tr.labels, fontsize=7, family="monospace")
                ax.set_yticks(range(T), [f"{j} {b}" for j, b in enumerate(tr.labels)], fontsize=7,
                              family="monospace")
                ax.tick_params(length=0, pad=1)
                ax.set_title(f"layer {l} · head {h} weights", fontsize=9)
        ax = fig.add_subplot(grid[c.n_layers, :])
        top = tr.probs[t].topk(TOP)
        ax.barh(range(TOP)[::-1], top.values.numpy(), color="tab:red")
        ax.set_yticks(range(TOP)[::-1], [f"'{show([b])}' {b}" for b in top.indices.tolist()],
                      fontsize=7, family="monospace")
        ax.set_xlim(0, 1)
        ax.tick_params(labelsize=7)
        ax.set_title(f"next byte after position {t} '{tr.labels[t]}' (top {TOP} probabilities)",
                     fontsize=9)
        fig.suptitle(f"minitf.Explorer on \"{self.text}\": a summary picture; run the notebook "
                     "for every number", fontsize=9)
        return fig

    def static_png(self) -> bytes:
        """static_figure() as PNG bytes (independent of the matplotlib backend)."""
        png = io.BytesIO()
        self.static_figure().savefig(png, format="png", dpi=80)
        return png.getvalue()

    def _repr_mimebundle_(self, include=None, exclude=None):
        """The live widget, plus text and a PNG for places without a kernel or widget manager."""
        return {"text/plain": repr(self),
                "image/png": base64.b64encode(self.static_png()).decode("ascii"),
                "application/vnd.jupyter.widget-view+json": {
                    "version_major": 2, "version_minor": 1, "model_id": self.widget.model_id}}
