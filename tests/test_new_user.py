"""The new user's list: what a first run of the command line and the Python API
tripped over, each held here. In-process where a subprocess would prove nothing; the two tests that
need a real process and a real Ctrl-C (a signal) are marked slow."""
import base64
import inspect
import json
import signal
import subprocess
import sys
import time

import pytest
import torch

import minitf
from minitf import cli
from minitf.cli import main
from minitf.core import checkpoint, generate as generation

S, L = "data/checkpoints/shift.pt", "data/checkpoints/lm.pt"  # a pairs model, a language model
TINY = ["--steps", "2", "--no-progress", "--d-model", "8"]


def sort_file(tmp_path, n=300):
    path = tmp_path / "sort.txt"
    minitf.write_pairs(path, minitf.make_pairs("sort", n, seed=5))
    return path


def parse(argv):
    return cli.parser().parse_args(argv)


# --- 1. a pairs file without --val validates on part of itself, and the checkpoint says so ---------

def test_a_pairs_file_without_val_holds_out_part_of_itself(tmp_path):
    path = sort_file(tmp_path)
    args = parse(["train", "--train", str(path), "--out", "x.pt"])
    train, val = cli.train_val_pairs(args)
    assert len(val) == 30 and len(train) == 270  # one input in ten (at most --n-val)
    assert {p.input for p in train}.isdisjoint(p.input for p in val)  # held out: never trained on
    assert all(p.output == bytes(sorted(p.input)) for p in val)  # the file's task, not --task shift
    assert set(train) | set(val) == set(minitf.read_pairs(path))
    assert cli.train_val_pairs(args) == (train, val)  # drawn with --seed: the same every time
    capped = parse(["train", "--train", str(path), "--n-val", "7", "--out", "x.pt"])
    assert len(cli.train_val_pairs(capped)[1]) == 7
    none = parse(["train", "--train", str(path), "--n-val", "0", "--out", "x.pt"])
    assert cli.train_val_pairs(none) == (minitf.read_pairs(path), [])


def test_a_run_without_validation_is_described_as_such(tmp_path, capsys):
    out = tmp_path / "m.pt"
    assert main(["train", "--n-train", "30", "--n-val", "0", "--out", str(out), *TINY]) == 0
    assert "validating on nothing (--n-val 0)" in capsys.readouterr().out
    meta = minitf.load(out).metadata
    assert meta["val"] is None and "validated_on" not in meta
    assert "validation at step" not in checkpoint.describe(meta) and "2 steps" in checkpoint.describe(meta)


def test_a_held_out_input_is_held_out_with_all_its_pairs():
    pairs = [minitf.Pair(bytes([65 + i % 20]), b"x") for i in range(200)]  # 20 inputs, 10 pairs each
    train, val = cli.hold_out(pairs, 1000, 0, "f.txt")
    assert len(val) == 20 and {p.input for p in train}.isdisjoint(p.input for p in val)


def test_too_small_a_file_without_val_is_refused_with_the_reason(tmp_path, capsys):
    path = sort_file(tmp_path, n=9)
    assert main(["train", "--train", str(path), "--out", str(tmp_path / "m.pt"), *TINY]) == 2
    err = capsys.readouterr().err
    assert err == (f"minitf: error: --train {path} has 9 distinct inputs: too few to hold out one "
                   "in 10 for validation; give --val FILE, or --n-val 0 to train without "
                   "validation\n")


def test_the_checkpoint_records_what_it_was_validated_on(tmp_path, capsys):
    path = sort_file(tmp_path)
    out = tmp_path / "m.pt"
    assert main(["train", "--train", str(path), "--out", str(out), *TINY]) == 0
    said = capsys.readouterr().out
    model = minitf.load(out)
    on = model.metadata["validated_on"]
    assert on.startswith(f"30 pairs held out of {path}") and "not trained on" in on
    assert f"validating on {on}" in said
    assert f"validated on {on}" in checkpoint.describe(model.metadata)
    _, val = cli.train_val_pairs(parse(model.metadata["command"].split()[3:]))
    recorded = model.metadata["val"]
    scored = minitf.evaluate(model, val)  # the recorded metrics are those of the held-out pairs
    assert scored["char_accuracy"] == pytest.approx(recorded["char_accuracy"], abs=1e-6)
    assert main(["info", str(out)]) == 0
    assert "validated_on" in capsys.readouterr().out
    for extra, words in ((["--val", "data/val.txt"], "75 pairs of data/val.txt"),
                         ([], "generated shift pairs with inputs not trained on")):
        out = tmp_path / f"m{len(extra)}.pt"
        train = ["--train", "data/train.txt"] if extra else ["--n-train", "50", "--n-val", "10"]
        assert main(["train", *train, *extra, "--out", str(out), *TINY]) == 0
        assert words in minitf.load(out).metadata["validated_on"]


