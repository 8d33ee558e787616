"""minitf.exercises: every typical mistake gets a message that names it in words.

One test per recognised mistake (its key in `exercises.DIAGNOSES`), plus the parts every message
has: the failing case's arguments, named results, the hint (also when the function raises),
booleans shown as True/False.
"""
import math

import pytest
import torch

import minitf
from minitf.course.feedback import DIAGNOSES, ExerciseError, check_function, compare


def fails(learner, reference, cases, **options) -> ExerciseError:
    with pytest.raises(ExerciseError) as info:
        check_function(learner, reference, cases, **options)
    own = {fn.__name__ for fn in options.get("diagnoses", ())}
    assert set(info.value.diagnoses) <= set(DIAGNOSES) | own  # every key is documented
    return info.value


def rand(*shape, seed=0):
    return torch.rand(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def attention(q, k, v, mask=None, scale=True, softmax_dim=-1):
    """minitf.attention written out, with the switches a learner gets wrong."""
    scores = q @ k.transpose(-2, -1)
    if scale:
        scores = scores / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = scores.softmax(softmax_dim)
    return weights @ v, weights


def reference_attention(q, k, v, mask):
    return attention(q, k, v, mask)


ATTENTION_CASES = [(*rand(3, 1, 1, 4, 4).unbind(0), minitf.causal_mask(4))]
MASK_CASES = [2, 4]


def causal_mask(T):
    return torch.ones(T, T, dtype=torch.bool).triu(1)


# --- what every message has ----------------------------------------------------------------------

def test_a_right_answer_gets_the_success_message():
    assert check_function(causal_mask, minitf.causal_mask, MASK_CASES, name="my_causal_mask") == \
        "✓ my_causal_mask agrees with minitf on 2 cases"


def test_a_stub_is_not_written_yet_and_nothing_else():
    def my_causal_mask(T):
        raise NotImplementedError("your mask here")

    error = fails(my_causal_mask, minitf.causal_mask, MASK_CASES, hint="j > i")
    assert str(error) == "my_causal_mask is not written yet: replace the `raise NotImplementedError`"
    assert error.diagnoses == ("not_written",)


def test_the_failing_case_shows_its_arguments_compactly():
    def my_source_position(task, n_input, k):
        return n_input - k if task == "reverse" else k

    cases = [("copy", 3, 1), ("reverse", 1, 0)]
    msg = str(fails(my_source_position, lambda task, n, k: n - 1 - k if task == "reverse" else k, cases))
    assert msg.startswith("my_source_position on case 1 (task='reverse', n_input=1, k=0): got 1, expected 0")

    big, small = rand(2, 3, 4), torch.tensor([[72, 105, 9]])
    msg = str(fails(lambda x, ids: x * 2, lambda x, ids: x, [(big, small)]))
    assert "(x=tensor (2, 3, 4) float64, ids=tensor([[72, 105, 9]]))" in msg  # big: shape; small: in full
    msg = str(fails(lambda config: 1, lambda config: 2, [(minitf.Config(d_model=8, n_heads=4),)]))
    assert "(config=Config(d_model=8, n_heads=4))" in msg  # only what differs from Config()
    msg = str(fails(lambda pairs: 1, lambda pairs: 2, [([minitf.Pair(b"Hi", b"Ij")],),
                                                        (minitf.make_pairs("copy", 50, seed=0),)]))
    assert "(pairs=[Pair('Hi' → 'Ij')])" in msg


def test_cases_may_be_keyword_arguments_and_have_names():
    msg = str(fails(lambda T: causal_mask(T).T, causal_mask, [{"T": 3}], case_names=["three positions"]))
    assert msg.startswith("<lambda> on case 0, three positions (T=3):")


def test_tuple_results_are_named():
    def swapped_targets(pairs):
        ids, targets = minitf.make_batch(pairs)
        return ids, targets.masked_fill(targets == 73, 0)

    msg = str(fails(swapped_targets, minitf.make_batch, [([minitf.Pair(b"Hi", b"Ij")],)],
                    result_names=("ids", "targets")))
    assert "\n  targets (your 2nd result): 1 of 5 entries differ; first at index (0, 2): got 0, expected 73" in msg
    assert "ids (your" not in msg  # only the wrong result is reported
    msg = str(fails(swapped_targets, minitf.make_batch, [([minitf.Pair(b"Hi", b"Ij")],)]))
    assert "\n  your 2nd result: 1 of 5 entries differ" in msg


def test_the_hint_is_shown_when_the_function_raises_with_the_line_that_raised():
    def my_layer_norm(x):
        mean = x.mean(-1)
        return x - mean  # (2, 3) - (2,): no keepdim

    error = fails(my_layer_norm, lambda x: x - x.mean(-1, keepdim=True), [rand(2, 3)], hint="keepdim=True")
    msg = str(error)
    assert msg.startswith("my_layer_norm on case 0 (x=tensor([[")
    assert "raised RuntimeError: The size of tensor a (3) must match the size of tensor b (2)" in msg
    assert "\n  in the line: return x - mean  # (2, 3) - (2,): no keepdim" in msg
    assert msg.endswith("\nHint: keepdim=True") and error.diagnoses == ("raised",)


def test_booleans_print_as_true_and_false_and_small_masks_as_grids():
    msg = str(fails(lambda T: causal_mask(T).T, causal_mask, [3]))
    assert "got False, expected True" in msg and " 1 " not in msg.split("\n")[0]
    assert ("  yours      expected   (1 = True, · = False)\n"
            "  · · ·      · 1 1\n"
            "  1 · ·      · · 1\n"
            "  1 1 ·      · · ·") in msg
    assert "yours" not in str(fails(lambda T: causal_mask(T).T, causal_mask, [9]))  # 9 × 9: too big
    assert "got True, expected False" in str(fails(lambda: True, lambda: False, [()]))


def test_a_hint_for_the_recognised_mistake_replaces_the_general_one():
    hints = {"mask_diagonal": "a position may look at itself: j > i, not j >= i"}
    msg = str(fails(lambda T: torch.ones(T, T, dtype=torch.bool).triu(0), causal_mask, MASK_CASES,
                    hint="True marks the future", hints_by_diagnosis=hints))
    assert msg.endswith("\nHint: a position may look at itself: j > i, not j >= i")
    msg = str(fails(lambda T: ~causal_mask(T), causal_mask, MASK_CASES,  # another mistake: general hint
                    hint="True marks the future", hints_by_diagnosis=hints))
    assert msg.endswith("\nHint: True marks the future")


def test_an_exercise_can_add_its_own_diagnosis():
    def zeros_where_copies_should_be(got, expected):
        if ((got == 0) & (expected != 0)).any():
            return "yours has zeros where copies of W / k should be"

    error = fails(lambda W, k: torch.block_diag(*[W / k] * k), minitf.origami.widen_weight,
                  [(rand(2, 3), 2)], diagnoses=(zeros_where_copies_should_be,),
                  hints_by_diagnosis={"zeros_where_copies_should_be": "every block is W / k"})
    assert "\n  Yours has zeros where copies of W / k should be\nHint: every block is W / k" in str(error)
    assert error.diagnoses == ("zeros_where_copies_should_be",)


def test_compare_says_the_same_without_a_function():
    with pytest.raises(ExerciseError, match=r"^weights: 1 of 2 entries differ; first at index \(1,\)"):
        compare("weights", torch.tensor([0.5, 0.6]), torch.tensor([0.5, 0.5]))
    compare("weights", (torch.ones(2), 3), (torch.ones(2), 3))


# --- one test per recognised mistake -------------------------------------------------------------

def centre_in_place(x):
    x -= x.mean(-1, keepdim=True)
    return x


def padded_with_ignore(pairs):
    ids, targets = minitf.make_batch(pairs)
    return ids.masked_fill(ids == minitf.PAD, minitf.IGNORE), targets


def masked_after_the_softmax(q, k, v, mask):
    weights = attention(q, k, v)[1].masked_fill(mask, 0.0)
    return weights @ v, weights


WEIGHTS = dict(result_names=("output", "weights"))
RECOGNISED = [  # (learner, reference, cases, options, words its message holds, diagnosis)
    (lambda q, k, v, mask: attention(q, k, v, mask, softmax_dim=-2), reference_attention, ATTENTION_CASES, WEIGHTS,
     "your columns sum to 1 instead: the softmax ran over dim -2", "softmax_over_wrong_dim"),
    (lambda q, k, v, mask: attention(q, k, v), reference_attention, ATTENTION_CASES, WEIGHTS,
     "Yours is not zero above the diagonal: at index (0, 0, 0, 1) yours is 0.2", "future_leak"),
    (lambda q, k, v, mask: attention(q, k, v), reference_attention, ATTENTION_CASES, WEIGHTS,
     "so position 0 takes weight from position 1, which comes after it", "future_leak"),
    (lambda q, k, v, mask: attention(q, k, v, mask, scale=False), reference_attention, ATTENTION_CASES,
     {**WEIGHTS, "factors": lambda q, k, v, mask: {"√head_dim": math.sqrt(q.size(-1))}},
     "Yours is a softmax of scores 2 × the expected scores (= √head_dim)", "scores_scaled"),
    (lambda x: x.transpose(1, 2), lambda x: x, [rand(1, 2, 3, 4)], {},  # (B, T, H, hd) for (B, H, T, hd)
     "it equals the expected result .permute(0, 2, 1, 3)", "dimension_order"),
    (lambda x: x + 0.5, lambda x: x, [rand(2, 3)], {},
     "Every entry of your result is 0.5 more than the expected one (a constant offset of +0.5)", "offset"),
    (lambda T: torch.ones(T, T, dtype=torch.bool).triu(0), causal_mask, [1, 4], {},
     "Yours also masks the diagonal (True at (i, i)), where the expected mask is False: a position may look at "
     "itself", "mask_diagonal"),
    (lambda T: torch.zeros(T, T, dtype=torch.bool), causal_mask, [3], {},
     "Yours leaves the future open: it is False at (0, 1), so position 0 may look at position 1, which comes "
     "after it", "mask_future_open"),
    (lambda T: torch.ones(T, T, dtype=torch.bool).tril(), causal_mask, [3], {},
     "Yours is the opposite of the expected mask: True and False swapped everywhere", "mask_inverted"),
    (lambda T: torch.ones(T, T, dtype=torch.bool).tril(), causal_mask, [3], {},
     "True should mark where a position may NOT look", "mask_inverted"),
    (lambda x: x.masked_fill(x > 0.5, float("-inf")), lambda x: x, [torch.tensor([0.2, 0.9])], {},
     "Yours holds -inf at 1 entries (first at index 1) where the expected values are finite", "not_finite"),
    (lambda pairs: minitf.make_batch(pairs)[::-1], minitf.make_batch, [([minitf.Pair(b"Hi", b"Ij")],)],
     dict(result_names=("ids", "targets")),
     "your 1st and 2nd results are swapped: return (ids, targets) in this order", "results_swapped"),
    (lambda T: causal_mask(T).float(), causal_mask, [3], {},
     "dtype torch.float32, expected torch.bool\n  The values are right: make the result torch.bool", "dtype"),
    (centre_in_place, lambda x: x - x.mean(-1, keepdim=True), [rand(2, 3)], {},
     "your function changed its argument `x` in place; work on a copy", "changed_input"),
    (padded_with_ignore, minitf.make_batch, [([minitf.Pair(b"Hi", b"Ij"), minitf.Pair(b"cat", b"dbu")],)],
     dict(result_names=("ids", "targets")),
     "\n  ids (your 1st result): 2 of 14 entries differ; first at index (0, 5): got -100, expected 0"
     "\n    Wherever the expected result holds 0 (2 entries), yours holds -100, and everything else "
     "is right: fill or pad with 0, not -100", "padding"),
    (masked_after_the_softmax, reference_attention, ATTENTION_CASES, WEIGHTS,
     "\n  weights (your 2nd result): ", "rows_not_summing_to_1"),
    (masked_after_the_softmax, reference_attention, ATTENTION_CASES, WEIGHTS,
     "Row (0, 0, 0) of your weights sums to 0.253", "rows_not_summing_to_1"),
    (masked_after_the_softmax, reference_attention, ATTENTION_CASES, WEIGHTS,
     ", not 1 (every row of the expected one sums to 1)", "rows_not_summing_to_1"),
    (lambda *a: reference_attention(*a)[0], reference_attention, ATTENTION_CASES, WEIGHTS,
     "expected 2 results (output, weights), got a tensor of shape (1, 1, 4, 4)", "type"),  # too few results
    (lambda T: None, causal_mask, MASK_CASES, {}, "got None: is a `return` missing?", "type"),
    (lambda x: x.sum(), lambda x: x, [rand(3)], {"hint": "one number per entry"},  # the hint ends the message
     "shape (), expected (3,)\nHint: one number per entry", "shape"),
    (lambda x: x.tolist(), lambda x: x, [rand(3)], {"hint": "return a tensor"},
     "expected a tensor of shape (3,) and dtype torch.float64, got list", "type"),
    (lambda x: x.T * 1, lambda x: x, [rand(3, 3)], {},
     "Yours is the transpose of the expected one (its last two dimensions swapped)", "transpose"),
    (lambda x: x.T * 1, lambda x: x, [rand(2, 3)], {},  # the shapes differ too
     "shape (3, 2), expected (2, 3)\n  Yours is the transpose", "transpose"),
    (lambda x: (x * 2).to("meta"), lambda x: x * 2, [rand(3)], {},  # a lambda has no name to use
     "device meta, expected cpu\n  Your function returns a tensor on meta; keep the inputs' device", "device"),
]


@pytest.mark.parametrize("learner, reference, cases, options, words, diagnosis", RECOGNISED,
                         ids=[f"{r[5]}-{i}" for i, r in enumerate(RECOGNISED)])
def test_a_recognised_mistake_is_named_in_words(learner, reference, cases, options, words, diagnosis):
    error = fails(learner, reference, cases, **options)
    assert words in str(error) and error.diagnoses == (diagnosis,), str(error)


def test_right_values_in_the_wrong_slots():
    def rope_with_cat(x, cos, sin):  # the rotated pairs concatenated instead of interleaved
        a, b = x[..., 0::2], x[..., 1::2]
        return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)

    cos, sin = minitf.rope_angles(minitf.rope_frequencies(4, n_heads=1, dtype=torch.float64), 3)
    error = fails(rope_with_cat, minitf.apply_rope, [(rand(1, 1, 3, 4), cos, sin)])
    assert ("Yours holds the right values in the wrong slots: along the last dimension, your index i "
            "holds what the expected result has at index order[i], order = [0, 2, 1, 3]") in str(error)
    assert error.diagnoses == ("permutation",)
    shuffled = lambda x: x.flatten()[torch.tensor([1, 2, 3, 0])].view(2, 2) + 0 * x
    msg = str(fails(shuffled, lambda x: x, [torch.tensor([[1.0, 2.0], [3.0, 5.0]])]))
    assert "the same 4 numbers as the expected result, 4 of them elsewhere" in msg


