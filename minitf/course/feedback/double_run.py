"""The double run: every case runs in float64 and again in float32, a learner's function is
compared with the reference on each (check_function), or judged by what it must do
(check_property); inputs changed in place and dtype changes are reported too."""
from __future__ import annotations

import copy
import functools
import inspect
import itertools
from typing import Callable

import torch

from .formatting import ExerciseError, _arguments, _hint, _message
from .diagnoses import _Context, _Finding, _differs, _dtype_name, _findings, _inputs_phrase
from .learner_errors import _learners_missing_name, _name_error_advice, _raised_at
from .library_watch import _LibraryWatch, _refused


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


class _Recognisers:
    """An exercise's own recognisers, made from a case's arguments only when a result differs:
    making them may run every slip (a training loop's, a step's), which a passing answer never needs."""

    def __init__(self, make: Callable, args: tuple, kwargs: dict):
        self.make, self.args, self.kwargs = make, args, kwargs

    @functools.cached_property
    def made(self) -> tuple:
        return tuple(self.make(*self.args, **self.kwargs))

    def __iter__(self):
        return iter(self.made)


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
        returning such recognisers, when recognising the mistake needs the inputs (LayerNorm's γ);
        it is called only for a case whose result differs.
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
                       _Recognisers(diagnoses, *pristine) if callable(diagnoses) else tuple(diagnoses),
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
