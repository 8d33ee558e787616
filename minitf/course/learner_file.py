"""The file the learner keeps: my_parts/model.py, their Transformer and its training, top to bottom.

Every piece that passes its check is saved to my_parts/ (`my_parts.save`; a class exercise's classes
by `save_classes`). `write()` puts them together, in the order the model runs them, into one file
the learner reads beside minitf/core/minimal.py: their functions (notebooks 02–05 and 08), their
modules (MyAttention, MyLayerNorm, MyFeedForward, MyBlock, MyTransformer) and their training step
and loop. A piece not written yet is the reference solution, marked so; an optional one not written
is the library's own, in one marked line. `my_model(config)` builds MyTransformer from that file:
what notebook 08 trains and notebook 09 loads lm.pt's weights into.
"""
from __future__ import annotations

import inspect
import linecache
import textwrap
from pathlib import Path

from .lessons import EXERCISES
from .my_parts import folder

FILE_NAME = "model.py"

# the functions the modules call, in the order the model runs them
FUNCTIONS = ("apply_rope", "causal_mask", "softmax", "attention", "multi_head_attention",
             "layer_norm", "feed_forward", "block")
# the class exercises, each with the classes its cell defines
CLASSES = ("MyAttention", "MyBlock", "MyTransformer")
TRAINING = ("output_loss", "clip_gradients", "train_step", "train_loop")

# an optional piece not written: the library's own, in one line the file can run
LIBRARY_LINES = {
    "output_loss": "from minitf import masked_loss as my_output_loss  # optional, not written: minitf's own",
    "clip_gradients": "from torch.nn.utils import clip_grad_norm_ as my_clip_gradients  "
                      "# optional, not written: PyTorch's own",
}

HEADER = '''"""Your Transformer, as you wrote it: the functions of notebooks 02-05 and 08, the modules that hold
the parameters (their names are minitf's, so weights move between this model and minitf's), and the
training step and loop. Written by minitf (minitf.parts.model_file) from the pieces you passed; read
it beside minitf/core/minimal.py."""
import math

import torch
import torch.nn.functional as F
from torch import nn

import minitf
from minitf import EOS, IGNORE, PAD, TAB, rope_angles
'''


def class_source(cls: type) -> str | None:
    """The source of a class, also one defined in a notebook cell (inspect.getsource cannot find
    those in Python < 3.13: the class's module, __main__, has no file). It is found from one of its
    methods: that method's file is the cell, which Jupyter keeps in linecache."""
    try:
        return textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        pass
    code = next((f.__code__ for f in vars(cls).values() if hasattr(f, "__code__")), None)
    if code is None:
        return None
    lines = linecache.getlines(code.co_filename)
    start = next((i for i in range(code.co_firstlineno - 1, -1, -1)
                  if lines[i].lstrip().startswith(f"class {cls.__name__}")), None)
    if start is None:
        return None
    return textwrap.dedent("".join(inspect.getblock(lines[start:])))


def save_classes(name: str, cls: type) -> Path | None:
    """Save a class exercise's classes (its `shows`, found beside the class, or the class alone)
    to my_parts/<name>.py; None where a source cannot be found."""
    ex = EXERCISES[name]
    names = tuple(shown.__name__ for shown in ex.shows) or (ex.answer,)
    where = _globals_of(cls)
    sources = []
    for shown in names:
        found = cls if shown == cls.__name__ else where.get(shown)
        source = class_source(found) if isinstance(found, type) else None
        if source is None:
            return None
        sources.append(source.rstrip())
    path = folder() / f"{name}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# {name}: saved by minitf.exercise when it passed its check\n"
                    + "\n\n\n".join(sources) + f"\n\n\n__piece__ = {cls.__name__}\n", encoding="utf-8")
    return path


def _globals_of(cls: type) -> dict:
    fn = next((f for f in vars(cls).values() if hasattr(f, "__globals__")), None)
    return fn.__globals__ if fn is not None else {}


def _saved(name: str) -> str | None:
    """A saved piece's source, without its first comment line and its __piece__ line; a function
    saved under another name than the one the rest of the file calls (my_<name>) gets that name too."""
    path = folder() / f"{name}.py"
    if not path.is_file():
        return None
    lines = path.read_text(encoding="utf-8").splitlines()
    source = "\n".join(line for line in lines[1:] if not line.startswith("__piece__")).strip()
    given = next((line.split("=", 1)[1].strip() for line in lines if line.startswith("__piece__")), "")
    called = EXERCISES[name].answer
    if given and given != called and given.isidentifier():
        source += f"\n\n\n{called} = {given}  # the name the rest of this file calls it by"
    return source


def _reference(name: str) -> str:
    ex = EXERCISES[name]
    shown = ex.shows or (ex.solution,)
    return "\n\n\n".join(textwrap.dedent(inspect.getsource(part)).rstrip() for part in shown)


def _piece(name: str, origin: dict) -> str:
    """A piece's code in the file: the saved one, unless the check that chose `origin` (Parts'
    or TrainingParts' origin, from `training_parts.usable`) put the reference in its place."""
    chosen = origin.get(name, "")
    saved = _saved(name)
    if saved is not None and (not chosen or chosen.startswith("yours")):
        return saved
    if name in LIBRARY_LINES and EXERCISES[name].optional and saved is None:
        return LIBRARY_LINES[name]
    why = "not written yet" if saved is None else chosen or "not written yet"
    return f"# {name}: {why}; the reference solution\n" + _reference(name)


def source(*checked) -> str:
    """The text of the learner's file, from what is saved now; given the checked Parts and
    TrainingParts (notebook 08's `your_pieces`), a piece the check found broken is the reference."""
    origin = {name: where for parts in checked for name, where in parts.origin.items()}
    sections = [("your functions", FUNCTIONS), ("your modules", CLASSES), ("your training", TRAINING)]
    parts = [HEADER]
    for title, names in sections:
        parts.append(f"\n# --- {title} " + "-" * (95 - len(title)) + "\n")
        parts.append("\n\n\n".join(_piece(name, origin) for name in names) + "\n")
    return "\n".join(parts)


def write(*checked) -> Path:
    """Write my_parts/model.py from the saved pieces (see `source`); returns its path."""
    path = folder() / FILE_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source(*checked), encoding="utf-8")
    return path


def modules(path: Path) -> str:
    """The file's length and its modules, the part notebook 08's class exercises wrote."""
    text = path.read_text(encoding="utf-8")
    shown = text[text.index("class MyAttention"):text.index("# --- your training")].rstrip()
    return f"your file, my_parts/{path.name}: {len(text.splitlines())} lines\n\n{shown}"


def load(path: Path | None = None) -> dict:
    """The names the learner's file defines (MyTransformer, my_train_step, …), run from the file."""
    path = Path(path or folder() / FILE_NAME)
    namespace: dict = {"__name__": "my_parts_model"}
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), namespace)
    return namespace


def my_model(config, *checked):
    """MyTransformer(config) from the learner's file, written first from the saved pieces (given
    the checked Parts and TrainingParts, with the reference where a piece of yours is broken)."""
    return load(write(*checked))["MyTransformer"](config)
