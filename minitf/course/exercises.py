"""The course's exercises: what each teaches, how hard it is, the cases it is checked on.

`minitf.exercise("apply_rope", my_apply_rope)` runs the learner's function against minitf's own on
the exercise's cases and prints what is wrong in words (never a traceback). When it passes, a piece
of the model is saved (`minitf.parts.save`) so notebook 08 can build a model from the learner's code.
The exercises are declared in `minitf.course.lessons` (one module per notebook; the declaration
type and the notebook cell contract are `minitf.course.declaration.Exercise`), not in the notebooks,
so a notebook cell is one line and the tests run the very same checks on `minitf.solutions`. This
module runs them.

Every case runs in float64 and again in float32 (the dtype a model trains in), so a piece must keep
its inputs' dtype. Each exercise also names the library functions it re-creates (`library`): a
function that calls one of them (F.layer_norm for LayerNorm, minitf.make_batch for the batch) is
refused, and `own_work` says which calls are fine instead.
"""
from __future__ import annotations

import functools
import inspect
from typing import Callable

from .declaration import Exercise  # noqa: F401  (the declaration type, where it was before)
from .feedback import ExerciseError, check_function, check_property
from .lessons import EXERCISES
from .my_parts import calling, save


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
    chosen = {}
    for name, fn in pieces.items():
        ok = passes(name, fn)
        chosen[name] = fn if ok else EXERCISES[name].solution
        print(f"{name:<15} {'yours' if ok else 'the reference solution (yours does not pass its check yet)'}")
    return chosen


def optional_stand_ins(fn: Callable) -> dict[str, Callable]:
    """{"my_<piece>": the library's own} for each optional exercise (`Exercise.optional`) that `fn`
    calls by its exercise's name while the function under that name does not compute the piece (not
    written, or wrong): a learner's train_step calls my_clip_gradients, and skipping the optional
    clipping must not fail the required step. The library's own is the declaration's `reference`."""
    code, names = getattr(fn, "__code__", None), getattr(fn, "__globals__", {})
    stand_ins = {}
    for piece, ex in EXERCISES.items():
        called = f"my_{piece}"
        if not ex.optional or code is None or called not in code.co_names:
            continue
        current = names.get(called)
        try:
            run_check(piece, current, own_work=False)
        except (ExerciseError, TypeError):  # TypeError: the name is not a function at all
            stand_ins[called] = ex.reference
    return stand_ins


def exercise(name: str, fn: Callable) -> None:
    """Check a learner's function and print the outcome; on success save it for notebook 08. An
    optional piece it calls that is not written yet is the library's own in the check (one line
    says so); a saved piece gets the same stand-in where notebook 08 loads it (my_parts.load_saved)."""
    if name not in EXERCISES:
        raise KeyError(f"no exercise {name!r}; the course's exercises: {', '.join(EXERCISES)}")
    stand_ins = optional_stand_ins(fn)
    try:
        message = run_check(name, calling(fn, **stand_ins) if stand_ins else fn)
    except ExerciseError as e:
        print(e)
        return
    for called in stand_ins:
        message += (f"\n  {called} is optional and yours does not pass its check yet: this check ran "
                    f"yours with the library's {called.removeprefix('my_')} in its place")
    fills = EXERCISES[name].fills
    if EXERCISES[name].answer_name:  # a class exercise: its classes join your file, my_parts/model.py
        from . import learner_file
        path = learner_file.save_classes(name, fn)
        message += (f"\n  saved to {path.parent.name}/{path.name}: minitf.parts.model_file() puts it in "
                    f"your file, {path.parent.name}/{learner_file.FILE_NAME}, which notebook 08 trains"
                    if path else "\n  (its source was not found: define it in a cell to have it saved)")
    if fills:
        path = save(name, fn)
        use = ("notebook 08 trains your model with it" if fills == "training"
               else "notebook 08 builds your model from it")
        message += (f"\n  saved to {path.parent.name}/{path.name}: {use}"
                    if path else "\n  (write it with `def` to have notebook 08 build your model from it)")
    print(message)


def solution_markdown(name: str) -> str:
    """The collapsed "Solution" block a notebook shows after exercise `name` (tests compare them)."""
    ex = EXERCISES[name]
    shown = ex.shows or (ex.solution,)
    source = "\n\n\n".join(inspect.getsource(part).rstrip() for part in shown)
    return f"<details><summary>Solution</summary>\n\n```python\n{source}\n```\n\n</details>"


# --- the training core (notebook 08) ---------------------------------------------------------------

def _driven(drive: Callable, fn: Callable) -> Callable:
    """fn run through its exercise's driver: the case's arguments go to the driver."""
    def run(*case):
        return drive(fn, *case)
    run.__name__ = getattr(fn, "__name__", "your function")
    return run
