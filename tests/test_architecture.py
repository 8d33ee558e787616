"""The house's rules, checked: which part of minitf may import which.

- the library, `minitf.core`, imports nothing else of minitf;
- a wing (`course`, `views`, `experiments`) imports the core and itself, never another wing or a
  door (the face `minitf/__init__.py` included);
- no package file names `bench/` in code, nor reads it (`ROOT / "bench" / ...`): a docstring or a
  comment may name the script that made a stored result; a string the package uses may not, since
  bench/ is not installed (the repository's tools, which read `make bench`'s measurements, live in
  tools/);
- the whole import graph, imports inside functions included, has no cycle;
- a notebook imports the face (`minitf`), `minitf.notebook` and the wings, never another door
  (`minitf.cli`, `minitf.doctor`, `minitf.lightning`) but the one listed with its reason.

Every import statement counts, wherever it stands: `import minitf.x`, `from minitf.x import y`,
`from ..core import z`, and `importlib.import_module("minitf.x")` with a literal name.

`python tests/test_architecture.py` prints the graph: the wings, their modules and the arrows.
"""
from __future__ import annotations

import ast
import functools
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from support import ROOT

PACKAGE = ROOT / "minitf"

WINGS = ("core", "course", "views", "experiments")
LIBRARY = "core"

# A read of an already-loaded module, not an import: course/my_parts gives the code a learner saved
# a `minitf` name (what the notebook cells had at hand), taking the face from sys.modules at call
# time. Importing minitf.course.my_parts loads the face first anyway, so it is always there, and no
# import runs. Any other `sys.modules["minitf…"]` in the package fails the guard until it is listed.
LOADED_FACE_READS = {("minitf.course.my_parts", "minitf")}


@dataclass(frozen=True)
class Edge:
    source: str       # the importing module, dotted
    target: str       # the module imported, dotted (a submodule where `from pkg import sub`)
    line: int
    where: str        # "module" (runs on import) or "function" (inside a def: runs when called)

    def __str__(self):
        return f"{self.source} -> {self.target} (line {self.line}, {self.where} level)"


def module_name(path: Path, package_dir: Path = PACKAGE) -> str:
    parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_modules(package_dir: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package, dotted name → file."""
    return {module_name(p, package_dir): p for p in sorted(package_dir.rglob("*.py"))}


def part_of(module: str) -> str:
    """The wing a module lives in, "face" for minitf/__init__.py, else "door"."""
    parts = module.split(".")
    if len(parts) == 1:
        return "face"
    if parts[1] in WINGS:
        return parts[1]
    return "door"


def _resolve_from(source: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = source.split(".")
    if not is_package:
        base = base[:-1]          # a module's package; a package's __init__ is its own package
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _in_function(parents: list[ast.AST]) -> bool:
    """Inside a def or lambda: runs when called, not when the module is imported."""
    return any(isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) for p in parents)


def imports_of(source: str, code: str, modules: set[str], is_package: bool = False,
               filename: str = "<string>") -> list[Edge]:
    """Every import of minitf in one module's code, at whatever depth it stands."""
    edges = []

    def add(target, node, parents):
        if (target == "minitf" or target.startswith("minitf.")) and \
                not any(e.target == target and e.line == node.lineno for e in edges):
            edges.append(Edge(source, target, node.lineno,
                              "function" if _in_function(parents) else "module"))

    def visit(node, parents):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node, parents)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve_from(source, is_package, node)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                add(sub if sub in modules else base, node, parents)
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and ((isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                   or (isinstance(node.func, ast.Name) and node.func.id in ("import_module", "__import__")))):
            add(node.args[0].value, node, parents)
        for child in ast.iter_child_nodes(node):
            visit(child, parents + [node])

    visit(ast.parse(code, filename=filename), [])
    return edges


def loaded_module_reads(source: str, code: str) -> list[tuple[str, str, int]]:
    """`sys.modules["minitf…"]`: a module of minitf taken without an import statement."""
    found = []
    for node in ast.walk(ast.parse(code)):
        if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute)
                and node.value.attr == "modules" and isinstance(node.slice, ast.Constant)
                and isinstance(node.slice.value, str)
                and (node.slice.value == "minitf" or node.slice.value.startswith("minitf."))):
            found.append((source, node.slice.value, node.lineno))
    return found


