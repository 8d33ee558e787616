"""tests/kernel_fork.py: a forked kernel is a fresh kernel of its own, or a normal one."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from jupyter_client.manager import KernelManager

from tests import kernel_fork

CLIENT = [sys.executable, kernel_fork.__file__, "-f", "{connection_file}"]


@pytest.fixture(scope="module")
def zygote(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("zygote") / "socket")
    process = subprocess.Popen([sys.executable, kernel_fork.__file__, "zygote", path])
    for _ in range(300):  # listening (the client also waits a little; a busy machine may need more)
        if Path(path).exists():
            break
        time.sleep(0.1)
    yield path
    process.kill()
    process.wait()


def run_in_kernel(zygote, code: str, cwd: Path, **env) -> str:
    """Start a kernel through the client, run `code`, return what it printed."""
    manager = KernelManager()
    manager.kernel_spec.argv = list(CLIENT)
    manager.start_kernel(cwd=str(cwd), env={**os.environ, kernel_fork.SOCKET_VARIABLE: zygote, **env})
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        printed = []
        client.execute_interactive(code, timeout=60, output_hook=lambda m: printed.append(
            m["content"].get("text", "")) if m["msg_type"] == "stream" else None)
        return "".join(printed).strip()
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


PROBE = "import os, sys; print('torch' in sys.modules, os.getcwd(), os.environ.get('MARK'), end=' '); import torch; print(torch.initial_seed())"


@pytest.mark.slow
def test_a_forked_kernel_has_the_imports_done_and_the_clients_folder_and_its_own_seed(zygote, tmp_path):
    first = run_in_kernel(zygote, PROBE, tmp_path).split()
    second = run_in_kernel(zygote, PROBE, tmp_path).split()
    assert first[:3] == ["True", str(tmp_path), "None"]
    assert first[3] != second[3]  # a fresh seed each, as a new process draws


@pytest.mark.slow
def test_what_torch_set_in_the_test_process_still_gets_a_forked_kernel(zygote, tmp_path):
    """A worker that ran a test importing torch._dynamo or asking for a GPU has these set."""
    set_by_torch = {"TORCHINDUCTOR_CACHE_DIR": "/tmp/torchinductor_x", "PYTORCH_NVML_BASED_CUDA_CHECK": "1"}
    assert run_in_kernel(zygote, PROBE, tmp_path, **set_by_torch).split()[0] == "True"


@pytest.mark.slow
def test_another_environment_gets_a_normal_kernel(zygote, tmp_path):
    preloaded, folder, mark, _ = run_in_kernel(zygote, PROBE, tmp_path, MARK="x").split()
    assert (preloaded, folder, mark) == ("False", str(tmp_path), "x")


@pytest.mark.slow
def test_without_a_zygote_the_client_starts_a_normal_kernel(tmp_path):
    preloaded, folder, *_ = run_in_kernel(str(tmp_path / "absent"), PROBE, tmp_path).split()
    assert (preloaded, folder) == ("False", str(tmp_path))


@pytest.mark.slow
def test_a_kernel_that_dies_at_start_is_named_not_waited_for(monkeypatch):
    """start_new_kernel (nbval's, less an idle wait): every notebook's kernel passes its happy path."""
    import nbval.kernel
    from jupyter_client.kernelspec import KernelSpec
    monkeypatch.setattr(nbval.kernel.NbvalKernelspecManager, "get_kernel_spec", lambda self, name: KernelSpec(
        argv=[sys.executable, "-c", "pass"], language="python", display_name="dies"))
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="the python3 kernel died before it answered"):
        kernel_fork.start_new_kernel(startup_timeout=60, kernel_name="python3")
    assert time.monotonic() - started < 30