def test_a_constant_factor_named_by_the_exercise():
    def copies_not_divided(W, k):
        return torch.cat([torch.cat([W] * k, dim=1)] * k, dim=0)

    error = fails(copies_not_divided, minitf.origami.widen_weight, [(rand(2, 3), 2)],
                  factors=lambda W, k: {"k": k, "k²": k * k})
    assert "Every entry of your result is 2 × the expected one (= k)" in str(error)
    assert error.diagnoses == ("factor",)
    msg = str(fails(lambda x: x * 0.7, lambda x: x, [rand(4)], factors={"k": 2}))
    assert "is 0.7 × the expected one\n" in msg + "\n"  # no name fits: the factor alone
    assert "opposite sign everywhere" in str(fails(lambda x: -x, lambda x: x, [rand(4)]))


def test_a_count_difference_is_shown_and_explained():
    def count(config):
        return minitf.count_parameters(minitf.Transformer(config))

    explain = lambda config: {-config.vocab_size: f"one {config.vocab_size}-wide bias missing (the output head's)"}
    error = fails(lambda config: count(config) - config.vocab_size, count, [minitf.Config()],
                  explain_difference=explain)
    assert str(error) == ("<lambda> on case 0 (config=Config()): got 2392, expected 2648; yours − expected = -256"
                          "\n  One 256-wide bias missing (the output head's)")
    assert error.diagnoses == ("count_difference",)
    msg = str(fails(lambda config: count(config) - 32, count, [minitf.Config()], explain_difference=explain))
    assert msg.endswith("got 2616, expected 2648; yours − expected = -32")  # no explanation fits


