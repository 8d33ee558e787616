"""The one declaration of an exercise: `Exercise`. Everything the course knows about one exercise is
in its declaration, in the lesson module of the notebook that teaches it (minitf/course/lessons/);
the piece registries of notebook 08 (`minitf.parts.PIECES`, the training's TRAINING_PIECES) are
derived from the declarations that say which piece they fill.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

# the cell contract's numbers (see Exercise); tests/test_workbook.py reads them from here
HINTS_AFTER = 2        # at least this many collapsed <details> blocks (hints) follow the check cell
SOLUTION_WITHIN = 3    # … and the Solution block is in one of this many Markdown cells after it


@dataclass(frozen=True, kw_only=True)
class Piece:
    """The piece of notebook 08 an exercise's answer becomes: the three facts go together (an order
    or a call means nothing without the kind of piece), so a declaration gives them as one."""
    fills: str                # "model" (Parts) or "training" (TrainingParts)
    order: int                # its place among the pieces it joins
    call: str                 # how the model or the training calls the piece


@dataclass(frozen=True, kw_only=True)
class Exercise:
    """One exercise: what it teaches, its cases and slips, what it refuses, the piece it fills.

    The cell contract, what the notebook that teaches exercise `name` holds (tests/test_workbook.py
    checks every clause):

    - a code cell `minitf.exercise("name", my_name)` in the notebook whose number starts with
      `notebook`; the learner's function is `my_<name>` (a class exercise's, its class: `answer`);
    - in the `SOLUTION_WITHIN` (3) cells after it, Markdown with at least `HINTS_AFTER` (2)
      collapsed `<details>` blocks, hints first ("Hint"), and the Solution block exactly as
      `minitf.course.exercises.solution_markdown(name)` prints it: the source of `solution`
      (`my_<name>`, defined just above the declaration), which must pass its own check;
    - no cell before the check prints the reference (`inspect.getsource` of it) or uses
      `minitf.solutions`;
    - `library` names the library functions the exercise re-creates (a call to one is refused) and
      `own_work` says, with the word "fine", which calls are the learner's to use.

    A declaration with a `piece` (`Piece(fills=…, order=…, call=…)`, fills "model" or "training") is a
    piece notebook 08 builds from: a passed answer is saved to my_parts/ and `call` (how the model or
    the training calls it) and `order` (its place in Parts, the order the model or training runs its
    pieces) go into PIECES or TRAINING_PIECES. Adding an exercise is one declaration (with its
    solution) in its lesson module and its notebook cells; the rest is derived (CONTRIBUTING.md).
    Its fields are given by name (`kw_only`), so a new field never shifts the others.

    A class exercise (`answer_name`, notebook 08's MyAttention, MyBlock, MyTransformer) asks for an
    nn.Module class instead of a function: its cell defines `class <answer_name>(nn.Module)` (and the
    helper classes `shows` lists, the classes themselves, which its Solution block shows too), its `drive` builds the class
    from the case's minitf module (`minitf.course.module_checks`), and a passed class is saved for the
    learner's file, my_parts/model.py (`minitf.course.learner_file`).

    `optional=True` marks an exercise the main path does not need: the course map counts its minutes
    apart ("+N min of optional exercises"), and where notebook 08 builds from saved pieces, an
    optional piece the learner has not written is the library's own (`reference`), the table saying
    "library — optional, not written", where an unwritten required piece is the reference solution.
    """
    name: str                 # the piece; the learner's function is my_<name>
    notebook: str
    teaches: str
    difficulty: int           # 1 (a few lines, one idea) … 5 (several ideas at once)
    minutes: int              # what it takes most learners, hints included
    reference: Callable       # minitf's or PyTorch's own version: the truth
    cases: Callable[[], list] # fresh argument tuples, built on demand (the same on every machine)
    # the reference solution, defined just above the declaration in its lesson module: the code the
    # notebook's Solution block shows (its name is the learner's answer's, my_<name> or the class)
    solution: Callable
    hint: str                 # shown with every failure
    result_names: tuple | None = None
    outcome: Callable | None = None  # applied to both results before comparing (e.g. a model → its logits)
    options: dict = field(default_factory=dict)  # passed on to check_function (slips: "diagnoses")
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
    # the piece of notebook 08 it fills (None: it fills none)
    piece: Piece | None = None
    # not needed by the main path: its minutes are counted apart, and an unwritten piece is the library's
    optional: bool = False
    # a class exercise names the learner's class (MyAttention) instead of my_<name>, and `shows`
    # lists the classes its Solution block shows, in order, defined beside `solution` (MyBlock's
    # uses two helpers)
    answer_name: str = ""
    shows: tuple = ()

    @property
    def answer(self) -> str:
        """The name of the learner's answer in the notebook: my_<name>, or the class's own name."""
        return self.answer_name or f"my_{self.name}"

    @property
    def fills(self) -> str:
        """The kind of piece it fills: "model", "training" or "" (none)."""
        return self.piece.fills if self.piece else ""

    @property
    def order(self) -> int:
        return self.piece.order if self.piece else 0

    @property
    def call(self) -> str:
        return self.piece.call if self.piece else ""

    @property
    def header(self) -> str:
        dots = "●" * self.difficulty + "○" * (5 - self.difficulty)
        return f"difficulty {dots} · about {self.minutes} min · {self.teaches}"


def refused(*functions) -> dict:
    """An exercise's `library` ({function: the name a refusal shows}) without writing each name
    twice: a function's name is the one a learner would type for it, derived from where it lives
    (F.x, torch.x, .x() for a tensor method, nn.X for a torch module's forward, the module's path
    for minitf's own: minitf.core.train.lr_at); a (function, name) pair gives the name where that
    rule does not (torch's submodules, a longer description), or `on_face(fn)` where the learner
    knows it by the face's shorter minitf.x: the course wing does not import the face
    (tests/test_architecture.py), so it cannot look the face's names up."""
    return dict(item if isinstance(item, tuple) else (item, _typed_name(item)) for item in functions)


def on_face(fn: Callable) -> tuple[Callable, str]:
    """A minitf function, class method or module forward the learner reaches on the face, named so:
    attention → "minitf.attention", FeedForward.forward → "minitf.FeedForward",
    LayerNorm.formula → "minitf.LayerNorm.formula" (tests/test_declaration.py checks the face has it)."""
    return fn, "minitf." + fn.__qualname__.removesuffix(".forward")


def _typed_name(fn: Callable) -> str:
    import torch
    import torch.nn.functional as F
    from torch import nn

    owner, _, name = fn.__qualname__.rpartition(".")
    if name == "forward" and getattr(getattr(nn, owner, None), "forward", None) is fn:
        return f"nn.{owner}"
    for prefix, where in (("F.", F), ("torch.", torch)):
        if getattr(where, name, None) is fn:
            return prefix + name
    if getattr(torch.Tensor, name, None) is fn:
        return f".{name}()"
    if fn.__module__.startswith("minitf."):
        return f"{fn.__module__}.{fn.__qualname__}"
    raise ValueError(f"refused({fn.__module__}.{fn.__qualname__}): no name to derive for it; "
                     f"give it as (function, 'the name a learner would type')")
