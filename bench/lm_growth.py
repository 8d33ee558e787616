"""Growth on the language model, measured against scratch at the same training FLOPs.

    python bench/lm_growth.py             # the stored result: ~50 min of one core (resumable,
                                          # bench/store.py: a changed arm is run again)
    python bench/lm_growth.py --quick     # a smoke run of every arm, a few steps each, to /tmp

The target is docs/recipes.md's language model (4 pre-norm layers, d_model 64, 4 heads, d_ff 256, context
64, batch 32, 233,088 parameters) on tiny Shakespeare bytes. Every arm gets the same total training
compute: what scratch spends in `--steps` steps, counted by minitf.flops (6 × non-embedding
parameters incl. the head + the attention term, per token; the small stage counted at its own
size). Every arm draws the same windows in the same order (one generator per seed), uses the same
AdamW and the same warm-up–stable–decay schedule on the fraction of the budget spent (warm-up 5 %,
linear decay to 0 over the last 20 %), and is evaluated at the same fractions of the budget on the
same validation windows. Grown arms train a smaller model (1 or 2 layers, or d_model 32) until a
fraction τ of the budget is spent, grow it (Adam's moments and step count carried over) and go on
with the schedule where it was; one control arm re-warms the learning rate after growth. Arms with
"0.7 budget" fit their whole schedule, growth included, into 0.7 of the budget: the 30 % goal, asked
directly.

Scratch's peak learning rate is tuned first (seed 0, three values, one more step up if the best is
the largest; the final validation loss); every arm then uses scratch's best rate. Each finished run is written to the JSON at once and
skipped when the script is run again. Training time is wall time and CPU time of this process
(one thread) with the evaluations taken out; the load average is stored beside them.
Writes minitf/experiments/stored/lm_growth.json and minitf/experiments/stored/lm_growth.md.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))

import minitf  # noqa: E402
from minitf import origami  # noqa: E402
from minitf.core.flops import flops_per_token  # noqa: E402
from minitf.core.model import count_parameters  # noqa: E402
from minitf.core.train import make_batches, make_optimizer, train_step  # noqa: E402
from lm import TEXT, Clock, val_loss  # noqa: E402
from reporting import command_line, loadavg, utc_now  # noqa: E402
from store import add_study_arguments, open_study  # noqa: E402

CONTEXT, BATCH, WEIGHT_DECAY = 64, 32, 0.01
TARGET = minitf.Config(d_model=64, n_heads=4, n_layers=4, d_ff=256, norm_position="pre", dropout=0.0,
                       max_len=CONTEXT)
SMALL = {"L1": TARGET.replace(n_layers=1), "L2": TARGET.replace(n_layers=2),
         "d32": TARGET.replace(d_model=32, n_heads=2, d_ff=128)}
WARMUP, DECAY = 0.05, 0.2       # fractions of the budget
LRS = [1.5e-3, 3e-3, 6e-3]      # scratch's peak learning rate is tuned over these (seed 0)
SEEDS = [0, 1, 2]
EVAL_WINDOWS = 256
FRACTIONS = [round(0.05 * i, 4) for i in range(1, 12)] + [round(0.6 + 0.025 * i, 4) for i in range(17)]


def wsd_by_budget(progress: float, lr: float, warmup: float = WARMUP, decay: float = DECAY) -> float:
    """Warm-up, stable, decay (WSD) on the fraction of the compute budget spent, in [0, 1]: linear
    warm-up to lr over the first `warmup` of it, lr held, then linear down to 0 over the last
    `decay`. minitf's schedules (minitf.core.train.schedule_for) count steps; a grown model's steps
    cost more FLOPs as it grows, so this study counts the budget, and a run can change its model
    during the stable phase and carry on where it was."""
    if not (0 <= warmup and 0 < decay and warmup + decay <= 1):
        raise ValueError(f"wsd_by_budget: need 0 <= warmup, 0 < decay and warmup + decay <= 1, "
                         f"got {warmup}, {decay}")
    if progress < warmup:
        return lr * progress / warmup
    if progress > 1 - decay:
        return lr * max(0.0, 1 - progress) / decay
    return lr

# name → how the arm trains: the small config (none for scratch), the growth, when, and the schedule
ARMS = {
    "scratch": {},
    "deepen 1→4, τ=0.5": {"small": "L1", "grow": "deepen", "after": [0, 0, 0], "tau": 0.5},
    "deepen 1→4, τ=0.75": {"small": "L1", "grow": "deepen", "after": [0, 0, 0], "tau": 0.75},
    "deepen 2→4, τ=0.5": {"small": "L2", "grow": "deepen", "after": [0, 1], "tau": 0.5},
    "deepen 2→4, τ=0.75": {"small": "L2", "grow": "deepen", "after": [0, 1], "tau": 0.75},
    "stack 1→4, τ=0.75": {"small": "L1", "grow": "stack", "order": [0, 0, 0, 0], "tau": 0.75},
    "stack 2→4, τ=0.75": {"small": "L2", "grow": "stack", "order": [0, 1, 0, 1], "tau": 0.75},
    "widen d32→64, τ=0.75": {"small": "d32", "grow": "widen", "tau": 0.75},
    "stack 1→4, τ=0.75, re-warm-up": {"small": "L1", "grow": "stack", "order": [0, 0, 0, 0],
                                       "tau": 0.75, "rewarm": True},
    # added after the arms above had run, following the best of them (deepen 2→4, τ=0.75): the latest
    # growth inside the stable phase, and a learning-rate rule for the new layers alone
    "deepen 2→4, τ=0.8": {"small": "L2", "grow": "deepen", "after": [0, 1], "tau": 0.8},
    "deepen 2→4, τ=0.75, new layers 2× LR": {"small": "L2", "grow": "deepen", "after": [0, 1], "tau": 0.75,
                                             "new_lr": 2.0},
    # the goal asked directly: 0.7 of the budget, the whole schedule (and the growth) squeezed into it
    "scratch, 0.7 budget": {"budget": 0.7},
    "deepen 1→4, τ=0.75, 0.7 budget": {"small": "L1", "grow": "deepen", "after": [0, 0, 0], "tau": 0.75,
                                       "budget": 0.7},
    "stack 1→4, τ=0.75, 0.7 budget": {"small": "L1", "grow": "stack", "order": [0, 0, 0, 0], "tau": 0.75,
                                      "budget": 0.7},
    # added after seed 0 of the full-budget arms showed deepen 2→4 ahead of the 1→4 arms
    "deepen 2→4, τ=0.75, 0.7 budget": {"small": "L2", "grow": "deepen", "after": [0, 1], "tau": 0.75,
                                       "budget": 0.7},
}


def grow(model, arm: dict, optimizer, seed: int):
    """The arm's growth step: a minitf.origami Growth (the new model, its optimizer, the check)."""
    if arm["grow"] == "deepen":
        return origami.deepen(model, arm["after"], seed=seed, optimizer=optimizer)
    if arm["grow"] == "stack":
        return origami.stack(model, arm["order"], optimizer=optimizer)
    if arm["grow"] == "widen":
        return origami.widen(model, 2, seed=seed, optimizer=optimizer)
    raise ValueError(f"unknown growth {arm['grow']!r}")


