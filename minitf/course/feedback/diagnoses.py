"""The diagnosis catalogue: what differs between a learner's result and the expected one, and
which common mistake that difference is the signature of (a transpose, a constant factor, a mask
that hides the diagonal, …); `compare` turns the findings into an ExerciseError."""
from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import dataclass, field
from typing import Callable

import torch

from ...core.attention import causal_mask
from .formatting import SLOTS_MAX, _describe, _index, _mask_grids, _message, _ordinal, _short, _value


# --- what is wrong with one result -----------------------------------------------------------

@dataclass
class _Finding:
    """What is wrong with one result: the evidence, and the mistake in words when recognised."""
    evidence: str
    diagnosis: str | None = None
    explanation: str = ""
    more: list[str] = field(default_factory=list)  # further lines (the mask grids)


@dataclass
class _Context:
    label: str  # how messages refer to the learner's result: "your weights", "your result"
    atol: float
    rtol: float
    factors: dict
    explain_difference: dict
    diagnoses: tuple
    who: str = "yours"  # the learner's function in a sentence: "your embed"
    inputs: tuple = ()  # (name, dtype) of the case's float arguments: what a result's dtype follows


def _close(a: torch.Tensor, b: torch.Tensor, ctx: _Context, loose: float = 10.0) -> bool:
    """Equal up to the check's tolerance (a little looser for recognising a mistake)."""
    if a.shape != b.shape:
        return False
    if a.is_floating_point() or b.is_floating_point():
        return torch.allclose(a.double(), b.double(), atol=ctx.atol * loose, rtol=ctx.rtol * loose,
                              equal_nan=True)
    return torch.equal(a, b)


def _named(c: float, factors: dict) -> str:
    """' (= √head_dim)' when the factor found is one the exercise named (or its inverse)."""
    for fname, v in factors.items():
        if math.isclose(c, v, rel_tol=1e-3):
            return f" (= {fname})"
        if v and math.isclose(c, 1 / v, rel_tol=1e-3):
            return f" (= 1/{fname})"
    return ""


def _causal(mask: torch.Tensor) -> bool:
    """True for the causal mask of minitf: True strictly above the diagonal, False elsewhere."""
    if mask.ndim < 2 or mask.size(-1) != mask.size(-2) or mask.size(-1) < 2:
        return False
    T = mask.size(-1)
    return bool((mask == causal_mask(T)).all())


def _rows_sum_to_1(x: torch.Tensor) -> bool:
    return bool(x.ndim >= 1 and x.size(-1) >= 2 and x.is_floating_point()
                and torch.isfinite(x).all() and (x >= -1e-6).all()
                and torch.allclose(x.sum(-1).double(), torch.ones(()).double(), atol=1e-4))


# Each diagnosis looks at a result of the right shape and dtype that differs from the expected one;
# it returns (key, the mistake in words), or None when the difference does not have its signature.

def _dimension_order(got, exp, ctx):
    """The right numbers with two or more dimensions in another order (a transpose, a wrong permute)."""
    if exp.ndim < 2 or exp.ndim > 5 or got.ndim != exp.ndim:
        return None
    for order in itertools.permutations(range(exp.ndim)):
        if list(order) == list(range(exp.ndim)):
            continue
        moved = exp.permute(order)
        if moved.shape == got.shape and _close(got, moved, ctx, loose=1.0):
            if list(order) == list(range(exp.ndim - 2)) + [exp.ndim - 1, exp.ndim - 2]:
                text = "yours is the transpose of the expected one (its last two dimensions swapped)"
                if exp.dtype == torch.bool and _causal(exp):
                    text += ": it hides the past and leaves the future open"
                return "transpose", text
            return ("dimension_order", f"yours has the right numbers with its dimensions in another "
                    f"order: it equals the expected result .permute{tuple(order)}")
    return None


def _slot_order(got, exp, ctx):
    """Along one dimension, each slice of yours is a slice of the expected result: its order."""
    for dim in reversed(range(exp.ndim)):
        n = exp.size(dim)
        if n < 2 or n > SLOTS_MAX:
            continue
        order, used = [], set()
        for i in range(n):
            j = next((j for j in range(n) if j not in used
                      and _close(got.select(dim, i), exp.select(dim, j), ctx)), None)
            if j is None:
                break
            order.append(j)
            used.add(j)
        if len(order) == n and order != list(range(n)):
            where = "the last dimension" if dim == exp.ndim - 1 else f"dimension {dim}"
            return dim, where, order
    return None