def rule_broken(edge: Edge) -> str | None:
    """Why an import breaks the house's rules, or None."""
    src, dst = part_of(edge.source), part_of(edge.target)
    if src == LIBRARY and dst != LIBRARY:
        return f"the library (core) imports the {dst} ({edge})"
    if src in WINGS and src != LIBRARY and dst not in (LIBRARY, src):
        kind = "another wing" if dst in WINGS else f"a door ({dst})" if dst == "door" else "the face"
        return f"the {src} wing imports {kind} ({edge})"
    return None


def docstring_nodes(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                ids.add(id(body[0].value))
    return ids


def names_bench(text: str) -> bool:
    """A string that names bench/ or is a path part of it: "python bench/lm.py", "bench", "x/bench"."""
    text = text.replace("\\", "/")
    return "bench/" in text or text == "bench" or text.endswith("/bench")


def bench_in_code(code: str, filename: str = "<string>") -> list[str]:
    """String literals (f-strings' parts included) naming bench/ or joined into a path to it
    (`ROOT / "bench" / "results"`, `os.path.join(root, "bench")`), docstrings excepted."""
    tree = ast.parse(code, filename=filename)
    docs = docstring_nodes(tree)
    return [f"{filename}:{node.lineno}: {node.value!r}" for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in docs and names_bench(node.value)]


def graph(package_dir: Path = PACKAGE) -> list[Edge]:
    return list(_package_graph() if package_dir == PACKAGE else _graph(package_dir))


@functools.cache  # minitf/ does not change during a test session (a planted copy may: not cached)
def _package_graph() -> tuple[Edge, ...]:
    return _graph(PACKAGE)


def _graph(package_dir: Path) -> tuple[Edge, ...]:
    files = package_modules(package_dir)
    return tuple(e for name, path in files.items()
                 for e in imports_of(name, path.read_text(encoding="utf-8"), set(files),
                                     is_package=path.name == "__init__.py", filename=str(path)))


def find_cycle(edges: list[Edge]) -> list[str] | None:
    """One cycle of the graph as a path of modules (first == last), or None."""
    succ: dict[str, set[str]] = {}
    for e in edges:
        if e.source != e.target:
            succ.setdefault(e.source, set()).add(e.target)
    state: dict[str, int] = {}   # 1: on the current path, 2: done
    path: list[str] = []

    def dfs(node):
        state[node] = 1
        path.append(node)
        for nxt in sorted(succ.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := dfs(nxt)):
                return found
        state[node] = 2
        path.pop()
        return None

    for start in sorted(succ):
        if start not in state and (found := dfs(start)):
            return found
    return None


def short(module: str) -> str:
    return module.removeprefix("minitf.") if module != "minitf" else "minitf (face)"


def describe(edges: list[Edge], package_dir: Path = PACKAGE) -> str:
    """The graph in words: each part, its modules, and what each module imports of minitf."""
    modules = package_modules(package_dir)
    out: dict[str, dict[str, set[str]]] = {}
    for name in modules:
        out.setdefault(part_of(name), {}).setdefault(name, set())
    for e in edges:
        if e.source != e.target:
            out[part_of(e.source)][e.source].add(short(e.target) + ("*" if e.where == "function" else ""))
    lines = [f"minitf import graph: {len(modules)} modules, "
             f"{len({(e.source, e.target) for e in edges if e.source != e.target})} arrows "
             "(* = imported only inside a function)"]
    for part in ("face", "door", *WINGS):
        lines.append(f"\n[{part}]")
        for name, targets in sorted(out.get(part, {}).items()):
            # an import made both at module level and in a function shows once, unstarred
            plain = {t for t in targets if not t.endswith("*")}
            shown = sorted(plain | {t for t in targets if t.endswith("*") and t[:-1] not in plain})
            lines.append(f"  {short(name):28s} -> {', '.join(shown) if shown else '(nothing of minitf)'}")
    between = {}
    for e in edges:
        a, b = part_of(e.source), part_of(e.target)
        if a != b:
            between[(a, b)] = between.get((a, b), 0) + 1
    lines.append("\nbetween parts (imports, one per statement and module imported):")
    lines += [f"  {a:11s} -> {b:11s} {n}" for (a, b), n in sorted(between.items())]
    return "\n".join(lines)


# --- the notebooks: the face, minitf.notebook and the wings, no other door -------------------------

NOTEBOOKS = ROOT / "notebooks"
NOTEBOOK_DOORS = {"minitf", "minitf.notebook"}   # every notebook's two doors: the face and setup()
# A door a notebook may use beyond those two, with the reason. Any other use of a door in a lesson
# ties it to a surface made for something else (a renamed flag of the CLI breaks the lesson).
NOTEBOOK_DOOR_EXCEPTIONS = {
    ("10_lightning.ipynb", "minitf.lightning"):
        "notebook 10 teaches the optional Lightning extra, and minitf.lightning is that extra: "
        "its data module, fit() and the checkpoint conversion are the lesson",
}


def door_of(module: str) -> str:
    """The door a module belongs to: `minitf.cli.parser` -> `minitf.cli`."""
    return ".".join(module.split(".")[:2])


def doors_in_notebook(path: Path, modules: set[str]) -> list[tuple[str, str]]:
    """(where, door) for each door other than the face and minitf.notebook that the notebook's code
    cells import or reach by attribute (`minitf.cli.main(...)`). IPython's `%` and `!` lines are
    left out: they are not Python."""
    found = []
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    for n, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        code = "\n".join(line for line in "".join(cell["source"]).splitlines()
                         if not line.lstrip().startswith(("%", "!")))
        where = f"{path.name} cell {n} (from 0)"
        targets = [(e.target, e.line) for e in imports_of("notebook", code, modules, filename=where)]
        targets += [(f"minitf.{node.attr}", node.lineno) for node in ast.walk(ast.parse(code, where))
                    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id == "minitf" and f"minitf.{node.attr}" in modules]
        for target, line in targets:
            door = door_of(target)
            if part_of(target) == "door" and door not in NOTEBOOK_DOORS:
                found.append((f"{where} line {line}", door))
    return found


def doors_broken(path: Path, modules: set[str]) -> list[str]:
    return [f"{where}: uses the door {door}" for where, door in doors_in_notebook(path, modules)
            if (path.name, door) not in NOTEBOOK_DOOR_EXCEPTIONS]


# --- the tests -----------------------------------------------------------------------------------

def test_the_package_has_the_four_wings_and_the_doors():
    modules = package_modules()
    assert {part_of(m) for m in modules} == {"face", "door", *WINGS}
    for wing in WINGS:
        assert f"minitf.{wing}" in modules, f"minitf/{wing}/__init__.py is missing"
    # a door may be a package: every module of minitf/cli/ is the command line's door
    assert {part_of(m) for m in modules if m.startswith("minitf.cli")} == {"door"}
    assert {"minitf.cli", "minitf.cli.parser", "minitf.cli.train_cmd"} <= set(modules)


def test_the_library_and_the_wings_keep_to_their_imports():
    broken = [why for e in graph() if (why := rule_broken(e))]
    assert not broken, "the house's import rules are broken:\n" + "\n".join(broken)


def test_minitf_is_taken_from_sys_modules_only_where_listed():
    reads = [r for name, path in package_modules().items()
             for r in loaded_module_reads(name, path.read_text(encoding="utf-8"))]
    unlisted = [r for r in reads if (r[0], r[1]) not in LOADED_FACE_READS]
    assert not unlisted, f"sys.modules['minitf…'] outside LOADED_FACE_READS: {unlisted}"
    assert {(a, b) for a, b, _ in reads} == LOADED_FACE_READS, "a listed exception is gone: unlist it"


def test_no_package_file_names_or_reads_bench_in_code():
    found = [hit for path in sorted(PACKAGE.rglob("*.py"))
             for hit in bench_in_code(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))]
    assert not found, ("bench/ is not part of the installed package; these strings name it:\n"
                       + "\n".join(found))


