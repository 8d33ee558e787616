"""The learner's pieces: what each one is, and the files a passed piece is saved to.

Each exercise of the course writes one piece of the model (the embedding lookup, RoPE, the causal
mask, attention, LayerNorm, RMSNorm, the FFN, the batch, the position numbering). A piece that
passes its check is saved as source (`save`), one file per piece, in `my_parts/` beside the
notebooks (or in $MINITF_MY_PARTS), so notebook 08 can build the model from the learner's code
although it was written in other notebooks (`mine`; `minitf.course.parts` assembles it).
"""
from __future__ import annotations

import inspect
import math
import os
import sys
import textwrap
import types
from dataclasses import field, make_dataclass
from pathlib import Path
from typing import Callable

import torch

from ..core.tokens import EOS, IGNORE, PAD, TAB
from .lessons import EXERCISES, pieces

# piece → (the call the model makes, the notebook whose exercise writes it), from the exercises'
# declarations (Exercise.fills == "model"), in the order Parts lists them
PIECES = pieces("model")


def parts_class(name: str, registry: dict, doc: str, module: str = __name__) -> type:
    """A frozen dataclass with one field per piece of `registry` (None: minitf's own) and `origin`
    (piece → where it came from): Parts for the model's pieces, TrainingParts for the training's."""
    def given(self) -> list[str]:
        return [piece for piece in registry if getattr(self, piece) is not None]

    def __repr__(self):
        width = max(len(piece) for piece in registry)
        return "\n".join(f"{piece:<{width}}  {self.origin.get(piece, 'yours') if getattr(self, piece) else 'minitf'}"
                         for piece in registry)

    fields = [(piece, "Callable | None", field(default=None)) for piece in registry]
    fields.append(("origin", dict, field(default_factory=dict, compare=False)))
    cls = make_dataclass(name, fields, frozen=True,
                         namespace={"__doc__": doc, "given": given, "__repr__": __repr__})
    cls.__module__ = module  # where it is defined, for its repr and for pickle
    return cls


# softmax has no slot of its own in the model: your attention calls it
Parts = parts_class("Parts", PIECES, "The learner's functions, one per piece; None keeps minitf's own.")


def folder() -> Path:
    """Where passed pieces are saved: $MINITF_MY_PARTS, else my_parts/ in the working directory."""
    return Path(os.environ.get("MINITF_MY_PARTS") or Path.cwd() / "my_parts")


def save(piece: str, fn: Callable) -> Path | None:
    """Save the source of a function that passed its check; None if it has no source of its own
    (a lambda, or a function defined outside a file or cell)."""
    if fn.__name__ == "<lambda>":
        return None
    try:
        source = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        return None
    path = folder() / f"{piece}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# {piece}: saved by minitf.exercise when it passed its check\n{source}\n"
                    f"__piece__ = {fn.__name__}\n", encoding="utf-8")
    return path


def mine(fallback: Callable[[str], Callable] | None = None) -> Parts:
    """Your saved pieces as Parts. Pieces you have not saved are filled by `fallback(name)` (for
    instance the reference solutions: `lambda name: getattr(minitf.solutions, "my_" + name)`) or
    left to minitf. All files share one namespace, so one piece may call another."""
    found, origin = load_saved(PIECES, fallback)
    return Parts(**found, origin=origin)


# --- loading saved pieces: the model's (mine, above) or any other set (the training's, notebook 08) ---

# where an optional piece the learner has not written comes from (Exercise.optional): the library's own
OPTIONAL_NOT_WRITTEN = "library — optional, not written"
NOT_SAVED_YET = "reference solution (you have not saved one yet)"


def load_saved(names, fallback: Callable[[str], Callable] | None = None) -> tuple[dict, dict]:
    """({name: function}, {name: where it came from}) for the pieces `names` that are saved, the
    others from `fallback(name)` (or left out): `mine` for any set of pieces, such as the training's
    (minitf.course.training_parts.mine). With a fallback, an optional piece (`Exercise.optional`)
    that is not saved is the library's own instead (its declaration's `reference`, minitf's or
    PyTorch's version): skipping it is a choice the course offers, not a piece still to write."""
    # what the notebooks' cells had at hand when the pieces were written; minitf itself is loaded
    # already (this module is inside it), so the face is taken as it is, not imported from a wing
    namespace = {"torch": torch, "math": math, "F": torch.nn.functional, "minitf": sys.modules["minitf"],
                 "TAB": TAB, "EOS": EOS, "PAD": PAD, "IGNORE": IGNORE}
    found, origin = {}, {}
    for name in names:
        path = folder() / f"{name}.py"
        if path.is_file():
            exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), namespace)
            found[name], origin[name] = namespace.pop("__piece__"), f"yours ({path.parent.name}/{path.name})"
        elif fallback is not None and name in EXERCISES and EXERCISES[name].optional:
            found[name], origin[name] = EXERCISES[name].reference, OPTIONAL_NOT_WRITTEN
        elif fallback is not None:
            found[name], origin[name] = fallback(name), NOT_SAVED_YET
    # a saved piece may call another by its exercise's name (your attention calls my_softmax, your
    # train_step my_clip_gradients): the reference solution answers to a name you have not saved
    from . import solutions
    for name in names:
        namespace.setdefault(f"my_{name}", found.get(name) or getattr(solutions, f"my_{name}"))
    return found, origin


def calling(fn, **pieces):
    """fn with the names it calls bound to these pieces: your multi_head_attention calls your
    attention by name (my_attention), your train_step your clipping (my_clip_gradients), and in a
    model or a training built from parts that name must be the parts' piece (the one the check
    named, or the reference that replaced it), not whatever the name meant where fn was written.
    Pieces given as None, and a function without code of its own, stay as they are."""
    code = getattr(fn, "__code__", None)
    pieces = {name: piece for name, piece in pieces.items() if piece is not None}
    if code is None or not pieces:
        return fn
    rebound = types.FunctionType(code, {**fn.__globals__, **pieces}, fn.__name__, fn.__defaults__,
                                 fn.__closure__)
    rebound.__kwdefaults__ = fn.__kwdefaults__
    return rebound
