"""One forward pass and one generation loop: the KV cache runs the model's own modules (a learner's
pieces included), and pairs, text and the sampling widgets all generate through the same loop."""
import pytest
import torch

import minitf
from minitf.core import generate as gen
from minitf.core.kv_cache import KVCache
from minitf.core.model import evaluating
from minitf.course import parts, solutions
from minitf.views.sampling_view import sample_output


def learners_model(attention=solutions.my_attention, **changes):
    """A model assembled from the reference solutions, as notebook 08 builds a learner's."""
    torch.manual_seed(0)
    pieces = {name: getattr(solutions, f"my_{name}") for name in
              ("embed", "apply_rope", "causal_mask", "layer_norm", "feed_forward")}
    return parts.assemble(minitf.Config(max_len=24, **changes), attention=attention,
                          **pieces).double().eval()


@pytest.mark.parametrize("changes", [dict(), dict(norm_position="pre"), dict(position_ids="coupled")])
def test_the_cache_runs_a_learners_own_attention_and_gives_the_uncached_logits(changes):
    seen = []  # (queries, keys) of every call to the learner's attention

    def spy(q, k, v, mask):
        seen.append((q.size(-2), k.size(-2)))
        return solutions.my_attention(q, k, v, mask)
    model = learners_model(attention=spy, **changes)
    prompt = list(b"ab\tc")
    new, cached = gen.continue_ids(model, prompt, 12, lambda logits: logits.argmax())
    assert (1, len(prompt) + 1) in seen, "one new query against the cached keys: the cache was used"
    seen.clear()
    full = model(torch.tensor([prompt + new]))[0, len(prompt) - 1:-1]  # the rows that chose each byte
    torch.testing.assert_close(cached, full, rtol=0, atol=1e-10)
    assert all(q == k for q, k in seen), "the full pass has no cache"


def test_a_cache_longer_than_max_len_is_refused_before_it_changes():
    model = minitf.Transformer(minitf.Config(max_len=8)).eval()
    kv = KVCache(len(model.blocks))
    model(torch.tensor([list(b"abcdef")]), cache=kv)
    with pytest.raises(ValueError, match="exceeds max_len 8"):
        model(torch.tensor([list(b"ghi")]), cache=kv)
    assert len(kv) == 6


def test_pairs_text_and_the_widgets_generate_through_one_loop(monkeypatch):
    calls = []
    loop = gen.generation_loop

    def counting(*args, **kwargs):
        calls.append(kwargs.get("until_eos", False))
        return loop(*args, **kwargs)
    monkeypatch.setattr(gen, "generation_loop", counting)
    model = minitf.load("data/checkpoints/shift.pt")
    assert minitf.generate(model, "hello") == b"ifmmp"
    assert sample_output(model, b"hello", temperature=0)[0] == b"ifmmp"
    lm = minitf.load("data/checkpoints/lm.pt")
    assert len(minitf.generate_text(lm, "ROMEO:", 5, seed=0)) == 5
    assert minitf.evaluate(model, minitf.read_pairs("data/val.txt")[:4])["exact_match"] == 1.0
    assert calls[:3] == [True, True, False]  # pairs, the widget, text
    assert len(calls) > 3 and all(calls[3:])  # evaluate: one batch per input length


def test_evaluating_restores_the_callers_mode_even_when_it_raises():
    model = minitf.Transformer(minitf.Config()).train()
    with pytest.raises(RuntimeError):
        with evaluating(model):
            assert not model.training
            raise RuntimeError("a broken measurement")
    assert model.training
    with evaluating(model.eval()):
        pass
    assert not model.training
