"""Every stored figure is legible at the size JupyterLab shows it.

JupyterLab shows a PNG output at its natural size, or at the width its output metadata gives
(`metadata["image/png"]["width"]`), and shrinks it to the notebook column when it is wider: about
850 px in a 1,280-px window. A label of 9 pt saved at 110 dpi is 13.75 px in the PNG, and 9.6 px
when a 1,250-px figure is shrunk to the column. The pixels alone do not say how large the text
was drawn, so every PNG minitf draws records its smallest text in a PNG text chunk
(`minitf.views.pictures.with_legibility`): figures shown by the inline backend after
`minitf.notebook.setup()`, and the pictures of the widgets (`ShowsPicture`), whose captions and
plots both count. This test reads those chunks from the stored outputs and fails where the smallest
text, as displayed, is under 9 px, or where a figure carries no record.

Run as a script (`python tests/test_figure_legibility.py`) it prints the table of every figure.
"""
import base64
import struct
import sys

import pytest
from matplotlib.figure import Figure
from support import ROOT, cells

sys.path.insert(0, str(ROOT))

from minitf.views.pictures import SMALLEST_TEXT, png_text, smallest_text_px  # noqa: E402

COLUMN_PX = 850      # JupyterLab 4's notebook column in a 1,280-px window
SMALLEST_PX = 9      # the smallest text a figure may show, as displayed

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def stored_figures(path):
    """(cell index, PNG bytes, width asked for by the output's metadata or None) of every PNG output,
    widget pictures included."""
    for i, cell in enumerate(cells(path)):
        for output in cell.get("outputs", []):
            data = output.get("data", {}).get("image/png")
            if data is not None:
                png = base64.b64decode(data if isinstance(data, str) else "".join(data))
                asked = output.get("metadata", {}).get("image/png", {}).get("width")
                yield i, png, asked


def measure(png: bytes, asked_width=None) -> dict:
    """A PNG's natural width, the width it is shown at, and its smallest text in px as shown."""
    width = struct.unpack(">I", png[16:20])[0]  # the IHDR chunk: width, then height
    shown = min(asked_width or width, COLUMN_PX)
    px = smallest_text_px(png)
    return {"width": width, "shown": shown, "text": png_text(png).get(SMALLEST_TEXT),
            "smallest_shown_px": None if px is None else px * shown / width}


def table(path) -> list[dict]:
    return [{"cell": i, **measure(png, asked)} for i, png, asked in stored_figures(path)]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_stored_figure_is_legible_as_displayed(path):
    rows = table(path)
    unrecorded = [r for r in rows if r["smallest_shown_px"] is None]
    illegible = [f"cell {r['cell']}: {r['width']} px wide, shown at {r['shown']} px: smallest text "
                 f"{r['smallest_shown_px']:.1f} px ({r['text']})"
                 for r in rows if r["smallest_shown_px"] is not None and r["smallest_shown_px"] < SMALLEST_PX]
    assert not illegible, f"{path.name}: text under {SMALLEST_PX} px as displayed:\n" + "\n".join(illegible)
    assert not unrecorded, (f"{path.name}: cells {[r['cell'] for r in unrecorded]} store a PNG without its "
                            "smallest text's size: draw it with minitf (after minitf.notebook.setup(), "
                            "or views.pictures.figure_png) and re-execute")


def test_the_display_size_follows_jupyterlab():
    from minitf.views.pictures import figure_png

    fig = Figure(figsize=(12.5, 3), dpi=100)  # 1,250 px at 100 dpi
    fig.subplots().set_xlabel("label", fontsize=9)
    png = figure_png(fig, dpi=100)
    natural = measure(png)
    assert natural["width"] == 1250 and natural["shown"] == COLUMN_PX
    assert natural["smallest_shown_px"] == pytest.approx(9 * 100 / 72 * 850 / 1250, abs=0.01)  # 8.5: too small
    assert measure(png, asked_width=500)["smallest_shown_px"] == pytest.approx(12.5 * 500 / 1250, abs=0.01)


def test_every_way_minitf_draws_a_png_records_its_smallest_text():
    import base64 as b64

    from minitf.views.pictures import captioned, figure_png, inline_png

    fig = Figure(figsize=(4, 2), dpi=100)
    ax = fig.subplots()
    ax.set_xlabel("x", fontsize=11)
    ax.tick_params(labelsize=8)  # the tick labels (drawn only when saved) are the smallest text
    png = figure_png(fig)
    assert smallest_text_px(png) == pytest.approx(8 * 100 / 72, abs=0.01)  # saved at the figure's dpi
    assert smallest_text_px(figure_png(fig, dpi=110)) == pytest.approx(8 * 110 / 72, abs=0.01)
    inline = b64.b64decode(inline_png(fig))  # what the notebooks show, after minitf.notebook.setup()
    assert smallest_text_px(inline) == pytest.approx(8 * 100 / 72, abs=0.01)
    assert png_text(inline)[SMALLEST_TEXT] == "8 pt at 100 dpi"
    # a widget's picture: a caption above a plot drawn into it; the smaller of the two counts
    assert smallest_text_px(captioned(png, "slider = 1", fontsize=12)) == pytest.approx(8 * 100 / 72, abs=0.01)
    assert smallest_text_px(captioned(png, "slider = 1", fontsize=7)) == pytest.approx(7 * 100 / 72, abs=0.01)
    empty = Figure(figsize=(2, 1))
    empty.subplots().axis("off")
    assert smallest_text_px(figure_png(empty)) is None  # no text: nothing to record


def test_setup_registers_the_recording_png_formatter():
    import inspect

    from minitf import notebook
    assert "for_type(Figure, inline_png)" in inspect.getsource(notebook.setup)


if __name__ == "__main__":
    print(f"{'notebook':<28} {'cell':>4} {'PNG width':>9} {'shown':>6} {'smallest text shown':>20}  as drawn")
    for path in NOTEBOOKS:
        for r in table(path):
            px = "not recorded" if r["smallest_shown_px"] is None else f"{r['smallest_shown_px']:.1f} px"
            print(f"{path.stem:<28} {r['cell']:>4} {r['width']:>9} {r['shown']:>6} {px:>20}  {r['text'] or ''}")


# --- text tables: a printed table wider than the column wraps each row into two broken lines ---------

COLUMN_CHARS = 111  # monospace characters of an output line in JupyterLab's column (see COLUMN_PX)
TABLES_TOO_WIDE = {"05_training_base64_pairs"}  # the one notebook whose printed tables still wrap


def table_rows(path):
    """(cell, line) of every printed line that is a table row: columns set apart by 2+ spaces."""
    import re
    for i, cell in enumerate(cells(path)):
        for output in cell.get("outputs", []):
            text = "".join(output.get("text", "")) or "".join(output.get("data", {}).get("text/plain", ""))
            for line in text.splitlines():
                if len(re.findall(r"\S {2,}(?=\S)", line)) >= 2:
                    yield i, line


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p.stem not in TABLES_TOO_WIDE], ids=lambda p: p.stem)
def test_printed_tables_fit_the_column(path):
    wide = [f"cell {i}: {len(line)} characters: {line[:60]}…"
            for i, line in table_rows(path) if len(line) > COLUMN_CHARS]
    assert not wide, f"{path.stem}: table rows wider than the column ({COLUMN_CHARS} characters) wrap:\n" + \
        "\n".join(wide)
