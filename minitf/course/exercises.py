"""The course's exercises: what each teaches, how hard it is, the cases it is checked on.

`minitf.exercise("apply_rope", my_apply_rope)` runs the learner's function against minitf's own on
the exercise's cases and prints what is wrong in words (never a traceback). When it passes, a piece
of the model is saved (`minitf.parts.save`) so notebook 08 can build a model from the learner's code.
The cases live here, not in the notebooks, so a notebook cell is one line and the tests run the
very same checks on `minitf.solutions`.

Every case runs in float64 and again in float32 (the dtype a model trains in), so a piece must keep
its inputs' dtype. Each exercise also names the library functions it re-creates (`library`): a
function that calls one of them (F.layer_norm for LayerNorm, minitf.make_batch for the batch) is
refused, and `own_work` says which calls are fine instead.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Callable

import torch
import torch.nn.functional as F
from torch.optim import adam as torch_adam
from torch import nn

from ..core.attention import MultiHeadAttention, attention, causal_mask
from ..core.config import Config
from ..core.data import Pair, make_batch, make_pairs
from ..core.ffn import FeedForward
from ..core.heads import ablate_heads
from ..core.model import Transformer, count_parameters, format_parameter_table, parameter_table
from ..core.norms import LayerNorm, RMSNorm
from ..core.origami import widen_weight
from ..core.rope import apply_rope, position_ids, rope_angles, rope_frequencies
from ..core.tokens import EOS, PAD, TAB
from ..core.evaluate import masked_loss
from ..core.train import lr_at, train, train_step, wsd_lr
from . import by_hand
from .cases import first_slip as _first_slip, random_case as _rand
from .feedback import ExerciseError, check_function, check_property
from . import training_checks
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
    # the library functions this exercise re-creates ({function: its name}): a learner's function
    # that calls one is refused (feedback.library_watch), and `own_work` is then the hint: what is
    # the learner's to write, and which calls are fine
    library: dict = field(default_factory=dict)
    own_work: str = ""
    # an answer with many right forms (notebook 12's hand-set pieces) is judged by what it must do:
    # judge(result of fn(*cases()[0])) returns the success line or raises ExerciseError
    judge: Callable | None = None
    # a piece that acts rather than computes (a training step, a schedule, a loop) is compared by
    # what it does: drive(fn, *case) runs it (on copies) and returns the numbers to compare
    drive: Callable | None = None

    @property
    def header(self) -> str:
        dots = "●" * self.difficulty + "○" * (5 - self.difficulty)
        return f"difficulty {dots} · about {self.minutes} min · {self.teaches}"


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


def _norm_slips(x, weight, bias, eps):
    """LayerNorm's γ and β left out, swapped or applied in the wrong order."""
    mean = x.mean(-1, keepdim=True)
    x_hat = (x - mean) / torch.sqrt(((x - mean) ** 2).mean(-1, keepdim=True) + eps)
    slips = [(x_hat, "yours is the normalised x̂ without γ and β: LayerNorm ends with × weight (γ) "
                     "+ bias (β), the two numbers per feature it learns"),
             (x_hat * weight, "yours multiplies by γ (weight) but leaves β (bias) out: add the bias at "
                              "the end"),
             (x_hat + bias, "yours adds β (bias) but leaves γ (weight) out: multiply by the weight before "
                            "adding the bias"),
             (x_hat * bias + weight, "yours swaps γ and β: multiply by weight (γ), then add bias (β)"),
             ((x_hat + bias) * weight, "yours adds β before multiplying by γ: it is x̂ · γ + β, in that "
                                       "order")]
    gamma_beta = _first_slip(slips)
    gamma_beta.__name__ = "_gamma_beta"
    outside = _first_slip([((x - mean) / (torch.sqrt(((x - mean) ** 2).mean(-1, keepdim=True)) + eps)
                            * weight + bias, "yours adds eps after the square root, sqrt(var) + eps: "
                                             "it goes inside, sqrt(var + eps)")])
    outside.__name__ = "_eps_outside_sqrt"
    return (gamma_beta, outside)


def _rms_slips(x, weight, eps):
    """RMSNorm's γ left out, or eps added after the square root."""
    gamma = _first_slip([(x / torch.sqrt((x ** 2).mean(-1, keepdim=True) + eps),
                          "yours is x / rms without γ: multiply by weight (γ) at the end")])
    gamma.__name__ = "_gamma_beta"
    outside = _first_slip([(x / (torch.sqrt((x ** 2).mean(-1, keepdim=True)) + eps) * weight,
                            "yours adds eps after the square root, sqrt(mean(x²)) + eps: it goes "
                            "inside, sqrt(mean(x²) + eps)")])
    outside.__name__ = "_eps_outside_sqrt"
    return (gamma, outside)


def _rope_slips(x, cos, sin):
    """The rotation by −angle, cos and sin swapped, or the pairs taken as the two halves."""
    backwards = _first_slip([(apply_rope(x, cos, -sin), "yours turns every pair the wrong way, by −angle: "
                              "(a·cos + b·sin, −a·sin + b·cos); the turn by +angle is (a·cos − b·sin, "
                              "a·sin + b·cos)")])
    backwards.__name__ = "_turned_backwards"
    swapped = _first_slip([(apply_rope(x, sin, cos), "yours uses sin where cos goes and cos where sin "
                            "goes: a·cos − b·sin, a·sin + b·cos")])
    swapped.__name__ = "_cos_sin_swapped"
    a, b = x.chunk(2, dim=-1)
    halves = _first_slip([(torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1),
                           "yours pairs dimension i with dimension i + head_dim/2 (the two halves of the "
                           "vector); pair i is the neighbours (2i, 2i+1)")])
    halves.__name__ = "_halves_paired"
    return (backwards, swapped, halves)


def _ffn_slips(x, w_up, b_up, w_down, b_down):
    """A bias left out, or the ReLU in the wrong place."""
    up = lambda bias=True: x @ w_up.T + (b_up if bias else 0)
    down = lambda h, bias=True: h @ w_down.T + (b_down if bias else 0)
    bias = _first_slip([
        (down(torch.relu(up(False)), False), "yours leaves out both biases: x @ w_up.T + b_up, and "
                                             "hidden @ w_down.T + b_down"),
        (down(torch.relu(up(False))), "yours leaves out b_up, the first map's bias: x @ w_up.T + b_up, "
                                      "before the ReLU"),
        (down(torch.relu(up()), False), "yours leaves out b_down, the second map's bias: "
                                        "hidden @ w_down.T + b_down"),
        (down(torch.relu(x @ w_up.T) + b_up), "yours adds b_up after the ReLU: it belongs to the first "
                                              "map, inside the ReLU"),
    ])
    bias.__name__ = "_ffn_bias"
    relu = _first_slip([
        (torch.relu(down(up())), "yours puts the ReLU after the second map: it goes between the two"),
        (torch.relu(down(torch.relu(up()))), "yours has a second ReLU after the second map: only one, "
                                             "between the two"),
        (down(up()), "yours has no ReLU: without it the two maps are one linear map"),
    ])
    relu.__name__ = "_relu_placement"
    return (bias, relu)


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
    """Three cases with the usual eps = 1e-5, and one with small inputs and eps = 0.1, where eps
    outside the square root (sqrt(var) + eps) is not lost in the tolerance."""
    cases = []
    for seed, (shape, scale, eps) in enumerate([((1, 4), 1, 1e-5), ((2, 3, 4), 1, 1e-5),
                                                ((5, 8), 1, 1e-5), ((2, 6), 0.1, 0.1)]):
        x = _rand(*shape, seed=seed, low=-scale, high=3 * scale)
        weight = _rand(shape[-1], seed=seed + 10, low=0.5, high=1.5)
        bias = _rand(shape[-1], seed=seed + 20, low=-0.5, high=0.5)
        cases.append((x, weight, bias, eps) if with_bias else (x, weight, eps))
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
    return widen_weight(W, k)


