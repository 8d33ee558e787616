"""`make site`: the course as static HTML pages, read from the stored notebooks (nothing is run).

    python tools/site.py [--out build/site]

One page per notebook (nbconvert's HTML exporter, its lab template with every remote script taken
out), the README as the front page, the README's course table as the navigation on every page, and
the Markdown pages they link to (docs/recipes.md, docs/troubleshooting.md, ...). The site works with no
network, at build time and at view time:

* MathJax comes from the `jupyter-server-mathjax` wheel (the `site` extra), copied into
  `_static/mathjax/`; no CDN.
* A widget cannot run without a kernel, so each one shows the PNG the notebook stores beside its
  view (`minitf.views.pictures`). nbconvert would prefer the widget view and load a widget manager
  from a CDN: the widget views and the saved widget state are left out of the page.
* The Explorer's own JavaScript (a plain ES module, saved with its state in the notebook) is run
  on the page from that saved state, so hovering a number still shows how it was computed; typing
  and stepping need a kernel and are switched off.

A banner on every notebook page says that sliders and buttons need a running kernel.
"""
from __future__ import annotations

import argparse
import copy
import html
import importlib.resources
import json
import os
import re
import shutil
import sys
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
TEMPLATES = Path(__file__).with_name("site_template")
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
EXPLORER_ID = "minitf.views.explorer.ExplorerWidget"
MATHJAX_CONFIG = "TeX-AMS-MML_HTMLorMML-full,Safe"
FRONT_PAGES = ("README.md",)  # the front page; pages it links to follow
TROUBLESHOOTING = "docs/troubleshooting.md"  # linked from every page
BANNER = ("A static page of the stored notebook: every output is as the notebook stores it, and "
          "nothing here runs. Sliders, buttons and text boxes need a running kernel: each widget shows "
          "its stored picture (the Explorer still answers a hover). To change anything, open the "
          "notebook in JupyterLab (<code>make lab</code>); see "
          '<a href="docs_troubleshooting.html#stored-widgets-shown-as-pictures">Troubleshooting</a>.')
# a row of the README's course map: notebook, what you learn, you write, and its minutes ("25 min",
# "25 min (+10 optional)": an optional exercise's minutes beside the notebook's)
COURSE_ROW = re.compile(r"^\| `(\d\d_\w+)` \| (.*?) \| ([^|]*?) \|(?: (\d+) min(?: \(\+(\d+) optional\))? \|)?\s*$",
                        re.M)

SITE_CSS = """
body.mtf-site { margin: 0; padding-left: 15rem; }
.mtf-site-nav { position: fixed; top: 0; left: 0; bottom: 0; width: 14rem; overflow-y: auto;
  padding: 1rem 0.5rem; box-sizing: border-box; background: #f5f6f8; border-right: 1px solid #ddd;
  font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; }
.mtf-site-nav ol { list-style: none; padding: 0; margin: 0.75rem 0; }
.mtf-site-nav li a { display: block; padding: 0.3rem 0.5rem; color: #1d3f6e; text-decoration: none;
  border-radius: 4px; }
.mtf-site-nav li a:hover { background: #e3e8ef; }
.mtf-site-nav li.mtf-site-current a { background: #dbe6f5; font-weight: 600; }
.mtf-site-home { font-weight: 700; font-size: 18px; color: #111; text-decoration: none; padding: 0 0.5rem; }
.mtf-site-nav li.mtf-site-track { padding: 0.6rem 0.5rem 0.15rem; color: #555; font-size: 12px;
  font-weight: 600; text-transform: uppercase; letter-spacing: 0.04em; }
.mtf-site-nav li.mtf-site-track .mtf-site-time { display: block; font-weight: 400; text-transform: none;
  letter-spacing: 0; }
.mtf-site-extra { display: block; padding: 0.3rem 0.5rem; color: #1d3f6e; }
.mtf-site-banner { margin: 0.75rem 1rem 0; padding: 0.6rem 0.9rem; border: 1px solid #e0c36a;
  background: #fff8e1; border-radius: 5px; font: 14px/1.45 system-ui, sans-serif; }
.mtf-static-explorer-note { color: #555; font-size: 12px; margin: 2px 0 6px; }
@media (max-width: 900px) { body.mtf-site { padding-left: 0; }
  .mtf-site-nav { position: static; width: auto; border-right: 0; border-bottom: 1px solid #ddd; } }
"""

