"""The course's exercises: what each teaches, how hard it is, the cases it is checked on.

`minitf.exercise("apply_rope", my_apply_rope)` runs the learner's function against minitf's own on
the exercise's cases and prints what is wrong in words (never a traceback). When it passes, a piece
of the model is saved (`minitf.parts.save`) so notebook 08 can build a model from the learner's code.
The cases live here, not in the notebooks, so a notebook cell is one line and the tests run the
very same checks on `minitf.solutions`.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Callable

import torch
import torch.nn.functional as F

from ..core.attention import attention, causal_mask
from ..core.config import Config
from ..core.data import Pair, make_batch, make_pairs
from ..core.model import Transformer, count_parameters
from ..core.rope import apply_rope, position_ids, rope_angles, rope_frequencies
from ..core.tokens import EOS, PAD, TAB
from .feedback import ExerciseError, check_function
from .my_parts import PIECES, save


@dataclass(frozen=True)
class Exercise:
    name: str                 # the piece; the learner's function is my_<name>
    notebook: str
    teaches: str
    difficulty: int           # 1 (a few lines, one idea) … 5 (several ideas at once)
    minutes: int              # what it takes most learners, hints included
    reference: Callable       # minitf's or PyTorch's own version: the truth
    cases: Callable[[], list] # fresh argument tuples, built on demand (the same on every machine)
    hint: str                 # shown with every failure
    result_names: tuple | None = None
    outcome: Callable | None = None  # applied to both results before comparing (e.g. a model → its logits)
    options: dict = field(default_factory=dict)  # passed on to check_function

    @property
    def header(self) -> str:
        dots = "●" * self.difficulty + "○" * (5 - self.difficulty)
        return f"difficulty {dots} · about {self.minutes} min · {self.teaches}"


def _rand(*shape, seed: int, low: float = -1.0, high: float = 1.0) -> torch.Tensor:
    """float64 uniform numbers from a fixed generator: the same on every CPU."""
    g = torch.Generator().manual_seed(seed)
    return torch.rand(*shape, generator=g, dtype=torch.float64) * (high - low) + low


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


def _zeros_where_copies_should_be(got, expected):
    """widen_weight: the block-diagonal answer, W/k on the diagonal and zeros elsewhere."""
    if isinstance(got, torch.Tensor) and got.shape == expected.shape and \
            ((got == 0) & (expected != 0)).any():
        return "Yours has zeros where copies of W / k should be: every block of W' is W / k, " \
               "off the diagonal too"


def _rope_case(B, H, T, hd, seed):
    cos, sin = rope_angles(rope_frequencies(hd, n_heads=H, dtype=torch.float64), T)
    return _rand(B, H, T, hd, seed=seed), cos, sin


def _attention_cases():
    cases = []
    for seed, (B, H, T, hd) in enumerate([(1, 1, 3, 4), (2, 2, 5, 2), (1, 2, 6, 8)]):
        q, k, v = _rand(3, B, H, T, hd, seed=seed).unbind(0)
        cases.append((q, k, v, causal_mask(T)))
    q, k, v = _rand(3, 1, 1, 4, 2, seed=9).unbind(0)
    cases.append((q, k, v, None))  # no mask: every position sees every other
    return cases


def _norm_cases(with_bias: bool):
    cases = []
    for seed, shape in enumerate([(1, 4), (2, 3, 4), (5, 8)]):
        x = _rand(*shape, seed=seed, low=-1, high=3)
        weight = _rand(shape[-1], seed=seed + 10, low=0.5, high=1.5)
        bias = _rand(shape[-1], seed=seed + 20, low=-0.5, high=0.5)
        cases.append((x, weight, bias, 1e-5) if with_bias else (x, weight, 1e-5))
    return cases


def _ffn_cases():
    cases = []
    for seed, (C, Fd) in enumerate([(4, 8), (3, 5)]):
        x = _rand(2, 3, C, seed=seed)
        cases.append((x, _rand(Fd, C, seed=seed + 1), _rand(Fd, seed=seed + 2),
                      _rand(C, Fd, seed=seed + 3), _rand(C, seed=seed + 4)))
    return cases


def _batch_cases():
    return [([Pair(b"Hi", b"Ij")],),
            ([Pair(b"Hi", b"Ij"), Pair(b"cat", b"dbu"), Pair(b"a~z", b"b {")],),
            (make_pairs("shift", 5, seed=3),)]


def _ablate_cases():
    torch.manual_seed(0)
    model = Transformer(Config(d_model=8, n_heads=2, dropout=0.0)).double().eval()
    return [(model, 0, 1), (model, 1, 0)]


def _ablated_logits(model):
    ids = torch.tensor([list(b"Hello\tIfmmp")])
    with torch.no_grad():
        return model.eval()(ids)


def _ablate_reference(model, layer, head):
    from ..core.heads import ablate_heads
    return ablate_heads(model, [(layer, head)])


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


def _widen_cases():
    return [(torch.arange(6.0, dtype=torch.float64).view(2, 3), 2),
            (_rand(4, 2, seed=0), 3), (_rand(1, 1, seed=1), 4)]


def _widen_reference(W, k):
    from ..core.origami import widen_weight
    return widen_weight(W, k)


EXERCISES = {e.name: e for e in [
    Exercise("embed", "01", "an embedding is a table lookup: row id of the table", 1, 5,
             lambda ids, table: F.embedding(ids, table), _embed_cases,
             "row b of the table is the vector of byte b; index the table with the whole ids tensor",
             options={"hints_by_diagnosis": {
                 "raised": "indexing table[ids] needs integer ids; one-hot vectors must have the "
                           "table's dtype: F.one_hot(ids, 256).to(table.dtype) @ table"}}),
    Exercise("count_parameters", "01", "where the 2,648 numbers of the tiny model are", 2, 10,
             lambda config: count_parameters(Transformer(config)), _count_cases,
             "go piece by piece and multiply what one layer holds by n_layers: every nn.Linear has a "
             "weight (out × in) and a bias (out); every LayerNorm a γ and a β; the embedding and the "
             "output head are separate tables",
             options={"explain_difference": _count_differences}),
    Exercise("apply_rope", "02", "RoPE rotates neighbouring pairs (x_2i, x_2i+1) by position × θ_i",
             2, 15, apply_rope,
             lambda: [_rope_case(1, 1, 5, 2, 0), _rope_case(2, 2, 6, 4, 1), _rope_case(1, 3, 4, 8, 2)],
             "pair i is (x[..., 2i], x[..., 2i+1]), not the two halves of the vector; a·cos − b·sin "
             "goes to the even slot, a·sin + b·cos to the odd one",
             options={"hints_by_diagnosis": {
                 "permutation": "the rotated numbers are right but sit in the wrong slots: pair i is "
                                "the neighbours (2i, 2i+1), so write a·cos − b·sin back to x[..., 0::2] "
                                "and a·sin + b·cos to x[..., 1::2] (torch.stack(..., -1).flatten(-2) "
                                "interleaves them; torch.cat puts all of one kind first)",
                 "factor": "a rotation keeps the length: only cos and sin multiply, nothing else"}}),
    Exercise("causal_mask", "03", "the causal mask: position i may look at j ≤ i only", 1, 5,
             causal_mask, lambda: [(4,), (1,), (2,), (8,)],
             "True marks what is hidden: key j is hidden from query i when j > i; the diagonal "
             "(a position looking at itself) is allowed",
             options={"hints_by_diagnosis": {
                 "mask_inverted": "True means 'may NOT look': mark the future (j > i), not the past",
                 "mask_diagonal": "compare with >, not >=: position i may look at itself",
                 "transpose": "rows are queries i, columns are keys j: hide j > i (above the diagonal)",
                 "dtype": "build it from a comparison (j > i gives bools) or pass dtype=torch.bool"}}),
    Exercise("attention", "03", "scaled dot-product attention, with the mask, returning its weights",
             3, 20, attention, _attention_cases,
             "scores = q·kᵀ/√head_dim, the entries the mask marks True set to −inf before a softmax "
             "over the keys (the last dimension); mask may be None: then nothing is hidden; "
             "output = weights @ v", result_names=("output", "weights"),
             options={"factors": lambda q, k, v, mask: {"√head_dim": q.size(-1) ** 0.5,
                                                        "1/√head_dim": q.size(-1) ** -0.5},
                      "hints_by_diagnosis": {
                 "scores_scaled": "divide the scores q·kᵀ by √head_dim (q.size(-1) ** 0.5), once",
                 "softmax_over_wrong_dim": "each query's weights are one row: softmax over dim=-1",
                 "rows_not_summing_to_1": "mask with −inf BEFORE the softmax, so the softmax itself "
                                          "makes each row sum to 1",
                 "future_leak": "use the mask: scores.masked_fill(mask, float('-inf'))",
                 "results_swapped": "return (output, weights), in this order",
                 "not_finite": "a row whose every entry is hidden gives NaN (softmax of all −inf): use "
                               "the mask you are given; position i always sees itself"}}),
    Exercise("layer_norm", "04", "LayerNorm: centre, scale to unit variance, then γ and β", 2, 10,
             lambda x, w, b, eps: F.layer_norm(x, w.shape, w, b, eps), lambda: _norm_cases(True),
             "mean and variance over the last dimension with keepdim=True; the variance is biased "
             "(divide by C, like unbiased=False); eps goes inside the square root",
             options={"hints_by_diagnosis": {
                 "raised": "x.mean(-1) drops the last dimension; keepdim=True keeps it, so (x − mean) "
                           "lines up position by position"}}),
    Exercise("rms_norm", "04", "RMSNorm: LayerNorm without the centring and without β", 1, 5,
             lambda x, w, eps: F.rms_norm(x, w.shape, w, eps), lambda: _norm_cases(False),
             "divide by sqrt(mean(x²) + eps) over the last dimension (keepdim=True); no mean is "
             "subtracted"),
    Exercise("feed_forward", "04", "the FFN: two linear maps with a ReLU between, per position",
             1, 5, lambda x, wu, bu, wd, bd: F.linear(F.relu(F.linear(x, wu, bu)), wd, bd),
             _ffn_cases,
             "nn.Linear stores its weight as (out, in): x @ W.T + b; ReLU between the two layers, "
             "not after the second"),
    Exercise("make_batch", "05", "one sequence per pair, padded, with targets on the output only",
             3, 20, make_batch, _batch_cases,
             "ids = input TAB output (all but the last byte), padded with PAD = 0; targets[t] = "
             "seq[t+1] from t = len(input) on (the TAB's position predicts the first output byte), "
             "IGNORE = −100 everywhere else", result_names=("ids", "targets"),
             options={"hints_by_diagnosis": {
                 "padding": "ids are padded with PAD = 0; IGNORE = −100 only goes into targets",
                 "results_swapped": "return (ids, targets), in this order"}}),
    Exercise("ablate_head", "06", "switch one head off to measure what it does", 2, 10,
             _ablate_reference, _ablate_cases,
             "the check compares the logits of your model and minitf's on 'Hello⇥Ifmmp'. A head's "
             "output reaches the model only through W_O, whose weight is (out, in): zero the head_dim "
             "COLUMNS (second index) that read the head, in a copy of the model",
             outcome=_ablated_logits),
    Exercise("position_ids", "11", "position coupling: output byte j gets input byte j's position id",
             2, 15, lambda ids: position_ids(ids, "coupled"), _position_ids_cases,
             "for each row: before the first TAB, token t gets t + 1; from the first TAB on, t minus "
             "the first TAB's index (so the TAB gets 0, output byte j gets j + 1); a row without any "
             "TAB is t + 1 throughout. Later TABs do not restart the count",
             options={"hints_by_diagnosis": {
                 "offset": "every id is off by the same amount: input byte j gets j + 1 and the TAB 0",
                 "dtype": "ids are whole numbers: build them from torch.arange (a long tensor)"}}),
    Exercise("widen_weight", "07", "Origami: a weight that computes the same thing on copied inputs",
             2, 10, _widen_reference, _widen_cases,
             "W' is a k×k grid of blocks; with the input copied k times, each output row sums k "
             "blocks, so every block must be W / k",
             options={"factors": lambda W, k: {"k": k, "k²": k * k, "1/k": 1 / k},
                      "diagnoses": (_zeros_where_copies_should_be,)}),
]}


def run_check(name: str, fn: Callable) -> str:
    """Check `fn` as exercise `name`; raises ExerciseError saying what is wrong."""
    ex = EXERCISES[name]
    learner, reference = fn, ex.reference
    if ex.outcome is not None:  # compare what the results do (e.g. a model's logits), not the objects
        learner = functools.wraps(fn)(lambda *a: ex.outcome(fn(*a)))
        reference = functools.wraps(ex.reference)(lambda *a: ex.outcome(ex.reference(*a)))
    return check_function(learner, reference, ex.cases(), name=getattr(fn, "__name__", None),
                          hint=ex.hint, result_names=ex.result_names, **ex.options)


def passes(name: str, fn: Callable) -> bool:
    """Does `fn` pass exercise `name`? Quietly: `exercise` is the one that explains."""
    try:
        run_check(name, fn)
    except ExerciseError:
        return False
    return True


def exercise(name: str, fn: Callable) -> None:
    """Check a learner's function and print the outcome; on success save it for notebook 08."""
    if name not in EXERCISES:
        raise KeyError(f"no exercise {name!r}; the course's exercises: {', '.join(EXERCISES)}")
    try:
        message = run_check(name, fn)
    except ExerciseError as e:
        print(e)
        return
    if name in PIECES:
        path = save(name, fn)
        message += (f"\n  saved to {path.parent.name}/{path.name}: notebook 08 builds your model from it"
                    if path else "\n  (write it with `def` to have notebook 08 build your model from it)")
    print(message)


def solution_markdown(name: str) -> str:
    """The collapsed "Solution" block a notebook shows after exercise `name` (tests compare them)."""
    import inspect

    from . import solutions
    source = inspect.getsource(getattr(solutions, f"my_{name}")).rstrip()
    return f"<details><summary>Solution</summary>\n\n```python\n{source}\n```\n\n</details>"
