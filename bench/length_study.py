"""Length generalisation on shift: trained on inputs of 1-12 bytes, right on 13-24?

    python bench/length_study.py            # the stored result: minitf/experiments/stored/length_study.{json,md}
    python bench/length_study.py --quick    # a smoke run in under a minute (to /tmp/minitf-bench-length_study unless --out)
    python bench/length_study.py --only fast "fast + offset 12"   # some arms only (others kept)

Resumable (bench/store.py): a run already in the json with the same spec (config, settings and
seed) is skipped, so an interrupted study continues where it stopped; a changed arm is run again.

Every run trains like `python -m minitf train --task shift --repeats 0.33 --seed S` (torch.manual_seed(S),
then the model, then minitf.train): generated pairs with inputs of 1-12 printable bytes, a third of
them from a 2-6 byte sub-alphabet so bytes repeat; AdamW with warm-up and cosine decay; a fixed
number of steps (no early stop). Parameters are `count_parameters`.

Scored on fresh pairs per length bucket (1-12, 13-16, 17-20, 21-24), `make_pairs("shift", n,
seed + 4000 + bucket, min_len, max_len, repeats=0.33)`, none of whose inputs occur in training:
exact match = greedy generation to EOS equals the shifted input; also exact match per input length.

Arms: the shift-fast layout (coupled ids, 1 pre-norm layer, d_model 32, 2 heads of 16, FFN 128;
10,000 pairs, 600 steps) and the smallest solver's (d_model 6, one head of 6, no FFN, tied head;
20,000 pairs, 3,000 steps, as its recipe) and the same at d_model 8, each with
  - its own RoPE frequencies (base 10^4 for shift-fast, base 20 for the smallest),
  - frequencies for the task's period: harmonics of ω = 2π/27 (offsets -26…26 do not alias) and
    one near-zero frequency, as the hand-set solver's (2π/27, 1e-4),
  - randomised position offsets during training (Config.position_offset: every coupled id but
    TAB's 0 shifted by a random 0…N per row), so ids and TAB distances of 13-24-byte inputs are seen.
"""
from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from minitf import Config, Transformer, count_parameters, make_pairs, train  # noqa: E402
from minitf.core.data import make_splits  # noqa: E402
from minitf.core.evaluate import exact_match_by_length  # noqa: E402
from store import add_study_arguments, open_study  # noqa: E402

BUCKETS = ((1, 12), (13, 16), (17, 20), (21, 24))
SETTINGS = {"train_pairs": 10000, "repeats": 0.33, "steps": 600, "batch_size": 64, "lr": 1e-2,
            "warmup": 20, "test_pairs_per_bucket": 300, "test_repeats": 0.33}
QUICK = {"train_pairs": 500, "repeats": 0.33, "steps": 20, "batch_size": 32, "lr": 1e-2,
         "warmup": 5, "test_pairs_per_bucket": 20, "test_repeats": 0.33}
SEEDS = (0, 1, 2)
GOAL = 0.99
W = 2 * math.pi / 27  # one turn per 27 ids: relative offsets -26 … 26 stay apart
SLOW = 1e-4

FAST = dict(n_layers=1, d_model=32, n_heads=2, d_ff=128, norm_position="pre", dropout=0.0,
            position_ids="coupled")
SMALL = dict(n_layers=1, d_model=6, n_heads=1, d_ff=12, norm_position="pre", dropout=0.0,
             position_ids="coupled", tie_embeddings=True, ffn=False, rope_base=20.0)
# (rope_freqs, where given, replace the base's frequencies)
# head_dim 16 (8 frequencies): harmonics k·ω can shape any score over -13…13, so what training
# never constrains (offsets -23…-12 alias +4…+15, hidden by the mask) is free; ω alone is a smooth
# bump around its peak whatever the offset
FAST_H = tuple(W * k for k in range(1, 8)) + (SLOW,)
FAST_W = (W,) * 4 + (SLOW,) * 4
SMALL_W = (W, W, SLOW)                            # head_dim 6: 3 frequencies
D8 = {**SMALL, "d_model": 8, "d_ff": 16}
D8_W = (W, W, W, SLOW)                            # head_dim 8: 4 frequencies
D8_H = (W, 2 * W, W, SLOW)
# the small layouts train as the smallest solver's recipe does: 20,000 pairs, 3,000 steps
LONGER = {"train_pairs": 20000, "steps": 3000, "warmup": 50}

