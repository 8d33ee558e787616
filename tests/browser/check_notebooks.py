"""Every notebook in real JupyterLab in headless Chromium: as stored, run, and used.

nbval re-runs the notebooks but compares text only: it skips widget views and images, so it cannot
tell what a learner *sees*. This check does what a learner does, for each notebook in turn, in one
JupyterLab server and one Chromium (each step's function says what it requires):

0. saved as opened: JupyterLab's save must leave the file byte for byte as stored
   (save_changes_nothing; tools/normalize_notebooks.py stores notebooks that way);
1. stored: the untrusted outputs of a fresh clone show every widget's picture, never its repr text
   or a fallback message, and no error (output_problems, stored_widget_problems); no predict region
   shows its answer key (predictions_out_of_sight, tests/browser/predict_regions.py);
2. run: clear the outputs, run all cells: no error, every widget output a live widget, no error
   raised by a widget callback;
3. use: each widget found in the outputs (by its repr's class name) gets what a learner does with
   it, from INTERACTIONS (a slider moved, a button pressed, text typed, a number hovered), and must
   redraw;
4. screenshots of every widget, stored and live, and of every predict region as stored, go to
   build/browser/<notebook>/ (failure.png on failure); the server and every kernel are always
   stopped; no notebook file is changed.

Usage (from the repository root; `make test-browser` installs Chromium and playwright first):

    .venv/bin/python tests/browser/check_notebooks.py [notebooks/NN_x.ipynb ...] [--out DIR] [--headed]

Without notebook arguments: every notebooks/*.ipynb. Exit status 0 means every notebook passed;
otherwise each failure is printed with its notebook and cell.
"""
from __future__ import annotations

import argparse
import base64
import contextlib
import difflib
import hashlib
import json
import math
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from typing import IO

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import predict_regions  # noqa: E402  (beside this file)
from chromium import CHROMIUM, CHROMIUM_ARGS, CHROMIUM_MAJOR, sync_playwright_or_none  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
WIDGETS_PLUGIN = "@jupyter-widgets/jupyterlab-manager:plugin"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
# Text a learner would see instead of a working widget (ipywidgets 8 / JupyterLab 4 / nbconvert).
FALLBACK_TEXTS = [
    "Error displaying widget",
    "model not found",
    "could not be displayed",
    "Widget Javascript not detected",
    "Failed to display Jupyter Widget",
    "Loading widget...",
]
WIDGET_AS_TEXT = re.compile(r"\b[A-Z]\w*\(children=")  # ipywidgets' repr: VBox(children=(…
SERVER_START_TIMEOUT = 60  # s
OPEN_TIMEOUT = 60  # s
RUN_ALL_TIMEOUT = 180  # s
REDRAW_TIMEOUT = 30  # s
MIN_REDRAWS = 3  # different pictures a TrainingView must show while it trains


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
        # JupyterLab checkpoints every notebook it opens: into our temporary folder, not notebooks/
        f"--FileCheckpoints.checkpoint_dir={tmp / 'checkpoints'}",
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

