"""Notebook 05: the batch, one padded sequence per pair with targets on the output only; position
coupling, the ids that pair output byte j with input byte j."""
from __future__ import annotations

import torch

from ...core.data import Pair, make_batch, make_pairs
from ...core.rope import position_ids
from ...core.tokens import EOS, PAD, TAB
from ..declaration import Exercise, Piece, on_face, refused


def _batch_cases():
    return [([Pair(b"Hi", b"Ij")],),
            ([Pair(b"Hi", b"Ij"), Pair(b"cat", b"dbu"), Pair(b"a~z", b"b {")],),
            (make_pairs("shift", 5, seed=3),)]


def _position_ids_cases():
    """Pairs of several lengths in one padded batch, a row of plain text (no TAB) and the edge cases."""
    def row(text: bytes, width: int) -> list[int]:
        return list(text) + [PAD] * (width - len(text))

    pair = lambda a, b: a + bytes([TAB]) + b + bytes([EOS])
    batch = [pair(b"abc", b"bcd"), pair(b"hello", b"ifmmp"), pair(b"z", b"{")]
    width = max(map(len, batch))
    return [(torch.tensor([list(pair(b"abc", b"bcd"))]),),
            (torch.tensor([row(r, width) for r in batch]),),
            (torch.tensor([list(b"no tab here"), list(b"a\tb\tc\tdefgh")]),),
            (torch.tensor([[TAB, 66, EOS]]),)]


EXERCISES = [
    Exercise("make_batch", "05", "one sequence per pair, padded, with targets on the output only",
             3, 20, make_batch, _batch_cases,
             "ids = input TAB output (all but the last byte), padded with PAD = 0; targets[t] = "
             "seq[t+1] from t = len(input) on (the TAB's position predicts the first output byte), "
             "IGNORE = −100 everywhere else", result_names=("ids", "targets"),
             options={"hints_by_diagnosis": {
                 "padding": "ids are padded with PAD = 0; IGNORE = −100 only goes into targets",
                 "results_swapped": "return (ids, targets), in this order"}},
             library=refused(on_face(make_batch)),
             own_work="minitf.sequence(pair), torch.full and torch.tensor are fine (the padding and "
                      "the output-only targets are the exercise): minitf.make_batch is the batch itself",
             piece=Piece("model", 12, 'make_batch(pairs) → (ids, targets)')),
    Exercise("position_ids", "05", "position coupling: output byte j gets input byte j's position id",
             2, 15, lambda ids: position_ids(ids, "coupled"), _position_ids_cases,
             "for each row: before the first TAB, token t gets t + 1; from the first TAB on, t minus "
             "the first TAB's index (so the TAB gets 0, output byte j gets j + 1); a row without any "
             "TAB is t + 1 throughout. Later TABs do not restart the count",
             options={"hints_by_diagnosis": {
                 "offset": "every id is off by the same amount: input byte j gets j + 1 and the TAB 0",
                 "dtype": "ids are whole numbers: build them from torch.arange (a long tensor)"}},
             library=refused((position_ids, "minitf.rope.position_ids")),
             own_work="torch.arange, comparisons, cumsum, argmax and torch.where are fine: "
                      "minitf.rope.position_ids is the numbering itself",
             piece=Piece("model", 13,
                         "position_ids(ids) → (B, T) coupled ids (used when positions.position_ids='coupled')"),
             optional=True),
]
