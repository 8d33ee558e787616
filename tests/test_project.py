"""The project's promises about itself: set-up files agree, notebooks import rather than copy."""
import ast
import json
import pathlib
import re
import subprocess
import sys
import tomllib

import pytest
from support import ROOT, cells


def pyproject_pins(extras: bool = False):
    """name → version of the dependencies; with extras, of the optional ones too, except `browser`
    (`make test-browser` installs it through tests/browser/install.sh, not the environment)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    deps = list(project["dependencies"])
    if extras:
        deps += [d for name, group in project["optional-dependencies"].items() if name != "browser"
                 for d in group]
    return dict(d.split("==") for d in deps)


def test_every_dependency_is_pinned_and_torch_is_2_13():
    pins = pyproject_pins()
    assert pins["torch"] == "2.13.0"
    assert {"torch", "jupyterlab", "matplotlib", "nbval", "ipywidgets", "tqdm"} <= set(pins)


def test_every_optional_extra_is_pinned():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert extras["lightning"] == ["lightning==2.6.6"]
    assert all(d.count("==") == 1 for group in extras.values() for d in group)


def test_environment_yml_lists_the_same_packages_as_pyproject_extras_included():
    text = (ROOT / "environment.yml").read_text()
    conda = dict(re.findall(r"^\s*-\s*([A-Za-z0-9_.-]+)==([^\s#]+)", text, flags=re.M))
    assert conda == pyproject_pins(extras=True)


def test_make_test_and_make_lab_install_the_lightning_extra_notebook_10_needs():
    make = (ROOT / "Makefile").read_text()
    assert '-e ".[lightning]"' in make
    assert re.search(r"^test: \$\(TEST_STAMP\)", make, flags=re.M)
    assert re.search(r"^lab: \$\(TEST_STAMP\)", make, flags=re.M)


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    first_block = readme.split("```")[1]
    assert "make lab" in first_block and "make test" in first_block
    assert "make test" in (ROOT / ".ci" / "run").read_text()


@pytest.mark.slow
def test_make_lab_starts_for_root_too_and_takes_options(tmp_path):
    """`make lab LAB_ARGS=...` reaches JupyterLab, which answers on the port asked for; as root the
    Makefile adds --allow-root (JupyterLab exits at once without it)."""
    import os
    import time
    import urllib.request

    from browser.check_notebooks import free_port
    port = free_port()
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
           "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"), "JUPYTER_DATA_DIR": str(tmp_path / "data"),
           "IPYTHONDIR": str(tmp_path / "ipython")}
    lab = subprocess.Popen(["make", "--no-print-directory", "lab", f"PY={sys.executable}",
                            f"VENV={pathlib.Path(sys.executable).parents[1]}", "STAMP=", "TEST_STAMP=",
                            f"LAB_ARGS=--no-browser --ip 127.0.0.1 --port {port} "
                            "--IdentityProvider.token= --ServerApp.port_retries=0"],
                           cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, start_new_session=True)
    try:
        deadline, status = time.monotonic() + 60, None
        while time.monotonic() < deadline and lab.poll() is None:
            try:
                status = urllib.request.urlopen(f"http://127.0.0.1:{port}/lab", timeout=2).status
                break
            except OSError:
                time.sleep(0.5)
        assert status == 200, f"JupyterLab did not answer on port {port}: {lab.poll()=}"
    finally:
        os.killpg(lab.pid, 15)
        # make echoes each command: lab-settings' first, then JupyterLab's
        command = next(line for line in lab.communicate(timeout=30)[0].splitlines() if "jupyter lab" in line)
    assert f"--port {port}" in command and "--no-browser" in command
    assert ("--allow-root" in command) == (os.geteuid() == 0)


def minitf_public_names():
    names = set()
    for py in (ROOT / "minitf").rglob("*.py"):  # the wings too
        tree = ast.parse(py.read_text())
        names |= {n.name for n in tree.body
                  if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and not n.name.startswith("_")}
    return names


def notebooks():
    return sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_notebooks_are_numbered_and_use_the_standard_kernel():
    assert notebooks(), "no notebooks"
    for nb in notebooks():
        assert re.fullmatch(r"\d\d_[a-z0-9_]+\.ipynb", nb.name), nb.name
        meta = json.loads(nb.read_text())["metadata"]
        assert meta["kernelspec"]["name"] == "python3", nb.name


def test_no_notebook_redefines_what_minitf_provides():
    """Notebooks import minitf's code; a learner's exercise (cells tagged `exercise`) may redo it."""
    provided = minitf_public_names()
    # one name from each wing and a door: a glob that missed the sub-packages would check nothing
    assert {"Transformer", "exercise", "Explorer", "load_ablation", "setup"} <= provided
    copies = []
    for nb in notebooks():
        for i, cell in enumerate(cells(nb)):
            if cell["cell_type"] != "code" or "exercise" in cell["metadata"].get("tags", []):
                continue
            src = "".join(cell["source"])
            src = "\n".join(l for l in src.splitlines() if not l.lstrip().startswith(("%", "!")))
            for node in ast.parse(src).body:
                if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in provided:
                    copies.append(f"{nb.name} cell {i}: {node.name}")
    assert not copies, f"notebooks define what minitf already has: {copies}"


def test_every_notebook_starts_with_the_minitf_setup():
    for nb in notebooks():
        code = [c for c in cells(nb) if c["cell_type"] == "code"]
        assert "minitf.notebook.setup(" in "".join(code[0]["source"]), nb.name


@pytest.mark.slow
def test_setup_makes_torch_deterministic_without_importing_its_compiler():
    probe = ("import sys, torch, minitf; minitf.notebook.setup(); "
             "print(torch.are_deterministic_algorithms_enabled(), "
             "torch.is_deterministic_algorithms_warn_only_enabled(), 'torch._inductor' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "False", "False"]


def test_the_project_never_reads_the_shared_folder():
    package = [*ROOT.glob("minitf/**/*.py"), *ROOT.glob("minitf/**/static/*")]
    assert ROOT / "minitf" / "core" / "model.py" in package  # the wings are read, not only the doors
    for path in [*package, *ROOT.glob("tests/**/*.py"), *notebooks(),
                 ROOT / "Makefile", ROOT / ".ci" / "run"]:
        assert "../" + "shared" not in path.read_text(), path


# --- CONTRIBUTING names only files that exist ------------------------------------------------------

# a repository path in a Markdown page: `tests/notebooks/test_x.py`, `minitf/core/`, a bare `config.py`
NAMED_PATH = re.compile(r"(?<![\w./<-])((?:[\w.-]+/)*[\w.-]+\.(?:py|md|toml|cfg|json|ipynb|sh|yml)|"
                        r"(?:minitf|bench|data|docs|notebooks|tests|tools)/(?:[\w.-]+/)*)(?![\w/<])")
PLACEHOLDER = re.compile(r"<\w+>|(?<![A-Za-z])NN(?![A-Za-z])|\*")  # `bench/<study>.py`, `notebooks/NN_name.ipynb`


def named_paths(text: str) -> list[str]:
    """The repository paths a Markdown text names in backticks (fenced commands included), without
    placeholders."""
    spans = re.findall(r"`([^`\n]+)`", re.sub(r"^```.*$", "", text, flags=re.M)) + \
        [line for block in re.findall(r"^```\w*\n(.*?)^```", text, re.M | re.S) for line in block.splitlines()]
    found = []
    for span in spans:
        for word in span.split():
            if PLACEHOLDER.search(word) or "://" in word:
                continue
            found += [m for m in NAMED_PATH.findall(word.strip("`'\"(),:;"))]
    return list(dict.fromkeys(found))


def missing_paths(text: str, root: pathlib.Path) -> list[str]:
    """A path with a folder must exist from the root; a bare file name somewhere in the repository."""
    missing = []
    for path in named_paths(text):
        if "/" in path.rstrip("/"):
            ok = (root / path).exists()
        else:
            ok = (root / path).exists() or any(root.glob(f"minitf/**/{path}")) or any(root.glob(f"*/{path}"))
        if not ok:
            missing.append(path)
    return missing


def test_contributing_names_only_paths_that_exist():
    text = (ROOT / "CONTRIBUTING.md").read_text()
    named = named_paths(text)
    assert len(named) > 30 and "tests/test_architecture.py" in named  # the extraction finds them
    assert missing_paths(text, ROOT) == []


def test_a_moved_path_in_contributing_is_caught():
    text = ("Held by `tests/test_course_tracks.py` and `tests/notebooks/test_course_tracks.py`; see\n"
            "`bench/<study>.py`, `notebooks/NN_name.ipynb`, `model.py` and `gone.py`.\n\n"
            "```bash\n.venv/bin/python -m pytest -q tests/test_nothing_here.py\n```\n")
    assert missing_paths(text, ROOT) == ["tests/test_course_tracks.py", "gone.py", "tests/test_nothing_here.py"]


def test_the_package_tour_names_every_tool():
    text = (ROOT / "docs" / "package-tour.md").read_text()
    section = text[text.index("## The repository's tools"):]
    named = set(re.findall(r"`(tools/\w+\.py)`", section))
    assert named == {p.relative_to(ROOT).as_posix() for p in (ROOT / "tools").glob("*.py")}
