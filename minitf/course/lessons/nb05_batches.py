"""Notebook 05: the batch, one padded sequence per pair with targets on the output only."""
from __future__ import annotations

from ...core.data import Pair, make_batch, make_pairs
from ..declaration import Exercise


def _batch_cases():
    return [([Pair(b"Hi", b"Ij")],),
            ([Pair(b"Hi", b"Ij"), Pair(b"cat", b"dbu"), Pair(b"a~z", b"b {")],),
            (make_pairs("shift", 5, seed=3),)]


EXERCISES = [
    Exercise("make_batch", "05", "one sequence per pair, padded, with targets on the output only",
             3, 20, make_batch, _batch_cases,
             "ids = input TAB output (all but the last byte), padded with PAD = 0; targets[t] = "
             "seq[t+1] from t = len(input) on (the TAB's position predicts the first output byte), "
             "IGNORE = −100 everywhere else", result_names=("ids", "targets"),
             options={"hints_by_diagnosis": {
                 "padding": "ids are padded with PAD = 0; IGNORE = −100 only goes into targets",
                 "results_swapped": "return (ids, targets), in this order"}},
             library={make_batch: "minitf.make_batch"},
             own_work="minitf.sequence(pair), torch.full and torch.tensor are fine (the padding and "
                      "the output-only targets are the exercise): minitf.make_batch is the batch itself",
             fills="model", order=12,
             call='make_batch(pairs) → (ids, targets)'),
]
