"""The fastest recipe: `python -m minitf train --recipe shift-fast` beside the README's shift recipe,
whole commands timed from start to saved checkpoint, then each checkpoint checked on fresh pairs.

    python bench/fast_recipe.py           # 3 runs of each, interleaved: minitf/experiments/stored/fast_recipe.json, .md
    python bench/fast_recipe.py --quick   # a smoke run: one of each, the README's cut to 200 steps, to /tmp

Each run is a separate `python -m minitf train …` process (interpreter start, import, data, training,
evaluations, saving: what a learner waits for). The fast recipe stops itself at its first
evaluation with >= 99.8 % exact match on the CLI's 1,000 fresh held-out pairs (`--target-exact`), so
that figure was selected on its own test; the checkpoint is therefore checked again here on pairs
nobody trained or stopped on: other seeds, none of whose inputs the run trained or validated on,
uniform random text and text with repeated bytes (`--repeats 0.33`).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import minitf  # noqa: E402
from minitf import cli  # noqa: E402
from minitf.core.data import make_pairs  # noqa: E402
from reporting import loadavg, utc_now  # noqa: E402
from run import fmt, read_recipe, stats  # noqa: E402  (bench/run.py's own helpers)

FAST = "python -m minitf train --recipe shift-fast"
GOAL_S = 15.0
TARGET = 0.998
CONFIRM_SEED = 7000  # + 10·run: the confirmation sets (the CLI's own use seed+1000 and seed+2000)


def readme_recipe() -> str:
    """The shift recipe of docs/recipes.md (the README's command), as bench/run.py's solve section reads
    it, without its --out (each run adds its own)."""
    return shlex.join(without_out(shlex.split(read_recipe()[0])))


def without_out(words: list[str]) -> list[str]:
    if "--out" in words:
        i = words.index("--out")
        return words[:i] + words[i + 2:]
    return words


def run_command(command: str, out: Path) -> dict:
    """Run a `python -m minitf train …` command as its own process; wall time from its start to its
    exit (the checkpoint is saved just before), CPU time (user + system) from the kernel."""
    words = shlex.split(command)
    argv = [sys.executable, *words[1:], "--out", str(out), "--force", "--no-progress"]
    load0 = loadavg()
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as log:
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        log.seek(0)
        output = log.read()
    return {"exit_code": os.waitstatus_to_exitcode(status), "wall_seconds": wall,
            "cpu_seconds": usage.ru_utime + usage.ru_stime, "loadavg_before": load0,
            "loadavg_after": loadavg(), "output_tail": output.strip().splitlines()[-4:]}


def confirm(path: Path, n: int, seed: int) -> dict:
    """The checkpoint on fresh pairs of its task: none of their inputs was trained or validated on."""
    model = minitf.load(path)
    meta = model.metadata
    args = cli.parser().parse_args(shlex.split(meta["command"])[3:])
    train_pairs, val_pairs = cli.train_val_pairs(args)  # the run's own data, made again
    seen = [p.input for p in train_pairs + val_pairs]
    uniform = make_pairs(args.task, n, seed, max_len=args.pair_len, exclude=seen)
    repeats = make_pairs(args.task, n, seed + 1, max_len=args.pair_len, repeats=0.33,
                         exclude=seen + [p.input for p in uniform])
    out = {"parameters": minitf.count_parameters(model), "command": meta["command"],
           "steps_trained": meta.get("steps_trained", meta["steps"]), "train_seconds": meta["train_seconds"],
           "cli_val_exact": meta["val"]["exact_match"], "cli_val_pairs": len(val_pairs),
           "weights_sha256": hashlib.sha256(b"".join(
               t.numpy().tobytes() for t in model.state_dict().values())).hexdigest()[:16]}
    for name, pairs in (("uniform", uniform), ("repeats", repeats)):
        metrics = minitf.evaluate(model, pairs)
        out[name] = {"pairs": len(pairs), "seed": seed if name == "uniform" else seed + 1,
                     "exact_match": metrics["exact_match"],
                     "errors": round(len(pairs) * (1 - metrics["exact_match"]))}
    return out


def render(res: dict) -> str:
    names = list(res["commands"])
    runs = {k: [r for r in res["runs"] if r["name"] == k and r["exit_code"] == 0] for k in names}
    head = {"fast": "`--recipe shift-fast`", "readme": "the README's (RECIPE.md's) shift recipe"}
    def row(title, f):
        return f"| {title} | " + " | ".join(f(runs[k]) if runs[k] else "—" for k in names) + " |"
    def total(g, key):
        sets = [r["confirm"][key] for r in g]
        return f"{sum(c['pairs'] - c['errors'] for c in sets):,} / {sum(c['pairs'] for c in sets):,}"
    L = [f"# The fastest recipe{' (quick smoke run)' if res['quick'] else ''}", "",
         f"`python bench/fast_recipe.py{' --quick' if res['quick'] else ''}`, {res['date']}, "
         f"load average {res['loadavg_start']} → {res['loadavg_end']} (2-core machine shared with other "
         f"jobs). {res['repeats']} run(s) of each command, interleaved (the first command alternates); "
         "every run a fresh process.", "",
         "| | " + " | ".join(head[k] for k in names) + " |", "|---|" + "---|" * len(names),
         row("command (`--out` added)", lambda g: f"`{res['commands'][g[0]['name']]}`"),
         row("as recorded in the checkpoint (`--out` left out)",
             lambda g: f"`{shlex.join(without_out(shlex.split(g[0]['confirm']['command'])))}`"),
         row("parameters", lambda g: f"{g[0]['confirm']['parameters']:,}"),
         row("steps trained", lambda g: ", ".join(str(r["confirm"]["steps_trained"]) for r in g)),
         row("**wall time, command start → checkpoint saved (s)**", lambda g: fmt(stats([r["wall_seconds"] for r in g]))),
         row("CPU time of the process, user + system (s)", lambda g: fmt(stats([r["cpu_seconds"] for r in g]))),
         row("of which training, as the CLI reports it (s, with evaluations)",
             lambda g: fmt(stats([r["confirm"]["train_seconds"] for r in g]))),
         row("exact match on the CLI's 1,000 held-out pairs (where it stopped)",
             lambda g: ", ".join(f"{r['confirm']['cli_val_exact']:.3f}" for r in g)),
         row("**confirmation**: fresh uniform pairs, exact", lambda g: total(g, "uniform")),
         row("**confirmation**: fresh pairs with repeated bytes, exact", lambda g: total(g, "repeats")),
         row("same weights in every run", lambda g: "yes" if len({r["confirm"]["weights_sha256"] for r in g}) == 1 else "no"),
         row("load average (1 min) before each run", lambda g: ", ".join(f"{r['loadavg_before'][0]:.1f}" for r in g)),
         ""]
    pairs = [(a["wall_seconds"], b["wall_seconds"]) for a, b in zip(runs.get("readme", []), runs.get("fast", []))]
    if pairs:
        L += [f"The README's recipe ÷ the fast one, run by run (wall): "
              f"{fmt(stats([a / b for a, b in pairs]), 1)}×.", ""]
    L += [f"Confirmation sets: {res['confirm_pairs']:,} pairs each, made with `make_pairs` (seeds "
          f"{CONFIRM_SEED} + 10·run, and + 1 for repeats), none of whose inputs is in the run's training "
          "or held-out pairs (made again from the recorded command); scored by `minitf.evaluate` "
          "(greedy generation up to EOS).", ""]
    fast = runs.get("fast", [])
    if fast and not res["quick"]:
        wall = stats([r["wall_seconds"] for r in fast])
        worst = min(r["confirm"][k]["exact_match"] for k in ("uniform", "repeats") for r in fast)
        L += [f"Goal: fast recipe ≤ {GOAL_S:.0f} s from start to checkpoint (median): "
              f"**{'met' if wall['median'] <= GOAL_S else 'missed'}** ({fmt(wall)} s); every confirmation "
              f"set ≥ {TARGET:.1%} exact: **{'met' if worst >= TARGET else 'missed'}** (worst {worst:.2%}).", ""]
    return "\n".join(L) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="one run of each, the README's cut to 200 steps, to /tmp")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--confirm-pairs", type=int, default=1000)
    p.add_argument("--out", type=Path, default=None, help="results directory (default minitf/experiments/stored; --quick: /tmp)")
    p.add_argument("--render-only", action="store_true", help="rewrite the .md from the stored .json")
    args = p.parse_args(argv)
    import torch
    torch.set_num_threads(1)  # the confirmations: one thread, like the runs (two crawl on a busy machine)
    out_dir = args.out or (Path(tempfile.gettempdir()) / "minitf-bench-quick" if args.quick else ROOT / "minitf" / "experiments" / "stored")
    out_dir.mkdir(parents=True, exist_ok=True)
    if args.render_only:
        (out_dir / "fast_recipe.md").write_text(render(json.loads((out_dir / "fast_recipe.json").read_text())))
        return 0
    readme = readme_recipe() + (" --steps 200 --eval-every 100" if args.quick else "")
    commands = {"fast": FAST, "readme": readme}
    repeats = 1 if args.quick else args.repeats
    res = {"date": utc_now(), "quick": args.quick, "loadavg_start": loadavg(), "commands": commands,
           "repeats": repeats, "confirm_pairs": args.confirm_pairs // (5 if args.quick else 1), "runs": []}
    with tempfile.TemporaryDirectory(prefix="minitf-fast-") as tmp:
        for r in range(repeats):
            for name in (["fast", "readme"] if r % 2 == 0 else ["readme", "fast"]):
                ckpt = Path(tmp) / f"{name}-{r}.pt"
                run = {"name": name, "run": r, **run_command(commands[name], ckpt)}
                if run["exit_code"] == 0:
                    run["confirm"] = confirm(ckpt, res["confirm_pairs"], CONFIRM_SEED + 10 * r)
                res["runs"].append(run)
                c = run.get("confirm", {})
                print(f"  {name} run {r + 1}/{repeats}: exit {run['exit_code']}, {run['wall_seconds']:.1f} s wall, "
                      f"{run['cpu_seconds']:.1f} s CPU, steps {c.get('steps_trained')}, confirmation "
                      f"{c.get('uniform', {}).get('exact_match')} / {c.get('repeats', {}).get('exact_match')}",
                      flush=True)
    res["loadavg_end"] = loadavg()
    (out_dir / "fast_recipe.json").write_text(json.dumps(res, indent=1) + "\n")
    (out_dir / "fast_recipe.md").write_text(render(res))
    print(f"wrote {out_dir / 'fast_recipe.md'}")
    return 0 if all(r["exit_code"] == 0 for r in res["runs"]) else 1


if __name__ == "__main__":
    sys.exit(main())