def test_an_empty_val_file_is_refused_not_called_n_val_0(tmp_path, capsys):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n")
    assert main(["train", "--train", "data/train.txt", "--val", str(empty), "--out",
                 str(tmp_path / "m.pt"), *TINY]) == 2
    err = capsys.readouterr().err
    assert err == f"minitf: error: --val {empty} holds no pairs (the file is empty or blank)\n"
    assert not (tmp_path / "m.pt").exists()


# --- 2. one thread by default for generate and eval, as for train -------------------------------------

@pytest.mark.parametrize("argv", [["generate", S, "abc"],
                                  ["eval", "data/checkpoints/tiny.pt", "data/val.txt"]],
                         ids=["generate", "eval"])
def test_generate_and_eval_run_on_one_thread_unless_told(argv, capsys):
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        assert main(argv) == 0 and torch.get_num_threads() == 1
        assert main(argv + ["--threads", "2"]) == 0 and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


# --- 3. generate streams, keeps its output on Ctrl-C; Ctrl-C is one line everywhere -------------------

def test_generate_text_hands_over_each_byte_as_it_is_made():
    lm = minitf.load(L)
    seen = []
    text = minitf.generate_text(lm, "ROMEO:", 40, seed=0, on_byte=seen.append)
    assert bytes(seen) == text and len(text) == 40


def test_the_streamed_text_is_the_text_generate_text_makes(capsys):
    lm = minitf.load(L)
    assert main(["generate", L, "ROMEO:", "é", "--max-new", "120", "--seed", "3"]) == 0
    expected = [p + minitf.generate_text(lm, p, 120, seed=3).decode("utf-8", "backslashreplace")
                for p in ("ROMEO:", "é")]
    assert capsys.readouterr().out == "\n".join(expected) + "\n"


def interrupt_after(n, monkeypatch):
    """generate_text as the command line calls it, with a Ctrl-C after n bytes were shown."""
    real = generation.generate_text

    def interrupted(*a, on_byte, **kw):
        def show(byte):
            on_byte(byte)
            if show.count == n - 1:
                raise KeyboardInterrupt
            show.count += 1
        show.count = 0
        return real(*a, on_byte=show, **kw)

    monkeypatch.setattr(cli.run_cmds, "generate_text", interrupted)


def test_ctrl_c_during_generate_keeps_what_was_printed(monkeypatch, capsys):
    full = minitf.generate_text(minitf.load(L), "ROMEO:", 200, seed=0)
    interrupt_after(25, monkeypatch)
    assert main(["generate", L, "ROMEO:", "JULIET:", "--seed", "0"]) == 130
    out, err = capsys.readouterr()
    assert out == "ROMEO:" + full[:25].decode("utf-8", "backslashreplace") + "\n"
    assert err == ("minitf: interrupted (Ctrl-C); the 25 bytes generated so far are printed "
                   "above\n")


def raise_ctrl_c(*args, **kwargs):
    raise KeyboardInterrupt