# Runs each Explorer from its saved state: the module's render() gets a model that answers get()
# from the state and ignores what would need the kernel.
EXPLORER_JS = """<script type="module">
for (const host of document.querySelectorAll(".mtf-static-explorer")) {
  const state = JSON.parse(document.getElementById(host.dataset.state).textContent);
  const style = document.createElement("style");
  style.textContent = state._css;
  document.head.appendChild(style);
  const model = { get: (k) => state[k], set() {}, save_changes() {}, send() {}, on() {}, off() {} };
  const url = "data:text/javascript;charset=utf-8," + encodeURIComponent(state._esm);
  const widget = (await import(url)).default;
  const el = document.createElement("div");
  host.appendChild(el);
  widget.render({ model, el });
  for (const c of el.querySelectorAll("input, button.mtf-step")) {
    c.disabled = true;
    c.title = "needs a running kernel";
  }
  host.dataset.rendered = "true";
}
</script>"""


def course_map(readme: str) -> dict[str, tuple[str, str]]:
    """notebook stem → (what you learn, you write), from the README's course table."""
    return {m[1]: (m[2], m[3]) for m in COURSE_ROW.finditer(readme)}


def course_minutes(readme: str) -> dict[str, tuple[int, int]]:
    """notebook stem → (minutes, optional minutes), as the README's course table states them."""
    return {m[1]: (int(m[4]), int(m[5] or 0)) for m in COURSE_ROW.finditer(readme) if m[4]}


TRACK_HEADING = re.compile(r"^### The (main path|extras)\b[^\n]*$", re.M)
# its time: "### The main path: about 5 h 45 min (345 minutes of a learner's time, +105 min of optional exercises)"
TRACK_TIME = re.compile(r"^### The (main path|extras): about ([^(\n]*?) \((\d+) minutes of a learner's time"
                        r"(?:, \+(\d+) min of optional exercises)?\)", re.M)


def track_minutes(readme: str) -> dict[str, tuple[str, int, int]]:
    """track → (its time in words, minutes, optional minutes), from the README's track headings:
    what the navigation shows beside each track's name."""
    return {m[1]: (m[2], int(m[3]), int(m[4] or 0)) for m in TRACK_TIME.finditer(readme)}


def nav_time(minutes: tuple | None) -> str:
    """The time the navigation shows: "about 6 h 10 min, +105 min optional" for a track ((its time
    in words, minutes, optional)), "about 15 min, +10 min optional" for a notebook ((minutes, optional))."""
    if not minutes:
        return ""
    *words, total, optional = minutes
    text = f"about {words[0] if words else f'{total} min'}"
    return text + (f", +{optional} min optional" if optional else "")


def course_tracks(readme: str) -> dict[str, str]:
    """notebook stem → its track ("main path" or "extras"), from the README's course map, where
    each track's table sits under its own heading."""
    tracks = {}
    headings = list(TRACK_HEADING.finditer(readme))
    for m, after in zip(headings, headings[1:] + [None]):
        section = readme[m.end():after.start() if after else len(readme)]
        section = section.split("\n### ", 1)[0]
        tracks.update({row[1]: m[1] for row in COURSE_ROW.finditer(section)})
    return tracks


def notebook_title(nb) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return ""


def page_name(repo_path: str) -> str:
    """The site's file for a repository file: notebooks/02_rope.ipynb → 02_rope.html, README.md →
    index.html, docs/recipes.md → docs_recipes.html, data/seed/README.md → data_seed_README.html."""
    if repo_path == "README.md":
        return "index.html"
    p = Path(repo_path)
    if p.suffix == ".ipynb":
        return p.stem + ".html"
    return "_".join(p.with_suffix("").parts) + ".html"


