"""What each of `--recipe lm-best`'s ingredients buys: each taken out in turn, 3 seeds, at equal wall time.

    python bench/lm_best_ablation.py --step-times              # 1. the CPU: each arm's seconds per step
    python bench/lm_best_ablation.py --device cuda --workers 15  # 2. the losses, 3 seeds, on a GPU
    python bench/lm_best_ablation.py --quick                   # a smoke run of both, to /tmp

The runs are small (a million parameters), so one process leaves most of a GPU idle, and processes
sharing a GPU take turns. Under CUDA MPS (`nvidia-cuda-mps-control -d` first, `echo quit |
nvidia-cuda-mps-control` after) they run side by side: the stored 15 runs took 111 s on an H100.

Three seeds of every arm on this 2-core CPU would be hours (one run is ten minutes), so the work is
split in two, each side by side in one run:
1. `--step-times`, on the CPU the recipe is for: every arm's command (`python -m minitf train --recipe
   lm-best` with the arm's flags, 2 threads, 60 steps) in turn, round by round, and its training
   seconds per step. An arm that makes a step cheaper (AdamW has no Newton–Schulz; short windows
   less attention) is given the steps it saves: steps = 1,600 × the recipe's seconds per step ÷ its
   own, so every arm has the recipe's ten minutes of this CPU.
2. The losses: the same command with those steps and `--device cuda`, every arm and seed at once
   (float32, TF32 off), each checkpoint scored by bench/lm_best.py's three evaluators (tiled windows
   over the whole last 10 %, nanoGPT's random windows, and the training split's first 111,539 bytes:
   the gap). A GPU's float32 differs from the CPU's in the last bits, so the recipe's own three
   seeds are run here too, and each arm is compared with them seed by seed; bench/lm_best.py holds
   the recipe's runs on the CPU itself.
The anchor, with `--nanogpt PATH` (a clone of karpathy/nanoGPT; bench/nanogpt.py prepares its data):
nanoGPT's own GPU run, its README's `python train.py config/train_shakespeare_char.py` (6 layers,
384 wide, 5,000 iterations of 64 windows of 256, its defaults: bfloat16, torch.compile), on the same
GPU in the same run, its kept checkpoint scored by the same evaluators.
Resumable (bench/store.py). Writes minitf/experiments/stored/lm_best_ablation.json and .md.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(ROOT))

from reporting import command_line, cpu_model, paired_deltas, signed_spread, spread, utc_now  # noqa: E402
from store import add_study_arguments, open_study  # noqa: E402

STEPS = 1600  # the recipe's
PROBE_STEPS = 60  # steps per timing probe (--step-times)

# each arm: the recipe with one ingredient taken out, as `train` flags
ARMS = {
    "lm-best": [],
    "− Muon (AdamW everywhere, lr 6e-3)": ["--optimizer", "adamw", "--lr", "6e-3"],
    "− QK-norm": ["--no-qk-norm"],
    "− pre-norm (post-norm)": ["--norm-position", "post"],
    "− WSD (cosine to 0.1·lr)": ["--schedule", "cosine"],
    "− embedding lr ×3 (×1)": ["--embed-lr", "1"],
    "− windows of 256 (64, batch 64: the same bytes a step)": ["--context", "64", "--batch-size", "64"],
    "− weight decay 0.1 and dropout 0.05 (0.01, 0)": ["--weight-decay", "0.01", "--dropout", "0"],
}


def command(flags: list[str], out: Path, steps: int, seed: int, device: str, threads: int,
            quick: bool) -> list[str]:
    return [sys.executable, "-m", "minitf", "train", "--recipe", "lm-best", *flags,
            "--steps", str(steps), "--seed", str(seed), "--device", device, "--threads", str(threads),
            *(["--eval-every", "1000"] if steps < 400 else []),
            *(["--warmup", "5"] if quick else []), "--no-progress", "--force", "--out", str(out)]


def step_seconds(flags: list[str], work: Path, steps: int) -> float:
    """Training seconds per step of the arm's command on this CPU (2 threads)."""
    import minitf
    out = work / "probe.pt"
    done = subprocess.run(command(flags, out, steps, 0, "cpu", 2, False), cwd=ROOT,
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{' '.join(done.args)} failed with exit {done.returncode}:\n{done.stderr[-3000:]}")
    meta = minitf.load(out).metadata
    return meta["train_seconds"] / meta["steps"]


def measure_step_times(doc: dict, arms: list[str], rounds: int, work: Path, steps: int) -> None:
    """One session of probes: the recipe and `arms`, round by round (the machine's load falls on
    every arm alike); a session is kept whole, and an arm's steps come from the session that timed
    it beside the recipe."""
    names = ["lm-best", *[a for a in arms if a != "lm-best"]]
    times = {name: [] for name in names}
    for r in range(rounds):
        for name in names:
            times[name].append(round(step_seconds(ARMS[name], work, steps), 4))
            print(f"round {r}: {name}: {times[name][-1]:.4f} s/step", flush=True)
    doc.setdefault("step_times", []).append(
        {"cpu": cpu_model(cores=True), "threads": 2, "probe_steps": steps, "rounds": rounds,
         "date": utc_now(),
         "seconds_per_step": times})


def timing(doc: dict, arm: str) -> dict:
    """The latest probe session that timed `arm` beside the recipe."""
    return next(t for t in reversed(doc["step_times"]) if arm in t["seconds_per_step"])


NANOGPT = "nanoGPT's train_shakespeare_char (its GPU run)"
NANOGPT_GPU = ["train.py", "config/train_shakespeare_char.py"]  # nanoGPT's README, word for word


# arms that do the recipe's arithmetic in another order or at other rates: their steps cost what
# the recipe's do, and their probes show only the probes' own noise (about ±5 % on this CPU)
SAME_WORK = {"lm-best", "− pre-norm (post-norm)", "− WSD (cosine to 0.1·lr)", "− embedding lr ×3 (×1)"}


def equal_time_steps(doc: dict) -> dict[str, int]:
    """Each arm's steps in the recipe's wall time: the recipe's 1,600 where the arm does the same
    work, else 1,600 × the recipe's fastest probe ÷ the arm's (its least disturbed)."""
    out = {}
    for name in ARMS:
        if name in SAME_WORK:
            out[name] = STEPS
        elif any(name in t["seconds_per_step"] for t in doc.get("step_times", [])):
            per = timing(doc, name)["seconds_per_step"]
            out[name] = round(STEPS * min(per["lm-best"]) / min(per[name]))
    return out


def run_nanogpt(job: dict) -> dict:
    """nanoGPT's GPU run in its clone, timed whole; its kept checkpoint scored like the arms."""
    import torch
    from lm_best import score_nanogpt_run
    clone, out_dir = Path(job["nanogpt"]), Path(job["work"]) / "nanogpt_gpu"
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, *NANOGPT_GPU, f"--out_dir={out_dir}"], cwd=clone,
                          capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if done.returncode:
        return {**job, "error": done.stderr[-2000:]}
    ckpt = torch.load(out_dir / "ckpt.pt", map_location="cpu", weights_only=False)
    losses = score_nanogpt_run(clone, out_dir / "ckpt.pt", job["device"])
    return {"arm": job["arm"], "seed": job["seed"], "device_wall_s": round(wall, 1),
            **{k: losses[k] for k in ("val_loss", "val_loss_random_windows", "train_loss")},
            "steps": int(ckpt["iter_num"]), "its_best_val_loss": round(float(ckpt["best_val_loss"]), 4),
            "val_curve": []}