JS_OPENED = """(name) => {
  const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  return !!(w && w.context && w.context.path === name && w.content && w.content.widgets);
}"""

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
  // Per code cell: each output in the model (what the kernel sent or the file holds), side by side
  // with what the page shows for it (one .jp-OutputArea-child per output).
  const nb = window.jupyterapp.shell.currentWidget.content;
  const cells = [];
  nb.widgets.forEach((cell, i) => {
    if (cell.model.type !== 'code') return;
    const outs = cell.model.outputs.toJSON();
    const shown = Array.from(cell.outputArea.node.querySelectorAll(':scope > .jp-OutputArea-child'));
    cells.push({
      index: i,
      count: cell.model.executionCount,
      trusted: cell.model.trusted,
      outputs: outs.map((o, j) => {
        const el = shown[j] && shown[j].querySelector(':scope > .jp-OutputArea-output');
        const text = o.data && o.data['text/plain'];
        return {
          type: o.output_type,
          error: o.output_type === 'error' ? o.ename + ': ' + o.evalue : null,
          stderr: o.output_type === 'stream' && o.name === 'stderr'
                  ? (Array.isArray(o.text) ? o.text.join('') : o.text) : null,
          widget: !!(o.data && o.data[mime]),
          png: !!(o.data && o.data['image/png']),
          repr: text ? (Array.isArray(text) ? text.join('') : text) : '',
          // what the page shows: a widget view (jupyterlab_widgets' renderer, a lumino Panel,
          // holds the view as its child widget; on failure it holds only a message), a picture, text
          view: !!(el && el.matches('.lm-Panel') && el.querySelector(':scope > .lm-Widget')
                   && !/Error displaying widget|Loading widget/.test(el.innerText)),
          picture: !!(el && el.matches('.jp-RenderedImage') && el.querySelector('img')),
          text: el ? el.innerText.slice(0, 300) : '',
        };
      }),
    });
  });
  return cells;
}"""


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


def output_problems(cells: list[dict], stage: str) -> list[str]:
    """What a learner would see go wrong: an error, a traceback, a widget shown as text or as a
    fallback message, a widget output that shows neither its view nor (stored) its picture."""
    problems = []
    for c in cells:
        for j, o in enumerate(c["outputs"]):
            where = f"cell [{c['index']}] output {j} ({stage})"
            if o["error"]:
                problems.append(f"{where}: error output {o['error']}")
            if o["stderr"] and ("Traceback" in o["stderr"] or "Error" in o["stderr"]):
                problems.append(f"{where}: stderr shows {o['stderr'].strip()[:200]!r}")
            shown = o["text"].strip()[:200]
            if any(t.lower() in o["text"].lower() for t in FALLBACK_TEXTS):
                problems.append(f"{where}: shows {shown!r} instead of the widget")
            elif WIDGET_AS_TEXT.search(o["text"]):
                problems.append(f"{where}: a widget shown as its repr text {shown!r}"
                                + ("" if o["png"] or not o["widget"] else
                                   " (the output has no image/png: display the view through "
                                   "minitf.views.pictures.ShowsPicture)"))
            elif o["widget"] and stage == "stored" and not (o["picture"] or o["view"]):
                problems.append(f"{where}: a widget output shows neither a picture nor a view, "
                                f"but {shown!r}")
            elif o["widget"] and stage != "stored" and not o["view"]:
                problems.append(f"{where}: a widget output not rendered as a live widget: {shown!r}")
    return problems


def check_outputs(page, stage: str, patience: float = 10) -> list[dict]:
    """Fail if output problems remain after `patience` seconds (widget views render
    asynchronously, showing "Loading widget..." for a moment)."""
    deadline = time.monotonic() + patience
    while True:
        cells = page.evaluate(JS_OUTPUTS, WIDGET_MIME)
        problems = output_problems(cells, stage)
        if not problems:
            return cells
        if time.monotonic() > deadline:
            raise CheckFailed("\n  ".join(problems))
        page.wait_for_timeout(250)


def kernel_errors(page) -> None:
    if errors := page.evaluate("() => window.minitfKernelErrors || []"):
        raise CheckFailed("the kernel raised in a widget callback: " + "; ".join(errors))


def cell_locator(page, index: int):
    return page.locator(".jp-Notebook .jp-Cell").nth(index)


def shoot_cell(page, index: int, path: pathlib.Path) -> None:
    """A screenshot of one cell (input and outputs), scrolled into view."""
    cell = cell_locator(page, index)
    cell.scroll_into_view_if_needed()
    page.wait_for_timeout(150)  # images decode after scrolling
    cell.screenshot(path=str(path))


def png_bytes(src: str) -> bytes | None:
    if src.startswith("data:image/png;base64,"):
        return base64.b64decode(src.split(",", 1)[1])
    return None


def plots(scope) -> list[bytes]:
    """The PNG bytes of every plot a widget shows inside `scope` (its Output widgets)."""
    return [png_bytes(s) or b"" for s in
            scope.locator(".widget-output img").evaluate_all("els => els.map(e => e.src)")]


# --- what a learner does with each widget --------------------------------------------------------

def move_slider(page, widget, label: str | None, out_dir: pathlib.Path, tag: str) -> str:
    """Focus a slider's handle (the one whose label starts with `label`, or the first), press →
    (← at the maximum), and require that its value, its readout and a plot image all change."""
    sliders = widget.locator(".widget-slider")
    if label is not None:
        sliders = sliders.filter(has=page.locator(".widget-label", has_text=re.compile("^" + re.escape(label))))
    if sliders.count() == 0:
        raise CheckFailed(f"no slider{f' labelled {label!r}' if label else ''} in the widget")
    slider = sliders.first
    handle, readout = slider.locator(".noUi-handle").first, slider.locator(".widget-readout").first
    name = slider.locator(".widget-label").first.inner_text().strip()
    value, vmin, vmax = (handle.get_attribute(a) for a in ("aria-valuenow", "aria-valuemin", "aria-valuemax"))
    if vmin == vmax:
        return f"slider {name!r} has a single value ({value}): not moved"
    readout_before, plots_before = readout.inner_text().strip(), plots(widget)
    if not any(plots_before):
        raise CheckFailed("the widget shows no plot image (.widget-output img with a PNG)")
    key = "ArrowLeft" if value == vmax else "ArrowRight"
    handle.scroll_into_view_if_needed()
    handle.focus()
    page.keyboard.press(key)
    wait_until(page, lambda: handle.get_attribute("aria-valuenow") != value, 10,
               f"slider {name!r} to move from {value} after {key}")

    def redrawn():
        kernel_errors(page)
        return plots(widget) != plots_before

    wait_until(page, redrawn, REDRAW_TIMEOUT, f"the plot to redraw after slider {name!r} moved")
    wait_idle(page, REDRAW_TIMEOUT, "the kernel to go idle after the redraw", settle=5)
    kernel_errors(page)
    value_after, readout_after = handle.get_attribute("aria-valuenow"), readout.inner_text().strip()
    if readout_after == readout_before:
        raise CheckFailed(f"slider {name!r}: the readout stayed {readout_before!r} while the value "
                          f"went {value} -> {value_after}")
    widget.screenshot(path=str(out_dir / f"{tag}.png"))
    return (f"slider {name!r} {value} -> {value_after} (readout {readout_before!r} -> "
            f"{readout_after!r}), plot redrawn")


def press_and_see_redraw(page, widget, control, act, what: str, shot: pathlib.Path) -> None:
    """Act on a control (a click, a check) and wait until the widget's text line or picture changes."""
    def shown():
        html = widget.locator(".widget-html")
        return (html.first.inner_text() if html.count() else ""), plots(widget)

    before = shown()
    control.scroll_into_view_if_needed()
    act(control)

    def redrawn():
        kernel_errors(page)
        return shown() != before

    wait_until(page, redrawn, REDRAW_TIMEOUT, what)
    wait_idle(page, REDRAW_TIMEOUT, f"the kernel to go idle after {what}", settle=5)
    kernel_errors(page)
    widget.screenshot(path=str(shot))


