"""The hand-set shift solver: every weight chosen, none trained. It solves shift on fresh pairs of
every length up to the one it was built for, each piece does the job its docstring names, and the
shipped checkpoint is exactly what its recorded call builds."""
import math

import pytest
import torch

import minitf
from support import ROOT
from minitf.core.evaluate import teacher_forced_exact_match as exact_match  # greedy's, in one pass
from minitf.core.rope import position_ids
from minitf.course.by_hand import HandSet, shift_by_hand
from test_checkpoints import maker


def fresh_pairs(n, seed, min_len, max_len):
    return minitf.make_pairs("shift", n, seed, min_len=min_len, max_len=max_len, repeats=0.33)


@pytest.mark.parametrize("d_model, parameters", [(4, 1376), (3, 1093)])
def test_it_solves_shift_on_every_length_up_to_24_with_no_training(d_model, parameters):
    model = shift_by_hand(HandSet(d_model=d_model))
    assert minitf.count_parameters(model) == parameters
    assert next(model.parameters()).dtype == torch.float32
    for lo, hi, seed in [(1, 12, 101), (13, 24, 102)]:  # 13-24: longer than any trained solver saw
        pairs = fresh_pairs(600, seed, lo, hi)
        assert sum(len(set(p.input)) < len(p.input) for p in pairs) > 150  # repeated bytes too
        assert exact_match(model, pairs) >= 0.999
    assert minitf.generate(model, "Hello, world~") == b"Ifmmp-!xpsme "


def test_the_query_peaks_one_id_ahead_and_the_tab_key_sits_between():
    n = HandSet()
    model = shift_by_hand(n)
    attn = model.blocks[0].attn
    seq = list(b"abcdefghij\tbcde")  # output position 4 (id 4) must read input id 5
    ids = torch.tensor([seq])
    with torch.no_grad():
        _, weights = model(ids, return_attention=True)
    pos = position_ids(ids, "coupled")[0].tolist()
    row = weights[0][0, 0, len(seq) - 1]  # the last query: an output byte with id 4
    assert pos[row.argmax()] == pos[-1] + 1 and seq[row.argmax()] == ord("e")
    assert row.max() > 0.999
    done = list(b"abc\tbcd")  # every byte written: the query finds no id ahead, TAB wins
    _, weights = model(torch.tensor([done]), return_attention=True)
    assert done[weights[0][0, 0, -1].argmax()] == minitf.TAB
    assert attn.inv_freq[0, 0].item() == pytest.approx(2 * math.pi / 27)


@pytest.mark.parametrize("broken, why", [
    (HandSet(longest=12), "ω = 2π/15 comes back to the peak at Δ − 1 = 15: long inputs alias"),
    (HandSet(k=19), "k = 19 shares a factor with 95: bytes 5 apart get one code"),
])
def test_each_named_number_matters(broken, why):
    model = shift_by_hand(broken)
    assert exact_match(model, fresh_pairs(300, 103, 13, 24)) < 0.5, why


def test_the_shipped_checkpoint_is_what_its_recorded_call_builds():
    make = maker()
    shipped = minitf.load(ROOT / "data" / "checkpoints" / "shift_by_hand.pt")
    assert shipped.metadata["built_by"] == make.BUILT["shift_by_hand"]
    assert shipped.metadata["trained_steps"] == 0
    built = shift_by_hand(HandSet(d_model=3))
    assert shipped.config == built.config
    for (name, a), (_, b) in zip(shipped.state_dict().items(), built.state_dict().items()):
        assert torch.equal(a, b), name
    c = make.BY_HAND_CHECK
    pairs = fresh_pairs(c["n"], c["seed"], c["min_len"], c["max_len"])
    assert exact_match(shipped, pairs) == shipped.metadata["val"]["exact_match"] == 1.0


