"""Does growing pay? Origami growth against training the big model from scratch, same compute.

    python bench/origami_growth.py            # the stored result: minitf/experiments/stored/origami_growth.{json,md}
    python bench/origami_growth.py --quick    # a smoke run in seconds (writes to /tmp unless --out)

Task: the shift pairs (output = input with each printable byte + 1). Held out: data/val.txt (75
pairs, never trained on). Training: 3,000 generated shift pairs of the same lengths (1–12 bytes),
their inputs disjoint from the held-out ones; data/train.txt's 450 pairs are too few here (a 34k
model memorises them and its held-out loss rises).

Big model: the seed's layout × 8 in width (d_model 32, 16 heads of dim 2, d_ff 64, 2 post-norm
layers, 33,728 parameters). Compute: 6 × parameters × trained tokens (the loss's tokens), summed
over every stage; every arm gets the compute of `scratch` (the big model trained for --steps).

Arms (a stage = one `minitf.train` call with its own warm-up and cosine schedule):
  scratch            the big model from a random start
  grow_late          seed model trained to its plateau (1,500 steps), widen ×8, train on
  grow_early         seed model 300 steps, widen ×8, train on
  grow_early_adam    as grow_early, carrying Adam's moments through the growth
  grow_early_copies  as grow_early with noise=0: exact copies (symmetry only broken by dropout)
  staged             4 → 8 → 16 → 32: 300 steps at each of d_model 4, 8, 16, then the rest at 32
For every arm: held-out loss / character accuracy / exact match at the end, the held-out loss
curve against compute, and the compute at which it first reaches scratch's final held-out loss
("saved" = 1 − that / scratch's compute; interpolated between evaluations). The other way round,
"scratch_matches_at": the fraction of its compute after which scratch is as good as the arm's end.

    python bench/origami_growth.py --summarize minitf/experiments/stored/origami_growth.json
re-derives the summary and the markdown from the stored runs without training again.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import minitf  # noqa: E402
from minitf import Config, Transformer, count_parameters, make_pairs, read_pairs, train  # noqa: E402
from minitf.core.origami import widen  # noqa: E402

SMALL = Config()  # the seed model
BIG = SMALL.replace(d_model=32, n_heads=16, head_dim=2, d_ff=64)


def data(n_train: int):
    val = read_pairs(ROOT / "data" / "val.txt")
    train_pairs = make_pairs("shift", n_train, seed=2026, max_len=12, exclude=[p.input for p in val])
    return train_pairs, val


class Run:
    """One arm: a model trained stage after stage, with its compute and held-out curve."""

    def __init__(self, args, train_pairs, val):
        self.args, self.train_pairs, self.val = args, train_pairs, val
        self.compute, self.curve, self.stages = 0.0, [], []

    def stage(self, model, steps, lr, seed, optimizer=None):
        eval_every = max(1, min(self.args.eval_every, steps))
        hist = train(model, self.train_pairs, self.val, steps=steps, batch_size=self.args.batch_size,
                     lr=lr, seed=seed, eval_every=eval_every, progress=False, optimizer=optimizer)
        n = count_parameters(model)
        per_step = 6 * n * hist.tokens / steps
        for v in hist.val:
            self.curve.append([self.compute + per_step * v["step"], v["loss"]])
        self.compute += 6 * n * hist.tokens
        self.stages.append({"d_model": model.config.d_model, "parameters": n, "steps": steps,
                            "tokens": hist.tokens, "val": hist.val[-1]})
        return hist


def steps_left(run, budget, params, tokens_per_step):
    return max(1, round((budget - run.compute) / (6 * params * tokens_per_step)))


def arm(name, args, seed, train_pairs, val, budget=None, tokens_per_step=None, keep=None):
    run = Run(args, train_pairs, val)
    torch.manual_seed(seed)
    n_big = count_parameters(Transformer(BIG))
    if name == "scratch":
        torch.manual_seed(seed)
        run.stage(Transformer(BIG), args.steps, args.lr, seed)
        return run
    torch.manual_seed(seed)
    model = Transformer(SMALL)
    small_steps = args.late_steps if name == "grow_late" else args.early_steps
    hist = run.stage(model, small_steps, args.small_lr, seed)
    if keep is not None and name == "grow_late":
        keep["seed_model"], keep["seed_history"] = model, hist
    if name == "staged":
        for i, d in enumerate((8, 16)):
            model = widen(model, 2, seed=seed + i).model
            hist = run.stage(model, args.early_steps, args.lr, seed + 10 + i)
        model = widen(model, 2, seed=seed + 2).model
    else:
        carry = name == "grow_early_adam"
        grown = widen(model, 8, noise=0.0 if name == "grow_early_copies" else 0.1, seed=seed,
                      optimizer=hist.optimizer if carry else None)
        model = grown.model
        if carry:
            run.stage(model, steps_left(run, budget, n_big, tokens_per_step), args.lr, seed + 20,
                      optimizer=grown.optimizer)
            return run
    run.stage(model, steps_left(run, budget, n_big, tokens_per_step), args.lr, seed + 20)
    return run


def reach(curve, target):
    """First compute at which the held-out loss is <= target (linear between evaluations)."""
    prev = None
    for c, loss in curve:
        if loss <= target:
            if prev is None or prev[1] == loss:
                return c
            (c0, l0) = prev
            return c0 + (c - c0) * (l0 - target) / (l0 - loss)
        prev = (c, loss)
    return None


ARMS = ["scratch", "grow_late", "grow_early", "grow_early_adam", "grow_early_copies", "staged"]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    p.add_argument("--steps", type=int, default=1200, help="scratch's steps: sets the budget")
    p.add_argument("--late-steps", type=int, default=1500)
    p.add_argument("--early-steps", type=int, default=300)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--small-lr", type=float, default=1e-2)
    p.add_argument("--n-train", type=int, default=3000)
    p.add_argument("--eval-every", type=int, default=100)
    p.add_argument("--quick", action="store_true", help="tiny settings for a smoke run")
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--summarize", type=Path, default=None, help="re-summarize a stored result")
    args = p.parse_args(argv)
    if args.summarize:
        result = json.loads(args.summarize.read_text())
        result["summary"] = summarize(result["runs"])
        args.summarize.write_text(json.dumps(result, indent=1))
        args.summarize.with_suffix(".md").write_text(markdown(result))
        print(markdown(result))
        return
    if args.quick:
        args.seeds, args.steps, args.late_steps, args.early_steps = [0], 40, 30, 10
        args.n_train, args.eval_every = 200, 20
    out = args.out or (Path("/tmp/origami_quick") if args.quick else ROOT / "minitf" / "experiments" / "stored")
    out.mkdir(parents=True, exist_ok=True)
    minitf.notebook.setup(seed=0)
    train_pairs, val = data(args.n_train)
    runs, start = [], time.time()
    for seed in args.seeds:
        keep = {} if seed == args.seeds[0] else None
        scratch = arm("scratch", args, seed, train_pairs, val)
        budget = scratch.compute
        tokens_per_step = scratch.stages[0]["tokens"] / args.steps
        target = scratch.curve[-1][1]
        for name in ARMS:
            run = scratch if name == "scratch" else arm(name, args, seed, train_pairs, val, budget,
                                                        tokens_per_step, keep)
            at = reach(run.curve, target)
            runs.append({"seed": seed, "arm": name, "compute": run.compute,
                         "compute_ratio": run.compute / budget, "final": run.stages[-1]["val"],
                         "stages": run.stages, "curve": run.curve,
                         "reach_scratch_loss_at": at,
                         "compute_saved": None if at is None else 1 - at / budget})
            print(f"seed {seed} {name:18s} loss {run.stages[-1]['val']['loss']:.3f} exact "
                  f"{run.stages[-1]['val']['exact_match']:.3f} compute {run.compute / budget:.3f} "
                  f"saved {runs[-1]['compute_saved']}", flush=True)
        if keep:
            minitf.save(keep["seed_model"], out / "origami_seed_model.pt", overwrite=True,
                        metadata={"steps": args.late_steps, "lr": args.small_lr, "seed": seed,
                                  "val": keep["seed_history"].val[-1]})
    summary = summarize(runs)
    result = {"command": "python bench/origami_growth.py" + (" --quick" if args.quick else ""),
              "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
              "small_config": SMALL.to_dict(), "big_config": BIG.to_dict(),
              "small_parameters": count_parameters(Transformer(SMALL)),
              "big_parameters": count_parameters(Transformer(BIG)),
              "data": {"train": f"make_pairs('shift', {args.n_train}, seed=2026, max_len=12, "
                                "exclude=<data/val.txt inputs>)", "val": "data/val.txt",
                       "n_train": len(train_pairs), "n_val": len(val)},
              "torch": torch.__version__, "machine": platform.machine(),
              "seconds": round(time.time() - start, 1), "runs": runs, "summary": summary}
    (out / "origami_growth.json").write_text(json.dumps(result, indent=1))
    (out / "origami_growth.md").write_text(markdown(result))
    print(markdown(result))


def summarize(runs) -> dict:
    """Means over seeds per arm, and how early scratch matches each arm's final held-out loss."""
    summary = {}
    for name in ARMS:
        rs = [r for r in runs if r["arm"] == name]
        saved = [r["compute_saved"] for r in rs]
        matches = []
        for r in rs:
            scratch = next(x for x in runs if x["arm"] == "scratch" and x["seed"] == r["seed"])
            at = reach(scratch["curve"], r["final"]["loss"])
            matches.append(None if at is None else at / scratch["compute"])
        summary[name] = {
            "loss": sum(r["final"]["loss"] for r in rs) / len(rs),
            "char_accuracy": sum(r["final"]["char_accuracy"] for r in rs) / len(rs),
            "exact_match": sum(r["final"]["exact_match"] for r in rs) / len(rs),
            "compute_saved": None if None in saved else sum(saved) / len(saved),
            "reached": sum(s is not None for s in saved),
            "scratch_matches_at": None if None in matches else sum(matches) / len(matches)}
    return summary