def _permutation(got, exp, ctx):
    """The same multiset of values as expected, in other places (cat for stack, halves for pairs)."""
    if exp.dtype == torch.bool or exp.numel() < 2:
        return None
    if not _close(got.flatten().sort().values, exp.flatten().sort().values, ctx):
        return None
    found = _slot_order(got, exp, ctx)
    if found:
        dim, where, order = found
        shown = order if len(order) <= 16 else order[:16] + ["…"]
        return "permutation", (f"yours holds the right values in the wrong slots: along {where}, your "
                               f"index i holds what the expected result has at index order[i], "
                               f"order = {shown}")
    moved = int((~torch.isclose(got.double(), exp.double(), atol=ctx.atol, rtol=ctx.rtol)).sum())
    sorted_gap = (got.double().flatten().sort().values - exp.double().flatten().sort().values).abs().max()
    if moved < 2 or (got.double() - exp.double()).abs().max() < 10 * sorted_gap:
        return None  # one entry cannot move alone, and a near-miss is not a reordering
    return "permutation", (f"yours holds the right values in the wrong slots: the same "
                           f"{exp.numel()} numbers as the expected result, {moved} of them elsewhere")


def _constant_factor(got, exp, ctx):
    """got ≈ c · expected for one c: a missing or extra scale (√d, k, …), or a flipped sign."""
    e, g = exp.double(), got.double()
    if not (torch.isfinite(e).all() and torch.isfinite(g).all()) or (e * e).sum() == 0:
        return None
    c = float((g * e).sum() / (e * e).sum())
    if math.isclose(c, 1, rel_tol=1e-3) or not _close(g, c * e, ctx):
        return None
    if abs(c) < 1e-9:
        return "factor", "yours is all zeros"
    if math.isclose(c, -1, rel_tol=1e-3):
        return "factor", "yours has the opposite sign everywhere: it is −1 × the expected one"
    return "factor", f"every entry of {ctx.label} is {c:.4g} × the expected one{_named(c, ctx.factors)}"


def _constant_offset(got, exp, ctx):
    """got ≈ expected + b for one b."""
    diff = (got.double() - exp.double())
    if not torch.isfinite(diff).all():
        return None
    b = float(diff.mean())
    if abs(b) <= ctx.atol or not _close(got.double(), exp.double() + b, ctx):
        return None
    more = "more" if b > 0 else "less"
    return "offset", (f"every entry of {ctx.label} is {_value(abs(b))} {more} than the expected one "
                      f"(a constant offset of {b:+.6g})")


def _not_finite(got, exp, ctx):
    bad = ~torch.isfinite(got) & torch.isfinite(exp)
    if not bad.any():
        return None
    idx = tuple(bad.nonzero()[0].tolist())
    return "not_finite", (f"yours holds {_value(got[idx])} at {int(bad.sum())} entries "
                          f"(first at index {_index(idx)}) where the expected values are finite")


def _rows(got, exp, ctx):
    """Weights that should be a softmax over the last dimension and are not."""
    if not _rows_sum_to_1(exp) or _rows_sum_to_1(got):
        return None
    sums = got.double().sum(-1)
    bad = ~torch.isclose(sums, torch.ones_like(sums), atol=1e-4)
    if not bad.any():
        return None  # the rows sum to 1, but some weights are negative: not this mistake
    idx = tuple(bad.nonzero()[0].tolist())
    text = (f"row {_index(idx)} of {ctx.label} sums to {float(sums[idx]):.3g}, not 1 "
            f"(every row of the expected one sums to 1)")
    if got.ndim >= 2 and _rows_sum_to_1(got.transpose(-2, -1)):
        return "softmax_over_wrong_dim", (text + "; your columns sum to 1 instead: the softmax ran "
                                          "over dim -2, not over the last dimension")
    return "rows_not_summing_to_1", text


