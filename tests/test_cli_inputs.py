"""Every bad command-line input is one line, `minitf: error: …`, naming the flag or file, with exit
status 2 and no traceback; a few inputs have a documented meaning instead (exit 0). Sampling
settings go through one check (minitf.core.generate.check_sampling) on every path, in one wording."""
import math
import re
import subprocess
import sys

import pytest
import torch

import minitf
from minitf import cli
from minitf.cli import main
from minitf.core.generate import check_sampling, generate, generate_text, next_byte_probs

S, L = "data/checkpoints/shift.pt", "data/checkpoints/lm.pt"  # a pairs model, a language model
SEED_VAL = "data/seed/val.txt"  # the seed's sample: 43 lines, 36 of them bad (line 6 the first)
TRAIN = ["train", "--train", "data/train.txt", "--val", "data/val.txt", "--steps", "3",
         "--no-progress", "--out", "{tmp}/m.pt"]
TEXT = "data/text/tinyshakespeare.txt"

IGNORED = [  # train: (flags typed that the run would ignore, the words of the refusal)
    (["--cooldown", "0.3"], "--cooldown is the length of the wsd schedule's decay, and --schedule is cosine"),
    (["--recipe", "lm-fast", "--schedule", "cosine", "--cooldown", "0.3"], "--schedule is cosine"),
    (["--qk-norm", "--no-qk-norm"], "--qk-norm and --no-qk-norm say opposite things"),
    (["--no-qk", "--qk-norm"], "--no-qk-norm and --qk-norm say opposite things"),
    (["--text", "data/text/tinyshakespeare.txt", "--n-val", "0"], "--n-val is for pairs, and --text"),
    (["--text", "data/text/tinyshakespeare.txt", "--task", "copy", "--repeats", "0.5", "--pair-len", "5"],
     "--task, --repeats and --pair-len are for pairs"),
    (["--recipe", "lm", "--n-val", "0"], "--n-val is for pairs, and --text"),
    (["--train", "data/train.txt", "--task", "sort"], "--task shapes generated pairs, and --train data/train.txt"),
    (["--train", "data/train.txt", "--n-train", "100", "--repeats", "0.1", "--val-repeats", "0.1"],
     "--n-train, --repeats and --val-repeats shape generated pairs"),
    (["--train", "data/train.txt", "--val-repeats", "0.1"], "--val-repeats shapes generated pairs, and --train"),
    (["--val", "data/val.txt", "--n-val", "10"], "--n-val shapes generated held-out pairs, and --val data/val.txt"),
    (["--train", "data/train.txt", "--val", "data/val.txt", "--n-val", "10"], "--n-val shapes generated held-out pairs"),
]

