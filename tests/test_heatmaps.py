"""minitf.heatmaps: the weights it shows are the model's, its pattern checks can fail, the selector
redraws, and the bertviz export has the layout head_view expects."""
import pytest
import torch

import minitf
from minitf import heatmaps
from support import small_model


def test_byte_labels_make_invisible_bytes_visible():
    assert heatmaps.byte_labels(b"a b\t\n\x01") == ["a", "␣", "b", "⇥", "⏎", "\\x01"]


def test_attention_weights_are_the_models_own_for_the_sequence_it_reads():
    model = small_model()
    pair = minitf.Pair(b"abc", b"bcd")
    weights, labels = heatmaps.attention_weights(model, pair)
    assert labels == ["a", "b", "c", "⇥", "b", "c", "d"]  # EOS is predicted, never read
    ids = torch.tensor([minitf.sequence(pair)[:-1]])
    _, expected = model(ids, return_attention=True)
    assert len(weights) == 2
    for w, e in zip(weights, expected):
        assert w.shape == (2, 7, 7)
        torch.testing.assert_close(w, e[0])
        torch.testing.assert_close(w.sum(-1), torch.ones(2, 7))
        assert (w.triu(1) == 0).all()  # causal


def test_attention_weights_switch_dropout_off_and_restore_training_mode():
    model = small_model(dropout=0.5).train()
    a, _ = heatmaps.attention_weights(model, (b"hello", b"ifmmp"))
    b, _ = heatmaps.attention_weights(model, (b"hello", b"ifmmp"))
    assert model.training
    torch.testing.assert_close(a, b)


@pytest.mark.parametrize("task,expected", [("copy", [0, 1, 2, 3]), ("shift", [0, 1, 2, 3]),
                                           ("reverse", [3, 2, 1, 0])])
def test_source_position(task, expected):
    assert [heatmaps.source_position(task, 4, k) for k in range(4)] == expected


@pytest.mark.parametrize("call, reason", [
    (lambda: heatmaps.source_position("sort", 3, 0), "sort"),
    (lambda: heatmaps.source_position("copy", 3, 3), "outside"),
    (lambda: heatmaps.AttentionSelector([]), "at least one"),
    (lambda: heatmaps.to_bertviz([torch.zeros(2, 2, 3, 3)]), "layer 0"),  # a batch of many
], ids=["sort", "outside", "no examples", "bertviz batch"])
def test_what_heatmaps_cannot_answer_is_refused_with_the_reason(call, reason):
    with pytest.raises(ValueError, match=reason):
        call()


def ideal_weights(n, task, heads=2):
    """(H, T, T) weights where head 0 does the task perfectly and head 1 looks at itself."""
    T = 2 * n + 1
    w = torch.zeros(heads, T, T)
    w[1] = torch.eye(T)
    w[0] = torch.eye(T)
    for k in range(n):
        w[0, n + k] = 0
        w[0, n + k, heatmaps.source_position(task, n, k)] = 1
    return w


@pytest.mark.parametrize("task", ["copy", "reverse"])
def test_head_hits_finds_the_head_that_does_the_task(task):
    hits = heatmaps.head_hits(ideal_weights(5, task), 5, task)
    assert hits.shape == (2, 5)
    assert hits[0].all() and not hits[1].any()


def test_head_hits_tells_copy_from_reverse():
    hits = heatmaps.head_hits(ideal_weights(5, "copy"), 5, "reverse")
    assert hits[0].tolist() == [False, False, True, False, False]  # only the middle byte agrees


def test_head_scores_is_a_fraction_per_layer_and_head():
    model = small_model()
    pairs = minitf.make_pairs("copy", 5, seed=0, max_len=6)
    scores = heatmaps.head_scores(model, pairs, "copy")
    assert scores.shape == (2, 2)
    assert ((scores >= 0) & (scores <= 1)).all()
    total = sum(len(p.output) for p in pairs)
    manual = sum(heatmaps.head_hits(heatmaps.attention_weights(model, p)[0][1], len(p.input), "copy")[0].sum()
                 for p in pairs)
    assert scores[1, 0].item() == pytest.approx(manual.item() / total)


