"""Open a notebook in real JupyterLab in headless Chromium, move its first slider, see the plot change.

nbval re-runs the notebooks but ignores widget views and images, so it cannot tell whether a
learner actually *sees* the RoPE sliders. This check does what a learner does:

1. start JupyterLab (free loopback port, no token, throwaway config/settings/workspace dirs),
2. open the notebook, clear its outputs, run all cells, wait for the kernel to go idle,
3. fail on any error output or a widget fallback ("Error displaying widget: model not found",
   a widget shown as plain text because the extension did not load, ...),
4. focus the first slider's handle, press ArrowRight (ArrowLeft at the maximum), and require
   that the slider value, its readout and at least one widget plot image (PNG bytes) changed,
5. save screenshots before and after and print where they are,
6. always stop the server and any kernel it started.

Usage (from the repository root; `make test-browser` installs Chromium and playwright first):

    .venv/bin/python tests/browser/check_rope_sliders.py [notebooks/02_rope.ipynb] [--out DIR]

Exit status 0 means the check passed; anything else prints what failed.
"""
from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from typing import IO

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_MAJOR = 156  # the Chromium that playwright==1.64.1 bundles (and drives best)
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
]
WIDGETS_PLUGIN = "@jupyter-widgets/jupyterlab-manager:plugin"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
# Text a learner would see instead of a working widget (ipywidgets 8 / JupyterLab 4 / nbconvert).
FALLBACK_TEXTS = [
    "Error displaying widget",
    "model not found",
    "could not be displayed",
    "Widget Javascript not detected",
    "Failed to display Jupyter Widget",
]
SERVER_START_TIMEOUT = 60  # s
RUN_ALL_TIMEOUT = 120  # s
REDRAW_TIMEOUT = 30  # s


class CheckFailed(Exception):
    """What a learner would have seen go wrong, in words."""


def log(msg: str) -> None:
    print(f"[browser-check] {msg}", flush=True)