# name → (config fields, settings changed, what it is)
ARMS = {
    "fast": (FAST, {}, "the shift-fast layout (RoPE base 10⁴), 29,408 parameters"),
    "fast + offset 12": ({**FAST, "position_offset": 12}, {}, "ids shifted by 0…12 in training"),
    "fast + offset 24": ({**FAST, "position_offset": 24}, {}, "ids shifted by 0…24 in training"),
    "fast, harmonics of ω": ({**FAST, "rope_freqs": FAST_H}, {}, "θ = k·2π/27 (k 1…7) and 1e-4"),
    "fast, harmonics of ω + offset 12": ({**FAST, "rope_freqs": FAST_H, "position_offset": 12},
                                         {}, "both"),
    "fast, ω=2π/27": ({**FAST, "rope_freqs": FAST_W}, {}, "θ = 2π/27 (4 pairs) and 1e-4 (4)"),
    "fast, ω=2π/27 + offset 12": ({**FAST, "rope_freqs": FAST_W, "position_offset": 12}, {},
                                  "both"),
    "fast, ω=2π/27 + offset 24": ({**FAST, "rope_freqs": FAST_W, "position_offset": 24}, {},
                                  "both, ids shifted by 0…24"),
    "small": (SMALL, LONGER, "the smallest solver's layout (base 20), 1,984 parameters"),
    "small + offset 12": ({**SMALL, "position_offset": 12}, LONGER,
                          "ids shifted by 0…12 in training"),
    "small, ω=2π/27": ({**SMALL, "rope_freqs": SMALL_W}, LONGER, "θ = 2π/27, 2π/27, 1e-4"),
    "small, ω=2π/27 + offset 12": ({**SMALL, "rope_freqs": SMALL_W, "position_offset": 12}, LONGER,
                                   "both"),
    "small + offset 12, 6,000 steps": ({**SMALL, "position_offset": 12},
                                       {**LONGER, "steps": 6000}, "twice the training"),
    "d8": (D8, LONGER, "the same layout at d_model 8 (one head of 8, base 20), 2,624 parameters"),
    "d8 + offset 12": ({**D8, "position_offset": 12}, LONGER, "ids shifted by 0…12 in training"),
    "d8, ω=2π/27": ({**D8, "rope_freqs": D8_W}, LONGER, "θ = 2π/27 (3 pairs) and 1e-4"),
    "d8, ω and 2ω": ({**D8, "rope_freqs": D8_H}, LONGER, "θ = 2π/27, 4π/27, 2π/27, 1e-4"),
}


def config_of(fields: dict) -> Config:
    return Config(**{k: (tuple(v) if k == "rope_freqs" else v) for k, v in fields.items()})


def test_pairs(train_pairs, n: int, seed: int, repeats: float) -> list:
    seen = [p.input for p in train_pairs]
    out = []
    for i, (lo, hi) in enumerate(BUCKETS):
        out += make_pairs("shift", n, seed + 4000 + i, min_len=lo, max_len=hi, repeats=repeats,
                          exclude=seen)
    return out


def bucket_of(n: int) -> str:
    return next(f"{lo}-{hi}" for lo, hi in BUCKETS if lo <= n <= hi)


def run_one(fields: dict, s: dict, seed: int) -> dict:
    torch.manual_seed(seed)  # as `python -m minitf train --seed`: the weights, then the data
    model = Transformer(config_of(fields))
    train_pairs, _ = make_splits("shift", s["train_pairs"], 0, seed, repeats=s["repeats"])
    cpu = time.process_time()
    train(model, train_pairs, None, steps=s["steps"], batch_size=s["batch_size"], lr=s["lr"],
          warmup=s["warmup"], seed=seed, progress=False)
    cpu = time.process_time() - cpu
    pairs = test_pairs(train_pairs, s["test_pairs_per_bucket"], seed, s["test_repeats"])
    by_len = exact_match_by_length(model, pairs)
    counts = {}
    for p in pairs:
        counts[len(p.input)] = counts.get(len(p.input), 0) + 1
    buckets = {}
    for lo, hi in BUCKETS:
        n = sum(counts.get(k, 0) for k in range(lo, hi + 1))
        right = sum(by_len.get(k, 0) * counts.get(k, 0) for k in range(lo, hi + 1))
        buckets[f"{lo}-{hi}"] = round(right / n, 4)
    long_n = sum(c for k, c in counts.items() if k > 12)
    long_right = sum(by_len[k] * c for k, c in counts.items() if k > 12)
    return {"params": count_parameters(model), "buckets": buckets,
            "exact_13_24": round(long_right / long_n, 4),
            "by_length": {str(k): round(v, 4) for k, v in by_len.items()},
            "train_cpu_s": round(cpu, 2), "loadavg": os.getloadavg()[0]}


def summarise(runs: list[dict]) -> dict:
    names = list(runs[0]["buckets"])
    longs = [r["exact_13_24"] for r in runs]
    return {"params": runs[0]["params"], "seeds": [r["seed"] for r in runs],
            "buckets": {b: {"min": min(r["buckets"][b] for r in runs),
                            "max": max(r["buckets"][b] for r in runs),
                            "median": statistics.median(r["buckets"][b] for r in runs)}
                        for b in names},
            "exact_13_24_min": min(longs), "exact_13_24_median": statistics.median(longs),
            "goal_seeds": sum(x >= GOAL for x in longs),
            "train_cpu_s_median": statistics.median(r["train_cpu_s"] for r in runs)}