def test_plot_attention_draws_one_panel_per_layer_and_head_with_byte_labels_and_a_colorbar():
    model = small_model()
    weights, labels = heatmaps.attention_weights(model, (b"ab", b"bc"))
    fig = heatmaps.plot_attention(weights, labels)
    *panels, colorbar = fig.axes
    assert len(panels) == 4 and colorbar.get_ylabel().startswith("attention weight")
    assert colorbar.get_ylim() == (0.0, 1.0)
    ticks = lambda axis: [t.get_text() for t in axis]
    assert ticks(panels[2].get_xticklabels()) == ["a", "b", "⇥", "b", "c"]  # bottom row
    assert ticks(panels[0].get_yticklabels()) == ["a", "b", "⇥", "b", "c"]  # left column
    assert not ticks(panels[1].get_yticklabels()) and not ticks(panels[0].get_xticklabels())
    assert panels[0].get_title() == "layer 0 · head 0"
    fig = heatmaps.plot_attention(weights, labels, layers=[1], heads=[0])
    assert len(fig.axes) == 2 and fig.axes[0].get_title() == "layer 1 · head 0"
    torch.testing.assert_close(torch.tensor(fig.axes[0].images[0].get_array().data),
                               weights[1][0].double(), check_dtype=False)


def capital_px(label, dpi):
    """How tall a capital letter of this tick label's font is drawn, in pixels."""
    from matplotlib.textpath import TextPath

    points = TextPath((0, 0), "H", size=label.get_fontsize(), prop=label.get_fontproperties())
    return points.get_extents().height * dpi / 72


@pytest.mark.parametrize("size,n_labels", [(2.0, 18), (2.0, 30), (7.0, 25)])
def test_byte_labels_have_capitals_at_least_9_px_tall(size, n_labels):
    weights = [torch.full((2, n_labels, n_labels), 1 / n_labels)]
    fig = heatmaps.plot_attention(weights, ["a"] * n_labels, size=size)
    dpi = minitf.notebook.FIGURE_DPI
    for ax in fig.axes[:-1]:
        for t in ax.get_xticklabels() + ax.get_yticklabels():
            assert capital_px(t, dpi) >= 9


def test_each_panel_is_size_inches_square_so_18_bytes_fit_at_2_05():
    """06 draws all 8 heads of an 18-byte sequence at size 2.05: each label's font fits its byte's row."""
    n, size = 18, 2.05
    fig = heatmaps.plot_attention([torch.full((4, n, n), 1 / n)] * 2, ["a"] * n, size=size)
    for ax in fig.axes[:-1]:
        ax.apply_aspect()
        box = ax.get_position()
        assert box.width * fig.get_figwidth() == pytest.approx(size, abs=0.01)
        assert box.height * fig.get_figheight() == pytest.approx(size, abs=0.01)
    assert size * 72 / n >= heatmaps.label_size(size, n)

@pytest.fixture
def unrendered(monkeypatch):
    """Selectors that build their figures but render no PNG: for the tests of what they draw, not
    how (test_selector_redraws_when_a_control_changes renders its first pictures)."""
    monkeypatch.setattr(heatmaps, "figure_png", lambda fig: b"")


def test_selector_redraws_when_a_control_changes(monkeypatch):
    model, wide = small_model(), minitf.Transformer(minitf.Config(d_model=8, n_heads=4, n_layers=3))
    examples = [("copy", model, minitf.Pair(b"ab", b"ab")), ("shift", model, minitf.Pair(b"hello", b"ifmmp")),
                ("wide", wide, minitf.Pair(b"xy", b"yz"))]
    sel = heatmaps.AttentionSelector(examples)
    assert sel.drawn == (0, 0, 0) and len(sel.out.outputs) == 1
    first = sel.out.outputs[0]["data"]["image/png"]
    sel.example.value = 1
    assert sel.drawn == (1, 0, 0)
    sel.layer.value = 1
    sel.head.value = 1
    assert sel.drawn == (1, 1, 1) and len(sel.out.outputs) == 1
    assert sel.out.outputs[0]["data"]["image/png"] != first
    monkeypatch.setattr(heatmaps, "figure_png", lambda fig: b"")  # from here on, what is drawn, not how
    assert (sel.layer.max, sel.head.max) == (1, 1)
    assert [label for label, _ in sel.example.options] == ["copy: ab → ab", "shift: hello → ifmmp", "wide: xy → yz"]
    sel.example.value = 2
    assert (sel.layer.max, sel.head.max) == (2, 3)
    sel.head.value = 3
    assert sel.drawn == (2, 1, 3)
    sel.example.value = 0  # the slider is clipped to the smaller model's range before drawing
    assert sel.drawn == (0, 1, 1)