EXERCISES = {e.name: e for e in [
    Exercise("embed", "01", "an embedding is a table lookup: row id of the table", 1, 5,
             lambda ids, table: F.embedding(ids, table), _embed_cases,
             "row b of the table is the vector of byte b; index the table with the whole ids tensor",
             options={"hints_by_diagnosis": {
                 "raised": "indexing table[ids] needs integer ids; one-hot vectors must have the "
                           "table's dtype: F.one_hot(ids, 256).to(table.dtype) @ table",
                 "dtype_changed": "keep the table's dtype: table[ids] does; a one-hot product needs "
                                  "F.one_hot(ids, 256).to(table.dtype), not .double() or .float()"}},
             library={F.embedding: "F.embedding", torch.embedding: "torch.embedding",
                      nn.Embedding.forward: "nn.Embedding"},
             own_work="indexing the table with the ids (table[ids]) or a one-hot product "
                      "(F.one_hot(ids, 256).to(table.dtype) @ table) is fine: F.embedding and "
                      "nn.Embedding are the lookup itself"),
    Exercise("count_parameters", "01", "where the 2,648 numbers of the tiny model are", 2, 10,
             lambda config: count_parameters(Transformer(config)), _count_cases,
             "go piece by piece and multiply what one layer holds by n_layers: every nn.Linear has a "
             "weight (out × in) and a bias (out); every LayerNorm a γ and a β; the embedding and the "
             "output head are separate tables",
             options={"explain_difference": _count_differences},
             library={Transformer.__init__: "minitf.Transformer(config) (it builds the model)",
                      count_parameters: "minitf.count_parameters",
                      parameter_table: "minitf.parameter_table",
                      format_parameter_table: "minitf.format_parameter_table",
                      nn.Module.__init__: "a torch.nn module (it builds part of a model)",
                      nn.Module.parameters: ".parameters()",
                      nn.Module.named_parameters: ".named_parameters()",
                      nn.Module.state_dict: ".state_dict()"},
             own_work="arithmetic on config.vocab_size, d_model, n_layers and d_ff is fine, and all "
                      "you need: building the model (or any nn layer) and counting its .parameters() "
                      "is how the check gets the answer you are asked to work out"),
    Exercise("apply_rope", "02", "RoPE rotates neighbouring pairs (x_2i, x_2i+1) by position × θ_i",
             2, 15, apply_rope,
             lambda: [_rope_case(1, 1, 5, 2, 0), _rope_case(2, 2, 6, 4, 1), _rope_case(1, 3, 4, 8, 2)],
             "pair i is (x[..., 2i], x[..., 2i+1]), not the two halves of the vector; a·cos − b·sin "
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
             library={apply_rope: "minitf.apply_rope"},
             own_work="*, − and + on strided slices (x[..., 0::2]), torch.stack, torch.empty_like "
                      "and complex numbers are fine: minitf.apply_rope is the rotation itself"),
    Exercise("causal_mask", "03", "the causal mask: position i may look at j ≤ i only", 1, 5,
             causal_mask, lambda: [(4,), (1,), (2,), (8,)],
             "True marks what is hidden: key j is hidden from query i when j > i; the diagonal "
             "(a position looking at itself) is allowed",
             options={"hints_by_diagnosis": {
                 "mask_inverted": "True means 'may NOT look': mark the future (j > i), not the past",
                 "mask_diagonal": "compare with >, not >=: position i may look at itself",
                 "transpose": "rows are queries i, columns are keys j: hide j > i (above the diagonal)",
                 "dtype": "build it from a comparison (j > i gives bools) or pass dtype=torch.bool"}},
             library={causal_mask: "minitf.causal_mask",
                      nn.Transformer.generate_square_subsequent_mask:
                          "nn.Transformer.generate_square_subsequent_mask"},
             own_work="torch.arange and a comparison, or torch.triu / torch.tril with the right "
                      "diagonal, are fine (choosing what to hide is the exercise): minitf.causal_mask "
                      "is the mask itself"),
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
                               "the mask you are given; position i always sees itself"}},
             library={attention: "minitf.attention",
                      F.scaled_dot_product_attention: "F.scaled_dot_product_attention",
                      F.multi_head_attention_forward: "F.multi_head_attention_forward",
                      nn.MultiheadAttention.forward: "nn.MultiheadAttention",
                      MultiHeadAttention.attend: "minitf.MultiHeadAttention.attend"},
             own_work="@, .transpose, masked_fill and your my_softmax (or torch.softmax, "
                      "F.softmax) are fine (putting them together is the exercise): minitf.attention "
                      "and F.scaled_dot_product_attention are attention itself"),
    Exercise("layer_norm", "04", "LayerNorm: centre, scale to unit variance, then γ and β", 2, 10,
             lambda x, w, b, eps: F.layer_norm(x, w.shape, w, b, eps), lambda: _norm_cases(True),
             "mean and variance over the last dimension with keepdim=True; the variance is biased "
             "(divide by C, like unbiased=False); eps goes inside the square root",
             options={"diagnoses": _norm_slips, "hints_by_diagnosis": {
                 "raised": "x.mean(-1) drops the last dimension; keepdim=True keeps it, so (x − mean) "
                           "lines up position by position",
                 "_gamma_beta": "γ and β come last, in this order: (x − mean) / sqrt(var + eps) "
                                "* weight + bias",
                 "_eps_outside_sqrt": "torch.sqrt(var + eps): eps keeps the square root away from 0"}},
             library={F.layer_norm: "F.layer_norm", torch.layer_norm: "torch.layer_norm",
                      torch.native_layer_norm: "torch.native_layer_norm",
                      nn.LayerNorm.forward: "nn.LayerNorm", LayerNorm.forward: "minitf.LayerNorm",
                      LayerNorm.formula: "minitf.LayerNorm.formula"},
             own_work="x.mean, x.var(unbiased=False), torch.sqrt and torch.rsqrt are fine (the "
                      "formula is the exercise): F.layer_norm and nn.LayerNorm are LayerNorm itself"),
    Exercise("rms_norm", "04", "RMSNorm: LayerNorm without the centring and without β", 1, 5,
             lambda x, w, eps: F.rms_norm(x, w.shape, w, eps), lambda: _norm_cases(False),
             "divide by sqrt(mean(x²) + eps) over the last dimension (keepdim=True); no mean is "
             "subtracted",
             options={"diagnoses": _rms_slips, "hints_by_diagnosis": {
                 "_gamma_beta": "RMSNorm ends with × weight (γ): x / sqrt(mean(x²) + eps) * weight",
                 "_eps_outside_sqrt": "torch.sqrt((x ** 2).mean(-1, keepdim=True) + eps): eps inside "
                                      "the square root"}},
             library={F.rms_norm: "F.rms_norm", torch.rms_norm: "torch.rms_norm",
                      nn.RMSNorm.forward: "nn.RMSNorm", RMSNorm.forward: "minitf.RMSNorm"},
             own_work="x ** 2, .mean, torch.sqrt and torch.rsqrt are fine (the formula is the "
                      "exercise): F.rms_norm and nn.RMSNorm are RMSNorm itself"),
    Exercise("feed_forward", "04", "the FFN: two linear maps with a ReLU between, per position",
             1, 5, lambda x, wu, bu, wd, bd: F.linear(F.relu(F.linear(x, wu, bu)), wd, bd),
             _ffn_cases,
             "nn.Linear stores its weight as (out, in): x @ W.T + b; ReLU between the two layers, "
             "not after the second",
             options={"diagnoses": _ffn_slips, "hints_by_diagnosis": {
                 "_ffn_bias": "each map has its own bias: x @ w_up.T + b_up before the ReLU, "
                              "hidden @ w_down.T + b_down after it",
                 "_relu_placement": "one ReLU, between the two maps: relu(x @ w_up.T + b_up), then "
                                    "the second map"}},
             library={FeedForward.forward: "minitf.FeedForward"},
             own_work="F.linear (or x @ W.T + b) and torch.relu are fine (the FFN's shape, two maps "
                      "with a ReLU between, is the exercise): minitf.FeedForward is the FFN itself"),
    Exercise("make_batch", "05", "one sequence per pair, padded, with targets on the output only",
             3, 20, make_batch, _batch_cases,
             "ids = input TAB output (all but the last byte), padded with PAD = 0; targets[t] = "
             "seq[t+1] from t = len(input) on (the TAB's position predicts the first output byte), "
             "IGNORE = −100 everywhere else", result_names=("ids", "targets"),
             options={"hints_by_diagnosis": {
                 "padding": "ids are padded with PAD = 0; IGNORE = −100 only goes into targets",
                 "results_swapped": "return (ids, targets), in this order"}},
             library={make_batch: "minitf.make_batch"},
             own_work="minitf.sequence(pair), torch.full and torch.tensor are fine (the padding and "
                      "the output-only targets are the exercise): minitf.make_batch is the batch itself"),
    Exercise("ablate_head", "06", "switch one head off to measure what it does", 2, 10,
             _ablate_reference, _ablate_cases,
             "the check compares the logits of your model and minitf's on 'Hello⇥Ifmmp'. A head's "
             "output reaches the model only through W_O, whose weight is (out, in): zero the head_dim "
             "COLUMNS (second index) that read the head, in a copy of the model",
             outcome=_ablated_logits, library={ablate_heads: "minitf.ablate_heads"},
             own_work="copy.deepcopy and writing zeros into the weight under torch.no_grad() are fine: "
                      "minitf.ablate_heads is the ablation itself"),
    Exercise("position_ids", "11", "position coupling: output byte j gets input byte j's position id",
             2, 15, lambda ids: position_ids(ids, "coupled"), _position_ids_cases,
             "for each row: before the first TAB, token t gets t + 1; from the first TAB on, t minus "
             "the first TAB's index (so the TAB gets 0, output byte j gets j + 1); a row without any "
             "TAB is t + 1 throughout. Later TABs do not restart the count",
             options={"hints_by_diagnosis": {
                 "offset": "every id is off by the same amount: input byte j gets j + 1 and the TAB 0",
                 "dtype": "ids are whole numbers: build them from torch.arange (a long tensor)"}},
             library={position_ids: "minitf.rope.position_ids"},
             own_work="torch.arange, comparisons, cumsum, argmax and torch.where are fine: "
                      "minitf.rope.position_ids is the numbering itself"),
    Exercise("byte_circle", "12", "the byte circle: shift's +1 becomes one rotation of every code",
             2, 10, lambda k: by_hand.byte_circle(by_hand.HandSet(k=k)), lambda: [(by_hand.HandSet().k,)],
             "printable byte b sits at angle a = k·2π(b − 32)/95: its row is cos(a)·F1 + sin(a)·F2; "
             "the rows of TAB and EOS are T; every other row stays 0",
             judge=by_hand.judge_byte_circle,
             library={by_hand.byte_circle: "minitf.course.by_hand.byte_circle"},
             own_work="math.cos, math.sin, torch.zeros and the directions T, F1, F2 are fine: "
                      "by_hand.byte_circle is the circle itself"),
    Exercise("query", "12", "a constant query that RoPE turns to meet the key one id ahead", 3, 15,
             by_hand.query, lambda: [(by_hand.HandSet().S, by_hand.HandSet().omega)],
             "a byte key is √S·(1, 0) on pair 1; RoPE turns the query by its id·ω and the key by its "
             "id·ω, so a query one step ahead, √S·(cos ω, sin ω), lines up with the key whose id is "
             "one more. Pair 2 is √S·(1, 0): TAB's channel",
             judge=by_hand.judge_query, library={by_hand.query: "minitf.course.by_hand.query"},
             own_work="math.sqrt, math.cos, math.sin and torch.tensor are fine: by_hand.query is "
                      "the query itself"),
    Exercise("tab_score", "12", "the end-of-output key: TAB wins exactly when no byte is left",
             1, 5, by_hand.tab_score, lambda: [(by_hand.HandSet().S, by_hand.HandSet().omega)],
             "the source byte scores S, its neighbours S·cos ω: TAB's score B goes between them, "
             "the middle is safest",
             judge=by_hand.judge_tab_score, library={by_hand.tab_score: "minitf.course.by_hand.tab_score"},
             own_work="any arithmetic with math.cos is fine: by_hand.tab_score is the answer itself"),
    Exercise("value_rotation", "12", "the value path computes the +1: a rotation of the byte plane",
             3, 15, lambda k: by_hand.value_rotation(by_hand.HandSet(k=k)),
             lambda: [(by_hand.HandSet().k,)],
             "with A = [T, F1, F2] as columns (4, 3), W_V = A·diag(1, R)·Aᵀ, R the 2×2 rotation by "
             "k·2π/95: T stays, the byte plane turns one step",
             judge=by_hand.judge_value_rotation,
             library={by_hand.value_rotation: "minitf.course.by_hand.value_rotation"},
             own_work="torch.stack, torch.eye, @ and math.cos / math.sin are fine: "
                      "by_hand.value_rotation is the rotation itself"),
    Exercise("widen_weight", "07", "Origami: a weight that computes the same thing on copied inputs",
             2, 10, _widen_reference, _widen_cases,
             "W' is a k×k grid of blocks; with the input copied k times, each output row sums k "
             "blocks, so every block must be W / k",
             options={"factors": lambda W, k: {"k": k, "k²": k * k, "1/k": 1 / k},
                      "diagnoses": (_zeros_where_copies_should_be,)},
             library={widen_weight: "minitf.origami.widen_weight"},
             own_work="torch.cat, .repeat and torch.kron are fine: minitf.origami.widen_weight is "
                      "the answer itself"),
]}