def test_a_result_in_float64_for_float32_inputs_is_named():
    def lookup_in_float64(ids, table):
        return table.double()[ids]

    cases = [(torch.tensor([[1, 0]]), rand(3, 2))]
    error = fails(lookup_in_float64, lambda ids, table: table[ids], cases)
    msg = str(error)
    assert msg.startswith("lookup_in_float64 on case 0, in float32 (ids=tensor([[1, 0]]), table=tensor([[")
    assert "dtype torch.float64, expected torch.float32\n  Your lookup_in_float64 returns float64 for a " \
           "float32 table: keep the table's dtype" in msg
    assert error.diagnoses == ("dtype_changed",)
    msg = str(fails(lambda q, k: (q @ k.T).double(), lambda q, k: q @ k.T, [(rand(2, 2), rand(2, 2))]))
    assert "returns float64 for float32 q and k: keep their dtype" in msg


def test_a_function_that_raises_only_in_float32_is_told_about_the_dtype():
    def fixed_dtype(x):
        return x @ torch.ones(2, 2, dtype=torch.float64)

    error = fails(fixed_dtype, lambda x: x @ torch.ones(2, 2, dtype=x.dtype), [rand(1, 2)])
    msg = str(error)
    assert msg.startswith("fixed_dtype on case 0, in float32 (x=tensor([[")
    assert "raised RuntimeError" in msg and "\n  in the line: return x @ torch.ones(2, 2, dtype=torch.float64)" in msg
    assert ("\n  Your fixed_dtype passes this case in float64 and raises in float32: something in it is "
            "fixed to one dtype (a .double(), .float() or dtype=… inside); keep x's dtype") in msg
    assert error.diagnoses == ("dtype_changed", "raised")


