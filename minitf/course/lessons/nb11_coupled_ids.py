"""Notebook 11: position coupling, the ids that give output byte j the id of input byte j, so that
the byte to copy sits one id ahead whatever the input's length."""
from __future__ import annotations

import torch

from ...core.rope import position_ids
from ...core.tokens import EOS, PAD, TAB
from ..declaration import Exercise, Piece, refused
from .nb05_batches import _equal_slip


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


def _position_ids_slips(ids):
    """The coupled numbering gone wrong: input bytes counted from 0, or a count restarted at every TAB."""
    expected = position_ids(ids, "coupled")
    t = torch.arange(ids.size(1))
    seen_tab = (ids == TAB).long().cumsum(1) > 0
    zero_based = torch.where(seen_tab, expected, t.expand_as(ids))
    restarted = expected.clone()
    for b in range(ids.size(0)):
        last = None
        for i in range(ids.size(1)):
            if int(ids[b, i]) == TAB:
                last = i
            restarted[b, i] = i + 1 if last is None else i - last
    return (_equal_slip("_input_from_zero", zero_based,
                        "yours numbers the input bytes 0, 1, 2, … : input byte j gets j + 1, so that the "
                        "TAB, 0, comes before all of them and output byte j, also j + 1, meets input "
                        "byte j"),
            _equal_slip("_every_tab_restarts", restarted,
                        "yours restarts the count at every TAB: only the first TAB (the one between "
                        "input and output) restarts it; a TAB inside the output is an ordinary byte"))


def my_position_ids(ids):
    B, T = ids.shape
    t = torch.arange(T)                            # the usual numbering 0, 1, 2, …
    out = torch.zeros(B, T, dtype=torch.long)
    for b in range(B):
        row = ids[b].tolist()
        tab = row.index(TAB) if TAB in row else T  # the first TAB (T: the row has none)
        out[b] = torch.where(t < tab, t + 1, t - tab)  # input j → j + 1; TAB → 0; output j → j + 1
    return out


EXERCISES = [
    Exercise(name="position_ids", notebook="11",
             teaches="position coupling: output byte j gets input byte j's position id",
             difficulty=2, minutes=15, solution=my_position_ids,
             reference=lambda ids: position_ids(ids, "coupled"), cases=_position_ids_cases,
             hint="for each row: before the first TAB, token t gets t + 1; from the first TAB on, t minus "
             "the first TAB's index (so the TAB gets 0, output byte j gets j + 1); a row without any "
             "TAB is t + 1 throughout. Later TABs do not restart the count",
             options={"diagnoses": _position_ids_slips, "hints_by_diagnosis": {
                 "_input_from_zero": "before the first TAB, token t gets t + 1, not t",
                 "_every_tab_restarts": "find the first TAB only: row.index(TAB), or "
                                        "(ids == TAB).cumsum(1) > 0 for 'after the first TAB'",
                 "offset": "every id is off by the same amount: input byte j gets j + 1 and the TAB 0",
                 "dtype": "ids are whole numbers: build them from torch.arange (a long tensor)"}},
             library=refused((position_ids, "minitf.rope.position_ids")),
             own_work="torch.arange, comparisons, cumsum, argmax and torch.where are fine: "
                      "minitf.rope.position_ids is the numbering itself",
             piece=Piece(fills="model", order=13,
                         call="position_ids(ids) → (B, T) coupled ids (used when positions.position_ids='coupled')"),
             optional=True),
]
