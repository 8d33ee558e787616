"""`--recipe lm-fast` beside nanoGPT's own CPU quick-start, each run as its users run it.

    python bench/nanogpt.py --nanogpt PATH          # PATH: a clone of github.com/karpathy/nanoGPT
    NANOGPT_DIR=PATH python bench/nanogpt.py --rounds 3

bench/lm_fast.py compares lm-fast with bench/nanogpt_reference.py, nanoGPT's configuration written
out here and trained in the same process. This bench asks what a learner sees instead: nanoGPT's
README command for a CPU, in its own clone, its own default threads, against the whole command
`python -m minitf train --recipe lm-fast` (its default: one thread), each a fresh process, in turn
(lm-fast, nanoGPT, lm-fast, nanoGPT, ...) so that the machine's load falls on both alike. Time is
the whole command, start to saved checkpoint, wall and CPU (user + system of the process and its
children). Both checkpoints are then scored by one evaluator, bench/lm.py's: nats per byte on the
whole last 10 % of tiny Shakespeare, tiled windows of 64 bytes (nanoGPT's characters are bytes in
this ASCII text; its checkpoint is the one its run kept, the best of its own evaluations).

nanoGPT's code is never copied into this repository: point at a clone. Its data preparation would
download the text; this bench writes data/text/tinyshakespeare.txt (the same file) into the clone's
data/shakespeare_char/input.txt first, then runs its prepare.py. Writes
minitf/experiments/stored/nanogpt_quickstart.json and .md, with the CPU model and load average.
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import pickle
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))

import minitf  # noqa: E402
from lm import TEXT, val_loss  # noqa: E402
from reporting import cpu_model, spread, utc_now  # noqa: E402

STORED = ROOT / "minitf" / "experiments" / "stored"
# nanoGPT's README, "I only have a macbook" (its CPU quick-start), word for word
NANOGPT_ARGS = ["train.py", "config/train_shakespeare_char.py", "--device=cpu", "--compile=False",
                "--eval_iters=20", "--log_interval=1", "--block_size=64", "--batch_size=12",
                "--n_layer=4", "--n_head=4", "--n_embd=128", "--max_iters=2000",
                "--lr_decay_iters=2000", "--dropout=0.0"]
LM_FAST = ["-m", "minitf", "train", "--recipe", "lm-fast"]


def nanogpt_dir(given: str | None) -> Path:
    """The clone to run: --nanogpt, else $NANOGPT_DIR; a clear error when neither is a clone."""
    path = given or os.environ.get("NANOGPT_DIR")
    if not path:
        raise SystemExit("bench/nanogpt.py: give --nanogpt PATH or NANOGPT_DIR=PATH, a clone of "
                         "https://github.com/karpathy/nanoGPT (git clone it anywhere outside this repo)")
    path = Path(path).expanduser().resolve()
    for need in ("train.py", "model.py", "config/train_shakespeare_char.py",
                 "data/shakespeare_char/prepare.py"):
        if not (path / need).exists():
            raise SystemExit(f"{path}: not a nanoGPT clone, {need} is missing (--nanogpt / NANOGPT_DIR)")
    return path


def clone_commit(clone: Path) -> str:
    """The clone's commit (8 hex digits): part of a nanoGPT run's spec and report."""
    # safe.directory: a clone copied to another machine belongs to another user there
    return subprocess.run(["git", "-c", f"safe.directory={Path(clone).resolve()}", "rev-parse", "--short=8",
                           "HEAD"], cwd=clone, capture_output=True, text=True).stdout.strip() or "?"


def prepare(clone: Path) -> None:
    """nanoGPT's data step, fed the repository's copy of the text instead of a download."""
    data = clone / "data" / "shakespeare_char"
    if (data / "input.txt").exists() and (data / "input.txt").read_bytes() != TEXT.read_bytes():
        raise SystemExit(f"{data / 'input.txt'}: differs from {TEXT}; move it away and run again")
    shutil.copyfile(TEXT, data / "input.txt")
    subprocess.run([sys.executable, "prepare.py"], cwd=data, check=True, stdout=subprocess.DEVNULL)


def timed(cmd: list[str], cwd: Path, log: Path, env: dict | None = None) -> dict:
    """Run one command to the end: its wall time and the CPU time of it and its children."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    with log.open("w") as out:
        done = subprocess.run(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                              env={**os.environ, **(env or {})})
    if done.returncode:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-5:])
        raise SystemExit(f"`{' '.join(cmd)}` (in {cwd}) failed with exit {done.returncode}; "
                         f"the end of {log}:\n{tail}")
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "loadavg": round(load, 2)}


