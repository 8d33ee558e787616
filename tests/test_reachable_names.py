"""Every name the course shows a learner can be reached.

- A module the face shadows (the face binds the function `minitf.train` where the module was, so
  before the wings `minitf.train.make_optimizer` raised AttributeError) is reachable under its wing:
  `from minitf.core.train import make_optimizer`, `minitf.core.train.make_optimizer`.
- Every `import minitf.X`, `from minitf.X import Y` and `minitf.X.Y` in the notebooks' code cells,
  the README's and docs/'s code blocks, and every `minitf.X.Y` those pages name in backticks,
  resolves in a fresh interpreter. A failure names the file (and cell) and the name.
- Every path the README and docs/ name (`minitf/…`, `bench/…`, `data/…`, `tests/…`, …) exists.
"""
from __future__ import annotations

import ast
import json
import re
import subprocess
import sys

import pytest

import minitf
from support import ROOT, cells

# slow as a whole: each module builds something once (a wheel, the site, a fresh interpreter's view)
pytestmark = pytest.mark.slow

# each shadowed module of the face with a name that lives only in the module
SHADOWED = {"minitf.core.train": "make_optimizer", "minitf.core.generate": "continue_ids",
            "minitf.core.evaluate": "greedy_outputs", "minitf.views.trace": "Trace",
            "minitf.core.checkpoint": "CheckpointError", "minitf.core.attention": "MultiHeadAttention",
            "minitf.course.exercises": "run_check"}


def package_modules() -> list[str]:
    names = []
    for py in sorted((ROOT / "minitf").rglob("*.py")):
        parts = list(py.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names.append(".".join(parts))
    return names


def shadowed_by_the_face() -> dict[str, object]:
    """Modules whose last name the face binds to something else: `minitf.train` is a function."""
    out = {}
    for name in package_modules():
        last = name.rsplit(".", 1)[-1]
        if name.count(".") >= 2 and hasattr(minitf, last) and getattr(minitf, last) is not sys.modules.get(name):
            out[name] = getattr(minitf, last)
    return out


def test_the_shadowed_modules_are_the_ones_this_test_names():
    shadowed = shadowed_by_the_face()
    assert {"minitf.core.train", "minitf.core.generate", "minitf.core.evaluate", "minitf.views.trace"} <= set(shadowed)
    assert set(shadowed) <= set(SHADOWED) | {"minitf.core.attention", "minitf.course.exercises"}, \
        f"a newly shadowed module: add it to SHADOWED {sorted(set(shadowed) - set(SHADOWED))}"


def shadowed_uses():
    """The wing's module, imported from and read as attributes after `import minitf` alone."""
    for module, name in sorted(SHADOWED.items()):
        yield f"shadowed {module}", "from", f"{module}:{name}", ()
        yield f"shadowed {module}", "chain", f"{module}.{name}", ()


# --- what the notebooks and the documents use ----------------------------------------------------

def is_minitf(name: str) -> bool:
    return name == "minitf" or name.startswith("minitf.")


def uses(code: str) -> list[tuple[str, str, tuple[str, ...]]]:
    """(kind, name, imports) for each use of minitf in a piece of code: kind "import" (a module),
    "from" (a module and a name, `module:name`), "chain" (a dotted name read as attributes, after
    the piece's own imports: `imports`)."""
    tree = ast.parse(code)
    aliases: dict[str, str] = {}     # a local name → the dotted name it stands for
    imported: list[str] = []
    found = []
    reassigned = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if is_minitf(a.name):
                    found.append(("import", a.name))
                    imported.append(a.name)
                    aliases[a.asname or "minitf"] = a.name if a.asname else "minitf"
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level and is_minitf(node.module):
            imported.append(node.module)
            for a in node.names:
                found.append(("from", f"{node.module}:{a.name}"))
                aliases[a.asname or a.name] = f"{node.module}.{a.name}"
                imported.append(f"{node.module}.{a.name}")  # `from minitf import doctor` imports a module
    aliases = {k: v for k, v in aliases.items() if k == "minitf" or k not in reassigned}
    aliases.setdefault("minitf", "minitf")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain, inner = [node.attr], node.value
            while isinstance(inner, ast.Attribute):
                chain.append(inner.attr)
                inner = inner.value
            if isinstance(inner, ast.Name) and inner.id in aliases:
                found.append(("chain", ".".join([aliases[inner.id], *reversed(chain)])))
    # a chain inside a longer one is checked by the longer one
    chains = {n for k, n in found if k == "chain"}
    found = [(k, n) for k, n in found
             if k != "chain" or not any(c.startswith(n + ".") for c in chains)]
    return [(k, n, tuple(imported)) for k, n in dict.fromkeys(found)]


def notebook_uses():
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for i, cell in enumerate(cells(nb)):
            if cell["cell_type"] != "code":
                continue
            src = "\n".join(l for l in "".join(cell["source"]).splitlines()
                            if not l.lstrip().startswith(("%", "!")))
            try:
                found = uses(src)
            except SyntaxError as e:
                raise AssertionError(f"{nb.name} cell {i}: not Python: {e}") from e
            for kind, name, imports in found:
                yield f"notebooks/{nb.name} cell {i}", kind, name, imports


MENTION = re.compile(r"`[^`\n]*?\b(minitf(?:\.[A-Za-z_]\w*)+)")
CODE_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
# the pages a newcomer reads: the README and every page of docs/
DOCUMENTS = ["README.md", *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))]