def use_text_sampler(page, widget, out_dir: pathlib.Path, tag: str) -> list[str]:
    """Press "sample": a new continuation is drawn, so the text or the bars must change."""
    done = [move_slider(page, widget, "temperature", out_dir, f"{tag}-temperature")]
    button = widget.locator("button", has_text="sample")
    if button.count() == 0:
        raise CheckFailed("the text sampler has no 'sample' button")
    press_and_see_redraw(page, widget, button.first, lambda b: b.click(),
                         "the sampler to draw a new continuation", out_dir / f"{tag}-sampled.png")
    return done + ["'sample' pressed: a new continuation was drawn"]


def use_attention_selector(page, widget, out_dir: pathlib.Path, tag: str) -> list[str]:
    done = [move_slider(page, widget, "head", out_dir, f"{tag}-head")]
    # The selector's "switch off this head" checkbox (class mtf-ablate): switching the head on show
    # off must redraw, the generated output line or the picture changes.
    switch = widget.locator(".mtf-ablate input[type=checkbox]")
    if switch.count() == 0:
        raise CheckFailed("the selector has no head switch (.mtf-ablate checkbox)")
    press_and_see_redraw(page, widget, switch.first, lambda box: box.check(),
                         "the selector to redraw after switching the head off",
                         out_dir / f"{tag}-switched-off.png")
    return done + ["head switched off: the selector redrew"]