def test_exact_match_by_length_shows_where_a_trained_solver_breaks():
    """The trained smallest solver learned shift for lengths 1-12: by length, the failure beyond
    its training lengths is plain; the hand-set one holds at every length."""
    from minitf.core.evaluate import exact_match_by_length
    pairs = fresh_pairs(400, 104, 1, 24)
    trained = exact_match_by_length(minitf.load(ROOT / "data/checkpoints/shift_smallest.pt"), pairs)
    by_hand = exact_match_by_length(shift_by_hand(), pairs)
    assert sorted(trained) == sorted(by_hand) == list(range(1, 25))
    assert min(trained[n] for n in range(1, 13)) > 0.9 and max(trained[n] for n in range(16, 25)) < 0.2
    assert min(by_hand.values()) == 1.0
    with pytest.raises(ValueError, match="at least one pair"):
        exact_match_by_length(shift_by_hand(), [])


def successor(b):
    return b + 1 if b < 126 else 32


@pytest.mark.parametrize("which", ["hand-set", "trained (shift_smallest.pt)"])
def test_the_value_circuit_of_both_solvers_is_the_plus_one_map(which):
    from minitf.course.by_hand import value_circuit
    model = shift_by_hand() if which == "hand-set" else \
        minitf.load(ROOT / "data/checkpoints/shift_smallest.pt")
    assert value_circuit(model) == {b: successor(b) for b in range(32, 127)}


def test_patching_the_value_path_changes_the_output_as_the_circuit_says():
    """Causal evidence, not a picture: give the source byte's position the value another byte
    would have, and the trained solver writes that byte's successor instead."""
    from minitf.course.by_hand import next_byte_with_value_of
    model = minitf.load(ROOT / "data/checkpoints/shift_smallest.pt")
    assert minitf.generate(model, "kq") == b"lr"
    assert next_byte_with_value_of(model, b"kq\t", 0, ord("k")) == ord("l")  # unchanged: itself
    assert next_byte_with_value_of(model, b"kq\t", 0, ord("x")) == ord("y")
    assert next_byte_with_value_of(model, b"kq\t", 1, ord("x")) == ord("l")  # not the source: no effect


# --- notebook 12's exercises ----------------------------------------------------------------------

from minitf.course import solutions  # noqa: E402


def uneven_circle(k):
    E = solutions.my_byte_circle(k)
    E[126] = E[125]  # '~' sits on '}'
    return E


SLIPS = [  # notebook 12's wrong pieces, each named by the job it fails: test_workbook's mistakes test runs them
    ("query", lambda S, omega: math.sqrt(S) * torch.tensor([1.0, 0.0, 1.0, 0.0], dtype=torch.float64),
     "wrong_job", "your query peaks at relative id 0, not +1"),
    ("query", lambda S, omega: math.sqrt(S) * torch.tensor([math.cos(omega), -math.sin(omega), 1.0, 0.0],
                                                           dtype=torch.float64),
     "wrong_job", "peaks at relative id -1, not +1"),
    ("value_rotation", lambda k: solutions.my_value_rotation(2 * k), "wrong_job",
     "maps 'a' to 'c', not 'b' (95 of 95 bytes land wrong): two steps"),
    ("value_rotation", lambda k: solutions.my_value_rotation(-k), "wrong_job",
     "maps 'a' to '`', not 'b' (95 of 95 bytes land wrong): it turns the wrong way"),
    ("tab_score", lambda S, omega: S, "wrong_job", "TAB would win while a byte is still left"),
    ("tab_score", lambda S, omega: S * math.cos(omega), "wrong_job", "never writes EOS"),
    ("byte_circle", lambda k: solutions.my_byte_circle(19), "wrong_job", "share a point"),
    ("byte_circle", uneven_circle, "wrong_job", "share a point"),
]


def test_the_reference_pieces_build_the_solver():
    pieces = {n: getattr(solutions, f"my_{n}") for n in ("byte_circle", "query", "tab_score", "value_rotation")}
    built, reference = shift_by_hand(HandSet(), pieces), shift_by_hand()
    for (name, a), (_, b) in zip(built.state_dict().items(), reference.state_dict().items()):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-6, msg=name)


@pytest.mark.parametrize("piece", ["byte_circle", "query", "tab_score", "value_rotation"])
def test_a_piece_that_returns_nothing_is_told_so_in_words(piece, capsys):
    minitf.exercise(piece, lambda *args: None)   # a forgotten `return`: no raw TypeError
    said = capsys.readouterr().out
    assert "returned None" in said and "`return`" in said
