"""Notebook 08's training run on ten random starts: when does the small solver learn to shift?

    python bench/train_seeds.py           # about a minute: minitf/experiments/stored/train_seeds.json and .md
    python bench/train_seeds.py --quick   # two seeds, 50 steps, to /tmp/minitf-bench-train_seeds

The recipe is notebook 08's (minitf.experiments.train_seeds.RECIPE: 2,920 parameters, positions
numbered 0, 1, 2, …, inputs of 8 bytes, 300 steps), trained by minitf.train with minitf's own pieces, the model and the data
order seeded with each seed in turn; the held-out exact match is measured every 25 steps on 08's
200 held-out pairs. Notebook 08 reads the spread (`minitf.experiments.train_seeds.load()`), and
tests/test_training_parts.py holds its sentences to it. `make bench` runs it (its `train_seeds`
section).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

import torch  # noqa: E402

import minitf  # noqa: E402
from minitf.experiments.train_seeds import RECIPE, SeedSpread  # noqa: E402
from store import add_study_arguments, open_study  # noqa: E402

COMMAND = "python bench/train_seeds.py"
LEVELS = (0.5, 0.9)  # the exact match whose first step the report gives per seed


def run(seed: int, train_pairs, val_pairs, steps: int) -> dict:
    torch.manual_seed(seed)
    model = minitf.Transformer(minitf.Config(**RECIPE["config"]))
    history = minitf.train(model, train_pairs, val_pairs, steps=steps, batch_size=RECIPE["batch_size"],
                           lr=RECIPE["lr"], warmup=RECIPE["warmup"], weight_decay=RECIPE["weight_decay"],
                           eval_every=RECIPE["eval_every"], seed=seed, progress=False)
    return {"seed": seed, "steps": [v["step"] for v in history.val],
            "exact_match": [v["exact_match"] for v in history.val],
            "loss": [round(v["loss"], 5) for v in history.val], "seconds": round(history.seconds, 2)}


def report(doc: dict) -> str:
    spread = SeedSpread(doc["runs"], doc["command"])
    firsts = {level: spread.first_step(level) for level in LEVELS}
    L = ["# Notebook 08's training run from ten random starts", "",
         f"`{doc['command']}` ({doc['seconds']} s, torch {doc['torch']}, one thread): notebook 08's recipe "
         f"({RECIPE['steps']} steps, batch {RECIPE['batch_size']}, lr {RECIPE['lr']:g}), the model and the "
         f"data order seeded with each seed; held-out exact match on {RECIPE['data']['n_val']} pairs every "
         f"{RECIPE['eval_every']} steps. A float32 run: the step a seed first passes a level moves with the "
         "CPU's last bits; the spread over seeds is the finding.", "",
         "| seed | " + " | ".join(f"first step ≥ {level:.0%}" for level in LEVELS) + " | exact match at the end |",
         "|---:|" + "---:|" * len(LEVELS) + "---:|"]
    for seed, final in spread.final().items():
        L.append(f"| {seed} | " + " | ".join(str(firsts[level][seed] or "—") for level in LEVELS)
                 + f" | {final:.3f} |")
    return "\n".join(L)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_study_arguments(p, "train_seeds", quick_help="two seeds for 50 steps, to /tmp")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    data = RECIPE["data"]
    train_pairs, val_pairs = minitf.data.make_splits("shift", data["n_train"], data["n_val"],
                                                     min_len=data["min_len"], max_len=data["max_len"],
                                                     repeats=data["repeats"], val_repeats=data["val_repeats"])
    seeds, steps = (RECIPE["seeds"][:2], 50) if args.quick else (RECIPE["seeds"], RECIPE["steps"])
    start = time.time()
    runs = []
    for seed in seeds:
        runs.append(run(seed, train_pairs, val_pairs, steps))
        print(seed, list(zip(runs[-1]["steps"], runs[-1]["exact_match"])), flush=True)
    store = open_study("train_seeds", args)
    store.doc.update({"command": COMMAND + " --quick" * args.quick, "recipe": RECIPE, "torch": torch.__version__,
                      "seconds": round(time.time() - start, 1), "runs": runs})
    store.save(report(store.doc))
    print(f"wrote {store.path} and {store.markdown_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
