"""The fast language-model recipe (`--recipe lm-fast`): what each trick buys, and its time beside the
nanoGPT-style reference measured in the same run.

    python bench/lm_fast.py                  # the stored ablation (resumable: finished runs are kept,
                                             # a changed arm is run again: bench/store.py)
    python bench/lm_fast.py --quick          # a smoke run of every arm, a few steps each, to /tmp
    python bench/lm_fast.py --arms NAME ...  # only these arms (exploration)

Every arm trains minitf on the first 90 % of tiny Shakespeare (bytes are the tokens) through
minitf.train, one thread, in this process, and is scored at the end on the whole last 10 % by
bench/lm.py's evaluator (tiled 64-byte windows; nats per byte), the same that scores the reference.
Training time is wall and CPU time of the training loop alone (the evaluation is not counted).
Seeds of one arm alternate with the other arms' and with the reference's runs (round by round), so
the machine's load falls on all of them alike; the load average is stored beside every run.
Writes minitf/experiments/stored/lm_fast.json and lm_fast.md.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))

import minitf  # noqa: E402
from minitf.core.train import make_lm_optimizer  # noqa: E402
from lm import TEXT, run_reference, val_loss  # noqa: E402
from reporting import command_line, paired_deltas, signed_spread, spread, utc_now  # noqa: E402
from store import add_study_arguments, open_study  # noqa: E402

TARGET = 1.89  # nats per byte: nanoGPT's CPU quick-start, scored by our evaluator (bench/nanogpt.py)
CONTEXT = 64

# the recipe of docs/recipes.md (`--recipe lm`), the starting point
LM = dict(config=dict(d_model=64, n_heads=4, n_layers=4, d_ff=256, norm_position="pre", dropout=0.0),
          train=dict(steps=800, batch_size=32, lr=3e-3, warmup=50, schedule="cosine"),
          opt=dict(kind="adamw"))


def arm(base, config=None, train=None, opt=None):
    return {"config": {**base["config"], **(config or {})}, "train": {**base["train"], **(train or {})},
            "opt": {**base["opt"], **(opt or {})}}


# `--recipe lm-fast` (minitf/core/recipes.py has the same flags; tests/test_lm_fast.py checks it)
FAST = dict(config=dict(d_model=64, n_heads=4, n_layers=2, d_ff=256, norm_position="pre", dropout=0.0,
                        qk_norm=True),
            train=dict(steps=340, batch_size=24, lr=1.5e-2, warmup=20, schedule="wsd", cooldown=0.4),
            opt=dict(kind="muon", muon_lr=0.02, embed_lr=3.0))

# The ablation: lm-fast, then lm-fast without one trick it keeps (one row each), then lm-fast with
# one trick tried and not kept
ARMS = {
    "lm-fast": FAST,
    "− QK-norm": arm(FAST, config=dict(qk_norm=False)),
    "− Muon (AdamW everywhere, lr 6e-3)": arm(FAST, train=dict(lr=6e-3), opt=dict(kind="adamw")),
    "− WSD (cosine to 0.1·lr)": arm(FAST, train=dict(schedule="cosine")),
    "− embedding lr ×3 (×1)": arm(FAST, opt=dict(embed_lr=1.0)),
    "− right-size (4 layers)": arm(FAST, config=dict(n_layers=4)),
    "− right-size (4 layers, 190 steps: about the same time)": arm(FAST, config=dict(n_layers=4),
                                                                   train=dict(steps=190)),
    "− batch 24 (batch 32, 255 steps)": arm(FAST, train=dict(batch_size=32, steps=255)),
    "− warm-up 20 (50)": arm(FAST, train=dict(warmup=50)),
    "− lr 1.5e-2 (1e-2)": arm(FAST, train=dict(lr=1e-2)),
    "+ modern preset (SwiGLU d_ff 170, RMSNorm, no biases)": arm(
        FAST, config=dict(norm="rms", bias=False, ffn_gate=True, activation="silu", d_ff=170)),
    "+ ReLU²": arm(FAST, config=dict(activation="relu2")),
    "+ zero-init output projections": arm(FAST, config=dict(zero_init=True)),
    "+ logit soft-cap 15": arm(FAST, config=dict(logit_softcap=15.0)),
}

EXPLORE = {}


def run_arm(spec: dict, seed: int, quick: bool) -> dict:
    text = minitf.read_text(TEXT, CONTEXT)
    cfg = minitf.Config(max_len=CONTEXT, **spec["config"])
    torch.manual_seed(seed)
    model = minitf.Transformer(cfg)
    tr = dict(spec["train"])
    if quick:
        tr["steps"] = 10
    opt = make_lm_optimizer(model, tr["lr"], kind=spec["opt"].get("kind", "adamw"),
                            embed_lr=spec["opt"].get("embed_lr", 1.0),
                            muon_lr=spec["opt"].get("muon_lr"))
    load = os.getloadavg()[0]
    cpu0 = time.process_time()
    hist = minitf.train(model, text.train, None, seed=seed, progress=False, optimizer=opt, **tr)
    cpu = time.process_time() - cpu0
    loss = val_loss(model, text.val)
    return {"seed": seed, "val_loss": loss, "wall_s": hist.seconds, "cpu_s": cpu,
            "ms_per_step": 1000 * hist.seconds / tr["steps"], "steps": tr["steps"],
            "params": minitf.count_parameters(model), "loadavg": round(load, 2)}


def reference(seed: int, quick: bool) -> dict:
    load = os.getloadavg()[0]
    cpu0 = time.process_time()
    r = run_reference(10 if quick else 2000, quick, seed=seed)
    last = r["curve"][-1]
    return {"seed": seed, "val_loss": r["final_val_loss"], "wall_s": last["wall_s"],
            "cpu_s": last["cpu_s"], "ms_per_step": 1000 * last["wall_s"] / last["step"],
            "steps": last["step"], "params": r["params"], "loadavg": round(load, 2)}


def summary(runs):
    def med(key):
        return statistics.median(r[key] for r in runs)
    return {k: med(k) for k in ("val_loss", "wall_s", "cpu_s", "ms_per_step")} | {
        "min_loss": min(r["val_loss"] for r in runs), "max_loss": max(r["val_loss"] for r in runs),
        "seeds": [r["seed"] for r in runs], "params": runs[0]["params"], "steps": runs[0]["steps"]}


def ratios(result: dict, name: str, key: str = "wall_s") -> list[float]:
    """Each seed's training time (wall_s or cpu_s) over the reference's in the same round."""
    ref = {r["seed"]: r for r in result["runs"].get("reference", {}).get("runs", [])}
    ours = result["runs"][name]["runs"]
    return [a[key] / ref[a["seed"]][key] for a in ours if a["seed"] in ref]


def paired(runs, base_runs) -> str:
    d = paired_deltas(runs, base_runs)
    return signed_spread(d) if d else "—"


def report(result: dict) -> str:
    ref = result["runs"].get("reference")
    L = ["# The fast language model: `--recipe lm-fast` and what each trick buys", "",
         f"Run by `{result.get('command', 'python bench/lm_fast.py')}`, finished {result.get('date', '?')}, one "
         "thread per run, runs of every arm and of the nanoGPT-style reference interleaved round by round "
         "(round i: seed i of every arm, then reference seed i). Validation loss in nats per byte on the "
         "whole last 10 % of tiny Shakespeare (tiled 64-byte windows, bench/lm.py's evaluator); training "
         "time without evaluation. Medians over seeds (loss: min–max; Δ: the arm's loss minus lm-fast's "
         "with the same seed, which saw the same batches); the ratio is each run's wall time "
         "over the reference's in its round. The machine was shared: load average "
         f"{result.get('load_range', '?')} while it ran, so absolute seconds are inflated; the ratios and "
         "CPU seconds are the steadier figures.", "",
         "| arm | parameters | steps | ms/step | wall s | CPU s | val loss | Δ loss vs lm-fast, paired by seed | "
         "≤ 1.89 | wall ÷ reference | CPU ÷ reference |",
         "|---|---:|---:|---:|---:|---:|---|---|---|---:|---:|"]
    base = result["runs"].get("lm-fast", {}).get("runs", [])
    for name, entry in result["runs"].items():
        runs = entry["runs"]
        if not runs:
            continue
        s = summary(runs)
        ok = sum(r["val_loss"] <= TARGET for r in runs)
        rr = ratios(result, name) if name != "reference" else []
        ratio = spread(rr, 3) if rr else "1"
        rc = ratios(result, name, "cpu_s") if name != "reference" else []
        ratio += " | " + (spread(rc, 3) if rc else "1")
        L.append(f"| {name} | {s['params']:,} | {s['steps']} | {s['ms_per_step']:.1f} | {s['wall_s']:.1f} | "
                 f"{s['cpu_s']:.1f} | {s['val_loss']:.4f} ({s['min_loss']:.4f}–{s['max_loss']:.4f}) | "
                 f"{paired(runs, base)} | {ok}/{len(runs)} | {ratio} |")
    fast = result["runs"].get("lm-fast", {}).get("spec")
    if fast:
        L += ["", f"lm-fast: `{json.dumps(fast, separators=(',', ':'))}`; every other row differs from "
              "it only in:", ""]
        for name, entry in result["runs"].items():
            if name not in ("reference", "lm-fast"):
                diff = {part: {k: v for k, v in entry["spec"][part].items() if fast[part].get(k) != v}
                        for part in entry["spec"]}
                L.append(f"- {name}: `{json.dumps({k: v for k, v in diff.items() if v}, separators=(',', ':'))}`")
    if ref:
        L += ["", "The reference: `bench/nanogpt_reference.py` (nanoGPT's CPU quick-start: 4 layers, 128 "
              "wide, context 64, batch 12, 2,000 iterations, lr 1e-3).", ""]
    return "\n".join(L)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_study_arguments(p, "lm_fast", quick_help="a smoke run of every arm, a few steps each, to /tmp")
    p.add_argument("--arms", nargs="*", default=None)
    p.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2])
    p.add_argument("--reference-seeds", type=int, nargs="*", default=None,
                   help="reference runs, one per round (default: as --seeds)")
    p.add_argument("--report-only", action="store_true", help="re-write the .md from the stored .json")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    store = open_study("lm_fast", args)
    result = store.doc
    result.setdefault("runs", {})
    names = args.arms if args.arms else list(ARMS)
    if args.report_only:
        store.save(report(result))
        return 0
    ref_seeds = args.seeds if args.reference_seeds is None else args.reference_seeds
    for i, seed in enumerate(args.seeds):  # round by round: every arm's seed, then the reference's
        for name in names:
            spec = ARMS.get(name) or EXPLORE[name]
            done = result["runs"].setdefault(name, {"spec": spec, "runs": []})
            stored_spec = done["spec"]  # what its stored runs were trained with
            done["spec"] = spec
            r, new = store.run(done["runs"], {"arm": spec, "seed": seed, "quick": args.quick},
                               lambda: run_arm(spec, seed, args.quick),
                               legacy=lambda old: {"arm": stored_spec, "seed": old["seed"], "quick": False},
                               replaces=lambda old: old["seed"] == seed)
            if new:
                print(f"{name} seed {seed}: {r['val_loss']:.4f} in {r['wall_s']:.1f} s wall "
                      f"({r['cpu_s']:.1f} CPU, {r['ms_per_step']:.1f} ms/step, load {r['loadavg']})", flush=True)
        if i < len(ref_seeds):
            ref_runs = result["runs"].setdefault("reference", {"spec": "bench/nanogpt_reference.py", "runs": []})
            ref_spec = {"arm": ref_runs["spec"], "seed": ref_seeds[i], "quick": args.quick}
            r, new = store.run(ref_runs["runs"], ref_spec, lambda: reference(ref_seeds[i], args.quick),
                               legacy=lambda old: {"arm": ref_runs["spec"], "seed": old["seed"], "quick": False},
                               replaces=lambda old: old["seed"] == ref_seeds[i])
            if new:
                print(f"reference seed {r['seed']}: {r['val_loss']:.4f} in {r['wall_s']:.1f} s wall "
                      f"({r['cpu_s']:.1f} CPU, load {r['loadavg']})", flush=True)
    result["date"] = utc_now()
    result["target"] = TARGET
    result["command"] = command_line("lm_fast.py", argv)
    loads = [r["loadavg"] for e in result["runs"].values() for r in e["runs"]]
    result["load_range"] = f"{min(loads):.1f}–{max(loads):.1f}" if loads else "?"
    store.save(report(result))
    print(report(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