# --- notebook 09: the learner's sampler and cached attention (cases and slips in speaking_cases) ---
from ..core.generate import next_byte_probs, next_token, picker  # noqa: E402
from ..core.kv_cache import LayerCache  # noqa: E402
from . import speaking_cases  # noqa: E402

EXERCISES.update({e.name: e for e in [
    Exercise("next_byte_probs", "09", "sampling: temperature, top-k and top-p reshape the next-byte "
             "distribution", 3, 20, next_byte_probs, speaking_cases.sampling_cases,
             "divide the logits by T before the softmax (T = 0: all the mass on the argmax); top-k "
             "keeps every byte whose logit is at least the k-th largest; top-p keeps, most likely "
             "first, each byte while the mass before it is below p; renormalise what is left",
             options={"diagnoses": speaking_cases.sampling_slips, "hints_by_diagnosis": {
                 "_sampling_slip": "temperature before the softmax, top-k by value (ties kept), then "
                                   "top-p on the renormalised top-k distribution keeping the byte "
                                   "that crosses p, and one renormalisation at the end",
                 "rows_not_summing_to_1": "divide what is left by its sum: each row sums to 1",
                 "not_finite": "a row with nothing kept gives NaN: the most likely byte is always "
                               "kept (top-p: the mass before it is 0 < p)"}},
             library={next_byte_probs: "minitf.next_byte_probs", next_token: "minitf.next_token",
                      picker: "minitf.core.generate.picker"},
             own_work="torch.softmax, .topk, .sort, .cumsum, .scatter, masked_fill and "
                      "F.one_hot are fine (choosing what to keep is the exercise): "
                      "minitf.next_byte_probs is the sampler's distribution itself"),
    Exercise("cached_attention", "09", "a KV cache: the new positions' keys join the cache, their "
             "queries attend over all of it", 3, 20, speaking_cases.cached_attention_reference,
             speaking_cases.cached_attention_cases,
             "start = keys.size(2) positions are cached; rotate the new q and k by RoPE at positions "
             "start … start+T−1 (rope_angles(attn.inv_freq, T, offset=start)), append k and v along "
             "dim 2, and mask with the rows start … of causal_mask(start + T)",
             result_names=("output", "keys", "values"),
             options={"diagnoses": speaking_cases.cached_attention_slips, "hints_by_diagnosis": {
                 "shape": "return the cache with this step appended: keys and values (B, H, start + T, "
                          "head_dim), torch.cat([keys, k], dim=2); an unappended cache leaves the "
                          "next step blind to this one",
                 "_cache_slip": "RoPE at the absolute positions (offset=start), attention over "
                                "every cached key and the new ones, mask rows causal_mask(start + "
                                "T)[start:]"}},
             library={MultiHeadAttention.forward: "minitf.MultiHeadAttention (its forward)",
                      MultiHeadAttention.attend: "minitf.MultiHeadAttention.attend",
                      LayerCache.append: "minitf.core.kv_cache.LayerCache.append"},
             own_work="attn.qkv, attn.rotate, attn.out, rope_angles, causal_mask, torch.cat and "
                      "minitf.attention (or your own) are fine (the positions, the cache and the "
                      "mask rows are the exercise): the attention module's own forward is the "
                      "cached step itself"),
]})