def free_port() -> int:
    """Ask the OS for an unused loopback port (the server is told not to try others)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_json(path: pathlib.Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1))


def isolated_env(tmp: pathlib.Path) -> dict[str, str]:
    """Environment whose Jupyter/IPython state lives in `tmp`: the user's own setup is not read
    (nor changed), and the news pop-up is disabled so it cannot cover the notebook."""
    env = dict(os.environ)
    for var, sub in [("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_RUNTIME_DIR", "runtime"),
                     ("JUPYTER_DATA_DIR", "data"), ("IPYTHONDIR", "ipython")]:
        (tmp / sub).mkdir(parents=True, exist_ok=True)
        env[var] = str(tmp / sub)
    env.pop("JUPYTER_PATH", None)
    env["JUPYTER_PLATFORM_DIRS"] = "1"
    write_json(tmp / "config" / "labconfig" / "page_config.json",
               {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}})
    settings = tmp / "settings"
    # No autosave: running the cells must not write into the committed notebook.
    write_json(settings / "@jupyterlab" / "docmanager-extension" / "plugin.jupyterlab-settings",
               {"autosave": False})
    # Every cell in the DOM, so the output checks see all of them.
    write_json(settings / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings",
               {"windowingMode": "none"})
    return env


def start_lab(notebook_dir: pathlib.Path, tmp: pathlib.Path, port: int) -> tuple[subprocess.Popen, IO]:
    """Start JupyterLab in its own process group (so it can be stopped as a whole)."""
    cmd = [
        str(pathlib.Path(sys.executable).with_name("jupyter-lab")),
        "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0", "--IdentityProvider.token=", "--ServerApp.password=",
        f"--ServerApp.root_dir={notebook_dir}", "--LabApp.expose_app_in_browser=True",
        f"--LabApp.user_settings_dir={tmp / 'settings'}",
        f"--LabApp.workspaces_dir={tmp / 'workspaces'}",
        "--ServerApp.open_browser=False", "--LabApp.news_url=",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")  # JupyterLab refuses to start as root otherwise
    (tmp / "workspaces").mkdir(exist_ok=True)
    server_log = open(tmp / "jupyterlab.log", "w")
    proc = subprocess.Popen(cmd, env=isolated_env(tmp), stdout=server_log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    return proc, server_log


def wait_for_server(proc: subprocess.Popen, url: str, tmp: pathlib.Path) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise CheckFailed(f"JupyterLab exited at start (code {proc.returncode}):\n"
                              + tail(tmp / "jupyterlab.log"))
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(url + "api/status", timeout=2) as r:
                if r.status == 200:
                    return
        time.sleep(0.3)
    raise CheckFailed(f"JupyterLab did not answer within {SERVER_START_TIMEOUT} s:\n"
                      + tail(tmp / "jupyterlab.log"))


def tail(path: pathlib.Path, n: int = 30) -> str:
    with contextlib.suppress(OSError):
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    return "(no log)"


def stop_lab(proc: subprocess.Popen, tmp: pathlib.Path) -> None:
    """SIGTERM the server's process group (the server shuts its kernels down), then SIGKILL
    whatever is left, including kernels: they run in their own sessions but their command line
    names a connection file in our private runtime dir."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # stragglers in the group, if any
    for pid in pids_mentioning(str(tmp / "runtime")):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def pids_mentioning(text: str) -> list[int]:
    pids = []
    for d in pathlib.Path("/proc").iterdir():
        if d.name.isdigit() and int(d.name) != os.getpid():
            with contextlib.suppress(OSError):
                if text in (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                    pids.append(int(d.name))
    return pids


# --- in the page -------------------------------------------------------------------------------

JS_KERNEL_STATUS = """() => {
  const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return k ? k.status : null;
}"""

JS_WATCH_KERNEL = """() => {
  // Errors raised in widget callbacks reach no cell (JupyterLab sends them to its log console):
  // collect every error the kernel publishes from now on.
  window.minitfKernelErrors = [];
  const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  kernel.iopubMessage.connect((_, msg) => {
    if (msg.header.msg_type === 'error') {
      window.minitfKernelErrors.push(msg.content.ename + ': ' + msg.content.evalue);
    }
  });
}"""

JS_OUTPUTS = """(mime) => {
  // Per code cell: the outputs in the model (what the kernel sent) ...
  const nb = window.jupyterapp.shell.currentWidget.content;
  const cells = [];
  nb.widgets.forEach((cell, i) => {
    if (cell.model.type !== 'code') return;
    const outs = cell.model.outputs.toJSON();
    cells.push({
      index: i,
      count: cell.model.executionCount,
      errors: outs.filter(o => o.output_type === 'error').map(o => o.ename + ': ' + o.evalue),
      stderr: outs.filter(o => o.output_type === 'stream' && o.name === 'stderr')
                  .map(o => Array.isArray(o.text) ? o.text.join('') : o.text),
      widgetViews: outs.filter(o => o.data && o.data[mime]).length,
      // ... and what the page shows for them.
      shownWidgetViews: Array.from(cell.outputArea.node.querySelectorAll(
          ':scope > .jp-OutputArea-child > .jp-OutputArea-output'))
        .filter(el => el.querySelector(':scope > .jupyter-widgets')).length,
      text: Array.from(cell.node.querySelectorAll('.jp-Cell-outputArea')).map(e => e.innerText).join('\\n'),
    });
  });
  return cells;
}"""

JS_PLOTS = """() => Array.from(document.querySelectorAll('.jp-Notebook .widget-output img'))
  .map(img => img.getAttribute('src') || '')"""


def wait_until(page, predicate, timeout: float, what: str, interval: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        page.wait_for_timeout(interval * 1000)
    raise CheckFailed(f"timed out after {timeout:.0f} s waiting for {what}")


def wait_idle(page, timeout: float, what: str, settle: int = 3) -> None:
    """Kernel idle on `settle` polls in a row (each widget event briefly makes it busy)."""
    streak = 0

    def idle_for_a_while():
        nonlocal streak
        streak = streak + 1 if page.evaluate(JS_KERNEL_STATUS) == "idle" else 0
        return streak >= settle

    wait_until(page, idle_for_a_while, timeout, what)


def output_problems(page, when: str) -> tuple[list[dict], list[str]]:
    """An error, a traceback on stderr, a widget fallback text, or a widget view that the page
    does not render as a widget (e.g. the widget extension did not load): what a learner would
    see instead of the sliders."""
    cells = page.evaluate(JS_OUTPUTS, WIDGET_MIME)
    problems = []
    for c in cells:
        where = f"cell {c['index']} ({when})"
        problems += [f"{where}: error output {e}" for e in c["errors"]]
        problems += [f"{where}: stderr shows {s.strip()[:200]!r}" for s in c["stderr"]
                     if "Traceback" in s or "Error" in s]
        if any(t.lower() in c["text"].lower() for t in FALLBACK_TEXTS):
            problems.append(f"{where}: shows {c['text'].strip()[:200]!r} instead of the widget")
        if c["shownWidgetViews"] < c["widgetViews"]:
            problems.append(f"{where}: {c['widgetViews']} widget view(s) in the outputs but "
                            f"{c['shownWidgetViews']} rendered as widgets; the page shows: "
                            f"{c['text'].strip()[:200]!r}")
    return cells, problems


def check_outputs(page, when: str, patience: float = 10) -> list[dict]:
    """Fail if output problems remain after `patience` seconds (widget views render
    asynchronously, showing "Loading widget..." for a moment)."""
    deadline = time.monotonic() + patience
    while True:
        cells, problems = output_problems(page, when)
        if not problems:
            return cells
        if time.monotonic() > deadline:
            raise CheckFailed("\n".join(problems))
        page.wait_for_timeout(250)


def png_bytes(src: str) -> bytes | None:
    if src.startswith("data:image/png;base64,"):
        return base64.b64decode(src.split(",", 1)[1])
    return None


def run_check(page, base_url: str, notebook: pathlib.Path, out_dir: pathlib.Path) -> None:
    page.goto(f"{base_url}lab/tree/{notebook.name}")
    wait_until(page, lambda: page.evaluate(
        "(name) => !!(window.jupyterapp && window.jupyterapp.shell.currentWidget &&"
        " window.jupyterapp.shell.currentWidget.context &&"
        " window.jupyterapp.shell.currentWidget.context.path === name)", notebook.name),
        60, f"JupyterLab to open {notebook.name}")
    if not page.evaluate(f"() => window.jupyterapp.isPluginActivated({WIDGETS_PLUGIN!r})"):
        raise CheckFailed(f"the ipywidgets JupyterLab extension ({WIDGETS_PLUGIN}) is not active: "
                          "is jupyterlab_widgets installed in this environment?")
    wait_until(page, lambda: page.evaluate(JS_KERNEL_STATUS) == "idle", 60, "the kernel to start")
    page.evaluate(JS_WATCH_KERNEL)
    log("kernel ready; clearing outputs and running all cells")
    t0 = time.monotonic()
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs')")
    # Not awaited (a hanging cell would hang the check): the poll below has a timeout.
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")

    def finished_or_failed():
        cells = page.evaluate(JS_OUTPUTS, WIDGET_MIME)
        return (all(c["count"] is not None for c in cells) or any(c["errors"] for c in cells))

    wait_until(page, finished_or_failed, RUN_ALL_TIMEOUT, "all cells to run")
    wait_idle(page, RUN_ALL_TIMEOUT, "the kernel to go idle after running all cells")
    cells = check_outputs(page, "after run-all")
    log(f"ran {len(cells)} code cells in {time.monotonic() - t0:.1f} s; "
        f"{sum(c['widgetViews'] for c in cells)} widget view(s) rendered, no errors")

    sliders = page.locator(".jp-Notebook .widget-slider")
    slider = sliders.first
    try:
        slider.wait_for(state="visible", timeout=30_000)
    except Exception as e:  # playwright's TimeoutError
        raise CheckFailed("no slider (.widget-slider) appeared in the notebook") from e
    log(f"{sliders.count()} slider(s) shown: "
        + ", ".join(repr(t.strip()) for t in sliders.locator(".widget-label").all_inner_texts()))
    handle = slider.locator(".noUi-handle").first
    readout = slider.locator(".widget-readout").first
    handle.scroll_into_view_if_needed()
    label = slider.locator(".widget-label").first.inner_text().strip()
    value_before, vmax = handle.get_attribute("aria-valuenow"), handle.get_attribute("aria-valuemax")
    readout_before = readout.inner_text().strip()
    plots_before = page.evaluate(JS_PLOTS)
    if not plots_before:
        raise CheckFailed("no plot image (.widget-output img) is shown in a widget Output")
    if not any(png_bytes(s) for s in plots_before):
        raise CheckFailed("the widget plots are not inline PNG images: "
                          + ", ".join(s[:40] for s in plots_before))
    page.screenshot(path=str(out_dir / "before.png"))
    save_plots(plots_before, out_dir, "before")

    key = "ArrowLeft" if value_before is not None and value_before == vmax else "ArrowRight"
    log(f"first slider {label!r}: value {value_before} (readout {readout_before!r}), "
        f"{len(plots_before)} plot image(s); pressing {key}")
    page.evaluate("() => { window.minitfKernelErrors = []; }")  # from here on: the slider's
    handle.focus()
    page.keyboard.press(key)

    wait_until(page, lambda: handle.get_attribute("aria-valuenow") != value_before, 10,
               f"the slider value to move from {value_before} after {key}")

    def redrawn():
        if errors := page.evaluate("() => window.minitfKernelErrors"):
            raise CheckFailed("the kernel raised while handling the slider: " + "; ".join(errors))
        return page.evaluate(JS_PLOTS) != plots_before

    wait_until(page, redrawn, REDRAW_TIMEOUT, "the plot to redraw after the slider moved")
    wait_idle(page, REDRAW_TIMEOUT, "the kernel to go idle after the redraw", settle=5)
    value_after = handle.get_attribute("aria-valuenow")
    readout_after = readout.inner_text().strip()
    plots_after = page.evaluate(JS_PLOTS)
    handle.scroll_into_view_if_needed()
    page.screenshot(path=str(out_dir / "after.png"))
    save_plots(plots_after, out_dir, "after")
    check_outputs(page, "after moving the slider")
    if errors := page.evaluate("() => window.minitfKernelErrors"):
        raise CheckFailed("the kernel raised while handling the slider: " + "; ".join(errors))

    if readout_after == readout_before:
        raise CheckFailed(f"the readout stayed {readout_before!r} while the value went "
                          f"{value_before} -> {value_after}")
    before_png = [png_bytes(s) for s in plots_before]
    after_png = [png_bytes(s) for s in plots_after]
    changed = [i for i, (a, b) in enumerate(zip(before_png, after_png)) if a != b]
    if len(after_png) != len(before_png):
        changed.append(min(len(after_png), len(before_png)))
    if not changed:
        raise CheckFailed("the slider moved but no plot image changed")
    log(f"value {value_before} -> {value_after}, readout {readout_before!r} -> "
        f"{readout_after!r}; plot image(s) {changed} of {len(after_png)} changed")


def save_plots(srcs: list[str], out_dir: pathlib.Path, tag: str) -> None:
    for i, s in enumerate(srcs):
        data = png_bytes(s)
        if data:
            (out_dir / f"{tag}-plot{i}.png").write_bytes(data)


def sha256(path: pathlib.Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("notebook", nargs="?", default=str(ROOT / "notebooks" / "02_rope.ipynb"))
    ap.add_argument("--out", default=str(ROOT / "build" / "browser"),
                    help="where the screenshots go (default: build/browser/)")
    ap.add_argument("--headed", action="store_true", help="show the browser window")
    args = ap.parse_args(argv)

    notebook = pathlib.Path(args.notebook).resolve()
    if not notebook.is_file():
        log(f"FAIL: no notebook at {notebook}")
        return 2
    if not os.access(CHROMIUM, os.X_OK):
        log(f"FAIL: {CHROMIUM} not found. Install Debian's chromium (`apt-get install chromium`, "
            "or run `make test-browser`, which does it).")
        return 2
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        log("FAIL: Python playwright is missing: .venv/bin/pip install -e '.[browser]'")
        return 2

    out_dir = pathlib.Path(args.out).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in [*out_dir.glob("before*.png"), *out_dir.glob("after*.png"), out_dir / "failure.png"]:
        old.unlink(missing_ok=True)  # only this check's own pictures
    # A CI timeout's SIGTERM must still run the `finally` that stops the server.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="minitf-browser-"))
    digest = sha256(notebook)
    port = free_port()
    base_url = f"http://127.0.0.1:{port}/"
    t0 = time.monotonic()
    proc, server_log = start_lab(notebook.parent, tmp, port)
    log(f"JupyterLab pid {proc.pid} on {base_url} serving {notebook.parent}")
    status = 1
    try:
        wait_for_server(proc, base_url, tmp)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                         headless=not args.headed)
            try:
                major = int(browser.version.split(".")[0])
                log(f"Chromium {browser.version} (playwright 1.64.1 bundles {CHROMIUM_MAJOR})"
                    + ("" if major == CHROMIUM_MAJOR else ": versions differ, results may vary"))
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.set_default_timeout(30_000)
                try:
                    run_check(page, base_url, notebook, out_dir)
                except Exception:
                    with contextlib.suppress(Exception):
                        page.screenshot(path=str(out_dir / "failure.png"))
                    raise
            finally:
                browser.close()
        if sha256(notebook) != digest:
            raise CheckFailed(f"{notebook.name} changed on disk during the check "
                              "(autosave, or someone editing it)")
        status = 0
        log(f"PASS in {time.monotonic() - t0:.1f} s")
    except CheckFailed as e:
        log(f"FAIL: {e}")
    except Exception as e:  # a playwright or server error: still a failure, with its message
        log(f"FAIL: {type(e).__name__}: {e}")
    finally:
        stop_lab(proc, tmp)
        server_log.close()
        if status != 0:
            log("JupyterLab log (last lines):\n" + tail(tmp / "jupyterlab.log"))
        shutil.rmtree(tmp, ignore_errors=True)
        log(f"screenshots: {out_dir}/ ({', '.join(sorted(p.name for p in out_dir.glob('*.png')))})")
    return status


if __name__ == "__main__":
    sys.exit(main())