def new_layers(arm: dict, small_layers: int) -> list[int]:
    """Where deepen put its new layers: after each layer i listed in arm["after"], in order."""
    order = []
    for i in range(small_layers):
        order += [i] + [None] * arm["after"].count(i)
    return [j for j, i in enumerate(order) if i is None]


def boost(model, optimizer, layers: list[int], scale: float) -> None:
    """Give the parameters of `layers` their own AdamW groups whose learning rate is `scale` times
    the schedule's (the loop reads "lr_scale"); their moments stay where they are."""
    new = {id(p) for j in layers for p in model.blocks[j].parameters()}
    for group in list(optimizer.param_groups):
        moved = [p for p in group["params"] if id(p) in new]
        if moved:
            group["params"] = [p for p in group["params"] if id(p) not in new]
            optimizer.add_param_group({**{k: v for k, v in group.items() if k != "params"},
                                       "params": moved, "lr_scale": scale})


def run(name: str, arm: dict, seed: int, lr: float, steps: int, text, fractions, windows) -> dict:
    """One arm, one seed: train under the FLOP budget of `steps` scratch steps; the curve by FLOPs."""
    tokens_per_step = BATCH * CONTEXT
    budget = arm.get("budget", 1.0) * steps * tokens_per_step * flops_per_token(TARGET, CONTEXT)
    torch.manual_seed(seed)
    model = minitf.Transformer(SMALL[arm["small"]] if "small" in arm else TARGET)
    opt = make_optimizer(model, lr, WEIGHT_DECAY)
    batches = make_batches(text.train, BATCH, torch.Generator().manual_seed(seed))
    load0 = loadavg()
    spent, step, small_steps, growth, curve = 0, 0, None, None, []
    pending = list(fractions)
    clock = Clock()
    model.train()
    while spent < budget:
        if "grow" in arm and growth is None and spent >= arm["tau"] * budget:
            before = clock.pause(lambda: val_loss(model, text.val, windows))
            g = grow(model, arm, opt, seed)
            after = clock.pause(lambda: val_loss(g.model, text.val, windows))
            growth = {"operation": g.operation, "exactness": g.exactness, "step": step, "flops": spent,
                      "fraction": spent / budget, "max_logit_diff": g.max_logit_diff,
                      "loss_before": before, "loss_after": after,
                      "small_flops_per_token": flops_per_token(model, CONTEXT),
                      "small_parameters": count_parameters(model)}
            small_steps = step
            if "new_lr" in arm:
                boost(g.model, g.optimizer, new_layers(arm, model.config.n_layers), arm["new_lr"])
            model, opt = g.model, g.optimizer
            model.train()
        cost = tokens_per_step * flops_per_token(model, CONTEXT)
        progress = (spent + cost / 2) / budget  # the middle of this step
        rate = wsd_by_budget(progress, lr, WARMUP, DECAY)
        if arm.get("rewarm") and growth is not None:
            rate *= min(1.0, (progress - growth["fraction"]) / WARMUP)
        for group in opt.param_groups:
            group["lr"] = rate * group.get("lr_scale", 1.0)
        ids, targets = batches.next()
        train_step(model, opt, ids, targets)
        spent += cost
        step += 1
        while pending and spent >= pending[0] * budget * (1 - 1e-12):
            wall, cpu = clock.now()
            loss = clock.pause(lambda: val_loss(model, text.val, windows))
            curve.append({"fraction": pending.pop(0), "flops": spent, "step": step, "val_loss": loss,
                          "cpu_s": cpu, "wall_s": wall})
    wall, cpu = clock.now()
    return {"arm": name, "seed": seed, "lr": lr, "budget_steps": steps, "budget_flops": budget,
            "steps": step, "small_steps": small_steps, "tokens": step * tokens_per_step,
            "flops": spent, "final_val_loss": curve[-1]["val_loss"], "cpu_s": cpu, "wall_s": wall,
            "loadavg": [load0, loadavg()], "growth": growth,
            "curve": curve}


