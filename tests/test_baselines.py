"""The baseline losses, on pair sets small enough to check by hand."""
import math
from collections import Counter

import pytest
import torch

import minitf
from minitf import Pair
from minitf.core.baselines import (Baselines, baseline_losses, length_oracle_loss, unigram_loss,
                              uniform_loss)

PAIRS = [Pair(b"ab", b"bc"), Pair(b"x", b"y")]  # targets: b c EOS | y EOS — 5 targets


def test_uniform_losses_are_logs_of_the_number_of_symbols():
    assert uniform_loss(PAIRS, 256) == pytest.approx(5.5452, abs=1e-4)
    assert uniform_loss(PAIRS, 96) == pytest.approx(math.log(96))


def test_length_oracle_by_hand():
    # 3 output bytes at 1/95 each, 2 certain EOS: 3 · ln 95 nats over 5 targets
    assert length_oracle_loss(PAIRS) == pytest.approx(3 * math.log(95) / 5)
    assert length_oracle_loss([Pair(b"a", b"\x01")]) == math.inf  # a byte outside the alphabet


def test_unigram_by_hand():
    train = [Pair(b"q", b"aa"), Pair(b"r", b"b")]  # targets a a EOS b EOS: a 2, b 1, EOS 2 of 5
    held_out = [Pair(b"s", b"a")]                  # targets a, EOS
    expected = -(math.log(2 / 5) + math.log(2 / 5)) / 2
    assert unigram_loss(held_out, train, smoothing=0.0) == pytest.approx(expected)
    smoothed = -(math.log(3 / 261) + math.log(3 / 261)) / 2  # add-one over 256 values
    assert unigram_loss(held_out, train, smoothing=1.0) == pytest.approx(smoothed)
    assert unigram_loss([Pair(b"s", b"z")], train) < math.inf  # never seen: smoothed, not infinite


def test_unigram_equals_the_cross_entropy_of_a_model_predicting_those_frequencies():
    train = minitf.make_pairs("shift", 200, seed=1)
    held = minitf.make_pairs("shift", 50, seed=2)
    counts = Counter(s for p in train for s in [*p.output, minitf.EOS])
    probs = torch.tensor([counts[i] + 0.01 for i in range(256)], dtype=torch.float64)
    ids, targets = minitf.make_batch(held)
    logits = probs.log().expand(*ids.shape, 256)  # the same distribution at every position
    assert minitf.masked_loss(logits, targets).item() == pytest.approx(unigram_loss(held, train))


def test_ordering_and_the_course_data():
    train, val = minitf.read_pairs("data/train.txt"), minitf.read_pairs("data/val.txt")
    b = baseline_losses(val, train)
    assert isinstance(b, Baselines)
    assert b.uniform_256 > b.uniform_96 > b.unigram > b.length_oracle
    # notebook 05 quotes these (uniform 5.55, unigram 4.34, length oracle 3.92)
    assert [round(x, 2) for x in (b.uniform_256, b.uniform_96, b.unigram, b.length_oracle)] == [5.55, 4.56, 4.34, 3.92]
    assert b.n_pairs == 75 and b.n_targets == sum(len(p.output) + 1 for p in val)


def test_table_text_and_items():
    b = baseline_losses(PAIRS)
    assert b.unigram is None and len(b.items()) == 3  # no training pairs: no unigram
    text = repr(baseline_losses(PAIRS, PAIRS))
    assert text.splitlines()[0].startswith("baseline")
    assert "length oracle" in text and "5.545" in text and "2 pairs, 5 targets" in text


def test_empty_pairs_are_refused():
    with pytest.raises(ValueError):
        baseline_losses([])