JS_WATCH_PICTURES = """(el) => {
  // Every distinct plot the widget shows from now on, however briefly (a redraw may last less than
  // one poll of this check): a MutationObserver adds each new image's src to a set on the element.
  const seen = new Set();
  const look = () => el.querySelectorAll('.widget-output img').forEach(img => {
    if (img.src.startsWith('data:image/png')) seen.add(img.src);
  });
  el.minitfSeen = seen;
  el.minitfObserver = new MutationObserver(look);
  el.minitfObserver.observe(el, {subtree: true, childList: true, attributes: true,
                                 attributeFilter: ['src']});
}"""


def use_training_view(page, widget, out_dir: pathlib.Path, tag: str) -> list[str]:
    """Press "train again": a fresh model trains in the kernel and the widget must redraw as it
    learns, showing at least MIN_REDRAWS different pictures before its line says it is done."""
    button = widget.locator("button", has_text="train again")
    if button.count() == 0:
        raise CheckFailed("the training view has no 'train again' button")
    if not any(plots(widget)):
        raise CheckFailed("the widget shows no plot image (.widget-output img with a PNG)")
    status = widget.locator(".widget-html").first
    widget.evaluate(JS_WATCH_PICTURES)

    def seen() -> int:
        kernel_errors(page)
        return widget.evaluate("el => el.minitfSeen.size")

    button.first.scroll_into_view_if_needed()
    button.first.click()
    wait_until(page, lambda: seen() >= MIN_REDRAWS, REDRAW_TIMEOUT,
               f"the training view to redraw {MIN_REDRAWS} times after 'train again'")
    wait_until(page, lambda: "(done)" in status.inner_text(), REDRAW_TIMEOUT,
               "the training view's line to say '(done)'")
    wait_idle(page, REDRAW_TIMEOUT, "the kernel to go idle after training", settle=5)
    kernel_errors(page)
    count = seen()
    widget.evaluate("el => el.minitfObserver.disconnect()")
    widget.screenshot(path=str(out_dir / f"{tag}-trained.png"))
    return [f"'train again' pressed: {count} different pictures while it trained, then "
            f"{status.inner_text().strip()[:60]!r}"]


def shown_like_explorer(data_value: str) -> str:
    """A cell's data-value as the Explorer writes it in a tooltip (minitf.trace.fmt: integers as
    they are, 3 decimals, −∞)."""
    if re.fullmatch(r"-?\d+", data_value):
        return data_value
    value = float(data_value)
    if math.isinf(value):
        return "−∞" if value < 0 else "∞"
    s = f"{value:.3f}"
    return "0.000" if s == "-0.000" else s


def use_explorer(page, widget, out_dir: pathlib.Path, tag: str) -> list[str]:
    """Type an input, then hover a number: the tooltip must give that number's value
    (DOM hooks documented in minitf/views/explorer.py)."""
    root = widget.locator(".mtf-explorer").first
    box = root.locator("input.mtf-text")
    text = "Hi!"
    box.scroll_into_view_if_needed()
    box.fill(text)
    box.press("Enter")
    wait_until(page, lambda: root.locator(".mtf-pos").count() == len(text.encode()), REDRAW_TIMEOUT,
               f"the explorer to show the {len(text.encode())} bytes of {text!r} typed")
    wait_idle(page, REDRAW_TIMEOUT, "the kernel to go idle after typing", settle=5)
    kernel_errors(page)
    cells = root.locator(".mtf-cell[data-key][data-value]:visible")
    cell = None
    for i in range(min(cells.count(), 200)):  # a computed number: not a byte id, not masked
        candidate = cells.nth(i)
        if (not candidate.get_attribute("data-key").startswith("ids.")
                and math.isfinite(float(candidate.get_attribute("data-value")))):
            cell = candidate
            break
    if cell is None:
        raise CheckFailed("the explorer shows no visible computed number (.mtf-cell[data-key][data-value])")
    key, value = cell.get_attribute("data-key"), cell.get_attribute("data-value")
    cell.scroll_into_view_if_needed()
    cell.hover()
    tooltip = root.locator(".mtf-tooltip")
    wait_until(page, tooltip.is_visible, 5, f"the tooltip of {key} to show")
    tip = tooltip.inner_text()
    if f"= {shown_like_explorer(value)}" not in tip:
        raise CheckFailed(f"hovering {key} (data-value {value}): the tooltip does not give "
                          f"'= {shown_like_explorer(value)}' but {tip.strip()[:200]!r}")
    page.screenshot(path=str(out_dir / f"{tag}-hover.png"))  # the tooltip as shown, in place
    said = [f"typed {text!r}; hovering {key} shows '= {shown_like_explorer(value)}'"]
    return said + generate_to_the_end(page, root, out_dir, tag)