def run_check(name: str, fn: Callable, *, own_work: bool = True) -> str:
    """Check `fn` as exercise `name`; raises ExerciseError saying what is wrong.

    own_work=False skips the refusal of library calls (`Exercise.library`): for a caller that only
    asks whether `fn` computes the right thing (minitf.parts.check), not whether it is the learner's.
    """
    ex = EXERCISES[name]
    if ex.judge is not None:
        hints = dict(ex.options.get("hints_by_diagnosis") or {}, library_call=ex.own_work)
        return check_property(fn, ex.cases()[0], ex.judge, getattr(fn, "__name__", None), ex.hint,
                              library=ex.library if own_work else None, hints_by_diagnosis=hints)
    learner, reference = fn, ex.reference
    if ex.outcome is not None:  # compare what the results do (e.g. a model's logits), not the objects
        learner = functools.wraps(fn)(lambda *a: ex.outcome(fn(*a)))
        reference = functools.wraps(ex.reference)(lambda *a: ex.outcome(ex.reference(*a)))
    if ex.drive is not None:  # no functools.wraps: the case's arguments are the driver's, not fn's
        learner = _driven(ex.drive, fn)
        reference = _driven(ex.drive, ex.reference)
    options = dict(ex.options)
    if own_work and ex.library:
        hints = dict(options.get("hints_by_diagnosis") or {}, library_call=ex.own_work)
        options.update(library=ex.library, hints_by_diagnosis=hints)
    return check_function(learner, reference, ex.cases(), name=getattr(fn, "__name__", None),
                          hint=ex.hint, result_names=ex.result_names, **options)


def passes(name: str, fn: Callable) -> bool:
    """Does `fn` pass exercise `name`? Quietly: `exercise` is the one that explains."""
    try:
        run_check(name, fn)
    except ExerciseError:
        return False
    return True


def yours_or_reference(**pieces: Callable) -> dict:
    """{name: your function where it passes its check, else the reference solution}, and one line
    per piece saying which: a notebook then runs to its end before every exercise is written."""
    from . import solutions
    chosen = {}
    for name, fn in pieces.items():
        ok = passes(name, fn)
        chosen[name] = fn if ok else getattr(solutions, f"my_{name}")
        print(f"{name:<15} {'yours' if ok else 'the reference solution (yours does not pass its check yet)'}")
    return chosen


def exercise(name: str, fn: Callable) -> None:
    """Check a learner's function and print the outcome; on success save it for notebook 08."""
    if name not in EXERCISES:
        raise KeyError(f"no exercise {name!r}; the course's exercises: {', '.join(EXERCISES)}")
    try:
        message = run_check(name, fn)
    except ExerciseError as e:
        print(e)
        return
    if name in PIECES or name in training_checks.TRAINING_PIECES:
        path = save(name, fn)
        use = ("notebook 08 trains your model with it" if name in training_checks.TRAINING_PIECES
               else "notebook 08 builds your model from it")
        message += (f"\n  saved to {path.parent.name}/{path.name}: {use}"
                    if path else "\n  (write it with `def` to have notebook 08 build your model from it)")
    print(message)


def solution_markdown(name: str) -> str:
    """The collapsed "Solution" block a notebook shows after exercise `name` (tests compare them)."""
    import inspect

    from . import solutions
    source = inspect.getsource(getattr(solutions, f"my_{name}")).rstrip()
    return f"<details><summary>Solution</summary>\n\n```python\n{source}\n```\n\n</details>"


# --- the training core (notebook 08) ---------------------------------------------------------------

def _driven(drive: Callable, fn: Callable) -> Callable:
    """fn run through its exercise's driver: the case's arguments go to the driver."""
    def run(*case):
        return drive(fn, *case)
    run.__name__ = getattr(fn, "__name__", "your function")
    return run


def _minitf_train_step(model, optimizer, ids, targets, loss_fn, clip):
    """minitf's own step (its loss is masked_loss, the loss_fn the check passes)."""
    return train_step(model, optimizer, ids, targets, clip)


