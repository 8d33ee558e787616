"""The notebooks use the library: they print no library source. That they import no door but
`minitf` and `minitf.notebook` (the CLI is a door onto minitf, and a lesson that imports it breaks
when a flag is renamed) is the architecture guard's rule, in tests/test_architecture.py."""
import pytest

from support import ROOT


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")))
def test_a_notebook_points_to_library_code_instead_of_printing_it(name):
    """Printed source right below an exercise is its answer; a module path is a pointer."""
    text = (ROOT / "notebooks" / name).read_text()
    assert "getsource" not in text and "import inspect" not in text
