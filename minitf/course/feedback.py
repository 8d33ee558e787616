"""Checks for the notebooks' exercises: compare a learner's function with minitf's own and say
in words what differs, never a bare AssertionError.

A message names the failing case with its arguments, each wrong result by name, the evidence
("3 of 12 entries differ; first at index …") and, when the difference has the signature of a
common mistake, that mistake in words (a transpose, right values in wrong slots, a constant factor,
rows of weights not summing to 1, a mask that hides the diagonal, …). Each recognised mistake has a
key (see `DIAGNOSES`), so an exercise can attach a hint to it: a static hint is often about another
mistake than the one the learner made.

Every case runs in float64 and again in float32 (a model trains in float32): a result must keep its
inputs' dtype and device, not only their values. And a function may be refused for what it calls:
an exercise names the library functions it asks the learner to re-create (`library`), and a
function that reaches one of them, under any name, is not accepted as the learner's own work
(see `_LibraryWatch`).
"""
from __future__ import annotations

import copy
import dataclasses
import difflib
import dis
import inspect
import itertools
import linecache
import math
import os
import sys
import types
from dataclasses import dataclass, field
from typing import Callable

import torch

from ..core.attention import causal_mask

# The keys of the mistakes recognised, for `hints_by_diagnosis` (and ExerciseError.diagnoses).
DIAGNOSES = {
    "not_written": "the function still raises NotImplementedError",
    "raised": "the function raised an exception",
    "missing_name": "a name the function uses is not defined where it runs (a missing import)",
    "changed_input": "the function changed one of its arguments in place",
    "type": "a result of the wrong kind (None, a number for a tensor, too few results)",
    "shape": "a tensor of the wrong shape",
    "dtype": "a tensor of the wrong dtype",
    "dtype_changed": "a float result in another dtype than its float inputs (float64 out of float32 in), "
                     "or a function that works in float64 and raises in float32",
    "device": "a tensor on another device than the expected one",
    "library_call": "a call to the library function the exercise asks to re-create",
    "dimension_order": "the right numbers with the dimensions in another order",
    "transpose": "the right numbers with the last two dimensions swapped",
    "permutation": "the right values in the wrong slots",
    "factor": "every entry off by the same factor",
    "offset": "every entry off by the same amount",
    "not_finite": "inf or nan where the expected values are finite",
    "rows_not_summing_to_1": "weights whose rows do not sum to 1",
    "softmax_over_wrong_dim": "weights whose columns sum to 1 instead of their rows",
    "future_leak": "non-zero weights above the diagonal (looking into the future)",
    "scores_scaled": "softmax weights of scores multiplied by a constant",
    "padding": "the right values except where the expected result holds a fill value",
    "count_difference": "a whole number off by some amount",
    "results_swapped": "two results returned in each other's place",
    "mask_inverted": "a bool mask with True and False swapped",
    "mask_diagonal": "a bool mask that differs only on the diagonal",
    "mask_future_open": "a causal mask that leaves some future positions open",
    "wrong_job": "a piece with many right forms that does not do the job its exercise names "
                 "(checked by what it must do, not against one answer)",
}

GRID_MAX = 8  # bool masks up to 8 × 8 are printed in full, yours beside the expected one
SLOTS_MAX = 64  # a dimension this long at most is searched for entries in the wrong slots


class ExerciseError(AssertionError):
    """Raised when a learner's answer is wrong; the message explains how.

    `diagnoses` holds the keys of the mistakes recognised (see DIAGNOSES), first one first.
    """

    def __init__(self, message: str, diagnoses: tuple[str, ...] = ()):
        super().__init__(message)
        self.diagnoses = tuple(diagnoses)


# --- describing values compactly -------------------------------------------------------------

def _value(x) -> str:
    """One number as a learner reads it: True/False, 2648, 0.717871."""
    if isinstance(x, torch.Tensor):
        x = x.item()
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, float):
        return f"{x:.6g}"
    return repr(x)


def _nested(values, fmt) -> str:
    if isinstance(values, list):
        return "[" + ", ".join(_nested(v, fmt) for v in values) + "]"
    return fmt(values)