class LogitsOnly(torch.nn.Module):
    """nanoGPT's GPT returns every position's logits only when given targets: ids → (B, T, V)."""

    def __init__(self, gpt):
        super().__init__()
        self.gpt = gpt

    def forward(self, ids):
        return self.gpt(ids, torch.zeros_like(ids))[0]


def load_nanogpt(clone: Path, ckpt_path: Path):
    """Its checkpoint as an ids → logits model, and the text's two parts (the last 10 % and the rest)
    as its ids: characters mapped through its meta.pkl, windows of its own context."""
    spec = importlib.util.spec_from_file_location("nanogpt_model", clone / "model.py")
    model_py = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(model_py)
    ckpt = torch.load(ckpt_path, map_location="cpu", weights_only=False)
    gpt = model_py.GPT(model_py.GPTConfig(**ckpt["model_args"]))
    gpt.load_state_dict({k.removeprefix("_orig_mod."): v for k, v in ckpt["model"].items()})
    stoi = pickle.loads((clone / "data" / "shakespeare_char" / "meta.pkl").read_bytes())["stoi"]
    text = minitf.read_text(TEXT, ckpt["model_args"]["block_size"])
    table = torch.full((256,), -1, dtype=torch.long)
    for ch, i in stoi.items():
        table[ord(ch)] = i
    parts = []
    for part, where in ((text.val, "the last 10 %"), (text.train, "the first 90 %")):
        ids = table[part.data.long()]
        if (ids < 0).any():
            raise SystemExit(f"{TEXT}: a byte of {where} is not in nanoGPT's vocabulary")
        parts.append(dataclasses.replace(part, data=ids))
    return LogitsOnly(gpt), parts[0], parts[1]


def score_nanogpt(clone: Path, ckpt_path: Path) -> float:
    """Its checkpoint on the last 10 %, with bench/lm.py's evaluator, characters mapped to its ids."""
    model, val, _ = load_nanogpt(clone, ckpt_path)
    return val_loss(model, val)


def score_minitf(ckpt_path: Path) -> float:
    """lm-fast's checkpoint on the same last 10 %, with the same evaluator."""
    model = minitf.load(ckpt_path)
    return val_loss(model, minitf.read_text(TEXT, model.config.max_len).val)


def run_round(clone: Path, work: Path, i: int, threads: int | None = None) -> dict:
    out = work / f"lm_fast_{i}.pt"
    fast = timed([sys.executable, *LM_FAST, "--out", str(out)], ROOT, work / f"lm_fast_{i}.log")
    fast["val_loss"] = round(score_minitf(out), 4)
    out_dir = work / f"nanogpt_{i}"
    nano = timed([sys.executable, *NANOGPT_ARGS, f"--out_dir={out_dir}"], clone, work / f"nanogpt_{i}.log",
                 env={"OMP_NUM_THREADS": str(threads)} if threads else None)
    nano["val_loss"] = round(score_nanogpt(clone, out_dir / "ckpt.pt"), 4)
    return {"lm_fast": fast, "nanogpt": nano}


def threads(result: dict) -> str:
    n = result["nanogpt_threads"]
    if result["nanogpt_threads_given"]:
        return f"OMP_NUM_THREADS={n}, not its default of one thread per core"
    return f"its default threads: {n}"


