"""What notebook 09 says in words about lm.pt, held to the checkpoint: how far back it reads (its loss
by the number of bytes read) and how word-like its samples are at each temperature (the share of
their words that occur in the training text, as notebook 03 measures it)."""
import copy
import math

import pytest
import torch

import minitf
from support import ROOT, code, markdown, numbers, printed
from minitf.core.checkpoint import describe
from minitf.core.text import loss_by_position
from minitf.views import lm_writing

LN2 = math.log(2)
NOTEBOOK = "09_language_model"
SPANS = [(1, 1), (2, 4), (5, 8), (9, 16), (17, 32), (33, 64)]


@pytest.fixture(scope="module")
def lm():
    torch.set_num_threads(1)
    return minitf.load(ROOT / "data" / "checkpoints" / "lm.pt")


@pytest.fixture(scope="module")
def lm64(lm):
    """lm in float64, a copy: Module.double() converts in place, and lm is shared by the file."""
    return copy.deepcopy(lm).double()


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
    assert "max_windows=400" in code(NOTEBOOK) and numbers(said, after="Scoring")[0] == 400
    bigram = minitf.text_baselines(text).bigram / LN2
    meta = minitf.load(ROOT / "data" / "checkpoints" / "lm.pt").metadata
    # "the bigram pays 3.60 for each byte, `lm.pt` 2.32"
    assert numbers(said, after="the bigram pays")[:2] == [round(bigram, 2), round(meta["val"]["bits_per_byte"], 2)]
    s = [spans[span] for span in SPANS]
    # "With one byte read the model pays 3.57 bits, what the bigram pays"
    assert numbers(said, after="the model pays")[0] == round(s[0], 2) and abs(s[0] - bigram) < 0.05
    # "two to four bytes brings it to 2.96, five to eight to 2.38, nine to sixteen to 2.28; further on it
    # stays between 2.23 and 2.27"
    assert numbers(said, after="brings it to")[:5] == [round(x, 2) for x in (*s[1:4], min(s[4:]), max(s[4:]))]
    # "the bytes from 17 to 63 back add nothing measurable"
    assert numbers(said, after="the bytes from")[:2] == [SPANS[4][0], SPANS[5][1] - 1]
    assert abs(s[5] - s[3]) < 0.05 and s[5] > s[4]
    # "what the model gains over counting comes from the last dozen or so bytes"
    assert (bigram - s[3]) / (bigram - min(s[4:])) > 0.95 and "last dozen or so" in said


def word_share(sample: bytes, words: set) -> float:
    return lm_writing.word_share(sample, words)[0]  # the share 09's temperature cell prints


@pytest.mark.slow
def test_the_lowest_temperature_writes_the_most_words(lm64, text):
    said = markdown(NOTEBOOK)
    words = set(bytes(text.train.data.tolist()).decode().split())
    shown = {T: word_share(minitf.generate_text(lm64, "ROMEO:\n", 120, temperature=T, seed=0), words)
             for T in (0.5, 1.0, 1.5)}
    # "all of its words occur in the training text, against 79 % at $T = 1$ and 73 % at $T = 1.5$"
    assert shown[0.5] == 1 and "all of its words" in said
    assert numbers(said, after="training text, against")[:4] == [round(100 * shown[1.0]), 1, round(100 * shown[1.5]), 1.5]
    # "five samples of 200 bytes per temperature (random seeds 0–4) give 97 %, 85 % and 53 % on
    # average, in that order for every seed"
    share = {T: [word_share(minitf.generate_text(lm64, "ROMEO:\n", 200, temperature=T, seed=s), words)
                 for s in range(5)] for T in (0.5, 1.0, 1.5)}
    for s in range(5):
        assert share[0.5][s] > share[1.0][s] > share[1.5][s]
    assert numbers(said, after="0–4) give")[:3] == [round(100 * sum(v) / 5) for v in share.values()]


