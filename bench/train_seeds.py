"""Notebook 08's training run on ten random starts: when does the small solver learn to shift?

    python bench/train_seeds.py    # about a minute: minitf/experiments/stored/train_seeds.json

The recipe is notebook 08's (minitf.experiments.train_seeds.RECIPE: 2,920 parameters, coupled
position ids, 300 steps), trained by minitf.train with minitf's own pieces, the model and the data
order seeded with each seed in turn; the held-out exact match is measured every 25 steps on 08's
200 held-out pairs. Notebook 08 reads the spread (`minitf.experiments.train_seeds.load()`), and
tests/test_training_parts.py holds its sentences to it.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

import minitf  # noqa: E402
from minitf.experiments.train_seeds import RECIPE, STORED  # noqa: E402


def run(seed: int, train_pairs, val_pairs) -> dict:
    torch.manual_seed(seed)
    model = minitf.Transformer(minitf.Config(**RECIPE["config"]))
    history = minitf.train(model, train_pairs, val_pairs, steps=RECIPE["steps"], batch_size=RECIPE["batch_size"],
                           lr=RECIPE["lr"], warmup=RECIPE["warmup"], weight_decay=RECIPE["weight_decay"],
                           eval_every=RECIPE["eval_every"], seed=seed, progress=False)
    return {"seed": seed, "steps": [v["step"] for v in history.val],
            "exact_match": [v["exact_match"] for v in history.val],
            "loss": [round(v["loss"], 5) for v in history.val], "seconds": round(history.seconds, 2)}


def main() -> None:
    torch.set_num_threads(1)
    data = RECIPE["data"]
    train_pairs, val_pairs = minitf.data.make_splits("shift", data["n_train"], data["n_val"],
                                                     repeats=data["repeats"], val_repeats=data["val_repeats"])
    start = time.time()
    runs = []
    for seed in RECIPE["seeds"]:
        runs.append(run(seed, train_pairs, val_pairs))
        print(seed, list(zip(runs[-1]["steps"], runs[-1]["exact_match"])), flush=True)
    STORED.write_text(json.dumps({"command": "python bench/train_seeds.py", "recipe": RECIPE,
                                  "torch": torch.__version__, "seconds": round(time.time() - start, 1),
                                  "runs": runs}, indent=1) + "\n")
    print("wrote", STORED)


if __name__ == "__main__":
    main()
