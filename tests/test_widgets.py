"""The RoPE slider widget: moving a slider (setting `.value`) redraws, and the drawn numbers are right.
Every view also shows as a picture where widgets cannot run (`minitf.views.pictures.ShowsPicture`)."""
import base64
import io
import math
import ipywidgets as W

import pytest
import torch

from minitf import RopeExplorer
from minitf.views import pictures as widgets
from minitf.views.pictures import WIDGET_VIEW


def rotate(pair, angle):
    """A 2-vector rotated by `angle`, written out."""
    a, b = pair.tolist()
    return torch.tensor([a * math.cos(angle) - b * math.sin(angle),
                         a * math.sin(angle) + b * math.cos(angle)], dtype=torch.float64)


def new_explorer():
    q = torch.tensor([1.0, 0.0, 0.5, -0.5, 0.2, 0.3, -1.0, 0.4], dtype=torch.float64)
    k = torch.tensor([0.0, 1.0, -0.3, 0.8, 0.6, 0.1, 0.5, 0.5], dtype=torch.float64)
    return RopeExplorer(q, k, head_dim=8, base=10000.0, max_pos=20, m=3, n=1)


@pytest.fixture
def explorer():
    return new_explorer()


@pytest.fixture
def unrendered(monkeypatch):
    """The explorer for a test of the numbers it draws: its figures, the first one too, are built
    but not rendered (the tests of the picture render them)."""
    monkeypatch.setattr("minitf.views.rope_explorer.figure_png", lambda fig: b"")
    return new_explorer()


def test_the_sliders_are_there_and_the_first_picture_is_drawn(explorer):
    assert [type(s) for s in explorer.sliders] == [W.IntSlider, W.IntSlider, W.FloatLogSlider,
                                                  W.IntSlider]
    assert [s.description for s in explorer.sliders] == ["query position m", "key position n",
                                                        "base", "pair i"]
    assert explorer.redraws == 1 and len(explorer.out.outputs) == 1
    assert explorer.out.outputs[0]["output_type"] == "display_data"


def test_moving_a_slider_redraws_with_the_new_rotation(unrendered):
    unrendered.query_pos.value = 7
    s = unrendered.state
    assert unrendered.redraws == 2 and len(unrendered.out.outputs) == 1  # replaced, not appended
    assert s["m"] == 7 and s["theta"] == 1.0  # pair 0 turns 1 rad per position
    assert torch.allclose(s["q_rot"], rotate(unrendered.q[0:2], 7 * 1.0), atol=1e-12)
    assert torch.allclose(s["k_rot"], rotate(unrendered.k[0:2], 1 * 1.0), atol=1e-12)
    assert torch.allclose(s["q_rot"].norm(), unrendered.q[0:2].norm(), atol=1e-12)
    # the whole head's score, every pair rotated by hand
    thetas = [10000.0 ** (-2 * i / 8) for i in range(4)]
    score = sum(rotate(unrendered.q[2 * i:2 * i + 2], 7 * t) @ rotate(unrendered.k[2 * i:2 * i + 2], t)
                for i, t in enumerate(thetas))
    assert s["score"] == pytest.approx(float(score), abs=1e-12)
    # the curve is drawn against m − n and passes through the marked point
    assert s["curve"][s["offsets"].tolist().index(7 - 1)].item() == pytest.approx(s["score"], abs=1e-12)


def test_the_score_depends_on_the_offset_only(unrendered):
    unrendered.query_pos.value, unrendered.key_pos.value = 9, 4
    first = unrendered.state["score"]
    unrendered.query_pos.value, unrendered.key_pos.value = 17, 12
    assert unrendered.state["score"] == pytest.approx(first, abs=1e-12)
    unrendered.key_pos.value = 13
    assert unrendered.state["score"] != pytest.approx(first, abs=1e-3)


def test_base_and_pair_sliders_change_what_is_drawn(unrendered):
    unrendered.pair.value = 2
    assert torch.equal(unrendered.state["q_pair"], unrendered.q[4:6])
    assert unrendered.state["theta"] == pytest.approx(10000.0 ** (-4 / 8))
    unrendered.base.value = 100.0
    s = unrendered.state
    assert s["theta"] == pytest.approx(100.0 ** (-4 / 8))
    assert s["period"] == pytest.approx(2 * math.pi / s["theta"])
    assert torch.allclose(s["q_rot"], rotate(unrendered.q[4:6], 3 * s["theta"]), atol=1e-12)
    assert unrendered.redraws == 3


