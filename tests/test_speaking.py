"""Notebook 09's exercises (the sampler, one cached attention step) and the learner's model that speaks
with lm.pt's weights: each slip a learner makes is named, in float64 and float32, and the speaking
check names the broken piece (a wrong cache step, a wrong sampler, a wrong model piece)."""
import copy
import math

import pytest
import torch

import minitf
from support import ROOT, assert_close_float32, attention_without_scale, block_without_residuals, markdown
from minitf import attention, causal_mask, solutions
from minitf.core.rope import rope_angles
from minitf.course import exercises, speaking
from minitf.course.lessons import nb09_language_model as nb09
from minitf.course.speaking import check_speaking, speaking_model

# --- the sampler ---------------------------------------------------------------------------------------


def sampler(slip=None):
    """my_next_byte_probs as a learner writes it, with one slip."""
    def my_next_byte_probs(logits, temperature=1.0, top_k=None, top_p=None):
        if temperature == 0:
            if slip == "greedy_softmax":
                return torch.softmax(logits, -1)
            if slip != "greedy_divides":
                return torch.nn.functional.one_hot(logits.argmax(-1), logits.size(-1)).to(logits.dtype)
        if slip == "after":
            probs = torch.softmax(logits, -1) / temperature
        else:
            logits = logits * temperature if slip == "times" else logits / temperature
            if top_k is not None:
                if slip == "ties":
                    kept = torch.zeros_like(logits, dtype=torch.bool).scatter(-1, logits.topk(top_k, -1).indices, True)
                    logits = logits.masked_fill(~kept, float("-inf"))
                else:
                    logits = logits.masked_fill(logits < logits.topk(top_k, -1).values[..., -1:], float("-inf"))
            probs = torch.softmax(logits, -1)
        if top_p is not None:
            sorted_probs, order = probs.sort(-1, descending=True)
            cumulative = sorted_probs.cumsum(-1)
            keep = cumulative <= top_p if slip == "crossing" else cumulative - sorted_probs < top_p
            probs = probs * torch.zeros_like(probs).scatter(-1, order, keep.to(probs.dtype))
        return probs if slip in ("unnormalised", "after") else probs / probs.sum(-1, keepdim=True)
    return my_next_byte_probs


SAMPLER_SLIPS = {
    "after": "yours divides the probabilities by T after the softmax, so a row no longer sums to 1",
    "times": "yours multiplies the logits by T: divide them",
    "ties": "yours keeps exactly k = 3 bytes where several logits tie with the k-th largest",
    "crossing": "yours drops the byte whose probability carries the running sum past p, so it keeps one "
                "byte too few",
    "unnormalised": "yours does not renormalise",
    "greedy_softmax": "yours is the softmax at T = 1: temperature 0 means greedy decoding",
    "greedy_divides": "yours divides by T = 0, which gives NaN",
}


def test_the_reference_sampler_passes_and_equals_minitfs_in_both_dtypes():
    assert exercises.run_check("next_byte_probs", solutions.my_next_byte_probs).startswith("✓")
    for logits, T, k, p in nb09.sampling_cases():
        for dtype in (torch.float64, torch.float32):
            got = solutions.my_next_byte_probs(logits.to(dtype), T, k, p)
            assert got.dtype == dtype
            assert_close_float32(got.float(), minitf.next_byte_probs(logits.to(dtype), T, k, p).float())


def feedback(name: str, fn) -> str:
    """What exercise `name` says of fn, which must fail its check."""
    with pytest.raises(minitf.ExerciseError) as info:
        exercises.run_check(name, fn)
    return str(info.value)


@pytest.mark.parametrize("slip", SAMPLER_SLIPS)
def test_each_sampler_slip_is_named(slip):
    said = feedback("next_byte_probs", sampler(slip))
    assert SAMPLER_SLIPS[slip].lower() in said.lower(), said


