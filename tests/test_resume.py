"""Nothing lost: a run stopped part-way (Ctrl-C, SIGTERM, or a crash after --save-every) saves
what it reached, and resuming it gives the uninterrupted run's model bit for bit on the CPU;
--out is checked before training; --n-val 0 trains without validation."""
import os
import signal
import subprocess
import sys
import time

import pytest
import torch

import minitf
from support import ROOT
from minitf.cli import main
from minitf.core.checkpoint import train_state


def same_weights(a, b) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))


def fresh_model(**config):
    torch.manual_seed(1)
    return minitf.Transformer(minitf.Config(d_model=8, dropout=0.1, **config))  # dropout draws


# -- minitf.train ---------------------------------------------------------------------------------

def pairs_run():
    train_pairs = minitf.make_pairs("copy", 50, seed=0, max_len=4)  # 3 batches an epoch: wraps
    val = minitf.make_pairs("copy", 8, seed=1, max_len=4)
    return {}, (train_pairs, val), dict(steps=30, batch_size=16, lr=1e-2, warmup=5, eval_every=10)


def text_run():
    text = minitf.read_text(ROOT / "data" / "text" / "tinyshakespeare.txt", 16)
    return {"max_len": 16}, (text.train,), dict(steps=20, batch_size=4, lr=1e-2, warmup=5)


@pytest.mark.parametrize("run", [pairs_run, text_run], ids=["pairs", "text"])
def test_stopped_saved_and_resumed_equals_uninterrupted_bit_for_bit(run, tmp_path):
    config, data, options = run()
    straight = fresh_model(**config)
    whole = minitf.train(straight, *data, progress=False, seed=3, **options)

    model, steps_seen = fresh_model(**config), []
    part = minitf.train(model, *data, progress=False, seed=3, **options,
                        after_step=lambda h: steps_seen.append(h.step),
                        should_stop=lambda: steps_seen[-1] >= 13)  # after a validation, mid-epoch
    assert part.interrupted and part.step == 13 and steps_seen == list(range(1, 14))
    path = minitf.save(model, tmp_path / "part.pt", train_state=part.state())

    resumed = minitf.load(path)  # weights_only=True reads the training state too
    rest = minitf.train(resumed, *data, progress=False, seed=3, **options, resume=train_state(path))
    assert same_weights(resumed, straight)
    assert rest.loss == whole.loss and rest.lr == whole.lr and rest.val == whole.val
    assert rest.tokens == whole.tokens and not rest.interrupted


def test_should_stop_after_the_last_step_is_no_interruption():
    pairs = minitf.make_pairs("copy", 16, seed=0, max_len=3)
    hist = minitf.train(fresh_model(), pairs, steps=5, batch_size=8, progress=False,
                        should_stop=lambda: True)
    assert hist.step == 1 and hist.interrupted
    hist = minitf.train(fresh_model(), pairs, steps=1, batch_size=8, progress=False,
                        should_stop=lambda: True)
    assert hist.step == 1 and not hist.interrupted  # the run was complete anyway


def test_a_resumable_checkpoint_is_plain_data_and_finished_ones_hold_no_state(tmp_path):
    pairs = minitf.make_pairs("copy", 16, seed=0, max_len=3)
    model = fresh_model()
    hist = minitf.train(model, pairs, steps=4, batch_size=8, progress=False, should_stop=lambda: True)
    path = minitf.save(model, tmp_path / "m.pt", train_state=hist.state())
    payload = torch.load(path, weights_only=True)  # no pickled objects: tensors, numbers, lists
    assert set(payload["train_state"]) == {"step", "optimizer", "batches", "rng", "history"}
    assert minitf.load(path).config == model.config
    for shipped in sorted((ROOT / "data" / "checkpoints").glob("*.pt")):
        assert train_state(shipped) is None and minitf.load(shipped) is not None


# -- the command line -----------------------------------------------------------------------------

RUN = ["train", "--task", "copy", "--n-train", "200", "--n-val", "20", "--pair-len", "6",
       "--d-model", "8", "--batch-size", "16", "--steps", "300", "--eval-every", "100",
       "--no-progress"]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    path = tmp_path_factory.mktemp("straight") / "straight.pt"
    assert main([*RUN, "--out", str(path)]) == 0
    return minitf.load(path)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL],
                         ids=["ctrl-c", "sigterm", "killed"])
