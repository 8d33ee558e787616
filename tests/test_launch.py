"""Launch paths that cannot rot: links whose file exists, install lines that name the pins.

CI cannot reach Colab or PyPI's future, but it can keep what the course *says* true: every relative
link in the Markdown pages and the notebooks' text points at a file (and a `#section` of a Markdown
file at one of its headings), every `pip install` names the pinned version of each package it
installs (pyproject.toml), and the Colab cell clones a branch or tag that exists.
"""
import re
import shlex
import subprocess
import tomllib
from pathlib import Path
from urllib.parse import unquote, urlsplit

from support import ROOT, cells

PAGES = sorted([*ROOT.glob("*.md"), *ROOT.glob("docs/*.md")]) + [ROOT / "data" / "seed" / "README.md"]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def project():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def pins() -> dict[str, str]:
    """package name (normalised) → pinned version, extras included."""
    p = project()
    reqs = p["dependencies"] + [r for group in p["optional-dependencies"].values() for r in group]
    return {norm(r.split("==")[0]): r.split("==")[1] for r in reqs}


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def texts() -> list[tuple[str, Path, str, str]]:
    """(where, file, kind, text) of every Markdown page and every notebook cell (markdown or code)."""
    out = [(p.relative_to(ROOT).as_posix(), p, "markdown", p.read_text()) for p in PAGES if p.is_file()]
    for nb in NOTEBOOKS:
        for i, cell in enumerate(cells(nb)):
            out.append((f"{nb.name} cell {i}", nb, cell["cell_type"], "".join(cell["source"])))
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading (lower case, punctuation dropped, spaces → -)."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(md: Path) -> set[str]:
    text = FENCE.sub("", md.read_text())
    return {slug(m[1]) for m in re.finditer(r"^#{1,6} (.+)$", text, re.M)}


def links(text: str) -> list[str]:
    text = FENCE.sub("", text)
    text = re.sub(r"`[^`]*`", "", text)
    return re.findall(r"\]\(([^)\s]+)\)", text) + re.findall(r'(?:href|src)="([^"]+)"', text)


def link_problems(where: str, path: Path, text: str) -> tuple[list[str], int]:
    """Relative links of a Markdown text (from file `path`) whose file or heading is missing."""
    problems, seen = [], 0
    for url in links(text):
        parts = urlsplit(url)
        if parts.scheme or parts.netloc:
            continue
        seen += 1
        target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
        if not target.exists():
            problems.append(f"{where}: {url}: no such file")
        elif parts.fragment and target.suffix == ".md" and parts.fragment not in anchors(target):
            problems.append(f"{where}: {url}: {target.name} has no heading #{parts.fragment}")
    return problems, seen


def test_every_relative_link_lands_on_a_file_and_a_heading():
    problems, seen = [], 0
    for where, path, kind, text in texts():
        if kind == "markdown":
            found, n = link_problems(where, path, text)
            problems, seen = problems + found, seen + n
    assert seen >= 5, "found almost no links: is the link pattern still right?"
    assert problems == []


def test_a_broken_link_or_heading_is_caught():
    readme = ROOT / "README.md"
    text = ("[a](docs/recipes.md#no-such-heading) [b](notebooks/99_gone.ipynb) [c](https://example.org/x) "
            "[d](docs/recipes.md)")
    assert link_problems("x", readme, text) == (
        ["x: docs/recipes.md#no-such-heading: recipes.md has no heading #no-such-heading",
         "x: notebooks/99_gone.ipynb: no such file"], 3)


def test_the_slug_rule_matches_githubs():
    assert slug("The course as a site: `make site`") == "the-course-as-a-site-make-site"
    assert slug("The smallest solver (1,984 parameters)") == "the-smallest-solver-1984-parameters"
    assert slug("Open a notebook elsewhere (Colab)") == "open-a-notebook-elsewhere-colab"


def install_commands(text: str, kind: str) -> list[str]:
    """The argument strings of each `pip install` in a text's code: a code cell's lines, a fenced
    block's lines, an inline code span (which may wrap a line)."""
    if kind == "code":
        lines = text.splitlines()
    else:
        lines = [line for m in FENCE.finditer(text) for line in m[0].splitlines()]
        lines += [span.replace("\n", " ") for span in re.findall(r"`([^`]+)`", FENCE.sub("", text))]
    return [m[1] for line in lines if (m := re.search(r"pip install\b(.*)", line))]


def install_problems(args: str, pinned: dict[str, str]) -> list[str]:
    """What an install line gets wrong: a pinned package at another version or without one, or a
    package the project does not pin. The project itself (`.`, `-e ./minitf`, `".[extra]"`) is fine:
    its pins come from pyproject.toml."""
    try:
        tokens = shlex.split(args.split("#")[0])
    except ValueError:
        tokens = args.split()
    problems, skip = [], False
    for tok in tokens:
        if skip:
            skip = False
            continue
        if tok in ("--index-url", "--extra-index-url", "-i", "-r", "-c"):
            skip = True
            continue
        if tok.startswith("-") or tok.startswith(".") or tok.startswith("/") or "{" in tok:
            continue  # an option, or the project's own folder (its pins come from pyproject.toml)
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)(\[[^\]]*\])?(==([^\s;]+))?", tok)
        if not m:
            problems.append(f"cannot read {tok!r}")
            continue
        name, version = norm(m[1]), m[4]
        if name not in pinned:
            problems.append(f"{m[1]}: not a package pyproject.toml pins")
        elif version != pinned[name]:
            problems.append(f"{m[1]}: {'==' + version if version else 'no version'}, "
                            f"but pyproject.toml pins {pinned[name]}")
    return problems