# (argv, exit status, substrings the message must contain: stderr for an error, else stdout+stderr)
CASES = [
    *[(["train", *flags, "--steps", "30", "--out", "{tmp}/m.pt"], 2, [says]) for flags, says in IGNORED],
    # train: numbers out of range, flags that would be ignored, bad pairs files
    (TRAIN + ["--batch-size", "0"], 2, ["--batch-size", "got 0"]),
    (TRAIN + ["--batch-size", "-4"], 2, ["--batch-size", "got -4"]),
    (TRAIN + ["--threads", "0"], 2, ["--threads", ">= 1"]),
    (TRAIN + ["--eval-every", "0"], 2, ["--eval-every", "leave it out"]),
    (TRAIN + ["--steps", "0"], 2, ["--steps"]),
    (TRAIN + ["--lr", "0"], 2, ["--lr"]),
    (TRAIN + ["--lr", "nan"], 2, ["--lr"]),
    (TRAIN + ["--warmup", "-1"], 2, ["--warmup"]),
    (TRAIN + ["--d-model", "0"], 2, ["--d-model"]),
    (TRAIN + ["--text", TEXT], 2, ["--train and --val name pairs files", "--text"]),
    (["train", "--text", TEXT, "--train", "data/train.txt", "--out", "{tmp}/m.pt"], 2, ["--train names a pairs file"]),
    (["train", "--train", SEED_VAL, "--steps", "3", "--out", "{tmp}/m.pt"], 2,
     [f"{SEED_VAL}:6", "36 of its 43 lines are bad", f"data check {SEED_VAL}", "--skip-bad-lines"]),
    (["train", "--steps", "3"], 2, ["--out", "python -m minitf train --help"]),
    # train: what a new user's first runs tripped over: each flag named, none silently accepted
    (TRAIN + ["--embed-lr", "-1"], 2, ["--embed-lr must be a number > 0", "got -1.0"]),
    (TRAIN + ["--embed-lr", "0"], 2, ["--embed-lr must be a number > 0", "got 0.0"]),
    (["train", "--n-val", "-1", "--steps", "3", "--out", "{tmp}/m.pt"], 2,
     ["--n-val must be a whole number >= 0", "0: no validation", "got -1"]),
    (["train", "--val-repeats", "2", "--steps", "3", "--out", "{tmp}/m.pt"], 2,
     ["--val-repeats must be a fraction in [0, 1]", "got 2.0"]),
    (["train", "--repeats", "-0.5", "--steps", "3", "--out", "{tmp}/m.pt"], 2,
     ["--repeats must be a fraction in [0, 1]", "got -0.5"]),
    (TRAIN + ["--muon-lr", "0.02"], 2, ["--muon-lr", "--optimizer is adamw", "--optimizer muon"]),
    (TRAIN + ["--optimizer", "muon", "--muon-lr", "-1"], 2, ["--muon-lr must be a number > 0"]),
    (TRAIN + ["--context", "32"], 2, ["--context is the window length of --text"]),
    (TRAIN + ["--warmup", "5000", "--steps", "5"], 2,
     ["--warmup 5000 is longer than --steps 5", "give --warmup 5 or less"]),
    (TRAIN + ["--schedule", "wsd", "--cooldown", "0"], 2, ["--cooldown must be a fraction in (0, 1]"]),
    *[(TRAIN + ["--time", t], 2, ["--time must be a number of seconds > 0 (the wall-clock budget), got " + got])
      for t, got in (("0", "0.0"), ("-60", "-60.0"), ("nan", "nan"), ("inf", "inf"))],
    (TRAIN + ["--time", "ten"], 2, ["--time"]),
    (TRAIN + ["--time", "60", "--trainer", "lightning"], 2,
     ["--time is for --trainer minitf; Lightning trains for --steps"]),
    (["train", "--pair-len", "200", "--steps", "3", "--out", "{tmp}/m.pt"], 2,
     ["--pair-len 200 makes sequences of up to 401 tokens", "at most 128 (--max-len)",
      "--pair-len 63 or less", "--max-len 401 or more"]),
    (["train", "--train", "{tmp}", "--steps", "3", "--out", "{tmp}/m.pt"], 2, ["{tmp}: is a directory"]),
    # data
    (["data", "check", "{tmp}"], 2, ["{tmp}: is a directory"]),
    (["data", "check", "{tmp}/missing.txt"], 2, ["missing.txt: no such file"]),
    (["data", "check", "--max-len", "0", "data/val.txt"], 2, ["--max-len"]),
    (["data", "make", "--n", "-3", "--out", "{tmp}/p.txt"], 2, ["--n", "got -3"]),
    (["data", "make", "--n", "0", "--out", "{tmp}/p.txt"], 2, ["--n", "got 0"]),
    (["data", "make", "--n", "100000000", "--out", "{tmp}/p.txt"], 2,
     ["--n 100,000,000", "10,000,000", "GB of file", "GB of memory", "minutes"]),
    (["data", "make", "--n", "5", "--min-len", "0", "--out", "{tmp}/p.txt"], 2, ["--min-len"]),
    (["data", "make", "--n", "5", "--exclude", SEED_VAL, "--out", "{tmp}/p.txt"], 2,
     [f"{SEED_VAL}:6", f"data check {SEED_VAL}"]),
    # generate: the sampling flags (each refusal's words on both kinds of model: BAD below)
    (["generate", S, "abc", "--temperature", "0"], 0, ["abc\tbcd"]),  # 0 = greedy: documented
    (["generate", L, "abc", "--temperature", "0", "--max-new", "5"], 0, ["abc"]),
    (["generate", S, "abc", "--top-k", "5"], 2,
     ["--top-k 5", "greedy (the default without --temperature)", "--temperature > 0"]),
    (["generate", S, "abc", "--top-p", "0.9"], 2, ["--top-p 0.9", "greedy"]),
    (["generate", L, "abc", "--greedy", "--top-p", "0.9"], 2, ["--top-p 0.9", "greedy (--greedy)"]),
    (["generate", S, "abc", "--max-new", "0"], 2, ["--max-new", "got 0"]),
    (["generate", S, "abc", "--max-new", "-5"], 2, ["--max-new", "got -5"]),
    (["generate", L, "abc", "--max-new", "-5"], 2, ["--max-new", "got -5"]),
    (["generate", L, "abc", "--max-new", "100000"], 2,
     ["--max-new 100000 is more than generate writes in one run (20,000 bytes", "AMD EPYC",
      "its last 64 bytes", "--max-new 20000 or less"]),
    (["generate", S, "abc", "--max-new", "500"], 2,
     ["--max-new 500 is more than a pairs model can write", "max_len 128", "--max-new 126 or less"]),
    (["generate", S, "abc", "--max-new", "126"], 0, ["abc\tbcd"]),
    (["generate", S, "abc", "--threads", "0"], 2, ["--threads must be a whole number >= 1", "got 0"]),
    # generate: the inputs
    (["generate", S, ""], 2, ["text is empty"]),
    (["generate", S, "abc", ""], 2, ["text is empty"]),  # nothing printed for "abc" either
    (["generate", L, ""], 2, ["prompt is empty"]),
    (["generate", S, "x" * 200], 2, ["text is 200 bytes", "max_len = 128", "at most 126"]),
    (["generate", "data/train.txt", "abc"], 2, ["data/train.txt: not a readable checkpoint"]),
    (["generate", "{tmp}/missing.pt", "abc"], 2, ["missing.pt: no such file"]),
    (["generate", S], 2, ["TEXT"]),
    # eval: the right kind of data for the kind of model, bad lines, lenient reading
    (["eval", L, "data/val.txt"], 2, [L, "is a language model", "--text FILE"]),
    (["eval", S, "--text", "data/train.txt"], 2, [S, "is a pairs model", "give a pairs file"]),
    (["eval", L, "data/val.txt", "--text", TEXT], 2, ["data/val.txt", TEXT, "not both"]),
    (["eval", S, SEED_VAL], 2,
     [f"{SEED_VAL}:6", "36 of its 43 lines are bad", f"data check {SEED_VAL}", "--skip-bad-lines"]),
    (["eval", S, SEED_VAL, "--skip-bad-lines"], 0,
     ["skipped 36 bad lines of 43 and read 7 pairs", '"exact_match"']),
    (["eval", S, SEED_VAL, "--skip-bad-lines", "--text", TEXT], 2, ["not both"]),
    (["eval", S], 2, ["pairs file", "--text FILE"]),
    (["eval", S, "data/val.txt", "--context", "8"], 2, ["--context"]),
    (["eval", S, "{tmp}"], 2, ["{tmp}: is a directory"]),
    (["eval", S, "data/val.txt", "--threads", "-1"], 2, ["--threads must be a whole number >= 1", "got -1"]),
    (["eval", L, "--text", "data/val.txt"], 0, ["data/val.txt looks like a pairs file", "bits_per_byte"]),
    # info
    (["info", S], 0, ["a pairs model", "42,112 parameters", "d_model=32", "exact_match 1.0000",
                      "python -m minitf train --task shift"]),
    (["info", L], 0, ["a language model", "233,088 parameters", f"{TEXT}, context 64",
                      "bits_per_byte 2.3223", "3000 steps"]),
    (["info", S, "--json"], 0, ['"parameters": 42112', '"command"']),
    (["info", "data/train.txt"], 2, ["data/train.txt: not a readable checkpoint"]),
    (["info", "{tmp}/missing.pt"], 2, ["missing.pt: no such file"]),
    (["info", "{tmp}"], 2, ["{tmp}: is a directory"]),
    (["info"], 2, ["checkpoint"]),
    # the program itself
    (["--version"], 0, [f"minitf {minitf.__version__}"]),
    (["frobnicate"], 2, ["invalid choice: 'frobnicate'"]),
]