def test_the_cases_hold_the_situations_the_slips_need():
    cases = nb09.sampling_cases()
    tied = next(c for c in cases if c[2] == 3)[0]
    for row in tied:  # more than k logits at least the k-th largest
        assert int((row >= row.topk(3).values[-1]).sum()) > 3
    nucleus = next(c for c in cases if c[3] == 0.7 and c[2] is None)
    probs = nucleus[0].softmax(-1).sort(-1, descending=True).values
    assert (probs.cumsum(-1)[:, 0] < 0.7).all() and (probs.cumsum(-1)[:, 1] > 0.7).all()  # 2nd byte crosses
    assert {c[1] for c in cases} >= {0.0, 0.5, 1.0, 2.0}


def test_a_sampler_that_calls_minitfs_is_refused():
    def my_next_byte_probs(logits, temperature=1.0, top_k=None, top_p=None):
        return minitf.next_byte_probs(logits, temperature, top_k, top_p)
    with pytest.raises(minitf.ExerciseError, match="uses minitf.next_byte_probs"):
        exercises.run_check("next_byte_probs", my_next_byte_probs)


# --- one cached attention step -------------------------------------------------------------------------


def cached_step(slip=None):
    """my_cached_attention as a learner writes it, with one slip."""
    def my_cached_attention(attn, x, keys, values):
        B, T, _ = x.shape
        H, hd = attn.n_heads, attn.head_dim
        start = keys.size(2)
        q, k, v = attn.qkv(x).split(H * hd, dim=-1)
        q, k, v = (t.view(B, T, H, hd).transpose(1, 2) for t in (q, k, v))
        cos, sin = rope_angles(attn.inv_freq, T, offset=0 if slip == "rope_at_zero" else start)
        q, k = attn.rotate(q, cos, sin), attn.rotate(k, cos, sin)
        all_k, all_v = torch.cat([keys, k], dim=2), torch.cat([values, v], dim=2)
        mask = {"top_rows": causal_mask(start + T)[:T], "no_mask": None}.get(slip, causal_mask(start + T)[start:])
        if slip == "new_keys_only":
            y, _ = attention(q, k, v, causal_mask(T))
        else:
            y, _ = attention(q, all_k, all_v, mask)
        out = attn.out(y.transpose(1, 2).reshape(B, T, H * hd))
        return (out, keys, values) if slip == "not_appended" else (out, all_k, all_v)
    return my_cached_attention


CACHE_SLIPS = {
    "rope_at_zero": "yours rotates the new query and key as if they stood at position 0, 1, …",
    "top_rows": "yours masks with the first T rows of the causal mask",
    "no_mask": "yours does not mask",
    "new_keys_only": "yours lets the new queries attend over the new keys only",
    "not_appended": "Hint: return the cache with this step appended",
}


def test_the_reference_step_passes_and_the_module_forward_is_refused():
    assert exercises.run_check("cached_attention", solutions.my_cached_attention).startswith("✓")
    assert not exercises.passes("cached_attention", nb09.cached_attention_reference)


@pytest.mark.parametrize("slip", CACHE_SLIPS)
def test_each_cache_slip_is_named(slip):
    said = feedback("cached_attention", cached_step(slip))
    assert CACHE_SLIPS[slip].lower() in said.lower(), said


def test_a_step_that_is_right_only_in_float64_is_caught_in_float32():
    def my_cached_attention(attn, x, keys, values):
        out, keys, values = solutions.my_cached_attention(attn, x, keys, values)
        return out.double(), keys, values
    with pytest.raises(minitf.ExerciseError, match="in float32"):
        exercises.run_check("cached_attention", my_cached_attention)


def test_the_written_out_variant_is_the_modules_own_step():
    for attn, x, keys, values in nb09.cached_attention_cases():
        with torch.no_grad():
            want = nb09.cached_attention_reference(attn, x, keys, values)
            got = nb09._step_variant(attn, x, keys, values)
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w)


# --- the learner's model speaks with lm.pt's weights ---------------------------------------------------

PROMPT, SETTINGS = "ROMEO:\n", dict(temperature=0.8, top_p=0.9, seed=0)
FEW = 8  # bytes written by a check that names a wrong piece: the texts part by the 3rd byte


