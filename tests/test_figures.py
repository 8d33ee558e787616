"""minitf.figures: the batch picture shows make_batch's own numbers, with a key for every colour."""
import math

import matplotlib.colors as mcolors
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
import pytest
import torch

import minitf
from minitf.views import figures
from minitf.views.figures import plot_training

PAIRS = [minitf.Pair(b"Hi", b"Ij"), minitf.Pair(b"cat", b"dbu"), minitf.Pair(b"a~z", b"b {")]


def test_roles_follow_the_sequence_layout():
    assert figures.batch_roles(PAIRS) == [
        ["input", "input", "TAB", "output", "output", "pad", "pad"],
        ["input", "input", "input", "TAB", "output", "output", "output"],
        ["input", "input", "input", "TAB", "output", "output", "output"]]


def cells(ax):
    """{(row, column): (facecolour hex, text)} of one panel."""
    colours = {(round(p.get_y() + 0.5), round(p.get_x() + 0.5)): mcolors.to_hex(p.get_facecolor())
               for p in ax.patches}
    texts = {(round(t.get_position()[1]), round(t.get_position()[0])): t.get_text() for t in ax.texts}
    return {k: (colours[k], texts[k]) for k in colours}


def test_batch_picture_shows_every_byte_and_colours_only_the_counted_targets_green():
    fig = figures.draw_batch(PAIRS)
    top, bottom = fig.axes
    ids, targets = minitf.make_batch(PAIRS)
    read, predict = cells(top), cells(bottom)
    assert len(read) == len(predict) == ids.numel()
    green = figures.TARGET_COLOURS["counted in the loss"]
    assert {k for k, (c, _) in predict.items() if c == green} == \
        {(b, t) for b in range(3) for t in range(7) if targets[b, t] != minitf.IGNORE}
    assert read[(0, 2)] == (figures.READ_COLOURS["TAB"], "⇥")
    assert read[(2, 5)] == (figures.READ_COLOURS["output"], "␣")
    assert read[(0, 6)] == (figures.READ_COLOURS["pad"], "pad")
    assert predict[(1, 6)][1] == "⏎" and predict[(0, 0)][1] == "·"


def test_batch_picture_has_a_key_for_every_colour_and_readable_text():
    fig = figures.draw_batch(PAIRS)
    for ax, key in zip(fig.axes, (figures.READ_COLOURS, figures.TARGET_COLOURS)):
        legend = ax.get_legend()
        assert [t.get_text() for t in legend.get_texts()] == list(key)
        used = {mcolors.to_hex(p.get_facecolor()) for p in ax.patches}
        assert used <= set(key.values())
        assert min(t.get_fontsize() for t in ax.texts) >= 9
        assert min(t.get_fontsize() for t in ax.get_xticklabels() + ax.get_yticklabels()) >= 9
    assert fig.get_size_inches()[0] * 110 > 600  # about twice the old 317 px


def test_plot_training_draws_a_checkpoints_curves_beside_baselines():
    meta = minitf.load("data/checkpoints/lm.pt").metadata
    fig = plot_training(meta, {"bigram": 2.5})
    ax = fig.axes[0]
    assert ax.get_ylabel() == "bits per byte"  # a text model: bits per byte
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert len(lines["validation"].get_xdata()) == len(meta["val_curve"])
    assert lines["bigram"].get_ydata()[0] == pytest.approx(2.5 / math.log(2))
    pairs = minitf.load("data/checkpoints/shift.pt").metadata
    assert plot_training(pairs).axes[0].get_ylabel() == "loss (nats)"


def test_plot_bytes_read_marks_each_span_with_its_mean():
    from minitf.views.figures import plot_bytes_read
    bits = torch.linspace(4, 2, 64)
    fig = plot_bytes_read(bits, [(1, 1), (2, 4), (5, 64)], ("bigram", 3.6))
    means = [line for line in fig.axes[0].get_lines() if line.get_linewidth() == 3]
    assert [round(float(m.get_ydata()[0]), 4) for m in means] == [4.0, round(float(bits[1:4].mean()), 4),
                                                                  round(float(bits[4:].mean()), 4)]


def test_plot_training_can_put_its_legend_below_the_curves():
    meta = {"loss_curve_every": 10, "loss_curve": [4.0, 3.0, 2.0], "val_curve": [{"step": 30, "loss": 2.5}]}
    [legend] = [c for c in plot_training(meta, {"unigram": 4.3}, legend_below=True).axes[0].get_children()
                if type(c).__name__ == "Legend"]
    assert legend._loc == 9 and legend.get_bbox_to_anchor().y0 < 0   # upper center, anchored below the axes


def test_plot_logged_says_how_many_points_each_metric_has_and_how_often():
    from minitf.views.figures import plot_logged
    metrics = {"train_loss": [(49, 3.0), (99, 2.0), (149, 1.5), (199, 1.2)], "val_loss": [(99, 2.5), (199, 1.4)]}
    ax = plot_logged(metrics).axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "train_loss (4 points, logged every 50 steps)", "val_loss (2 points, logged every 100 steps)"]
    assert list(ax.lines[0].get_xdata()) == [49, 99, 149, 199]


def rendered(fig):
    """The figure's pixels (H, W, 4), as the inline backend draws them."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return np.asarray(canvas.buffer_rgba())


def pixels_of(fig, colour: str) -> int:
    rgb = np.array(mcolors.to_rgb(colour)) * 255
    return int((np.abs(rendered(fig)[..., :3].astype(float) - rgb).max(-1) < 24).sum())


def test_a_curve_that_coincides_with_a_later_one_stays_visible():
    """Notebook 12: the by-hand model and the slow-frequency solver are both at 100 % everywhere, and
    the later curve hid "by hand (yours)". Each earlier curve now rims the later ones."""
    perfect = {n: 1.0 for n in range(1, 25)}
    alone = pixels_of(figures.plot_exact_by_length({"by hand": perfect}), "C0")
    falls = {n: 1.0 if n <= 12 else 0.0 for n in range(1, 25)}
    covered = pixels_of(figures.plot_exact_by_length({"by hand": perfect, "a": falls, "b": falls,
                                                      "trained": perfect}), "C0")
    assert covered > 0.4 * alone, (covered, alone)


def test_copied_layer_draws_w_x_and_the_plain_copies_output_with_a_key():
    """07's predict figure: the grid of plain copies (no 1/k) applied to k copies of x gives k·W x."""
    W = torch.tensor([[1.0, -2.0, 0.5], [3.0, 0.0, -1.0]])
    x = torch.tensor([1.0, 2.0, -1.0])
    for k in (2, 3):
        fig = figures.plot_copied_layer(W, x, k=k)
        heights = [p.get_height() for p in fig.axes[0].patches]
        assert heights == pytest.approx((W @ x).tolist() + (k * W @ x).tolist() * k)
        assert len(fig.legends) == 1 and len(fig.legends[0].get_texts()) == 2
