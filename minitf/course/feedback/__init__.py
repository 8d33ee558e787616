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
(see `library_watch`).

The rooms: `formatting` (the error, its words and hints), `diagnoses` (the catalogue of recognised
mistakes), `learner_errors` (a learner's exception explained), `library_watch` (the refused calls)
and `double_run` (the float64/float32 runs of check_function and check_property).
"""
from .diagnoses import compare
from .double_run import check_function, check_property
from .formatting import DIAGNOSES, ExerciseError, _describe

__all__ = ["DIAGNOSES", "ExerciseError", "check_function", "check_property", "compare"]
