"""Checkpoints and the command line."""
import pickle
import subprocess
import sys
import warnings

import pytest
import torch

import minitf
from minitf import CheckpointError, Config, Transformer, load, save
from minitf.cli import main
from support import ROOT


def test_save_load_round_trip_and_no_clobber(tmp_path):
    model = Transformer(Config(d_model=8, norm_position="pre", norm="rms")).eval()
    path = save(model, tmp_path / "m.pt", metadata={"note": "hi"})
    back = load(path)
    assert back.config == model.config and back.metadata == {"note": "hi"}
    ids = torch.randint(0, 256, (2, 5))
    assert torch.equal(back(ids), model(ids))
    with pytest.raises(FileExistsError, match="overwrite=True"):
        save(model, path)
    save(Transformer(), path, overwrite=True)
    assert load(path).config == Config()


def _plain_module():
    return torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.ReLU(), torch.nn.Linear(5, 2))


def test_any_module_round_trips_with_its_adamw_state_and_step(tmp_path):
    torch.manual_seed(0)
    model = _plain_module()
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.01)
    x, y = torch.randn(8, 3), torch.randn(8, 2)

    def step(model, optimizer):
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()

    for _ in range(3):
        step(model, optimizer)
    path = save(model, tmp_path / "plain.pt", optimizer=optimizer, step=3)
    torch.load(path, weights_only=True)  # plain data: no pickled code, like every minitf checkpoint

    fresh = _plain_module()
    fresh_optimizer = torch.optim.AdamW(fresh.parameters(), lr=0.01)
    assert load(path, fresh, fresh_optimizer) is fresh
    assert minitf.core.checkpoint.saved_step(path) == 3
    for a, b in zip(model.parameters(), fresh.parameters()):
        assert torch.equal(a, b)
    step(model, optimizer)             # one more step on each: the moments came back too,
    step(fresh, fresh_optimizer)       # so the two stay equal bit for bit
    for a, b in zip(model.parameters(), fresh.parameters()):
        assert torch.equal(a, b)


def test_a_plain_module_checkpoint_says_what_it_needs(tmp_path):
    path = save(_plain_module(), tmp_path / "plain.pt")
    with pytest.raises(CheckpointError, match="plain.pt: .*not a minitf Transformer.*load\\(path, model\\)"):
        load(path)
    with pytest.raises(CheckpointError, match="plain.pt: holds no optimizer state"):
        load(path, _plain_module(), torch.optim.AdamW(_plain_module().parameters()))
    with pytest.raises(CheckpointError, match="plain.pt: weights do not match the model you gave"):
        load(path, torch.nn.Linear(3, 5))


