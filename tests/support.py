"""What many test files share, in one place: where the repository is, how a float32 result is compared
with its reference, how a test reads an executed notebook (its cells, code, markdown and what a cell
printed), and the small models the unit tests build.

Test files import it as `from support import ...` (pytest puts tests/ on the path: tests/conftest.py
lives there). conftest.py keeps only fixtures and pytest's set-up.
"""
import functools
import pathlib
import re
import sys

import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
sys.path.insert(0, str(ROOT / "tools"))
import course_map  # noqa: E402  (tools/course_map.py: its notebook reader, and the course map test files import from here)

# --- float32 against float64 -----------------------------------------------------------------------

# float32 keeps 24 bits. A float32 forward pass compared with the float64 one loses some of them
# where a LayerNorm divides by a small deviation: measured on every shipped checkpoint under the
# default, AVX2 and AVX-512 kernels with 1 and 2 threads, the largest gap was 1.6e-5 of the logits'
# largest magnitude (the post-norm shift model). 2**-12 (2.4e-4) of that magnitude leaves a margin
# of 15x, and a wrong piece still misses by whole units.
FLOAT32_RELATIVE = 2.0 ** -12


def assert_close_float32(actual, expected, relative=FLOAT32_RELATIVE):
    """A float32 result against its float64 (or float32) reference, to a tolerance that grows with
    the size of what is compared rather than a bare 1e-4 that is tight for logits of 50 and loose for
    values of 1e-3."""
    expected = expected.to(actual.dtype)
    scale = float(expected.abs().max()) if expected.numel() else 0.0
    torch.testing.assert_close(actual, expected, rtol=0, atol=relative * max(scale, 1e-6))


# --- reading an executed notebook --------------------------------------------------------------------
# The notebooks are committed with their outputs, and `pytest --nbval` proves those outputs reproduce;
# a claim test reads them here and holds the notebook's sentences to what its cells printed.

def notebook_path(notebook) -> pathlib.Path:
    """notebooks/<notebook>.ipynb for a stem ("03_attention"), a file name or a path."""
    if isinstance(notebook, pathlib.Path):
        return notebook
    return NOTEBOOKS / (notebook if notebook.endswith(".ipynb") else f"{notebook}.ipynb")


def cells(notebook) -> list[dict]:
    """The cells of a stored notebook, as nbformat writes them (outputs included). Parsed once per
    version of the file, by the course map's reader, and shared: read them, never change them."""
    return course_map.cells(notebook_path(notebook))


def source(cell: dict) -> str:
    return "".join(cell["source"])


def joined(notebook, kind: str | None = None, sep: str = "\n") -> str:
    """The sources of a notebook's cells of one kind ("code", "markdown"; None: all) joined by sep."""
    return sep.join(source(c) for c in cells(notebook) if kind is None or c["cell_type"] == kind)


def indexed(notebook, kind: str) -> list[tuple[int, str]]:
    """(index, source) of every cell of one kind ("code", "markdown"), the index counting all cells."""
    return [(i, source(c)) for i, c in enumerate(cells(notebook)) if c["cell_type"] == kind]


def code(notebook) -> str:
    """Every code cell's source, one after another."""
    return joined(notebook, "code")


def markdown(notebook) -> str:
    """The notebook's markdown as one line, every run of whitespace one space: a sentence that the
    notebook wraps across lines is found whole."""
    return " ".join(joined(notebook, "markdown").split())


def cell_output(cell: dict, results: bool = False) -> str:
    """What a code cell printed (its stream outputs); with results, its shown values' text too."""
    return "".join("".join(o.get("text", "")) + ("".join(o.get("data", {}).get("text/plain", "")) if results else "")
                   for o in cell.get("outputs", []))


def code_cell(notebook, starts: str | None = None, *, containing: str | None = None) -> dict:
    """The one code cell whose source starts with `starts` (or contains `containing`). `notebook` is a
    name or a list of cells (a notebook just executed)."""
    found = [c for c in (cells(notebook) if isinstance(notebook, (str, pathlib.Path)) else notebook)
             if c["cell_type"] == "code"
             and (starts is None or source(c).startswith(starts))
             and (containing is None or containing in source(c))]
    assert len(found) == 1, f"{notebook if isinstance(notebook, (str, pathlib.Path)) else 'the notebook'}: " \
                            f"{len(found)} code cells match {starts or containing!r}"
    return found[0]


def printed(notebook, starts: str | None = None, *, containing: str | None = None, results: bool = False) -> str:
    """What the one code cell found so (see code_cell) printed; with results, its shown values too."""
    return cell_output(code_cell(notebook, starts=starts, containing=containing), results)


NUMBER = re.compile(r"(?<![\w.])[-−]?\d+(?:,\d{3})*(?:\.\d+)?(?:e[-+]?\d+)?(?!\w)")


def numbers(text: str, after: str = "") -> list[float]:
    """The numbers written in `text`, in order, from the first `after` on (if given): "2,304" is
    2304.0, "−0.12" (a minus sign) -0.12, "87%" 87.0, "1e-11" 1e-11; a number that is part of a
    name ("L0", "4L", "d64", "7B") is none. A claim test reads a printed number so and checks the relation its sentence
    states (an order, a ratio, a range), not the sentence's words."""
    if after:
        assert after in text, f"{after!r} is not in:\n{text}"
        text = text[text.index(after) + len(after):]
    return [float(m.replace(",", "").replace("−", "-")) for m in NUMBER.findall(text)]


