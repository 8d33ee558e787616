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
So the view the kernel sends holds every number's explanation (a saved notebook's widget state keeps
them too); outside a kernel, where no browser receives it, an explanation is written only when read
(`explorer_model.Provenance`).

Without a kernel (a stored notebook, a static page) the output shows `static_png()`, a matplotlib
summary of the followed position (the bytes and their embedding rows, every head's weights, layer
0's FFN hidden units, the top next bytes): `_repr_mimebundle_` holds it beside the widget view and
a stable text/plain (nbval compares that).

This module is the widget; its parts live beside it: `explorer_text` (the text box's escapes),
`explorer_model` (`build_view`: what the browser draws) and `explorer_picture` (the picture).

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

import pathlib

from ..core.tokens import show
from .explorer_model import MAX_BYTES, as_json, build_view, output_ended
from .explorer_picture import error_picture, picture
from .explorer_text import from_text, to_text
from .pictures import FIGURE_DPI, ShowsPicture, figure_png
from .trace import Trace, trace

STATIC = pathlib.Path(__file__).with_name("static")

_WIDGET_CLASS = None


def _widget_class():
    """The anywidget class, made on first use so `import minitf` does not import anywidget."""
    global _WIDGET_CLASS
    if _WIDGET_CLASS is None:
        import anywidget
        import comm
        import traitlets

        class ExplorerWidget(anywidget.AnyWidget):
            _esm = STATIC / "explorer.js"
            _css = STATIC / "explorer.css"
            text = traitlets.Unicode("").tag(sync=True)
            position = traitlets.Int(0).tag(sync=True)
            view = traitlets.Dict().tag(sync=True, to_json=as_json)

            def send_state(self, key=None):
                # outside a kernel (a script, a test) the comm is a DummyComm: no browser can
                # receive the state, so the explanations are not written for it
                if not isinstance(self.comm, comm.DummyComm):
                    super().send_state(key)

            def __repr__(self):
                return "ExplorerWidget()"

        _WIDGET_CLASS = ExplorerWidget
    return _WIDGET_CLASS


def _synced(name: str, doc: str) -> property:
    """A property that reads and writes the widget's trait `name`: setting it from Python does
    what the browser's control does."""
    return property(lambda self: getattr(self.widget, name),
                    lambda self, value: setattr(self.widget, name, value), doc=doc)


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

    # the learner's controls, from Python: the widget's synced traits, so the browser sees them
    text = _synced("text", "the input, escaped as in the text box")
    position = _synced("position", "the followed position")
    view = property(lambda self: self.widget.view, doc="what the browser draws (build_view)")

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
            return error_picture(f"minitf.Explorer: {self.error}")
        return picture(self.trace, self.position, "A picture of minitf.Explorer: run the cell to "
                       "see and hover every number")

    def static_png(self) -> bytes:
        """static_figure() as PNG bytes at the notebooks' resolution: what a stored notebook shows
        beside the live widget (ShowsPicture)."""
        return figure_png(self.static_figure(), dpi=FIGURE_DPI)

    picture = static_png