def test_selector_sliders_keep_a_usable_track_in_a_narrow_panel(unrendered):
    """JupyterLab squeezed the layer and head sliders of a 950-px panel to tracks of a few pixels:
    each now has a fixed width (and the same minimum), and the row of controls wraps instead."""
    sel = heatmaps.AttentionSelector([("shift", small_model(), (b"ab", b"bc"))])
    for slider in (sel.layer, sel.head):
        width, least = (int(v.removesuffix("px")) for v in (slider.layout.width, slider.layout.min_width))
        label = int(slider.style.description_width.removesuffix("px"))
        assert width == least and width - label - 50 >= 120  # 50 px: the readout beside the track
    row = sel.widget.children[1]
    assert sel.layer in row.children and row.layout.flex_flow == "row wrap"


def test_selector_starts_where_asked_with_one_drawing(unrendered):
    model = small_model()
    sel = heatmaps.AttentionSelector([("a", model, (b"ab", b"bc")), ("b", model, (b"xyz", b"yz{"))],
                                     example=1, layer=1, head=1)
    assert sel.drawn == (1, 1, 1) and len(sel.out.outputs) == 1


def test_selector_takes_typed_input_and_switches_heads_off(unrendered):
    model = small_model()
    sel = heatmaps.AttentionSelector([("shift", model, (b"ab", b"bc"))], layer=1, head=0)
    assert sel.state["input"] == b"ab"
    assert sel.state["output"] == minitf.generate(model, b"ab")[:2 + sel.EXTRA_BYTES]
    assert sel.state["right"] == b"bc" and sel.text.value == "ab"
    sel.text.value = "hello"
    assert sel.state["input"] == b"hello" and sel.state["labels"][:6] == list("hello") + ["⇥"]
    before = sel.state
    assert "mtf-ablate" in sel.switch_off._dom_classes
    sel.switch_off.value = True
    assert sel.off == {(1, 0)} and sel.state["off"] == [(1, 0)]
    ablated = minitf.ablate_heads(model, [(1, 0)])
    assert sel.state["output"] == minitf.generate(ablated, b"hello")[:5 + sel.EXTRA_BYTES]
    expected, _ = heatmaps.attention_weights(ablated, (b"hello", sel.state["output"]))
    torch.testing.assert_close(sel.state["weights"][1], expected[1])
    assert "switched off" in sel.output.value and sel.drawn == (0, 1, 0)
    sel.head.value = 1  # another head: the checkbox shows that one's state, the first stays off
    assert sel.switch_off.value is False and sel.off == {(1, 0)}
    sel.head.value = 0
    assert sel.switch_off.value is True
    sel.switch_off.value = False
    assert sel.off == set()
    torch.testing.assert_close(sel.state["weights"][1], before["weights"][1])


def test_to_bertviz_gives_one_batch_of_one_per_layer():
    model = small_model()
    ids = torch.tensor([list(b"ab\tbc")])
    _, raw = model(ids, return_attention=True)
    for source in (raw, [w[0] for w in raw]):
        out = heatmaps.to_bertviz(source)
        assert len(out) == 2
        for o, r in zip(out, raw):
            assert o.shape == (1, 2, 5, 5) and not o.requires_grad
            torch.testing.assert_close(o, r)


