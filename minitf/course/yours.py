"""Your pieces by their names, to import: `from minitf.course.yours import my_block, my_layer_norm`.

Notebook 08's modules call the functions you wrote in notebooks 02–05; they were saved to my_parts/
when they passed, and this module hands them back under the names you gave them: yours where saved,
the reference solution where not yet, the library's own for an optional piece you skipped (as
`minitf.parts.yours()` says, piece by piece). Read at import time, from the saved files as they are.
"""
from __future__ import annotations


def __getattr__(name: str):
    from .my_parts import PIECES
    piece = name.removeprefix("my_")
    if not name.startswith("my_") or piece not in PIECES:
        raise AttributeError(f"minitf.course.yours has no {name!r}: it holds your model's pieces, "
                             f"{', '.join('my_' + p for p in PIECES)}")
    from .parts import yours
    return getattr(yours(), piece)
