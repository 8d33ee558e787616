"""Notebook 05: the batch, one padded sequence per pair with targets on the output only."""
from __future__ import annotations

import torch

from ...core.data import Pair, make_batch, make_pairs
from ...core.tokens import EOS, IGNORE, PAD, TAB
from ..declaration import Exercise, Piece, on_face, refused


def _batch_cases():
    return [([Pair(b"Hi", b"Ij")],),
            ([Pair(b"Hi", b"Ij"), Pair(b"cat", b"dbu"), Pair(b"a~z", b"b {")],),
            (make_pairs("shift", 5, seed=3),)]


def _equal_slip(name: str, result: torch.Tensor, words: str):
    """A recogniser for a whole-number result (ids, targets): yours equal to what the slip gives."""
    def recognise(got, expected):
        same = isinstance(got, torch.Tensor) and got.shape == result.shape and torch.equal(
            got.long() if got.is_floating_point() else got, result)
        return words if same and not torch.equal(result, expected) else None
    recognise.__name__ = name
    return recognise


def _batch_slips(pairs):
    """make_batch's targets gone wrong: starting one position late (the TAB's own position, which
    predicts the first output byte, left out), or scored over the input part too."""
    ids, targets = make_batch(pairs)
    late, everywhere = targets.clone(), targets.clone()
    for row, pair in enumerate(pairs):
        late[row, len(pair.input)] = IGNORE
        n = len(pair.input) + 1 + len(pair.output)  # the bytes of the sequence the model reads
        everywhere[row, :len(pair.input)] = ids[row, 1:len(pair.input) + 1]
        everywhere[row, n:] = IGNORE
    return (_equal_slip("_targets_late", late,
                        "yours starts the targets one position late: the TAB's position predicts the "
                        "first output byte (targets[len(input)] = output[0]); yours leaves it IGNORE, so "
                        "the first output byte is never scored"),
            _equal_slip("_targets_on_input", everywhere,
                        "yours scores the input part too: there the next byte is part of the input the "
                        "model is given, not something it must write. Targets start at the TAB's "
                        "position; IGNORE before it"))


def my_make_batch(pairs):
    seqs = [[*p.input, TAB, *p.output, EOS] for p in pairs]
    T = max(len(s) for s in seqs) - 1  # the model never reads the last byte
    ids = torch.full((len(pairs), T), PAD)
    targets = torch.full((len(pairs), T), IGNORE)
    for row, (pair, seq) in enumerate(zip(pairs, seqs)):
        n = len(seq) - 1
        ids[row, :n] = torch.tensor(seq[:-1])
        for t in range(len(pair.input), n):  # from the TAB on, position t predicts seq[t + 1]
            targets[row, t] = seq[t + 1]
    return ids, targets


EXERCISES = [
    Exercise(name="make_batch", notebook="05",
             teaches="one sequence per pair, padded, with targets on the output only",
             difficulty=3, minutes=20, solution=my_make_batch, reference=make_batch, cases=_batch_cases,
             hint="ids = input TAB output (all but the last byte), padded with PAD = 0; targets[t] = "
             "seq[t+1] from t = len(input) on (the TAB's position predicts the first output byte), "
             "IGNORE = −100 everywhere else", result_names=("ids", "targets"),
             options={"diagnoses": _batch_slips, "hints_by_diagnosis": {
                 "padding": "ids are padded with PAD = 0; IGNORE = −100 only goes into targets",
                 "results_swapped": "return (ids, targets), in this order",
                 "_targets_late": "for t in range(len(input), n): targets[row, t] = seq[t + 1]: the "
                                  "TAB sits at t = len(input), and it predicts output[0]",
                 "_targets_on_input": "targets stay IGNORE before t = len(input): the model is given "
                                      "the input, it is scored on the output and EOS only",
                 "dtype": "ids and targets are byte ids, whole numbers: torch.full((B, T), PAD) with an "
                          "int fill is int64; torch.zeros(B, T) is float unless dtype=torch.long"}},
             library=refused(on_face(make_batch)),
             own_work="minitf.sequence(pair), torch.full and torch.tensor are fine (the padding and "
                      "the output-only targets are the exercise): minitf.make_batch is the batch itself",
             piece=Piece(fills="model", order=12, call='make_batch(pairs) → (ids, targets)'),
             optional=True),
]
