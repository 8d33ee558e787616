"""The RoPE slider widget: moving a slider (setting `.value`) redraws, and the drawn numbers are right."""
import math

import pytest
import torch

from minitf import RopeExplorer


def rotate(pair, angle):
    """A 2-vector rotated by `angle`, written out."""
    a, b = pair.tolist()
    return torch.tensor([a * math.cos(angle) - b * math.sin(angle),
                         a * math.sin(angle) + b * math.cos(angle)], dtype=torch.float64)


@pytest.fixture
def explorer():
    q = torch.tensor([1.0, 0.0, 0.5, -0.5, 0.2, 0.3, -1.0, 0.4], dtype=torch.float64)
    k = torch.tensor([0.0, 1.0, -0.3, 0.8, 0.6, 0.1, 0.5, 0.5], dtype=torch.float64)
    return RopeExplorer(q, k, head_dim=8, base=10000.0, max_pos=20, m=3, n=1)


def test_the_sliders_are_there_and_the_first_picture_is_drawn(explorer):
    import ipywidgets as W

    assert [type(s) for s in explorer.sliders] == [W.IntSlider, W.IntSlider, W.FloatLogSlider,
                                                  W.IntSlider]
    assert [s.description for s in explorer.sliders] == ["query position m", "key position n",
                                                        "base", "pair i"]
    assert explorer.redraws == 1 and len(explorer.out.outputs) == 1
    assert explorer.out.outputs[0]["output_type"] == "display_data"


def test_moving_a_slider_redraws_with_the_new_rotation(explorer):
    explorer.query_pos.value = 7
    s = explorer.state
    assert explorer.redraws == 2 and len(explorer.out.outputs) == 1  # replaced, not appended
    assert s["m"] == 7 and s["theta"] == 1.0  # pair 0 turns 1 rad per position
    assert torch.allclose(s["q_rot"], rotate(explorer.q[0:2], 7 * 1.0), atol=1e-12)
    assert torch.allclose(s["k_rot"], rotate(explorer.k[0:2], 1 * 1.0), atol=1e-12)
    assert torch.allclose(s["q_rot"].norm(), explorer.q[0:2].norm(), atol=1e-12)
    # the whole head's score, every pair rotated by hand
    thetas = [10000.0 ** (-2 * i / 8) for i in range(4)]
    score = sum(rotate(explorer.q[2 * i:2 * i + 2], 7 * t) @ rotate(explorer.k[2 * i:2 * i + 2], t)
                for i, t in enumerate(thetas))
    assert s["score"] == pytest.approx(float(score), abs=1e-12)
    # the curve is drawn against m − n and passes through the marked point
    assert s["curve"][s["offsets"].tolist().index(7 - 1)].item() == pytest.approx(s["score"], abs=1e-12)


def test_the_score_depends_on_the_offset_only(explorer):
    explorer.query_pos.value, explorer.key_pos.value = 9, 4
    first = explorer.state["score"]
    explorer.query_pos.value, explorer.key_pos.value = 17, 12
    assert explorer.state["score"] == pytest.approx(first, abs=1e-12)
    explorer.key_pos.value = 13
    assert explorer.state["score"] != pytest.approx(first, abs=1e-3)


def test_base_and_pair_sliders_change_what_is_drawn(explorer):
    explorer.pair.value = 2
    assert torch.equal(explorer.state["q_pair"], explorer.q[4:6])
    assert explorer.state["theta"] == pytest.approx(10000.0 ** (-4 / 8))
    explorer.base.value = 100.0
    s = explorer.state
    assert s["theta"] == pytest.approx(100.0 ** (-4 / 8))
    assert s["period"] == pytest.approx(2 * math.pi / s["theta"])
    assert torch.allclose(s["q_rot"], rotate(explorer.q[4:6], 3 * s["theta"]), atol=1e-12)
    assert explorer.redraws == 3


def test_head_dim_2_has_one_frequency_whatever_the_base():
    e = RopeExplorer(head_dim=2)
    assert e.pair.disabled and e.pair.max == 0
    for base in (10.0, 1000.0, 100000.0):
        e.base.value = base
        assert e.state["theta"] == 1.0 and e.state["period"] == pytest.approx(2 * math.pi)


def test_the_figure_has_both_panels_and_becomes_a_png_under_the_inline_backend(explorer):
    fig = explorer.figure(explorer.state)
    assert len(fig.axes) == 2
    from IPython.core.interactiveshell import InteractiveShell
    from matplotlib_inline.backend_inline import set_matplotlib_formats

    formatters = InteractiveShell.instance().display_formatter.formatters
    saved = {mime: dict(f.type_printers) for mime, f in formatters.items()}
    try:
        set_matplotlib_formats("png")  # what minitf.notebook.setup() does in a kernel
        explorer.key_pos.value = 5
        assert "image/png" in explorer.out.outputs[0]["data"]
    finally:  # leave the shared IPython formatters as they were for the other tests
        for mime, printers in saved.items():
            formatters[mime].type_printers = printers


def test_odd_head_dim_is_refused():
    with pytest.raises(ValueError, match="even"):
        RopeExplorer(head_dim=3)
