"""Reference solutions of the course's exercises, written the way a learner would write them.

They are deliberately plain (a loop where a loop is clearer, no fused kernels): each is the answer
a notebook shows, collapsed, after its exercise. Each is defined beside its exercise's declaration,
in the lesson module of its notebook (`minitf.course.lessons`), which names it (`solution=`); this
module gathers them under the learner's names (`minitf.solutions.my_attention`, `.MyBlock`). The
tests run every one of them through its exercise's check, and check that each notebook's
"Solution" block is its code, so the solutions, the checks and the notebooks cannot drift apart.
Notebook 08 builds a model from them wherever a learner has not written a piece yet.
"""
from __future__ import annotations

from .lessons import EXERCISES

SOLUTIONS = {part.__name__: part for exercise in EXERCISES.values()
             for part in (*exercise.shows, exercise.solution)}
globals().update(SOLUTIONS)
__all__ = list(SOLUTIONS)
