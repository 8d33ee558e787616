"""The package as `pip install minitf` gives it: built into a wheel, installed (not editable) into a
fresh virtual environment, and used from a folder outside the repository.

The editable install in .venv points back at this repository, so a file the wheel leaves out (a
wing, the Explorer's JavaScript, a stored result) would go unnoticed there. Here the repository's
minitf/ cannot be imported: the test environment sees .venv's packages (torch, matplotlib, …) through
a .pth line, which adds their folder to sys.path without running .venv's own .pth files, so the
editable install's import hook never loads; the run starts in an empty folder without PYTHONPATH.
"""
from __future__ import annotations

import ast
import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
import venv
import zipfile
from pathlib import Path

import pytest

from support import ROOT

# slow as a whole: each module builds something once (a wheel, the site, a fresh interpreter's view)
pytestmark = pytest.mark.slow

WINGS = ("core", "course", "views", "experiments")
ESSENTIAL = {"minitf/__init__.py", "minitf/cli/__init__.py", *(f"minitf/{w}/__init__.py" for w in WINGS),
             "minitf/views/static/explorer.js", "minitf/views/static/explorer.css",
             "minitf/experiments/stored/origami_seed_model.pt"}


def package_files(root: Path = ROOT) -> set[str]:
    """Every file of the source package, as the wheel names it (compiled files aside)."""
    return {p.relative_to(root).as_posix() for p in (root / "minitf").rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}


def wheel_problems(names: list[str], source: set[str]) -> list[str]:
    """What a wheel's file list lacks: any file of the source package, a wing, the Explorer's
    JavaScript or CSS, a stored result."""
    shipped = set(names)
    return [f"not in the wheel: {f}" for f in sorted((source | ESSENTIAL) - shipped)]


def loaders() -> set[str]:
    """Every `load_*` function of minitf/experiments, read from the source: the installed package
    must load each of them, and a new one is checked without editing this test."""
    found = set()
    for py in sorted((ROOT / "minitf" / "experiments").glob("*.py")):
        module = "minitf.experiments." + py.stem
        found |= {f"{module}.{n.name}" for n in ast.parse(py.read_text()).body
                  if isinstance(n, ast.FunctionDef) and n.name.startswith("load_")}
    return found


PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]

