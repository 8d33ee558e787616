"""The library-call watcher: a learner's function that reaches the library function its exercise
asks to re-create (under any name, through any module) is refused, with the line that called it."""
from __future__ import annotations

import linecache
import sys
import types

import torch

from .formatting import ExerciseError, _hint
from .learner_errors import _LIBRARY_DIRS


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
        f"{name} uses {called}, which this exercise asks you to do without: it does the work the "
        f"exercise asks of you, so calling it would pass without teaching you anything. Not "
        f"accepted; the hint says what is fine to use" + (f"\n  in the line: {line}" if line else "")
        + _hint(("library_call",), hint, hints_by_diagnosis), ("library_call",))
