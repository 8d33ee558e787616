"""minitf.sampling_view: the probabilities sampling draws from, and the bars view that shows them."""
import pytest
import torch

import minitf
from minitf.views import sampling_view
from minitf.views.sampling_view import NextByteBars, next_byte_probs, sample_output
from support import small_model


def logits(seed=0, rows=3, vocab=256):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(rows, vocab, generator=g, dtype=torch.float64) * 8 - 4


@pytest.mark.parametrize("settings", [{}, {"temperature": 0.3}, {"temperature": 2.5, "top_k": 5},
                                      {"top_p": 0.5}, {"temperature": 0.7, "top_k": 40, "top_p": 0.9},
                                      {"temperature": 0}])
def test_rows_sum_to_one(settings):
    probs = next_byte_probs(logits(), **settings)
    torch.testing.assert_close(probs.sum(-1), torch.ones(3, dtype=torch.float64))
    assert (probs >= 0).all()


def test_temperature_one_is_the_softmax():
    torch.testing.assert_close(next_byte_probs(logits()), logits().softmax(-1))


def test_temperature_towards_zero_becomes_one_hot_on_the_argmax():
    x = logits()
    one_hot = torch.nn.functional.one_hot(x.argmax(-1), 256).double()
    assert torch.equal(next_byte_probs(x, temperature=0), one_hot)
    x = x + 0.1 * one_hot  # the argmax leads by at least 0.1
    for t in (1e-3, 1e-4):
        torch.testing.assert_close(next_byte_probs(x, temperature=t), one_hot)


def test_high_temperature_flattens_towards_uniform():
    probs = next_byte_probs(logits(), temperature=1e4)
    torch.testing.assert_close(probs, torch.full_like(probs, 1 / 256), atol=1e-5, rtol=0)


@pytest.mark.parametrize("k", [1, 3, 17])
def test_top_k_zeroes_every_byte_past_the_kth(k):
    x = logits()
    probs = next_byte_probs(x, top_k=k)
    top = x.topk(k, dim=-1).indices
    assert ((probs > 0).sum(-1) == k).all()
    assert (probs.gather(-1, top) > 0).all()
    # the kept bytes keep their ratios
    kept = x.gather(-1, top).softmax(-1)
    torch.testing.assert_close(probs.gather(-1, top), kept)


def test_top_p_keeps_the_smallest_set_that_reaches_p():
    x = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]], dtype=torch.float64))
    assert next_byte_probs(x, top_p=0.5).tolist() == [[1.0, 0.0, 0.0, 0.0]]
    torch.testing.assert_close(next_byte_probs(x, top_p=0.7),
                               torch.tensor([[0.625, 0.375, 0.0, 0.0]], dtype=torch.float64))
    torch.testing.assert_close(next_byte_probs(x, top_p=0.81), torch.tensor([[0.5, 0.3, 0.15, 0.0]],
                                                                            dtype=torch.float64) / 0.95)
    torch.testing.assert_close(next_byte_probs(x, top_p=1.0), x.softmax(-1))


def test_sampling_draws_what_generate_draws():
    model = small_model(dropout=0.0)
    for settings in ({"temperature": 0}, {"temperature": 1.5, "top_k": 20}, {"temperature": 0.8}):
        ours, probs = sample_output(model, b"Hi!", seed=3, max_new_tokens=10, **settings)
        assert ours == minitf.generate(model, b"Hi!", max_new_tokens=10, seed=3, **settings)
        assert probs.shape[1] == 256 and len(probs) >= len(ours)


def test_the_view_redraws_when_a_slider_moves_and_its_repr_is_stable(monkeypatch):
    model = minitf.load("data/checkpoints/shift.pt")
    view = NextByteBars(model, "Hello", temperature=0)
    assert view.state["output"] == b"Ifmmp" and view.state["steps"] == 6  # 5 bytes, then EOS
    assert view.state["probs"][ord("I")] == 1
    assert repr(view) == "NextByteBars(input='Hello', output='Ifmmp', step 0, T=0, top_k=None, top_p=None)"
    first = view.png()
    view.temperature.value = 3.0
    assert view.png() != first and view.state["probs"][ord("I")] < 0.9
    monkeypatch.setattr(sampling_view, "figure_png", lambda fig: b"")  # the next two: numbers only
    view.top_k.value = 2
    assert int((view.state["probs"] > 0).sum()) == 2
    view.step.value = 4
    assert view.state["step"] == 4 and view.state["prefix"][-1] == view.state["output"][3]
    monkeypatch.undo()  # drawn again: the picture below is of this redraw
    view.text.value = "ab"
    assert view.state["text"] == b"ab" and view.step.max == view.state["steps"] - 1
    assert view.state["step"] <= view.step.max
    bundle = view._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["text/plain"].startswith("NextByteBars(input='ab'")
    assert bundle["image/png"]  # the picture a stored notebook shows where the widget cannot run


def test_the_view_shows_the_most_likely_bytes_first(monkeypatch):
    monkeypatch.setattr(sampling_view, "figure_png", lambda fig: b"")  # the figure is built below
    view = NextByteBars(minitf.load("data/checkpoints/shift.pt"), "Hello", temperature=2.0)
    order = view.state["order"].tolist()
    assert order[0] == ord("I") and len(order) == 12
    fig = view.figure(view.state)
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()][0] == "I"
    assert min(t.get_fontsize() for t in fig.axes[0].get_xticklabels()) >= 9


def test_slider_values_are_written_as_a_person_would_write_them(monkeypatch):
    # a slider stepping by 0.05 reaches 0.7000000000000002: the title and the repr say 0.7
    monkeypatch.setattr(sampling_view, "figure_png", lambda fig: b"")  # the words, not the pictures
    from minitf.views.lm_view import TextSampler
    view = TextSampler(minitf.load("data/checkpoints/lm.pt").double(), "ROMEO:", length=8)
    view.top_p.value = 0.7000000000000002  # what the review saw in the title
    view.temperature.value = 0.1 + 0.2  # 0.30000000000000004
    title = view.title(view.state)
    assert "top-p = 0.7," in title and "T = 0.3," in title and "0000" not in title
    assert "top_p=0.7," in repr(view) and "T=0.3," in repr(view)
