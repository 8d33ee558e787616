"""The ablation ladder: what each component of the Transformer buys, measured on copy and shift.

    python bench/ablation.py            # the stored result: minitf/experiments/stored/ablation.{json,md}
    python bench/ablation.py --quick    # a smoke run in seconds (to /tmp/minitf-bench-ablation unless --out)
    python bench/ablation.py --tasks shift --seeds 0    # a part; stored runs are kept

The whole ladder: 102 runs, about 18 min of CPU time on one thread of a loaded 2-core machine.

One base model that learns both tasks in seconds; every rung changes ONE thing in it and trains
again with the same data, steps and learning rate (3 random seeds each: the initial weights and
the batch order; the data stay the same). Per run: held-out exact match (greedy generation to
EOS), loss and character accuracy, next to the loss of predictors that ignore the input
(`minitf.baselines`), and the training-loss curve (what a 2–4 s run in a notebook would show).

Data, per task (SETTINGS): 4,000 generated pairs (`minitf.make_pairs(task, 4000, seed=1000,
max_len=5, repeats=0.33)`: a third of the inputs from a 2–6 byte sub-alphabet, so bytes repeat)
and 500 fresh held-out pairs (seed 2000, the same mix of repeats) none of whose inputs occur in
training. Inputs are 1–5 printable bytes.

Resumable (bench/store.py): a run already in the json with the same spec (task, variant, random
seed, training settings and variant config) is skipped, so an interrupted ladder continues where it
stopped, and a variant whose config changed is trained again. The markdown is rendered from the
json with `minitf.results` (the loader the notebooks use).
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from minitf import Config, Transformer, count_parameters, evaluate, make_pairs, train  # noqa: E402
from minitf.core.baselines import baseline_losses  # noqa: E402
from minitf.experiments.results import Ablation  # noqa: E402
from store import SPEC, add_study_arguments, config_spec, open_study, spec_hash  # noqa: E402

TASKS = ("copy", "shift")
MAX_LEN = 5
SETTINGS = {"train_pairs": 4000, "held_out_pairs": 500, "max_len": MAX_LEN, "repeats": 0.33,
            "steps": 500, "batch_size": 128, "lr": 1e-2, "warmup": 50}
QUICK = {"train_pairs": 300, "held_out_pairs": 40, "max_len": 4, "repeats": 0.33,
         "steps": 20, "batch_size": 32, "lr": 1e-2, "warmup": 5}
SEEDS = (0, 1, 2)
CURVE_EVERY = 25  # the stored training-loss curve: the mean of every 25 steps

# The base: small enough to train in seconds, big enough to learn both tasks for most random seeds
# (with 2 layers, whether copy is learned in time depended on the random seed: 99 % or 24–38 %)
BASE = Config(d_model=16, n_heads=4, d_ff=64, n_layers=3, norm_position="pre", dropout=0.0)
# The tiny model's layout (2 post-norm layers, d_ff = 2·d_model, the seed's dropout rule) for the 2×2
TINY = Config()

# variant name → (the config, what changed); the base appears once and is shared by its rungs
VARIANTS = {
    "base": (BASE, "the base: d_model 16, 4 heads of 4, 3 pre-norm layers, LayerNorm, RoPE, FFN 16→64→16"),
    "no positions": (BASE.replace(positional="none"), "positional='none'"),
    "sinusoidal": (BASE.replace(positional="sinusoidal"), "positional='sinusoidal' (added to the embedding)"),
    "no FFN": (BASE.replace(ffn=False), "ffn=False: attention-only blocks"),
    "no residual": (BASE.replace(residual=False), "residual=False: h = f(LN(h))"),
    "post-norm": (BASE.replace(norm_position="post"), "norm_position='post'"),
    "RMSNorm": (BASE.replace(norm="rms"), "norm='rms'"),
    "8 heads of 2": (BASE.replace(n_heads=8), "head_dim 2 at d_model 16"),
    "2 heads of 8": (BASE.replace(n_heads=2), "head_dim 8 at d_model 16"),
    "d_model 4": (BASE.replace(d_model=4, n_heads=1, d_ff=16), "d_model 4: 1 head of 4, FFN 4→16→4"),
    "d_model 8": (BASE.replace(d_model=8, n_heads=2, d_ff=32), "d_model 8: 2 heads of 4, FFN 8→32→8"),
    "d_model 32": (BASE.replace(d_model=32, n_heads=8, d_ff=128), "d_model 32: 8 heads of 4, FFN 32→128→32"),
    "no causal mask": (BASE.replace(causal=False), "causal=False: each position sees the future"),
    "tiny: 4 = 2×2": (TINY, "the tiny model, Config(): d_model 4, 2 heads of 2, 2 post-norm layers"),
    "4 = 1×4": (TINY.replace(n_heads=1), "the tiny layout, d_model 4, 1 head of 4"),
    "8 = 4×2": (TINY.replace(d_model=8, n_heads=4, d_ff=16), "the tiny layout, d_model 8, 4 heads of 2"),
    "8 = 1×8": (TINY.replace(d_model=8, n_heads=1, d_ff=16), "the tiny layout, d_model 8, 1 head of 8"),
}

# rung → its variants, in the order a table shows them
RUNGS = {
    "positions": ["no positions", "base", "sinusoidal"],
    "FFN": ["base", "no FFN"],
    "residual": ["base", "no residual"],
    "norm position": ["base", "post-norm"],
    "norm": ["base", "RMSNorm"],
    "head_dim": ["8 heads of 2", "base", "2 heads of 8"],
    "d_model": ["d_model 4", "d_model 8", "base", "d_model 32"],
    "causal mask": ["base", "no causal mask"],
    "tiny 2×2": ["tiny: 4 = 2×2", "4 = 1×4", "8 = 4×2", "8 = 1×8"],
}


def data(task: str, s: dict):
    train_pairs = make_pairs(task, s["train_pairs"], seed=1000, max_len=s["max_len"], repeats=s["repeats"])
    held_out = make_pairs(task, s["held_out_pairs"], seed=2000, max_len=s["max_len"],
                          repeats=s["repeats"], exclude=[p.input for p in train_pairs])
    return train_pairs, held_out


def run_one(config: Config, train_pairs, held_out, s: dict, seed: int) -> dict:
    torch.manual_seed(seed)
    model = Transformer(config)
    cpu = time.process_time()
    history = train(model, train_pairs, steps=s["steps"], batch_size=s["batch_size"], lr=s["lr"],
                    warmup=s["warmup"], seed=seed, progress=False)
    cpu = time.process_time() - cpu
    metrics = evaluate(model, held_out)
    every = CURVE_EVERY
    curve = [round(sum(history.loss[i:i + every]) / len(history.loss[i:i + every]), 4)
             for i in range(0, len(history.loss), every)]
    return {"params": count_parameters(model), "train_seconds": round(history.seconds, 2),
            "train_cpu_seconds": round(cpu, 2), **{k: round(v, 4) for k, v in metrics.items()},
            "train_loss_curve": curve}


def spec_of(task: str, variant: str, config: dict | None, settings: dict | None, seed: int) -> dict:
    """Everything that decides one run of the ladder (bench/store.py keys the run by its hash);
    config: Config.to_dict() as stored (a field Config gained since is at its default)."""
    return {"task": task, "variant": variant, "settings": settings, "seed": seed,
            "config": None if config is None else config_spec(Config.from_dict(config))}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_study_arguments(p, "ablation")
    p.add_argument("--tasks", nargs="+", default=list(TASKS), choices=TASKS)
    p.add_argument("--variants", nargs="+", choices=list(VARIANTS), help="only these variants")
    p.add_argument("--seeds", type=int, nargs="+", help=f"random seeds (default {list(SEEDS)})")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    s = QUICK if args.quick else SETTINGS
    seeds = args.seeds or ((0,) if args.quick else SEEDS)
    store = open_study("ablation", args)
    doc = store.doc
    stored = doc.get("variants", {})  # the variants' configs the stored runs were trained with
    for r in doc.get("runs", []):  # a run stored before bench/store.py: its spec from its fields
        r.setdefault(SPEC, spec_hash(spec_of(r["task"], r["variant"], stored.get(r["variant"], {}).get("config"),
                                             r.get("settings"), r["seed"])))
    # a run of a variant whose config has changed since is dropped (and, if asked for, run again)
    doc["runs"] = [r for r in doc.get("runs", []) if r["variant"] in VARIANTS and r[SPEC] == spec_hash(
        spec_of(r["task"], r["variant"], VARIANTS[r["variant"]][0].to_dict(), r.get("settings"), r["seed"]))]
    doc.update({"what": __doc__.split("\n")[0], "settings": s, "threads": args.threads,
                "machine": {"python": platform.python_version(), "torch": torch.__version__,
                            "cpu_capability": torch.backends.cpu.get_cpu_capability(),
                            "cores": os.cpu_count()},
                "variants": {name: {"config": cfg.to_dict(), "change": what}
                             for name, (cfg, what) in VARIANTS.items()},
                "rungs": RUNGS})
    doc.setdefault("baselines", {})
    runs = doc["runs"]
    names = args.variants or list(VARIANTS)
    start, before = time.perf_counter(), len(runs)
    for task in args.tasks:
        train_pairs, held_out = data(task, s)
        b = baseline_losses(held_out, train_pairs)
        doc["baselines"][task] = {"uniform_256": b.uniform_256, "uniform_96": b.uniform_96,
                                  "unigram": b.unigram, "length_oracle": b.length_oracle,
                                  "held_out_pairs": b.n_pairs, "held_out_targets": b.n_targets}
        for name in names:
            for seed in seeds:
                spec = spec_of(task, name, VARIANTS[name][0].to_dict(), s, seed)
                record, new = store.run(
                    runs, spec, lambda: {"task": task, "variant": name, "seed": seed, "settings": s,
                                         **run_one(VARIANTS[name][0], train_pairs, held_out, s, seed)})
                if not new:
                    continue
                result = record
                print(f"{time.perf_counter() - start:6.0f} s  {task:5s} {name:16s} seed {seed}: "
                      f"exact {result['exact_match']:.3f} loss {result['loss']:.3f} "
                      f"({result['train_seconds']:.1f} s, cpu {result['train_cpu_seconds']:.1f} s)", flush=True)
    if len(runs) > before or "date" not in doc:  # the date of the last training, not of a re-render
        doc["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    store.save(Ablation.from_dict(doc).markdown(command="python bench/ablation.py"))
    print(f"wrote {store.path} and {store.markdown_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
