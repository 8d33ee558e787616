"""How a check tells the learner what is wrong: ExerciseError, the keys of the mistakes
recognised (DIAGNOSES), compact descriptions of values and arguments, and the hint lines."""
from __future__ import annotations

import dataclasses
import inspect

import torch


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
