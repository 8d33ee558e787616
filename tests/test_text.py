"""Text for a language model: reading any file as bytes, the split, windows, baselines, training."""
import math

import pytest
import torch

import minitf
from minitf import Config, TextError, Transformer, read_text, text_baselines
from minitf.core.text import evaluate_text, random_windows, tiled_windows

SHAKESPEARE = "data/text/tinyshakespeare.txt"



def write(tmp_path, data: bytes, name="t.txt"):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_the_shipped_text_is_the_documented_one():
    import hashlib
    raw = open(SHAKESPEARE, "rb").read()
    assert hashlib.sha256(raw).hexdigest() == \
        "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"


def test_split_by_position_first_90_percent_trains():
    text = read_text(SHAKESPEARE, context=64)
    raw = open(SHAKESPEARE, "rb").read()
    assert len(text.train) + len(text.val) == len(raw) == 1_115_394
    assert len(text.train) == round(0.9 * len(raw))
    assert bytes(text.train.data.tolist()[:10]) == raw[:10]
    assert bytes(text.val.data.tolist()[-10:]) == raw[-10:]
    assert text.context == 64 and text.val.name == "validation"


def test_any_bytes_are_fine_including_non_utf8(tmp_path):
    data = bytes(range(256)) * 4  # every byte value, not valid UTF-8
    text = read_text(write(tmp_path, data), context=8)
    assert bytes(torch.cat([text.train.data, text.val.data]).tolist()) == data


def test_windows_predict_the_next_byte_at_every_position(tmp_path):
    text = read_text(write(tmp_path, bytes(range(200))), context=5)
    ids, targets = random_windows(text.train, 7, torch.Generator().manual_seed(0))
    assert ids.shape == targets.shape == (7, 5) and ids.dtype == torch.long
    assert torch.equal(targets, ids + 1)  # the file counts up, so the next byte is one more
    assert int(targets.max()) < len(text.train)  # never reads past the training split
    ids, targets = tiled_windows(text.val, max_windows=None)
    assert torch.equal(ids[1:, 0], ids[:-1, -1] + 1)  # side by side: each byte scored once
    assert torch.equal(targets.flatten(), text.val.data[1:1 + targets.numel()].long())


@pytest.mark.parametrize("make, context, message", [
    (lambda p: p / "missing.txt", 8, "missing.txt: no such file"),
    (lambda p: p, 8, "is a directory"),
    (lambda p: write(p, b""), 8, "the file is empty"),
    (lambda p: write(p, b"x" * 50), 8, "validation split holds 5 bytes .* needs context \\+ 1 = 9"),
    (lambda p: write(p, b"x" * 500), 0, "context must be a positive"),
])
def test_bad_texts_name_the_file_and_the_problem(tmp_path, make, context, message):
    with pytest.raises(TextError, match=message):
        read_text(make(tmp_path), context)


def test_context_longer_than_max_len_is_refused(tmp_path):
    path = write(tmp_path, b"abc" * 400)
    with pytest.raises(TextError, match="t.txt: context 64 is longer than the model's max_len 32"):
        read_text(path, 64, max_len=32)
    text = read_text(path, 64)
    with pytest.raises(TextError, match="t.txt: context 64 is longer than the model's max_len 32"):
        minitf.train(Transformer(Config(max_len=32)), text.train, steps=1, progress=False)


def test_baselines_by_hand_on_a_tiny_text(tmp_path):
    # train "abab…" (18 bytes), validation "ab": one target, b after a
    text = read_text(write(tmp_path, b"ab" * 10), context=1)
    base = text_baselines(text)
    assert base.uniform == pytest.approx(math.log(256))
    assert base.unigram == pytest.approx(-math.log((9 + 1) / (18 + 256)))
    assert base.bigram == pytest.approx(-math.log((9 + 1) / (9 + 256)))  # 9 pairs "ab" in training
    assert base.n_targets == 1


def test_shakespeare_baselines_as_the_notebook_states():
    base = text_baselines(read_text(SHAKESPEARE, 64))
    assert base.unigram / math.log(2) == pytest.approx(4.829, abs=1e-3)
    assert base.bigram / math.log(2) == pytest.approx(3.597, abs=1e-3)
    assert "bits/byte" in repr(base)


def test_a_perfect_predictor_scores_zero_and_uniform_logits_score_ln_256(tmp_path):
    text = read_text(write(tmp_path, bytes(range(100)) * 3), context=4)

    class Counter(torch.nn.Module):  # knows the next byte is one more
        config = Config(max_len=4)

        def forward(self, ids):
            return torch.nn.functional.one_hot((ids + 1) % 100, 256).float() * 100

    assert evaluate_text(Counter(), text.val)["loss"] < 1e-6
    flat = Transformer(Config(max_len=4))
    torch.nn.init.zeros_(flat.head.weight), torch.nn.init.zeros_(flat.head.bias)
    got = evaluate_text(flat, text.val)
    assert got["loss"] == pytest.approx(math.log(256)) and got["bits_per_byte"] == pytest.approx(8.0)


def test_one_training_loop_for_text_lowers_the_loss_below_unigram(tmp_path):
    text = read_text(write(tmp_path, b"the cat sat on the mat. " * 40), context=16)
    torch.manual_seed(0)
    model = Transformer(Config(d_model=32, n_heads=4, norm_position="pre", dropout=0.0, max_len=16))
    hist = minitf.train(model, text.train, text.val, steps=30, batch_size=16, lr=1e-2,
                        eval_every=15, progress=False)
    assert [v["step"] for v in hist.val] == [15, 30] and hist.tokens == 30 * 16 * 16
    assert hist.val[-1]["loss"] < text_baselines(text).bigram  # 1.04 against 1.90 (perturbed too)
    assert hist.val[-1]["bits_per_byte"] == pytest.approx(hist.val[-1]["loss"] / math.log(2))


def test_text_training_is_reproducible_with_a_seed(tmp_path):
    text = read_text(write(tmp_path, bytes(range(256)) * 3), context=8)
    losses = []
    for _ in range(2):
        torch.manual_seed(1)
        model = Transformer(Config(dropout=0.0, max_len=8))
        losses.append(minitf.train(model, text.train, steps=5, batch_size=4, progress=False).loss)
    assert losses[0] == losses[1]