EXERCISES.update({ex.name: ex for ex in [
    Exercise("output_loss", "08", "the output-only cross-entropy: −log p(target), averaged over the "
             "output bytes and EOS", 2, 15, masked_loss, training_checks._loss_cases,
             "log_softmax over the last dimension, pick each target's log-probability (gather), and "
             "average −log p over the positions whose target is not IGNORE, the whole batch together",
             options={"diagnoses": training_checks._loss_slips, "hints_by_diagnosis": {
                 "_loss_positions": "keep = targets != IGNORE; the mean is (nll * keep).sum() / keep.sum()",
                 "_loss_shift": "make_batch has shifted already: logits[b, t] is scored against "
                                "targets[b, t], no slicing",
                 "_loss_no_log_softmax": "torch.log_softmax(logits, -1) turns scores into "
                                         "log-probabilities; then gather the target's",
                 "raised": "gather needs a valid index everywhere: torch.where(keep, targets, 0) "
                           "replaces IGNORE (−100) by any byte; the mask then drops those positions"}},
             library={F.cross_entropy: "F.cross_entropy", F.nll_loss: "F.nll_loss",
                      masked_loss: "minitf.masked_loss", nn.CrossEntropyLoss.forward: "nn.CrossEntropyLoss",
                      nn.NLLLoss.forward: "nn.NLLLoss"},
             own_work="torch.log_softmax (or logsumexp), gather, torch.where and sums are fine (the "
                      "mask and the mean are the exercise): F.cross_entropy and minitf.masked_loss are "
                      "the loss itself"),
    Exercise("train_step", "08", "one training step: zero_grad, forward, loss, backward, clip, step",
             2, 10, _minitf_train_step, training_checks._step_cases,
             "clear the old gradients first (optimizer.zero_grad()), then loss = loss_fn(model(ids), "
             "targets), loss.backward(), clip the gradient norm to `clip`, optimizer.step(); return "
             "the loss", drive=training_checks.drive_step, result_names=("losses", "weights"),
             options={"diagnoses": training_checks._step_slips, "hints_by_diagnosis": {
                 "_no_zero_grad": "PyTorch adds each backward() into .grad: optimizer.zero_grad() first",
                 "_no_clip": "my_clip_gradients(model.parameters(), clip) between backward() and "
                             "step()",
                 "_step_order": "the order is zero_grad, forward, loss, backward, clip, step"}},
             library={train_step: "minitf.core.train.train_step", train: "minitf.train"},
             own_work="model(ids), loss_fn, .backward(), optimizer.zero_grad() and .step(), your "
                      "my_clip_gradients and torch.nn.utils.clip_grad_norm_ are fine (their order is "
                      "the exercise): "
                      "minitf's train_step is the step itself"),
    Exercise("lr_at", "08", "the learning-rate schedule: a linear warm-up, then a cosine down to a floor",
             2, 10, lr_at, lambda: list(training_checks.SCHEDULES),
             "steps 0 … warmup−1 climb linearly to lr, lr·(step + 1)/warmup; then the progress "
             "p = (step − warmup)/(steps − warmup) goes from 0 to 1 and the rate is "
             "floor + (lr − floor)·½(1 + cos πp), floor = lr·min_lr_ratio; past the last step p "
             "stays 1 (the floor)",
             drive=training_checks.drive_schedule,
             options={"diagnoses": training_checks._schedule_slips,
                      "case_names": [f"steps={n}, lr={lr}, warmup={w}, min_lr_ratio={r}"
                                     for n, lr, w, r in training_checks.SCHEDULES],
                      "hints_by_diagnosis": {
                 "_no_warmup": "if step < warmup: return lr * (step + 1) / warmup",
                 "_rate_is_a_tensor": "math.cos and math.pi work on Python floats and return one; "
                                      "torch.cos and torch.tensor make a tensor",
                 "_cosine_to_zero": "the cosine goes from lr down to floor = lr * min_lr_ratio, not to 0",
                 "_off_by_one": "step is 0-based: warm-up lr·(step + 1)/warmup; after it, progress "
                                "(step − warmup)/(steps − warmup)",
                 "_climbs_after_end": "past the last step the rate stays at the floor: "
                                      "progress = min(1, (step − warmup)/(steps − warmup))"}},
             library={lr_at: "minitf.core.train.lr_at", wsd_lr: "minitf.core.train.wsd_lr"},
             own_work="math.cos, math.pi and arithmetic are fine: minitf's lr_at is the schedule itself"),
    Exercise("adamw", "08", "AdamW from its update rule: moments, bias correction, decoupled decay",
             4, 25, training_checks.torch_adamw_step, training_checks._adamw_cases,
             "m = β₁m + (1 − β₁)g, v = β₂v + (1 − β₂)g², m̂ = m/(1 − β₁ᵗ), v̂ = v/(1 − β₂ᵗ); the "
             "weight first decays, param·(1 − lr·weight_decay), then moves by −lr·m̂/(√v̂ + eps); "
             "return (param, m, v)", result_names=("param", "m", "v"),
             options={"diagnoses": training_checks._adamw_slips, "hints_by_diagnosis": {
                 "_no_bias_correction": "m and v start at 0: divide them by 1 − β₁ᵗ and 1 − β₂ᵗ "
                                        "(t counts from 1)",
                 "_l2_not_decoupled": "leave grad alone: the decay is param * (1 − lr * weight_decay), "
                                      "outside m and v",
                 "_decay_wrong_tensor": "the decay multiplies the weight, param * (1 − lr * weight_decay)",
                 "_eps_inside_sqrt": "v_hat.sqrt() + eps: eps after the square root"}},
             library={torch_adam._single_tensor_adam: "torch.optim.AdamW",
                      torch_adam._multi_tensor_adam: "torch.optim.AdamW",
                      torch_adam._fused_adam: "torch.optim.AdamW",
                      training_checks.torch_adamw_step: "minitf.course.training_checks.torch_adamw_step"},
             own_work="*, +, ** and .sqrt() on the tensors are fine (the update rule is the "
                      "exercise): torch.optim.AdamW and torch.optim.Adam are the optimizer itself"),
    Exercise("train_loop", "08", "the training loop: a batch, the rate, a step, the history, "
             "validation every few steps", 2, 15, training_checks.reference_loop,
             training_checks._loop_cases,
             "for each step: set group['lr'] = schedule(step) in every param group, draw a batch with "
             "next_batch(), loss = step_fn(model, optimizer, ids, targets); record loss.item() and "
             "the rate; after step + 1 = eval_every, 2·eval_every, … append "
             "{'step': step + 1, **evaluate(model)} to history['val']",
             drive=training_checks.drive_loop,
             result_names=("losses", "rates", "validated steps", "validation losses", "weights"),
             options={"diagnoses": training_checks._loop_slips, "hints_by_diagnosis": {
                 "_lr_not_applied": "for group in optimizer.param_groups: group['lr'] = schedule(step), "
                                    "before the step",
                 "_one_batch": "ids, targets = next_batch() inside the loop",
                 "_validation_steps": "if (step + 1) % eval_every == 0: validate, with 'step': step + 1"}},
             library={training_checks.reference_loop: "minitf.course.training_checks.reference_loop",
                      train: "minitf.train"},
             own_work="a for loop, the functions you are given and list.append are fine: "
                      "minitf.train is a loop itself"),
]})


# --- gradient clipping as a function (notebook 08; its cases and slips in training_checks) ---------
import inspect as _inspect  # noqa: E402

from torch.nn.utils import clip_grad as _clip_grad  # noqa: E402

EXERCISES.update({ex.name: ex for ex in [
    Exercise("clip_gradients", "08", "gradient clipping: one norm over all the gradients, scaled "
             "down to max_norm only when above it", 2, 10, training_checks.torch_clip,
             training_checks._clip_cases,
             "keep the gradients that exist (p.grad is not None) in a list; their total norm is "
             "√(Σ g²) over every entry of every tensor; if it is above max_norm, multiply every "
             "gradient in place by max_norm / (norm + 1e-6), else leave them alone",
             drive=training_checks.drive_clip,
             options={"diagnoses": training_checks._clip_slips,
                      "case_names": ["gradients above the limit", "gradients below it",
                                     "far above a small limit"], "hints_by_diagnosis": {
                 "_clip_per_tensor": "one norm for all, √(‖g₁‖² + ‖g₂‖² + …): total = "
                                     "torch.stack([g.norm() for g in grads]).norm(), and the same "
                                     "factor for every tensor",
                 "_clip_below_limit": "if total > max_norm: scale; otherwise leave the gradients "
                                      "as they are",
                 "_clip_sum_of_norms": "the norms add like the sides of a right angle: "
                                       "√(‖g₁‖² + ‖g₂‖² + …), torch.stack([g.norm() for g in "
                                       "grads]).norm()",
                 "_clip_never": "grads = [p.grad for p in parameters if p.grad is not None] once, "
                                "then work on that list; scale with g.mul_(…) so the change stays "
                                "in p.grad",
                 "raised": "a parameter may have no gradient (p.grad is None): leave it out"}},
             library={_inspect.unwrap(_clip_grad.clip_grad_norm_): "torch.nn.utils.clip_grad_norm_",
                      _inspect.unwrap(_clip_grad.clip_grad_norm): "torch.nn.utils.clip_grad_norm",
                      _inspect.unwrap(torch.nn.utils.get_total_norm): "torch.nn.utils.get_total_norm",
                      _inspect.unwrap(torch.nn.utils.clip_grads_with_norm_):
                          "torch.nn.utils.clip_grads_with_norm_",
                      training_checks.torch_clip: "minitf.course.training_checks.torch_clip"},
             own_work="p.grad, ** 2, .sum(), torch.sqrt (or .norm() on one tensor) and .mul_ are "
                      "fine (the one norm and the only-when-above are the exercise): "
                      "torch.nn.utils.clip_grad_norm_ is clipping itself"),
]})


