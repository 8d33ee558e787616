"""Notebook 01: the embedding lookup, and counting the tiny model's parameters."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ...core.config import Config
from ...core.model import Transformer, count_parameters, format_parameter_table, parameter_table
from ..cases import random_case as _rand
from ..declaration import Exercise, Piece, on_face, refused


def _embed_cases():
    table = _rand(256, 4, seed=0)
    return [(torch.tensor([[72, 105, 9]]), table),
            (torch.tensor([[0, 255, 32, 32], [9, 10, 97, 126]]), table)]


def _count_cases():
    return [(Config(),), (Config(d_model=8, n_heads=2, d_ff=16),), (Config(n_layers=3),),
            (Config(d_model=32, n_heads=4, d_ff=128),)]


def _count_differences(config):
    """What a count off by each of these amounts has usually left out (or counted twice)."""
    V, C, L, Fd, A = config.vocab_size, config.d_model, config.n_layers, config.d_ff, config.attn_dim
    reasons = [
        (-V, f"one {V}-wide bias missing: the output head's (it has V = {V} numbers)"),
        (-V * C, f"the embedding ({V}×{C}) or the output head's weight left out; they are not shared"),
        (-L * (3 * A + C), "the attention biases missing (W_Q, W_K, W_V and W_O each have one)"),
        (-L * (Fd + C), "the FFN biases missing (up and down each have one)"),
        (-L * 4 * C, "the LayerNorms missing (two per layer, each with γ and β)"),
        (-L * 2 * C, "half the LayerNorm numbers missing: each LayerNorm has γ AND β"),
        (-L * (C * C + C), "one of the four attention projections missing (Q, K, V and O)"),
        (+L * 4 * C, "the LayerNorms counted twice: there are two per layer, not four"),
    ]
    explained: dict[int, str] = {}
    for amount, why in reasons:  # different slips can cost the same amount: name them all
        explained[amount] = f"{explained[amount]}, or {why}" if amount in explained else why
    return explained


def my_embed(ids, table):
    # one row of the table per byte id: (B, T) ids → (B, T, C) vectors
    return table[ids]


def my_count_parameters(config):
    V, C, L, F = config.vocab_size, config.d_model, config.n_layers, config.d_ff
    embedding = V * C
    attention = 4 * (C * C + C)     # W_Q, W_K, W_V, W_O, each with a bias
    ffn = (C * F + F) + (F * C + C)  # up C→F and down F→C, with biases
    norms = 2 * (C + C)             # two LayerNorms per layer: γ and β
    head = C * V + V                # the output head, with its bias
    return embedding + L * (attention + ffn + norms) + head


EXERCISES = [
    Exercise(name="embed", notebook="01", teaches="an embedding is a table lookup: row id of the table",
             difficulty=1, minutes=5,
             solution=my_embed, reference=lambda ids, table: F.embedding(ids, table), cases=_embed_cases,
             hint="row b of the table is the vector of byte b; index the table with the whole ids tensor",
             options={"hints_by_diagnosis": {
                 "raised": "indexing table[ids] needs integer ids; one-hot vectors must have the "
                           "table's dtype: F.one_hot(ids, 256).to(table.dtype) @ table",
                 "dtype_changed": "keep the table's dtype: table[ids] does; a one-hot product needs "
                                  "F.one_hot(ids, 256).to(table.dtype), not .double() or .float()"}},
             library=refused(F.embedding, torch.embedding, nn.Embedding.forward),
             own_work="indexing the table with the ids (table[ids]) or a one-hot product "
                      "(F.one_hot(ids, 256).to(table.dtype) @ table) is fine: F.embedding and "
                      "nn.Embedding are the lookup itself",
             piece=Piece(fills="model", order=0, call='embed(ids, table) → (B, T, C)')),
    Exercise(name="count_parameters", notebook="01", teaches="where the 2,648 numbers of the tiny model are",
             difficulty=2, minutes=10,
             solution=my_count_parameters, reference=lambda config: count_parameters(Transformer(config)),
             cases=_count_cases,
             hint="go piece by piece and multiply what one layer holds by n_layers: every nn.Linear has a "
             "weight (out × in) and a bias (out); every LayerNorm a γ and a β; the embedding and the "
             "output head are separate tables",
             options={"explain_difference": _count_differences},
             library=refused((Transformer.__init__, "minitf.Transformer(config) (it builds the model)"),
                             on_face(count_parameters),
                             on_face(parameter_table),
                             on_face(format_parameter_table),
                             (nn.Module.__init__, "a torch.nn module (it builds part of a model)"),
                             (nn.Module.parameters, ".parameters()"),
                             (nn.Module.named_parameters, ".named_parameters()"),
                             (nn.Module.state_dict, ".state_dict()")),
             own_work="arithmetic on config.vocab_size, d_model, n_layers and d_ff is fine, and all "
                      "you need: building the model (or any nn layer) and counting its .parameters() "
                      "is how the check gets the answer you are asked to work out",
             optional=True),
]
