"""What notebook 09 says in words about lm.pt, held to the checkpoint: how far back it reads (its loss
by the number of bytes read) and how word-like its samples are at each temperature (the share of
their words that occur in the training text, as notebook 03 measures it)."""
import math

import pytest
import torch

import minitf
from support import ROOT, code, executed, markdown, printed
from minitf.core.checkpoint import describe
from minitf.core.text import loss_by_position

LN2 = math.log(2)
NOTEBOOK = "09_language_model"
SPANS = [(1, 1), (2, 4), (5, 8), (9, 16), (17, 32), (33, 64)]


@pytest.fixture(scope="module")
def lm():
    torch.set_num_threads(1)
    return minitf.load(ROOT / "data" / "checkpoints" / "lm.pt")


@pytest.fixture(scope="module")
def text():
    return minitf.read_text(ROOT / "data" / "text" / "tinyshakespeare.txt", 64)


@pytest.fixture(scope="module")
def spans(lm, text):
    """Bits per byte of lm.pt by bytes read, averaged over each span, on the notebook's 400 windows."""
    bits = loss_by_position(lm, text.val, max_windows=400) / LN2
    return {span: bits[span[0] - 1:span[1]].mean().item() for span in SPANS}


def test_loss_by_position_agrees_with_the_mean_loss(lm, text):
    by_position = loss_by_position(lm, text.val, max_windows=50)
    assert by_position.shape == (64,)
    assert by_position.mean().item() == pytest.approx(minitf.evaluate_text(lm, text.val, max_windows=50)["loss"],
                                                      rel=1e-5)


def test_how_far_back_lm_reads(spans, text):
    said = markdown(NOTEBOOK)
    assert "max_windows=400" in code(NOTEBOOK) and "Scoring 400 validation windows" in said
    bigram = minitf.text_baselines(text).bigram / LN2
    meta = minitf.load(ROOT / "data" / "checkpoints" / "lm.pt").metadata
    assert f"the bigram pays {bigram:.2f} for each byte, `lm.pt` {meta['val']['bits_per_byte']:.2f}" in said
    s = [spans[span] for span in SPANS]
    # "with one byte read the model pays 3.57 bits, what the bigram pays"
    assert f"With one byte read the model pays {s[0]:.2f} bits, what the bigram pays" in said
    assert abs(s[0] - bigram) < 0.05
    assert f"two to four bytes brings it to {s[1]:.2f}, five to eight to {s[2]:.2f}, nine to sixteen to {s[3]:.2f}" in said
    assert f"further on it stays between {min(s[4:]):.2f} and {max(s[4:]):.2f}" in said
    # "the bytes from 17 to 63 back add nothing measurable; the last 32 a little worse than the 16 before"
    assert abs(s[5] - s[3]) < 0.05 and s[5] > s[4]
    # the takeaway: "almost all it gains comes from the last dozen or so bytes"
    assert (bigram - s[3]) / (bigram - min(s[4:])) > 0.95
    assert "almost all it gains comes from the last dozen or so bytes" in said


def word_share(sample: bytes, words: set) -> float:
    written = sample.decode("utf-8", errors="replace").split()[:-1]  # the last word may be cut short
    return sum(w in words for w in written) / len(written)


@pytest.mark.slow
def test_the_lowest_temperature_writes_the_most_words(lm, text):
    said = markdown(NOTEBOOK)
    lm64 = lm.double()
    words = set(bytes(text.train.data.tolist()).decode().split())
    shown = {T: word_share(minitf.generate_text(lm64, "ROMEO:\n", 120, temperature=T, seed=0), words)
             for T in (0.5, 1.0, 1.5)}
    assert shown[0.5] == 1 and "all of its words occur in the training text" in said
    assert f"against {shown[1.0]:.0%} at $T = 1$".replace("%", " %") in said
    assert f"and {shown[1.5]:.0%} at $T = 1.5$".replace("%", " %") in said
    # "five samples of 200 bytes per temperature (random seeds 0–4) give 97 %, 85 % and 53 % on
    # average, in that order for every seed"
    share = {T: [word_share(minitf.generate_text(lm64, "ROMEO:\n", 200, temperature=T, seed=s), words)
                 for s in range(5)] for T in (0.5, 1.0, 1.5)}
    for s in range(5):
        assert share[0.5][s] > share[1.0][s] > share[1.5][s]
    means = " ".join(f"{sum(v) / 5:.0%}".replace("%", " %") for v in share.values())
    assert "give " + means.replace(" % ", " %, ", 1).replace(" % ", " % and ", 1) + " on average, in that order for every seed" in said