@pytest.mark.parametrize("where, argv", [
    ("run_cmds.cmd_info", ["info", S]),
    ("settings.make_splits", ["train", "--steps", "3", "--out", "{tmp}/m.pt"]),  # making the pairs
    ("train_cmd.read_text",
     ["train", "--text", "data/text/tinyshakespeare.txt", "--out", "{tmp}/m.pt"]),
], ids=["info", "train making its pairs", "train reading its text"])
def test_ctrl_c_anywhere_is_one_line_and_exit_130(where, argv, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(f"minitf.cli.{where}", raise_ctrl_c)
    assert main([a.replace("{tmp}", str(tmp_path)) for a in argv]) == 130
    assert capsys.readouterr().err == "minitf: interrupted (Ctrl-C)\n"
    assert not (tmp_path / "m.pt").exists()


def test_ctrl_c_during_data_make_writes_no_file(monkeypatch, tmp_path, capsys):
    real = cli.data_cmd.iter_pairs

    def drawn_then_interrupted(*a, **kw):
        pairs = real(*a, **kw)
        for i, pair in enumerate(pairs):
            if i == 100:
                raise KeyboardInterrupt
            yield pair

    monkeypatch.setattr(cli.data_cmd, "iter_pairs", drawn_then_interrupted)
    out = tmp_path / "p.txt"
    assert main(["data", "make", "--n", "1000", "--out", str(out)]) == 130
    assert capsys.readouterr().err == (f"minitf: interrupted (Ctrl-C); {out} was not written (a "
                                       "pairs file is written whole or not at all)\n")
    assert list(tmp_path.iterdir()) == []  # no half-written file, no temporary one


def test_the_start_up_handler_says_one_line_and_is_gone_once_imported(capsys):
    with pytest.raises(SystemExit) as stopped:
        minitf._interrupted_while_starting(signal.SIGINT, None)
    assert stopped.value.code == 130
    assert capsys.readouterr().err == "minitf: interrupted (Ctrl-C) while starting; nothing was done\n"
    assert signal.getsignal(signal.SIGINT) is not minitf._interrupted_while_starting
    # once imported, Python's usual Ctrl-C is back: the slow test below sees generate's own line


def minitf_process(*argv):
    return subprocess.Popen([sys.executable, "-m", "minitf", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/PID/maps")
def test_a_real_ctrl_c_while_importing_is_one_line():
    proc = minitf_process("generate", L, "ROMEO:")
    start = time.monotonic()  # wait until torch's library is loading: minitf is being imported
    while proc.poll() is None and time.monotonic() - start < 30:
        with open(f"/proc/{proc.pid}/maps") as maps:
            if "libtorch" in maps.read():
                break
        time.sleep(0.005)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert (proc.returncode, out) == (130, b""), err
    assert err.decode().count("\n") == 1 and b"Traceback" not in err


@pytest.mark.slow
def test_a_real_ctrl_c_while_generating_keeps_the_text_streamed_so_far():
    proc = minitf_process("generate", L, "ROMEO:", "--max-new", "20000", "--seed", "0")
    first = proc.stdout.read(30)  # printed before the run ends: streamed
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert err.startswith(b"minitf: interrupted (Ctrl-C); the ") and err.count(b"\n") == 1
    shown = first + out
    assert shown.startswith(b"ROMEO:") and shown.endswith(b"\n")
    body = shown[len(b"ROMEO:"):-1]  # what was generated before Ctrl-C, all of it kept
    assert 0 < len(body) < 20000
    assert minitf.generate_text(minitf.load(L), "ROMEO:", len(body), seed=0) == body


# --- 4. over-long sequences are named by file:line or by the flag ------------------------------------

def test_an_over_long_pair_is_named_by_file_and_line_and_skipped_on_request(tmp_path, capsys):
    path = tmp_path / "long.txt"
    lines = open("data/train.txt").read().splitlines()[:40]
    lines.insert(7, base64.b64encode(b"a" * 200 + b"\t" + b"b" * 200).decode())
    path.write_text("\n".join(lines) + "\n")
    out = tmp_path / "m.pt"
    argv = ["train", "--train", str(path), "--val", "data/val.txt", "--out", str(out), *TINY]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"minitf: error: {path}:8: too long: 402 tokens") and "max_len 128" in err
    # the `data check` the error sends the user to finds the same line by the same max_len
    assert f"`python -m minitf data check {path}` lists every bad line" in err
    assert main(["data", "check", str(path)]) == 1
    assert capsys.readouterr().out.startswith(f"{path}:8: too long: 402 tokens")
    assert main(argv + ["--skip-bad-lines"]) == 0  # as eval --skip-bad-lines does
    assert "skipped 1 bad line of 41 and read 40 pairs" in capsys.readouterr().err
    assert main(["eval", str(out), str(path), "--skip-bad-lines"]) == 0


# --- 6. the Python names agree with the command line's ----------------------------------------------

def test_max_new_is_the_python_name_too():
    lm, pairs = minitf.load(L), minitf.load(S)
    text = minitf.generate_text(lm, "ROMEO:", max_new=60, seed=0)
    assert len(text) == 60 and text == minitf.generate_text(lm, "ROMEO:", max_new_tokens=60, seed=0)
    assert minitf.generate(pairs, "hello", max_new=3) == minitf.generate(pairs, "hello", 3) == b"ifm"
    for call in (lambda: minitf.generate_text(lm, "ROMEO:", 5, max_new=6),
                 lambda: minitf.generate(pairs, "hello", max_new_tokens=5, max_new=6)):
        with pytest.raises(TypeError, match="give max_new_tokens .* or max_new .*, not both"):
            call()


def test_generate_takes_a_list_of_inputs():
    pairs, lm = minitf.load(S), minitf.load(L)
    assert minitf.generate(pairs, ["abc", "xyz"]) == [b"bcd", b"yz{"]
    with pytest.raises(ValueError, match="text is empty"):
        minitf.generate(pairs, ["abc", ""])  # every input checked before any is answered
    texts = minitf.generate_text(lm, ["ROMEO:", "JULIET:"], 20, seed=1)
    assert texts == [minitf.generate_text(lm, p, 20, seed=1) for p in ("ROMEO:", "JULIET:")]


def test_read_pairs_returns_one_type_strict_or_not():
    strict = minitf.read_pairs("data/val.txt")
    lenient = minitf.read_pairs("data/seed/val.txt", strict=False)
    for pairs in (strict, lenient):
        assert isinstance(pairs, minitf.PairsRead) and isinstance(pairs, list)
        assert all(isinstance(p, minitf.Pair) for p in pairs)
    assert (strict.report.pairs, len(strict.report.skipped)) == (75, 0)
    assert (len(lenient), lenient.report.lines, len(lenient.report.skipped)) == (7, 43, 36)


def test_train_state_is_a_top_level_name_and_the_step_defaults_agree():
    assert minitf.train_state is checkpoint.train_state
    default = inspect.signature(minitf.train).parameters["steps"].default
    assert default == parse(["train", "--out", "x.pt"]).steps == 2000


@pytest.mark.parametrize("extra, shown", [
    ({"steps_trained": 150, "target_exact": 0.99}, "150 of 2000 planned steps (reached --target-exact 0.99)"),
    ({"step": 37, "interrupted": True, "signal": "SIGINT"}, "37 of 2000 planned steps (interrupted)"),
    ({"step": 500, "saved_every": 500}, "500 of 2000 planned steps (saved part-way)"),
    ({"steps_trained": 2000, "target_exact": 0.99}, "2000 steps"),
    ({}, "2000 steps"),
])
def test_info_shows_the_step_a_run_reached(extra, shown, tmp_path, capsys):
    path = tmp_path / "m.pt"
    minitf.save(minitf.Transformer(minitf.Config()), path,
                metadata={"command": "python -m minitf train --out m.pt", "steps": 2000, "seed": 0,
                          **extra})
    assert main(["info", str(path)]) == 0
    rows = [" ".join(line.split()) for line in capsys.readouterr().out.splitlines()]
    assert [row for row in rows if row.startswith("training")] == [f"training {shown}, seed 0"]
    assert main(["info", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["metadata"]["steps"] == 2000  # --json: as recorded


# --- 8. the README's course table lists every notebook and the recipes -------------------------------

def test_the_course_table_lists_every_notebook_and_every_recipe():
    from support import ROOT
    from minitf.core.recipes import RECIPES

    readme = (ROOT / "README.md").read_text()
    course = readme.split("## The course", 1)[1].split("\n## ", 1)[0]
    course = course.split("### How long each notebook runs", 1)[0]  # both tracks' tables, not the run times
    rows = [line.split("|")[1].strip(" `") for line in course.splitlines()
            if line.startswith("| `")]
    assert rows == sorted(nb.stem for nb in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    for name in RECIPES:
        assert f"`{name}`" in course, name