def generate_to_the_end(page, root, out_dir: pathlib.Path, tag: str) -> list[str]:
    """A pair: type `Hi` and a TAB, press "generate next byte" until the button turns itself off.
    The output must end with the end-of-output byte (shown as a named symbol, never a raw tab) and
    the button must stop there, as minitf.generate does, within the model's length."""
    box, step = root.locator("input.mtf-text"), root.locator("button.mtf-step")
    box.scroll_into_view_if_needed()
    box.fill("Hi\\t")  # the text box's escape for TAB
    box.press("Enter")
    wait_until(page, lambda: root.locator(".mtf-pos").count() == 3, REDRAW_TIMEOUT,
               "the explorer to show the 3 bytes of 'Hi' and a TAB")
    wait_idle(page, REDRAW_TIMEOUT, "the kernel to go idle after typing", settle=5)
    clicks = 0
    while step.is_enabled() and clicks < 40:
        before = root.locator(".mtf-pos").count()
        step.click()
        clicks += 1
        wait_until(page, lambda: root.locator(".mtf-pos").count() == before + 1 or not step.is_enabled(),
                   REDRAW_TIMEOUT, "one more byte after 'generate next byte'")
        wait_idle(page, REDRAW_TIMEOUT, "the kernel to go idle after a step", settle=2)
    if step.is_enabled():
        raise CheckFailed(f"'generate next byte' still on after {clicks} bytes: it should stop at EOS")
    written = box.input_value()
    if "\t" in written:
        raise CheckFailed(f"the text box shows a raw tab: {written!r}")
    output = written.split("\\t", 1)[-1]  # after the TAB; EOS shows as \n
    if "\\n" in output and output.index("\\n") != len(output) - 2:
        raise CheckFailed(f"generation went on past the end of output (EOS): {written!r}")
    if not written.endswith("\\n") and root.locator(".mtf-pos").count() < 8:
        raise CheckFailed(f"generation stopped after {clicks} bytes without an end of output: {written!r}")
    page.screenshot(path=str(out_dir / f"{tag}-generated.png"))
    return [f"typed 'Hi\\t', generated {clicks} byte(s) to {written!r}; then the button turned off"]


# What a learner does with each kind of widget, found by its repr's class name in the outputs
# (the notebooks change; the widgets they show are detected, not listed by cell).
INTERACTIONS = {
    "RopeExplorer": lambda page, widget, out_dir, tag: [
        move_slider(page, widget, None, out_dir, f"{tag}-slider")],
    "AttentionSelector": use_attention_selector,
    "NextByteBars": lambda page, widget, out_dir, tag: [
        move_slider(page, widget, "temperature", out_dir, f"{tag}-temperature")],
    "TextSampler": use_text_sampler,
    "Explorer": use_explorer,
    "TrainingView": use_training_view,
}


# --- one notebook ------------------------------------------------------------------------------

def stored_widget_problems(notebook: pathlib.Path) -> list[str]:
    """From the file: a widget output without a picture, or whose model the saved widget state
    lacks (a trusted copy would show "Error displaying widget: model not found")."""
    nb = json.loads(notebook.read_text())
    state = nb.get("metadata", {}).get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    problems = []
    for i, cell in enumerate(nb["cells"]):
        for j, out in enumerate(cell.get("outputs", [])):
            view = out.get("data", {}).get(WIDGET_MIME)
            if view is None:
                continue
            where = f"cell [{i}] output {j} (stored)"
            if "image/png" not in out["data"]:
                problems.append(f"{where}: a widget output with no image/png, so an untrusted copy "
                                "shows its text; display it through minitf.views.pictures.ShowsPicture")
            if view.get("model_id") not in state:
                problems.append(f"{where}: widget model {view.get('model_id')} is not in the "
                                "notebook's saved widget state (re-run the notebook with nbconvert)")
    return problems