def test_describe_says_what_a_checkpoint_was_trained_with(lm):
    lines = describe(lm.metadata).splitlines()
    assert lines[0] == f"trained by: {lm.metadata['command']}"
    assert "3,000 steps, random seed 0" in lines[1] and "windows of 64 bytes" in lines[1]
    assert lines[2] == "validation at step 3,000 (111,488 bytes): loss 1.610 nats per byte = 2.32 bits per byte"
    pairs = describe({"steps": 10, "val": {"step": 10, "loss": 0.0002, "char_accuracy": 1.0, "exact_match": 0.5}})
    assert pairs.splitlines() == ["10 steps",
                                  "validation at step 10: loss 2.0e-04 nats, characters right 100.0%, "
                                  "whole outputs right 50.0%"]
    assert describe({}) == "no training record in this checkpoint"


# --- what 09's cells print, read from the executed notebook (the cells assert nothing in view) -------

def test_the_small_model_passes_the_bigram_in_the_stored_run():
    # "In a few seconds it passes the bigram"
    assert "validation loss below the bigram's: True" in printed(NOTEBOOK, results=True, containing="history = minitf.train(small, text.train")
    assert "In a few seconds it passes the bigram" in markdown(NOTEBOOK)


@pytest.mark.slow
def test_the_small_model_passes_the_bigram_with_a_margin(text):
    torch.manual_seed(0)
    short = minitf.read_text(ROOT / "data" / "text" / "tinyshakespeare.txt", context=32)
    small = minitf.Transformer(minitf.Config(d_model=32, n_heads=4, n_layers=2, d_ff=128, norm_position="pre",
                                             dropout=0.0, max_len=32))
    history = minitf.train(small, short.train, steps=150, batch_size=32, lr=1e-2, warmup=20, progress=False)
    quick = minitf.evaluate_text(small, short.val, max_windows=200)
    bigram = minitf.text_baselines(short).bigram
    assert quick["loss"] < bigram - 0.1 and history.loss[-1] < bigram


def test_the_sampler_widget_draws_the_notebooks_continuation_and_top_p_cuts_the_tail(lm):
    from minitf.views.lm_view import TextSampler
    sampler = TextSampler(lm.double(), "ROMEO:", length=60, temperature=0.8, top_p=0.9, step=1)
    assert sampler.state["steps"] == 60 and abs(float(sampler.state["probs"].sum()) - 1) < 1e-12
    assert int((sampler.state["probs"] > 0).sum()) < int((sampler.state["raw"] > 1e-6).sum())  # top-p cut the tail
    assert printed(NOTEBOOK, results=True, containing="sampler = TextSampler(") == repr(sampler)


@pytest.mark.slow
def test_your_model_speaks_as_the_prediction_says_when_run():
    # the answer to the prediction: "The same, both times" (its cell is stored without output: run it)
    spoken = printed(executed(NOTEBOOK), results=True, containing="spoken = check_speaking(yours, lm").splitlines()
    checks = [line for line in spoken if line.startswith(("✓", "✗"))]
    assert len(checks) == 5 and all(line.startswith("✓") for line in checks), spoken
    assert checks[3].endswith(": True")
    # "The last line is your whole model writing: 60 greedy bytes without the cache, …" (model_forward,
    # optional and not written here, is minitf's: not named as yours)
    assert checks[4] == ("✓ greedy, without the cache, through your block → multi_head_attention: "
                         "the same 60 bytes as minitf.generate_text(greedy=True) and as your cached run")
    assert "60 greedy bytes without the cache, each one out of your `block` and `multi_head_attention` " \
           "(and your `model_forward`, if you wrote that optional one)" in markdown(NOTEBOOK)
    assert "**The same, both times.**" in markdown(NOTEBOOK)


def test_every_piece_passes_and_the_forgetful_cache_is_named():
    # every piece the speaking model is built from passed the model check (none gave way)
    assert printed(NOTEBOOK, results=True, containing="your_checked_parts(lm.config)").startswith("✓ your model computes minitf's logits")
    forgetful = printed(NOTEBOOK, results=True, containing="def forgetful(").splitlines()
    named = [line.strip().split(" — ")[0] for line in forgetful if "broken piece:" in line]
    assert named == ["broken piece: cached_attention"], forgetful


def test_the_learners_file_speaks_the_same_200_bytes_with_lm_weights():
    """'Your file speaks': MyTransformer of 08's file, lm.pt's weights loaded by name, writes the text
    of the check above, byte for byte (float64, no cache, the same sampler and seed)."""
    import re
    said = printed(NOTEBOOK, containing="mine = minitf.parts.my_model(lm.config, parts)")
    found = re.fullmatch(r"your file's model wrote (\d+) bytes; the same as the text above: (True|False)\n", said)
    assert found and found.groups() == ("200", "True"), said