def _short(x, limit: int = 72) -> str:
    """An argument in a few characters: small tensors in full, big ones as shape and dtype."""
    if isinstance(x, torch.Tensor):
        if x.numel() <= 8:
            fmt = (lambda v: f"{v:.3g}") if x.is_floating_point() else str
            return f"tensor({_nested(x.tolist(), fmt)})"
        return f"tensor {tuple(x.shape)} {str(x.dtype).removeprefix('torch.')}"
    if isinstance(x, torch.nn.Module):
        return f"{type(x).__name__} with {sum(p.numel() for p in x.parameters()):,} parameters"
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        text = _dataclass(x)
    elif type(x) in (list, tuple) and x:  # not a named tuple: those have their own repr
        inner = ", ".join(_short(v, limit) for v in x)
        text = f"[{inner}]" if isinstance(x, list) else f"({inner})"
        if len(text) > limit:
            kinds = "/".join(sorted({type(v).__name__ for v in x}))
            text = f"{type(x).__name__} of {len(x)} {kinds}"
    else:
        text = repr(x)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _dataclass(x) -> str:
    """`Config(d_model=8, n_heads=2)`: only the fields that differ from the defaults."""
    try:
        default = type(x)()
    except TypeError:
        default = None
    changed = [f"{f.name}={getattr(x, f.name)!r}" for f in dataclasses.fields(x)
               if default is None or getattr(x, f.name) != getattr(default, f.name)]
    return f"{type(x).__name__}({', '.join(changed)})"


def _describe(x) -> str:
    if isinstance(x, torch.Tensor):
        return f"a tensor of shape {tuple(x.shape)} and dtype {x.dtype}"
    if x is None:
        return "None"
    return f"{type(x).__name__} {_short(x)}"


def _arguments(fns, args: tuple, kwargs: dict) -> str:
    """`T=5` / `q=tensor (1, 1, 3, 4) float32, k=…`, named after the first function that names them."""
    shown = []
    for fn in fns:
        try:
            bound = inspect.signature(fn).bind(*args, **kwargs)
        except (TypeError, ValueError):
            continue
        parts, named = [], True
        for pname, value in bound.arguments.items():
            kind = bound.signature.parameters[pname].kind
            if kind is inspect.Parameter.VAR_POSITIONAL:
                parts += [_short(v) for v in value]
                named = named and not value
            elif kind is inspect.Parameter.VAR_KEYWORD:
                parts += [f"{k}={_short(v)}" for k, v in value.items()]
            else:
                parts.append(f"{pname}={_short(value)}")
        if named:
            return ", ".join(parts)
        shown.append(", ".join(parts))
    return shown[0] if shown else ", ".join([_short(a) for a in args]
                                            + [f"{k}={_short(v)}" for k, v in kwargs.items()])


def _ordinal(i: int) -> str:
    return {1: "1st", 2: "2nd", 3: "3rd"}.get(i, f"{i}th")


def _index(idx) -> str:
    return str(idx[0]) if len(idx) == 1 else str(tuple(idx))


def _mask_grids(got: torch.Tensor, expected: torch.Tensor) -> list[str]:
    """Both masks side by side as 1/· grids, when they are small enough to read at a glance."""
    g, e = got, expected
    while g.ndim > 2 and g.size(0) == 1:  # (1, 1, T, T) → (T, T)
        g, e = g[0], e[0]
    if g.ndim == 1:
        g, e = g[None], e[None]
    if g.ndim != 2 or max(g.shape) > GRID_MAX:
        return []
    rows = lambda m: [" ".join("1" if v else "·" for v in row) for row in m.tolist()]
    width = max(len(rows(e)[0]), 8) + 3
    lines = [f"{'yours':<{width}}{'expected':<{width}}(1 = True, · = False)"]
    lines += [f"{a:<{width}}{b}" for a, b in zip(rows(g), rows(e))]
    return lines


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