def reach(curve: list[dict], target: float) -> float | None:
    """FLOPs at which the curve first gets to `target`, linear between evaluations; None if never."""
    prev = None
    for p in curve:
        if p["val_loss"] <= target:
            if prev is None:
                return p["flops"]
            t = (prev["val_loss"] - target) / (prev["val_loss"] - p["val_loss"])
            return prev["flops"] + t * (p["flops"] - prev["flops"])
        prev = p
    return None


def loss_at(curve: list[dict], flops: float) -> float | None:
    """The validation loss at `flops`, linear between evaluations; None past the run's end."""
    prev = None
    for p in curve:
        if p["flops"] >= flops * (1 - 1e-9):
            if prev is None or p["flops"] == prev["flops"]:
                return p["val_loss"]
            t = (flops - prev["flops"]) / (p["flops"] - prev["flops"])
            return prev["val_loss"] + t * (p["val_loss"] - prev["val_loss"])
        prev = p
    return None


def summarize(result: dict) -> dict:
    """Per arm: FLOPs to scratch's final loss as a fraction of the full budget, the loss at 25/50/75/
    100 % of the full budget, times, tokens, the compute bound; and whether every seed beats the
    scratch seeds' range."""
    lr, runs, budget = result["lr"], result["runs"], result["budget_flops"]
    by_arm = {name: [runs[key(name, s, lr)] for s in result["seeds"] if key(name, s, lr) in runs]
              for name in ARMS}
    scratch = by_arm["scratch"]
    if not scratch:
        return {}
    target = statistics.mean(r["final_val_loss"] for r in scratch)

    def ratio(r):
        at = reach(r["curve"], target)
        return None if at is None else at / budget

    c4 = flops_per_token(TARGET, CONTEXT)
    best_scratch = min((x for x in map(ratio, scratch) if x is not None), default=None)
    best_scratch_loss = min(r["final_val_loss"] for r in scratch)
    out = {"target_loss": target, "scratch_final_losses": [r["final_val_loss"] for r in scratch], "arms": {}}
    for name, rs in by_arm.items():
        if not rs:
            continue
        arm = ARMS[name]
        ratios = [ratio(r) for r in rs]
        got = [x for x in ratios if x is not None]
        grown = "grow" in arm
        bound = arm["tau"] * (1 - flops_per_token(SMALL[arm["small"]], CONTEXT) / c4) if grown else 0.0
        out["arms"][name] = {
            "seeds": [r["seed"] for r in rs], "budget": arm.get("budget", 1.0), "ratios": ratios,
            "ratio_mean": statistics.mean(got) if got and len(got) == len(ratios) else None,
            "ratio_range": [min(got), max(got)] if got else None,
            "loss_at": {str(f): [loss_at(r["curve"], f * budget) for r in rs] for f in (0.25, 0.5, 0.75, 1.0)},
            "final_losses": [r["final_val_loss"] for r in rs],
            "cpu_s": [r["cpu_s"] for r in rs], "wall_s": [r["wall_s"] for r in rs],
            "tokens": rs[0]["tokens"], "steps": rs[0]["steps"], "small_steps": rs[0]["small_steps"],
            "bound": bound, "best_possible_ratio": 1 - bound,
            "growth_jump": [r["growth"]["loss_after"] - r["growth"]["loss_before"] for r in rs] if grown else None,
            # a saving is claimed only if every seed reaches the target before every scratch seed
            "beats_scratch_range": grown and len(got) == len(ratios) and best_scratch is not None
            and max(got) < best_scratch,
            "goal_met": grown and len(got) == len(ratios) and max(got) <= 0.7,
        }
    return out


