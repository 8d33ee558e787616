"""Notebook kernels forked from one warm process: each nbval kernel is ready in ~0.4 s, not ~2 s.

A fresh kernel spends most of its start importing torch, torch._dynamo (the first optimizer pulls
it in), matplotlib, IPython and minitf: ~2.5 s of CPU for each of the 16 notebooks. With this
plugin (`-p tests.kernel_fork`, passed by the Makefile's test targets) a test run starts one
*zygote*, a process that imports all that once and then waits. nbval's
kernel command becomes this file's client, which asks the zygote to fork; the forked child becomes
an ordinary ipykernel with the client's connection file, working directory, environment and
standard streams, and fresh random seeds (a new process would draw them from the OS). Every
notebook still gets a kernel of its own, started from the same clean state: nothing a notebook
does reaches another.

The zygote imports before forking and never computes, so no thread pool is running when it forks.
One zygote serves a whole run: xdist's workers inherit its socket from the controller. The client
falls back to starting a normal kernel (exec ipykernel) whenever the zygote is absent,
failed, or was started under another environment than the kernel asks for: a variable such as
ATEN_CPU_CAPABILITY or MINITF_PERTURB is read when torch or minitf is imported.

    python tests/kernel_fork.py zygote SOCKET    # the server (started by the plugin)
    python tests/kernel_fork.py -f CONNECTION    # the client (nbval's kernel command)
"""
from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SOCKET_VARIABLE = "MINITF_KERNEL_ZYGOTE"
# set by jupyter_client or by us for each kernel: not a difference in what was imported
PER_KERNEL = ("JPY_", "PYDEVD_", "PYTEST_", "COLUMNS", "LINES", SOCKET_VARIABLE)
# set by torch in a process that ran tests (torch._dynamo's import; torch.cuda's check for a GPU):
# an effect of what the test process did, read by nothing a kernel imports. Without this, every
# notebook that an xdist worker ran after such a test got a full kernel start (~2 s each).
SET_BY_TORCH = ("TORCHINDUCTOR_CACHE_DIR", "PYTORCH_NVML_BASED_CUDA_CHECK")


def _comparable(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if not k.startswith(PER_KERNEL) and k not in SET_BY_TORCH}


# --- the zygote -----------------------------------------------------------------------------------

def _preload() -> None:
    """What every notebook's kernel imports, paid once (a kernel's first cell then finds it done)."""
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # as jupyter_client sets for a kernel
    import IPython.core.completerlib  # noqa: F401
    import IPython.core.debugger  # noqa: F401
    import IPython.core.history  # noqa: F401
    import IPython.core.oinspect  # noqa: F401
    import IPython.extensions.storemagic  # noqa: F401
    import ipykernel.debugger  # noqa: F401  (debugpy: a third of a kernel's own start)
    import ipykernel.ipkernel  # noqa: F401
    import ipykernel.kernelapp  # noqa: F401
    import pdb  # noqa: F401
    import psutil  # noqa: F401
    import sqlite3  # noqa: F401
    import tornado.platform.asyncio  # noqa: F401
    import matplotlib
    matplotlib.use("module://matplotlib_inline.backend_inline")
    import matplotlib.pyplot  # noqa: F401
    import torch
    import torch._dynamo  # noqa: F401  (every optimizer step imports it)
    import torch.optim  # noqa: F401

    import minitf  # noqa: F401
    import minitf.notebook  # noqa: F401


def _become_kernel(request: dict, fds: list[int], added: dict[str, str]) -> None:
    """In the forked child: take on the client's streams, folder and environment, then serve."""
    for target, fd in zip((0, 1, 2), fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update({**added, **request["env"]})
    os.environ["JPY_PARENT_PID"] = str(os.getppid())  # the kernel ends if the zygote does
    import random

    import numpy
    import torch
    random.seed()
    numpy.random.seed()
    torch.seed()
    sys.argv = [sys.executable, "-f", request["connection_file"]]
    sys.path[:] = [p for p in sys.path if p not in ("", request["cwd"])]
    from ipykernel import kernelapp
    try:
        kernelapp.launch_new_instance()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def zygote(path: str) -> None:
    if sys.path and Path(sys.path[0]).resolve() == Path(__file__).parent.resolve():
        del sys.path[0]  # tests/ (this script's folder) is no kernel's business
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)  # clients may connect now: they wait while the imports below run
    server.listen()
    before = dict(os.environ)
    env = _comparable(before)
    _preload()
    added = {k: v for k, v in os.environ.items() if k not in before}  # set by an import (torch's, …)
    children: dict[int, socket.socket] = {}  # pid → its client's connection
    selector = selectors.DefaultSelector()
    selector.register(server, selectors.EVENT_READ)
    parent = os.getppid()
    while os.getppid() == parent:  # pytest gone (even killed): so is the zygote
        for key, _ in selector.select(timeout=0.05):
            if key.fileobj is server:
                conn, _ = server.accept()
                message, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
                request = json.loads(message)
                asked = _comparable(request["env"])
                if asked != env:
                    keys = sorted(k for k in set(asked) | set(env) if asked.get(k) != env.get(k))
                    conn.sendall(f"another environment ({', '.join(keys)})\n".encode())
                    conn.close()
                    for fd in fds:
                        os.close(fd)
                    continue
                pid = os.fork()
                if pid == 0:
                    server.close()
                    conn.close()
                    _become_kernel(request, fds, added)
                for fd in fds:
                    os.close(fd)
                conn.sendall(f"{pid}\n".encode())
                children[pid] = conn
                selector.register(conn, selectors.EVENT_READ, pid)
            else:  # a client went away (killed): its kernel goes too
                if not key.fileobj.recv(1):
                    os.kill(key.data, signal.SIGKILL)
                    selector.unregister(key.fileobj)
        while children:  # report each kernel's end to its client
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            conn = children.pop(pid)
            try:
                selector.unregister(conn)
            except KeyError:
                pass
            try:
                conn.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
            except OSError:
                pass
            conn.close()