def _message(header: str, findings, hint: str, hints_by_diagnosis: dict) -> ExerciseError:
    keys = tuple(f.diagnosis for _, f in findings if f.diagnosis)
    lines = []
    for title, f in findings:
        lines.append(f"{title}: {f.evidence}" if title else f.evidence)
        if f.explanation:
            lines.append("  " + f.explanation[:1].upper() + f.explanation[1:])
        lines += ["  " + line for line in f.more]
    if len(findings) == 1 and not findings[0][0]:
        text = f"{header}: {lines[0]}" + "".join("\n" + line for line in lines[1:])
    else:
        text = f"{header}:" + "".join("\n  " + line for line in lines)
    return ExerciseError(text + _hint(keys, hint, hints_by_diagnosis), keys)


def _hint(keys, hint: str, hints_by_diagnosis: dict | None) -> str:
    """The hint for the first recognised mistake the exercise has one for, else the general hint."""
    for key in keys:
        if hints_by_diagnosis and key in hints_by_diagnosis:
            return f"\nHint: {hints_by_diagnosis[key]}"
    return f"\nHint: {hint}" if hint else ""


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


def _unchanged(a, b) -> bool:
    """Deep equality of arguments, to notice a function that changed its input in place."""
    if isinstance(a, torch.Tensor):
        return (isinstance(b, torch.Tensor) and a.shape == b.shape and a.dtype == b.dtype
                and bool(((a == b) | (a != a) & (b != b)).all()))  # nan equals nan here
    if isinstance(a, torch.nn.Module):
        sa, sb = a.state_dict(), b.state_dict()
        return sa.keys() == sb.keys() and all(_unchanged(sa[k], sb[k]) for k in sa)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_unchanged(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_unchanged(a[k], b[k]) for k in a)
    return not _differs(a, b)