# --- notebook 03: a softmax that does not overflow ---------------------------------------------------

def _softmax_cases():
    """Ordinary and masked scores, then rows whose e^x overflows (x + 100: in float32; x + 1000: in
    float64 too) and rows far apart (x, x + 1000, x − 1000: one maximum for all of them fails)."""
    x = _rand(3, 6, seed=3, low=-3, high=3)
    masked = _rand(1, 2, 4, 4, seed=1, low=-3, high=3).masked_fill(causal_mask(4), float("-inf"))
    return [(_rand(2, 5, seed=0, low=-3, high=3),), (masked,), (_rand(3, 6, seed=2) + 100,),
            (_rand(2, 6, seed=4) + 1000,), (torch.stack([x[0], x[1] + 1000, x[2] - 1000]),)]


def _softmax_slips(x):
    """NaN or inf where the softmax is finite: e^x overflowed (or every e^x of a row underflowed),
    because no maximum was subtracted, or one maximum for the whole tensor was."""
    def overflow(got, expected):
        if not (isinstance(got, torch.Tensor) and got.shape == expected.shape):
            return None
        bad = ~torch.isfinite(got).all(-1) & torch.isfinite(expected).all(-1)  # rows that broke
        if not bad.any():
            return None
        row_max = x.amax(-1)
        if torch.isfinite(got[row_max == row_max.max()]).all() and \
                (row_max.max() - row_max[bad].min()) > 80:
            return ("yours subtracts one maximum for the whole tensor: a row far below it (here one "
                    f"{float(row_max.max() - row_max[bad].min()):.0f} lower) has every e^(x − max) "
                    "round to 0, and 0/0 is NaN. Subtract each row's own maximum, "
                    "x.amax(-1, keepdim=True)")
        return ("yours overflows: e^x is inf above x ≈ 88.7 in float32 (709.8 in float64), and "
                "inf/inf is NaN (a row of large negative scores gives 0/0 the same way). Subtract "
                "the row's maximum first: softmax(x − max) is the same softmax, and its largest "
                "e^(x − max) is e^0 = 1")
    overflow.__name__ = "_softmax_overflow"
    return (overflow,)


EXERCISES.update({e.name: e for e in [
    Exercise("softmax", "03", "a softmax that does not overflow: subtract each row's maximum first",
             2, 10, lambda x: torch.softmax(x, dim=-1), _softmax_cases,
             "over the last dimension: e^(x − max) / Σ e^(x − max), with max = x.amax(-1, "
             "keepdim=True) the row's largest entry; a −inf entry (masked) gets weight 0",
             options={"diagnoses": _softmax_slips,
                      "case_names": ["ordinary scores", "masked scores (−inf), as attention gives",
                                     "x + 100", "x + 1000", "rows at x, x + 1000 and x − 1000"],
                      "hints_by_diagnosis": {
                 "_softmax_overflow": "subtract the row's maximum first: z = x - x.amax(-1, "
                                      "keepdim=True), then z.exp() / z.exp().sum(-1, keepdim=True)",
                 "softmax_over_wrong_dim": "each row is one softmax: the max and the sum over "
                                           "dim=-1, with keepdim=True",
                 "rows_not_summing_to_1": "divide by the sum of the same row's e^(x − max): "
                                          ".sum(-1, keepdim=True)",
                 "raised": "x.max(-1, keepdim=True) returns (values, indices): take .values, or "
                           "use x.amax(-1, keepdim=True); keepdim=True lines the row's maximum up "
                           "with its entries"}},
             library={torch.softmax: "torch.softmax", F.softmax: "F.softmax",
                      torch.Tensor.softmax: ".softmax()", torch.log_softmax: "torch.log_softmax",
                      F.log_softmax: "F.log_softmax", torch.Tensor.log_softmax: ".log_softmax()",
                      torch.special.softmax: "torch.special.softmax",
                      torch.logsumexp: "torch.logsumexp", torch.Tensor.logsumexp: ".logsumexp()",
                      nn.Softmax.forward: "nn.Softmax"},
             own_work=".amax (or .max(...).values), - , .exp(), .sum and / are fine (the stable "
                      "form is the exercise): torch.softmax, F.softmax and .softmax() are the "
                      "softmax itself"),
]})


# --- notebook 04: the gated feed-forward, SwiGLU -----------------------------------------------------

def _swiglu_cases():
    """Two sizes, no biases (the modern block has none), weights of both signs."""
    cases = []
    for seed, (C, Fd) in enumerate([(4, 6), (3, 8)]):
        cases.append((_rand(2, 3, C, seed=seed, low=-2, high=2), _rand(Fd, C, seed=seed + 1),
                      _rand(Fd, C, seed=seed + 2), _rand(C, Fd, seed=seed + 3)))
    return cases


def _swiglu_reference(x, w_up, w_gate, w_down):
    """minitf's gated FeedForward (Config(ffn_gate=True, activation="silu", bias=False)) with these weights."""
    C, d_ff = x.size(-1), w_up.size(0)
    ffn = FeedForward(Config(d_model=C, n_heads=1, d_ff=d_ff, ffn_gate=True, activation="silu",
                             bias=False, positional="none")).to(x.dtype)
    ffn.load_state_dict({"up.weight": w_up, "gate.weight": w_gate, "down.weight": w_down})
    with torch.no_grad():
        return ffn(x)


def _swiglu_slips(x, w_up, w_gate, w_down):
    up, gate = x @ w_up.T, x @ w_gate.T
    down = lambda h: h @ w_down.T
    swapped = _first_slip([(down(F.silu(gate) * up), (
        "yours puts the SiLU on the gate branch and leaves up linear: here SiLU goes on up "
        "(x @ w_up.T) and the gate (x @ w_gate.T) multiplies it as it is. (LLaMA's code names the "
        "two the other way round, gate_proj activated: the same function with the names swapped)"))])
    swapped.__name__ = "_swiglu_swapped"
    no_gate = _first_slip([
        (down(F.silu(up)), "yours leaves out the gate: down(silu(up x)) is the plain two-matrix FFN "
                           "with SiLU; SwiGLU multiplies silu(up x) by gate x, element by element"),
        (down(F.silu(gate)), "yours leaves out up and applies SiLU to the gate alone: SwiGLU is "
                             "silu(x @ w_up.T) * (x @ w_gate.T)"),
        (down(up * gate), "yours has no SiLU: up x ⊙ gate x alone is a bilinear map; SwiGLU is "
                          "silu(up x) ⊙ gate x")])
    no_gate.__name__ = "_swiglu_no_gate"
    activation = _first_slip([
        (down(torch.relu(up) * gate), "yours uses ReLU where SwiGLU uses SiLU, x·σ(x) (F.silu)"),
        (down(torch.sigmoid(up) * gate), "yours uses the sigmoid σ(x) (that is GLU); SiLU is x·σ(x), "
                                         "F.silu"),
        (down(F.silu(up * gate)), "yours applies SiLU after multiplying: SiLU goes on up x alone, "
                                  "then the product with gate x")])
    activation.__name__ = "_swiglu_activation"
    return (swapped, no_gate, activation)