def run_job(job: dict) -> dict:
    """One arm and seed: train (the whole command, timed), then score."""
    import torch
    if job["arm"] == NANOGPT:
        return run_nanogpt(job)
    slug = "".join(c if c.isalnum() else "_" for c in job["arm"]).strip("_")
    out = Path(job["work"]) / f"{slug}_seed{job['seed']}.pt"
    cmd = command(job["flags"], out, job["steps"], job["seed"], job["device"], 1, job["quick"])
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if done.returncode:
        return {**job, "error": done.stderr[-2000:]}
    torch.backends.cuda.matmul.allow_tf32 = False
    from lm_best import score
    scored = score(out, job["device"])
    return {"arm": job["arm"], "seed": job["seed"], "device_wall_s": round(wall, 1),
            **{k: scored[k] for k in ("val_loss", "val_loss_random_windows", "train_loss", "steps",
                                      "val_curve")}}


def report(doc: dict) -> str:
    sessions = "; ".join(f"{t['date']}: {', '.join(t['seconds_per_step'])} ({t['rounds']} rounds of "
                         f"{t['probe_steps']} steps)" for t in doc.get("step_times", []))
    cpu = doc["step_times"][0]["cpu"] if doc.get("step_times") else "?"
    L = ["# `--recipe lm-best`: what each ingredient buys", "",
         f"Steps at equal wall time: each arm's training seconds per step on {cpu} (2 threads), timed "
         f"beside the recipe's in turn, round by round ({sessions}). An arm that does the recipe's "
         "arithmetic (another norm position, schedule or rate) has its 1,600 steps; one that does less "
         "has 1,600 × the recipe's fastest probe ÷ its own. Losses: "
         f"`{doc.get('command', '?')}` on {doc.get('device', '?')}, last finished {doc.get('date', '?')}: "
         "every arm and seed the same command with `--device cuda`. Nats per byte on the last 10 % "
         "of tiny Shakespeare: tiled (every position of tiled 256-byte windows), random (nanoGPT's "
         "estimate_loss), train (the tiled evaluator on the first 111,539 bytes of the training "
         "split). Δ: the arm's tiled loss minus the recipe's with the same seed (same first weights "
         "and batches).", "",
         "| arm | CPU s/step, fastest probe (the recipe's beside it) | steps in the recipe's time | seeds | tiled, median (min–max) "
         "| Δ, paired by seed | random | train | gap |",
         "|---|---:|---:|---:|---|---|---:|---:|---:|"]
    runs = doc.get("runs", [])
    base = [r for r in runs if r["arm"] == "lm-best"]
    for name in ARMS:
        rs = [r for r in runs if r["arm"] == name]
        if not rs:
            continue
        v = [r["val_loss"] for r in rs]
        d = paired_deltas(rs, base)
        delta = "—" if name == "lm-best" or not d else signed_spread(d)
        gap = statistics.median(r["val_loss"] - r["train_loss"] for r in rs)
        probed = [t["seconds_per_step"] for t in doc.get("step_times", []) if name in t["seconds_per_step"]]
        per = (f"{min(probed[-1][name]):.3f} ({min(probed[-1]['lm-best']):.3f})"
               if probed and name != "lm-best" else "—")
        L.append(f"| {name} | {per} | "
                 f"{rs[0]['steps']:,} | {len(rs)} | "
                 f"{spread(v)} | {delta} | "
                 f"{statistics.median(r['val_loss_random_windows'] for r in rs):.4f} | "
                 f"{statistics.median(r['train_loss'] for r in rs):.4f} | {gap:.3f} |")
    for r in (r for r in runs if r["arm"] == NANOGPT):
        L += ["", f"The anchor, {NANOGPT}, on the same GPU in the same run (`python {' '.join(NANOGPT_GPU)}` "
              f"in its clone, {r['device_wall_s']:.0f} s wall, its checkpoint kept at iteration "
              f"{r['steps']:,}): tiled {r['val_loss']:.4f} at its context of 256, random "
              f"{r['val_loss_random_windows']:.4f}, train {r['train_loss']:.4f}, gap "
              f"{r['val_loss'] - r['train_loss']:.3f}; its own estimate (best_val_loss) "
              f"{r['its_best_val_loss']:.4f}."]
    return "\n".join(L)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_study_arguments(p, "lm_best_ablation", quick_help="a smoke run: 20-step probes and runs, to /tmp")
    p.add_argument("--step-times", action="store_true", help="measure each arm's CPU seconds per step")
    p.add_argument("--rounds", type=int, default=2, help="with --step-times: probes per arm")
    p.add_argument("--arms", nargs="*", default=None,
                   help=f"with --step-times: the arms to time beside the recipe (default: all); from {list(ARMS)}")
    p.add_argument("--device", default="cuda")
    p.add_argument("--workers", type=int, default=15, help="runs at a time")
    p.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2])
    p.add_argument("--work", type=Path, default=Path("/tmp/minitf-lm-best-ablation"))
    p.add_argument("--nanogpt", default=None, help="a clone of karpathy/nanoGPT: run its GPU "
                   "train_shakespeare_char beside the arms (default: $NANOGPT_DIR, else not run)")
    args = p.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    store = open_study("lm_best_ablation", args)
    doc = store.doc
    if args.step_times or args.quick:
        unknown = [a for a in args.arms or [] if a not in ARMS]
        if unknown:
            p.error(f"unknown arms {unknown}; choose from {list(ARMS)}")
        measure_step_times(doc, args.arms or list(ARMS), 1 if args.quick else args.rounds, args.work,
                           20 if args.quick else PROBE_STEPS)
        store.save(report(doc))
        if not args.quick:
            print(report(doc))
            return 0
    if "step_times" not in doc:
        p.error(f"no step times in {store.path}: run --step-times on the CPU first")
    from minitf.core.recipes import get as get_recipe
    device = "cpu" if args.quick else args.device
    steps = {n: 20 for n in ARMS} if args.quick else equal_time_steps(doc)
    missing = [n for n in ARMS if n not in steps]
    if missing:
        p.error(f"no step times for {missing}: run --step-times --arms … on the CPU first")
    recipe = get_recipe("lm-best").values
    doc.setdefault("runs", [])
    jobs = []
    for seed in (args.seeds[:1] if args.quick else args.seeds):
        for name, flags in ARMS.items():
            spec = {"recipe": recipe, "flags": flags, "steps": steps[name], "seed": seed}
            if store.find(doc["runs"], spec) is None:
                jobs.append((spec, {"arm": name, "flags": flags, "steps": steps[name], "seed": seed,
                                    "device": device, "quick": args.quick, "work": str(args.work)}))
    clone = args.nanogpt or os.environ.get("NANOGPT_DIR")
    if clone and not args.quick:
        from nanogpt import clone_commit, nanogpt_dir, prepare
        clone = nanogpt_dir(clone)
        prepare(clone)
        spec = {"nanogpt": NANOGPT_GPU, "commit": clone_commit(clone)}
        if store.find(doc["runs"], spec) is None:  # first: the longest run
            jobs.insert(0, (spec, {"arm": NANOGPT, "seed": 0, "nanogpt": str(clone), "device": device,
                                   "work": str(args.work)}))
    print(f"{len(jobs)} runs to do, {args.workers} at a time", flush=True)
    if jobs and device == "cuda":
        import torch
        if not torch.cuda.is_available():
            p.error(f"{len(jobs)} runs are not in {store.path} and this machine has no GPU: run on one "
                    "with --device cuda, or give --device cpu (hours)")
    with mp.get_context("spawn").Pool(max(1, min(args.workers, len(jobs)))) as pool:
        specs = {(j["arm"], j["seed"]): (spec, j) for spec, j in jobs}
        for record in pool.imap_unordered(run_job, [j for _, j in jobs]):  # saved as each ends
            spec, job = specs[record["arm"], record["seed"]]
            if "error" in record:
                print(f"{job['arm']} seed {job['seed']} failed:\n{record['error']}", flush=True)
                continue
            store.run(doc["runs"], spec, lambda: record,
                      replaces=lambda r: r["arm"] == job["arm"] and r["seed"] == job["seed"])
            print(f"{job['arm']} seed {job['seed']}: {record['val_loss']:.4f} tiled "
                  f"({record['device_wall_s']:.0f} s)", flush=True)
    if jobs and not args.quick:
        import torch
        doc["device"] = (f"one {torch.cuda.get_device_name()}, torch {torch.__version__}"
                         if device == "cuda" else device)
    if jobs:
        doc["date"] = utc_now()
        doc["command"] = command_line("lm_best_ablation.py", argv)
    store.save(report(doc))
    print(report(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