def _positional_names(fns, n: int) -> list[str]:
    """The names of n positional arguments, from the first function that names them all."""
    for fn in fns:
        try:
            params = [p.name for p in inspect.signature(fn).parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        except (TypeError, ValueError):
            continue
        if len(params) >= n:
            return params
    return [f"argument {i + 1}" for i in range(n)]


def _changed(fns, before, after) -> str:
    """Which arguments the learner's function changed in place: "its argument `x`", or ""."""
    (args0, kwargs0), (args1, kwargs1) = before, after
    names = _positional_names(fns, len(args1))
    changed = [names[i] for i, (a, b) in enumerate(zip(args0, args1)) if not _unchanged(a, b)]
    changed += [k for k in kwargs1 if not _unchanged(kwargs0[k], kwargs1[k])]
    if not changed:
        return ""
    return f"its argument{'s' if len(changed) > 1 else ''} " + ", ".join(f"`{c}`" for c in changed)


_LIBRARY_DIRS = (os.path.dirname(os.path.dirname(__file__)), os.path.dirname(torch.__file__))  # minitf/, torch/


def _raised_at(error: BaseException) -> str:
    """The learner's line that raised: the last one outside minitf and torch (Jupyter keeps the
    cells' sources in linecache, so this is the line as they wrote it)."""
    tb, line = error.__traceback__, ""
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if not filename.startswith(_LIBRARY_DIRS):
            line = linecache.getline(filename, tb.tb_lineno).strip() or line
        tb = tb.tb_next
    return f"\n  in the line: {line}" if line else ""


# names a learner often uses under a short alias: the import that defines each
_ALIASES = {"F": "import torch.nn.functional as F", "nn": "from torch import nn",
            "np": "import numpy as np", "plt": "import matplotlib.pyplot as plt"}


def _raising_frame(error: BaseException):
    """The innermost frame of the error's traceback: for a NameError, the code reading the name."""
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame if tb is not None else None


def _learners_missing_name(error: BaseException | None) -> bool:
    """A NameError raised in the learner's own code (not minitf's or torch's), for a name that is
    not defined at all (a local read before it is assigned is another mistake)."""
    if not isinstance(error, NameError) or isinstance(error, UnboundLocalError):
        return False
    frame = _raising_frame(error)
    return frame is not None and not frame.f_code.co_filename.startswith(_LIBRARY_DIRS)


def _missing_names(error: NameError) -> list[str]:
    """The name the NameError names, then every other global the same function reads that is not
    defined either: a learner who pastes code without its imports learns them all at once."""
    names = [error.name] if getattr(error, "name", None) else []
    frame = _raising_frame(error)
    if frame is None:
        return names
    defined = lambda n: n in frame.f_globals or n in frame.f_builtins
    codes = [frame.f_code]
    while codes:  # the function's own code and the code of what it nests (comprehensions, lambdas)
        code = codes.pop(0)
        codes += [c for c in code.co_consts if inspect.iscode(c)]
        for ins in dis.get_instructions(code):
            if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME") and not defined(ins.argval) \
                    and ins.argval not in names:
                names.append(ins.argval)
    return names


def _import_for(name: str) -> str | None:
    """The import that defines `name` in a notebook: minitf's own names, a module, a usual alias."""
    if name in _ALIASES:
        return _ALIASES[name]
    if name in sys.stdlib_module_names or name in ("torch", "numpy", "matplotlib"):
        return f"import {name}"
    minitf = sys.modules.get(__name__.split(".")[0])
    if minitf is not None and not name.startswith("_") and hasattr(minitf, name):
        return f"from {minitf.__name__} import {name}"
    if name.startswith("_"):
        return None
    modules = sorted((m for m in list(sys.modules) if m.startswith(f"{__name__.split('.')[0]}.")),
                     key=lambda m: (m.count("."), m))
    for module in modules:  # a constant or function defined in one of minitf's modules (F1, T)
        value = vars(sys.modules[module]).get(name)
        defined_here = not (inspect.isfunction(value) or inspect.isclass(value)) \
            or value.__module__ == module  # not one it imports from elsewhere
        if value is not None and not inspect.ismodule(value) and defined_here:
            return f"from {module} import {name}"
    return None


def _name_error_advice(error: NameError) -> str:
    """'add `from minitf import IGNORE`': what a learner's function lacks, by name. Replaces the
    exercise's hint, which is about the formula, not about a missing import."""
    names = _missing_names(error)
    if not names:
        return ""
    imports = {n: _import_for(n) for n in names}
    found = [n for n in names if imports[n]]
    lines = []
    if found:
        lines_by_module: dict[str, list[str]] = {}  # `from minitf import TAB, EOS` on one line
        for line in dict.fromkeys(imports[n] for n in found):
            words = line.split()
            if words[0] == "from" and len(words) == 4:
                lines_by_module.setdefault(f"from {words[1]} import ", []).append(words[3])
            else:
                lines_by_module[line] = []
        listed = "".join(f"\n    {start}{', '.join(names)}" for start, names in lines_by_module.items())
        which = ", ".join(f"`{n}`" for n in found)
        lines.append(f"{which} {'is' if len(found) == 1 else 'are'} not defined where your function "
                     f"runs: add{listed}\n  at the top of your cell (or inside the function) and run "
                     f"it again")
    frame = _raising_frame(error)
    known = [k for k in (list(frame.f_globals) + list(frame.f_code.co_varnames) if frame else [])
             if not k.startswith("_")]
    for n in names:
        if not imports[n]:
            close = difflib.get_close_matches(n, known, n=1)
            lines.append(f"`{n}` is defined nowhere your function can see it: "
                         + (f"did you mean `{close[0]}`?" if close else
                            "define it in your cell (or pass it in as an argument), or check its spelling"))
    return "\nHint: " + "\n  ".join(lines)


class _LibraryWatch:
    """Which of the `library` functions a learner's function reaches while it runs.

    The exercise's point is to re-create a function the library has (F.embedding, F.layer_norm,
    minitf.attention, minitf.make_batch, …); a function that calls it passes the check without
    being the learner's work. Looking for the call in the function's source or its `co_names`
    would miss the many ways to reach it: an alias (`from torch.nn.functional import layer_norm
    as ln`), a module that calls it (`nn.LayerNorm(C)(x)` runs F.layer_norm), a helper written in
    another cell, a lambda. Patching the library to raise would miss a name bound before the patch
    (`from minitf import attention`) and would change global state under the learner's feet.

    So the function is run under a profiler hook (`sys.setprofile`, restored afterwards) that
    sees every call that happens, whatever name reached it: a Python function by its code object
    (the 'call' event), a built-in one (torch.layer_norm, F.scaled_dot_product_attention, F.linear)
    by identity (the 'c_call' event). The first library call seen is reported, with the learner's
    line that led to it. Only the learner's call is watched, never the reference's.
    """

    def __init__(self, library: dict):
        self.codes = {f.__code__: name for f, name in library.items() if hasattr(f, "__code__")}
        self.builtins = {id(f): (f, name) for f, name in library.items() if not hasattr(f, "__code__")}
        # a tensor method (torch.Tensor.softmax) is called bound, x.softmax(-1): a new object each
        # time, so it is known by its name and its tensor instead
        self.methods = {f.__name__: name for f, name in library.items()
                        if isinstance(f, types.MethodDescriptorType) and f.__objclass__ is torch._C.TensorBase}
        self.found: tuple[str, str] | None = None  # (the library function's name, the learner's line)
        self.previous = None

    def _profile(self, frame, event, arg):
        if self.found is not None:
            return
        if event == "call":
            name, caller = self.codes.get(frame.f_code), frame.f_back
        elif event == "c_call":
            entry = self.builtins.get(id(arg))
            name, caller = (entry[1] if entry and entry[0] is arg else None), frame
            if name is None and self.methods and isinstance(getattr(arg, "__self__", None), torch.Tensor):
                name = self.methods.get(getattr(arg, "__name__", None))
        else:
            return
        if name is not None:
            self.found = (name, self._learner_line(caller))

    @staticmethod
    def _learner_line(frame) -> str:
        """The innermost line outside minitf and torch on the way to the call: the learner's."""
        while frame is not None:
            filename = frame.f_code.co_filename
            if not filename.startswith(_LIBRARY_DIRS):
                return linecache.getline(filename, frame.f_lineno).strip()
            frame = frame.f_back
        return ""

    def __enter__(self):
        self.previous = sys.getprofile()
        sys.setprofile(self._profile)
        return self

    def __exit__(self, *exc):
        sys.setprofile(self.previous)
        return False


def _refused(name: str, found: tuple[str, str], hint: str, hints_by_diagnosis: dict | None) -> ExerciseError:
    called, line = found
    return ExerciseError(
        f"{name} uses {called}, which this exercise asks you to do without: the check compares your "
        f"answer with that very code, so calling it would pass without teaching you anything. Not "
        f"accepted; the hint says what is fine to use" + (f"\n  in the line: {line}" if line else "")
        + _hint(("library_call",), hint, hints_by_diagnosis), ("library_call",))


def _float_inputs(fns, args: tuple, kwargs: dict) -> tuple:
    """(name, dtype) of each floating tensor (or module with float weights) among the arguments."""
    found = []
    for pname, value in [*zip(_positional_names(fns, len(args)), args), *kwargs.items()]:
        dtype = _float_dtype(value)
        if dtype is not None:
            found.append((pname, dtype))
    return tuple(found)


def _float_dtype(x):
    if isinstance(x, torch.Tensor):
        return x.dtype if x.is_floating_point() else None
    if isinstance(x, torch.nn.Module):
        return next((p.dtype for p in x.parameters() if p.is_floating_point()), None)
    return None


def _has_float(x, other_than) -> bool:
    """Does x hold a floating tensor (or module weight) of another dtype than `other_than`?"""
    if isinstance(x, torch.Tensor):
        return x.is_floating_point() and x.dtype != other_than
    if isinstance(x, torch.nn.Module):
        return any(t.is_floating_point() and t.dtype != other_than
                   for t in itertools.chain(x.parameters(), x.buffers()))
    if type(x) in (list, tuple):
        return any(_has_float(v, other_than) for v in x)
    if type(x) is dict:
        return any(_has_float(v, other_than) for v in x.values())
    return False


def _in_dtype(x, dtype):
    """x with every floating tensor (and module) in `dtype`; integers, bools and the rest as they are."""
    if isinstance(x, torch.Tensor):
        return x.to(dtype) if x.is_floating_point() else x
    if isinstance(x, torch.nn.Module):
        return copy.deepcopy(x).to(dtype)
    if type(x) in (list, tuple):
        return type(x)(_in_dtype(v, dtype) for v in x)
    if type(x) is dict:
        return {k: _in_dtype(v, dtype) for k, v in x.items()}
    return x


def _per_case(option, args: tuple, kwargs: dict) -> dict:
    """An option given as a dict, or as a function of the case's arguments returning one."""
    if callable(option):
        return option(*args, **kwargs) or {}
    return option or {}


def _run_learner(learner_fn, args: tuple, kwargs: dict, name: str, library: dict | None, hint: str,
                 hints_by_diagnosis: dict | None):
    """Call the learner's function under the library watch: (its result, None), or (None, the
    exception it raised) for the caller to explain. A stub, or a call to the library the exercise
    re-creates, ends the check here."""
    watch = _LibraryWatch(library or {})
    try:
        with watch:
            got = learner_fn(*args, **kwargs)
    except NotImplementedError:
        raise ExerciseError(f"{name} is not written yet: replace the `raise NotImplementedError`",
                            ("not_written",)) from None
    except Exception as e:
        if watch.found:
            raise _refused(name, watch.found, hint, hints_by_diagnosis) from None
        return None, e
    if watch.found:
        raise _refused(name, watch.found, hint, hints_by_diagnosis)
    return got, None


def check_function(learner_fn, reference_fn, cases, name: str | None = None, hint: str = "",
                   atol: float = 1e-5, *, rtol: float = 1e-4,
                   result_names: tuple[str, ...] | None = None,
                   case_names: list[str] | None = None,
                   factors: dict | Callable | None = None,
                   explain_difference: dict | Callable | None = None,
                   hints_by_diagnosis: dict | None = None,
                   diagnoses: tuple[Callable, ...] | Callable = (),
                   dtypes: tuple = (torch.float64, torch.float32),
                   library: dict | None = None) -> str:
    """Call both functions on every case and compare the results; the first failing case raises.

    cases: each a tuple of arguments, a single argument, or a dict of keyword arguments.
    result_names: names for a tuple result, e.g. ("ids", "targets"): "targets (your 2nd result)".
    case_names: a label per case ("T = 1"), shown beside the arguments.
    factors: factors worth naming, e.g. {"√head_dim": 2.0}: a result 2 × (or ½ ×) the expected
        one is reported as such. explain_difference: for whole-number answers, what a difference
        means, e.g. {-256: "the output head's bias is missing"}. Both may instead be functions of
        the case's arguments returning such a dict, when the numbers depend on the case.
    hints_by_diagnosis: a hint per recognised mistake (keys in DIAGNOSES, e.g. "transpose"); it
        replaces `hint` when that mistake is recognised, so the hint is about the learner's mistake.
    diagnoses: the exercise's own recognisers, functions (got, expected) -> str or None; the
        function's name is the diagnosis key. May instead be a function of the case's arguments
        returning such recognisers, when recognising the mistake needs the inputs (LayerNorm's γ).
    dtypes: every case runs as given, then again with its floating tensors (and modules) in each
        of these dtypes it is not already in (a float64 case once more in float32), after all the
        cases as given; a result must then have the reference's dtype and device too.
    library: {function: its name in a message} of the library functions the exercise asks to
        re-create; a learner's function that calls one (see `_LibraryWatch`) is refused.

    The reference runs on a copy of the arguments; the learner's function gets the originals and
    must not change them. Returns a short success message.
    """
    name = name or getattr(learner_fn, "__name__", "your function")
    own = name.removeprefix("my_")
    who = f"your {own}" if own.isidentifier() else "your function"
    cases = list(cases)
    runs = [(i, case, None) for i, case in enumerate(cases)]
    for dtype in dtypes:  # the same cases in another float dtype, where that changes them
        runs += [(i, _in_dtype(case, dtype), dtype) for i, case in enumerate(cases)
                 if _has_float(case, dtype)]
    unpack = lambda case: ((), case) if isinstance(case, dict) else \
        (case, {}) if isinstance(case, tuple) else ((case,), {})
    for i, case, dtype in runs:
        args, kwargs = unpack(case)
        label = f", {case_names[i]}" if case_names else ""
        label += f", in {_dtype_name(dtype)}" if dtype is not None else ""
        shown = _arguments((learner_fn, reference_fn), args, kwargs)
        header = f"{name} on case {i}{label}" + (f" ({shown})" if shown else "")
        inputs = _float_inputs((learner_fn, reference_fn), args, kwargs)
        pristine = copy.deepcopy((args, kwargs))
        expected = reference_fn(*copy.deepcopy(args), **copy.deepcopy(kwargs))
        got, e = _run_learner(learner_fn, args, kwargs, name, library, hint, hints_by_diagnosis)
        if isinstance(e, ExerciseError):  # a driver naming what the comparison cannot see
            raise ExerciseError(f"{header}: {e}" + _hint(e.diagnoses, hint, hints_by_diagnosis),
                                e.diagnoses) from None
        if _learners_missing_name(e):
            raise ExerciseError(f"{header} raised NameError: {e}{_raised_at(e)}{_name_error_advice(e)}",
                                ("missing_name",)) from e
        if e is not None:
            keys = ("raised",)
            advice = ""
            if dtype is not None and inputs:  # it passed this case as given: the dtype is what differs
                before = {_dtype_name(d) for _, d in _float_inputs((learner_fn, reference_fn),
                                                                   *unpack(cases[i]))}
                _, keep = _inputs_phrase(inputs)
                keys = ("dtype_changed", "raised")
                advice = (f"\n  {who[:1].upper() + who[1:]} passes this case in {'/'.join(sorted(before))} "
                          f"and raises in {_dtype_name(dtype)}: something in it is fixed to one dtype "
                          f"(a .double(), .float() or dtype=… inside); keep {keep} dtype")
            error = ExerciseError(f"{header} raised {type(e).__name__}: {e}{_raised_at(e)}{advice}"
                                  + _hint(keys, hint, hints_by_diagnosis), keys)
            raise error from e
        loose = 1.0 if dtype is None or dtype == torch.float64 else 10.0  # float32 keeps 24 bits
        ctx = _Context("your result", atol * loose, rtol * loose, _per_case(factors, args, kwargs),
                       _per_case(explain_difference, args, kwargs),
                       tuple(diagnoses(*pristine[0], **pristine[1]) if callable(diagnoses) else diagnoses),
                       who, inputs)
        findings = _findings(got, expected, ctx, result_names)
        changed = _changed((learner_fn, reference_fn), pristine, (args, kwargs))
        if changed:
            findings.append(("", _Finding(f"your function changed {changed} in place; work on a copy "
                                          "(x.clone(), copy.deepcopy(model)) and leave the inputs as "
                                          "they were", "changed_input")))
        if findings:
            raise _message(header, findings, hint, hints_by_diagnosis)
    return f"✓ {name} agrees with minitf on {len(cases)} cases"


def check_property(learner_fn, args: tuple, judge: Callable, name: str | None = None,
                   hint: str = "", *, library: dict | None = None,
                   hints_by_diagnosis: dict | None = None) -> str:
    """For an exercise whose answer has many right forms (a query that looks one step ahead can
    point many ways): run the learner's function once on `args`, then `judge(result)` returns the
    success line or raises ExerciseError saying which job the piece fails. Stubs, exceptions and
    library calls are reported as `check_function` reports them."""
    name = name or getattr(learner_fn, "__name__", "your function")
    got, e = _run_learner(learner_fn, args, {}, name, library, hint, hints_by_diagnosis)
    if _learners_missing_name(e):
        shown = _arguments((learner_fn,), args, {})
        raise ExerciseError(f"{name}" + (f" ({shown})" if shown else "")
                            + f" raised NameError: {e}{_raised_at(e)}{_name_error_advice(e)}",
                            ("missing_name",)) from e
    if e is not None:
        shown = _arguments((learner_fn,), args, {})
        raise ExerciseError(f"{name}" + (f" ({shown})" if shown else "")
                            + f" raised {type(e).__name__}: {e}{_raised_at(e)}"
                            + _hint(("raised",), hint, hints_by_diagnosis), ("raised",)) from e
    try:
        return f"✓ {name}: {judge(got)}"
    except ExerciseError as e:
        keys = e.diagnoses or ("wrong_job",)
        raise ExerciseError(f"{name}: {e}" + _hint(keys, hint, hints_by_diagnosis), keys) from None