def document_uses():
    for doc in DOCUMENTS:
        text = (ROOT / doc).read_text()
        for lang, body in CODE_BLOCK.findall(text):
            if lang in ("python", "py", "pycon"):
                for kind, name, imports in uses(body):
                    yield f"{doc} (python block)", kind, name, imports
        prose = CODE_BLOCK.sub("", text)
        for name in dict.fromkeys(MENTION.findall(prose)):
            yield f"{doc} (`{name}`)", "mention", name, ()


# runs in a fresh interpreter: chains are read with the face alone (as a notebook that only did
# `import minitf` would); those that fail are read again, in an interpreter per piece ("imports": the
# piece's own imports, done first), where a chain that fails is a failure. A mention may import its module.
RESOLVE = r'''
import importlib, json, sys
import minitf

def chain(dotted):
    obj = minitf
    for part in dotted.split(".")[1:]:
        obj = getattr(obj, part)
    return obj

def mention(dotted):
    parts = dotted.split(".")
    for n in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:n]))
        except ImportError:
            continue
        for part in parts[n:]:
            obj = getattr(obj, part)
        return obj
    raise ImportError(dotted)

request = json.loads(sys.stdin.read())
for module in request["imports"] or ():
    try:
        importlib.import_module(module)
    except ImportError:
        pass                                       # reported by its own import
failed, later = [], []
for where, kind, name, imports in request["items"]:   # first: chains, before any import of the items
    if kind == "chain":
        try:
            chain(name)
        except Exception as e:
            if request["imports"] is None and isinstance(e, AttributeError):
                later.append((where, kind, name, imports))
            else:
                failed.append(f"{where}: {name} ({type(e).__name__}: {e})")
for where, kind, name, imports in request["items"]:
    try:
        if kind == "import":
            importlib.import_module(name)
        elif kind == "from":
            module, attr = name.split(":")
            m = importlib.import_module(module)
            if not hasattr(m, attr):
                try:
                    importlib.import_module(f"{module}.{attr}")
                except ModuleNotFoundError:
                    raise ImportError(f"cannot import name {attr!r} from {module!r}") from None
        elif kind == "mention":
            mention(name)
    except Exception as e:
        failed.append(f"{where}: {name.replace(':', ' import ')} ({type(e).__name__}: {e})")
print(json.dumps({'failed': failed, 'later': later}))
'''