def static_notebook(nb):
    """The notebook as a static page shows it: no widget views, no saved widget state (so nbconvert
    shows each widget's stored picture and loads no widget manager); before each Explorer's picture,
    a host element the page's script renders the Explorer into. Returns (notebook, explorer states)."""
    nb = copy.deepcopy(nb)
    state = nb.metadata.pop("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    explorers = []
    for cell in nb.cells:
        outputs = []
        for out in cell.get("outputs", []):
            view = out.get("data", {}).pop(WIDGET_VIEW, None) if "data" in out else None
            model = state.get(view["model_id"], {}).get("state", {}) if view else {}
            if model.get("_anywidget_id") == EXPLORER_ID:
                sid = f"mtf-explorer-state-{len(explorers)}"
                explorers.append((sid, {k: model[k] for k in ("_esm", "_css", "view", "text")}))
                outputs.append({"output_type": "display_data", "metadata": {}, "data": {
                    "text/html": f'<div class="mtf-static-explorer" data-state="{sid}"></div>'
                                 '<div class="mtf-static-explorer-note">The Explorer from its saved '
                                 "state: hover or click a number to see how it was computed. Typing "
                                 "and stepping need a running kernel. Its stored picture:</div>"}})
            outputs.append(out)
        if cell.cell_type == "code":
            cell.outputs = outputs
    return nb, explorers


def state_scripts(explorers) -> str:
    return "".join(f'<script type="application/json" id="{sid}">'
                   + json.dumps(s).replace("</", "<\\/") + "</script>" for sid, s in explorers)


def rewrite_links(page: str, source: str, pages: dict[str, str], files: set[str]) -> str:
    """Relative links of a page made from `source` (a repository path) point into the site:
    a notebook or a rendered Markdown page to its page; another repository file to its copy under
    _files/ (collected in `files`)."""
    def fix(m):
        attr, url = m[1], html.unescape(m[2])
        parts = urlsplit(url)
        if parts.scheme or parts.netloc or not parts.path or url.startswith("#"):
            return m[0]
        target = os.path.normpath(os.path.join(os.path.dirname(source), unquote(parts.path)))
        if target in pages:
            new = pages[target]
        elif (ROOT / target).is_file():
            files.add(target)
            new = "_files/" + target
        else:
            return m[0]  # left as it is; the site's tests report it
        return f'{attr}="{html.escape(new + ("#" + parts.fragment if parts.fragment else ""))}"'
    return re.sub(r'(href|src)="([^"]*)"', fix, page)


def github_anchors(page: str) -> str:
    """Give each heading GitHub's anchor too (`#the-course-as-a-site-make-site`), beside nbconvert's
    own id, so a README link to a section lands on the same section here."""
    def add(m):
        text = html.unescape(re.sub(r"<[^>]+>", "", m[2])).strip().lower()
        slug = re.sub(r"[^\w\- ]", "", text).replace(" ", "-")
        return f'{m[1]}<a id="{html.escape(slug)}"></a>{m[2]}'
    return re.sub(r'(<h[1-6] id="[^"]*">)(.*?)(?=<a class="anchor-link"|</h[1-6]>)', add, page)


def markdown_links(text: str, source: str) -> list[str]:
    """Repository Markdown files a Markdown text links to (relative links only)."""
    found = []
    for url in re.findall(r"\]\(([^)\s]+)\)", text):
        parts = urlsplit(url)
        if parts.scheme or parts.netloc or not parts.path.endswith(".md"):
            continue
        target = os.path.normpath(os.path.join(os.path.dirname(source), unquote(parts.path)))
        if (ROOT / target).is_file():
            found.append(target)
    return found


def build(out: Path) -> dict:
    """Write the site into `out` (emptied first); returns what was written and how long it took."""
    import nbformat
    from nbconvert import HTMLExporter

    t0 = time.perf_counter()
    try:
        mathjax = importlib.resources.files("jupyter_server_mathjax") / "static"
    except ModuleNotFoundError:
        sys.exit("tools/site.py: MathJax is missing: pip install -e '.[site]' (make site does it)")
    if out.exists():
        shutil.rmtree(out)
    (out / "_static").mkdir(parents=True)
    shutil.copytree(mathjax, out / "_static" / "mathjax",
                    ignore=lambda d, names: [n for n in names if Path(d).name == "localization" and n != "en"])
    (out / "_static" / "site.css").write_text(SITE_CSS)

    readme = (ROOT / "README.md").read_text()
    learn = course_map(readme)
    tracks = course_tracks(readme)
    minutes, track_times = course_minutes(readme), track_minutes(readme)
    notebooks = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    nbs = {p: nbformat.read(p, as_version=4) for p in notebooks}
    markdown = []  # README, then every Markdown page reachable from it or from a notebook
    todo = list(FRONT_PAGES) + [TROUBLESHOOTING] * (ROOT / TROUBLESHOOTING).is_file()
    for p, nb in nbs.items():
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                todo += markdown_links(cell.source, str(p.relative_to(ROOT)))
    while todo:
        md = todo.pop(0)
        if md not in markdown:
            markdown.append(md)
            todo += markdown_links((ROOT / md).read_text(), md)
    pages = {str(p.relative_to(ROOT)): page_name(str(p.relative_to(ROOT))) for p in notebooks}
    pages.update({md: page_name(md) for md in markdown})

    nav = [{"href": page_name(str(p.relative_to(ROOT))), "label": notebook_title(nb) or p.stem,
            "learn": " · ".join(filter(None, (learn.get(p.stem, ("", ""))[0], nav_time(minutes.get(p.stem))))),
            "stem": p.stem, "track": tracks.get(p.stem, ""),
            "track_time": nav_time(track_times.get(tracks.get(p.stem, "")))}
           for p, nb in nbs.items()]
    for before, item in zip([None] + nav, nav):  # the navigation shows the two tracks, each under its name
        item["track_starts"] = before is None or before["track"] != item["track"]
    exporter = HTMLExporter(template_name="minitf_site", extra_template_basedirs=[str(TEMPLATES)])
    exporter.mathjax_url = f"_static/mathjax/MathJax.js?config={MATHJAX_CONFIG}"
    files: set[str] = set()
    written = []

    def export(nb, source: str, banner: str, footer: str = "", title: str | None = None):
        if title:
            nb.metadata["title"] = title
        resources = {"site_nav": [dict(item, current=item["href"] == pages[source]) for item in nav],
                     "site_root": "", "site_banner": banner, "site_footer_js": footer,
                     "metadata": {"name": Path(source).stem}}
        body, _ = exporter.from_notebook_node(nb, resources=resources)
        body = github_anchors(rewrite_links(body, source, pages, files))
        (out / pages[source]).write_text(body)
        written.append(pages[source])

    for p, nb in nbs.items():
        page_nb, explorers = static_notebook(nb)
        footer = state_scripts(explorers) + EXPLORER_JS if explorers else ""
        export(page_nb, str(p.relative_to(ROOT)), BANNER, footer, title=f"minitf · {notebook_title(nb) or p.stem}")
    for md in markdown:
        text = (ROOT / md).read_text()
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(text)])
        title = "minitf" if md == "README.md" else f"minitf · {Path(md).stem}"
        export(nb, md, "", title=title)
    for f in sorted(files):
        (out / "_files" / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, out / "_files" / f)
    return {"pages": written, "notebooks": [p.name for p in notebooks], "files": sorted(files),
            "seconds": time.perf_counter() - t0}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, default=ROOT / "build" / "site")
    args = p.parse_args(argv)
    result = build(args.out)
    print(f"wrote {len(result['pages'])} pages ({len(result['notebooks'])} notebooks) to "
          f"{args.out} in {result['seconds']:.1f} s; open {args.out / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