# --- the client (nbval's kernel process) ------------------------------------------------------------

def client(connection_file: str) -> None:
    normal = [sys.executable, "-m", "ipykernel_launcher", "-f", connection_file]
    path = os.environ.get(SOCKET_VARIABLE)
    for _ in range(50):  # a zygote started a moment ago binds its socket within its first second
        if not path or os.path.exists(path):
            break
        time.sleep(0.1)
    answer = ""
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(path)
        request = {"connection_file": connection_file, "cwd": os.getcwd(), "env": dict(os.environ)}
        socket.send_fds(conn, [json.dumps(request).encode()], [0, 1, 2])
        reply = conn.makefile("r")
        answer = reply.readline()
        pid = int(answer)
    except (OSError, TypeError, ValueError):  # no zygote, or not for this environment: a normal kernel
        if answer:
            print(f"kernel_fork: a normal kernel; the zygote was started in {answer.strip()}",
                  file=sys.stderr, flush=True)
        os.execv(sys.executable, normal)
    for sig in (signal.SIGINT, signal.SIGTERM):  # jupyter_client interrupts and stops this process
        signal.signal(sig, lambda number, frame: os.kill(pid, number))
    line = reply.readline()
    sys.exit(int(line) if line.strip() else 1)


# --- the pytest plugin --------------------------------------------------------------------------------

def pytest_configure(config) -> None:
    """Start one zygote for the run, in the first pytest process (xdist's controller, whose workers
    inherit its socket), and point nbval's Python kernels at the client in every process."""
    if not getattr(config.option, "nbval", False):
        return
    if not os.environ.get(SOCKET_VARIABLE):
        path = os.path.join(tempfile.mkdtemp(prefix="minitf-kernels-"), "zygote")
        config._minitf_zygote = subprocess.Popen([sys.executable, __file__, "zygote", path],
                                                 stdin=subprocess.DEVNULL)
        os.environ[SOCKET_VARIABLE] = path

    import nbval.kernel
    command = [sys.executable, __file__, "-f", "{connection_file}"]
    original = nbval.kernel.NbvalKernelspecManager.get_kernel_spec

    def get_kernel_spec(self, kernel_name):
        spec = original(self, kernel_name)
        if Path(spec.argv[0]).name.startswith("python"):  # a Python kernel: ours
            spec.argv = list(command)
        return spec

    nbval.kernel.NbvalKernelspecManager.get_kernel_spec = get_kernel_spec
    nbval.kernel.start_new_kernel = start_new_kernel


def start_new_kernel(startup_timeout=60, kernel_name="python", **kwargs):
    """nbval's start_new_kernel, less one idle wait. jupyter_client's wait_for_ready, once the kernel
    has answered, waits until no IOPub message has come for 0.2 s: with a kernel ready in ~0.2 s,
    half of each notebook's start is that wait. nbval's RunningKernel checks that IOPub is up
    itself (it sends kernel_info again and waits for that request's idle status), so here the
    kernel's first reply is enough."""
    import queue

    from jupyter_client.manager import KernelManager
    from nbval.kernel import NbvalKernelspecManager

    km = KernelManager(kernel_name=kernel_name, kernel_spec_manager=NbvalKernelspecManager())
    km.start_kernel(**kwargs)
    kc = km.client()
    kc.start_channels()
    deadline = time.monotonic() + startup_timeout
    while True:  # a request sent before the kernel listens waits in zmq's queue
        kc.kernel_info()
        try:  # the reply to this request or to an earlier one: the kernel is up either way
            if kc.get_shell_msg(timeout=1)["msg_type"] == "kernel_info_reply":
                return km, kc
        except queue.Empty:
            alive = km.is_alive()
            if not alive or time.monotonic() > deadline:
                kc.stop_channels()
                km.shutdown_kernel(now=True)
                raise RuntimeError(f"the {kernel_name} kernel " + (
                    f"did not answer within {startup_timeout} s" if alive else "died before it answered"))


def pytest_unconfigure(config) -> None:
    process = getattr(config, "_minitf_zygote", None)
    if process is not None:
        process.kill()
        process.wait()
        os.environ.pop(SOCKET_VARIABLE, None)


if __name__ == "__main__":
    if sys.argv[1:2] == ["zygote"]:
        zygote(sys.argv[2])
    else:
        client(sys.argv[sys.argv.index("-f") + 1])