def test_describe_says_what_a_checkpoint_was_trained_with(lm):
    lines = describe(lm.metadata).splitlines()
    assert lines[0] == f"trained by: {lm.metadata['command']}"
    meta = lm.metadata
    assert numbers(lines[1], after="steps")[0] == 0 == meta["seed"] and "windows of 64 bytes" in lines[1]
    # "validation at step 3,000 (111,488 bytes): loss 1.610 nats per byte = 2.32 bits per byte"
    step, scored, nats, bits = numbers(lines[2], after="at step")
    assert numbers(lines[1])[0] == step == meta["steps"] == 3000 and scored == 111488
    assert nats == round(meta["val"]["loss"], 3) and bits == round(nats / LN2, 2) == 2.32
    pairs = describe({"steps": 10, "val": {"step": 10, "loss": 0.0002, "char_accuracy": 1.0, "exact_match": 0.5}})
    assert pairs.splitlines()[0] == "10 steps" and numbers(pairs, after="at step") == [10, 2e-4, 100, 50]
    assert "characters right" in pairs and "whole outputs right" in pairs
    assert describe({}).startswith("no training record")


# --- what 09's cells print, read from the executed notebook (the cells assert nothing in view) -------

def test_the_small_model_passes_the_bigram_in_the_stored_run():
    # "In a few seconds it passes the bigram"
    out = printed(NOTEBOOK, results=True, containing="history = minitf.train(small, text.train")
    assert "below the bigram's: True" in out and "passes the bigram" in markdown(NOTEBOOK)


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


def test_the_sampler_widget_draws_the_notebooks_continuation_and_top_p_cuts_the_tail(lm64):
    from minitf.views.lm_view import TextSampler
    sampler = TextSampler(lm64, "ROMEO:", length=60, temperature=0.8, top_p=0.9, step=1)
    assert sampler.state["steps"] == 60 and abs(float(sampler.state["probs"].sum()) - 1) < 1e-12
    assert int((sampler.state["probs"] > 0).sum()) < int((sampler.state["raw"] > 1e-6).sum())  # top-p cut the tail
    assert printed(NOTEBOOK, results=True, containing="sampler = TextSampler(") == repr(sampler)


def test_the_whole_model_writing_is_the_60_bytes_the_prediction_is_about():
    # "The last line is your whole model writing: 60 greedy bytes without the cache, …": the run's last
    # check says 60 bytes (test_predictions_run: the prediction's answer, "The same, both times")
    assert numbers(markdown(NOTEBOOK), after="whole model writing:")[:1] == [60]


def test_every_piece_passes_and_the_forgetful_cache_is_named():
    # every piece the speaking model is built from passed the model check (none gave way), said in one line
    said = printed(NOTEBOOK, results=True, containing="yours = your_language_model(lm,")
    assert said.startswith("✓ your model computes") and len(said.strip().splitlines()) == 1, said
    assert numbers(said, after="Its")[0] == len(minitf.parts.Parts.__dataclass_fields__) - 1  # every piece
    forgetful = printed(NOTEBOOK, results=True, containing="def forgetful(").splitlines()
    named = [line.strip().split(" — ")[0] for line in forgetful if "broken piece:" in line]
    assert named == ["broken piece: cached_attention"], forgetful


def test_the_learners_file_speaks_the_same_bytes_with_lm_weights():
    """'Your file speaks': MyTransformer of 08's file, lm.pt's weights loaded by name, writes the text
    of the check above, byte for byte (float64, no cache, the same sampler and seed), as many bytes as
    the prediction says the check writes."""
    said = printed(NOTEBOOK, containing="mine = minitf.parts.my_model(lm.config, yours.parts)")
    # "your file's model wrote 120 bytes; the same as the text above: True"
    written = numbers(markdown(NOTEBOOK), after="has it write")[0]  # "…, then has it write 120 bytes after `ROMEO:`"
    assert f'"ROMEO:\\n", {written:.0f},' in code(NOTEBOOK)
    assert numbers(said, after="model wrote") == [written] and said.strip().endswith(": True"), said
