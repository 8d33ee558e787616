"""minitf.Explorer: builds for every shipped checkpoint, recomputes when the text or the followed
position changes, steps by the trace's argmax byte, and every number it shows is the trace's value
with the trace's own explanation."""
import base64
import json
import math
import subprocess
import sys
import warnings

import pytest

import minitf
from minitf.views.explorer import STATIC
from minitf.views.explorer_model import MAX_BYTES, build_view
from minitf.views.explorer_text import from_text, to_text
from minitf.course.by_hand import shift_by_hand
from minitf.views.heatmaps import byte_labels
from minitf.views.trace import fmt
from support import ROOT

CHECKPOINTS = sorted((ROOT / "data" / "checkpoints").glob("*.pt"))


@pytest.fixture(scope="module")
def tiny():
    return minitf.load(ROOT / "data" / "checkpoints" / "tiny.pt")


def cells(view):
    """(key, value) of every number the browser draws."""
    for section in view["sections"]:
        cards = section["cards"] + [c for h in section["heads"] for c in h["cards"]]
        for card in cards + section.get("after", []):
            for keys, values in zip(card["keys"], card["values"]):
                yield from zip(keys, values)


def check_view_matches_trace(explorer):
    """Every number shown is the trace's value, and its explanation (view["prov"], the trace's own:
    test_the_browser_receives_every_explanation_as_the_trace_writes_it) ends in that value."""
    tr, view = explorer.trace, explorer.view
    shown = list(cells(view))
    assert shown and len({k for k, _ in shown}) == len(shown)  # every number once
    assert list(view["prov"]) == [k for k, _ in shown]
    for key, value in shown:
        expected = tr.value(key)
        if expected == -math.inf:
            assert value is None and ".scores." in key  # JSON has no −∞
        else:
            assert value == expected, key
        assert view["prov"][key].split("   (")[0].endswith(" = " + fmt(expected)), key
    json.dumps({k: v for k, v in view.items() if k != "prov"}, allow_nan=False)  # plain JSON
    return shown


class KernelComm:
    """A comm as a kernel gives a widget: it records what would go to the browser."""
    kernel = object()
    comm_id = "test"

    def __init__(self):
        self.sent = []

    def send(self, data=None, buffers=None, **kw):
        self.sent.append(data)

    def on_msg(self, callback):
        pass

    def close(self, *args, **kw):
        pass


def test_the_browser_receives_every_explanation_as_the_trace_writes_it(tiny):
    """Outside a kernel an explanation is written when read; a browser receives them all (its
    tooltips answer without a kernel, and a saved notebook's widget state keeps them)."""
    ex = minitf.Explorer(tiny, "Hi!\\t")
    assert not any(ex.view["prov"]._keys.values())  # nothing written yet
    ex.widget.comm = KernelComm()
    ex.text = "Hey\\tIf"  # the kernel sends the new view
    (message,) = [m for m in ex.widget.comm.sent if "view" in m.get("state", {})]
    sent = message["state"]["view"]
    json.dumps(sent, allow_nan=False)  # what the widget sends is plain JSON
    keys = [k for k, _ in cells(ex.view)]
    assert list(sent["prov"]) == keys and len(keys) > 300
    assert sent["prov"] == {k: ex.trace.explain(k) for k in keys}
    assert sent == ex.widget.get_state("view")["view"]  # a saved widget state: the same
    with pytest.raises(KeyError, match="not shown"):
        ex.view["prov"]["L0.h0.q.0.99"]


@pytest.mark.parametrize("path", CHECKPOINTS, ids=[p.stem for p in CHECKPOINTS])
def test_the_widget_builds_for_every_checkpoint(path):
    model = minitf.load(path)
    ex = minitf.Explorer(model, "Hi!\\t")
    assert ex.trace.ids == [72, 105, 33, 9] and ex.position == 3  # follows the last byte
    shown = dict(check_view_matches_trace(ex))
    c = model.config
    # the pieces the learner is promised are all there, for every layer and head
    for l in range(c.n_layers):
        for h in range(c.n_heads):
            for name in ("q.3.0", "k.0.0", "v.2.0", "scores.3.0", "weights.3.3", "rowsum.3",
                         "out.3.0") + (("q_rot.3.0", "k_rot.1.0") if c.positions.positional == "rope" else ()):
                assert f"L{l}.h{h}.{name}" in shown, name
        ffn = ("ffn_pre.3.0", "ffn_hidden.3.0", "ffn_out.3.0", "resid2.3.0")  # shift_smallest has none
        norm_stat = "norm1.mean.3" if c.norm == "layer" else "norm1.ms.3"  # RMSNorm: mean square
        for name in ("concat.3.0", "attn_out.3.0", "resid1.3.0", norm_stat) + (ffn if c.ablations.ffn else ()):
            assert f"L{l}.{name}" in shown, name
    assert "ids.0" in shown and "embed.0.0" in shown and f"probs.3.{ex.trace.next_byte()}" in shown
    meta = ex.view["meta"]
    assert meta["prediction"]["byte"] == ex.trace.next_byte(3)
    assert meta["labels"] == ex.trace.labels


