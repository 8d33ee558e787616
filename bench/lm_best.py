"""`--recipe lm-best`: the whole command, timed from a cold start, seed by seed, and what its settings buy.

    python bench/lm_best.py                      # 3 seeds of the recipe (about 10 min each on 2 cores)
    python bench/lm_best.py --arms "5 minutes"   # also the arms named (ARMS), 3 seeds each
    python bench/lm_best.py --quick              # a smoke run: 30 steps each, to /tmp
    NANOGPT_DIR=PATH python bench/lm_best.py --arms "nanoGPT quick-start"   # the anchor, in turn

Each run is `python -m minitf train --recipe lm-best …` in a fresh process, as a learner types it:
its wall time counts everything (imports, reading the text, training on 2 threads, the evaluations
every 400 steps, saving). Each checkpoint is then scored, outside the timed command, three ways:
- the evaluator of bench/lm.py (and of `python -m minitf eval --text`): every position of tiled
  windows of the model's context (256 bytes) over the whole last 10 % of tiny Shakespeare;
- nanoGPT's way (its `estimate_loss`): the mean loss over every position of random 256-byte windows
  of the last 10 % (800 windows, seed 0);
- the same tiled evaluator on the first 111,539 bytes of the training split: the train/validation gap.
The anchor, "nanoGPT quick-start": nanoGPT's README command for a CPU (bench/nanogpt.py's, 4 layers
128 wide, context 64, 2,000 iterations) run in its own clone (NANOGPT_DIR or --nanogpt) with 2 threads,
its kept checkpoint scored by the same three evaluators at its own context (64). nanoGPT seeds every
run alike (1337), so its "seeds" are repeats: the same loss, the time's spread.
Resumable (bench/store.py): a finished run is kept unless its spec changed. The machine's load
average before and after each run is stored beside it. Writes minitf/experiments/stored/lm_best.json
and lm_best.md.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))

import minitf  # noqa: E402
from minitf.core.recipes import get as get_recipe  # noqa: E402
from minitf.core.text import TextPart  # noqa: E402
from lm import TEXT, val_loss  # noqa: E402
from nanogpt import NANOGPT_ARGS, clone_commit, load_nanogpt, nanogpt_dir, prepare, timed  # noqa: E402
from reporting import command_line, cpu_model, paired_deltas, signed_spread, utc_now  # noqa: E402
from store import add_study_arguments, open_study  # noqa: E402

TARGET = 1.47  # nats per byte: nanoGPT's train_shakespeare_char on one A100 (its README: 1.4697)
LIMIT_S = 600  # ten minutes of wall time, the whole command

# Arms: the recipe with some of its settings changed, as `train` flags. Those that keep a step's
# cost (weight decay, dropout) are compared at equal steps, hence at about equal wall time.
ARMS = {
    "lm-best": [],
    "5 minutes (800 steps)": ["--steps", "800"],
    "− weight decay 0.1 (0.01)": ["--weight-decay", "0.01"],
    "− dropout 0.05 (0)": ["--dropout", "0"],
    "− both (weight decay 0.01, dropout 0)": ["--weight-decay", "0.01", "--dropout", "0"],
}
NANOGPT = "nanoGPT quick-start"  # the anchor: not a minitf command (run_nanogpt)


@torch.no_grad()
def random_window_loss(model, part: TextPart, windows: int = 800, seed: int = 0,
                       batch_size: int = 64) -> float:
    """nanoGPT's estimate: mean loss over every position of random windows of the model's context."""
    g = torch.Generator().manual_seed(seed)
    model.eval()
    total, count = 0.0, 0
    for start in range(0, windows, batch_size):
        ids, targets = minitf.core.text.random_windows(part, min(batch_size, windows - start), g)
        logits = model(ids)
        total += F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum").item()
        count += targets.numel()
    return total / count


def on_device(model, device: str):
    """An ids → logits model run on `device`, fed and read on the CPU (the evaluators' tensors)."""
    if device == "cpu":
        return model

    class OnDevice(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model.to(device)

        def forward(self, ids):
            return self.model(ids.to(device)).float().cpu()

    return OnDevice()


def three_losses(model, val: TextPart, train: TextPart) -> dict:
    """Tiled and random-window loss on the last 10 %, and the tiled loss on as many bytes of the
    training split (the gap): nats per byte, at the model's own context."""
    head = TextPart(train.path, "train", train.data[:len(val.data)], train.context)
    return {"val_loss": round(val_loss(model, val), 4),
            "val_loss_random_windows": round(random_window_loss(model, val), 4),
            "train_loss": round(val_loss(model, head), 4)}


def score(path: Path, device: str = "cpu") -> dict:
    """The three losses of a checkpoint (computed on `device`), and what its run recorded."""
    torch.set_num_threads(2)
    model = minitf.load(path)
    meta = model.metadata
    text = minitf.read_text(TEXT, model.config.max_len)
    return {**three_losses(on_device(model, device), text.val, text.train),
            "train_seconds": meta["train_seconds"], "steps": meta["steps"],
            "val_curve": [{"step": v["step"], "loss": round(v["loss"], 4)} for v in meta["val_curve"]],
            "params": minitf.count_parameters(model)}


def score_nanogpt_run(clone: Path, ckpt: Path, device: str = "cpu") -> dict:
    """The three losses of a nanoGPT checkpoint (at its own context), computed on `device`."""
    torch.set_num_threads(2)
    model, val, train = load_nanogpt(clone, ckpt)
    return {**three_losses(on_device(model, device), val, train),
            "params": sum(p.numel() for p in model.parameters()), "context": val.context}


def run_one(name: str, flags: list[str], seed: int, work: Path, quick: bool) -> dict:
    slug = "".join(c if c.isalnum() else "_" for c in name).strip("_")
    out = work / f"{slug}_seed{seed}.pt"
    cmd = [sys.executable, "-m", "minitf", "train", "--recipe", "lm-best", "--seed", str(seed),
           *flags, *(["--steps", "30", "--eval-every", "10"] if quick else []),
           "--no-progress", "--force", "--out", str(out)]
    when = utc_now()
    record = timed(cmd, ROOT, work / (out.stem + ".log"))
    record |= {"loadavg_after": round(os.getloadavg()[0], 2), "date": when, "seed": seed}
    return record | score(out)


def run_nanogpt(seed: int, work: Path, clone: Path) -> dict:
    """nanoGPT's CPU quick-start in its clone, 2 threads, timed whole; its kept checkpoint scored."""
    out_dir = work / f"nanogpt_{seed}"
    when = utc_now()
    record = timed([sys.executable, *NANOGPT_ARGS, f"--out_dir={out_dir}"], clone,
                   work / f"nanogpt_{seed}.log", env={"OMP_NUM_THREADS": "2"})
    record |= {"loadavg_after": round(os.getloadavg()[0], 2), "date": when, "seed": seed}
    return record | score_nanogpt_run(clone, out_dir / "ckpt.pt") | {
        "steps": 2000, "val_curve": [], "train_seconds": None}


def med(runs, key):
    return statistics.median(r[key] for r in runs)


def report(doc: dict) -> str:
    L = ["# `--recipe lm-best`: nanoGPT's GPU mark on two CPU cores", "",
         f"Run by `{doc.get('command', 'python bench/lm_best.py')}` on {doc.get('cpu', '?')}, finished "
         f"{doc.get('date', '?')}. Each run is the whole command `python -m minitf train --recipe lm-best` "
         "(2 threads) in a fresh process; wall time counts everything from start to saved checkpoint. "
         "Losses in nats per byte on the last 10 % of tiny Shakespeare: tiled = every position of "
         "tiled 256-byte windows (bench/lm.py's evaluator); random = nanoGPT's estimate_loss (every "
         "position of 800 random 256-byte windows); train = the tiled evaluator on the first 111,539 "
         "bytes of the training split. Load average: the 1-minute figure before and after each run. "
         f"{NANOGPT}: nanoGPT's own CPU command in its clone (2 threads), scored at its context, 64 "
         "bytes.", "",
         f"| arm | seed | wall s | CPU s | load before → after | tiled | random | train | gap | ≤ {TARGET} |",
         "|---|---:|---:|---:|---|---:|---:|---:|---:|---|"]
    for name, entry in doc.get("arms", {}).items():
        for r in sorted(entry["runs"], key=lambda r: r["seed"]):
            L.append(f"| {name} | {r['seed']} | {r['wall_s']:.0f} | {r['cpu_s']:.0f} | {r['loadavg']} → "
                     f"{r['loadavg_after']} | {r['val_loss']:.4f} | {r['val_loss_random_windows']:.4f} | "
                     f"{r['train_loss']:.4f} | {r['val_loss'] - r['train_loss']:.3f} | "
                     f"{'yes' if r['val_loss'] <= TARGET else 'no'} |")
    L += ["", "Medians over seeds:", "", "| arm | seeds | wall s | tiled | random | Δ tiled vs lm-best, paired by seed |",
          "|---|---|---:|---:|---:|---|"]
    base = doc.get("arms", {}).get("lm-best", {}).get("runs", [])
    for name, entry in doc.get("arms", {}).items():
        runs = entry["runs"]
        d = paired_deltas(runs, base)
        delta = signed_spread(d) if d and name not in ("lm-best", NANOGPT) else "—"
        L.append(f"| {name} | {len(runs)} | {med(runs, 'wall_s'):.0f} | {med(runs, 'val_loss'):.4f} | "
                 f"{med(runs, 'val_loss_random_windows'):.4f} | {delta} |")
    L += ["", "Validation during training (tiled, every 400 steps; the steps are alike, so step s came "
          "after about s/steps of the run's training seconds):", ""]
    for name, entry in doc.get("arms", {}).items():
        for r in sorted(entry["runs"], key=lambda r: r["seed"]):
            if not r["val_curve"]:
                continue
            per = r["train_seconds"] / r["steps"]
            L.append(f"- {name}, seed {r['seed']}: " + ", ".join(
                f"step {v['step']} ({v['step'] * per:.0f} s): {v['loss']:.4f}" for v in r["val_curve"]))
    return "\n".join(L)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_study_arguments(p, "lm_best", quick_help="a smoke run: 30 steps each, to /tmp")
    p.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2])
    p.add_argument("--arms", nargs="*", default=["lm-best"], help=f"from: {', '.join([*ARMS, NANOGPT])}")
    p.add_argument("--nanogpt", default=None, help=f"with the arm {NANOGPT!r}: a clone of "
                   "karpathy/nanoGPT (default: $NANOGPT_DIR)")
    p.add_argument("--work", type=Path, default=Path("/tmp/minitf-lm-best"),
                   help="where the checkpoints and logs go")
    args = p.parse_args(argv)
    unknown = [a for a in args.arms if a not in ARMS and a != NANOGPT]
    if unknown:
        p.error(f"unknown arms {unknown}; choose from {[*ARMS, NANOGPT]}")
    clone = nanogpt_dir(args.nanogpt) if NANOGPT in args.arms else None
    if clone is not None:
        prepare(clone)
    args.work.mkdir(parents=True, exist_ok=True)
    store = open_study("lm_best", args)
    doc = store.doc
    doc.setdefault("arms", {})
    recipe = get_recipe("lm-best").values
    for seed in args.seeds:  # round by round, so the machine's load falls on every arm alike
        for name in args.arms:
            if name == NANOGPT:
                flags = NANOGPT_ARGS
                spec = {"nanogpt": NANOGPT_ARGS, "commit": clone_commit(clone), "seed": seed}
                compute = lambda: run_nanogpt(seed, args.work, clone)  # noqa: E731
            else:
                flags = ARMS[name]
                spec = {"recipe": recipe, "flags": flags, "seed": seed, "quick": args.quick}
                compute = lambda: run_one(name, flags, seed, args.work, args.quick)  # noqa: E731
            entry = doc["arms"].setdefault(name, {"flags": flags, "runs": []})
            entry["flags"] = flags
            r, new = store.run(entry["runs"], spec, compute, replaces=lambda old: old["seed"] == seed)
            if new:
                print(f"{name} seed {seed}: {r['val_loss']:.4f} tiled, {r['val_loss_random_windows']:.4f} "
                      f"random windows, train {r['train_loss']:.4f}; {r['wall_s']:.0f} s wall, load "
                      f"{r['loadavg']} → {r['loadavg_after']}", flush=True)
    doc["date"] = utc_now()
    doc["cpu"] = cpu_model(cores=True)
    doc["target"], doc["limit_s"] = TARGET, LIMIT_S
    doc["command"] = command_line("lm_best.py", argv)
    store.save(report(doc))
    print(report(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