def percents(text: str) -> list[float]:
    """The whole percentages written in `text`, as fractions: "87%" is 0.87."""
    return [int(x) / 100 for x in re.findall(r"(\d+)%", text)]


def outputs(notebook, results: bool = True) -> list[tuple[int, str]]:
    """(index, what it printed and showed) for every code cell."""
    return [(i, cell_output(c, results)) for i, c in enumerate(cells(notebook)) if c["cell_type"] == "code"]


def executed(notebook) -> list[dict]:
    """The notebook run now, top to bottom in a fresh kernel (this tree's minitf, one thread, an empty
    my_parts of its own): its cells with this run's outputs, for `printed(executed(...), ...)`.

    A predict cell is stored without output (the learner runs it, then opens the answer), so what it
    prints is held against a real run, not a stored one. Each notebook runs once per test session."""
    return _run(notebook_path(notebook).resolve())


@functools.lru_cache(maxsize=None)
def _run(path: pathlib.Path) -> list[dict]:
    import os
    import tempfile

    import nbclient
    import nbformat
    nb = nbformat.read(path, as_version=4)
    env = {"PYTHONPATH": str(ROOT), "MINITF_THREADS": "1",
           "MINITF_MY_PARTS": tempfile.mkdtemp(prefix="minitf-my-parts-")}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # the kernel inherits this process's environment
    try:
        nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return nb.cells


def exercise_checks() -> list[tuple[str, str, int]]:
    """(notebook file, exercise, index of the cell that checks it) for every minitf.exercise call."""
    found = []
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        for i, cell in enumerate(cells(path)):
            text = source(cell)
            if cell["cell_type"] == "code" and "minitf.exercise(" in text:
                name = text.split("minitf.exercise(", 1)[1].split(",", 1)[0].strip("\"' ")
                found.append((path.name, name, i))
    return found


# --- small models ------------------------------------------------------------------------------------

def small_model(**changes):
    """A seeded 8-wide, 2-head model in eval mode: the smallest that has every piece."""
    import minitf
    torch.manual_seed(0)
    return minitf.Transformer(minitf.Config(d_model=8, n_heads=2, **changes)).eval()


def trained_like(config, dtype=torch.float32, seed=0):
    """A seeded model whose norms and biases are far from their initial 1 and 0, like a trained one's
    (so no term of a formula hides behind them), in eval mode."""
    import minitf
    torch.manual_seed(seed)
    model = minitf.Transformer(config).to(dtype)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name or name.endswith("bias"):
                p.add_(torch.randn_like(p) * 0.5)
    return model.eval()


def tiny_config(**changes):
    """A pre-norm, dropout-free Config of two 8-wide layers (changes override any field)."""
    import minitf
    base = dict(d_model=8, n_heads=2, n_layers=2, d_ff=16, norm_position="pre", dropout=0.0)
    return minitf.Config(**{**base, **changes})


# --- a learner's wrong piece that more than one check must name ---------------------------------------

def attention_without_scale(q, k, v, mask):
    """Attention that forgets to divide the scores by √head_dim."""
    scores = q @ k.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = scores.softmax(-1)
    return weights @ v, weights


def block_without_residuals(blk, h, cos, sin):
    """A block (either layout) that keeps neither residual connection."""
    a, w = blk.attn(blk.norm1(h) if blk.pre_norm else h, cos, sin, need_weights=True)
    h = a if blk.pre_norm else blk.norm1(a)
    return (blk.ffn(blk.norm2(h)) if blk.pre_norm else blk.norm2(blk.ffn(h))), w


# --- a notebook run with a learner's broken pieces saved -----------------------------------------------

def outputs_text(cells) -> str:
    """Everything a run's cells printed or showed, an error as `ERROR name: value`."""
    out = []
    for cell in cells:
        for o in cell.get("outputs", []):
            out.append("".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", "")))
            if o.get("output_type") == "error":
                out.append(f"ERROR {o['ename']}: {o['evalue']}")
    return "\n".join(out)


def run_with_saved_pieces(notebook: str, pieces: dict[str, str], source: str, tmp_path, monkeypatch):
    """Save each `pieces` entry (piece → the name of a function defined in `source`) as the learner's
    piece in a folder of this test's own, run the notebook top to bottom in a kernel, and return what
    it printed (outputs_text) with the executed cells. The source is written to a file first:
    saving reads a function's source from its file."""
    import nbclient
    import nbformat

    import minitf
    from minitf import solutions
    monkeypatch.setenv("MINITF_MY_PARTS", str(tmp_path / "my_parts"))
    path = tmp_path / "wrong_pieces.py"
    path.write_text(source)
    namespace = {"torch": torch, "minitf": minitf, "my_attention": solutions.my_attention,
                 "my_causal_mask": solutions.my_causal_mask}
    exec(compile(source, str(path), "exec"), namespace)
    for piece, fn in pieces.items():
        assert minitf.parts.save(piece, namespace[fn]) is not None, piece
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the kernel imports this minitf
    nb = nbformat.read(ROOT / "notebooks" / notebook, as_version=4)
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(ROOT / "notebooks")}}).execute()
    return outputs_text(nb.cells), nb.cells


# --- a repository script (tools/, bench/, data/checkpoints/make.py) as a module -------------------------

def script(path: str, name: str | None = None):
    """ROOT/path loaded as a module (named `name`, else its stem), its folder on sys.path for its
    own imports."""
    import importlib.util
    import sys
    file = ROOT / path
    if str(file.parent) not in sys.path:
        sys.path.insert(0, str(file.parent))
    spec = importlib.util.spec_from_file_location(name or file.stem, file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