@pytest.fixture(scope="module")
def lm():
    return minitf.load(ROOT / "data" / "checkpoints" / "lm.pt")


@pytest.fixture(scope="module")
def window():
    text = minitf.read_text(ROOT / "data" / "text" / "tinyshakespeare.txt", 64)
    return text.val.data[:128].long().view(2, 64)


def reference_parts(**changes):
    pieces = {name: getattr(solutions, f"my_{name}") for name in
              ("embed", "apply_rope", "causal_mask", "attention", "layer_norm", "feed_forward")}
    return minitf.parts.Parts(**{**pieces, **changes})


def speaker(lm, parts=None, step=solutions.my_cached_attention):
    model = speaking_model(lm.config, parts or reference_parts(), step)
    model.load_state_dict(lm.state_dict())
    return model


def test_the_reference_pieces_speak_minitfs_text(lm, window):
    model = speaker(lm)
    # 7 + 100 bytes: the 64-byte window refills twice
    outcome = check_speaking(model, lm, solutions.my_next_byte_probs, window, PROMPT, 100, **SETTINGS)
    # same_as_minitf: outcome.text is minitf.generate_text's, float64, with these settings
    assert outcome.ok and outcome.same_as_minitf and outcome.same_text_cached, str(outcome)
    assert len(outcome.text) == 100 and outcome.sampler == 0.0  # the reference sampler is minitf's
    with torch.no_grad():
        assert_close_float32(model(window), lm(window))
    # the notebook: "the check allows 2⁻¹² of the largest logit (under 0.004 here)"
    assert outcome.tolerance32 < 0.004 and outcome.scale > 10


def test_a_wrong_cache_step_is_named(lm, window):
    for slip in ("rope_at_zero", "not_appended", "top_rows"):
        outcome = check_speaking(speaker(lm, step=cached_step(slip)), lm, solutions.my_next_byte_probs,
                                 window, PROMPT, FEW, **SETTINGS)
        assert list(outcome.broken) == ["cached_attention"], (slip, str(outcome))
        assert not outcome.same_text_cached and "its exercise says" in outcome.broken["cached_attention"]
        assert "✗ cached against uncached" in str(outcome)


def test_a_step_that_raises_is_named_not_a_crash(lm, window):
    def my_cached_attention(attn, x, keys, values):
        raise RuntimeError("oops")
    outcome = check_speaking(speaker(lm, step=my_cached_attention), lm, solutions.my_next_byte_probs,
                             window, PROMPT, FEW, **SETTINGS)
    assert "raises RuntimeError: oops" in outcome.broken["cached_attention"]


def test_a_wrong_sampler_is_named(lm, window):
    outcome = check_speaking(speaker(lm), lm, sampler("crossing"), window, PROMPT, FEW, **SETTINGS)
    assert list(outcome.broken) == ["next_byte_probs"], str(outcome)
    assert "keeps one byte too few" in outcome.broken["next_byte_probs"]
    assert outcome.same_as_minitf is None and "not compared" in str(outcome)


def test_a_wrong_model_piece_is_named_and_the_cache_not_blamed(lm, window):
    def embed_in_float64(ids, table):
        return torch.nn.functional.one_hot(ids, 256).double() @ table.double()

    for piece, fn in (("attention", attention_without_scale), ("embed", embed_in_float64)):
        outcome = check_speaking(speaker(lm, reference_parts(**{piece: fn})), lm, solutions.my_next_byte_probs,
                                 window, PROMPT, FEW, **SETTINGS)
        assert list(outcome.broken) == [piece], str(outcome)
    assert "in float32" in outcome.broken["embed"]


def watched(fn, calls):
    """fn, counting its calls in calls[fn.__name__]: a piece of the learner's, seen at work."""
    def counting(*args):
        calls[fn.__name__] = calls.get(fn.__name__, 0) + 1
        return fn(*args)
    return counting


