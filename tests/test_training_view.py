"""TrainingView: what it draws is minitf.train's History, it redraws at every validation, and its
progress measure (the attention on the source byte) is the one the heatmaps show."""
import base64

import pytest
import torch

import minitf
from minitf.views.heatmaps import attention_weights
from minitf.views.pictures import WIDGET_VIEW, live_and_picture, output_png
from minitf.views.training_view import TrainingView, source_attention

CONFIG = minitf.Config(d_model=8, n_heads=2, n_layers=1, d_ff=16, norm_position="pre", dropout=0.0,
                       rope_base=20.0, position_ids="coupled", tie_embeddings=True)
ARGS = dict(steps=24, every=8, batch_size=16, lr=3e-2, warmup=4, seed=3)


pytestmark = pytest.mark.usefixtures("one_thread")  # conftest.one_thread


@pytest.fixture(scope="module")
def data():
    train, val = minitf.data.make_splits("shift", 300, 30, repeats=0.33, val_repeats=0.33)
    return train, val, minitf.Pair(b"Hello", b"Ifmmp")


@pytest.fixture(scope="module")
def trained(data):
    """A view trained twice from the same start, as its button does, every redraw's picture kept:
    shared because training and drawing are most of this file's time, and no test changes it."""
    train, val, example = data
    view = TrainingView(CONFIG, train, val, example, probe=20, **ARGS)
    seen, redraw, threads = [], view.redraw, torch.get_num_threads()

    def spy():
        redraw()
        seen.append((view.drawn["steps"][-1:], output_png(view.out)))
    view.redraw = spy
    torch.set_num_threads(1)  # as the tests' own runs (one_thread, which a module fixture precedes)
    try:
        view.train()
        history = view.train()
    finally:
        torch.set_num_threads(threads)
    return view, history, seen


def test_what_is_drawn_is_the_history_of_minitf_train(data, trained):
    view, history, _ = trained
    train, val, _ = data
    # the same run without the view: the hook changes nothing about training
    torch.manual_seed(ARGS["seed"])
    plain_model = minitf.Transformer(CONFIG)
    plain = minitf.train(plain_model, train, val, steps=ARGS["steps"], batch_size=ARGS["batch_size"],
                         lr=ARGS["lr"], warmup=ARGS["warmup"], seed=ARGS["seed"], eval_every=ARGS["every"],
                         progress=False)
    assert history.loss == plain.loss and history.val == plain.val
    for a, b in zip(view.model.state_dict().values(), plain_model.state_dict().values()):
        assert torch.equal(a, b)
    # the numbers drawn, and the lines in the figure, are the History's
    drawn = view.drawn
    assert drawn["steps"] == [v["step"] for v in history.val] == [8, 16, 24]
    assert drawn["val_loss"] == [v["loss"] for v in history.val]
    assert drawn["exact_match"] == [v["exact_match"] for v in history.val]
    assert drawn["train_loss"] == history.loss
    parts = view._parts
    assert list(parts["val_loss"].get_xdata()) == drawn["steps"]
    assert list(parts["val_loss"].get_ydata()) == drawn["val_loss"]
    assert list(parts["exact"].get_ydata()) == drawn["exact_match"]
    assert list(parts["train_loss"].get_ydata()) == history.loss
    assert list(parts["train_loss"].get_xdata()) == list(range(1, len(history.loss) + 1))
    for h, line in enumerate(parts["mass"]):
        assert list(line.get_ydata()) == [m[0, h].item() for m in view.mass]
    b = minitf.baseline_losses(val, train)
    assert [line.get_ydata()[0] for line in parts["baselines"]] == [b.unigram, b.length_oracle]


def test_it_redraws_at_every_validation(data, trained):
    train, val, example = data
    fresh = TrainingView(CONFIG, train, val, example, **ARGS)
    assert fresh.redraws == 0 and fresh.drawn is None and "not trained yet" in fresh.status.value
    view, _, seen = trained
    # one picture per validation but the last, then the last with the History's training loss
    assert [s for s, _ in seen[:3]] == [[8], [16], [24]]
    assert len({png for _, png in seen[:3]}) == 3 and len(view.out.outputs) == 1
    # trained again, from the same start: first the start is shown again
    assert [s for s, _ in seen[3:]] == [[], [8], [16], [24]]
    assert seen[4:] == seen[:3]  # the same run, the same pictures
    assert view.redraws == len(seen) == 7


def test_the_button_trains_and_the_dropdown_picks_the_numbering(data):
    train, val, example = data
    # one validation is enough here: what is checked is the numbering the button trains with
    view = TrainingView(CONFIG, train, val, example, probe=10, **{**ARGS, "steps": 8})
    start = {k: v.clone() for k, v in view.model.state_dict().items()}
    view.numbering.value = "sequence"
    view.button.click()
    assert view.history is not None and view.model.config.positions.position_ids == "sequence"
    assert not view.button.disabled
    torch.manual_seed(ARGS["seed"])
    fresh = minitf.Transformer(CONFIG.replace(position_ids="sequence"))
    assert all(torch.equal(start[k], v) for k, v in fresh.state_dict().items())  # the same start
    assert view.drawn["numbering"] == "sequence" and "usual position ids" in view.title(view.drawn)


def test_source_attention_is_the_heatmaps_weight_on_the_source(trained, data):
    view, _, _ = trained
    pairs = data[1][:6]
    mass = source_attention(view.model, pairs, "shift")  # (layers, heads)
    per_head = torch.zeros(CONFIG.n_heads)
    count = 0
    for pair in pairs:
        weights, _ = attention_weights(view.model, pair)
        n = len(pair.input)
        for k in range(n):
            per_head += weights[0][:, n + k, k]  # row n+k writes output byte k, from input byte k
            count += 1
    assert mass.shape == (1, CONFIG.n_heads)
    torch.testing.assert_close(mass[0], per_head / count)
    # reverse reads input byte n-1-k: another column, another number
    assert not torch.allclose(source_attention(view.model, pairs, "reverse"), mass)


def test_a_model_that_copies_exactly_scores_1():
    """A stand-in model whose every row puts all its weight on the source byte."""
    class Copier(torch.nn.Module):
        def forward(self, ids, return_attention=False):
            B, T = ids.shape
            w = torch.zeros(B, 1, T, T)
            for b in range(B):
                row = ids[b].tolist()
                n = row.index(minitf.TAB)
                for k in range(T - n):
                    w[b, 0, n + k, min(k, n - 1)] = 1.0
            return torch.zeros(B, T, 256), [w]
    pairs = [minitf.Pair(b"abc", b"bcd"), minitf.Pair(b"hello!", b"ifmmp\"")]
    assert source_attention(Copier(), pairs, "shift").item() == 1.0


def test_it_shows_as_a_picture_with_a_stable_text(trained):
    view, _, _ = trained
    text = repr(view)
    assert text.startswith("TrainingView(shift, 2,920 parameters,") and "24 steps" in text
    bundle = live_and_picture(view.widget, view.picture(), text)
    assert WIDGET_VIEW in bundle and bundle["text/plain"] == text
    assert base64.b64decode(bundle["image/png"]).startswith(b"\x89PNG")
    assert "step 24 of 24 (done)" in view.status.value


def test_bad_arguments_are_named(data):
    train, val, example = data
    with pytest.raises(ValueError, match="every"):
        TrainingView(CONFIG, train, val, example, steps=5, every=10)
    with pytest.raises(ValueError, match="unknown task"):
        TrainingView(CONFIG, train, val, example, task="sort-of")