@pytest.mark.slow
def test_head_dim_2_has_one_frequency_whatever_the_base():
    e = RopeExplorer(head_dim=2)
    assert e.pair.disabled and e.pair.max == 0
    for base in (10.0, 1000.0, 100000.0):
        e.base.value = base
        assert e.state["theta"] == 1.0 and e.state["period"] == pytest.approx(2 * math.pi)


def png_size(png: bytes) -> tuple[int, int]:
    """(width, height) from a PNG's header."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def test_the_figure_has_both_panels_and_is_drawn_as_a_png_whatever_the_backend(explorer):
    assert len(explorer.figure(explorer.state).axes) == 2
    explorer.key_pos.value = 5
    png = explorer.out.outputs[0]["data"]["image/png"]
    assert widgets.output_png(explorer.out) == (base64.b64decode(png) if isinstance(png, str) else png)


def test_the_display_bundle_holds_the_live_view_a_picture_and_a_short_stable_text(explorer):
    bundle = explorer._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "image/png", WIDGET_VIEW}
    assert bundle[WIDGET_VIEW]["model_id"] == explorer.widget.model_id
    assert bundle["text/plain"] == ("RopeExplorer(query position m = 3 · key position n = 1 · "
                                    "base = 10,000 · pair i = 0)")  # nbval compares it: no ids
    picture = base64.b64decode(bundle["image/png"])
    plot = widgets.output_png(explorer.out)
    (w, h), (pw, ph) = png_size(picture), png_size(plot)
    assert w == pw and h > ph  # the plot, pixel for pixel, under a caption band
    explorer.base.value = 100.0
    moved = explorer._repr_mimebundle_()
    assert "base = 100" in moved["text/plain"]
    assert moved["image/png"] != bundle["image/png"]  # the picture follows


def test_the_picture_is_the_plot_under_the_controls_values():
    from matplotlib.image import imread

    plot = widgets.figure_png(_red_figure())
    picture = widgets.captioned(plot, "a = 1\nb = 2")
    image, original = imread(io.BytesIO(picture)), imread(io.BytesIO(plot))
    band = image.shape[0] - original.shape[0]
    assert band > 20  # two lines of text
    assert (image[band:, :, :3] == original[:, :, :3]).all()  # the plot untouched below the band
    assert png_size(widgets.captioned(None, "no plot yet"))[1] < 40  # the caption alone


def _red_figure():
    from matplotlib.figure import Figure

    fig = Figure(figsize=(2, 1), dpi=50)
    fig.patch.set_color("red")
    return fig


def test_control_values_read_as_on_screen():
    controls = [W.IntSlider(value=3, description="layer"),
                W.Dropdown(options=[("copy: ab", 0), ("shift: ab", 1)], value=1, description="example"),
                W.FloatLogSlider(value=10000.0, description="base"), W.FloatSlider(value=0.25, description="T"),
                W.Checkbox(value=True, description="switch off"), W.Text(value="Hi", description="input")]
    assert widgets.control_values(controls) == ("layer = 3 · example = shift: ab · base = 10,000 · "
                                                "T = 0.25 · switch off = yes · input = Hi")


def test_any_widget_can_show_a_picture():
    """The mixin needs only `.widget`, `picture()` and `__repr__` (e.g. an anywidget view)."""
    class Counter(widgets.ShowsPicture):
        def __init__(self):
            self.widget = W.IntText(value=7)

        def picture(self):
            return widgets.captioned(None, f"count = {self.widget.value}")

        def __repr__(self):
            return f"Counter({self.widget.value})"

    c = Counter()
    bundle = c._repr_mimebundle_(include=None, exclude=None)
    assert bundle["text/plain"] == "Counter(7)" and bundle[WIDGET_VIEW]["model_id"] == c.widget.model_id
    c.widget.close()  # a closed widget has no view left: the picture and the text remain
    assert set(c._repr_mimebundle_()) == {"text/plain", "image/png"}


def test_ipython_displays_the_bundle(explorer):
    from IPython.core.interactiveshell import InteractiveShell

    data, _ = InteractiveShell.instance().display_formatter.format(explorer)
    assert {"text/plain", "image/png", WIDGET_VIEW} <= set(data)
    assert data["text/plain"].startswith("RopeExplorer(")


def test_odd_head_dim_is_refused():
    with pytest.raises(ValueError, match="even"):
        RopeExplorer(head_dim=3)