def broken_files(tmp_path) -> dict:
    """Real unreadable files, each with what its message must say: a checkpoint cut short at
    several points (an interrupted copy), empty, random bytes, a text, torch files not minitf's."""
    good = (ROOT / "data/checkpoints/shift.pt").read_bytes()
    made = {f"cut at {n:,} bytes": (good[:n], "truncated: it begins as every checkpoint does")
            for n in (2, 4, 30, 1000, len(good) // 10, len(good) // 2, len(good) - 1)}
    made["empty"] = (b"", "the file is empty (0 bytes)")
    made["random bytes"] = (torch.randint(0, 256, (4096,), generator=torch.Generator().manual_seed(1),
                                          dtype=torch.uint8).numpy().tobytes(),
                            "its bytes are not a file torch.save writes")
    made["a text"] = (b"step 10 loss 2.3\nstep 20 loss 2.1\n",
                      "not a readable checkpoint: a text file (it begins 'step 10 loss")
    made["a pickle"] = (pickle.dumps({"a": [1, 2, 3]}), "a Python pickle, not a file torch.save writes")
    files = {name: (tmp_path / f"{i}.pt", says) for i, (name, (_, says)) in enumerate(made.items())}
    for name, (path, _) in files.items():
        path.write_bytes(made[name][0])
    for name, obj, says in (
            ("a foreign dict", {"step": 3, "weights": [1.0]},
             "torch.save wrote it, but it holds a dict with the keys 'step', 'weights'"),
            ("a bare state_dict", Transformer().state_dict(), "it holds a bare state_dict"),
            ("a list", [torch.zeros(2)], "torch.save wrote it, but it holds a list")):
        path = tmp_path / f"{name.replace(' ', '_')}.pt"
        torch.save(obj, path)
        files[name] = (path, f"not a minitf checkpoint: {says}")
    return files


# what torch and Python say of such files, none of which is the user's business
INTERNALS = ("PytorchStreamReader", "miniz", "central directory", "Errno", "Unsupported operand",
             "KeyError", "EOFError", "RuntimeError", "UnpicklingError", "weights_only", "Traceback")


def test_an_unreadable_checkpoint_says_what_is_wrong_in_words(tmp_path, capsys):
    for name, (path, says) in broken_files(tmp_path).items():
        with pytest.raises(CheckpointError) as refused, warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            load(path)
        assert not said, (name, [str(w.message) for w in said])  # torch's remarks on foreign pickles
        message = str(refused.value)
        assert message.startswith(f"{path}: ") and says in message, (name, message)
        assert "\n" not in message and not any(word in message for word in INTERNALS), (name, message)
        for argv in (["info", str(path)], ["generate", str(path), "abc"], ["eval", str(path), "data/val.txt"],
                     ["train", "--resume", str(path), "--out", str(tmp_path / "out.pt")]):
            assert main(argv) == 2, (name, argv)
            out, err = capsys.readouterr()
            assert err == f"minitf: error: {message}\n", (name, argv, err)


def test_mismatched_weights_are_refused(tmp_path):
    path = save(Transformer(), tmp_path / "m.pt")
    payload = torch.load(path, weights_only=True)
    payload["config"]["d_model"] = 8
    torch.save(payload, path)
    with pytest.raises(CheckpointError, match="do not match its config"):
        load(path)


def test_cli_data_check_reports_each_bad_line(tmp_path, capsys):
    assert main(["data", "check", "data/seed/val.txt"]) == 1
    out = capsys.readouterr().out
    assert "data/seed/val.txt:6: decodes to no TAB" in out
    assert "43 lines, 7 pairs, 36 skipped" in out
    assert main(["data", "check", "data/train.txt"]) == 0


def test_cli_data_make_refuses_to_overwrite(tmp_path, capsys):
    out = tmp_path / "p.txt"
    assert main(["data", "make", "--task", "copy", "--n", "5", "--out", str(out)]) == 0
    before = out.read_text()
    assert main(["data", "make", "--task", "copy", "--n", "3", "--out", str(out)]) == 2
    assert "exists" in capsys.readouterr().err and out.read_text() == before


def test_cli_train_eval_generate(tmp_path, capsys):
    ckpt = tmp_path / "m.pt"
    val = minitf.write_pairs(tmp_path / "val.txt", minitf.read_pairs("data/val.txt")[:8])
    assert main(["train", "--train", "data/train.txt", "--val", str(val), "--steps", "5",
                 "--d-model", "8", "--out", str(ckpt), "--no-progress"]) == 0
    assert "saved" in capsys.readouterr().out
    assert load(ckpt).metadata["steps"] == 5
    meta = load(ckpt).metadata
    assert meta["command"] == (f"python -m minitf train --train data/train.txt --val {val} "
                               f"--steps 5 --d-model 8 --out {ckpt}")  # --no-progress: left out
    assert len(meta["loss_curve"]) == 1 and meta["val_curve"][-1]["step"] == 5
    assert main(["eval", str(ckpt), str(val)]) == 0
    assert '"exact_match"' in capsys.readouterr().out
    assert main(["generate", str(ckpt), "abc"]) == 0
    assert capsys.readouterr().out.startswith("abc\t")
    assert main(["train", "--steps", "1", "--out", str(ckpt), "--no-progress"]) == 2  # exists


@pytest.mark.slow
def test_python_dash_m_entry_point():
    done = subprocess.run([sys.executable, "-m", "minitf", "data", "check", "data/val.txt"],
                          capture_output=True, text=True)
    assert done.returncode == 0 and "75 pairs, 0 skipped" in done.stdout


def test_written_files_get_ordinary_permissions(tmp_path):
    import os
    umask = os.umask(0o022)
    try:
        path = save(Transformer(), tmp_path / "m.pt")
        pairs = minitf.write_pairs(tmp_path / "p.txt", minitf.make_pairs("copy", 3))
    finally:
        os.umask(umask)
    assert oct(path.stat().st_mode & 0o777) == oct(0o644)
    assert oct(pairs.stat().st_mode & 0o777) == oct(0o644)


CHECKPOINTS = ROOT / "data" / "checkpoints"


def recorded_command_args(model):
    """The arguments of the `train` command a shipped checkpoint records, as the CLI parses them."""
    import shlex

    from minitf.cli import parser
    return parser().parse_args(shlex.split(model.metadata["command"])[3:])


@pytest.mark.parametrize("name", ["shift", "shift_uniform", "copy", "reverse", "shift_smallest",
                                  "shift_long", "shift_long_small"])
def test_a_shipped_checkpoint_records_the_pairs_its_command_made(name):
    """metadata["pairs"] (written once by make.py --record-pairs) says what the recorded command
    generated: minitf.checkpoint_pairs, without the CLI, makes the pairs the CLI trained on. Both
    are make_splits of these arguments (the next test makes the pairs both ways for one of them)."""
    from minitf.cli import split_args
    model = load(CHECKPOINTS / f"{name}.pt")
    args = recorded_command_args(model)
    assert args.train is None and args.val is None  # generated pairs: train_val_pairs makes them
    args.n_val = 30
    assert split_args(args) == {**model.metadata["pairs"], "n_val": 30}


def test_the_recorded_pairs_and_the_cli_make_the_same_pairs():
    from minitf.cli import train_val_pairs
    model = load(CHECKPOINTS / "shift_long.pt")  # repeats in training and validation both
    args = recorded_command_args(model)
    args.n_val = 30
    made = minitf.checkpoint_pairs(model, n_val=30)
    assert made == train_val_pairs(args) and len(made[0]) == 10000 and len(made[1]) == 30


def test_checkpoint_pairs_defaults_to_the_recorded_validation_size():
    train, val = minitf.checkpoint_pairs(load(CHECKPOINTS / "shift_uniform.pt"))
    assert (len(train), len(val)) == (20000, 200)


def test_train_records_its_generated_pairs_and_a_file_trained_model_has_none(tmp_path, capsys):
    out = tmp_path / "m.pt"
    assert main(["train", "--task", "reverse", "--n-train", "50", "--n-val", "7", "--repeats", "0.5",
                 "--seed", "3", "--steps", "1", "--no-progress", "--out", str(out)]) == 0
    model = load(out)
    assert model.metadata["pairs"] == {"task": "reverse", "n_train": 50, "n_val": 7, "seed": 3,
                                       "max_len": 12, "repeats": 0.5, "val_repeats": 0.0}
    assert minitf.checkpoint_pairs(model) == minitf.data.make_splits("reverse", 50, 7, 3, repeats=0.5)
    pairs = tmp_path / "p.txt"
    minitf.write_pairs(pairs, minitf.make_pairs("copy", 20))
    assert main(["train", "--train", str(pairs), "--n-val", "5", "--steps", "1", "--no-progress",
                 "--out", str(tmp_path / "f.pt")]) == 0
    with pytest.raises(ValueError, match="records no generated pairs.*--train"):
        minitf.checkpoint_pairs(load(tmp_path / "f.pt"))
