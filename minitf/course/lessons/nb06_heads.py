"""Notebook 06: switching one attention head off."""
from __future__ import annotations

import torch

from ...core.config import Config
from ...core.heads import ablate_heads
from ...core.model import Transformer
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


EXERCISES = [
    Exercise("ablate_head", "06", "switch one head off to measure what it does", 2, 10,
             _ablate_reference, _ablate_cases,
             "the check compares the logits of your model and minitf's on 'Hello⇥Ifmmp'. A head's "
             "output reaches the model only through W_O, whose weight is (out, in): zero the head_dim "
             "COLUMNS (second index) that read the head, in a copy of the model",
             outcome=_ablated_logits, library=refused(on_face(ablate_heads)),
             own_work="copy.deepcopy and writing zeros into the weight under torch.no_grad() are fine: "
                      "minitf.ablate_heads is the ablation itself"),
]
