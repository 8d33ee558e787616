"""When the learner's function raises: the line of theirs that raised, and for a NameError the
imports (or the spelling) it lacks, so a pasted function without its imports is told what to add."""
from __future__ import annotations

import difflib
import dis
import inspect
import linecache
import os
import sys

import torch


_LIBRARY_DIRS = (os.path.dirname(os.path.dirname(os.path.dirname(__file__))),  # minitf/
                 os.path.dirname(torch.__file__))  # torch/


def _raised_at(error: BaseException) -> str:
    """The learner's line that raised: the last one outside minitf and torch (Jupyter keeps the
    cells' sources in linecache, so this is the line as they wrote it)."""
    tb, line = error.__traceback__, ""
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if not filename.startswith(_LIBRARY_DIRS):
            line = linecache.getline(filename, tb.tb_lineno).strip() or line
        tb = tb.tb_next
    return f"\n  in the line: {line}" if line else ""


# names a learner often uses under a short alias: the import that defines each
_ALIASES = {"F": "import torch.nn.functional as F", "nn": "from torch import nn",
            "np": "import numpy as np", "plt": "import matplotlib.pyplot as plt"}


def _raising_frame(error: BaseException):
    """The innermost frame of the error's traceback: for a NameError, the code reading the name."""
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame if tb is not None else None


def _learners_missing_name(error: BaseException | None) -> bool:
    """A NameError raised in the learner's own code (not minitf's or torch's), for a name that is
    not defined at all (a local read before it is assigned is another mistake)."""
    if not isinstance(error, NameError) or isinstance(error, UnboundLocalError):
        return False
    frame = _raising_frame(error)
    return frame is not None and not frame.f_code.co_filename.startswith(_LIBRARY_DIRS)


def _missing_names(error: NameError) -> list[str]:
    """The name the NameError names, then every other global the same function reads that is not
    defined either: a learner who pastes code without its imports learns them all at once."""
    names = [error.name] if getattr(error, "name", None) else []
    frame = _raising_frame(error)
    if frame is None:
        return names
    defined = lambda n: n in frame.f_globals or n in frame.f_builtins
    codes = [frame.f_code]
    while codes:  # the function's own code and the code of what it nests (comprehensions, lambdas)
        code = codes.pop(0)
        codes += [c for c in code.co_consts if inspect.iscode(c)]
        for ins in dis.get_instructions(code):
            if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME") and not defined(ins.argval) \
                    and ins.argval not in names:
                names.append(ins.argval)
    return names


def _import_for(name: str) -> str | None:
    """The import that defines `name` in a notebook: minitf's own names, a module, a usual alias."""
    if name in _ALIASES:
        return _ALIASES[name]
    if name in sys.stdlib_module_names or name in ("torch", "numpy", "matplotlib"):
        return f"import {name}"
    minitf = sys.modules.get(__name__.split(".")[0])
    if minitf is not None and not name.startswith("_") and hasattr(minitf, name):
        return f"from {minitf.__name__} import {name}"
    if name.startswith("_"):
        return None
    modules = sorted((m for m in list(sys.modules) if m.startswith(f"{__name__.split('.')[0]}.")),
                     key=lambda m: (m.count("."), m))
    for module in modules:  # a constant or function defined in one of minitf's modules (F1, T)
        value = vars(sys.modules[module]).get(name)
        defined_here = not (inspect.isfunction(value) or inspect.isclass(value)) \
            or value.__module__ == module  # not one it imports from elsewhere
        if value is not None and not inspect.ismodule(value) and defined_here:
            return f"from {module} import {name}"
    return None


def _name_error_advice(error: NameError) -> str:
    """'add `from minitf import IGNORE`': what a learner's function lacks, by name. Replaces the
    exercise's hint, which is about the formula, not about a missing import."""
    names = _missing_names(error)
    if not names:
        return ""
    imports = {n: _import_for(n) for n in names}
    found = [n for n in names if imports[n]]
    lines = []
    if found:
        lines_by_module: dict[str, list[str]] = {}  # `from minitf import TAB, EOS` on one line
        for line in dict.fromkeys(imports[n] for n in found):
            words = line.split()
            if words[0] == "from" and len(words) == 4:
                lines_by_module.setdefault(f"from {words[1]} import ", []).append(words[3])
            else:
                lines_by_module[line] = []
        listed = "".join(f"\n    {start}{', '.join(names)}" for start, names in lines_by_module.items())
        which = ", ".join(f"`{n}`" for n in found)
        lines.append(f"{which} {'is' if len(found) == 1 else 'are'} not defined where your function "
                     f"runs: add{listed}\n  at the top of your cell (or inside the function) and run "
                     f"it again")
    frame = _raising_frame(error)
    known = [k for k in (list(frame.f_globals) + list(frame.f_code.co_varnames) if frame else [])
             if not k.startswith("_")]
    for n in names:
        if not imports[n]:
            close = difflib.get_close_matches(n, known, n=1)
            lines.append(f"`{n}` is defined nowhere your function can see it: "
                         + (f"did you mean `{close[0]}`?" if close else
                            "define it in your cell (or pass it in as an argument), or check its spelling"))
    return "\nHint: " + "\n  ".join(lines)