@pytest.mark.slow
def test_selector_stops_an_output_that_never_ends_a_few_bytes_past_the_input():
    model = small_model()
    with torch.no_grad():
        model.head.bias[ord("a")] = 100.0   # writes "a" for ever, never ⏎
    sel = heatmaps.AttentionSelector([("shift", model, (b"hello", b"ifmmp"))], layer=1, head=0)
    s = sel.state
    assert s["stopped"] and s["output"] == b"a" * (5 + sel.EXTRA_BYTES)
    assert len(s["labels"]) == 5 + 1 + 5 + sel.EXTRA_BYTES
    assert "no ⏎ after 9 bytes: stopped" in sel.output.value
    sel.text.value = "x" * 40                      # a long input: the title is clipped, not the figure
    fig = heatmaps.plot_attention(sel.state["weights"], sel.state["labels"], [1], [0], sel.size,
                                  title="x" * 16 + " ⇥ → " + "a" * 15 + "…")
    assert fig.get_size_inches()[0] < 850 / 110


def test_plot_attention_wraps_panels_into_columns():
    n = 17
    weights = [torch.full((4, n, n), 1 / n)] * 2
    fig = heatmaps.plot_attention(weights, ["a"] * n, size=2.9, columns=2)
    shown = [ax for ax in fig.axes if ax.get_visible() and ax.get_title()]
    assert [ax.get_title() for ax in shown] == [f"layer {l} · head {h}" for l in range(2) for h in range(4)]
    assert fig.get_size_inches()[0] * 110 <= 850
    assert min(t.get_fontsize() for ax in shown for t in ax.get_yticklabels()) >= 9


def test_load_task_models_gives_held_out_pairs_the_run_never_trained_on():
    models, held_out = heatmaps.load_task_models(("shift", "reverse"), n_val=12, folder="data/checkpoints")
    assert set(models) == set(held_out) == {"shift", "reverse"}
    for task, model in models.items():
        train, val = minitf.checkpoint_pairs(model, n_val=12)
        assert held_out[task] == val and len(val) == 12
        assert not {p.input for p in val} & {p.input for p in train}
        assert all(p.output == minitf.TASKS[task](p.input) for p in val)


def test_mean_ablated_takes_the_mean_over_the_output_rows_of_the_runs_held_out_pairs():
    model = minitf.load("data/checkpoints/shift_uniform.pt")
    ids, targets = minitf.make_batch(minitf.checkpoint_pairs(model, n_val=20)[1])
    expected = minitf.mean_ablate_heads(model, [(1, 2)], ids, targets != minitf.IGNORE)
    got = heatmaps.mean_ablated(model, [(1, 2)], n_val=20)
    probe = heatmaps.model_input(("Hello", "Ifmmp"))
    with torch.no_grad():
        torch.testing.assert_close(got(probe), expected(probe))
        assert not torch.equal(got(probe), model(probe))   # the head's output did change


def test_zero_against_mean_draws_both_bars_of_every_head_with_a_key():
    zeroed = {(t, l, h): 0.25 * h for t in ("shift", "reverse") for l in range(2) for h in range(4)}
    mean = {k: 1 - v for k, v in zeroed.items()}
    fig = heatmaps.plot_zero_against_mean(zeroed, mean)
    ax = fig.axes[0]
    heights = sorted(round(p.get_height(), 6) for p in ax.patches)
    assert len(ax.patches) == 16 and heights == sorted(round(100 * v, 6) for d in (zeroed, mean)
                                                       for (t, _, _), v in d.items() if t == "shift")
    assert [t.get_text() for t in fig.axes[1].get_legend().get_texts()] == ["zeroed", "replaced by its mean"]


@pytest.mark.parametrize("n_input", [3, 9])
def test_source_rings_sit_inside_their_cells(n_input):
    """A ring is at most 0.8 of its cell, so the weight under it stays visible (05's TrainingView
    and 06's heatmaps showed rings larger than the cells)."""
    text = bytes(range(65, 65 + n_input))
    weights, labels = heatmaps.attention_weights(minitf.Transformer(minitf.Config()), (text, minitf.shift_bytes(text)))
    fig = heatmaps.plot_attention(weights, labels, size=2.0)
    ax = fig.axes[0]
    heatmaps.mark_sources(ax, "shift", n_input, n_input)
    ring = ax.collections[-1]
    cell_points = ax.get_position().width * fig.get_figwidth() * 72 / len(labels)
    assert ring.get_sizes()[0] ** 0.5 <= 0.8 * cell_points