ROOM_LINES = 600  # one concept per room: a module over this many lines holds several


def test_no_module_is_over_600_lines():
    sizes = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in package_modules().items()}
    large = {name: n for name, n in sizes.items() if n > ROOM_LINES}
    assert not large, f"modules over {ROOM_LINES} lines (split them along their jobs): {large}"


def test_the_import_graph_has_no_cycle():
    cycle = find_cycle(graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_graph_sees_every_kind_of_import():
    """The face imports every wing; imports inside functions are found (views/explorer_picture
    reaches for heatmaps only when it draws); `from . import x` resolves to the submodule."""
    edges = graph()
    pairs = {(e.source, e.target) for e in edges}
    assert {("minitf", f"minitf.{w}.{m}") for w, m in
            [("core", "model"), ("course", "parts"), ("views", "explorer"), ("experiments", "results")]} <= pairs
    assert any(e.source == "minitf.views.explorer_picture" and e.target == "minitf.views.heatmaps"
               and e.where == "function" for e in edges)
    assert ("minitf.core.train", "minitf.core.data") in pairs


def test_no_notebook_uses_a_door_but_minitf_and_minitf_notebook():
    modules = set(package_modules())
    notebooks = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    assert len(notebooks) >= 10
    found = [why for path in notebooks for why in doors_broken(path, modules)]
    assert not found, ("a notebook uses a door other than minitf and minitf.notebook (use the wing the "
                       "door calls, or list it in NOTEBOOK_DOOR_EXCEPTIONS with its reason):\n"
                       + "\n".join(found))


def test_each_door_a_notebook_is_allowed_is_still_used():
    modules = set(package_modules())
    for (name, door), reason in NOTEBOOK_DOOR_EXCEPTIONS.items():
        assert door in modules and part_of(door) == "door" and reason
        assert door in {d for _, d in doors_in_notebook(NOTEBOOKS / name, modules)}, \
            f"{name} no longer uses {door}: drop it from NOTEBOOK_DOOR_EXCEPTIONS"


# --- the checker checked: fed a violation, it must fail -----------------------------------------

MODULES = {"minitf", "minitf.core", "minitf.core.model", "minitf.core.train", "minitf.views",
           "minitf.views.trace", "minitf.course", "minitf.course.parts", "minitf.experiments",
           "minitf.experiments.results", "minitf.cli", "minitf.notebook"}


def broken(source: str, code: str) -> list[str]:
    """The rules `code` breaks as module `source` (a package when a module of MODULES is below it)."""
    is_package = any(m.startswith(source + ".") for m in MODULES)
    return [why for e in imports_of(source, code, MODULES, is_package) if (why := rule_broken(e))]


# (the importing module, its code): imports the checker must reject
REJECTED = [
    # the library importing a wing, a door or the face
    ("minitf.core.model", "from ..views.trace import trace"),
    ("minitf.core.model", "import minitf.course.parts"),
    ("minitf.core.model", "from minitf import cli"),
    ("minitf.core.model", "def f():\n    from ..experiments import results\n"),
    ("minitf.core.model", "def f():\n    if True:\n        import minitf\n"),  # the face
    ("minitf.core.model", "import importlib\nimportlib.import_module('minitf.views.trace')"),
    ("minitf.core", "from ..views import trace"),
    # a wing importing another wing, a door or the face
    ("minitf.views.trace", "from ..course.parts import check"),
    ("minitf.views.trace", "def f():\n    from minitf.experiments.results import RESULTS\n"),
    ("minitf.course.parts", "from .. import notebook"),
    ("minitf.course.parts", "from .. import Transformer"),  # the face
    ("minitf.experiments.results", "import minitf"),
    ("minitf.experiments", "from ..views import trace"),
]
# and imports it must let through
ALLOWED = [
    ("minitf.core.model", "from .train import make_optimizer\nfrom . import train"),
    ("minitf.core.model", "from minitf.core.train import make_optimizer\nimport torch"),
    ("minitf.views.trace", "from ..core.model import Transformer\nfrom . import trace"),
    ("minitf.views.trace", "from .. import core"),
    # the doors and the face may import any wing
    ("minitf.cli", "from .views.trace import trace\nfrom .course import parts"),
    ("minitf", "from .experiments import results"),
]


@pytest.mark.parametrize("source, code, rejected", [(*r, True) for r in REJECTED] + [(*a, False) for a in ALLOWED])
def test_the_checker_rejects_a_wrong_import_and_lets_a_rooms_own_and_the_doors_through(source, code, rejected):
    assert bool(broken(source, code)) == rejected


def test_the_checker_names_the_edge_it_rejects():
    (why,) = broken("minitf.core.train", "\n\ndef f():\n    from ..views import trace\n")
    assert "minitf.core.train -> minitf.views.trace (line 4, function level)" in why
    assert why.startswith("the library (core) imports the views")


def test_the_checker_catches_bench_in_code_but_not_in_a_docstring_or_comment():
    code = ('"""Written by bench/ablation.py."""\n'
            '# bench/results was here\n'
            'def f():\n'
            '    """Read what bench/lm.py stored."""\n'
            '    return 1\n')
    assert not bench_in_code(code)
    assert bench_in_code('from pathlib import Path\nRESULTS = Path(__file__).parents[1] / "bench/results"\n')
    assert bench_in_code('def f(date):\n    return f"Run {date} by `python bench/ablation.py`"\n')
    assert bench_in_code('P = "bench\\\\lm.py"\n')
    # a path built to it, part by part, as minitf/course/course_map.py once read make bench's run times
    assert bench_in_code('from pathlib import Path\nROOT = Path(__file__).parents[2]\n'
                         'RUN_TIMES = ROOT / "bench" / "results" / "bench_notebooks.json"\n')
    assert bench_in_code('import os\nP = os.path.join(os.path.dirname(__file__), "..", "bench")\n')
    assert not bench_in_code('BENCHMARK = "benchmark"\nname = "lm_bench_steps"\n')  # other words are fine


def test_the_checker_finds_a_cycle_through_a_function_level_import():
    modules = {"minitf.core.a", "minitf.core.b", "minitf.core.c"}
    edges = (imports_of("minitf.core.a", "from .b import x", modules)
             + imports_of("minitf.core.b", "from .c import y", modules)
             + imports_of("minitf.core.c", "def f():\n    from . import a\n", modules))
    assert find_cycle(edges) == ["minitf.core.a", "minitf.core.b", "minitf.core.c", "minitf.core.a"]
    assert find_cycle(edges[:2]) is None


@pytest.mark.slow
def test_the_checker_sees_a_planted_violation_in_a_real_package_tree(tmp_path):
    """The whole path, files to verdict: a copy of minitf with one bad import and one cycle."""
    import shutil
    copy = tmp_path / "minitf"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("stored", "static", "__pycache__"))
    assert not [e for e in graph(copy) if rule_broken(e)] and find_cycle(graph(copy)) is None
    tokens = copy / "core" / "tokens.py"   # heatmaps imports tokens: this closes a circle
    tokens.write_text(tokens.read_text() + "\n\ndef _late():\n    from ..views import heatmaps\n")
    assert [e for e in graph(copy) if rule_broken(e)]
    cycle = find_cycle(graph(copy))
    assert cycle and "minitf.core.tokens" in cycle and "minitf.views.heatmaps" in cycle