JS_CELL_TEXT = """(indices) => {
  // What the page shows of each cell: its visible text (a closed <details> shows only its summary,
  // a hidden output only its placeholder line), whether any <details> in it is open, and how many
  // outputs it shows.
  const nb = window.jupyterapp.shell.currentWidget.content;
  return indices.map(i => {
    const node = nb.widgets[i].node;
    return {text: node.innerText,
            open: Array.from(node.querySelectorAll('details')).some(d => d.open),
            outputs: node.querySelectorAll('.jp-OutputArea-child').length};
  });
}"""


def save_changes_nothing(page, notebook: pathlib.Path) -> str:
    """Save the freshly opened notebook as a learner's Ctrl-S would; the file must stay byte for
    byte as stored. If it changed, put it back and say what JupyterLab rewrote."""
    before = notebook.read_bytes()
    page.evaluate("async () => { await window.jupyterapp.commands.execute('docmanager:save'); }")
    wait_until(page, lambda: not page.evaluate(
        "() => window.jupyterapp.shell.currentWidget.context.model.dirty"), OPEN_TIMEOUT, "the save")
    after = notebook.read_bytes()
    if after == before:
        return "saved as opened: the file is unchanged"
    notebook.write_bytes(before)  # nothing is lost: the stored notebook is put back
    old, new = before.decode().splitlines(), after.decode().splitlines()
    changes = [l for l in difflib.unified_diff(old, new, lineterm="", n=0)
               if l[:1] in "+-" and not l.startswith(("+++", "---"))]
    raise CheckFailed(f"saving the notebook as opened rewrote {len(changes)} line(s) of the file "
                      f"(first: {changes[:4]}); store it as JupyterLab saves it: "
                      f"python tools/normalize_notebooks.py {notebook.name}")


def predictions_out_of_sight(page, notebook: pathlib.Path, out_dir: pathlib.Path) -> str:
    """Each predict region as stored: the answer key is not on screen, the reveal is closed, and a run
    cell stored without output (the learner runs it) shows no output at all."""
    cells, regions = predict_regions.notebook_regions(notebook)
    problems = [p for r in regions for p in r.problems]
    for n, r in enumerate(regions):
        if r.key is None:
            continue
        shown = page.evaluate(JS_CELL_TEXT, r.cells)
        key = predict_regions.normal(r.key)
        for i, seen in zip(r.cells, shown):
            if key in predict_regions.normal(seen["text"]):
                problems.append(f"cell [{i}] shows the answer {r.key!r} of the prediction in cell [{r.prompt}]")
            if seen["open"]:
                problems.append(f"cell [{i}]: the reveal of the prediction in cell [{r.prompt}] is open")
            if i in r.run and not cells[i].get("outputs") and seen["outputs"]:
                problems.append(f"cell [{i}] is stored without output but shows {seen['outputs']} output(s)")
        for i in r.cells[1:]:
            shoot_cell(page, i, out_dir / f"stored-predict{n}-cell{i}.png")
    if problems:
        raise CheckFailed("predictions: " + "; ".join(problems))
    return f"{len(regions)} prediction(s): no answer on screen as stored"


def widget_outputs(cells: list[dict]) -> list[tuple[int, int, str]]:
    """(cell index, output index, class name from the repr) of every widget output."""
    found = []
    for c in cells:
        for j, o in enumerate(c["outputs"]):
            if o["widget"]:
                m = re.match(r"\s*([A-Za-z_]\w*)", o["repr"])
                found.append((c["index"], j, m.group(1) if m else "?"))
    return found


