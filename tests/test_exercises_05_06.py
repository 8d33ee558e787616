"""The exercises of notebooks 05 and 06: a reference solution passes its check, and a typical
mistake gets a message that says what is wrong."""
import pytest
import torch

import minitf
from minitf import heatmaps

PAIRS = [minitf.Pair(b"Hi", b"Ij"), minitf.Pair(b"cat", b"dbu"), minitf.Pair(b"a~z", b"b {")]
BATCH_CASES = [([minitf.Pair(b"Hi", b"Ij")],), (PAIRS,), (minitf.make_pairs("shift", 5, seed=3),)]


def solution_make_batch(pairs, mask_input=True):
    seqs = [[*p.input, minitf.TAB, *p.output, minitf.EOS] for p in pairs]
    T = max(len(s) for s in seqs) - 1
    ids = torch.full((len(seqs), T), minitf.PAD)
    targets = torch.full((len(seqs), T), minitf.IGNORE)
    for row, (p, s) in enumerate(zip(pairs, seqs)):
        ids[row, :len(s) - 1] = torch.tensor(s[:-1])
        start = len(p.input) if mask_input else 0
        targets[row, start:len(s) - 1] = torch.tensor(s[start + 1:])
    return ids, targets


def test_05_solution_passes():
    assert minitf.check_function(solution_make_batch, minitf.make_batch, BATCH_CASES).startswith("✓")


def test_05_unmasked_input_is_explained():
    wrong = lambda pairs: solution_make_batch(pairs, mask_input=False)
    with pytest.raises(minitf.ExerciseError, match=r"case 0\[1\]: 2 of 5 entries differ; first at index \(0, 0\): got 105, expected -100"):
        minitf.check_function(wrong, minitf.make_batch, BATCH_CASES, name="my_make_batch")


def test_05_stub_message():
    def stub(pairs):
        raise NotImplementedError
    with pytest.raises(minitf.ExerciseError, match="not written yet"):
        minitf.check_function(stub, minitf.make_batch, BATCH_CASES, name="my_make_batch")


SOURCE_CASES = [(task, n, k) for task in ("copy", "shift", "reverse") for n in (1, 4, 7)
                for k in range(n)]


def solution_source_position(task, n_input, k):
    return n_input - 1 - k if task == "reverse" else k


def test_06_solution_passes():
    assert minitf.check_function(solution_source_position, heatmaps.source_position,
                                 SOURCE_CASES).startswith("✓")


def test_06_reverse_off_by_one_is_explained():
    wrong = lambda task, n, k: n - k if task == "reverse" else k
    with pytest.raises(minitf.ExerciseError, match=r"case 24: got 1, expected 0"):
        minitf.check_function(wrong, heatmaps.source_position, SOURCE_CASES, name="my_source_position")