def test_the_notebook_guard_fails_on_a_planted_notebook(tmp_path):
    """A copy of notebook 02 with one added cell: each door but the allowed ones is caught, by import
    or by attribute; 10's exception is 10's alone; the face, minitf.notebook and a wing pass."""
    modules = set(package_modules())
    real = json.loads((NOTEBOOKS / "02_rope.ipynb").read_text(encoding="utf-8"))

    def planted(code: str, name: str = "02_rope.ipynb") -> list[str]:
        nb = dict(real, cells=real["cells"] + [{"cell_type": "code", "execution_count": None,
                                                "metadata": {}, "outputs": [], "source": [code]}])
        path = tmp_path / name
        path.write_text(json.dumps(nb), encoding="utf-8")
        return doors_broken(path, modules)

    assert planted("import minitf\nminitf.notebook.setup()\nfrom minitf.core import rope\n%time 1") == []
    for code, door in [("from minitf.cli import checkpoint_pairs", "minitf.cli"),
                       ("import minitf.cli.parser", "minitf.cli"),
                       ("from minitf import doctor", "minitf.doctor"),
                       ("import minitf\nminitf.doctor.main([])", "minitf.doctor"),
                       ("def f():\n    from minitf.lightning import fit", "minitf.lightning")]:
        (why,) = planted(code)
        assert door in why and "02_rope.ipynb cell" in why, (code, why)
    assert planted("from minitf.lightning import fit", name="10_lightning.ipynb") == []
    assert planted("from minitf.cli import main", name="10_lightning.ipynb")