def check_notebook(page, base_url: str, notebook: pathlib.Path, out_dir: pathlib.Path) -> list[str]:
    """Stored, run, used (see the module docstring); returns what was done, raises CheckFailed."""
    done = []
    if problems := stored_widget_problems(notebook):
        raise CheckFailed("\n  ".join(problems))
    t0 = time.monotonic()
    if not page.evaluate("() => !!(window.jupyterapp && window.jupyterapp.shell)"):
        page.goto(f"{base_url}lab?reset")  # once per page; ?reset: no tabs from another session
        wait_until(page, lambda: page.evaluate("() => !!(window.jupyterapp && window.jupyterapp.shell)"),
                   OPEN_TIMEOUT, "JupyterLab to load")
        page.evaluate("async () => { await window.jupyterapp.restored; }")  # commands registered
    # Not awaited: the poll below has a timeout.
    page.evaluate("(path) => { window.jupyterapp.commands.execute('docmanager:open',"
                  " {path, factory: 'Notebook'}); }", notebook.name)
    wait_until(page, lambda: page.evaluate(JS_OPENED, notebook.name), OPEN_TIMEOUT,
               f"JupyterLab to open {notebook.name}")
    if not page.evaluate(f"() => window.jupyterapp.isPluginActivated({WIDGETS_PLUGIN!r})"):
        raise CheckFailed(f"the ipywidgets JupyterLab extension ({WIDGETS_PLUGIN}) is not active: "
                          "is jupyterlab_widgets installed in this environment?")
    wait_until(page, lambda: page.evaluate(JS_KERNEL_STATUS) == "idle", OPEN_TIMEOUT,
               "the kernel to start")

    # 0. opening and saving changes nothing
    done.append(save_changes_nothing(page, notebook))

    # 1. stored: what a fresh clone shows before anything runs
    cells = check_outputs(page, "stored")
    if any(c["trusted"] for c in cells if c["outputs"]):
        raise CheckFailed("the stored outputs are trusted here, so this is not what a fresh clone "
                          "shows (the check's private Jupyter data dir should make them untrusted)")
    stored = widget_outputs(cells)
    for index, j, name in stored:
        shoot_cell(page, index, out_dir / f"stored-cell{index}.png")
    done.append(f"stored: {sum(len(c['outputs']) for c in cells)} outputs, "
                f"{len(stored)} widget(s) shown as pictures"
                + (f" ({', '.join(f'[{i}] {n}' for i, _, n in stored)})" if stored else ""))
    done.append(predictions_out_of_sight(page, notebook, out_dir))

    # 2. run all cells
    page.evaluate(JS_WATCH_KERNEL)
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs')")
    # Not awaited (a hanging cell would hang the check): the poll below has a timeout.
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    t_run = time.monotonic()

    def finished_or_failed():
        cs = page.evaluate(JS_OUTPUTS, WIDGET_MIME)
        return all(c["count"] is not None for c in cs) or any(o["error"] for c in cs for o in c["outputs"])

    wait_until(page, finished_or_failed, RUN_ALL_TIMEOUT, "all cells to run")
    wait_idle(page, RUN_ALL_TIMEOUT, "the kernel to go idle after running all cells")
    cells = check_outputs(page, "after run-all")
    kernel_errors(page)
    live = widget_outputs(cells)
    for index, j, name in live:
        shoot_cell(page, index, out_dir / f"live-cell{index}.png")
    done.append(f"ran {len(cells)} code cells in {time.monotonic() - t_run:.1f} s, no errors; "
                f"{len(live)} live widget(s)")

    # 3. use each widget as a learner would
    for index, j, name in live:
        use = INTERACTIONS.get(name)
        if use is None:
            done.append(f"[{index}] {name}: no interaction registered (INTERACTIONS)")
            continue
        widget = cell_locator(page, index).locator(".jp-OutputArea-child").nth(j)
        try:
            done += [f"[{index}] {name}: {d}" for d in use(page, widget, out_dir, f"cell{index}-{name}")]
        except CheckFailed as e:
            raise CheckFailed(f"cell [{index}] {name}: {e}") from None
    check_outputs(page, "after using the widgets")
    kernel_errors(page)
    done.append(f"{time.monotonic() - t0:.1f} s in all")
    return done


def close_notebook(page) -> bool:
    """Shut the notebook's kernel down and close it unsaved (the next notebook gets its own
    kernel, in the same page: loading JupyterLab again costs seconds). False if the page broke."""
    try:
        page.evaluate("""async () => {
          const w = window.jupyterapp.shell.currentWidget;
          if (!w || !w.sessionContext) return;
          await w.sessionContext.shutdown();
          w.context.model.dirty = false;  // no "save changes?" dialog: nothing is saved
          w.dispose();
        }""")
        return True
    except Exception:
        return False