EXERCISES.update({e.name: e for e in [
    Exercise("swiglu", "04", "SwiGLU: the FFN's hidden units gated by a second projection of the input",
             2, 10, _swiglu_reference, _swiglu_cases,
             "three maps, no biases: hidden = silu(x @ w_up.T) * (x @ w_gate.T), element by element, "
             "(..., d_ff); then hidden @ w_down.T",
             options={"diagnoses": _swiglu_slips, "hints_by_diagnosis": {
                 "_swiglu_swapped": "F.silu(x @ w_up.T) * (x @ w_gate.T): SiLU on up, the gate linear",
                 "_swiglu_no_gate": "the hidden units are silu(x @ w_up.T) times (x @ w_gate.T)",
                 "_swiglu_activation": "F.silu(x @ w_up.T) (SiLU = x·σ(x)), then times the gate",
                 "raised": "nn.Linear stores W as (out, in): x @ w.T; up and gate are (d_ff, C), "
                           "down is (C, d_ff)"}},
             library={FeedForward.forward: "minitf.FeedForward"},
             own_work="F.silu (or x * torch.sigmoid(x)), @ and F.linear are fine (the gate is the "
                      "exercise): minitf.FeedForward with ffn_gate is SwiGLU itself"),
]})


# --- notebook 03: multi-head attention's forward, around the learner's attention ---------------------

def _mha_cases():
    """Two modules (heads of 4 and of 2, H ≠ T so a wrong axis cannot line up by chance) and their
    RoPE angles; the module's own weights are the case."""
    cases = []
    for seed, (C, H, B, T) in enumerate([(8, 2, 2, 5), (8, 4, 1, 3)]):
        torch.manual_seed(seed)
        attn = MultiHeadAttention(Config(d_model=C, n_heads=H, dropout=0.0)).double().requires_grad_(False)
        cos, sin = rope_angles(attn.inv_freq, T)
        cases.append((attn, _rand(B, T, C, seed=seed + 10), cos, sin))
    return cases


def _mha_reference(attn, x, cos, sin):
    with torch.no_grad():
        return attn(x, cos, sin, need_weights=True)


def _mha_slips(attn, x, cos, sin):
    """The module's forward with one step wrong, computed with minitf's own pieces."""
    B, T, _ = x.shape
    H, hd = attn.n_heads, attn.head_dim
    split = lambda t: t.view(B, T, H, hd).transpose(1, 2)
    merge = lambda y: y.transpose(1, 2).reshape(B, T, H * hd)
    rope = lambda t: apply_rope(t, cos, sin)

    def forward(split=split, merge=merge, out=True, mask=True, swap_kv=False, rotate=True):
        with torch.no_grad():
            q, k, v = (split(t) for t in attn.qkv(x).split(H * hd, dim=-1))
            if swap_kv:
                k, v = v, k
            if rotate:
                q, k = rope(q), rope(k)
            y, w = attention(q, k, v, causal_mask(T) if mask else None)
            y = merge(y)
            return (attn.out(y) if out else y), w

    def slip(name, result, words):
        recognise = _first_slip([(result[0], words), (result[1], words)])
        recognise.__name__ = name
        return recognise

    return (
        slip("_mha_merge", forward(merge=lambda y: y.reshape(B, T, H * hd)),
             "yours merges the heads without moving the head dimension back: y is (B, H, T, hd), "
             "so y.reshape(B, T, H·hd) mixes positions and heads. y.transpose(1, 2) first, then "
             "reshape"),
        slip("_mha_split", forward(split=lambda t: t.reshape(B, H, T, hd)),
             "yours splits the heads with a view to (B, H, T, hd) straight from (B, T, H·hd): that "
             "cuts the positions, not each position's vector. view(B, T, H, hd), then "
             "transpose(1, 2)"),
        slip("_mha_no_out", forward(out=False),
             "yours leaves out the output projection: the merged heads go through attn.out (W_O), "
             "which mixes them"),
        slip("_mha_no_mask", forward(mask=False),
             "yours attends without the causal mask: every position sees its future. Pass "
             "my_causal_mask(T) to your attention"),
        slip("_mha_kv_swapped", forward(swap_kv=True),
             "yours swaps K and V: attn.qkv(x) holds [q, k, v] in this order along the last "
             "dimension"),
        slip("_mha_no_rope", forward(rotate=False),
             "yours leaves out RoPE: q and k are rotated (attn.rotate(q, cos, sin)) after the split "
             "and before the scores; v is not"))


EXERCISES.update({e.name: e for e in [
    Exercise("multi_head_attention", "03", "multi-head attention's forward: project, split into "
             "heads, RoPE, attention, merge, project", 3, 20, _mha_reference, _mha_cases,
             "q, k, v = attn.qkv(x).split(H·hd, dim=-1), each .view(B, T, H, hd).transpose(1, 2); "
             "rotate q and k (attn.rotate(t, cos, sin)); y, weights = my_attention(q, k, v, "
             "my_causal_mask(T)); y.transpose(1, 2).reshape(B, T, H·hd); return attn.out(y), weights",
             result_names=("output", "weights"),
             options={"diagnoses": _mha_slips, "hints_by_diagnosis": {
                 "_mha_merge": "y.transpose(1, 2).reshape(B, T, H * hd): heads back beside each other",
                 "_mha_split": "t.view(B, T, H, hd).transpose(1, 2) for each of q, k and v",
                 "_mha_no_out": "return attn.out(y), weights",
                 "_mha_no_mask": "my_attention(q, k, v, my_causal_mask(T).to(x.device))",
                 "_mha_kv_swapped": "q, k, v = attn.qkv(x).split(H * hd, dim=-1), in this order",
                 "_mha_no_rope": "q, k = attn.rotate(q, cos, sin), attn.rotate(k, cos, sin), after "
                                 "the split",
                 "raised": "split first, (B, T, H·hd) → view(B, T, H, hd) → transpose(1, 2) → "
                           "(B, H, T, hd): RoPE and attention work on each head's (T, hd)"}},
             library={MultiHeadAttention.forward: "minitf.MultiHeadAttention (its forward)",
                      F.multi_head_attention_forward: "F.multi_head_attention_forward",
                      nn.MultiheadAttention.forward: "nn.MultiheadAttention"},
             own_work="attn.qkv, attn.out, attn.rotate, .view, .transpose, .reshape and your "
                      "my_attention and my_causal_mask are fine (the heads are the exercise): the "
                      "module's own forward is the answer itself"),
]})


# --- notebook 04: the block, pre-norm and post-norm --------------------------------------------------
from ..core.model import Block  # noqa: E402


def _block_cases():
    """A post-norm and a pre-norm block (H ≠ T), their RoPE angles and a stream h."""
    cases = []
    for seed, (position, B, T) in enumerate([("post", 2, 5), ("pre", 1, 3)]):
        torch.manual_seed(seed)
        block = Block(Config(d_model=8, n_heads=2, d_ff=16, norm_position=position, dropout=0.0)).double()
        with torch.no_grad():  # norms away from γ = 1, β = 0, so that a norm in the wrong place shows
            for i, norm in enumerate((block.norm1, block.norm2)):
                norm.weight.copy_(_rand(8, seed=10 * seed + i + 20, low=0.5, high=1.5))
                norm.bias.copy_(_rand(8, seed=10 * seed + i + 30, low=-0.5, high=0.5))
        cos, sin = rope_angles(block.attn.inv_freq, T)
        block.requires_grad_(False)  # numbers to compare, not a graph: the learner's result has none
        cases.append((block, _rand(B, T, 8, seed=seed + 40, low=-2, high=2), cos, sin))
    return cases


def _block_reference(block, h, cos, sin):
    with torch.no_grad():
        return block(h, cos, sin, need_weights=True)