def test_changing_the_text_recomputes(tiny):
    ex = minitf.Explorer(tiny, "Hello")
    ex.text = "Hey\\tIf"
    assert ex.trace.ids == minitf.encode("Hey\tIf")
    assert ex.position == 5 and ex.view["meta"]["ids"] == ex.trace.ids
    check_view_matches_trace(ex)
    ex.text = ""
    assert ex.trace is None and "error" in ex.view and ex.step() is None
    assert repr(ex) == 'Explorer("": type 1 to 32 bytes (got 0))'
    ex.text = "ok"
    assert ex.trace.ids == [111, 107] and ex.position == 1


def test_following_another_position(tiny):
    ex = minitf.Explorer(tiny, "Hello")
    ex.position = 1
    assert ex.view["meta"]["position"] == 1
    shown = dict(check_view_matches_trace(ex))
    assert "L0.h0.q.1.0" in shown and "L0.h0.q.4.0" not in shown  # the followed query only
    assert "L0.h0.k.4.0" in shown  # but every key it is scored against
    ex.text = "Hello!"  # a longer input keeps the position that is not the last
    assert ex.position == 1
    ex.position = 5
    ex.text = "Hello!!"  # the last position stays followed
    assert ex.position == 6


def test_step_appends_the_argmax_byte(tiny):
    shift = minitf.load(ROOT / "data" / "checkpoints" / "shift.pt")
    ex = minitf.Explorer(shift, "Hello\\tIfm")
    for _ in range(3):
        before = ex.trace
        expected = int(before.logits[-1].argmax())
        assert ex.step() == expected == before.next_byte()
        assert ex.trace.ids == before.ids + [expected]
        assert ex.position == len(ex.trace.ids) - 1
    assert ex.text == "Hello\\tIfmmp\\n"  # the shift model shifts every byte by one, then stops
    # the browser's button sends a message; the kernel steps the same way, and not past EOS
    ex.text = "Hello\\tIfmm"
    ex.widget._handle_custom_msg({"type": "step"}, [])
    assert len(ex.trace.ids) == 11 and ex.position == 10
    for _ in range(2):
        ex.widget._handle_custom_msg({"type": "step"}, [])
    assert len(ex.trace.ids) == 12 and ex.trace.ids[-1] == minitf.EOS
    # no step past the explorer's length limit
    ex = minitf.Explorer(tiny, "x" * MAX_BYTES)
    assert ex.step() is None and len(ex.trace.ids) == MAX_BYTES


def test_text_escapes_round_trip():
    every = list(range(256))
    assert from_text(to_text(every)) == every
    assert to_text(minitf.encode("a\tb\n\\")) == "a\\tb\\n\\\\"
    assert from_text("é\\x41\\q\\") == list("é".encode()) + [65, 92, ord("q"), 92]


def test_repr_is_stable_and_the_static_view_is_a_png(tiny):
    a, b = minitf.Explorer(tiny, "Hello"), minitf.Explorer(tiny, "Hello")
    assert repr(a) == repr(b) and "0x" not in repr(a)
    assert repr(a).startswith('Explorer("Hello", following position 4 \'o\', greedy next byte')
    bundle = a._repr_mimebundle_()
    assert bundle["text/plain"] == repr(a)
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == a.widget.model_id
    assert base64.b64decode(bundle["image/png"]).startswith(b"\x89PNG")
    assert "0x" not in repr(a.widget)


def drawn_texts(fig) -> list:
    """Every piece of text a figure shows (tick labels are filled in when it is drawn)."""
    from matplotlib.text import Text

    fig.draw_without_rendering()
    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text()
            and t.get_figure() is fig]


def escaped(labels):
    """Labels as the picture writes them: a pair of `$` would be read as mathtext."""
    return [label.replace("$", r"\$") for label in labels]


@pytest.mark.parametrize("checkpoint, text", [("tiny", "Hi\t"), ("tiny", "Hello"),
                                              ("shift", "Hi\t"), ("tiny", "a b\x00$x$")])