def sha256(path: pathlib.Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("notebooks", nargs="*", help="default: every notebooks/*.ipynb")
    ap.add_argument("--out", default=str(ROOT / "build" / "browser"),
                    help="where the screenshots go, one folder per notebook (default: build/browser/)")
    ap.add_argument("--headed", action="store_true", help="show the browser window")
    args = ap.parse_args(argv)

    notebooks = ([pathlib.Path(n).resolve() for n in args.notebooks] if args.notebooks
                 else sorted((ROOT / "notebooks").glob("*.ipynb")))
    if not notebooks or (missing := [n for n in notebooks if not n.is_file()]):
        log(f"FAIL: no notebook at {', '.join(map(str, missing)) if notebooks else ROOT / 'notebooks'}")
        return 2
    folder = notebooks[0].parent
    if any(n.parent != folder for n in notebooks):
        log("FAIL: the notebooks must share one folder (the server's root)")
        return 2
    sync_playwright = sync_playwright_or_none(
        log, ". Install Debian's chromium (`apt-get install chromium`, or run `make test-browser`, which does it).")
    if sync_playwright is None:
        return 2

    out_root = pathlib.Path(args.out).resolve()
    # A CI timeout's SIGTERM must still run the `finally` that stops the server.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="minitf-browser-"))
    digests = {n: sha256(n) for n in notebooks}
    port = free_port()
    base_url = f"http://127.0.0.1:{port}/"
    t0 = time.monotonic()
    proc, server_log = start_lab(folder, tmp, port)
    log(f"JupyterLab pid {proc.pid} on {base_url} serving {folder}")
    failures: dict[str, str] = {}
    try:
        wait_for_server(proc, base_url, tmp)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                         headless=not args.headed)
            try:
                major = int(browser.version.split(".")[0])
                log(f"Chromium {browser.version} (playwright 1.64.1 bundles {CHROMIUM_MAJOR})"
                    + ("" if major == CHROMIUM_MAJOR else ": versions differ, results may vary"))
                page = None
                for notebook in notebooks:
                    out_dir = out_root / notebook.stem
                    shutil.rmtree(out_dir, ignore_errors=True)  # only this notebook's old pictures
                    out_dir.mkdir(parents=True)
                    if page is None:
                        page = browser.new_page(viewport={"width": 1280, "height": 1400})
                        page.set_default_timeout(30_000)
                    try:
                        for line in check_notebook(page, base_url, notebook, out_dir):
                            log(f"{notebook.name}: {line}")
                        log(f"{notebook.name}: PASS")
                    except Exception as e:  # CheckFailed, or a playwright error: with its message
                        failures[notebook.name] = (str(e) if isinstance(e, CheckFailed)
                                                   else f"{type(e).__name__}: {e}")
                        log(f"{notebook.name}: FAIL: {failures[notebook.name]}")
                        with contextlib.suppress(Exception):
                            page.screenshot(path=str(out_dir / "failure.png"))
                    finally:
                        if not close_notebook(page):
                            page.close()
                            page = None  # a fresh page for the next notebook
            finally:
                browser.close()
        saved = (tmp / "jupyterlab.log").read_text(errors="replace")
        for notebook, digest in digests.items():
            if sha256(notebook) != digest:
                failures.setdefault(notebook.name, (
                    "JupyterLab saved it during the check (autosave should be off)"
                    if f"Saving file at /{notebook.name}" in saved else
                    "changed on disk during the check, not by JupyterLab (someone editing it?)"))
    except CheckFailed as e:
        failures["(server)"] = str(e)
    except Exception as e:  # a playwright or server error: still a failure, with its message
        failures["(browser)"] = f"{type(e).__name__}: {e}"
    finally:
        stop_lab(proc, tmp)
        server_log.close()
        if failures:
            log("JupyterLab log (last lines):\n" + tail(tmp / "jupyterlab.log"))
        shutil.rmtree(tmp, ignore_errors=True)
    log(f"screenshots: {out_root}/<notebook>/")
    if failures:
        for name, why in failures.items():
            log(f"FAIL {name}: {why}")
        log(f"{len(failures)} of {len(notebooks)} notebook(s) failed in {time.monotonic() - t0:.1f} s")
        return 1
    log(f"PASS: {len(notebooks)} notebook(s) in {time.monotonic() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
