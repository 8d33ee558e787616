"""The picture every view leaves behind, and the helpers that draw one.

Interactive views draw on the kernel side into `Output.outputs` (never `with out:` or `interact`),
so a callback prints nothing into the notebook cell, nbval has nothing unstable to compare, and a
test can move a slider by setting `.value` and read back the numbers that were drawn (`state`).
ipywidgets and matplotlib are imported when a view is built, so `import minitf` stays light.

Every view also shows as a picture where no widget can run (`ShowsPicture`). JupyterLab 4 draws a
widget view only in a trusted notebook: its renderer is registered as unsafe, and a notebook you
cloned or downloaded is untrusted (trust is a per-user signature database). Then JupyterLab shows
the next format of the output instead: a PNG if there is one, else the text. So the output carries
the live view, a PNG of what the view shows now (with the controls' values written above it), and
a short stable text for nbval, which compares text but skips PNGs and widget views.
"""
from __future__ import annotations

import base64
import io
import struct
import zlib


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
FIGURE_DPI = 110  # a 7-inch figure fills most of a notebook column; 9 pt labels are 14 px

# Every PNG minitf draws says how small its smallest text is, in a PNG text chunk (tEXt), so a test
# can tell whether a stored figure is legible at the size JupyterLab shows it: a PNG alone gives its
# pixels, not its font sizes. The size is the font size in pixels of the PNG as saved (points × dpi
# / 72); shown shrunk to a narrower column, it shrinks with the picture.
SMALLEST_TEXT_PX = "minitf:smallest-text-px"
SMALLEST_TEXT = "minitf:smallest-text"  # the same in words: "9 pt at 110 dpi"


def smallest_text_points(fig) -> float | None:
    """The font size (points) of the smallest text a drawn figure shows: tick labels, legends,
    titles, annotations (visible and not empty). Call it after the figure was drawn (saving draws
    it): tick labels get their text only then. None if the figure has no text."""
    from matplotlib.text import Text

    sizes = [t.get_fontsize() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    return min(sizes, default=None)


def png_text(png: bytes) -> dict[str, str]:
    """The text chunks (tEXt) of a PNG: keyword → text."""
    found, at = {}, 8  # after the 8-byte signature: chunks of length, type, data, CRC
    while at + 8 <= len(png):
        length, kind = struct.unpack(">I4s", png[at:at + 8])
        if kind == b"tEXt":
            key, _, text = png[at + 8:at + 8 + length].partition(b"\0")
            found[key.decode("latin-1")] = text.decode("latin-1")
        at += 12 + length
    return found


def with_text(png: bytes, entries: dict[str, str]) -> bytes:
    """The PNG with tEXt chunks added just before its end chunk (IEND, the last 12 bytes)."""
    chunks = b""
    for key, text in entries.items():
        data = key.encode("latin-1") + b"\0" + text.encode("latin-1")
        chunks += struct.pack(">I", len(data)) + b"tEXt" + data + struct.pack(">I", zlib.crc32(b"tEXt" + data))
    return png[:-12] + chunks + png[-12:]


def smallest_text_px(png: bytes) -> float | None:
    """The smallest text of a PNG minitf drew, in pixels of the PNG as saved; None if not recorded."""
    value = png_text(png).get(SMALLEST_TEXT_PX)
    return None if value is None else float(value)


def with_legibility(png: bytes, fig, dpi: float, drawn_px: float | None = None) -> bytes:
    """The PNG of `fig`, saved at `dpi`, with its smallest text recorded (`drawn_px`: the smallest
    text of pictures drawn into it, already in pixels)."""
    points = smallest_text_points(fig)
    sizes = [x for x in (None if points is None else points * dpi / 72, drawn_px) if x is not None]
    if not sizes:
        return png
    words = "; ".join(([f"{points:g} pt at {dpi:g} dpi"] if points is not None else [])
                      + ([f"pictures drawn into it: {drawn_px:.2f} px"] if drawn_px is not None else []))
    return with_text(png, {SMALLEST_TEXT_PX: f"{min(sizes):.2f}", SMALLEST_TEXT: words})


def figure_png(fig, dpi: float | None = None, drawn_px: float | None = None) -> bytes:
    """A matplotlib Figure as PNG bytes, whatever the backend (inline or not, in tests too), with
    its smallest text recorded in the PNG (`with_legibility`)."""
    import matplotlib

    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=dpi)
    saved = dpi or matplotlib.rcParams["savefig.dpi"]
    return with_legibility(png.getvalue(), fig, fig.dpi if saved == "figure" else saved, drawn_px)


