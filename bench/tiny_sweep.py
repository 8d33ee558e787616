"""How small can a Transformer be and still solve shift? A sweep at <= 12,000 parameters.

    python bench/tiny_sweep.py            # the stored result: minitf/experiments/stored/tiny_sweep.{json,md}
    python bench/tiny_sweep.py --quick    # a smoke run in a minute (to /tmp/minitf-bench-tiny_sweep unless --out)

About 30 min of CPU time on one thread for the training (50 min of wall time on a loaded 2-core
machine; the evaluations come on top).
Resumable (bench/store.py): a run already in the json with the same spec (config, training
settings and seed), under any name, is not trained again, so an interrupted sweep continues where
it stopped; a changed configuration is run again.

Every run trains like `python -m minitf train --task shift --repeats 0.33` with the same seed
(torch.manual_seed(seed), then the model, then minitf.train): 20,000 generated pairs, inputs of
1-12 printable bytes, a third of them from a 2-6 byte sub-alphabet so bytes repeat; AdamW,
batch 64, warm-up 50 steps then cosine decay. The random seed sets the data, the initial weights
and the batch order. Parameters are `count_parameters` (every parameter, the embedding and the
head's biases included; a tied matrix once).

Scored on 1,000 fresh held-out pairs per seed (`make_pairs(..., seed + 3000, repeats=0.33)`, none
of whose inputs occur in training or validation): held-out exact match = greedy generation to
EOS equals the shifted input. A small validation set (200 uniform pairs) is scored every 250
steps to find the first step with >= 99 % exact match.

Three groups:
  pareto    coupled position ids, tied embeddings, one pre-norm layer with one head of
            head_dim >= 4 (RoPE base 20), at widths 4-8: the smallest configurations
  sequence  the usual 0, 1, 2, ... numbering at 3.5k and 8.8k parameters, two layers, longer
  ablation  from the smallest solver of the pareto group (median exact >= 99 %), one ingredient
            changed at a time, and back to the seed model (Config()) with coupling and tying added
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from minitf import Config, Transformer, count_parameters, evaluate, make_pairs, train  # noqa: E402
from minitf.core.data import make_splits  # noqa: E402
from store import add_study_arguments, open_study  # noqa: E402

SETTINGS = {"train_pairs": 20000, "val_pairs": 200, "test_pairs": 1000, "repeats": 0.33,
            "steps": 3000, "batch_size": 64, "lr": 1e-2, "warmup": 50, "eval_every": 250}
QUICK = {"train_pairs": 500, "val_pairs": 20, "test_pairs": 50, "repeats": 0.33,
         "steps": 30, "batch_size": 32, "lr": 1e-2, "warmup": 5, "eval_every": 15}
SEEDS = (0, 1, 2)
SOLVED = 0.99

# the pareto group's layout; `tiny(d)` is one pre-norm layer, one head, coupled ids, tied head
LAYOUT = dict(n_layers=1, norm_position="pre", position_ids="coupled", tie_embeddings=True,
              rope_base=20.0, dropout=0.0)


def tiny(d: int, **changes) -> dict:
    """Config fields of a width-d model of the pareto layout (head_dim 4 below d 6, else d)."""
    head = dict(n_heads=1, head_dim=4 if d < 6 else d)
    return {"d_model": d, "d_ff": 2 * d, **head, **LAYOUT, **changes}


# name → (config fields, settings changed, what it is)
PARETO = {
    "d4": (tiny(4), {}, "d_model 4"),
    "d4, 2× steps": (tiny(4), {"steps": 6000}, "d_model 4, 6,000 steps"),
    "d5": (tiny(5), {}, "d_model 5 (one head of 4)"),
    "d6": (tiny(6), {}, "d_model 6"),
    "d6, no FFN": (tiny(6, ffn=False), {}, "d_model 6, attention only"),
    "d8": (tiny(8), {}, "d_model 8"),
}
SEQUENCE = {  # the usual numbering needs depth: two layers, more heads, longer training
    "seq d8 2L": (dict(d_model=8, n_heads=2, n_layers=2, d_ff=16, norm_position="pre",
                       tie_embeddings=True, rope_base=20.0, dropout=0.0), {"steps": 4000},
                  "sequence ids, d 8, 2 layers, 2 heads of 4, tied"),
    "seq d16 2L": (dict(d_model=16, n_heads=2, n_layers=2, d_ff=32, norm_position="pre",
                        tie_embeddings=True, rope_base=40.0, dropout=0.0), {"steps": 4000},
                   "sequence ids, d 16, 2 layers, 2 heads of 8, tied"),
}
SEQUENCE_SEEDS = (0, 1)


def ablation(solver: dict) -> dict:
    """One change at a time from the smallest solver, then the seed model with ingredients added."""
    return {
        "solver": (solver, {}, "the smallest solver"),
        "− coupled ids": ({**solver, "position_ids": "sequence"}, {}, "positions 0, 1, 2, …"),
        "− tied head": ({**solver, "tie_embeddings": False}, {}, "the head its own matrix"),
        "− 2+ frequencies (base 10⁴)": ({**solver, "rope_base": 10000.0}, {},
                                        "RoPE base 10⁴: θ = 1 rad, then ≈ 0"),
        "− one wide head (heads of 2)": ({**solver, "n_heads": solver["head_dim"] // 2, "head_dim": 2},
                                         {}, "heads of head_dim 2: θ = 1 rad at any base"),
        "post-norm": ({**solver, "norm_position": "post"}, {}, "post-norm, as the seed"),
        "+ a second layer": ({**solver, "n_layers": 2}, {}, "two layers"),
        "seed": ({}, {}, "Config(): d 4, 2 post-norm layers, heads of 2, sequence ids, untied"),
        "seed + coupled": ({"position_ids": "coupled"}, {}, "the seed with coupled ids"),
        "seed + coupled + tied": ({"position_ids": "coupled", "tie_embeddings": True}, {},
                                  "the seed with coupled ids and a tied head"),
    }


def held_out(train_pairs, val_pairs, n: int, seed: int, repeats: float):
    """n fresh pairs with the training mix of repeated bytes, none seen in training or validation."""
    seen = [p.input for p in train_pairs] + [p.input for p in val_pairs]
    return make_pairs("shift", n, seed + 3000, repeats=repeats, exclude=seen)


def run_one(fields: dict, s: dict, seed: int) -> dict:
    torch.manual_seed(seed)  # as `python -m minitf train --seed`: the weights, then the data
    model = Transformer(Config(**fields))
    train_pairs, val_pairs = make_splits("shift", s["train_pairs"], s["val_pairs"], seed,
                                         repeats=s["repeats"])
    test = held_out(train_pairs, val_pairs, s["test_pairs"], seed, s["repeats"])
    wall, cpu = time.perf_counter(), time.process_time()
    hist = train(model, train_pairs, val_pairs, steps=s["steps"], batch_size=s["batch_size"],
                 lr=s["lr"], warmup=s["warmup"], seed=seed, eval_every=s["eval_every"], progress=False)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    metrics = evaluate(model, test)
    first = next((v["step"] for v in hist.val if v["exact_match"] >= SOLVED), None)
    return {"params": count_parameters(model), "exact_match": metrics["exact_match"],
            "char_accuracy": metrics["char_accuracy"], "loss": metrics["loss"],
            "val_curve": [[v["step"], round(v["exact_match"], 4)] for v in hist.val],
            "first_step_99": first, "train_wall_s": round(wall, 2), "train_cpu_s": round(cpu, 2),
            "loadavg": os.getloadavg()[0]}


def summarise(runs: list[dict]) -> dict:
    ex = [r["exact_match"] for r in runs]
    firsts = [r["first_step_99"] for r in runs if r["first_step_99"] is not None]
    return {"params": runs[0]["params"], "seeds": [r["seed"] for r in runs],
            "exact_median": statistics.median(ex), "exact_min": min(ex), "exact_max": max(ex),
            "solved_seeds": sum(e >= SOLVED for e in ex),
            "first_step_99_median": statistics.median(firsts) if firsts else None,
            "train_cpu_s_median": statistics.median(r["train_cpu_s"] for r in runs)}


def smallest_solver(doc: dict) -> str | None:
    """The pareto configuration with the fewest parameters whose median exact match is >= 99 %."""
    solved = [(c["params"], name) for name, c in doc["configs"].items()
              if c["group"] == "pareto" and c["exact_median"] >= SOLVED]
    return min(solved)[1] if solved else None


def pareto_front(configs: dict) -> list[str]:
    """Configurations no smaller one matches: sorted by parameters, each beats all smaller ones."""
    front, best = [], -1.0
    for name, c in sorted(configs.items(), key=lambda kv: (kv[1]["params"], -kv[1]["exact_median"])):
        if c["exact_median"] > best:
            front.append(name)
            best = c["exact_median"]
    return front


def render(doc: dict) -> str:
    s = doc["settings"]
    configs = doc["configs"]
    L = ["# How small can it be? The tiny shift sweep", "",
         f"`{doc['command']}` ({doc['date']}; {doc['machine']}). Shift task, inputs of 1–12 printable "
         f"bytes; {s['train_pairs']:,} training pairs with {s['repeats']:.0%} repeated-byte inputs, "
         f"{s['steps']:,} steps (unless stated), batch {s['batch_size']}, lr {s['lr']:g}. Held-out exact "
         f"match on {s['test_pairs']:,} fresh pairs per seed (repeated bytes included), **median "
         f"(min–max) over the seeds**. Parameters: `count_parameters`, embeddings included. First step "
         "≥ 99 %: the first validation (200 uniform pairs, every 250 steps) at 99 % or more, median "
         "over the seeds that got there. CPU seconds of training on one thread (validation "
         "included), median.", "",
         "| group | configuration | params | exact match | solved seeds | first step ≥ 99 % | CPU s |",
         "|---|---|---:|---|---:|---:|---:|"]
    for name, c in sorted(configs.items(), key=lambda kv: (kv[1]["group"] != "pareto",
                                                          kv[1]["group"], kv[1]["params"])):
        if c["group"] == "ablation":
            continue
        L.append(row(name, c))
    solver = doc.get("smallest_solver")
    L += ["", "**Pareto front** (parameters → median held-out exact match; every configuration above "
          "and the ablation's): " + " → ".join(
              f"{n} ({configs[n]['params']:,}: {configs[n]['exact_median']:.1%})"
              for n in doc.get("pareto_front", [])), ""]
    if solver:
        c = configs[solver]
        L += [f"**Smallest solver:** {solver}, {c['params']:,} parameters, held-out exact match "
              f"{c['exact_median']:.1%} median ({c['exact_min']:.1%}–{c['exact_max']:.1%}) over "
              f"{len(c['seeds'])} seeds.", ""]
    solo = [(c["params"], n) for n, c in configs.items() if c["solved_seeds"]]
    if solo:
        n = min(solo)[1]
        L += [f"**Smallest configuration with at least one solved seed:** {n}, {configs[n]['params']:,} "
              f"parameters, {configs[n]['solved_seeds']} of {len(configs[n]['seeds'])} seeds ≥ 99 % "
              f"(best {configs[n]['exact_max']:.1%}).", ""]
    if not solver:
        L += ["**Smallest solver:** no configuration of the pareto group reached a median of "
              "99 %; the ablation starts from d8.", ""]
    if any(c["group"] == "ablation" for c in configs.values()):
        L += ["## Ablation: from the smallest solver, one change at a time, and back to the seed", "",
              "| change | params | exact match | solved seeds | first step ≥ 99 % | CPU s |",
              "|---|---:|---|---:|---:|---:|"]
        for name, c in configs.items():
            if c["group"] == "ablation":
                L.append(row(name, c, group=False))
    return "\n".join(L) + "\n"


def row(name: str, c: dict, group: bool = True) -> str:
    first = "–" if c["first_step_99_median"] is None else f"{c['first_step_99_median']:,.0f}"
    exact = f"{c['exact_median']:.1%} ({c['exact_min']:.1%}–{c['exact_max']:.1%})"
    cells = ([c["group"]] if group else []) + [f"{name}: {c['what']}" if group else
                                               f"{name} ({c['what']})", f"{c['params']:,}", exact,
                                               f"{c['solved_seeds']}/{len(c['seeds'])}", first,
                                               f"{c['train_cpu_s_median']:.0f}"]
    return "| " + " | ".join(cells) + " |"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_study_arguments(p, "tiny_sweep")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    base = QUICK if args.quick else SETTINGS
    seeds, seq_seeds = ((0,), (0,)) if args.quick else (SEEDS, SEQUENCE_SEEDS)
    store = open_study("tiny_sweep", args)
    doc = store.doc
    doc.update({"command": "python bench/tiny_sweep.py" + (" --quick" if args.quick else ""),
                "settings": base, "machine": f"{platform.machine()}, torch {torch.__version__}, 1 thread",
                "date": time.strftime("%Y-%m-%d")})
    doc.setdefault("runs", {})
    doc.setdefault("configs", {})

    def save():
        store.save(render(doc))

    def group(name_specs: dict, group_name: str, group_seeds):
        for name, (fields, changed, what) in name_specs.items():
            s = {**base, **(changed if not args.quick else {})}
            runs = []
            for seed in group_seeds:
                key, t0 = f"{group_name}/{name}/seed{seed}", time.perf_counter()
                spec = {"config": fields, "settings": s, "seed": seed}
                legacy = lambda old: {k: old[k] for k in spec}  # noqa: E731 (a run stored before the hash)
                same = store.find(doc["runs"], spec, legacy=legacy)
                if same is not None and store.find(doc["runs"], spec, key, legacy) is None:
                    doc["runs"][key] = same  # the same run under another name: not trained twice
                r, new = store.run(doc["runs"], spec, lambda: {**spec, **run_one(fields, s, seed)}, key=key,
                                   legacy=legacy, markdown=lambda: render(doc))
                if new:
                    print(f"{key}: {r['params']:,} params, exact {r['exact_match']:.3f}, "
                          f"{time.perf_counter() - t0:.0f} s", flush=True)
                runs.append(r)
            doc["configs"][name] = {"group": group_name, "what": what, "config": fields,
                                    "steps": s["steps"], **summarise(runs)}
            doc["pareto_front"] = pareto_front(doc["configs"])
            doc["smallest_solver"] = smallest_solver(doc)
            save()

    group(PARETO, "pareto", seeds)
    solver = doc["smallest_solver"]
    if solver is None:
        print("no pareto configuration reached a median of 99 %: the ablation starts from d8")
    solver_fields = doc["configs"][solver or "d8"]["config"]
    group(ablation(solver_fields), "ablation", seeds)
    group(SEQUENCE, "sequence", seq_seeds)
    doc["smallest_solver"] = solver
    save()
    print(f"wrote {store.path} and {store.markdown_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