def test_cases_without_floats_run_once_and_float32_runs_come_after_the_cases_as_given():
    seen = []

    def spy(x):
        seen.append(x.dtype)
        return x

    check_function(spy, lambda x: x, [torch.tensor([1, 2]), rand(2), rand(2)])
    assert seen == [torch.int64, torch.float64, torch.float64, torch.float32, torch.float32]
    seen.clear()
    check_function(spy, lambda x: x, [rand(2)], dtypes=())  # an exercise may keep its cases as given
    assert seen == [torch.float64]


# --- a function that calls the library it re-creates is refused -----------------------------------

LIBRARY = {minitf.causal_mask: "minitf.causal_mask", torch.nn.functional.layer_norm: "F.layer_norm"}


def test_a_call_to_the_library_is_refused_under_any_name_with_the_line():
    from minitf import causal_mask as ready_made

    def my_causal_mask(T):
        return ready_made(T)  # an alias: the call is still minitf's function

    error = fails(my_causal_mask, minitf.causal_mask, MASK_CASES, library=LIBRARY,
                  hints_by_diagnosis={"library_call": "a comparison of two aranges is fine"})
    assert str(error) == (
        "my_causal_mask uses minitf.causal_mask, which this exercise asks you to do without: it does "
        "the work the exercise asks of you, so calling it would pass without teaching you "
        "anything. Not accepted; the hint says what is fine to use"
        "\n  in the line: return ready_made(T)  # an alias: the call is still minitf's function"
        "\nHint: a comparison of two aranges is fine")
    assert error.diagnoses == ("library_call",)