def inline_png(fig) -> str | None:
    """What the inline backend shows for a Figure (a base64 PNG, cropped to what is drawn, at the
    figure's dpi), with its smallest text recorded: `minitf.notebook.setup()` registers it as the
    notebook's PNG formatter for figures."""
    from IPython.core.pylabtools import print_figure

    png = print_figure(fig, fmt="png", bbox_inches="tight")
    if png is None:  # a figure with nothing in it shows nothing
        return None
    return base64.b64encode(with_legibility(png, fig, fig.dpi)).decode("ascii")


def control_values(controls) -> str:
    """'description = value' for each ipywidgets control, as a learner reads them on screen."""
    parts = []
    for c in controls:
        value = getattr(c, "label", None) or c.value  # a Dropdown shows its label, not its value
        if isinstance(value, bool):
            value = "yes" if value else "no"
        elif isinstance(value, float):
            value = f"{value:,.4g}" if abs(value) < 1e4 else f"{value:,.0f}"
        parts.append(f"{c.description} = {value}")
    return " · ".join(parts)


def output_png(out) -> bytes | None:
    """The last PNG an ipywidgets Output shows, or None."""
    for output in reversed(out.outputs):
        png = output.get("data", {}).get("image/png")
        if png is not None:
            return base64.b64decode(png) if isinstance(png, str) else png
    return None


def captioned(png: bytes | None, caption: str, fontsize: float = 9) -> bytes:
    """The picture `png`, pixel for pixel, under a band with `caption` (one or more lines);
    the caption alone if there is no picture."""
    from matplotlib.figure import Figure
    from matplotlib.image import imread

    dpi = 100
    image = imread(io.BytesIO(png), format="png") if png else None  # (H, W, 3 or 4) floats
    height, width = image.shape[:2] if image is not None else (0, 640)
    band = int((caption.count("\n") + 1) * fontsize * 1.5 * dpi / 72) + 8  # px
    fig = Figure(figsize=(width / dpi, (height + band) / dpi), dpi=dpi)
    if image is not None:
        fig.figimage(image, 0, 0)
    fig.text(4 / width, 1 - 4 / (height + band), caption, va="top", ha="left", fontsize=fontsize,
             color="0.25")
    return figure_png(fig, dpi=dpi, drawn_px=smallest_text_px(png) if png else None)


def picture_of(out, controls, hint: str) -> bytes:
    """What a view shows: the controls' values and a hint above the plot in its Output `out`."""
    return captioned(output_png(out), f"{control_values(controls)}\n(a picture of the widget: {hint})")


def live_and_picture(widget, png: bytes, text: str) -> dict:
    """The display bundle of a view: the live widget, its picture, and a stable one-line text.

    A frontend shows the richest format it can: the widget (trusted notebook with a kernel), the
    PNG (untrusted notebook, GitHub, nbconvert without widget state) or the text.
    """
    bundle = {"text/plain": text, "image/png": base64.b64encode(png).decode("ascii")}
    shown = widget._repr_mimebundle_() if widget._repr_mimebundle_ else None
    if isinstance(shown, tuple):  # anywidget returns (data, metadata); ipywidgets the data alone
        shown = shown[0]
    view = shown.get(WIDGET_VIEW) if shown else None
    if view is not None:  # None once the widget is closed: the picture remains
        bundle[WIDGET_VIEW] = view
    return bundle


class ShowsPicture:
    """Mixin for a view that keeps its ipywidgets (or anywidget) widget in `.widget`.

    Define `picture()` (PNG bytes of what the view shows now; `picture_of` writes the controls'
    values above the plot of an Output widget) and `__repr__` (one stable line: nbval compares it). Displaying the view
    then shows the live widget where it can run and the picture where it cannot.
    """

    widget = None

    def picture(self) -> bytes:
        raise NotImplementedError

    def _repr_mimebundle_(self, include=None, exclude=None, **kwargs):
        return live_and_picture(self.widget, self.picture(), repr(self))
