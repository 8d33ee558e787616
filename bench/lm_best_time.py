"""`--recipe lm-best --time 600`: what ten minutes of wall time reach on this CPU, with 2 threads and
with 1 (a stand-in for a slower CPU).

    python bench/lm_best_time.py                 # both runs, one after the other: ~21 min
    python bench/lm_best_time.py --threads 1     # one of them
    python bench/lm_best_time.py --quick         # --time 30, to /tmp: a smoke run

Each run is the whole command as a learner types it, in a fresh process, timed from before its
start to its end (wall time), with the load average before and after (the machine may be shared).
What it reached comes from the checkpoint the run saved: the steps trained in the budget, the
validation loss (tiled, nats per byte) at each --eval-every and at the end.
Writes minitf/experiments/stored/lm_best_time.json (or --out); tests/test_lm_best_time.py holds it and
what RECIPE.md says of it.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STORED = ROOT / "minitf" / "experiments" / "stored" / "lm_best_time.json"
BUDGET = 600


def command(budget: float, threads: int, out: Path) -> list[str]:
    return [sys.executable, "-m", "minitf", "train", "--recipe", "lm-best", "--time", f"{budget:g}",
            "--threads", str(threads), "--no-progress", "--out", str(out), "--force"]


def entry(checkpoint: Path, threads: int, budget: float, wall_s: float, load_before, load_after) -> dict:
    """One run's row, from the checkpoint it saved and the times measured around it."""
    sys.path.insert(0, str(ROOT))
    import minitf
    from minitf.core.muon import cpu_has_fast_bf16
    from minitf.doctor import cpu_name, instruction_set

    meta = minitf.load(checkpoint).metadata
    assert meta["time_budget"] == budget, (meta.get("time_budget"), budget)
    return {"threads": threads, "budget_s": budget, "wall_s": round(wall_s, 1),
            "train_seconds": meta["train_seconds"], "steps": meta["steps_trained"],
            "val_loss": round(meta["val"]["loss"], 4),
            "val_curve": [{"step": v["step"], "loss": round(v["loss"], 4)} for v in meta["val_curve"]],
            "cpu": cpu_name(), "instructions": instruction_set(),
            "muon_precision": "bfloat16" if cpu_has_fast_bf16() else "float32",
            "load_before": load_before, "load_after": load_after, "command": meta["command"]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, nargs="+", default=[2, 1])
    p.add_argument("--quick", action="store_true", help="--time 30, results to /tmp")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    budget = 30 if args.quick else BUDGET
    out = args.out or (Path("/tmp/minitf-bench-lm_best_time/lm_best_time.json") if args.quick else STORED)
    out.parent.mkdir(parents=True, exist_ok=True)
    stored = json.loads(out.read_text()) if out.exists() else {"runs": []}
    for threads in args.threads:
        checkpoint = Path(tempfile.gettempdir()) / "minitf-bench-lm_best_time" / f"time{budget:g}_t{threads}.pt"
        checkpoint.parent.mkdir(parents=True, exist_ok=True)
        load_before = [round(x, 2) for x in os.getloadavg()]
        start = time.perf_counter()
        proc = subprocess.run(command(budget, threads, checkpoint), cwd=ROOT)
        wall = time.perf_counter() - start
        if proc.returncode:
            return proc.returncode
        row = entry(checkpoint, threads, budget, wall, load_before, [round(x, 2) for x in os.getloadavg()])
        stored["runs"] = [r for r in stored["runs"] if r["threads"] != threads] + [row]
        stored["runs"].sort(key=lambda r: -r["threads"])
        out.write_text(json.dumps(stored, indent=1) + "\n")
        print(f"{threads} thread(s): {row['steps']} steps, val loss {row['val_loss']}, "
              f"{row['wall_s']} s of wall time (budget {budget} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
