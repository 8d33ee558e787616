"""Notebook 06: switching one attention head off."""
from __future__ import annotations

import copy

import torch

from ...core.config import Config
from ...core.heads import ablate_heads
from ...core.model import Transformer
from ..cases import named_slip as _named_slip
from ..declaration import Exercise, on_face, refused


def _ablate_cases():
    torch.manual_seed(0)
    model = Transformer(Config(d_model=8, n_heads=2, dropout=0.0)).double().eval()
    return [(model, 0, 1), (model, 1, 0)]


def _ablated_logits(model):
    ids = torch.tensor([list(b"Hello\tIfmmp")])
    with torch.no_grad():
        return model.eval()(ids)


def _ablate_reference(model, layer, head):
    return ablate_heads(model, [(layer, head)])


def _ablate_slips(model, layer, head):
    """The head's ROWS of W_O zeroed (output dimensions of the stream), not the columns that read
    the head: the logits that gives, to recognise."""
    hd = model.config.head_dim
    heads = slice(head * hd, (head + 1) * hd)

    def zeroed(where):
        wrong = copy.deepcopy(model)
        with torch.no_grad():
            where(wrong.blocks[layer].attn)
        return _ablated_logits(wrong)

    def rows(attn):
        attn.out.weight[heads, :] = 0

    return (_named_slip("_rows_not_columns", [zeroed(rows)],
                        "yours zeroes rows of W_O: its weight is (out, in), so a row is one output "
                        "dimension of the stream, and every head writes to it. The head is read by "
                        f"COLUMNS {head * hd}–{(head + 1) * hd - 1}: out.weight[:, head·hd:(head + 1)·hd] = 0"),)


def my_ablate_head(model, layer, head):
    import copy
    model = copy.deepcopy(model)
    hd = model.config.head_dim
    with torch.no_grad():
        # W_O reads the heads side by side: zeroing this head's columns removes its contribution
        model.blocks[layer].attn.out.weight[:, head * hd:(head + 1) * hd] = 0
    return model


EXERCISES = [
    Exercise(name="ablate_head", notebook="06", teaches="switch one head off to measure what it does",
             difficulty=2, minutes=10,
             solution=my_ablate_head, reference=_ablate_reference, cases=_ablate_cases,
             hint="the check compares the logits of your model and minitf's on 'Hello⇥Ifmmp'. A head's "
             "output reaches the model only through W_O, whose weight is (out, in): zero the head_dim "
             "COLUMNS (second index) that read the head, in a copy of the model",
             outcome=_ablated_logits, library=refused(on_face(ablate_heads)),
             options={"diagnoses": _ablate_slips, "hints_by_diagnosis": {
                 "_rows_not_columns": "model.blocks[layer].attn.out.weight[:, head * hd:(head + 1) * hd] "
                                      "= 0: the second index is the input, the heads side by side"}},
             own_work="copy.deepcopy and writing zeros into the weight under torch.no_grad() are fine: "
                      "minitf.ablate_heads is the ablation itself"),
]
