"""Notebook 12: the hand-set pieces (the byte circle, the query, the TAB score, the value
rotation), judged by what they must do (`minitf.course.by_hand`)."""
from __future__ import annotations

import math

import torch

from ...core.tokens import EOS, TAB
from .. import by_hand
from ..by_hand import F1, F2, T
from ..declaration import Exercise, refused


def _k_case():
    """The one case of the pieces set from the byte circle's k: the course's own numbers."""
    return [(by_hand.HandSet().k,)]


def _s_omega_case():
    """The one case of the pieces set from the score S and RoPE's step ω: the course's own numbers."""
    n = by_hand.HandSet()
    return [(n.S, n.omega)]


def my_byte_circle(k):
    E = torch.zeros(256, 4, dtype=torch.float64)
    for b in range(32, 127):                   # the 95 printable bytes
        a = k * 2 * math.pi * (b - 32) / 95    # one step of k·2π/95 per byte, 126 → 32 a full turn
        E[b] = math.cos(a) * F1 + math.sin(a) * F2
    E[TAB] = E[EOS] = T                        # the third direction, off the byte plane
    return E


def my_query(S, omega):
    # pair 1: one RoPE step ahead of a byte key's (1, 0); pair 2: TAB's channel
    return math.sqrt(S) * torch.tensor([math.cos(omega), math.sin(omega), 1.0, 0.0],
                                       dtype=torch.float64)


def my_tab_score(S, omega):
    # halfway between the source byte's S and a neighbour's S·cos ω
    return (S + S * math.cos(omega)) / 2


def my_value_rotation(k):
    turn = k * 2 * math.pi / 95                             # one byte further round the circle
    R = torch.tensor([[math.cos(turn), -math.sin(turn)],
                      [math.sin(turn), math.cos(turn)]], dtype=torch.float64)
    A = torch.stack([T, F1, F2], dim=1)                     # (4, 3): the three directions as columns
    inside = torch.eye(3, dtype=torch.float64)
    inside[1:, 1:] = R                                      # T stays, the byte plane turns
    return A @ inside @ A.T


EXERCISES = [
    Exercise(name="byte_circle", notebook="12",
             teaches="the byte circle: shift's +1 becomes one rotation of every code",
             difficulty=2, minutes=10, solution=my_byte_circle,
             reference=lambda k: by_hand.byte_circle(by_hand.HandSet(k=k)), cases=_k_case,
             hint="printable byte b sits at angle a = k·2π(b − 32)/95: its row is cos(a)·F1 + sin(a)·F2; "
             "the rows of TAB and EOS are T; every other row stays 0",
             judge=by_hand.judge_byte_circle,
             options={"hints_by_diagnosis": {
                 "_table_dtype": "E = torch.zeros(256, 4, dtype=torch.float64): the directions T, F1 "
                                 "and F2 are float64 too"}},
             library=refused(by_hand.byte_circle),
             own_work="math.cos, math.sin, torch.zeros and the directions T, F1, F2 are fine: "
                      "by_hand.byte_circle is the circle itself"),
    Exercise(name="query", notebook="12",
             teaches="a constant query that RoPE turns to meet the key one id ahead", difficulty=3,
             minutes=15,
             solution=my_query, reference=by_hand.query, cases=_s_omega_case,
             hint="a byte key is √S·(1, 0) on pair 1; RoPE turns the query by its id·ω and the key by its "
             "id·ω, so a query one step ahead, √S·(cos ω, sin ω), lines up with the key whose id is "
             "one more. Pair 2 is √S·(1, 0): TAB's channel",
             judge=by_hand.judge_query, library=refused(by_hand.query),
             own_work="math.sqrt, math.cos, math.sin and torch.tensor are fine: by_hand.query is "
                      "the query itself"),
    Exercise(name="tab_score", notebook="12",
             teaches="the end-of-output key: TAB wins exactly when no byte is left",
             difficulty=1, minutes=5, solution=my_tab_score, reference=by_hand.tab_score, cases=_s_omega_case,
             hint="the source byte scores S, its neighbours S·cos ω: TAB's score B goes between them, "
             "the middle is safest",
             judge=by_hand.judge_tab_score, library=refused(by_hand.tab_score),
             own_work="any arithmetic with math.cos is fine: by_hand.tab_score is the answer itself"),
    Exercise(name="value_rotation", notebook="12",
             teaches="the value path computes the +1: a rotation of the byte plane",
             difficulty=3, minutes=15, solution=my_value_rotation,
             reference=lambda k: by_hand.value_rotation(by_hand.HandSet(k=k)), cases=_k_case,
             hint="with A = [T, F1, F2] as columns (4, 3), W_V = A·diag(1, R)·Aᵀ, R the 2×2 rotation by "
             "k·2π/95: T stays, the byte plane turns one step",
             judge=by_hand.judge_value_rotation,
             library=refused(by_hand.value_rotation),
             own_work="torch.stack, torch.eye, @ and math.cos / math.sin are fine: "
                      "by_hand.value_rotation is the rotation itself"),
]