def test_the_greedy_text_without_the_cache_is_written_by_the_learners_whole_model(lm):
    calls = {}
    whole = {name: watched(getattr(solutions, f"my_{name}"), calls) for name in speaking.WHOLE_MODEL}
    model = speaker(lm, reference_parts(**whole)).double()
    text = speaking._greedy(model, PROMPT, 60, cache=False)
    layers = lm.config.n_layers
    # every byte came out of the learner's forward, its block in each layer, its attention in each block
    assert calls == {"my_model_forward": 60, "my_block": 60 * layers, "my_multi_head_attention": 60 * layers}
    assert text == minitf.generate_text(copy.deepcopy(lm).double(), PROMPT, 60, greedy=True)
    calls.clear()
    assert speaking._greedy(model, PROMPT, 60, cache=True) == text
    assert calls == {}  # with a cache minitf's forward runs (the learner's pieces inside): hence the uncached text


def forward_without_the_final_norm(model, ids):
    h = model.embed(ids)
    cos, sin = rope_angles(model.blocks[0].attn.inv_freq, ids.size(1), positions=model.positions(ids))
    for block in model.blocks:
        h, _ = block(h, cos, sin)
    return model.head(h)


def test_a_forward_without_its_final_norm_writes_another_greedy_text_and_is_named(lm, window):
    parts = reference_parts(model_forward=forward_without_the_final_norm, block=solutions.my_block,
                            multi_head_attention=solutions.my_multi_head_attention)
    outcome = check_speaking(speaker(lm, parts), lm, solutions.my_next_byte_probs, window, PROMPT, FEW, **SETTINGS)
    assert list(outcome.broken) == ["model_forward"], str(outcome)  # the cached step is not blamed
    # the cached run goes through minitf's forward (with the final norm): only the uncached text is off
    assert outcome.greedy_cached == outcome.greedy_minitf != outcome.greedy_uncached
    assert ("✗ greedy, without the cache, through your model_forward → block → multi_head_attention: the same "
            "bytes as minitf.generate_text(greedy=True): False, as your cached run: False") in str(outcome)


def test_your_checked_parts_puts_the_reference_in_a_broken_saved_pieces_place(lm, tmp_path, monkeypatch):
    monkeypatch.setenv("MINITF_MY_PARTS", str(tmp_path / "my_parts"))
    assert minitf.parts.save("block", block_without_residuals) is not None
    assert minitf.parts.yours().block is not solutions.my_block  # as saved, yours
    parts, found = speaking.your_checked_parts(lm.config)
    assert list(found.broken) == ["block"] and "broken piece: block" in str(found)
    assert parts.block is solutions.my_block
    assert parts.origin["block"] == "reference solution (yours is broken: see the check above)"
    model = speaker(lm, parts).double()
    assert speaking._greedy(model, PROMPT, 30, cache=False) == \
        minitf.generate_text(copy.deepcopy(lm).double(), PROMPT, 30, greedy=True)


def test_your_language_model_says_in_one_sentence_whose_pieces_run(lm, window, tmp_path, monkeypatch, capsys):
    """09's one call: lm's weights in the model of your checked pieces, with your sampler and cached
    step where they pass (else the reference), and one printed line saying so; a broken saved piece
    adds the check that names it and its stand-in's row."""
    monkeypatch.setenv("MINITF_MY_PARTS", str(tmp_path / "my_parts"))
    model = speaking.your_language_model(lm, sampler("times"), solutions.my_cached_attention)
    said = capsys.readouterr().out.strip()
    assert said.startswith("✓ your model computes minitf's logits") and len(said.splitlines()) == 1, said
    assert "sampler: the reference solution (yours does not pass its check yet); cached step: yours" in said
    assert model.next_byte_probs is exercises.EXERCISES["next_byte_probs"].solution
    assert model.cached_attention is solutions.my_cached_attention
    with torch.no_grad():
        assert_close_float32(model(window), lm(window))
    assert minitf.parts.save("block", block_without_residuals) is not None
    speaking.your_language_model(lm)
    said = capsys.readouterr().out
    assert said.startswith("✗") and "broken piece: block" in said, said
    assert said.rstrip().splitlines()[-1].split() == ["block", "reference", "solution", "(yours", "is", "broken:",
                                                     "see", "the", "check", "above)"], said


