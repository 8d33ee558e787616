"""The new user's list: what a first run of the command line and the Python API
tripped over, each held here. In-process where a subprocess would prove nothing; the two tests that
need a real process and a real Ctrl-C (a signal) are marked slow."""
import base64
import inspect
import json
import re
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
    said = capsys.readouterr().out
    assert "validating on nothing (--n-val 0)" in said
    assert said.splitlines()[-1].startswith("trained 2 steps in ")
    assert said.splitlines()[-1].endswith(f" s; no validation (--n-val 0); saved {out}")
    meta = minitf.load(out).metadata
    assert meta["val"] is None and "validated_on" not in meta and meta["val_curve"] == []
    assert len(meta["loss_curve"]) == 1
    assert main(["train", "--n-val", "0", "--target-exact", "0.9", "--eval-every", "5",
                 "--out", str(tmp_path / "t.pt")]) == 2
    assert "--n-val 0 leaves none" in capsys.readouterr().err  # an early stop needs held-out pairs
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
    val = minitf.write_pairs(tmp_path / "val.txt", minitf.read_pairs("data/val.txt")[:5])
    for extra, words in ((["--val", str(val)], f"5 pairs of {val}"),
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

@pytest.mark.parametrize("argv", [["generate", S, "abc"], ["eval", "data/checkpoints/tiny.pt", "{val}"]],
                         ids=["generate", "eval"])
def test_generate_and_eval_run_on_one_thread_unless_told(argv, tmp_path, capsys):
    val = minitf.write_pairs(tmp_path / "val.txt", minitf.make_pairs("shift", 4))  # the threads are the point
    argv = [str(val) if a == "{val}" else a for a in argv]
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
    assert main(["generate", L, "ROMEO:", "é", "--max-new", "80", "--seed", "3"]) == 0  # past max_len 64
    expected = [p + minitf.generate_text(lm, p, 80, seed=3).decode("utf-8", "backslashreplace")
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
    shown = minitf.generate_text(minitf.load(L), "ROMEO:", 25, seed=0)  # 200 by default: its first 25
    interrupt_after(25, monkeypatch)
    assert main(["generate", L, "ROMEO:", "JULIET:", "--seed", "0"]) == 130
    out, err = capsys.readouterr()
    assert out == "ROMEO:" + shown.decode("utf-8", "backslashreplace") + "\n"
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
    lines = open("data/train.txt").read().splitlines()[:20]
    lines.insert(7, base64.b64encode(b"a" * 200 + b"\t" + b"b" * 200).decode())
    path.write_text("\n".join(lines) + "\n")
    out = tmp_path / "m.pt"
    argv = ["train", "--train", str(path), "--n-val", "0", "--out", str(out), *TINY]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"minitf: error: {path}:8: too long: 402 tokens") and "max_len 128" in err
    # the `data check` the error sends the user to finds the same line by the same max_len
    assert f"`python -m minitf data check {path}` lists every bad line" in err
    assert main(["data", "check", str(path)]) == 1
    assert capsys.readouterr().out.startswith(f"{path}:8: too long: 402 tokens")
    assert main(argv + ["--skip-bad-lines"]) == 0  # as eval --skip-bad-lines does
    assert "skipped 1 bad line of 21 and read 20 pairs" in capsys.readouterr().err
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


# --- 8. the README's course section names every recipe (its tables: tests/notebooks/test_course_tracks.py)

def test_the_course_section_names_every_recipe():
    from support import ROOT
    from minitf.core.recipes import RECIPES

    course = (ROOT / "README.md").read_text().split("## The course", 1)[1].split("\n## ", 1)[0]
    course = course.split("### How long each notebook runs", 1)[0]  # the tracks' tables and text
    assert [name for name in RECIPES if f"`{name}`" not in course] == []


# --- issue 39: the second new user's list, each item held ---------------------------------------------

# a few held-out pairs: each validation generates every output, and what is checked is when it is shown
PAIRS = ["--n-train", "100", "--n-val", "4", "--d-model", "8", "--batch-size", "8"]


@pytest.mark.parametrize("progress", [[], ["--no-progress"]], ids=["bar", "no-bar"])
def test_each_validation_is_printed_when_it_is_made(progress, monkeypatch, tmp_path, capsys):
    from minitf.core import train as training
    real, seen = training.validate, []

    def validate(*args, **kwargs):  # what train has printed when each validation starts
        seen.append(capsys.readouterr().out)
        return real(*args, **kwargs)

    monkeypatch.setattr(training, "validate", validate)
    assert main(["train", *PAIRS, "--steps", "6", "--eval-every", "2", *progress,
                 "--out", str(tmp_path / "m.pt")]) == 0
    rest = capsys.readouterr().out
    assert len(seen) == 3 and "step      2  val loss" in seen[1] and "step      4" in seen[2]
    assert "step      6  val loss" in rest and "trained 6 steps" in rest
    printed = "".join(seen) + rest
    assert all(printed.count(f"step {s:6d}  val loss") == 1 for s in (2, 4, 6))  # once each


def test_a_stopped_run_shows_the_validations_it_made(monkeypatch, tmp_path, capsys):
    from minitf.cli import train_cmd

    def signal_at_step_5(stop):  # train asks after every step: a Ctrl-C arrives during step 5
        stop.asked = getattr(stop, "asked", 0) + 1
        if stop.asked == 5:
            stop.signal = signal.SIGINT
        return stop.signal is not None

    monkeypatch.setattr(train_cmd.Stop, "__call__", signal_at_step_5)
    assert main(["train", *PAIRS, "--steps", "8", "--eval-every", "2", "--no-progress",
                 "--out", str(tmp_path / "m.pt")]) == 130
    out = capsys.readouterr().out
    assert "step      2  val loss" in out and "step      4  val loss" in out
    assert "step      6" not in out and "interrupted (SIGINT) at step 5 of 8" in out


def test_data_check_flags_what_train_refuses_by_the_same_max_len(tmp_path, capsys):
    path = tmp_path / "long.txt"
    minitf.write_pairs(path, [minitf.Pair(b"a" * 70, b"b" * 70), *minitf.make_pairs("copy", 20)])
    out = tmp_path / "m.pt"
    for extra, flag in (([], ""), (["--max-len", "100"], " --max-len 100")):
        assert main(["train", "--train", str(path), "--n-val", "0", *TINY, *extra, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        check = f"python -m minitf data check {path}{flag}"
        assert f"{path}:1: too long: 142 tokens" in err and f"`{check}` lists every bad line" in err
        assert main(check.split()[3:]) == 1  # the command the error names finds the same line
        assert capsys.readouterr().out.startswith(f"{path}:1: too long: 142 tokens")
    assert main(["data", "check", str(path), "--max-len", "141"]) == 0  # long enough: no bad line


def test_a_text_file_given_to_train_gets_the_hint_to_use_text(tmp_path, capsys):
    text = tmp_path / "notes.txt"
    text.write_text("Dear diary,\nToday I trained a model.\n")
    assert main(["train", "--train", str(text), *TINY, "--out", str(tmp_path / "m.pt")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"train a language model on it with --text {text}" in err
    assert main(["train", "--train", "data/seed/val.txt", *TINY, "--out", str(tmp_path / "m.pt")]) == 2
    assert "--text" not in capsys.readouterr().err  # some of its lines are Base64: a pairs file


@pytest.mark.parametrize("argv", [["data", "make", "--n", "5"], ["train", *TINY]], ids=["data make", "train"])
def test_a_missing_out_folder_is_refused_not_created(argv, tmp_path, capsys):
    out = tmp_path / "missing" / "deeper" / "x.txt"
    assert main([*argv, "--out", str(out)]) == 2
    assert capsys.readouterr().err == (f"minitf: error: --out {out}: the folder {out.parent} does "
                                       "not exist (create it first)\n")
    assert not (tmp_path / "missing").exists()
    assert main([*argv, "--out", str(tmp_path)]) == 2  # a folder for a file: named, nothing written
    assert f"--out {tmp_path} is a folder" in capsys.readouterr().err


@pytest.mark.parametrize("name", list(minitf.core.recipes.RECIPES))
def test_a_recipe_and_its_written_out_command_are_not_refused_for_its_own_settings(name):
    """A recipe sets --task, --cooldown, --n-val... itself: only what the user typed is checked,
    with the recipe, with a data file that makes some of its settings moot, and written out."""
    from minitf.cli.checks import check_args, typed_flags
    data = ["--text", "data/text/tinyshakespeare.txt"] if "text" in minitf.core.recipes.get(name).values \
        else ["--train", "data/train.txt"]
    for argv in (["train", "--recipe", name, "--out", "x.pt"], ["train", "--recipe", name, *data, "--out", "x.pt"]):
        args, words = cli.with_recipe(name, argv)
        args.typed = typed_flags(argv)
        assert check_args(args) is None, (argv, check_args(args))
        again = cli.parser().parse_args(words)  # the command the checkpoint records, typed again
        again.typed = typed_flags(words)
        assert check_args(again) is None, (words, check_args(again))


@pytest.mark.parametrize("d_model, n_heads, advice", [
    (5, 2, "give --d-model 4 or --d-model 8"),
    (6, 2, "--n-heads 1 or 3 with --d-model 6"),
    (12, 8, "give --d-model 16"),
])
def test_head_width_advice_names_flags_the_command_line_has(d_model, n_heads, advice, tmp_path, capsys):
    assert main(["train", "--d-model", str(d_model), "--n-heads", str(n_heads), "--steps", "2",
                 "--out", str(tmp_path / "m.pt")]) == 2
    err = capsys.readouterr().err
    assert advice in err and "head_dim" not in err and err.count("\n") == 1
    assert main(["train", "--help"]) == 0
    options = set(re.findall(r"--[a-z][a-z-]*", capsys.readouterr().out))
    assert set(re.findall(r"--[a-z][a-z-]*", err)) <= options  # every flag named is a real one


def test_pairs_generate_says_when_the_output_stops_without_its_end_marker(capsys):
    assert main(["generate", S, "x" * 100, "abc"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[1] == "abc\tbcd"  # the other input is answered as before
    output = out.splitlines()[0].split("\t")[1]
    assert len(output) == 128 - 101  # input and TAB take 101 of the 128 positions
    assert err.count("\n") == 1 and "stopped after 27 bytes, before its end marker, at the model's max_len 128" in err
    assert main(["generate", S, "abcdefghij", "--max-new", "3"]) == 0
    out, err = capsys.readouterr()
    assert out == "abcdefghij\tbcd\n" and "stopped after 3 bytes, before its end marker, at --max-new 3" in err
    assert main(["generate", S, "abcdefghij"]) == 0
    assert capsys.readouterr().err == ""  # an output that ends on its end marker: nothing to say


@pytest.mark.parametrize("text, says", [("a\tb", "holds a TAB (byte 9) at position 1"),
                                         ("ab\n", "holds a newline (byte 10) at position 2")])
def test_a_tab_or_newline_inside_a_pairs_input_is_refused(text, says, capsys):
    assert main(["generate", S, "abc", text]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and says in err
    with pytest.raises(ValueError, match=re.escape(says)):
        minitf.generate(minitf.load(S), text)


def test_generate_on_a_language_model_continues_the_text_without_a_tab():
    lm = minitf.load(L)
    assert minitf.generate(lm, "ROMEO:", 20) == minitf.generate_text(lm, "ROMEO:", 20, greedy=True)
    assert minitf.generate(lm, ["ROMEO:", "JULIET:"], 5, temperature=0.8, seed=1) == \
        minitf.generate_text(lm, ["ROMEO:", "JULIET:"], 5, temperature=0.8, seed=1)
    tabbed = minitf.generate(lm, "ROMEO:", 20, tab=True)  # asked for: still possible
    assert tabbed != minitf.generate(lm, "ROMEO:", 20)


@pytest.mark.parametrize("call", [lambda m: minitf.generate(m, "abc", 0),
                                  lambda m: minitf.generate_text(m, "abc", 0),
                                  lambda m: minitf.generate_text(m, "abc", max_new=0)])
def test_zero_bytes_to_generate_is_refused_in_python_as_on_the_command_line(call, capsys):
    with pytest.raises(ValueError, match="must be a whole number >= 1"):
        call(minitf.load(S))
    assert main(["generate", L, "abc", "--max-new", "0"]) == 2
    assert "--max-new must be a whole number >= 1" in capsys.readouterr().err


def fake_text(monkeypatch, written: bytes):
    """generate_text as a language model that writes exactly these bytes."""
    def generate_text(model, prompt, **settings):
        for byte in written:
            settings["on_byte"](byte)
        return written
    monkeypatch.setattr(cli.run_cmds, "generate_text", generate_text)


def test_text_cut_inside_a_utf8_character_prints_what_decodes_and_says_so(monkeypatch, capsys):
    fake_text(monkeypatch, "ab日".encode()[:-1])  # 日 is 3 bytes: the last one never came
    assert main(["generate", L, "x", "--max-new", "4"]) == 0
    out, err = capsys.readouterr()
    assert out == "xab\n" and "\\x" not in out
    assert err == ("minitf: warning: the text ended inside a UTF-8 character: its first 2 bytes "
                   "(e6 97) are left out, since they print as no character\n")
    fake_text(monkeypatch, "ab日".encode())
    assert main(["generate", L, "x", "y"]) == 0
    out, err = capsys.readouterr()
    assert out == "xab日\nyab日\n" and err == ""  # whole characters: nothing held back, nothing said
    fake_text(monkeypatch, b"a\xffb")  # a byte no character begins with: shown, as it was written
    assert main(["generate", L, "x"]) == 0
    assert capsys.readouterr().out == "xa\\xffb\n"


def test_counts_of_one_are_singular(tmp_path, capsys):
    from minitf.cli.data_cmd import make_estimate
    from minitf.core.words import plural
    assert [plural(n, "step") for n in (0, 1, 2)] == ["0 steps", "1 step", "2 steps"]
    assert plural(1200, "pair", sep=True) == "1,200 pairs"
    assert make_estimate(10_000_000, 1, 12).endswith(" and 1 minute")
    out = tmp_path / "m.pt"
    assert main(["train", "--steps", "1", "--no-progress", "--n-train", "100", "--n-val", "1",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "trained 1 step in" in printed and "validating on 1 generated shift pair with" in printed
    assert main(["info", str(out)]) == 0
    info = capsys.readouterr().out
    assert "1 validation, at step 1" in info and "1 mean of 10 steps" in info and "  1 step," in info
    assert "1 steps" not in info + printed and "1 validations" not in info
    assert "(1 point)" in checkpoint.describe(minitf.load(out).metadata)
