"""`make lab`'s JupyterLab setting: notebooks attach every cell (windowing mode `none`).

JupyterLab 4's default windowing attaches only the cells near the viewport, and in long notebooks
with figures and widgets the page jumps while scrolling (GitHub jupyterlab/jupyterlab#15968,
#15693, #14878).
Writing the setting into the virtual environment's `share/jupyter/lab/settings/overrides.json`
makes it the default for this environment only: a learner's own settings still win, and no
file outside `.venv/` changes. Other keys already in the file are kept.

    python tools/lab_settings.py [--prefix PREFIX]     # default: this Python's sys.prefix
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

PLUGIN = "@jupyterlab/notebook-extension:tracker"
SETTINGS = {PLUGIN: {"windowingMode": "none"}}


def overrides_path(prefix: Path) -> Path:
    return prefix / "share" / "jupyter" / "lab" / "settings" / "overrides.json"


def write(prefix: Path) -> Path:
    path = overrides_path(prefix)
    current = json.loads(path.read_text()) if path.exists() else {}
    for plugin, values in SETTINGS.items():
        current.setdefault(plugin, {}).update(values)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(current, indent=2) + "\n")
    return path


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--prefix", type=Path, default=Path(sys.prefix))
    path = write(p.parse_args(argv).prefix)
    print(f"JupyterLab: windowing mode 'none' for notebooks ({path})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