def test_a_model_without_rope_is_refused_by_the_speaking_model():
    with pytest.raises(ValueError, match="positional='rope'"):
        speaking_model(minitf.Config(positional="sinusoidal"), reference_parts())


# --- what notebook 09 says about it --------------------------------------------------------------------


def notebook_09():
    return markdown("09_language_model")


def test_lm_has_nine_layer_norms_all_the_learners(lm):
    model = speaker(lm)
    norms = [m for m in model.modules() if isinstance(m, minitf.parts.YourLayerNorm)]
    assert len(norms) == 9 == 2 * lm.config.n_layers + 1 and lm.config.norm_position == "pre"
    assert "all nine of its LayerNorms run your `layer_norm` if you wrote one" in notebook_09()


def test_the_forgetful_step_writes_the_first_byte_right_and_the_window_refills_with_32(lm):
    calls = []

    def forgetful(attn, x, keys, values):
        calls.append((keys.size(2), x.size(1)))
        output, _, _ = solutions.my_cached_attention(attn, x, keys, values)
        return output, keys, values

    model = speaker(lm, step=forgetful).double()
    _, cached = speaking.speak(model, solutions.my_next_byte_probs, PROMPT, 10, **SETTINGS)
    _, uncached = speaking.speak(model, solutions.my_next_byte_probs, PROMPT, 10, cache=False, **SETTINGS)
    assert torch.allclose(cached[0], uncached[0], atol=1e-9) and not torch.allclose(cached[1], uncached[1])
    assert "the first byte, read with the whole prompt, is even right" in notebook_09()
    good = speaker(lm, step=lambda *a: calls.append((a[2].size(2), a[1].size(1))) or
                   solutions.my_cached_attention(*a)).double()
    calls.clear()
    speaking.speak(good, solutions.my_next_byte_probs, PROMPT, 64, **SETTINGS)  # 7 + 64 bytes: past lm's 64
    assert (0, 32) in calls  # the full window kept its last half and read it into an empty cache
    assert "your step also took 32 positions into an empty cache" in notebook_09()


def train_small(context):
    torch.manual_seed(0)
    text = minitf.read_text(ROOT / "data" / "text" / "tinyshakespeare.txt", context=context)
    small = minitf.Transformer(minitf.Config(d_model=32, n_heads=4, n_layers=2, d_ff=128, norm_position="pre",
                                             dropout=0.0, max_len=context))
    minitf.train(small, text.train, steps=150, batch_size=32, lr=1e-2, warmup=20, progress=False)
    return minitf.evaluate_text(small, text.val, max_windows=200)["bits_per_byte"], text


def test_the_try_this_expectation_for_short_windows(one_thread):
    bits4, text = train_small(4)
    bits2, _ = train_small(2)
    bigram = minitf.text_baselines(text).bigram / math.log(2)
    said = notebook_09()
    assert f"just under the bigram's {bigram:.2f}" in said
    assert abs(bits4 - 3.5) < 0.1 and bits4 < bigram and "3.5 bits per byte on validation with 4-byte" in said
    assert abs(bits2 - 3.8) < 0.1 and bits2 > bigram and "about 3.8 with 2-byte windows, above it" in said


def test_09_states_each_exercise_as_its_registry_does():
    said = notebook_09()
    for name in ("next_byte_probs", "cached_attention"):
        ex = exercises.EXERCISES[name]
        assert f"Difficulty {'●' * ex.difficulty}{'○' * (5 - ex.difficulty)} · about {ex.minutes} min" in said
    shapes = [(x.size(0), keys.size(2), x.size(1)) for _, x, keys, _ in nb09.cached_attention_cases()]
    assert shapes == [(1, 4, 1), (2, 0, 3), (2, 2, 3)]  # (B, cached, new)
    assert "one byte after four cached, a 3-byte prompt into an empty cache and three bytes after two" in said