def test_a_library_call_inside_a_module_or_a_helper_is_found_too():
    def helper(x, C):
        return torch.nn.LayerNorm(C).double()(x)  # nn.LayerNorm runs F.layer_norm

    def my_layer_norm(x):
        return helper(x, x.size(-1))

    error = fails(my_layer_norm, lambda x: torch.nn.functional.layer_norm(x, x.shape[-1:]), [rand(2, 3)],
                  library=LIBRARY)
    assert str(error).startswith("my_layer_norm uses F.layer_norm, which this exercise asks you to do without")
    assert "\n  in the line: return torch.nn.LayerNorm(C).double()(x)  # nn.LayerNorm runs F.layer_norm" in str(error)


def test_the_reference_may_call_the_library_and_other_calls_are_fine():
    import sys

    def my_causal_mask(T):
        return torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)

    before = sys.getprofile()
    assert check_function(my_causal_mask, minitf.causal_mask, MASK_CASES, library=LIBRARY).startswith("✓")
    assert sys.getprofile() is before  # the watch leaves no profiler behind


def test_an_exercise_diagnosis_may_read_the_case():
    def recognisers(x):
        def halved(got, expected):
            return "yours is x / 2" if torch.allclose(got, x / 2) else None
        return (halved,)

    with pytest.raises(ExerciseError) as info:
        check_function(lambda x: x / 2, lambda x: x + 1, [rand(3)], diagnoses=recognisers)
    assert "\n  Yours is x / 2" in str(info.value) and info.value.diagnoses == ("halved",)


