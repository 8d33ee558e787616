"""Store notebooks exactly as JupyterLab 4.6 saves them, so that opening and saving one in `make lab`
changes nothing in git.

What JupyterLab rewrites on save (found by saving the stored notebooks in the browser check:
tests/browser/check_notebooks.py, step 0):

* a cell whose outputs are hidden (`"jupyter": {"outputs_hidden": true}`) also gets the older
  `"collapsed": true`;
* the kernelspec's display name becomes the one ipykernel installs, "Python 3 (ipykernel)";
* a number is a JavaScript number: a float with an integral value (`1.0` in a widget's saved state)
  is written as an integer (`1`);
* multi-line text (a cell's source, a printed stream, a text output) is a list of lines, each with
  its newline, even where the notebook held several lines in one string (nbformat's split_lines);
* a notebook of format 4.4 or older keeps no cell ids (they came with 4.5): a cell added by a tool
  that writes them loses its id.

nbconvert (re-executing a notebook) writes the first two back as they were and floats as Python
does, so run this after re-executing:

    python tools/normalize_notebooks.py notebooks/NN_x.ipynb [...]     # rewrite in place
    python tools/normalize_notebooks.py --check notebooks/*.ipynb      # exit 1 if one would change
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

KERNEL_DISPLAY_NAME = "Python 3 (ipykernel)"
JS_EXACT_INTEGERS = 1e21  # JSON.stringify writes integral numbers below this without an exponent


def as_javascript_number(value):
    """What a number reads as after a round trip through JavaScript's JSON (the float 1.0 → 1)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < JS_EXACT_INTEGERS:
        return int(value)
    if isinstance(value, dict):
        return {k: as_javascript_number(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_javascript_number(v) for v in value]
    return value


def as_lines(text):
    """A text as the list of its lines, each keeping its newline (a string stays a list of one)."""
    return "".join(text).splitlines(keepends=True) if isinstance(text, list) else text


def normalized(nb: dict) -> dict:
    """The notebook as JupyterLab would save it."""
    nb = as_javascript_number(nb)
    for cell in nb["cells"]:
        cell["source"] = as_lines(cell.get("source", []))
        for out in cell.get("outputs", []):
            if "text" in out:
                out["text"] = as_lines(out["text"])
            for kind, value in out.get("data", {}).items():
                if kind.startswith("text/") or kind in ("application/javascript", "image/svg+xml"):
                    out["data"][kind] = as_lines(value)
    spec = nb.get("metadata", {}).get("kernelspec")
    if spec and spec.get("name") == "python3":
        spec["display_name"] = KERNEL_DISPLAY_NAME
    for cell in nb["cells"]:
        if cell.get("metadata", {}).get("jupyter", {}).get("outputs_hidden") is True:
            cell["metadata"]["collapsed"] = True
        if nb.get("nbformat", 4) == 4 and nb.get("nbformat_minor", 0) < 5:
            cell.pop("id", None)
    return nb


def as_saved(nb: dict) -> str:
    """The file's text: Jupyter server's writer (nbformat) indents by 1, sorts keys, keeps Unicode."""
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("notebooks", nargs="+", type=Path)
    p.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file would change")
    args = p.parse_args(argv)
    changed = []
    for path in args.notebooks:
        try:
            text = path.read_text(encoding="utf-8")
            nb = json.loads(text)
        except (OSError, json.JSONDecodeError) as e:
            print(f"{path}: not a readable notebook: {e}", file=sys.stderr)
            return 2
        new = as_saved(normalized(nb))
        if new != text:
            changed.append(path)
            if not args.check:
                path.write_text(new, encoding="utf-8")
    verb = "would change" if args.check else "rewritten"
    for path in changed:
        print(f"{path}: {verb}")
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
