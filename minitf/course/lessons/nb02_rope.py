"""Notebook 02: RoPE, the rotation of neighbouring pairs."""
from __future__ import annotations

import torch

from ...core.rope import apply_rope, rope_angles, rope_frequencies
from ..cases import named_slip as _named_slip, random_case as _rand
from ..declaration import Exercise, Piece, on_face, refused


def _rope_slips(x, cos, sin):
    """The rotation by −angle, cos and sin swapped, or the pairs taken as the two halves."""
    a, b = x.chunk(2, dim=-1)
    return (_named_slip("_turned_backwards", [apply_rope(x, cos, -sin)],
                        "yours turns every pair the wrong way, by −angle: (a·cos + b·sin, −a·sin + "
                        "b·cos); the turn by +angle is (a·cos − b·sin, a·sin + b·cos)"),
            _named_slip("_cos_sin_swapped", [apply_rope(x, sin, cos)],
                        "yours uses sin where cos goes and cos where sin goes: a·cos − b·sin, "
                        "a·sin + b·cos"),
            _named_slip("_halves_paired", [torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)],
                        "yours pairs dimension i with dimension i + head_dim/2 (the two halves of the "
                        "vector); pair i is the neighbours (2i, 2i+1)"))


def _rope_case(B, H, T, hd, seed):
    cos, sin = rope_angles(rope_frequencies(hd, n_heads=H, dtype=torch.float64), T)
    return _rand(B, H, T, hd, seed=seed), cos, sin


def my_apply_rope(x, cos, sin):
    a = x[..., 0::2]  # first element of every pair: dims 0, 2, 4, …
    b = x[..., 1::2]  # second element: dims 1, 3, 5, …
    a_rot = a * cos - b * sin
    b_rot = a * sin + b * cos
    out = torch.empty_like(x)
    out[..., 0::2] = a_rot  # put each rotated pair back in its own two slots
    out[..., 1::2] = b_rot
    return out


EXERCISES = [
    Exercise(name="apply_rope", notebook="02",
             teaches="RoPE rotates neighbouring pairs (x_2i, x_2i+1) by position × θ_i",
             difficulty=2, minutes=15, solution=my_apply_rope, reference=apply_rope,
             cases=lambda: [_rope_case(1, 1, 5, 2, 0), _rope_case(2, 2, 6, 4, 1), _rope_case(1, 3, 4, 8, 2)],
             hint="pair i is (x[..., 2i], x[..., 2i+1]), not the two halves of the vector; a·cos − b·sin "
             "goes to the even slot, a·sin + b·cos to the odd one",
             options={"diagnoses": _rope_slips, "hints_by_diagnosis": {
                 "permutation": "the rotated numbers are right but sit in the wrong slots: pair i is "
                                "the neighbours (2i, 2i+1), so write a·cos − b·sin back to x[..., 0::2] "
                                "and a·sin + b·cos to x[..., 1::2] (torch.stack(..., -1).flatten(-2) "
                                "interleaves them; torch.cat puts all of one kind first)",
                 "_turned_backwards": "the minus sign goes with b·sin in the even slot: "
                                      "(a·cos − b·sin, a·sin + b·cos) turns the pair by +angle",
                 "_cos_sin_swapped": "a·cos − b·sin to the even slot, a·sin + b·cos to the odd one: "
                                     "cos multiplies the member that stays in its own slot",
                 "factor": "a rotation keeps the length: only cos and sin multiply, nothing else"}},
             library=refused(on_face(apply_rope)),
             own_work="*, − and + on strided slices (x[..., 0::2]), torch.stack, torch.empty_like "
                      "and complex numbers are fine: minitf.apply_rope is the rotation itself",
             piece=Piece(fills="model", order=1, call='apply_rope(x, cos, sin) → x with each pair rotated')),
]