@pytest.mark.slow
def test_the_picture_is_legible_and_draws_without_warnings(checkpoint, text):
    """The stored notebooks show this picture: 9 pt or more at their 110 dpi, bytes as
    byte_labels shows them (a raw TAB was a missing-glyph box and a warning), every section the
    notebooks point to, a key for every colour."""
    ex = minitf.Explorer(minitf.load(ROOT / "data" / "checkpoints" / f"{checkpoint}.pt"), text)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        png = ex.static_png()
        fig = ex.static_figure()
        texts = drawn_texts(fig)
    assert not [str(w.message) for w in caught]  # e.g. "Glyph 9 missing from font"
    assert png.startswith(b"\x89PNG")
    png_width = int.from_bytes(png[16:20], "big")  # the IHDR chunk's first field
    assert abs(png_width - fig.get_size_inches()[0] * minitf.notebook.FIGURE_DPI) < 1
    assert min(t.get_fontsize() for t in texts) >= 9
    shown = [t.get_text() for t in texts]
    assert not any(ord(ch) < 32 or ord(ch) == 127 for s in shown for ch in s)  # no raw TAB etc.
    assert "A picture of minitf.Explorer: run the cell to see and hover every number" in shown
    for part in ("(a) the bytes and their embedding rows", "(b) the attention weights",
                 "(c) layer 0 · feed-forward", "(d) the next byte"):
        assert any(s.startswith(part) for s in shown), part
    c, labels = ex.trace.config, escaped(byte_labels(ex.trace.ids))
    for l in range(c.n_layers):
        for h in range(c.n_heads):
            assert f"layer {l} · head {h}" in shown
    assert all(label in shown for label in labels)  # the weights' column labels
    assert shown.count("value") == 2 and "attention weight" in shown  # the colorbars' labels
    nxt = ex.trace.next_byte()
    assert f"{escaped(byte_labels([nxt]))[0]}  ({nxt})" in shown  # the top next byte


def test_the_picture_labels_bytes_as_byte_labels_does(tiny):
    assert repr(minitf.Explorer(tiny, "Hi\t")).startswith('Explorer("Hi⇥", following position 2')
    texts = [t.get_text() for t in drawn_texts(minitf.Explorer(tiny, "a b\t").static_figure())]
    assert "0: a  id 97" in texts and "1: ␣  id 32" in texts and "3: ⇥  id 9" in texts
    assert any(s.startswith("input a␣b⇥ (4 bytes), following position t=3 '⇥'")
               for s in texts)
    error = minitf.Explorer(tiny, "").static_figure()
    assert [t.get_text() for t in drawn_texts(error)] == [
        "minitf.Explorer: type 1 to 32 bytes (got 0)"]


def test_the_view_can_be_built_from_any_trace(tiny):
    tr = minitf.trace(minitf.Transformer(minitf.Config(norm_position="pre", norm="rms",
                                                       positional="sinusoidal", n_heads=1,
                                                       causal=False)), "abc")
    view = build_view(tr, 0)
    keys = {k for k, _ in cells(view)}
    assert {"pos.0.0", "x0.2.3", "L0.norm1.ms.0", "final_norm.ms.0"} <= keys
    assert not any(".scores." in k and v is None for k, v in cells(view))  # nothing masked


def test_the_javascript_ships_in_the_package_and_needs_no_network():
    js = (STATIC / "explorer.js").read_text()
    assert "export default { render }" in js
    assert "http" not in js and "import " not in js  # no CDN, no module imports
    assert (STATIC / "explorer.css").exists()  # that both ship in the wheel: tests/test_wheel.py
    for hook in ("mtf-text", "mtf-step", "mtf-pos", "mtf-cell", "dataset.key", "dataset.value",
                 "mtf-tooltip", "mtf-prediction"):
        assert hook in js, hook


@pytest.mark.slow
def test_import_minitf_does_not_import_anywidget():
    code = "import sys, minitf; print('anywidget' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_summary_of_an_attention_only_model_says_what_it_has():
    """The smallest solver (notebook 11): no FFN, one head, one layer, coupled ids, a tied head;
    its picture's sections run (a), (b), (c) with the next byte as (c)."""
    from minitf.views.explorer_model import model_summary
    from minitf.views.explorer_picture import picture

    model = minitf.load("data/checkpoints/shift_smallest.pt")
    text = model_summary(model.config)
    assert text == ("d_model 6 · 1 head × 6 · 1 layer · no FFN · pre-norm LayerNorm · RoPE on q, k "
                    "(coupled ids) · head tied to the embedding")
    tr = minitf.trace(model, "Hi\t")
    from matplotlib.text import Text
    shown = [t.get_text() for t in picture(tr, 2, "caption").findobj(Text)]
    assert any(s.startswith("(c) the next byte") for s in shown)
    assert not any(s.startswith("(d)") for s in shown)
    assert model_summary(minitf.Config()) == ("d_model 4 · 2 heads × 2 · 2 layers · FFN 8 (relu) · "
                                         "post-norm LayerNorm · RoPE on q, k")