def _future_leak(got, exp, ctx):
    """Attention weights that look ahead where the expected ones are lower-triangular."""
    if exp.ndim < 2 or exp.size(-1) != exp.size(-2) or exp.size(-1) < 2:
        return None
    above = causal_mask(exp.size(-1))
    if (exp[..., above].abs() > ctx.atol).any() or not (exp.abs() > ctx.atol).any():
        return None
    leak = (got.abs() > ctx.atol) & above
    if not leak.any():
        return None
    idx = tuple(leak.nonzero()[0].tolist())
    i, j = idx[-2:]
    return "future_leak", (f"yours is not zero above the diagonal: at index {_index(idx)} yours is "
                           f"{_value(got[idx])}, so position {i} takes weight from position {j}, which "
                           f"comes after it (the expected weights are 0 above the diagonal)")


def _scaled_scores(got, exp, ctx):
    """Softmax weights of scores c times the expected ones (a missing or doubled 1/√head_dim)."""
    if not (_rows_sum_to_1(exp) and _rows_sum_to_1(got)) or not torch.equal(got > 1e-12, exp > 1e-12):
        return None
    support = exp > 1e-12
    n = support.sum(-1, keepdim=True).clamp_min(1)

    def centred_log(x):  # log-weights minus their row mean: the scores up to a constant per row
        logs = torch.where(support, x.double().clamp_min(1e-300).log(), 0.0)
        return torch.where(support, logs - logs.sum(-1, keepdim=True) / n, 0.0)

    lg, le = centred_log(got), centred_log(exp)
    if float((le * le).sum()) < 1e-12:
        return None
    c = float((lg * le).sum() / (le * le).sum())
    if math.isclose(c, 1, rel_tol=1e-3) or not torch.allclose(lg, c * le, atol=1e-4):
        return None
    return "scores_scaled", (f"yours is a softmax of scores {c:.4g} × the expected scores"
                             f"{_named(c, ctx.factors)}: check how the scores are scaled")


def _padding(got, exp, ctx):
    """Right everywhere except where the expected result holds a fill value, filled with another."""
    wrong = got != exp
    if int(wrong.sum()) < 2:
        return None
    expected_values, got_values = exp[wrong].unique(), got[wrong].unique()
    if len(expected_values) != 1 or len(got_values) != 1:
        return None
    p, q = expected_values.item(), got_values.item()
    if not torch.equal(wrong, exp == p):
        return None
    return "padding", (f"wherever the expected result holds {p} ({int(wrong.sum())} entries), yours "
                       f"holds {q}, and everything else is right: fill or pad with {p}, not {q}")


def _mask_inverted(got, exp, ctx):
    if exp.numel() < 2 or not torch.equal(got, ~exp):
        return None
    text = "yours is the opposite of the expected mask: True and False swapped everywhere"
    if _causal(exp):
        text += " (True should mark where a position may NOT look: its future)"
    return "mask_inverted", text


def _mask_diagonal(got, exp, ctx):
    if exp.ndim < 2 or exp.size(-1) != exp.size(-2):
        return None
    diagonal = torch.eye(exp.size(-1), dtype=torch.bool)
    wrong = got != exp
    if (wrong & ~diagonal).any():
        return None
    if got[wrong].all():
        text = "yours also masks the diagonal (True at (i, i)), where the expected mask is False"
        if not exp[..., diagonal].any():
            text += ": a position may look at itself"
        return "mask_diagonal", text
    return "mask_diagonal", "yours leaves the diagonal open (False at (i, i)), where the expected mask is True"


def _mask_future_open(got, exp, ctx):
    if not _causal(exp):
        return None
    T = exp.size(-1)
    open_ = exp & ~got
    if not open_.any():
        return None
    idx = tuple(open_.nonzero()[0].tolist())
    i, j = idx[-2:]
    text = (f"yours leaves the future open: it is False at {_index(idx)}, so position {i} may "
            f"look at position {j}, which comes after it")
    past = got & ~causal_mask(T)
    if past.any():
        text += "; and it hides some of the past (True at or below the diagonal)"
    return "mask_future_open", text


_BOOL_DIAGNOSES = (_mask_inverted, _dimension_order, _mask_diagonal, _mask_future_open)
_INT_DIAGNOSES = (_dimension_order, _permutation, _padding, _constant_factor, _constant_offset)
_FLOAT_DIAGNOSES = (_not_finite, _dimension_order, _permutation, _constant_factor, _constant_offset,
                    _rows, _future_leak, _scaled_scores)