def learner_function(source: str, namespace: dict):
    """A function as a learner defines it in a cell: exec'd in the notebook's namespace."""
    exec(compile(source, "<cell>", "exec"), namespace)
    return next(v for k, v in namespace.items() if k.startswith("my_"))


def test_a_missing_import_is_named_with_the_import_instead_of_the_hint():
    my_loss = learner_function(
        "def my_loss(logits, targets):\n"
        "    keep = targets != IGNORE\n"
        "    return -(torch.log_softmax(logits, -1).gather(-1, targets.clamp(min=0)[..., None])[..., 0]"
        " * keep).mean() / math.e\n", {"torch": torch})
    logits, targets = rand(2, 3, 5), torch.tensor([[1, -100, 2], [0, 4, -100]])
    error = fails(my_loss, lambda lg, t: lg.sum(), [(logits, targets)],
                  hint="gather needs a valid index everywhere",
                  hints_by_diagnosis={"raised": "gather needs a valid index everywhere"})
    msg = str(error)
    assert "raised NameError: name 'IGNORE' is not defined" in msg
    assert "gather needs a valid index" not in msg  # the exercise's hint is about another mistake
    # every name the function lacks, not only the first one read, each with its import
    assert "add\n    from minitf import IGNORE\n    import math\n" in msg, msg
    assert error.diagnoses == ("missing_name",)


def test_names_from_one_module_share_one_import_line_and_aliases_get_theirs():
    my_circle = learner_function(
        "def my_circle(k):\n"
        "    E = torch.zeros(256, 4, dtype=torch.float64)\n"
        "    E[TAB] = E[EOS] = T + F.relu(F1)\n"
        "    return E\n", {"torch": torch})
    msg = str(fails(my_circle, lambda k: torch.zeros(256, 4, dtype=torch.float64), [(3,)]))
    assert "from minitf import TAB, EOS" in msg
    assert "from minitf.course.by_hand import T, F1" in msg
    assert "import torch.nn.functional as F" in msg


def test_a_misspelt_name_is_matched_to_the_one_meant():
    my_double = learner_function("def my_double(values):\n    return valeus * 2\n", {})
    msg = str(fails(my_double, lambda values: values * 2, [rand(3)]))
    assert "`valeus` is defined nowhere your function can see it: did you mean `values`?" in msg


def test_a_local_read_before_it_is_assigned_is_not_taken_for_a_missing_import():
    def my_twice(x):
        if x.sum() > 1e9:
            y = x
        return y * 2  # noqa: F821 — unbound: the ordinary "raised" message and the exercise's hint

    error = fails(my_twice, lambda x: x * 2, [rand(3)], hint="assign y first")
    assert error.diagnoses == ("raised",) and str(error).endswith("Hint: assign y first")
