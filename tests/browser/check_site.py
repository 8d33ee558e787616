"""The static course site (`make site`) in headless Chromium: built with no network, read with none.

1. build: `python tools/site.py` inside `unshare -n` (a network namespace with no interface up; as
   a non-root user `unshare -rn`), after a probe in the same namespace shows that no address can be
   reached. If the namespace cannot be made, the check fails and says why: it never passes without
   having built offline;
2. serve the built folder on 127.0.0.1 and open every page in Chromium, which resolves no host but
   127.0.0.1; every request is recorded, and any that is not to that server (or data:/blob:) fails
   the check, whatever it was for (script, stylesheet, font, image);
3. per notebook page: it exists (one per notebook), every PNG the notebook stores is on it, decoded
   and drawn; the course map links every notebook; the banner says widgets need a running kernel;
   the math is typeset by the local MathJax with no error;
4. per static Explorer: it draws from its saved state; on an Explorer whose cell reads
   `minitf.Explorer(minitf.load("<checkpoint>"), text="<text>")`, a hovered number's tooltip must be
   `minitf.trace` on that checkpoint and text: the same formula text (`Trace.explain`) and the same
   value (`Trace.value`);
5. screenshots go to build/site-check/ (front page, notebook 03, each hovered Explorer).

Usage (from the repository root; `make test-site` installs Chromium and playwright first):

    .venv/bin/python tests/browser/check_site.py [--out DIR] [--headed]

Exit status 0: every page passed; otherwise each failure is printed with its page.
"""
from __future__ import annotations

import argparse
import ast
import functools
import http.server
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import chromium  # noqa: E402  (beside this file)

