"""Devices: training, evaluation and generation follow the model's device; the CLI's --device."""
import copy

import pytest
import torch

import minitf
from minitf.cli import main
from minitf.core.devices import device_of, mps_available, pick_device
from minitf.core.generate import continue_ids

ACCELERATOR = "cuda" if torch.cuda.is_available() else "mps" if mps_available() else None


def test_auto_picks_cuda_then_mps_then_cpu():
    assert pick_device("auto").type == (ACCELERATOR or "cpu")
    assert pick_device("cpu") == torch.device("cpu")
    with pytest.raises(ValueError, match="one of auto, cpu, cuda, mps"):
        pick_device("tpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA: nothing to refuse")
def test_asking_for_a_missing_gpu_says_so(tmp_path, capsys):
    with pytest.raises(ValueError, match="no CUDA GPU here"):
        pick_device("cuda")
    assert main(["train", "--device", "cuda", "--steps", "1", "--out", str(tmp_path / "m.pt")]) == 2
    assert "no CUDA GPU here" in capsys.readouterr().err


def test_device_of_a_model_is_where_its_weights_are():
    assert device_of(minitf.Transformer()) == torch.device("cpu")
    assert device_of(torch.nn.ReLU()) == torch.device("cpu")  # nothing to ask: the CPU


def test_cli_device_cpu_is_the_default_and_changes_nothing(tmp_path):
    paths = []
    for extra in ([], ["--device", "cpu"]):
        paths.append(tmp_path / f"m{len(paths)}.pt")
        assert main(["train", "--task", "copy", "--n-train", "64", "--n-val", "8", "--steps", "3",
                     "--out", str(paths[-1]), "--no-progress", *extra]) == 0
    a, b = (minitf.load(p) for p in paths)
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))
    assert "device" not in a.metadata  # only a run off the CPU records where it ran
    assert main(["eval", str(paths[0]), "data/val.txt", "--device", "cpu"]) == 0
    assert main(["generate", str(paths[0]), "abc", "--device", "auto"]) == 0


@pytest.mark.skipif(ACCELERATOR is None, reason="no CUDA or MPS device on this machine; this test "
                    "runs where torch sees one (the CPU path is tested everywhere)")
def test_on_a_gpu_train_evaluate_and_generate_follow_the_model(tmp_path):
    """The same run on the CPU and on the accelerator: same batches, so the same curve up to float
    rounding (GPU kernels add in other orders; 40 steps of a tiny model stay within 1e-2)."""
    device = torch.device(ACCELERATOR)
    pairs = minitf.make_pairs("copy", 96, seed=0, max_len=5)
    torch.manual_seed(0)
    cpu = minitf.Transformer(minitf.Config(d_model=16, dropout=0.0))
    gpu = copy.deepcopy(cpu).to(device)
    kwargs = {"steps": 40, "batch_size": 16, "lr": 1e-2, "warmup": 5, "progress": False}
    on_cpu = minitf.train(cpu, pairs, pairs[:16], **kwargs)
    on_gpu = minitf.train(gpu, pairs, pairs[:16], **kwargs)
    assert device_of(gpu).type == device.type
    assert max(abs(a - b) for a, b in zip(on_cpu.loss, on_gpu.loss)) < 1e-2
    assert on_gpu.val[-1]["loss"] == pytest.approx(on_cpu.val[-1]["loss"], abs=1e-2)
    assert minitf.evaluate(gpu, pairs[:8])["loss"] == pytest.approx(
        minitf.evaluate(cpu, pairs[:8])["loss"], abs=1e-2)
    assert isinstance(minitf.generate(gpu, "abc"), bytes)
    assert len(minitf.generate(gpu, "abc", temperature=1.0, seed=1)) <= 64
    lm = minitf.Transformer(minitf.Config(d_model=8, max_len=16)).to(device)
    assert len(minitf.generate_text(lm, "the ", 20, seed=0)) == 20
    _, cached = continue_ids(lm, list(b"the "), 20, lambda logits: logits.argmax())
    _, full = continue_ids(lm, list(b"the "), 20, lambda logits: logits.argmax(), cache=False)
    assert cached.device.type == device.type and torch.allclose(cached, full, atol=1e-4)
    (tmp_path / "t.txt").write_bytes(b"to be or not to be, " * 20)
    text = minitf.read_text(tmp_path / "t.txt", context=16)
    history = minitf.train(lm, text.train, text.val, steps=5, batch_size=4, progress=False)
    assert history.val[-1]["bits_per_byte"] == pytest.approx(
        minitf.evaluate_text(lm, text.val)["bits_per_byte"], abs=1e-4)