def key(name: str, seed: int, lr: float) -> str:
    return f"{name} | lr {lr:g} | seed {seed}"


def report(result: dict) -> str:
    s = result["summary"]
    L = ["# Growth on the language model: FLOPs to scratch's final loss", "",
         f"Run by `{result['command']}` ({result['date']}), one thread. Target: RECIPE.md's LM "
         f"({result['target_parameters']:,} parameters), budget = {result['budget_steps']} scratch steps "
         f"of {BATCH}×{CONTEXT} bytes = {result['budget_flops'] / 1e12:.2f} TFLOP "
         f"(6·(non-embedding params + head) + 6·n_layers·context·d per token). WSD schedule on the budget "
         f"fraction: warm-up {WARMUP:.0%}, decay to 0 over the last {DECAY:.0%}. Peak LR "
         f"{result['lr']:g} (scratch's best of {', '.join(f'{x:g}' for x in result['lrs'])} on seed 0: "
         + ", ".join(f"{x} → {v:.3f}" for x, v in result["lr_tuning"].items()) + "), used by every arm. "
         f"Seeds {result['seeds']}. Validation loss in nats per byte on {result['eval_windows']} fixed "
         "windows of the validation split.", "",
         f"Scratch's final loss (mean over seeds): **{s['target_loss']:.4f}**. Ratio = FLOPs to reach it "
         "(interpolated between evaluations) ÷ the budget; the bound is τ·(1 − C_small/C_big), the "
         "saving if every small-model step were worth a big-model step (the research notes' yardstick).", "",
         "| arm | budget | FLOPs ratio per seed | mean | bound τ·(1 − C_s/C_b) | loss at 25 / 50 / 75 / 100 % "
         "of the budget (mean) | final loss per seed | growth jump | steps (small) | tokens | CPU s / wall s (mean) "
         "| saving claimed | ≤ 0.7 every seed |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, a in s["arms"].items():
        ratios = ", ".join("n/r" if x is None else f"{x:.3f}" for x in a["ratios"])
        mean = "—" if a["ratio_mean"] is None else f"{a['ratio_mean']:.3f}"
        losses = " / ".join("—" if None in v else f"{statistics.mean(v):.3f}" for v in a["loss_at"].values())
        jump = "—" if a["growth_jump"] is None else ", ".join(f"{round(x, 3) + 0.0:+.3f}" for x in a["growth_jump"])
        small = "" if a["small_steps"] is None else f" ({a['small_steps']})"
        finals = ", ".join(f"{x:.3f}" for x in a["final_losses"])
        L.append(f"| {name} | {a['budget']:g} | {ratios} | {mean} | {a['bound']:.2f} | {losses} | {finals} | {jump} | "
                 f"{a['steps']}{small} | {a['tokens']:,} | {statistics.mean(a['cpu_s']):.0f} / "
                 f"{statistics.mean(a['wall_s']):.0f} | "
                 f"{'**yes**' if a['beats_scratch_range'] else 'no'} | {'**yes**' if a['goal_met'] else 'no'} |")
    L += ["", "n/r: the run never reached scratch's mean final loss within its budget. Budget 0.7: the arm's "
          "whole schedule (and its growth at τ of it) fits in 0.7 of scratch's FLOPs, the issue's goal "
          "asked directly. A saving is claimed only where every seed's ratio is below the best scratch "
          "seed's. Growth jump: validation loss right after the growth step minus right before (0 for "
          "the function-preserving operators).", "",
          f"Load average during the runs: {result['loadavg_start']} → {result['loadavg_end']} "
          "(wall times in the JSON; CPU time is the steadier figure).", ""]
    return "\n".join(L)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_study_arguments(p, "lm_growth", quick_help="every arm for a few steps, one seed, to /tmp")
    p.add_argument("--steps", type=int, default=480, help="the budget: scratch's steps (default 480)")
    p.add_argument("--scratch-only", action="store_true", help="stop after the learning-rate tuning and scratch")
    p.add_argument("--arms", nargs="+", choices=list(ARMS), default=list(ARMS),
                   help="run only these arms (scratch always runs)")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    quick = args.quick
    store = open_study("lm_growth", args)
    steps = 6 if quick else args.steps
    seeds, lrs = ([0], [3e-3]) if quick else (SEEDS, LRS)
    windows = 8 if quick else EVAL_WINDOWS
    fractions = [0.25, 0.5, 0.75, 1.0] if quick else FRACTIONS
    text = minitf.read_text(TEXT, CONTEXT)
    result = store.doc
    stored = {k: result.get(k) for k in ("arms", "fractions", "eval_windows")}  # what its runs were made with

    def spec(name, seed, lr):  # everything that decides a run (bench/store.py keys it by its hash)
        return {"arm": ARMS[name], "seed": seed, "lr": lr, "steps": steps, "fractions": fractions,
                "windows": windows}

    def stored_spec(old):  # a run stored before bench/store.py: its spec from its fields
        return {"arm": (stored["arms"] or {}).get(old["arm"]), "seed": old["seed"], "lr": old["lr"],
                "steps": old["budget_steps"], "fractions": stored["fractions"], "windows": stored["eval_windows"]}

    result.update({"command": command_line("lm_growth.py", argv),
                   "date": utc_now(), "quick": quick,
                   "budget_steps": steps, "budget_flops": steps * BATCH * CONTEXT * flops_per_token(TARGET, CONTEXT),
                   "target_config": TARGET.to_dict(), "target_parameters": count_parameters(minitf.Transformer(TARGET)),
                   "small_configs": {k: c.to_dict() for k, c in SMALL.items()},
                   "flops_per_token": {"target": flops_per_token(TARGET, CONTEXT),
                                       **{k: flops_per_token(c, CONTEXT) for k, c in SMALL.items()}},
                   "arms": ARMS, "seeds": seeds, "lrs": lrs, "eval_windows": windows, "fractions": fractions,
                   "warmup": WARMUP, "decay": DECAY, "batch_size": BATCH, "context": CONTEXT})
    result.setdefault("loadavg_start", loadavg())
    runs = result.setdefault("runs", {})

    def ensure(name, seed, lr):
        k, t0 = key(name, seed, lr), time.perf_counter()

        def measure():
            r = run(name, ARMS[name], seed, lr, steps, text, fractions, windows)
            result["loadavg_end"] = loadavg()
            return r
        r, new = store.run(runs, spec(name, seed, lr), measure, key=k, legacy=stored_spec)
        if new:
            print(f"{k}: final {r['final_val_loss']:.4f}, {r['steps']} steps, {r['cpu_s']:.0f} s CPU "
                  f"({time.perf_counter() - t0:.0f} s with evaluations), load {os.getloadavg()[0]:.2f}",
                  flush=True)
        return r

    result["lr_tuning"] = {f"{lr:g}": ensure("scratch", seeds[0], lr)["final_val_loss"] for lr in lrs}
    if not quick and min(lrs, key=lambda x: result["lr_tuning"][f"{x:g}"]) == max(lrs):
        lrs = result["lrs"] = lrs + [2 * max(lrs)]  # the best at the edge: one step further
        result["lr_tuning"][f"{lrs[-1]:g}"] = ensure("scratch", seeds[0], lrs[-1])["final_val_loss"]
    result["lr"] = lr = min(lrs, key=lambda x: result["lr_tuning"][f"{x:g}"])
    for seed in seeds:
        ensure("scratch", seed, lr)
    if not args.scratch_only:
        for seed in seeds:  # every arm on seed 0 first, so a partial run already covers every arm
            for name in ARMS:
                if name in args.arms:
                    ensure(name, seed, lr)
    result["summary"] = summarize(result)
    result["loadavg_end"] = loadavg()
    store.save(report(result))
    print(report(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
