"""Checks for the notebooks' exercises: compare a learner's function with minitf's own and say
in words what differs (shape, dtype, which entries, by how much), never a bare AssertionError."""
from __future__ import annotations

import torch


class ExerciseError(AssertionError):
    """Raised when a learner's answer is wrong; the message explains how."""


def _describe(x) -> str:
    if isinstance(x, torch.Tensor):
        return f"tensor of shape {tuple(x.shape)} and dtype {x.dtype}"
    return f"{type(x).__name__} {x!r}"


def compare(name: str, got, expected, atol: float = 1e-5, rtol: float = 1e-4, hint: str = "") -> None:
    """Raise ExerciseError explaining how `got` differs from `expected` (tensors, numbers, tuples)."""
    tail = f"\nHint: {hint}" if hint else ""
    if isinstance(expected, (tuple, list)):
        if not isinstance(got, (tuple, list)) or len(got) != len(expected):
            raise ExerciseError(f"{name}: expected {len(expected)} results, got {_describe(got)}{tail}")
        for i, (g, e) in enumerate(zip(got, expected)):
            compare(f"{name}[{i}]", g, e, atol, rtol, hint)
        return
    if isinstance(expected, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            raise ExerciseError(f"{name}: expected a {_describe(expected)}, got {_describe(got)}{tail}")
        if got.shape != expected.shape:
            raise ExerciseError(f"{name}: shape {tuple(got.shape)}, expected {tuple(expected.shape)}{tail}")
        if got.dtype != expected.dtype:
            raise ExerciseError(f"{name}: dtype {got.dtype}, expected {expected.dtype}{tail}")
        if expected.dtype == torch.bool or not expected.is_floating_point():
            wrong = got != expected
        else:
            wrong = ~torch.isclose(got, expected, atol=atol, rtol=rtol, equal_nan=True)
        if wrong.any():
            idx = tuple(wrong.nonzero()[0].tolist())
            raise ExerciseError(
                f"{name}: {int(wrong.sum())} of {wrong.numel()} entries differ; first at index {idx}: "
                f"got {got[idx].item():.6g}, expected {expected[idx].item():.6g}{tail}")
        return
    if isinstance(expected, float):
        if not isinstance(got, (int, float)) or abs(got - expected) > atol + rtol * abs(expected):
            raise ExerciseError(f"{name}: got {got!r}, expected {expected!r}{tail}")
        return
    if got != expected:
        raise ExerciseError(f"{name}: got {got!r}, expected {expected!r}{tail}")


def check_function(learner_fn, reference_fn, cases, name: str | None = None, hint: str = "",
                   atol: float = 1e-5) -> str:
    """Call both functions on every case (a tuple of arguments) and compare the results.

    Returns a short success message; raises ExerciseError naming the first failing case.
    """
    name = name or getattr(learner_fn, "__name__", "your function")
    for i, args in enumerate(cases):
        args = args if isinstance(args, tuple) else (args,)
        try:
            got = learner_fn(*args)
        except NotImplementedError:
            raise ExerciseError(f"{name} is not written yet: replace the `raise NotImplementedError`") from None
        except Exception as e:
            raise ExerciseError(f"{name} raised {type(e).__name__}: {e} on case {i} "
                                f"({', '.join(_describe(a) for a in args)})") from e
        compare(f"{name} on case {i}", got, reference_fn(*args), atol=atol, hint=hint)
    return f"✓ {name} agrees with minitf on {len(cases)} cases"