# what runs inside the installed package, from an empty folder; prints one JSON line
PROBE = r'''
import hashlib, importlib, inspect, json, pkgutil, sys
from pathlib import Path
import minitf
home = Path(minitf.__file__).parent
for info in pkgutil.walk_packages(minitf.__path__, "minitf."):
    # __main__ runs the command line; lightning is optional and slow to import (tests/test_lightning.py)
    if info.name not in ("minitf.__main__", "minitf.lightning"):
        importlib.import_module(info.name)
loaded = {}
for name, module in sorted(sys.modules.items()):
    if not name.startswith("minitf.experiments."):
        continue
    for attr, fn in sorted(vars(module).items()):
        if attr.startswith("load_") and inspect.isfunction(fn) and fn.__module__ == name:
            result = fn()
            if isinstance(result, tuple):  # a stored model and the tokenizer it reads (load_bpe_model)
                model, tokenizer = result
                works = tokenizer.decode(tokenizer.encode(b"To be")) == b"To be"
                seen = {"type": "model", "text": minitf.count_parameters(model) if works else 0}
            else:
                seen = {"type": type(result).__name__, "text": len(result.table())}
            if hasattr(result, "start_model"):
                model = result.start_model()
                seen["start_model"] = {"path": str(result.start_model_path),
                                       "parameters": minitf.count_parameters(model)}
            loaded[f"{name}.{attr}"] = seen
static = minitf.views.explorer.STATIC
print(json.dumps({
    "file": minitf.__file__,
    "modules": {n: getattr(m, "__file__", None) for n, m in sys.modules.items()
                if n == "minitf" or n.startswith("minitf.")},
    "sys_path": sys.path,
    "editable_hook": any("editable" in (type(f).__name__ + getattr(f, "__name__", "") + repr(f)).lower()
                         for f in sys.meta_path) or any("editable" in n for n in sys.modules),
    "stored": str(minitf.results.RESULTS),
    "loaded": loaded,
    "static": {f: hashlib.sha256((static / f).read_bytes()).hexdigest() if (static / f).is_file() else None
               for f in ("explorer.js", "explorer.css")},
}))
'''


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """The wheel, built from a clean copy of the source (no stale build/ of this checkout)."""
    tmp = tmp_path_factory.mktemp("wheel")
    start = time.perf_counter()
    src = tmp / "src"
    shutil.copytree(ROOT / "minitf", src / "minitf", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    subprocess.run([*PIP, "wheel", str(src), "--no-deps", "--no-build-isolation", "--no-index",
                    "-q", "-w", str(tmp / "dist")], check=True, capture_output=True, text=True)
    (built,) = (tmp / "dist").glob("minitf-*.whl")
    print(f"\nwheel built in {time.perf_counter() - start:.1f} s")
    return built


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory):
    """The wheel installed into a new environment, and PROBE's report from a folder elsewhere."""
    tmp = tmp_path_factory.mktemp("installed")
    start = time.perf_counter()
    env_dir = tmp / "env"
    venv.EnvBuilder(with_pip=False).create(env_dir)  # from the base interpreter, not .venv
    paths = {"base": str(env_dir), "platbase": str(env_dir)}
    site = Path(sysconfig.get_path("purelib", "venv", vars=paths))
    ours = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}  # .venv's packages
    (site / "_minitf_test_dependencies.pth").write_text("\n".join(sorted(ours)) + "\n")
    python = Path(sysconfig.get_path("scripts", "venv", vars=paths)) / Path(sys.executable).name
    subprocess.run([*PIP, "--python", str(python), "install", "--no-deps", "--no-index", "-q",
                    str(wheel)], check=True, capture_output=True, text=True)
    installing = time.perf_counter() - start

    start = time.perf_counter()
    work = tmp / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONNOUSERSITE"] = "1"
    done = subprocess.run([str(python), "-c", PROBE], cwd=work, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    print(f"\ninstalled in {installing:.1f} s, probed in {time.perf_counter() - start:.1f} s")
    return {"report": json.loads(done.stdout.splitlines()[-1]), "site": site, "scripts": python.parent}


def under(path: str | None, folder: Path) -> bool:
    return path is not None and Path(path).resolve().is_relative_to(folder.resolve())


def test_the_wheel_holds_every_file_of_the_package(wheel):
    problems = wheel_problems(zipfile.ZipFile(wheel).namelist(), package_files())
    assert not problems, "\n".join(problems)


def test_minitf_comes_from_the_install_and_the_repository_is_not_importable(installed):
    report, site = installed["report"], installed["site"]
    assert under(report["file"], site) and not under(report["file"], ROOT)
    outside = {n: f for n, f in report["modules"].items() if f is not None and not under(f, site)}
    assert not outside, f"modules loaded from outside the install: {outside}"
    assert {f"minitf.{w}" for w in WINGS} <= set(report["modules"])
    assert not report["editable_hook"], "the editable install's import hook is active"
    assert not [p for p in report["sys_path"] if p and Path(p).resolve() == ROOT.resolve()]
    assert under(report["stored"], site)


def test_every_stored_result_loads_from_the_install(installed):
    loaded = installed["report"]["loaded"]
    assert set(loaded) == loaders()
    assert {"minitf.experiments.ablation.load_ablation", "minitf.experiments.origami_growth.load_growth",
            "minitf.experiments.origami_growth.load_recipe_growth",
            "minitf.experiments.lm_growth.load_lm_growth",
            "minitf.experiments.smallest.load_tiny_sweep"} <= set(loaded)
    start = loaded["minitf.experiments.origami_growth.load_growth"]["start_model"]
    assert under(start["path"], installed["site"]) and start["parameters"] > 0
    assert all(seen["text"] > 0 for seen in loaded.values())


def test_the_explorer_javascript_and_css_are_installed_as_in_the_repository(installed):
    static = ROOT / "minitf" / "views" / "static"
    assert installed["report"]["static"] == {
        f: hashlib.sha256((static / f).read_bytes()).hexdigest() for f in ("explorer.js", "explorer.css")}


def test_the_install_has_the_minitf_command(installed):
    script = installed["scripts"] / "minitf"
    assert script.is_file() and "minitf.cli" in script.read_text()


def test_a_wheel_without_a_wing_or_the_javascript_fails():
    """The list check, fed wheels with a part missing: it must say what is missing."""
    source = package_files()
    full = sorted(source)
    assert wheel_problems(full, source) == []
    no_views = [n for n in full if not n.startswith("minitf/views/")]
    assert "not in the wheel: minitf/views/__init__.py" in wheel_problems(no_views, source)
    no_js = [n for n in full if not n.endswith("explorer.js")]
    assert wheel_problems(no_js, source) == ["not in the wheel: minitf/views/static/explorer.js"]
    no_stored = [n for n in full if "/stored/" not in n]
    assert "not in the wheel: minitf/experiments/stored/ablation.json" in wheel_problems(no_stored, source)
    # the essentials are checked even if the source lost them too
    assert wheel_problems([n for n in full if "/course/" not in n],
                          {n for n in source if "/course/" not in n}) == ["not in the wheel: minitf/course/__init__.py"]