def cell(b: dict) -> str:
    if b["min"] == b["max"]:
        return f"{b['median']:.1%}"
    return f"{b['median']:.1%} ({b['min']:.1%}–{b['max']:.1%})"


def render(doc: dict) -> str:
    s = doc["settings"]
    L = ["# Length generalisation on shift: trained on 1–12 bytes, tested on 1–24", "",
         f"`{doc['command']}` ({doc['date']}; {doc['machine']}). Every run: {s['train_pairs']:,} "
         f"generated training pairs (unless the table says otherwise), inputs of 1–12 printable "
         f"bytes, {s['repeats']:.0%} from a 2–6 byte sub-alphabet; batch {s['batch_size']}, lr "
         f"{s['lr']:g}, warm-up {s['warmup']} (50 for the small layouts), no early stop. Exact match on "
         f"{s['test_pairs_per_bucket']} fresh pairs per bucket per seed ({s['test_repeats']:.0%} "
         "with repeated bytes, none seen in training): **median (min–max) over the seeds**. "
         "Goal: ≥ 99 % on 13–24 for every seed.", "",
         "| arm | params | training pairs | steps | seeds | " + " | ".join(f"{lo}–{hi}" for lo, hi in BUCKETS)
         + " | seeds ≥ 99 % on 13–24 | CPU s |",
         "|---|---:|---:|---:|---:|" + "---|" * len(BUCKETS) + "---:|---:|"]
    for name, c in doc["arms"].items():
        L.append(f"| {name}: {c['what']} | {c['params']:,} | {c.get('train_pairs', s['train_pairs']):,} | {c['steps']:,} | "
                 f"{len(c['seeds'])} | "
                 + " | ".join(cell(c["buckets"][f"{lo}-{hi}"]) for lo, hi in BUCKETS)
                 + f" | {c['goal_seeds']}/{len(c['seeds'])} | {c['train_cpu_s_median']:.0f} |")
    L += ["", "## Exact match per input length (median over the seeds)", "",
          "| arm | " + " | ".join(str(n) for n in range(12, 25)) + " |",
          "|---|" + "---|" * 13]
    for name, c in doc["arms"].items():
        runs = [doc["runs"][k] for k in c["runs"]]
        cells = [f"{statistics.median(r['by_length'].get(str(n), float('nan')) for r in runs):.0%}"
                 for n in range(12, 25)]
        L.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(L) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_study_arguments(p, "length_study")
    p.add_argument("--only", nargs="+", default=None, metavar="ARM", help="run these arms only")
    p.add_argument("--seeds", type=int, nargs="+", default=None)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    base = QUICK if args.quick else SETTINGS
    seeds = tuple(args.seeds or ((0,) if args.quick else SEEDS))
    store = open_study("length_study", args)
    doc = store.doc
    doc.update({"command": "python bench/length_study.py" + (" --quick" if args.quick else ""),
                "settings": base, "buckets": [f"{lo}-{hi}" for lo, hi in BUCKETS],
                "machine": f"{platform.machine()}, torch {torch.__version__}, 1 thread",
                "date": time.strftime("%Y-%m-%d")})
    doc.setdefault("runs", {})
    doc.setdefault("arms", {})
    arms = {n: a for n, a in ARMS.items() if args.only is None or n in args.only}
    unknown = set(args.only or ()) - set(ARMS)
    if unknown:
        p.error(f"unknown arms {sorted(unknown)}; choose from {list(ARMS)}")

    def save():
        store.save(render(doc))

    for name, (fields, changed, what) in arms.items():
        s = {**base, **(changed if not args.quick else {})}
        fields = {k: (list(v) if isinstance(v, tuple) else v) for k, v in fields.items()}
        keys = []
        for seed in seeds:
            key, t0 = f"{name}/seed{seed}", time.perf_counter()
            spec = {"config": fields, "settings": s, "seed": seed}
            r, new = store.run(doc["runs"], spec, lambda: {**spec, **run_one(fields, s, seed)}, key=key,
                               legacy=lambda old: {k: old[k] for k in spec}, markdown=lambda: render(doc))
            if new:
                print(f"{key}: {r['params']:,} params, {r['buckets']}, "
                      f"{time.perf_counter() - t0:.0f} s", flush=True)
            keys.append(key)
        doc["arms"][name] = {"what": what, "config": fields, "steps": s["steps"],
                             "train_pairs": s["train_pairs"], "runs": keys,
                             **summarise([doc["runs"][k] for k in keys])}
        save()
    doc["arms"] = {n: doc["arms"][n] for n in list(ARMS) + list(doc["arms"]) if n in doc["arms"]}
    save()
    print(f"wrote {store.path} and {store.markdown_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