CHROMIUM = chromium.CHROMIUM
CHROMIUM_ARGS = [*chromium.CHROMIUM_ARGS,
                 "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]  # no name resolves but ours
BUILD_TIMEOUT = 120  # s
MATHJAX_FONTS = "_static/mathjax/fonts/HTML-CSS/TeX/"
PAGE_TIMEOUT = 30_000  # ms
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
EXPLORER_ID = "minitf.views.explorer.ExplorerWidget"
EXPLORER_CALL = re.compile(r'minitf\.Explorer\(minitf\.load\((".*?")\),\s*text=(".*?")\)')
# run inside the namespace before the build: any connection must fail at once
PROBE = ("import socket, sys\n"
         "for host in ('1.1.1.1', '8.8.8.8'):\n"
         "    try:\n"
         "        socket.create_connection((host, 443), timeout=3).close()\n"
         "    except OSError:\n"
         "        continue\n"
         "    sys.exit(f'network reachable: connected to {host}')\n")


class CheckFailed(Exception):
    """What a reader of the site would have seen go wrong, in words."""


def log(msg: str) -> None:
    print(f"[check_site] {msg}", flush=True)


def offline_build(out: pathlib.Path) -> float:
    """Build the site into `out` with no network; returns the build's seconds."""
    unshare = shutil.which("unshare")
    if not unshare:
        raise CheckFailed("`unshare` (util-linux) is missing: cannot build with the network off")
    prefix = [unshare, "-n"] if os.geteuid() == 0 else [unshare, "-rn"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    probe = subprocess.run(prefix + [sys.executable, "-c", PROBE], capture_output=True, text=True, env=env)
    if probe.returncode != 0:
        raise CheckFailed(f"could not build with the network off: `{' '.join(prefix)}` gave exit "
                          f"{probe.returncode}: {(probe.stderr or probe.stdout).strip()[-300:]}")
    t0 = time.monotonic()
    build = subprocess.run(prefix + [sys.executable, str(ROOT / "tools" / "site.py"), "--out", str(out)],
                           capture_output=True, text=True, env=env, timeout=BUILD_TIMEOUT, cwd=ROOT)
    seconds = time.monotonic() - t0
    if build.returncode != 0:
        raise CheckFailed(f"the offline build failed (exit {build.returncode}): "
                          f"{(build.stderr or build.stdout).strip()[-800:]}")
    log(f"built offline in {seconds:.1f} s: {build.stdout.strip()}")
    return seconds


def serve(folder: pathlib.Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def stored_pngs(nb: dict) -> list[str]:
    pngs = [o["data"]["image/png"] for c in nb["cells"] for o in c.get("outputs", [])
            if "image/png" in o.get("data", {})]
    return ["".join(p).replace("\n", "") if isinstance(p, list) else p.replace("\n", "") for p in pngs]


def has_math(nb: dict) -> bool:
    return any(c["cell_type"] == "markdown" and re.search(r"\$[^$\n]+\$", "".join(c["source"]))
               for c in nb["cells"])


def explorer_calls(nb: dict) -> list[tuple[str, str] | None]:
    """Per Explorer output, in page order (found by its saved state, as tools/site.py finds them):
    (checkpoint path relative to notebooks/, text) when its cell has the checkable form, else None."""
    state = nb["metadata"].get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    calls = []
    for c in nb["cells"]:
        for o in c.get("outputs", []):
            view = o.get("data", {}).get(WIDGET_VIEW)
            if view and state.get(view["model_id"], {}).get("state", {}).get("_anywidget_id") == EXPLORER_ID:
                m = EXPLORER_CALL.search("".join(c["source"]))
                calls.append((ast.literal_eval(m[1]), ast.literal_eval(m[2])) if m else None)
    return calls


def wait_for_math(page) -> None:
    page.wait_for_function("() => window.MathJax && window.MathJax.Hub", timeout=PAGE_TIMEOUT)
    page.evaluate("() => MathJax.Hub.Queue(() => { window.mtfMathDone = true; })")
    page.wait_for_function("() => window.mtfMathDone === true", timeout=PAGE_TIMEOUT)


def check_math(page, name: str) -> str:
    wait_for_math(page)
    typeset = page.locator(".MathJax, .MathJax_Display, .MathJax_CHTML, .MathJax_SVG").count()
    errors = page.locator(".MathJax_Error, merror").count()
    if errors or "Math Processing Error" in page.inner_text("body"):
        raise CheckFailed(f"{name}: MathJax reported {errors} error(s)")
    if typeset == 0:
        raise CheckFailed(f"{name}: the notebook has $…$ math, but nothing was typeset")
    return f"{typeset} formulas typeset"


def check_pictures(page, name: str, pngs: list[str]) -> str:
    shown = page.eval_on_selector_all(
        'img[src^="data:image/png"]',
        "imgs => imgs.map(i => ({src: i.getAttribute('src'), w: i.naturalWidth,"
        " drawn: i.complete && i.naturalWidth > 0 && i.getBoundingClientRect().width > 0}))")
    by_src = {s["src"].split(",", 1)[1].replace("\n", ""): s for s in shown}
    missing = [i for i, p in enumerate(pngs) if p not in by_src]
    if missing:
        raise CheckFailed(f"{name}: stored PNG output(s) {missing} (of {len(pngs)}) are not on the page")
    undrawn = [i for i, p in enumerate(pngs) if not by_src[p]["drawn"]]
    if undrawn:
        raise CheckFailed(f"{name}: stored PNG output(s) {undrawn} are on the page but not drawn")
    return f"{len(pngs)} of {len(pngs)} stored PNGs drawn"


def check_explorer(page, name: str, calls, out: pathlib.Path) -> list[str]:
    import minitf

    hosts = page.locator(".mtf-static-explorer")
    if hosts.count() != len(calls):
        raise CheckFailed(f"{name}: {len(calls)} Explorer outputs stored, {hosts.count()} on the page")
    lines, checked = [], 0
    for i, call in enumerate(calls):
        host = hosts.nth(i)
        page.wait_for_function("el => el.dataset.rendered === 'true'", arg=host.element_handle(),
                               timeout=PAGE_TIMEOUT)
        cells = host.locator(".mtf-cell[data-key][data-value]")
        if cells.count() == 0:
            raise CheckFailed(f"{name}: static Explorer {i} drew no numbers")
        if call is None:
            lines.append(f"Explorer {i}: {cells.count()} numbers drawn (its model is not a plain checkpoint)")
            continue
        checkpoint, text = call
        model = minitf.load(str((ROOT / "notebooks" / checkpoint).resolve()))
        tr = minitf.trace(model, text)
        cell = None
        candidates = host.locator(".mtf-cell[data-key*='weights'][data-value]:visible")
        for j in range(min(candidates.count(), 100)):  # a computed number, not a masked one
            c = candidates.nth(j)
            v = float(c.get_attribute("data-value"))  # a weight strictly between 0 and 1: computed
            if 1e-6 < v < 1 - 1e-6 and ".rowsum." not in c.get_attribute("data-key"):
                cell = c
                break
        if cell is None:
            raise CheckFailed(f"{name}: static Explorer {i} shows no hoverable attention weight")
        key, value = cell.get_attribute("data-key"), float(cell.get_attribute("data-value"))
        cell.scroll_into_view_if_needed()
        cell.hover()
        tooltip = host.locator(".mtf-tooltip")
        tooltip.wait_for(state="visible", timeout=5_000)
        tip = host.locator(".mtf-tooltip-text").inner_text().strip()
        want_text, want_value = tr.explain(key), tr.value(key)
        if tip != want_text.strip():
            raise CheckFailed(f"{name}: hovering {key} shows {tip!r}, but minitf.trace says {want_text!r}")
        if abs(value - want_value) > 1e-9 * max(1.0, abs(want_value)):
            raise CheckFailed(f"{name}: {key} shows the value {value}, minitf.trace {want_value}")
        page.screenshot(path=str(out / f"explorer-hover-{name[:-5]}.png"))
        lines.append(f"Explorer {i} ({checkpoint}, {text!r}): hovering {key} shows {tip!r}, "
                     f"= minitf.trace's explain and value {want_value:.6f}")
        checked += 1
    return lines


def check_site(page, base: str, site: pathlib.Path, out: pathlib.Path) -> tuple[list[str], dict[str, str], int]:
    notebooks = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    pages = sorted(p.name for p in site.glob("[0-9][0-9]_*.html"))
    expected = [f"{p.stem}.html" for p in notebooks]
    failures, lines, hovered = {}, [], 0
    if pages != expected:
        failures["(pages)"] = f"one page per notebook expected: {expected}, built {pages}"
    page.goto(base + "index.html")
    front = page.inner_text("body")
    if "make lab" not in front or "minitf" not in front:
        failures["index.html"] = "the front page is not the README"
    nav = set(page.eval_on_selector_all(".mtf-site-nav a", "as => as.map(a => a.getAttribute('href'))"))
    if not set(expected) <= nav:
        failures["index.html"] = f"the course map lacks {sorted(set(expected) - nav)}"
    page.screenshot(path=str(out / "front.png"))
    lines.append(f"index.html: the README, with the course map of {len(expected)} notebooks")
    for nbpath in notebooks:
        name = f"{nbpath.stem}.html"
        nb = json.loads(nbpath.read_text())
        try:
            page.goto(base + name)
            page.wait_for_load_state("load")
            got = [check_pictures(page, name, stored_pngs(nb))]
            if "need a running kernel" not in page.inner_text(".mtf-site-banner"):
                raise CheckFailed(f"{name}: no banner saying widgets need a running kernel")
            links = set(page.eval_on_selector_all(".mtf-site-nav a", "as => as.map(a => a.getAttribute('href'))"))
            if not set(expected) <= links:
                raise CheckFailed(f"{name}: the course map lacks {sorted(set(expected) - links)}")
            if has_math(nb):
                got.append(check_math(page, name))
            calls = explorer_calls(nb)
            if calls:
                found = check_explorer(page, name, calls, out)
                hovered += sum("hovering" in f for f in found)
                got += found
            if nbpath.stem.startswith("03_"):
                page.evaluate("window.scrollTo(0, 0)")
                page.screenshot(path=str(out / f"{nbpath.stem}.png"))
            lines.append(f"{name}: " + "; ".join(got))
        except CheckFailed as e:
            failures[name] = str(e)
        except Exception as e:  # a playwright error: still a failure, with its message
            failures[name] = f"{type(e).__name__}: {e}"
    return lines, failures, hovered


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "build" / "site-check"), help="screenshots go here")
    ap.add_argument("--headed", action="store_true")
    args = ap.parse_args(argv)
    sync_playwright = chromium.sync_playwright_or_none(log, " (`make test-site` installs it)")
    if sync_playwright is None:
        return 2
    out = pathlib.Path(args.out).resolve()
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="minitf-site-"))
    site = tmp / "site"
    failures: dict[str, str] = {}
    server = None
    try:
        offline_build(site)
        server, base = serve(site)
        outside: list[str] = []
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=not args.headed)
            try:
                context = browser.new_context(viewport={"width": 1280, "height": 900})

                def gate(route):
                    url = route.request.url
                    if url.startswith((base, "data:", "blob:", "about:")):
                        route.continue_()
                    else:
                        outside.append(f"{route.request.resource_type} {url[:120]}")
                        route.abort()
                context.route("**/*", gate)
                page = context.new_page()
                page.set_default_timeout(PAGE_TIMEOUT)
                errors: list[str] = []
                page.on("pageerror", lambda e: errors.append(str(e)[:200]))
                # a file of the site the pages ask for and do not find; MathJax's combined config
                # declares @font-face for TeX fonts the wheel does not ship (the browser falls back
                # to the STIX-Web fonts it does ship): those are logged, not failed
                missing: list[str] = []
                page.on("response", lambda r: missing.append(f"{r.status} {r.url[len(base):][:100]}")
                        if r.status >= 400 and not r.url.endswith("/favicon.ico") else None)
                lines, failures, hovered = check_site(page, base, site, out)
                for line in lines:
                    log(line)
                if outside:
                    failures["(network)"] = f"{len(outside)} request(s) left the machine: {outside[:5]}"
                fonts = [m for m in missing if m.split(" ", 1)[1].startswith(MATHJAX_FONTS)]
                missing = [m for m in missing if m not in fonts]
                if fonts:
                    log(f"MathJax asked for {len(set(fonts))} font file(s) the wheel lacks: {sorted(set(fonts))[:3]}")
                if missing:
                    failures["(files)"] = f"{len(missing)} request(s) for files the site lacks: {missing[:5]}"
                if errors:
                    failures["(javascript)"] = f"errors on the pages: {errors[:5]}"
                if hovered == 0:
                    failures["(explorer)"] = "no static Explorer was hovered and compared with minitf.trace"
                log(f"{len(outside)} requests outside 127.0.0.1; {hovered} Explorer hover(s) checked")
            finally:
                browser.close()
    except CheckFailed as e:
        failures["(build)"] = str(e)
    except Exception as e:
        failures["(browser)"] = f"{type(e).__name__}: {e}"
    finally:
        if server:
            server.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)
    for where, why in failures.items():
        log(f"FAIL {where}: {why}")
    log(f"screenshots in {out}")
    log("PASS: the site builds offline and reads offline" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
