"""The course's exercises, one module per notebook that teaches them: each module's `EXERCISES`
lists its declarations (`minitf.course.declaration.Exercise`). This package gathers them into one
registry, and derives from the declarations the pieces notebook 08 builds a model (and a training)
from: adding an exercise is one declaration in its notebook's module, and the notebook's cells.
"""
from __future__ import annotations

from ..declaration import Exercise
from . import (nb01_embeddings, nb02_rope, nb03_attention, nb04_ffn_block, nb05_batches, nb06_heads,
               nb07_origami, nb08_model_forward, nb08_model_modules, nb08_loss_and_step, nb08_schedule_and_adamw,
               nb08_loop_and_clip, nb09_language_model, nb12_weights_by_hand, nb15_bytes_or_bpe)

LESSONS = (nb01_embeddings, nb02_rope, nb03_attention, nb04_ffn_block, nb05_batches, nb06_heads,
           nb07_origami, nb08_model_forward, nb08_model_modules, nb08_loss_and_step, nb08_schedule_and_adamw,
           nb08_loop_and_clip, nb09_language_model, nb12_weights_by_hand, nb15_bytes_or_bpe)

KINDS_OF_PIECE = ("model", "training")  # Exercise.fills: the Parts and the TrainingParts of notebook 08

EXERCISES: dict[str, Exercise] = {}


def register(exercise: Exercise, where: str = "") -> Exercise:
    """Add one declaration to the course (the lesson modules' own go through here too); a name
    taken twice or an unknown `fills` is an error naming the exercise and where it is declared."""
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
