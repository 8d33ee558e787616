"""Each prediction's answer, held against a real run.

A "Predict" prompt's run cell is stored without output: the learner predicts, runs it, sees what it
prints, then opens the reveal (tests/notebooks/test_predictions.py holds that structure). So nothing
stored says the reveal's answer is right: here each notebook is run now (support.executed), and for
every predict region whose run cells store no output, the reveal's answer key (its first bold phrase,
tests/browser/predict_regions.py) must agree with what those cells printed in this run.

How a key agrees with a printout is the question's own: a shape is printed as is, "the same score" is
two equal scores, "Worse: it loops" is a greedy text that repeats itself. ANSWER_AGREES holds one rule
per prompt; a new prompt without a rule fails here until it has one.
"""
import math

import pytest

from browser.predict_regions import normal, notebook_regions, source
from support import NOTEBOOKS, cell_output, executed, numbers

STEMS = sorted(path.stem for path in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def shape_is_printed(out, key):
    # "(1, 11, 256)": the shape the cell printed
    assert normal(key) in normal(out)


def neighbours_less_alike_than_any_two(out, key):
    # "No: neighbours in value are less alike than two bytes taken at random."
    neighbours, any_two = numbers(out, after="c + 1")[:2]   # bytes c and c + 1; any two bytes (then the figure)
    assert key.startswith("No") and neighbours < any_two, out


def most_in_the_two_ends(out, key):
    # "Almost nine tenths in the two ends": the share the cell prints for the embedding and the head
    count, ends, rest, layers = numbers(out, after="ends:")   # "the two ends: 2,304 (87%); the two layers: 344 (13%)"
    assert key.startswith("Almost nine tenths") and 85 <= ends < 90 and ends + layers == 100, out
    assert (count, rest) == (256 * 4 + 4 * 256 + 256, 2648 - count), out   # embedding 256·4, head 4·256 + 256


def the_two_scores_are_equal(out, key):
    # "the same score": q·k at m = 5, n = 2 and at m = 9, n = 6, both printed to 4 places
    scores = [numbers(line, after="q·k =") for line in out.splitlines()[1:]]
    assert key == "the same score" and len(scores) == 2 and scores[0] == scores[1], out


def position_0_keeps_e_over_e_plus_2(out, key):
    # "About 0.58 (0.5761).": the weight position 0 keeps on itself, printed to 4 places
    kept = numbers(out.splitlines()[1])[0]
    assert f"({kept:.4f})" in key and f"About {kept:.2f}" in key, (out, key)
    assert math.isclose(kept, math.e / (math.e + 2), abs_tol=5e-5)


def practically_no_gradient_without_residuals(out, key):
    # "Practically none without them: about 1e-11 against 8." (float64)
    plain, residual = (numbers(line)[-1] for line in out.splitlines()[1:3])
    stated_plain, stated_residual = numbers(key.split("about", 1)[1])
    assert round(math.log10(plain)) == round(math.log10(stated_plain)) and round(residual) == stated_residual, out
    assert f"{plain:.0e}".endswith("e-12"), out   # float64: "about 1e-11" is a few 1e-12


def on_the_unigram_baseline(out, key):
    # "on the unigram baseline" (float32 training: a range, not a digit): within 0.1 of the unigram's
    # loss and well above the length oracle's; and the reveal's "generates nothing" for hello
    loss, unigram, oracle, exact = (numbers(out, after=label)[0]
                                    for label in ("loss", "unigram", "length oracle", "exact match"))
    assert key == "on the unigram baseline" and abs(loss - unigram) < 0.1 and loss > oracle + 0.3, out
    assert exact == 0 and "generated for 'hello': b''" in out


def twelve_back(out, key):
    # "12 back": every output row of the 12-byte input (rows 12 to 23) looks back the input's length
    length, first, last, back = numbers(out.splitlines()[-1], after=":")   # "12 bytes; rows 12–23 …, looks back [12]"
    assert key == "12 back" and length == first == back == 12 and last == 23, out


def equal_up_to_rounding(out, key):
    # "Equal up to rounding, not exactly": the check passes within a tolerance, not at 0
    verdict = out.strip().splitlines()[-1]  # the check's verdict, its last line
    assert key.startswith("Equal up to rounding") and verdict.startswith("✓") and 0 < numbers(verdict)[0] < 1e-6, out


def it_follows_the_number(out, key):
    # "It follows the number": almost every output byte becomes the byte for input k + 1
    moved, _, unmoved = numbers(out, after="further on:")   # % input k + 1 (the 1), % input k
    assert key == "It follows the number" and moved >= 90 and unmoved <= 5, out


def greedy_text_loops(out, key):
    # "Worse: it loops.": the same phrase of 16 bytes or more comes back at least three times
    text = out.split("\n", 1)[1]
    repeats = [text[i:i + 16] for i in range(len(text) - 16) if text.count(text[i:i + 16]) >= 3]
    assert key == "Worse: it loops." and repeats, out


def the_same_both_times(out, key):
    # "The same, both times.": every check passes; the cached and uncached text, and minitf's, agree
    checks = [line for line in out.splitlines() if line.startswith(("✓", "✗"))]
    assert key == "The same, both times." and len(checks) == 5 and all(c.startswith("✓") for c in checks), out
    assert "the same bytes" in checks[1] and checks[3].endswith(": True"), out
    # the whole model (model_forward and multi_head_attention, optional and not written, are minitf's:
    # not named as yours) writing
    assert checks[4].startswith("✓ greedy") and "through your block:" in checks[4], out
    assert numbers(checks[4]) == [60], out


def the_distance_depends_on_the_length(out, key):
    # "Not the same": one distance per pair, and the pairs' distances differ (each is its length L)
    rows = [numbers(line, after="L =") for line in out.splitlines()]   # L, distance back
    assert key == "Not the same" and len(rows) >= 2 and len({d for _, d in rows}) == len(rows), out
    assert all(length == back for length, back in rows), out


def about_100_steps(out, key):
    # "About 100 steps" (float32 training, validated every 50 steps: the stop is stated as a range):
    # coupled ids pass 95 % exact within 50 to 150 steps; the usual ids, as many steps, under 1 %
    coupled = next(line for line in out.splitlines() if "coupled ids:" in line)
    usual = next(line for line in out.splitlines() if "usual ids:" in line)
    exact, steps = numbers(coupled)[-2:]
    assert key == "About 100 steps" and exact >= 95 and 50 <= steps <= 150, out
    assert numbers(usual)[-2] < 1 and numbers(usual)[-1] == steps, out


ANSWER_AGREES = {  # (notebook, words of the prompt): the rule its answer key and its run's printout obey
    ("00_setup_check", "What shape"): shape_is_printed,
    ("01_embeddings", "neighbouring byte values"): neighbours_less_alike_than_any_two,
    ("01_embeddings", "share of the 2,648"): most_in_the_two_ends,
    ("02_rope", "at $m = 9$"): the_two_scores_are_equal,
    ("03_attention", "stays on itself"): position_0_keeps_e_over_e_plus_2,
    ("04_ffn_block", "reaches the input"): practically_no_gradient_without_residuals,
    ("05_training_base64_pairs", "held-out loss land"): on_the_unigram_baseline,
    ("05_training_base64_pairs", "writes output byte 7"): twelve_back,
    ("08_assemble_your_model", "*exactly* equal"): equal_up_to_rounding,
    ("08_assemble_your_model", "Which will it write"): it_follows_the_number,
    ("09_language_model", "160 greedy bytes"): greedy_text_loops,
    ("09_language_model", "and the uncached"): the_same_both_times,
    ("11_how_small", "the distance the same"): the_distance_depends_on_the_length,
    ("11_how_small", "your numbering need"): about_100_steps,
}


def run_without_stored_output(stem):
    """The predict regions of a stored notebook whose run cells store no output."""
    cells, found = notebook_regions(NOTEBOOKS / f"{stem}.ipynb")
    return cells, [r for r in found if r.run and not any(cells[j].get("outputs") for j in r.run)]


def test_every_prediction_run_live_has_a_rule_and_every_rule_its_prediction():
    known = set()
    for stem in STEMS:
        cells, found = run_without_stored_output(stem)
        for r in found:
            rules = [words for (nb, words) in ANSWER_AGREES if nb == stem and words in source(cells[r.prompt])]
            assert len(rules) == 1, f"{stem}: the prediction in markdown cell {r.prompt} matches {len(rules)} rules"
            known.add((stem, rules[0]))
    assert known == set(ANSWER_AGREES)


@pytest.mark.slow
@pytest.mark.parametrize("stem", sorted({nb for nb, _ in ANSWER_AGREES}))
def test_each_answer_key_agrees_with_what_its_cell_prints_when_run(stem):
    stored, found = run_without_stored_output(stem)
    fresh = executed(stem)
    assert [c["source"] for c in fresh] == [source(c) for c in stored]  # the same cells, in order
    for r in found:
        rule = next(fn for (nb, words), fn in ANSWER_AGREES.items()
                    if nb == stem and words in source(stored[r.prompt]))
        out = "".join(cell_output(fresh[j], results=True) for j in r.run)
        assert out.strip(), f"{stem}: the run cells {r.run} printed nothing"
        rule(out, r.key)


# made-up printouts shaped as the cells print them, cut to what each rule reads: one that agrees with
# the key, and the change that turns it into one that does not (a wrong number, mostly)
RIGHT_AND_WRONG = {
    shape_is_printed: ("(1, 11, 256)", "(1, 11, 256)", ("11, ", "")),
    neighbours_less_alike_than_any_two: ("No", "c + 1 -0.11; 0.04", ("-0.11", "0.31")),
    most_in_the_two_ends: ("Almost nine tenths", "ends: 2304 (87%); 344 (13%)", ("87%); 344 (13", "50%); 344 (50")),
    the_two_scores_are_equal: ("the same score", "\nq·k = -0.3923\nq·k = -0.3923", ("= -0.3923\n", "= 0.125\n")),
    position_0_keeps_e_over_e_plus_2: ("About 0.58 (0.5761).", "\n0.5761 0.2119 0.2119", ("0.5761", "0.3333")),
    practically_no_gradient_without_residuals: ("about 1e-11 against 8", "\n7e-12\n8", ("e-12", "e-01")),
    on_the_unigram_baseline: ("on the unigram baseline",
                              "loss 4.35\nunigram 4.34\nlength oracle 3.92\nexact match 0\ngenerated for 'hello': b''",
                              ("4.35", "3.10")),
    twelve_back: ("12 back", ": 12; 12–23, [12]", ("[12]", "[7]")),
    equal_up_to_rounding: ("Equal up to rounding", "\n✓ 1e-09", ("✓ 1e-09", "✗ 3.2")),
    it_follows_the_number: ("It follows the number", "further on: 100% 1, 0%", ("100% 1, 0%", "0% 1, 100%")),
    greedy_text_loops: ("Worse: it loops.", "\n" + "the straight of " * 4, ("the straight of " * 4, "ABCDEFGHIJKLMNOPQRSTUVWXYZ")),
    the_same_both_times: ("The same, both times.", "✓\n✓ the same bytes\n✓\n✓: True\n"
                          "✓ greedy, through your block: 60", ("True", "False")),
    the_distance_depends_on_the_length: ("Not the same", "L = 1, [1]\nL = 3, [3]", ("[3]", "[1]")),
    about_100_steps: ("About 100 steps", "coupled ids: 99% 100\nusual ids: 0% 100", ("99% 100", "80% 100")),
}


@pytest.mark.parametrize("rule", RIGHT_AND_WRONG, ids=lambda rule: rule.__name__)
def test_each_rule_takes_a_printout_that_agrees_and_refuses_one_that_does_not(rule):
    assert set(RIGHT_AND_WRONG) == set(ANSWER_AGREES.values())
    key, right, (old, new) = RIGHT_AND_WRONG[rule]
    rule(right, key)
    wrong = right.replace(old, new)
    assert wrong != right
    with pytest.raises(AssertionError):
        rule(wrong, key)