def run(items, imports=None) -> dict:
    request = json.dumps({"items": list(items), "imports": imports})
    done = subprocess.run([sys.executable, "-c", RESOLVE], input=request, capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def unresolved(items) -> list[str]:
    """What does not resolve, as `where: name (error)`; a piece's chains are read after its own
    imports only, never after another piece's."""
    first = run(items)
    failed = first["failed"]
    pieces: dict[str, list] = {}
    for item in first["later"]:
        pieces.setdefault(item[0], []).append(item)
    for piece in pieces.values():
        failed += run(piece, list(dict.fromkeys(m for *_, imports in piece for m in imports)))["failed"]
    return failed


SELF_TEST = ("import minitf\nimport minitf.core.kv_cache\nminitf.core.kv_cache.KVCache\n"
             "from minitf.core.train import make_optimizer\nminitf.train.make_optimizer\n"
             "from minitf.nowhere import x\nfrom minitf.views.trace import Nothing\n"
             "minitf.views.lm_view.TextSampler\n")
SELF_TEST_OK = "import minitf.views.lm_view\nminitf.views.lm_view.TextSampler\n"


@pytest.fixture(scope="module")
def resolved():
    """One fresh interpreter resolves everything; each test reads the failures of its part."""
    items = {"notebooks": list(notebook_uses()), "documents": list(document_uses()),
             "shadowed": list(shadowed_uses()),
             "self-test": [("demo.ipynb cell 3", k, n, i) for k, n, i in uses(SELF_TEST)]}
    failed = unresolved([(f"{part}|{where}", k, n, i) for part, found in items.items()
                         for where, k, n, i in found])
    # the self-test's good piece in an interpreter of its own: the bad piece imported things
    items["self-test ok"] = [("ok", k, n, i) for k, n, i in uses(SELF_TEST_OK)]
    return items, {part: [f.split("|", 1)[1] for f in failed if f.startswith(part + "|")]
                   for part in items} | {"self-test ok": unresolved(items["self-test ok"])}


def test_every_shadowed_module_is_reachable_in_a_fresh_interpreter(resolved):
    items, failed = resolved
    assert len(items["shadowed"]) == 2 * len(SHADOWED)
    assert not failed["shadowed"], "\n".join(failed["shadowed"])


def test_every_minitf_name_in_the_notebooks_resolves(resolved):
    items, failed = resolved
    assert len({n for _, k, n, _ in items["notebooks"] if k == "from"}) > 20  # the parse found them
    assert not failed["notebooks"], "names the notebooks use that do not resolve:\n" + "\n".join(failed["notebooks"])


def test_every_minitf_name_in_readme_and_docs_resolves(resolved):
    items, failed = resolved
    assert any(k == "chain" and n == "minitf.Transformer" for _, k, n, _ in items["documents"])
    assert not failed["documents"], \
        "names the README or docs/ use that do not resolve:\n" + "\n".join(failed["documents"])


def test_the_resolver_names_the_notebook_and_the_name_that_fail(resolved):
    failed = resolved[1]["self-test"]
    assert len(failed) == 4, failed
    assert failed[0].startswith("demo.ipynb cell 3: minitf.nowhere import x (ModuleNotFoundError")
    assert failed[1].startswith("demo.ipynb cell 3: minitf.views.trace import Nothing (ImportError")
    assert failed[2].startswith("demo.ipynb cell 3: minitf.train.make_optimizer (AttributeError")
    # lm_view is imported neither by the face nor by this piece: a fresh kernel fails there too
    assert failed[3].startswith("demo.ipynb cell 3: minitf.views.lm_view.TextSampler (AttributeError")
    assert resolved[1]["self-test ok"] == []


# --- paths the documents name ------------------------------------------------------------------

PATH = re.compile(r"(?<![\w./-])((?:minitf|bench|data|tests|notebooks|\.ci)/[\w./*{},-]*[\w*}])")


def test_every_path_readme_and_docs_name_exists():
    missing = []
    for doc in DOCUMENTS:
        for path in dict.fromkeys(PATH.findall((ROOT / doc).read_text())):
            if path.startswith(("bench/out", "notebooks/my_parts")) or "*" in path or "/NN_" in path:  # made by a run; a placeholder
                continue
            # `minitf/experiments/stored/ablation.{json,md}` names two files
            options = re.match(r"(.*)\{(.*)\}(.*)", path)
            paths = [options[1] + o + options[3] for o in options[2].split(",")] if options else [path]
            missing += [f"{doc}: {p}" for p in paths if not (ROOT / p).exists()]
    assert not missing, "paths named but not in the repository:\n" + "\n".join(missing)


def test_the_readme_package_section_names_every_module():
    text = (ROOT / "docs" / "package-tour.md").read_text()
    section = text[text.index("## The package"):]
    section = section[:section.index("\n## ", 1)]
    named = set(re.findall(r"`(minitf/[\w/]+\.py)`", section))
    folders = set(re.findall(r"`(minitf/[\w/]+/)`", section))  # a package of rooms, one row for all
    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "minitf").rglob("*.py")
               if p.name != "__init__.py" or p.parent == ROOT / "minitf"}
    left_out = {m for m in modules - named if m.rsplit("/", 1)[0] + "/" not in folders}
    assert not left_out, f"modules the README's package section leaves out: {sorted(left_out)}"
    for wing in ("core", "course", "views", "experiments"):
        assert f"**`minitf/{wing}/`**" in section