def test_every_install_line_names_the_pinned_versions():
    pinned = pins()
    problems, seen = [], 0
    for where, _, kind, text in texts():
        for args in install_commands(text, kind):
            seen += 1
            problems += [f"{where}: pip install{args}: {p}" for p in install_problems(args, pinned)]
    assert seen >= 4
    assert problems == []


def test_install_lines_that_drift_are_caught():
    pinned = {"torch": "2.13.0", "playwright": "1.64.1"}
    assert install_problems(" torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu", pinned) == []
    assert install_problems(" --quiet -e ./course", pinned) == []
    assert install_problems(' -e ".[lightning]"', pinned) == []
    assert install_problems(" torch==2.10.0", pinned) == ["torch: ==2.10.0, but pyproject.toml pins 2.13.0"]
    assert install_problems(" torch", pinned) == ["torch: no version, but pyproject.toml pins 2.13.0"]
    assert install_problems(" transformers==4.0", pinned) == ["transformers: not a package pyproject.toml pins"]
    assert install_commands("an extra: `pip install -e\n\".[lightning]\"` does it", "markdown") == \
        [' -e ".[lightning]"']


def colab_cell() -> str:
    page = (ROOT / "docs" / "elsewhere.md").read_text()
    section = page.split("## Open a notebook elsewhere (Colab)", 1)[1].split("\n## ", 1)[0]
    return FENCE.search(section)[0]


def git_refs() -> set[str] | None:
    """The branch and tag names this repository has (remote branches without their remote's
    name), or None when this is no git checkout (an unpacked sdist)."""
    try:
        done = subprocess.run(["git", "-C", str(ROOT), "for-each-ref", "--format=%(refname)"],
                              capture_output=True, text=True, timeout=30)
    except OSError:
        return None
    if done.returncode != 0:
        return None
    names = set()
    for ref in done.stdout.split():
        parts = ref.split("/")
        if parts[:2] in (["refs", "heads"], ["refs", "tags"]):
            names.add("/".join(parts[2:]))
        elif parts[:2] == ["refs", "remotes"]:
            names.add("/".join(parts[3:]))
    return names


def clone_problem(cell: str, refs: set[str]) -> str | None:
    """What is wrong with the cell's `git clone`: None when it clones the default branch (no
    --branch) or a branch or tag in `refs`; a {NAME} is the cell's NAME = "…" assignment."""
    line = re.search(r"^!git clone (.+)$", cell, re.M)
    if not line:
        return "the cell has no `!git clone` line"
    values = dict(re.findall(r'^(\w+) = "([^"]*)"', cell, re.M))
    words = [re.sub(r"\{(\w+)\}", lambda m: values.get(m[1], m[0]), w)
             for w in shlex.split(line[1])]
    if "--branch" not in words:
        return None  # the default branch: it always exists
    ref = words[words.index("--branch") + 1]
    if ref not in refs:
        return f"--branch {ref}: no such branch or tag here (git clone says: Remote branch {ref} not found)"
    return None


def test_the_colab_cell_clones_what_exists_and_installs_the_pins():
    cell = colab_cell()
    refs = git_refs()
    if refs is not None:
        assert clone_problem(cell, refs) is None
    assert "--branch" not in cell and "git clone --quiet --depth 1 {MINITF_REPO}" in cell  # the default branch
    assert f"torch=={pins()['torch']} --index-url https://download.pytorch.org/whl/cpu" in cell
    assert "-e ./course" in cell and "%cd course/notebooks" in cell  # the notebooks' paths (../data) then hold
    # the troubleshooting page says what the cell does, and names no tag
    text = " ".join((ROOT / "docs" / "troubleshooting.md").read_text().split())
    colab = text[text.index("## Opening a notebook elsewhere (Colab)"):][:400]
    assert "tag" not in colab and "clones minitf's default branch, installs the pinned torch (CPU build)" in colab


def test_a_clone_of_a_missing_tag_is_caught():
    """The cell once cloned `--branch v0.1.0`, a tag that was never made."""
    cell = 'MINITF_TAG = "v0.1.0"\n!git clone --quiet --depth 1 --branch {MINITF_TAG} {MINITF_REPO} course\n'
    assert clone_problem(cell, {"main"}) == ("--branch v0.1.0: no such branch or tag here (git clone "
                                             "says: Remote branch v0.1.0 not found)")
    assert clone_problem(cell, {"main", "v0.1.0"}) is None
    assert clone_problem("!git clone --quiet --depth 1 {MINITF_REPO} course\n", set()) is None
