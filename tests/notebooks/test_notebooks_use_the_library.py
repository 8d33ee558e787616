"""The notebooks use the library: they import no command-line internals (the CLI is a door onto
minitf, and a lesson that imports it breaks when a flag is renamed) and print no library source."""
import re

import pytest

from support import ROOT, code

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_notebook_imports_the_cli(path):
    found = re.findall(r"^.*\b(?:from\s+minitf\.cli\s+import|import\s+minitf\.cli|from\s+minitf\s+import\s+[^\n]*\bcli\b|minitf\.cli\.)\b.*$",
                       code(path), re.MULTILINE)
    assert not found, f"{path.name} uses minitf.cli: {found}"


@pytest.mark.parametrize("name", ["02_rope.ipynb", "03_attention.ipynb", "04_ffn_block.ipynb",
                                  "05_training_base64_pairs.ipynb"])
def test_a_notebook_points_to_library_code_instead_of_printing_it(name):
    """Printed source right below an exercise is its answer; a module path is a pointer."""
    text = (ROOT / "notebooks" / name).read_text()
    assert "getsource" not in text and "import inspect" not in text
