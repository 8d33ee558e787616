"""Growth vs scratch on a model that solves the shift task (docs/recipes.md's architecture).

    python bench/origami_recipe_growth.py          # the stored result: minitf/experiments/stored/origami_recipe_growth.{json,md}
    python bench/origami_recipe_growth.py --quick  # a smoke run in seconds (writes to /tmp unless --out)
    python bench/origami_recipe_growth.py --seeds 1 --out /tmp/s1   # one seed per process, then
    python bench/origami_recipe_growth.py --merge /tmp/s0/origami_recipe_growth.json /tmp/s1/origami_recipe_growth.json

bench/origami_growth.py found that growing the seed layout loses to training the big model from
scratch, but that big model does not solve the task either. Here the big model is docs/recipes.md's:
d_model 32, 4 heads of dim 8, d_ff 128, 2 pre-norm layers, dropout 0, trained on 30,000 shift pairs
(a third with repeated bytes) at lr 6e-3, batch 64, 3,000 steps. The small model is the same family
at a quarter of the width: d_model 8, 1 head of dim 8, d_ff 32. `widen(small, 4)` gives exactly the
recipe's config (checked), with the same function (checked by widen) and Adam's moments carried.

Arms (a stage = one `minitf.train` call with its own warm-up and cosine schedule; 3,000 steps in all):
  scratch     the recipe model, 3,000 steps
  grow_500    small 500 steps, widen ×4, 2,500 steps
  grow_1000   small 1,000 steps, widen ×4, 2,000 steps
  staged      8 → 16 → 32: 500 steps at d_model 8, widen ×2, 500 at 16, widen ×2, 2,000 at 32
Compute is counted as in bench/origami_growth.py: 6 × parameters × trained (target) tokens, summed
over the stages. Held out: 500 fresh uniform shift pairs, none of them a training input, evaluated
with `minitf.evaluate` every 250 steps. For each arm: the compute (and step) of the first evaluation
at which held-out exact match ≥ 0.99, loss ≤ 0.05 and loss ≤ 0.01, and that compute relative to
scratch's.
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
from minitf import Config, Transformer, count_parameters, train  # noqa: E402
from minitf.core.data import make_splits  # noqa: E402
from minitf.core.origami import widen  # noqa: E402

RECIPE = Config(d_model=32, n_heads=4, head_dim=8, d_ff=128, norm_position="pre", dropout=0.0)


def family(d_model: int) -> Config:
    """The recipe's family at another width: heads of dim 8, d_ff = 4 · d_model."""
    return RECIPE.replace(d_model=d_model, n_heads=d_model // 8, head_dim=8, d_ff=4 * d_model)


SMALL = family(8)

# arm → stages as (d_model, steps); each later stage starts by widening the model to its d_model
ARMS = {
    "scratch": [(32, 3000)],
    "grow_500": [(8, 500), (32, 2500)],
    "grow_1000": [(8, 1000), (32, 2000)],
    "staged": [(8, 500), (16, 500), (32, 2000)],
}
THRESHOLDS = {"exact_match >= 0.99": ("exact_match", 0.99, 1),
              "loss <= 0.05": ("loss", 0.05, -1), "loss <= 0.01": ("loss", 0.01, -1)}


def grow(model: Transformer, d_model: int, *, optimizer=None, seed: int = 0):
    """widen `model` to d_model (head_dim kept), carrying the optimizer; returns the Growth.

    widen itself checks that the logits are unchanged; here we also check that the last growth
    lands exactly on the recipe's architecture, so the comparison is like for like.
    """
    factor = d_model // model.config.d_model
    grown = widen(model, factor, seed=seed, optimizer=optimizer)
    if d_model == RECIPE.d_model:
        assert grown.model.config == RECIPE, f"grown config {grown.model.config} is not the recipe's"
    return grown


def run_arm(name, args, seed, train_pairs, val):
    """Train one arm stage by stage; the held-out curve against cumulative compute and steps."""
    stages = ARMS[name] if not args.quick else [(d, max(1, s // 100)) for d, s in ARMS[name]]
    torch.manual_seed(seed)
    model = Transformer(family(stages[0][0]))
    optimizer, compute, step0, curve, record, start = None, 0.0, 0, [], [], time.perf_counter()
    for i, (d_model, steps) in enumerate(stages):
        if i:
            g = grow(model, d_model, optimizer=optimizer, seed=seed + i)
            model, optimizer = g.model, g.optimizer
            record.append({"growth": g.operation, "max_logit_diff": g.max_logit_diff})
        hist = train(model, train_pairs, val, steps=steps, batch_size=args.batch_size, lr=args.lr,
                     seed=seed + 10 * i, eval_every=min(args.eval_every, steps), progress=False,
                     optimizer=optimizer)
        optimizer = hist.optimizer
        n = count_parameters(model)
        per_step = 6 * n * hist.tokens / steps
        for v in hist.val:
            curve.append({"compute": compute + per_step * v["step"], "step": step0 + v["step"],
                          "d_model": d_model, **{k: v[k] for k in ("loss", "char_accuracy", "exact_match")}})
        compute += 6 * n * hist.tokens
        step0 += steps
        record.append({"d_model": d_model, "parameters": n, "steps": steps, "tokens": hist.tokens,
                       "seconds": round(hist.seconds, 1), "val": hist.val[-1]})
    assert model.config == RECIPE
    return {"arm": name, "seed": seed, "compute": compute, "steps": step0, "stages": record,
            "curve": curve, "final": curve[-1], "seconds": round(time.perf_counter() - start, 1)}


def first_reach(curve, key, target, sign):
    """The first evaluation at which curve[key] is at or beyond target (sign 1: ≥, −1: ≤)."""
    for point in curve:
        if sign * point[key] >= sign * target:
            return point
    return None


def summarize(runs) -> dict:
    summary = {}
    for r in runs:
        scratch = next(x for x in runs if x["arm"] == "scratch" and x["seed"] == r["seed"])
        row = {"final": r["final"], "compute": r["compute"],
               "compute_ratio": r["compute"] / scratch["compute"], "reach": {}}
        for label, (key, target, sign) in THRESHOLDS.items():
            p, q = first_reach(r["curve"], key, target, sign), first_reach(scratch["curve"], key, target, sign)
            row["reach"][label] = None if p is None else {
                "compute": p["compute"], "step": p["step"],
                "vs_scratch": None if q is None else p["compute"] / q["compute"]}
        summary[f"{r['arm']} seed {r['seed']}"] = row
    return summary


def markdown(result) -> str:
    s = result["settings"]
    lines = ["# Origami growth vs scratch on the recipe model", "",
             f"`{result['command']}` — seeds {s['seeds']}, {result['seconds']} s, torch {result['torch']}, "
             "one thread.", "",
             f"Big model = RECIPE.md's ({result['recipe_parameters']:,} parameters: d_model 32, 4 heads "
             f"of dim 8, d_ff 128, pre-norm, dropout 0); small model {result['small_parameters']:,} "
             f"parameters (d_model 8, 1 head of dim 8, d_ff 32). Training: {result['data']['n_train']:,} "
             f"shift pairs (repeats {s['repeats']}), batch {s['batch_size']}, lr {s['lr']}, "
             f"{result['runs'][0]['steps']:,} steps per arm. Held out: {result['data']['n_val']} fresh pairs, evaluated every "
             f"{s['eval_every']} steps. Compute = 6 × parameters × target tokens, in units of 10^9 "
             "(GFLOP); \"× scratch\" = the arm's compute at the first evaluation past the threshold "
             "divided by scratch's.", "",
             "| arm | stages (d_model × steps) | total GFLOP | final loss | final exact | "
             + " | ".join(f"first {t}: step, GFLOP (× scratch)" for t in THRESHOLDS) + " |",
             "|---|---|---|---|---|" + "---|" * len(THRESHOLDS)]
    for key, row in result["summary"].items():
        run = next(r for r in result["runs"] if f"{r['arm']} seed {r['seed']}" == key)
        stages = " → ".join(f"{st['d_model']}×{st['steps']}" for st in run["stages"] if "d_model" in st)
        cells = []
        for label in THRESHOLDS:
            x = row["reach"][label]
            cells.append("not reached" if x is None else
                         f"{x['step']}, {x['compute'] / 1e9:.2f} "
                         f"({'—' if x['vs_scratch'] is None else format(x['vs_scratch'], '.2f')})")
        lines.append(f"| {key} | {stages} | {row['compute'] / 1e9:.2f} | {row['final']['loss']:.4f} | "
                     f"{row['final']['exact_match']:.3f} | " + " | ".join(cells) + " |")
    lines += ["", "Per-evaluation curves are in origami_recipe_growth.json. Growth points are checked "
              "function-preserving (max |Δlogits| in the json)."]
    return "\n".join(lines) + "\n"


def merge(paths, out: Path):
    """One result from runs of different seeds made in separate processes (each arm re-seeds
    everything, so this is what a single run with all the seeds gives)."""
    results = [json.loads(Path(path).read_text()) for path in paths]
    first = results[0]
    for r in results[1:]:
        same = {k: v for k, v in r["settings"].items() if k not in ("seeds", "out")}
        assert same == {k: v for k, v in first["settings"].items() if k not in ("seeds", "out")}, \
            "results with different settings cannot be merged"
    result = dict(first)
    result["settings"] = dict(first["settings"], seeds=[s for r in results for s in r["settings"]["seeds"]])
    result["runs"] = [run for r in results for run in r["runs"]]
    result["seconds"] = round(sum(r["seconds"] for r in results), 1)
    result["command"] = (f"python bench/origami_recipe_growth.py --seeds {' '.join(map(str, result['settings']['seeds']))}"
                         + (" --quick" if first["settings"]["quick"] else "") + " (one process per seed, then --merge)")
    result["summary"] = summarize(result["runs"])
    out.mkdir(parents=True, exist_ok=True)
    (out / "origami_recipe_growth.json").write_text(json.dumps(result, indent=1))
    (out / "origami_recipe_growth.md").write_text(markdown(result))
    print(markdown(result))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    p.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=6e-3)
    p.add_argument("--n-train", type=int, default=30000)
    p.add_argument("--repeats", type=float, default=0.33)
    p.add_argument("--n-val", type=int, default=500)
    p.add_argument("--eval-every", type=int, default=250)
    p.add_argument("--quick", action="store_true", help="1/100 of the steps, small data: a smoke run")
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--merge", type=Path, nargs="+", default=None,
                   help="combine stored results of the same settings run for different seeds")
    args = p.parse_args(argv)
    if args.merge:
        merge(args.merge, args.out or ROOT / "minitf" / "experiments" / "stored")
        return
    if args.quick:
        args.n_train, args.n_val, args.eval_every = 500, 50, 5
    out = args.out or (Path("/tmp/origami_recipe_quick") if args.quick else ROOT / "minitf" / "experiments" / "stored")
    out.mkdir(parents=True, exist_ok=True)
    minitf.notebook.setup(seed=0)
    torch.set_num_threads(1)
    train_pairs, val = make_splits("shift", args.n_train, args.n_val, seed=0, repeats=args.repeats)  # the CLI's data
    runs, start = [], time.time()
    for seed in args.seeds:
        for name in args.arms:
            runs.append(run_arm(name, args, seed, train_pairs, val))
            f = runs[-1]["final"]
            print(f"seed {seed} {name:10s} loss {f['loss']:.4f} exact {f['exact_match']:.3f} "
                  f"GFLOP {runs[-1]['compute'] / 1e9:.2f} ({runs[-1]['seconds']} s)", flush=True)
    result = {"command": "python bench/origami_recipe_growth.py" + (" --quick" if args.quick else ""),
              "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
              "arms": {k: v for k, v in ARMS.items() if k in args.arms},
              "recipe_config": RECIPE.to_dict(), "small_config": SMALL.to_dict(),
              "recipe_parameters": count_parameters(Transformer(RECIPE)),
              "small_parameters": count_parameters(Transformer(SMALL)),
              "data": {"train": f"make_pairs('shift', {args.n_train}, 1000, max_len=12, repeats={args.repeats})",
                       "val": f"make_pairs('shift', {args.n_val}, 2000, max_len=12, exclude=<training inputs>)",
                       "n_train": len(train_pairs), "n_val": len(val)},
              "torch": torch.__version__, "machine": platform.machine(),
              "seconds": round(time.time() - start, 1), "runs": runs, "summary": summarize(runs)}
    (out / "origami_recipe_growth.json").write_text(json.dumps(result, indent=1))
    (out / "origami_recipe_growth.md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