def test_the_graph_prints():
    """`pytest -s tests/test_architecture.py -k prints` (or `python tests/test_architecture.py`)."""
    text = describe(graph())
    print("\n" + text)
    assert all(f"\n[{part}]\n" in text for part in ("face", "door", *WINGS))
    assert "  core.model " in text and "  face        -> core " in text


def test_the_tests_weigh_no_more_than_the_package():
    """Lines of Python in tests/ are at most minitf/'s: tests that outweigh the code slow every change."""
    def lines(folder):
        return sum(len(p.read_bytes().splitlines()) for p in (ROOT / folder).rglob("*.py")
                   if "__pycache__" not in p.parts)
    assert lines("tests") <= lines("minitf"), (lines("tests"), lines("minitf"))


if __name__ == "__main__":
    edges = graph()
    print(describe(edges))
    problems = [why for e in edges if (why := rule_broken(e))]
    cycle = find_cycle(edges)
    doors = [why for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
             for why in doors_broken(path, set(package_modules()))]
    print("\nrules:", "kept" if not problems else "BROKEN\n  " + "\n  ".join(problems))
    print("cycle:", "none" if cycle is None else " -> ".join(cycle))
    print("notebooks' doors:", "kept" if not doors else "BROKEN\n  " + "\n  ".join(doors))
    sys.exit(1 if problems or cycle or doors else 0)