def _diagnose(got, exp, ctx) -> tuple[str, str] | None:
    """The first recognised mistake: the exercise's own diagnoses first, then the built-in ones."""
    for fn in ctx.diagnoses:
        text = fn(got, exp)
        if text:
            return fn.__name__, text
    kind = (_BOOL_DIAGNOSES if exp.dtype == torch.bool
            else _FLOAT_DIAGNOSES if exp.is_floating_point() or exp.is_complex() else _INT_DIAGNOSES)
    for fn in kind:
        found = fn(got, exp, ctx)
        if found:
            return found
    return None


def _dtype_name(dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _inputs_phrase(inputs) -> tuple[str, str]:
    """("a float32 table", "the table's") or ("float32 q, k and v", "their") for the dtype advice."""
    names = [name for name, _ in inputs]
    dtype = _dtype_name(inputs[0][1])
    if len(names) == 1:  # "the table's", but "x's"
        return f"a {dtype} {names[0]}", f"{'the ' if len(names[0]) > 1 else ''}{names[0]}'s"
    listed = ", ".join(names[:-1]) + " and " + names[-1]
    return f"{dtype} {listed}", "their"


def _dtype_changed(got, exp, ctx) -> str | None:
    """'your embed returns float64 for a float32 table: keep the table's dtype', when the expected
    result has the dtype of all the float inputs and yours another float dtype."""
    dtypes = {d for _, d in ctx.inputs}
    if not (got.is_floating_point() and exp.is_floating_point() and dtypes == {exp.dtype}):
        return None
    given, keep = _inputs_phrase(ctx.inputs)
    return (f"{ctx.who} returns {_dtype_name(got.dtype)} for {given}: keep {keep} dtype (a .double(), "
            f".float() or dtype=torch.{_dtype_name(got.dtype)} inside fixes it to "
            f"{_dtype_name(got.dtype)})")


def _tensor_finding(got, exp, ctx) -> _Finding | None:
    if not isinstance(got, torch.Tensor):
        return _Finding(f"expected {_describe(exp)}, got {_describe(got)}"
                        + (": is a `return` missing?" if got is None else ""), "type")
    if got.device != exp.device:  # before anything compares values: tensors on two devices cannot
        return _Finding(f"device {got.device}, expected {exp.device}", "device",
                        f"{ctx.who} returns a tensor on {got.device}; keep the inputs' device: a new "
                        f"tensor takes device=x.device (or torch.zeros_like, torch.empty_like)")
    if got.shape != exp.shape:
        finding = _Finding(f"shape {tuple(got.shape)}, expected {tuple(exp.shape)}", "shape")
        found = _dimension_order(got, exp, ctx)
        if found:
            finding.diagnosis, finding.explanation = found
        elif got.numel() == exp.numel() and _close(got.reshape(exp.shape), exp, ctx):
            finding.explanation = (f"the right numbers in the right order: reshape (view) yours to "
                                   f"{tuple(exp.shape)}")
        elif [s for s in got.shape if s != 1] == [s for s in exp.shape if s != 1]:
            finding.explanation = "a dimension of size 1 is missing or extra (keepdim=True?)"
        return finding
    if got.dtype != exp.dtype:
        finding = _Finding(f"dtype {got.dtype}, expected {exp.dtype}", "dtype")
        changed = _dtype_changed(got, exp, ctx)
        if changed:
            finding.diagnosis, finding.explanation = "dtype_changed", changed
        elif _close(got.to(exp.dtype), exp, ctx, loose=1.0):
            finding.explanation = f"the values are right: make the result {exp.dtype}"
        return finding
    if exp.dtype == torch.bool or not (exp.is_floating_point() or exp.is_complex()):
        wrong = got != exp
    else:
        wrong = ~torch.isclose(got, exp, atol=ctx.atol, rtol=ctx.rtol, equal_nan=True)
    if not wrong.any():
        return None
    idx = tuple(wrong.nonzero()[0].tolist())
    finding = _Finding(f"{int(wrong.sum())} of {wrong.numel()} entries differ; first at index {idx}: "
                       f"got {_value(got[idx])}, expected {_value(exp[idx])}")
    found = _diagnose(got, exp, ctx)
    if found:
        finding.diagnosis, finding.explanation = found
    if exp.dtype == torch.bool:
        finding.more = _mask_grids(got, exp)
    return finding


def _number_finding(got, exp, ctx) -> _Finding | None:
    if isinstance(got, torch.Tensor) and got.numel() == 1:
        got = got.item()
    if not isinstance(got, (bool, int, float)):
        return _Finding(f"expected {_describe(exp)}, got {_describe(got)}"
                        + (": is a `return` missing?" if got is None else ""), "type")
    if isinstance(exp, bool) or isinstance(got, bool):
        return None if got == exp else _Finding(f"got {_value(got)}, expected {_value(exp)}")
    if isinstance(exp, int):
        if got == exp:
            return None
        d = got - exp
        return _Finding(f"got {_value(got)}, expected {exp}; yours − expected = {_value(d)}",
                        "count_difference", ctx.explain_difference.get(d, ""))
    if math.isclose(got, exp, abs_tol=ctx.atol, rel_tol=ctx.rtol):
        return None
    finding = _Finding(f"got {_value(got)}, expected {_value(exp)}")
    named = _named(got / exp, ctx.factors) if exp else ""
    if named:
        finding.diagnosis, finding.explanation = "factor", f"yours is {got / exp:.4g} × the expected value{named}"
    return finding


def _differs(got, exp) -> bool:
    try:
        return bool(got != exp)
    except Exception:  # e.g. a tensor of several entries compared with a list
        return True


def _finding(got, exp, ctx) -> _Finding | None:
    if isinstance(exp, torch.Tensor):
        return _tensor_finding(got, exp, ctx)
    if isinstance(exp, (bool, int, float)):
        return _number_finding(got, exp, ctx)
    if not _differs(got, exp):
        return None
    finding = _Finding(f"got {_short(got)}, expected {_short(exp)}")
    for fn in ctx.diagnoses:  # the exercise's own diagnoses may look at any kind of result
        text = fn(got, exp)
        if text:
            finding.diagnosis, finding.explanation = fn.__name__, text
            break
    return finding


def _swapped(got, expected, ctx) -> tuple[int, int] | None:
    """(i, j) when your result i is the expected result j and the other way round."""
    same = lambda g, e: _finding(g, e, ctx) is None
    for i, j in itertools.combinations(range(len(expected)), 2):
        if not same(got[i], expected[i]) and same(got[i], expected[j]) and same(got[j], expected[i]):
            return i, j
    return None


def _findings(got, expected, ctx: _Context, result_names) -> list[tuple[str, _Finding]]:
    """(which result, what is wrong with it) for every result that differs."""
    if not isinstance(expected, (tuple, list)):
        found = _finding(got, expected, ctx)
        return [("", found)] if found else []
    names = f" ({', '.join(result_names)})" if result_names else ""
    if not isinstance(got, (tuple, list)) or len(got) != len(expected):
        return [("", _Finding(f"expected {len(expected)} results{names}, got {_describe(got)}", "type"))]
    swapped = _swapped(got, expected, ctx)
    if swapped:
        i, j = swapped
        order = f": return ({', '.join(result_names)}) in this order" if result_names else ""
        return [("", _Finding(f"your {_ordinal(i + 1)} and {_ordinal(j + 1)} results are swapped{order}",
                              "results_swapped"))]
    out = []
    for i, (g, e) in enumerate(zip(got, expected)):
        title = f"your {_ordinal(i + 1)} result"
        if result_names:
            title = f"{result_names[i]} ({title})"
        label = f"your {result_names[i]}" if result_names else f"your {_ordinal(i + 1)} result"
        found = _finding(g, e, dataclasses.replace(ctx, label=label))
        if found:
            out.append((title, found))
    return out



def compare(name: str, got, expected, atol: float = 1e-5, rtol: float = 1e-4, hint: str = "", *,
            result_names: tuple[str, ...] | None = None, factors: dict | None = None,
            explain_difference: dict | None = None, hints_by_diagnosis: dict | None = None,
            diagnoses: tuple[Callable, ...] = ()) -> None:
    """Raise ExerciseError explaining how `got` differs from `expected` (tensors, numbers, tuples).

    The keyword options are what an exercise knows about its typical mistakes (see check_function).
    """
    ctx = _Context("your result", atol, rtol, factors or {}, explain_difference or {}, tuple(diagnoses))
    findings = _findings(got, expected, ctx, result_names)
    if findings:
        raise _message(name, findings, hint, hints_by_diagnosis)