def test_generate_next_byte_stops_at_the_end_of_the_output_and_names_tab_and_eos():
    smallest = minitf.load(ROOT / "data" / "checkpoints" / "shift_smallest.pt")
    ex = minitf.Explorer(smallest, "Hi\t")          # a raw TAB: the text box shows it as \t
    assert ex.text == "Hi\\t"
    assert [ex.step() for _ in range(3)] == [ord("I"), ord("j"), minitf.EOS]
    assert ex.text == "Hi\\tIj\\n" and ex.view["meta"]["ended"]
    assert ex.step() is None and ex.text == "Hi\\tIj\\n"   # nothing after EOS
    ex.text = "Hi\\tIj"
    assert not ex.view["meta"]["ended"]
    assert ex.view["meta"]["prediction"]["name"] == "EOS: the output ends"
    ex.text = "Hi"
    assert ex.view["meta"]["prediction"]["name"] == ""
    assert not ex.view["meta"]["ended"]


def test_a_newline_ends_nothing_in_text_without_a_tab():
    from minitf.views.explorer_model import output_ended
    assert not output_ended(b"one line\n") and output_ended(b"a\tb\n") and not output_ended(b"a\tb")


def test_the_browser_side_disables_the_button_once_the_output_has_ended():
    js = (ROOT / "minitf" / "views" / "static" / "explorer.js").read_text()
    assert "step.disabled = m.T >= m.max_bytes || m.ended;" in js and "p.name" in js


@pytest.mark.parametrize("model, text", [("shift_by_hand", "ab\tbc"), ("tiny", "Hi\t"),
                                         ("shift", "abcdefghijklmnopqrstuvwxyz01234\t")])
def test_every_line_of_the_picture_ends_inside_it(model, text):
    """The summary of a model with many options (notebook 12's: coupled ids, a tied head) ran past
    the right edge ("… head tied to the"): a long line is broken, and nothing reaches the edge."""
    built = (shift_by_hand() if model == "shift_by_hand"
             else minitf.load(ROOT / "data" / "checkpoints" / f"{model}.pt"))
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text

    fig = minitf.Explorer(built, text).static_figure()
    renderer = FigureCanvasAgg(fig).get_renderer()
    right = fig.get_size_inches()[0] * fig.dpi
    for t in fig.findobj(Text):  # the header lines, the keys, every panel's labels
        if t.get_visible() and t.get_text().strip():
            assert t.get_window_extent(renderer).x1 <= right, t.get_text()
    shown = " ".join(t.get_text().replace("\n", " ") for t in fig.texts)
    if model == "shift_by_hand":
        assert "RoPE on q, k (coupled ids)\nhead tied to the embedding" in "\n".join(
            t.get_text() for t in fig.texts)
    assert "A picture of minitf.Explorer" in shown


def test_the_measured_width_of_a_line_is_matplotlibs():
    """The picture breaks its long lines by their width, measured by `_x_extent` (matplotlib's
    `get_extents`, 30 times slower, made the picture take seconds): the same numbers, for quadratic
    curves (the TrueType font's) and cubic ones (matplotlib's own) alike."""
    import numpy as np
    from matplotlib.font_manager import FontProperties
    from matplotlib.path import Path
    from matplotlib.textpath import TextPath
    from minitf.views.explorer_model import model_summary
    from minitf.views.explorer_picture import _x_extent

    lines = [model_summary(shift_by_hand().config), "input a␣b⇥ (4 bytes), following position t=3 '⇥'",
             "(é) ·×→ 0123456789 _-,.:'\" xyz"]
    paths = [TextPath((0, 0), s, size=10, prop=FontProperties(weight=w))
             for s in lines for w in ("normal", "bold")]
    rng = np.random.default_rng(0)
    paths += [Path(rng.normal(size=(8, 2)), [Path.MOVETO] + [Path.CURVE4] * 6 + [Path.CLOSEPOLY]),
              Path(rng.normal(size=(6, 2)), [Path.MOVETO, Path.CURVE3, Path.CURVE3, Path.LINETO,
                                             Path.CURVE3, Path.CURVE3])]
    for path in paths:
        extents = path.get_extents()
        assert _x_extent(path) == pytest.approx((extents.x0, extents.x1), rel=0, abs=1e-12)