def markdown(result) -> str:
    s = result["settings"]
    lines = [f"# Origami growth vs. training from scratch (same compute)", "",
             f"`{result['command']}` — seeds {s['seeds']}, {result['seconds']} s, torch "
             f"{result['torch']}.", "",
             f"Big model {result['big_parameters']:,} parameters (seed layout × 8 in width); seed "
             f"model {result['small_parameters']:,}. Budget: scratch's {s['steps']} steps at batch "
             f"{s['batch_size']}. Held-out: {result['data']['val']} ({result['data']['n_val']} pairs); "
             f"training: {result['data']['n_train']} generated shift pairs.", "",
             "| arm | held-out loss | char acc | exact match | compute saved to reach scratch's loss "
             "| scratch is as good after |",
             "|---|---|---|---|---|---|"]
    for name, r in result["summary"].items():
        saved = ("not reached" if r["reached"] == 0 else
                 f"{100 * r['compute_saved']:+.0f} %" if r["compute_saved"] is not None else
                 f"reached in {r['reached']} of {len(s['seeds'])} seeds")
        match = "—" if r["scratch_matches_at"] is None else f"{100 * r['scratch_matches_at']:.0f} %"
        lines.append(f"| {name} | {r['loss']:.3f} | {r['char_accuracy']:.3f} | "
                     f"{r['exact_match']:.3f} | {saved} | {match} of its compute |")
    lines += ["", "Means over seeds; per-seed numbers and curves are in origami_growth.json."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
