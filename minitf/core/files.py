"""Writing files so that nothing is lost: atomically, and never over an existing file unless asked."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable


def _default_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def atomic_write(path, write: Callable[[str], None], *, overwrite: bool = False) -> Path:
    """Call write(tmp_path) on a temporary file beside `path`, then move it into place.

    A crash never leaves a half-written file, and without overwrite an existing file is never
    replaced (the final step is a hard link, which fails if the name is taken meanwhile).
    """
    path = Path(path)
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} exists; pass overwrite=True (CLI: --force) to replace it")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        os.chmod(tmp, _default_mode())  # mkstemp makes files only its owner can read
        write(tmp)
        if overwrite:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)
            os.unlink(tmp)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path
