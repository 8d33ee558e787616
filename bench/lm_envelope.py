"""The iso-FLOP envelope of the language model, and lm_growth's arms re-scored against it.

    python bench/lm_envelope.py           # the stored result (resumable: finished runs are kept and
                                          # changed ones run again, bench/store.py; the 9 growth
                                          # runs into 4L d32 take ~6 min of one core)
    python bench/lm_envelope.py --quick   # a smoke run, a few steps each, to /tmp

bench/lm_growth.py judges growth against one fixed model, docs/recipes.md's 4-layer d_model-64 target
(233,088 parameters), trained from scratch. At its budget (480 steps of 32 × 64 bytes, 1.37 TFLOP
by minitf.flops) that model sees about 4 tokens per parameter, and smaller models may do better at
the same compute. Here every size is trained *fully decayed* at each budget, with lm_growth's own
protocol (its `run`: the same AdamW at its tuned peak lr 6e-3, warm-up 5 %, linear decay to 0 over
the last 20 % of each run's budget, the same windows, the same 256 validation windows), each
budget its own run (not a decay branch). The envelope is, at each budget, the lowest final loss of
any size (mean over seeds). An arm's **effective-compute multiplier** is its budget over the
compute the envelope needs to reach the arm's final loss (log-linear between budgets): below 1 the
arm beats every fixed size; the goal is ≤ 0.7. The 4-layer target's runs at budgets 0.7 and
1.0 are lm_growth's stored scratch runs (seeds 0–2); this script adds the rest.

Then growth *into the envelope's best size*: 4L d32 grown by deepen from 2L d32 at τ = 0.5 and 0.8 of
the 1.0 budget (inside the stable phase, which ends at 0.8), with lm_growth's protocol for its deepen
arms (function-preserving, Adam's moments carried over, the same peak lr and schedule, the budget
counted in FLOPs with the small stage at its own size), scored against the envelope and the target;
and 2L d32 trained alone for the whole budget, the limit τ → 1.
Writes minitf/experiments/stored/lm_envelope.json and lm_envelope.md.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))

import minitf  # noqa: E402
from minitf.core.flops import flops_per_token  # noqa: E402
from minitf.core.model import count_parameters  # noqa: E402
import lm_growth as G  # noqa: E402
from reporting import command_line, utc_now  # noqa: E402
from store import add_study_arguments, config_spec, open_study  # noqa: E402

SIZES = {"4L d64 (target)": None, "2L d64": "L2", "1L d64": "L1", "4L d32": "d32"}
BUDGETS = [0.5, 1.0, 1.4]
SEEDS = [0, 1]
# growth into the envelope's best size (4L d32) at the 1.0 budget, from 2L d32: lm_growth's deepen 2→4
G.SMALL["d32 L2"] = G.SMALL["d32"].replace(n_layers=2)
INTO_BEST = {f"deepen 2→4 of d32, τ={tau}": {"small": "d32 L2", "grow": "deepen", "after": [0, 1], "tau": tau}
             for tau in (0.5, 0.8)}
INTO_BEST["2L d32, never grown (τ=1)"] = {"small": "d32 L2"}  # the small stage alone: τ → 1
INTO_BEST_SEEDS = [0, 1, 2]


def size_config(size):
    return G.TARGET if SIZES[size] is None else G.SMALL[SIZES[size]]


def envelope(points: dict) -> dict:
    """budget → (best size, its mean final loss), at the budgets every size was measured at (a
    budget only some sizes have would make the envelope jump up there)."""
    out = {}
    for b in sorted(set.intersection(*(set(s) for s in points.values()))):
        cands = {s: statistics.mean(v[b]) for s, v in points.items() if b in v}
        best = min(cands, key=cands.get)
        out[b] = (best, cands[best])
    return out


def compute_for(env: dict, loss: float) -> tuple[float | None, str]:
    """The budget at which the envelope reaches `loss`, log-linear between its budgets; the
    second value says 'inside', 'below' (the arm is worse than the envelope's smallest budget) or
    'above' (better than its largest: the result is a lower bound on the multiplier's inverse)."""
    bs = sorted(env)
    ls = [env[b][1] for b in bs]
    if loss >= ls[0]:
        return bs[0], "below"
    for (b0, l0), (b1, l1) in zip(zip(bs, ls), zip(bs[1:], ls[1:])):
        if l1 <= loss <= l0:
            t = (l0 - loss) / (l0 - l1)
            return math.exp(math.log(b0) + t * (math.log(b1) - math.log(b0))), "inside"
    return None, "above"


def run_spec(name: str, arm: dict | None, seed: int, lr: float, steps: int) -> dict:
    """Everything that decides one run (bench/store.py keys it by its hash): lm_growth's run of this
    arm, with the configs it names written out, so a changed size is trained again."""
    small = (arm or {}).get("small")
    return {"name": name, "arm": arm, "config": config_spec(G.SMALL[small] if small else G.TARGET),
            "seed": seed, "lr": lr, "steps": steps, "windows": G.EVAL_WINDOWS}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_study_arguments(p, "lm_envelope", quick_help="a smoke run, a few steps each, to /tmp")
    p.add_argument("--seeds", type=int, nargs="*", default=SEEDS)
    p.add_argument("--growth-seeds", type=int, nargs="*", default=INTO_BEST_SEEDS,
                   help="seeds of the arms that grow into 4L d32")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    store = open_study("lm_envelope", args)
    result = store.doc
    result.setdefault("runs", {})
    growth = json.loads((ROOT / "minitf" / "experiments" / "stored" / "lm_growth.json").read_text())
    lr, steps = growth["lr"], (6 if args.quick else growth["budget_steps"])
    text = minitf.read_text(G.TEXT, G.CONTEXT)
    for seed in args.seeds:
        for size in SIZES:
            for b in BUDGETS:
                k = f"{size} | budget {b} | seed {seed}"
                if SIZES[size] is None and b in (0.7, 1.0):
                    continue  # lm_growth's scratch
                arm = {"budget": b, **({"small": SIZES[size]} if SIZES[size] else {})}

                def measure(size=size, arm=arm, seed=seed, b=b):
                    r = G.run(size, arm, seed, lr, steps, text, [1.0], G.EVAL_WINDOWS)
                    r.pop("curve")
                    return {"size": size, "budget": b, "seed": seed, **r}
                r, new = store.run(result["runs"], run_spec(size, arm, seed, lr, steps), measure, key=k,
                                   legacy=lambda old: run_spec(old["size"], {"budget": old["budget"], **(
                                       {"small": SIZES[old["size"]]} if SIZES.get(old["size"]) else {})},
                                       old["seed"], old["lr"], old["budget_steps"]))
                if new:
                    print(f"{k}: {r['final_val_loss']:.4f} in {r['cpu_s']:.1f} s CPU", flush=True)
    grown = result.setdefault("into_best_runs", {})
    for seed in args.growth_seeds:  # every arm on one seed first, so a partial run covers both
        for name, arm in INTO_BEST.items():
            k = f"{name} | seed {seed}"

            def measure(name=name, arm=arm, seed=seed):
                r = G.run(name, arm, seed, lr, steps, text, [1.0], G.EVAL_WINDOWS)
                r.pop("curve")
                return r
            r, new = store.run(grown, run_spec(name, arm, seed, lr, steps), measure, key=k,
                               legacy=lambda old: run_spec(old["arm"], INTO_BEST.get(old["arm"]), old["seed"],
                                                           old["lr"], old["budget_steps"]))
            if new:
                print(f"{k}: {r['final_val_loss']:.4f} in {r['cpu_s']:.1f} s CPU, {r['steps']} steps "
                      f"({r['small_steps']} small)", flush=True)
    # the points: size → budget → final losses (the target at 0.7 and 1.0 from lm_growth)
    points: dict = {}
    for r in result["runs"].values():
        points.setdefault(r["size"], {}).setdefault(r["budget"], []).append(r["final_val_loss"])
    arms = growth["summary"]["arms"]
    target = "4L d64 (target)"
    points.setdefault(target, {})[1.0] = arms["scratch"]["final_losses"]
    points[target][0.7] = arms["scratch, 0.7 budget"]["final_losses"]
    env = envelope({s: {b: v for b, v in bs.items()} for s, bs in points.items()})
    scratch_only = envelope({target: points[target]})
    rescored = {}
    for name, a in arms.items():
        loss = statistics.mean(a["final_losses"])
        c_env, where = compute_for(env, loss)
        c_scr, where_s = compute_for(scratch_only, loss)
        per_seed = [compute_for(env, x) for x in a["final_losses"]]
        rescored[name] = {"budget": a["budget"], "final_loss": loss,
                          "vs_envelope": None if c_env is None else a["budget"] / c_env, "where": where,
                          "vs_scratch": None if c_scr is None else a["budget"] / c_scr, "where_scratch": where_s,
                          "vs_envelope_per_seed": [None if c is None else a["budget"] / c for c, _ in per_seed],
                          "where_per_seed": [w for _, w in per_seed]}
    into_best = {}
    for name in INTO_BEST:
        rs = [r for r in grown.values() if r["arm"] == name]
        if not rs:
            continue
        losses = [r["final_val_loss"] for r in rs]
        loss = statistics.mean(losses)
        c_env, where = compute_for(env, loss)
        c_scr, where_s = compute_for(scratch_only, loss)
        per_seed = [compute_for(env, x) for x in losses]
        per_seed_s = [compute_for(scratch_only, x) for x in losses]
        into_best[name] = {"budget": 1.0, "seeds": [r["seed"] for r in rs], "final_losses": losses,
                           "final_loss": loss, "tau": INTO_BEST[name].get("tau", 1.0),
                           "growth_fraction": [r["growth"] and r["growth"]["fraction"] for r in rs],
                           "growth_jump": [r["growth"] and r["growth"]["loss_after"] - r["growth"]["loss_before"]
                                           for r in rs],
                           "steps": [r["steps"] for r in rs], "small_steps": [r["small_steps"] for r in rs],
                           "cpu_s": [r["cpu_s"] for r in rs],
                           "vs_envelope": None if c_env is None else 1.0 / c_env, "where": where,
                           "vs_scratch": None if c_scr is None else 1.0 / c_scr, "where_scratch": where_s,
                           "vs_envelope_per_seed": [None if c is None else 1.0 / c for c, _ in per_seed],
                           "where_per_seed": [w for _, w in per_seed],
                           "vs_scratch_per_seed": [None if c is None else 1.0 / c for c, _ in per_seed_s],
                           "where_scratch_per_seed": [w for _, w in per_seed_s]}
    result.update({"date": utc_now(),
                   "command": command_line("lm_envelope.py", argv),
                   "lr": lr, "budget_steps": steps, "budget_flops": growth["budget_flops"],
                   "sizes": {s: {"parameters": count_parameters(minitf.Transformer(size_config(s))),
                                 "flops_per_token": flops_per_token(size_config(s), G.CONTEXT)} for s in SIZES},
                   "points": {s: {str(b): v for b, v in sorted(bs.items())} for s, bs in points.items()},
                   "envelope": {str(b): list(v) for b, v in env.items()}, "rescored": rescored,
                   "into_best": into_best})
    store.save(report(result))
    print(report(result))
    return 0


def report(result: dict) -> str:
    L = ["# The iso-FLOP envelope of the language model, and growth re-scored against it", "",
         f"Run by `{result['command']}`, {result['date']}. Final validation loss (nats per byte, 256 "
         "windows) of each size trained fully decayed at each budget (fractions of lm_growth's budget, "
         f"{result['budget_flops']:.3g} FLOPs), mean over seeds (min–max):", "",
         "| size | parameters | " + " | ".join(f"budget {b}" for b in sorted({float(b) for s in result['points'].values() for b in s})) + " |",
         "|---|---:|" + "---|" * len({float(b) for s in result['points'].values() for b in s})]
    budgets = sorted({float(b) for s in result["points"].values() for b in s})
    for s, bs in result["points"].items():
        cells = []
        for b in budgets:
            v = bs.get(str(b))
            cells.append(f"{statistics.mean(v):.4f} ({min(v):.3f}–{max(v):.3f}, {len(v)})" if v else "—")
        L.append(f"| {s} | {result['sizes'][s]['parameters']:,} | " + " | ".join(cells) + " |")
    L += ["", "Envelope (best size per budget): " + ", ".join(
        f"{b}: {s} {l:.4f}" for b, (s, l) in result["envelope"].items()), "",
          "Growth arms (bench/lm_growth.py, 3 seeds) re-scored: budget ÷ the compute the yardstick needs "
          "for the arm's mean final loss (below 1: better than the yardstick; goal ≤ 0.7).", "",
          "| arm | budget | final loss | vs the 4L target (scratch) | vs the envelope | per seed vs envelope |",
          "|---|---:|---:|---:|---:|---|"]
    top = max(budgets)
    # the envelope's own largest budget bounds "above"
    top = max(float(b) for b in result["envelope"])

    def fmt(x, w, budget):
        if w == "above":  # better than the yardstick's largest budget: the multiplier is below this
            return f"< {budget / top:.2f} (not bracketed)"
        return f"> {x:.2f} (worse than its smallest budget)" if w == "below" else f"{x:.2f}"
    for name, a in result["rescored"].items():
        seeds = ", ".join(fmt(x, w, a["budget"]).split(" (")[0]
                          for x, w in zip(a["vs_envelope_per_seed"], a["where_per_seed"]))
        L.append(f"| {name} | {a['budget']} | {a['final_loss']:.4f} | {fmt(a['vs_scratch'], a['where_scratch'], a['budget'])} | "
                 f"{fmt(a['vs_envelope'], a['where'], a['budget'])} | {seeds} |")
    if result.get("into_best"):
        L += ["", "Growth into the envelope's best size: 2L d32 deepened to 4L d32 at τ of the 1.0 budget "
              "(function-preserving, Adam's moments carried over, lm_growth's protocol), and 2L d32 never "
              "grown, per seed:", "",
              "| arm | final loss per seed | mean | vs the 4L target | vs the envelope | per seed vs envelope |",
              "|---|---|---:|---:|---:|---|"]
        for name, a in result["into_best"].items():
            seeds = ", ".join(fmt(x, w, 1.0).split(" (")[0]
                              for x, w in zip(a["vs_envelope_per_seed"], a["where_per_seed"]))
            L.append(f"| {name} | {', '.join(f'{x:.4f}' for x in a['final_losses'])} | {a['final_loss']:.4f} | "
                     f"{fmt(a['vs_scratch'], a['where_scratch'], 1.0)} | {fmt(a['vs_envelope'], a['where'], 1.0)} | "
                     f"{seeds} |")
    L += ["", "\"<\" and \">\": the arm's loss lies outside the budgets the yardstick was measured at, so "
          "only a bound is known. The target scratch was measured at 0.7 and 1.0 only (lm_growth), "
          "and 0.5 and 1.4 here."]
    return "\n".join(L)


if __name__ == "__main__":
    sys.exit(main())