@pytest.mark.slow
def test_cli_signal_saves_and_resume_equals_uninterrupted(sig, uninterrupted, tmp_path, capsys):
    """A real `python -m minitf train` process, signalled once it has saved at step 20 (its
    --save-every); SIGKILL cannot be caught, so there the step-20 file is what is left."""
    out = tmp_path / "run.pt"
    process = subprocess.Popen([sys.executable, "-m", "minitf", *RUN, "--save-every", "20",
                                "--out", str(out)], cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not out.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    process.send_signal(sig)
    stdout, stderr = process.communicate(timeout=60)
    meta = minitf.load(out).metadata
    assert meta["step"] < 300 and train_state(out)["step"] == meta["step"]
    if sig == signal.SIGKILL:
        assert process.returncode == -signal.SIGKILL and meta["saved_every"] == 20
    else:
        assert process.returncode == 128 + sig, stderr  # 130, 143
        assert meta["interrupted"] and meta["signal"] == sig.name and "Traceback" not in stderr
        resume = f"python -m minitf train --resume {out} --out {out}"
        assert stdout.splitlines()[-1] == (f"interrupted ({sig.name}) at step {meta['step']} of "
                                           f"300; saved {out}; resume with: {resume}")
    assert main(["train", "--resume", str(out), "--out", str(out), "--no-progress"]) == 0
    assert f"(resumed at step {meta['step']}); saved {out}" in capsys.readouterr().out
    done = minitf.load(out)
    assert same_weights(done, uninterrupted)
    assert done.metadata["val"] == uninterrupted.metadata["val"]
    assert done.metadata["resumed"] == [meta["step"]] and train_state(out) is None


def test_cli_resume_takes_the_recorded_flags_and_refuses_others(tmp_path, capsys):
    out = tmp_path / "m.pt"
    assert main([*RUN[:-3], "--steps", "2", "--no-progress", "--out", str(out)]) == 0  # a finished run
    assert main(["train", "--resume", str(out), "--out", str(out)]) == 2
    assert "holds no training state" in capsys.readouterr().err  # a finished run
    model = minitf.load(out)
    minitf.save(model, out, overwrite=True, metadata=model.metadata, train_state={"step": 3})
    assert main(["train", "--resume", str(out), "--out", str(out), "--steps", "50"]) == 2
    assert "drop --steps" in capsys.readouterr().err
    assert main(["train", "--resume", str(tmp_path / "none.pt"), "--out", str(out)]) == 2
    assert "no such file" in capsys.readouterr().err
    other = tmp_path / "other.pt"
    other.write_bytes(b"")
    assert main(["train", "--resume", str(out), "--out", str(other)]) == 2
    assert "exists; pass --force" in capsys.readouterr().err
    assert main(["train", "--save-every", "0", "--out", str(tmp_path / "s.pt")]) == 2
    assert "--save-every is a number of steps >= 1, got 0" in capsys.readouterr().err
    for flags in (["--resume", str(out)], ["--save-every", "5"]):
        assert main(["train", "--trainer", "lightning", *flags, "--out", str(tmp_path / "l.pt")]) == 2
        assert "for --trainer minitf" in capsys.readouterr().err


@pytest.mark.parametrize("case", ["folder", "folder-forced", "no-parent", "parent-is-a-file",
                                  "exists", "unwritable"])
def test_cli_out_is_checked_before_training(case, tmp_path, capsys, monkeypatch):
    given = {"folder": tmp_path, "folder-forced": tmp_path, "no-parent": tmp_path / "no" / "m.pt",
             "parent-is-a-file": tmp_path / "file" / "m.pt", "exists": tmp_path / "file",
             "unwritable": tmp_path / "locked" / "m.pt"}[case]
    (tmp_path / "file").write_text("keep me")
    (tmp_path / "locked").mkdir()
    if case == "unwritable":
        if os.geteuid() == 0:  # root writes anywhere: stand in for a folder it may not write in
            def refused(*args, **kwargs):
                raise PermissionError(13, "Permission denied")
            monkeypatch.setattr("minitf.cli.checks.tempfile.TemporaryFile", refused)
        else:
            (tmp_path / "locked").chmod(0o500)
    force = ["--force"] if case == "folder-forced" else []
    assert main(["train", "--steps", "5", "--out", str(given), *force]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # refused before anything was built or trained
    expected = {"folder": "is a folder", "folder-forced": "is a folder", "no-parent": "does not exist",
                "parent-is-a-file": "is a file, not a folder", "exists": "exists; pass --force",
                "unwritable": "cannot write in the folder"}[case]
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("minitf: error: ") and expected in lines[0]
    assert (tmp_path / "file").read_text() == "keep me"
