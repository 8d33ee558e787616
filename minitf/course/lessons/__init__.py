"""The course's exercises, one module per notebook that teaches them: each module `nbNN_*.py`
declares its exercises in `EXERCISES` (`minitf.course.declaration.Exercise`), each with its
reference solution defined just above it. This package finds the modules by their names, gathers
their declarations into one registry, and derives from them the pieces notebook 08 builds a model
(and a training) from: adding an exercise is one declaration (and its solution) in its notebook's
module, and the notebook's cells.
"""
from __future__ import annotations

import importlib
import pkgutil

from ..declaration import Exercise
from ..feedback import DIAGNOSES

# every lesson module, found by its name (nbNN_*.py), in the order of the names
LESSONS = tuple(importlib.import_module(f"{__name__}.{info.name}")
                for info in sorted(pkgutil.iter_modules(__path__), key=lambda info: info.name)
                if info.name.startswith("nb"))

KINDS_OF_PIECE = ("model", "training")  # Exercise.fills: the Parts and the TrainingParts of notebook 08

EXERCISES: dict[str, Exercise] = {}


def register(exercise: Exercise, where: str = "") -> Exercise:
    """Add one declaration to the course (the lesson modules' own go through here too); a name
    taken twice, an unknown `fills`, a solution under another name than the learner's answer or a
    hint for a diagnosis that does not exist is an error naming the exercise and where it is declared."""
    where = where or f"exercise {exercise.name!r}"
    if exercise.name in EXERCISES:
        raise ValueError(f"{where}: an exercise named {exercise.name!r} is declared already "
                         f"(notebook {EXERCISES[exercise.name].notebook})")
    if exercise.fills and exercise.fills not in KINDS_OF_PIECE:
        raise ValueError(f"{where}: fills={exercise.fills!r}; a piece is one of {KINDS_OF_PIECE} "
                         f"(or '' for an exercise that fills none)")
    if exercise.fills and not exercise.call:
        raise ValueError(f"{where}: fills={exercise.fills!r} needs `call`, how the {exercise.fills} "
                         f"calls the piece")
    if getattr(exercise.solution, "__name__", None) != exercise.answer:
        raise ValueError(f"{where}: solution={getattr(exercise.solution, '__name__', exercise.solution)!r}; "
                         f"the Solution block shows the learner's answer, so it is named {exercise.answer}")
    if exercise.shows and exercise.solution not in exercise.shows:
        raise ValueError(f"{where}: shows={[c.__name__ for c in exercise.shows]} leaves out the solution "
                         f"{exercise.answer}")
    for key in (exercise.options.get("hints_by_diagnosis") or {}):
        if not key.startswith("_") and key not in DIAGNOSES:
            raise ValueError(f"{where}: a hint for diagnosis {key!r}, which the checks never report; "
                             f"a diagnosis is one of minitf.course.feedback.DIAGNOSES, or an exercise's "
                             f"own slip, named '_…' by minitf.course.cases.named_slip")
    EXERCISES[exercise.name] = exercise
    return exercise


def unregister(name: str) -> None:
    """Take a declaration out again (a test's throw-away exercise)."""
    EXERCISES.pop(name, None)


def pieces(kind: str) -> dict[str, tuple[str, str]]:
    """{piece: (the call the model or training makes, the notebook whose exercise writes it)}, in
    the order the declarations give (`Exercise.order`), for the exercises that fill `kind`."""
    found = sorted((ex for ex in EXERCISES.values() if ex.fills == kind), key=lambda ex: ex.order)
    return {ex.name: (ex.call, ex.notebook) for ex in found}


for _lesson in LESSONS:
    for _exercise in _lesson.EXERCISES:
        register(_exercise, f"{_lesson.__name__} ({_exercise.name})")