def report(result: dict) -> str:
    rounds = result["rounds"]

    def med(who, key):
        return statistics.median(r[who][key] for r in rounds)

    def span(values):
        return spread(values, 3, "×")

    wall = [r["lm_fast"]["wall_s"] / r["nanogpt"]["wall_s"] for r in rounds]
    cpu = [r["lm_fast"]["cpu_s"] / r["nanogpt"]["cpu_s"] for r in rounds]
    loads = [r[w]["loadavg"] for r in rounds for w in ("lm_fast", "nanogpt")]
    L = ["# `--recipe lm-fast` beside nanoGPT's CPU quick-start, each as its users run it", "",
         f"Run by `python bench/nanogpt.py --rounds {len(rounds)}` on {result['date']}, CPU: "
         f"{result['cpu']}; load average {min(loads):.1f}–{max(loads):.1f} as the runs started. nanoGPT "
         f"{result['nanogpt_commit'] or '(commit unknown)'}: `python {' '.join(NANOGPT_ARGS)}` "
         f"({threads(result)}, torch {result['torch']}); lm-fast: `python "
         f"{' '.join(LM_FAST)}` (one thread). Each a fresh process, whole command to saved checkpoint, "
         "in turn round by round. Loss: nats per byte on the whole last 10 % of tiny Shakespeare, "
         "tiled windows of 64 bytes, bench/lm.py's evaluator for both. Medians (min–max).", "",
         "| | wall s | CPU s (user + system) | val loss |", "|---|---:|---:|---|"]
    for who, name in (("lm_fast", "`--recipe lm-fast`"), ("nanogpt", "nanoGPT quick-start")):
        losses = [r[who]["val_loss"] for r in rounds]
        L.append(f"| {name} | {med(who, 'wall_s'):.1f} | {med(who, 'cpu_s'):.1f} | "
                 f"{spread(losses)} |")
    L += ["", f"lm-fast's time ÷ nanoGPT's, round by round: CPU {span(cpu)}, wall {span(wall)}. "
          "On a busy machine the CPU ratio is the steadier figure: wall time is what the other jobs leave.",
          ""]
    return "\n".join(L)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--nanogpt", help="a clone of karpathy/nanoGPT (default: $NANOGPT_DIR)")
    p.add_argument("--rounds", type=int, default=3, help="pairs of runs, lm-fast then nanoGPT")
    p.add_argument("--nanogpt-threads", type=int, default=None,
                   help="OMP_NUM_THREADS for nanoGPT (default: torch's own, one per core). On a "
                        "machine other jobs keep busy, torch's threads wait on each other: give 1")
    p.add_argument("--out", type=Path, default=STORED)
    p.add_argument("--name", default="nanogpt_quickstart", help="the stored files' name (NAME.json, NAME.md)")
    p.add_argument("--report-only", action="store_true", help="re-write the .md from the stored .json")
    args = p.parse_args(argv)
    path, md = args.out / f"{args.name}.json", args.out / f"{args.name}.md"
    if args.report_only:
        md.write_text(report(json.loads(path.read_text())))
        return 0
    clone = nanogpt_dir(args.nanogpt)
    prepare(clone)
    commit = clone_commit(clone)
    result = {"cpu": cpu_model(cores=True), "torch": torch.__version__,
              "nanogpt_threads": args.nanogpt_threads or torch.get_num_threads(),
              "nanogpt_threads_given": args.nanogpt_threads is not None,
              "nanogpt_commit": commit, "rounds": []}
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="minitf-nanogpt-") as tmp:
        for i in range(args.rounds):  # each round stored as it ends: a long bench cut short keeps them
            r = run_round(clone, Path(tmp), i, args.nanogpt_threads)
            result["rounds"].append(r)
            print(f"round {i}: lm-fast {r['lm_fast']}, nanoGPT {r['nanogpt']}", flush=True)
            result["date"] = utc_now()
            path.write_text(json.dumps(result, indent=1) + "\n")
            md.write_text(report(result))
    print(report(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