def case_id(case):
    argv = " ".join(a if len(a) < 20 else a[:8] + "…" for a in case[0])
    return argv.replace("{tmp}/m.pt", "").replace(" --train data/train.txt --val data/val.txt "
                                                  "--steps 3 --no-progress --out", "")


@pytest.mark.parametrize("argv, status, says", CASES, ids=[case_id(c) for c in CASES])
def test_each_input_gets_a_one_line_error_or_its_documented_meaning(argv, status, says, tmp_path, capsys):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    says = [s.replace("{tmp}", str(tmp_path)) for s in says]
    assert main(argv) == status
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    if status == 2:
        assert err.startswith("minitf: error: ") and err.count("\n") == 1, err
        assert out == "" or out.startswith("model:"), out  # nothing half-done was printed
        for s in says:
            assert s in err
    else:
        assert "minitf: error" not in err
        for s in says:
            assert s in out + err
    assert not (tmp_path / "m.pt").exists() and not (tmp_path / "p.txt").exists()


def test_lightning_without_the_asked_for_accelerator_is_one_line(tmp_path, capsys):
    pytest.importorskip("lightning")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: --accelerator gpu would run")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in TRAIN]
    assert main(argv + ["--trainer", "lightning", "--accelerator", "gpu"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("minitf: error: Lightning cannot run --accelerator gpu") and err.count("\n") == 1
    assert "--accelerator auto" in err and "Traceback" not in err


# --- the sampling check: one rule, one wording ------------------------------------------------------

def test_check_sampling_returns_the_temperature_to_use():
    assert check_sampling() == 1.0                 # a language model's default: sample at T = 1
    assert check_sampling(default=0.0) == 0.0      # pairs' default: greedy
    assert check_sampling(greedy=True) == 0.0
    assert check_sampling(0) == 0.0 and check_sampling(0, greedy=True) == 0.0
    assert check_sampling(0.7, top_k=256, top_p=1) == 0.7
    assert check_sampling(None, top_k=5) == 1.0


FLAG_NAMES = [("greedy=True", "--greedy"), ("temperature", "--temperature"), ("top_k", "--top-k"),
              ("top_p", "--top-p")]
FINITE, TOP_K, TOP_P = ("temperature must be a finite number >= 0, got ", "top_k must be between 1 and the "
                        "vocabulary size 256, got ", r"top_p is a probability in \(0, 1\], got ")
BAD = [  # (settings, what the one check says: a regular expression)
    ({"temperature": -0.5}, FINITE + "-0.5"), ({"temperature": math.inf}, FINITE + "inf"),
    ({"temperature": math.nan}, FINITE + "nan"),
    ({"temperature": 1.0, "top_k": 0}, TOP_K + "0"), ({"temperature": 1.0, "top_k": 257}, TOP_K + "257"),
    ({"temperature": 1.0, "top_p": 0.0}, TOP_P + "0.0"), ({"temperature": 1.0, "top_p": 1.5}, TOP_P + "1.5"),
    ({"greedy": True, "temperature": 0.8},
     "greedy=True takes the most likely byte every time and temperature 0.8 samples: give one of them"),
    ({"greedy": True, "top_k": 5}, r"top_k 5 narrows .* greedy \(greedy=True\)"),
    ({"temperature": 0, "top_p": 0.9}, r"top_p 0.9 narrows .* greedy \(temperature 0\)"),
]


def cli_words(settings):
    words = []
    for key, value in settings.items():
        flag = {"greedy": "--greedy", "temperature": "--temperature", "top_k": "--top-k",
                "top_p": "--top-p"}[key]
        words += [flag] if value is True else [flag, str(value)]
    return words


@pytest.mark.parametrize("settings, says", BAD, ids=[str(b[0]) for b in BAD])
def test_one_check_one_wording_on_every_path(settings, says, capsys):
    pairs, lm = minitf.load(S), minitf.load(L)
    messages = []
    for call in (lambda: generate(pairs, "abc", **settings),
                 lambda: generate_text(lm, "abc", 3, **settings),
                 lambda: check_sampling(**settings)):
        with pytest.raises(ValueError) as refused:
            call()
        messages.append(str(refused.value))
    if "greedy" not in settings:  # next_byte_probs has no greedy: temperature 0 says it
        with pytest.raises(ValueError) as refused:
            next_byte_probs(torch.zeros(2, 256), **settings)
        messages.append(str(refused.value))
    assert len(set(messages)) == 1 and re.match(says, messages[0]), messages
    expected = messages[0]
    for name, flag in FLAG_NAMES:
        expected = expected.replace(name, flag)
    for model in (S, L):  # the command line: the same sentence, naming the flags
        assert main(["generate", model, "abc", *cli_words(settings)]) == 2
        assert capsys.readouterr().err == f"minitf: error: {expected}\n"


def test_valid_settings_keep_their_meaning():  # next_byte_probs' own: test_sampling_view
    pairs = minitf.load(S)
    assert generate(pairs, "hello") == generate(pairs, "hello", greedy=True) == b"ifmmp"
    assert generate(pairs, "hello", temperature=0) == b"ifmmp"
    lm = minitf.load(L)
    greedy = generate_text(lm, "ROMEO:", 20, greedy=True)
    assert generate_text(lm, "ROMEO:", 20, temperature=0) == greedy
    assert generate_text(lm, "ROMEO:", 20, top_k=1, seed=0) == greedy  # top-1 sampling is greedy


# --- the program: help, version, pipes ----------------------------------------------------------------

def run(*argv, **kw):
    return subprocess.run([sys.executable, "-m", "minitf", *argv], capture_output=True, text=True, **kw)


@pytest.mark.slow
def test_alone_it_prints_its_help_with_the_status_of_a_usage_error():
    done = run()
    assert done.returncode == 2 and done.stderr == ""
    assert done.stdout.startswith("usage: python -m minitf") and "info" in done.stdout
    assert "exits with status 2" in done.stdout
    data = run("data")
    assert data.returncode == 2 and "check" in data.stdout and "make" in data.stdout


@pytest.mark.slow
def test_version_and_help_with_defaults(capsys):
    done = run("--version")
    assert done.returncode == 0 and done.stdout == f"minitf {minitf.__version__}\n"
    for argv, shown in ((["train", "--help"], ["pairs or windows per step (default: 64)",
                                                "(default: 2000)", "random seed: weights, data, "
                                                "batches (default: 0)"]),
                        (["generate", "--help"], ["(default: cpu)", "0 = greedy", "--temperature 0 (the same)"]),
                        (["data", "make", "--help"], ["(default: 12)", "10,000,000"])):
        assert main(argv) == 0
        text = " ".join(capsys.readouterr().out.split())
        for s in shown:
            assert s in text, (argv, s)


@pytest.mark.slow
def test_a_closed_pipe_ends_quietly(tmp_path):
    many = tmp_path / "bad.txt"
    many.write_text(open(SEED_VAL).read() * 200)  # 7,200 bad lines: more than a pipe buffers
    proc = subprocess.Popen([sys.executable, "-m", "minitf", "data", "check", str(many)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = proc.stdout.readline()  # like `| head -1`: read one line, then go away
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait() == 141 and err == ""  # 128 + SIGPIPE, what a shell reports for `yes | head`
    assert first.startswith(f"{many}:6: decodes to no TAB")


# --- data make: streamed, with progress, the same bytes as before ------------------------------------

def test_data_make_streams_the_same_pairs_and_shows_progress(tmp_path, capsys, monkeypatch):
    pairs = minitf.data.iter_pairs("shift", 450, 0)
    assert iter(pairs) is pairs  # an iterator, drawn while writing: no list of all the pairs
    assert list(pairs) == minitf.make_pairs("shift", 450, 0)
    out = tmp_path / "train.txt"
    assert main(["data", "make", "--task", "shift", "--n", "450", "--seed", "0", "--out", str(out)]) == 0
    assert out.read_bytes() == open("data/train.txt", "rb").read()  # byte for byte the shipped file
    capsys.readouterr()
    monkeypatch.setattr(cli.data_cmd, "PROGRESS_FROM", 100)
    assert main(["data", "make", "--n", "300", "--out", str(tmp_path / "p.txt")]) == 0
    assert "data make" in capsys.readouterr().err  # the progress bar
    assert main(["data", "make", "--n", "300", "--no-progress", "--out", str(tmp_path / "q.txt"),
                 "--force"]) == 0
    assert capsys.readouterr().err == ""
    assert (tmp_path / "p.txt").read_bytes() == (tmp_path / "q.txt").read_bytes()