def _block_slips(block, h, cos, sin):
    """The block with one slip, in both layouts, computed with its own modules."""
    attn = lambda x: block.attn(x, cos, sin, need_weights=True)
    n1, n2, ffn = block.norm1, block.norm2, block.ffn

    def pre(residual=True, second=n2, ffn_input=None):
        a, w = attn(n1(h))
        h1 = h + a if residual else a
        f = ffn(second(h if ffn_input == "attention's" else h1))
        return (h1 + f if residual else f), w

    def post(residual=True, second=n2, ffn_input=None, double=False):
        a, w = attn(n1(h) if double else h)
        h1 = n1(h + a if residual else a)
        f = ffn(h if ffn_input == "attention's" else h1)
        return second(h1 + f if residual else f), w

    def slip(name, result, words, on_weights=True):  # on_weights=False: named by h alone (two
        # slips that differ only in h would otherwise share the same wrong weights)
        recognise = _first_slip([(result[0], words)] + ([(result[1], words)] if on_weights else []))
        recognise.__name__ = name
        return recognise

    this, other = (pre, post) if block.pre_norm else (post, pre)
    layout = "pre-norm" if block.pre_norm else "post-norm"
    with torch.no_grad():
        return (
            slip("_block_no_residual", this(residual=False),
                 "yours has no residual connection: each sub-layer adds to the stream, h + f(…), "
                 "it does not replace it"),
            slip("_block_norm_side", other(),
                 f"yours puts the norms where the other layout has them: this block is {layout} "
                 f"(block.pre_norm is {block.pre_norm}): "
                 + ("h + f(norm(h)), the stream itself never normalised" if block.pre_norm
                    else "norm(h + f(h)), the sum normalised"), on_weights=False),
            slip("_block_shared_norm", this(second=n1),
                 "yours uses norm1 for both sub-layers: each has its own, norm1 with attention and "
                 "norm2 with the FFN (one γ and β cannot serve two jobs)"),
            slip("_block_ffn_input", this(ffn_input="attention's"),
                 "yours feeds the FFN the block's input h: it reads the stream after attention's "
                 "residual addition"),
            slip("_block_double_norm", post(double=True),
                 "yours normalises before attention and again after the addition, "
                 "norm1(h + attn(norm1(h))): that is neither layout (the seed documents' bug)",
                 on_weights=False))


EXERCISES.update({e.name: e for e in [
    Exercise("block", "04", "the block: attention and FFN, each with its residual and its norm, "
             "pre-norm or post-norm", 3, 15, _block_reference, _block_cases,
             "pre-norm: a, weights = block.attn(block.norm1(h), cos, sin, need_weights=True); "
             "h = h + a; h = h + block.ffn(block.norm2(h)). Post-norm: a, weights = block.attn(h, …); "
             "h = block.norm1(h + a); h = block.norm2(h + block.ffn(h)). Return (h, weights)",
             result_names=("h", "weights"),
             options={"diagnoses": _block_slips, "hints_by_diagnosis": {
                 "_block_no_residual": "h = h + a, then h = h + ffn(…) (pre-norm) or the same sums "
                                       "inside the norms (post-norm)",
                 "_block_norm_side": "if block.pre_norm: h + f(norm(h)); else: norm(h + f(h))",
                 "_block_shared_norm": "block.norm1 with attention, block.norm2 with the FFN",
                 "_block_ffn_input": "the FFN reads h after h = h + a (pre) or h = norm1(h + a) (post)",
                 "_block_double_norm": "post-norm: attention reads h itself; the norm comes after "
                                       "the addition only"}},
             library={Block.forward: "minitf.Block (its forward)"},
             own_work="block.attn, block.norm1, block.norm2, block.ffn, block.pre_norm and + are "
                      "fine (where the norms and the sums go is the exercise): the block's own "
                      "forward is the answer itself"),
]})


# --- notebook 08: the model's forward ---------------------------------------------------------------

def _forward_cases():
    """A pre-norm model (a final norm, an untied head), a post-norm one (no final norm) and 08's
    kind (pre-norm, coupled position ids, tied head); float64, no gradients, norms away from 1, 0."""
    cases = []
    for seed, config in enumerate([
            Config(d_model=8, n_heads=2, n_layers=2, d_ff=16, norm_position="pre", dropout=0.0),
            Config(d_model=8, n_heads=2, n_layers=1, d_ff=16, dropout=0.0),
            Config(d_model=8, n_heads=2, n_layers=1, d_ff=16, norm_position="pre", dropout=0.0,
                   rope_base=20.0, position_ids="coupled", tie_embeddings=True)]):
        torch.manual_seed(seed)
        model = Transformer(config).double().eval().requires_grad_(False)
        if model.final_norm is not None:
            with torch.no_grad():
                model.final_norm.weight.copy_(_rand(8, seed=seed + 50, low=0.5, high=1.5))
        text = [b"ab\tbc", b"xyz\tyz{"][seed % 2] if seed < 2 else b"hello\tifmmp"
        cases.append((model, torch.tensor([list(text)])))
    return cases


def _forward_reference(model, ids):
    with torch.no_grad():
        return model(ids)


def _forward_slips(model, ids):
    """The forward with one step wrong, computed with the model's own modules."""
    T = ids.size(1)

    def forward(final=True, positions=True, tied=False):
        with torch.no_grad():
            h = model.embed(ids)
            pos = model.positions(ids) if positions else None
            cos, sin = rope_angles(model.blocks[0].attn.inv_freq, T, positions=pos)
            for block in model.blocks:
                h, _ = block(h, cos, sin)
            if final and model.final_norm is not None:
                h = model.final_norm(h)
            if tied:
                return h @ model.embed.weight.T + (model.head.bias if model.head.bias is not None else 0)
            return model.head(h)

    def slip(name, result, words):
        recognise = _first_slip([(result, words)])
        recognise.__name__ = name
        return recognise

    return (slip("_forward_no_final_norm", forward(final=False),
                 "yours leaves out the final norm: a pre-norm model normalises the stream once more "
                 "before the head (model.final_norm; a post-norm model has none, it is None)"),
            slip("_forward_positions", forward(positions=False),
                 "yours numbers the positions 0, 1, 2, …: this model's config numbers them its own way "
                 f"(position_ids={model.config.position_ids!r}); pass positions=model.positions(ids) "
                 "to rope_angles"),
            slip("_forward_tied", forward(tied=True),
                 "yours reads the embedding table as the output head, but this config does not tie "
                 "them (tie_embeddings=False): the head is model.head, a table of its own"))


EXERCISES.update({e.name: e for e in [
    Exercise("model_forward", "08", "the model's forward: embedding, RoPE angles, the blocks, the "
             "final norm, the head", 2, 15, _forward_reference, _forward_cases,
             "h = model.embed(ids); cos, sin = rope_angles(model.blocks[0].attn.inv_freq, T, "
             "positions=model.positions(ids)); h, _ = block(h, cos, sin) for every block; "
             "model.final_norm(h) if it is not None; return model.head(h)",
             options={"diagnoses": _forward_slips, "hints_by_diagnosis": {
                 "_forward_no_final_norm": "if model.final_norm is not None: h = model.final_norm(h)",
                 "_forward_positions": "pos = model.positions(ids) (None means 0, 1, 2, …), then "
                                       "rope_angles(inv_freq, T, positions=pos)",
                 "_forward_tied": "return model.head(h): model.head is tied to the embedding only "
                                  "when the config says so",
                 "raised": "post-norm models have no final norm (model.final_norm is None); each "
                           "block returns (h, weights)"}},
             library={Transformer.forward: "minitf.Transformer (its forward)"},
             own_work="model.embed, model.positions, rope_angles, the blocks, model.final_norm and "
                      "model.head are fine (their order and the final norm are the exercise): the "
                      "model's own forward is the answer itself"),
]})
