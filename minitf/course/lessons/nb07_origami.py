"""Notebook 07: Origami, a widened weight that computes the same thing on copied inputs."""
from __future__ import annotations

import torch

from ...core.origami import widen_weight
from ..cases import random_case as _rand
from ..declaration import Exercise, refused


def _zeros_where_copies_should_be(got, expected):
    """widen_weight: the block-diagonal answer, W/k on the diagonal and zeros elsewhere."""
    if isinstance(got, torch.Tensor) and got.shape == expected.shape and \
            ((got == 0) & (expected != 0)).any():
        return "Yours has zeros where copies of W / k should be: every block of W' is W / k, " \
               "off the diagonal too"


def _widen_cases():
    return [(torch.arange(6.0, dtype=torch.float64).view(2, 3), 2),
            (_rand(4, 2, seed=0), 3), (_rand(1, 1, seed=1), 4)]


def _widen_reference(W, k):
    return widen_weight(W, k)


def my_widen_weight(W, k):
    # k × k copies of W, each divided by k: the k copies of x add back up to W x
    return torch.cat([torch.cat([W / k] * k, dim=1)] * k, dim=0)


EXERCISES = [
    Exercise(name="widen_weight", notebook="07",
             teaches="Origami: a weight that computes the same thing on copied inputs",
             difficulty=2, minutes=10, solution=my_widen_weight, reference=_widen_reference,
             cases=_widen_cases,
             hint="W' is a k×k grid of blocks; with the input copied k times, each output row sums k "
             "blocks, so every block must be W / k",
             options={"factors": lambda W, k: {"k": k, "k²": k * k, "1/k": 1 / k},
                      "diagnoses": (_zeros_where_copies_should_be,)},
             library=refused((widen_weight, "minitf.origami.widen_weight")),
             own_work="torch.cat, .repeat and torch.kron are fine: minitf.origami.widen_weight is "
                      "the answer itself"),
]
