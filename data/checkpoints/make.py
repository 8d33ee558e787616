"""Re-make the shipped checkpoints: `python data/checkpoints/make.py [NAME ...]` from the repo root.

Each entry is a `python -m minitf train` argument list. This script parses it with the CLI's own
parser and runs exactly the CLI's steps (same seeds, same generated data, same model), and also
keeps the training curve in the checkpoint's metadata so a notebook can plot it without retraining.
`python -m minitf train <args>` gives the same weights (README.md says how that was checked).
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch

import minitf
from minitf.cli import config_from_args, parser

HERE = Path(__file__).resolve().parent

RECIPES = {
    "seed": "--train data/train.txt --val data/val.txt --steps 2000 --eval-every 500",
    "shift": "--task shift --n-train 30000 --repeats 0.33 --d-model 32 --n-heads 4 --d-ff 128 "
             "--norm-position pre --dropout 0 --steps 3000 --lr 6e-3 --seed 0 --eval-every 500",
    "shift_uniform": "--task shift --n-val 200 --d-model 32 --n-heads 4 --n-layers 2 "
                     "--norm-position pre --steps 3000 --eval-every 500",
    "copy": "--task copy --n-train 30000 --repeats 0.33 --d-model 32 --n-heads 4 --d-ff 128 "
            "--norm-position pre --dropout 0 --steps 3000 --lr 6e-3 --seed 0 --eval-every 500",
    "reverse": "--task reverse --n-val 200 --d-model 32 --n-heads 4 --n-layers 2 "
               "--norm-position pre --steps 1500 --eval-every 250",
}


def data_for(args):
    """The CLI's training and validation pairs for these arguments (same seeds, same order)."""
    train_pairs = (minitf.read_pairs(args.train) if args.train else
                   minitf.make_pairs(args.task, args.n_train, args.seed + 1000, max_len=args.pair_len,
                                     repeats=args.repeats))
    val_pairs = (minitf.read_pairs(args.val) if args.val else
                 minitf.make_pairs(args.task, args.n_val, args.seed + 2000, max_len=args.pair_len,
                                   exclude=[p.input for p in train_pairs]))
    return train_pairs, val_pairs


def make(name: str) -> None:
    out = HERE / f"{name}.pt"
    argv = ["train", *RECIPES[name].split(), "--out", str(out), "--no-progress"]
    args = parser().parse_args(argv)
    torch.manual_seed(args.seed)  # as the CLI does, before data and model
    train_pairs, val_pairs = data_for(args)
    model = minitf.Transformer(config_from_args(args))
    hist = minitf.train(model, train_pairs, val_pairs, steps=args.steps, batch_size=args.batch_size,
                        lr=args.lr, warmup=args.warmup, seed=args.seed, eval_every=args.eval_every,
                        progress=False)
    every = 10  # the loss curve, averaged over blocks of 10 steps, keeps the file small
    curve = [round(sum(hist.loss[i:i + every]) / len(hist.loss[i:i + every]), 4)
             for i in range(0, len(hist.loss), every)]
    minitf.save(model, out, overwrite=True, metadata={
        "command": "python -m minitf train " + RECIPES[name] + f" --out data/checkpoints/{name}.pt",
        "steps": args.steps, "seed": args.seed, "train_seconds": round(hist.seconds, 1),
        "val": hist.val[-1], "val_curve": hist.val, "loss_curve_every": every, "loss_curve": curve})
    print(f"{name}: {minitf.count_parameters(model):,} parameters, {hist.seconds:.0f} s, "
          f"val {hist.val[-1]}")


if __name__ == "__main__":
    torch.set_num_threads(1)  # how the shipped files were made; also much faster on a busy CPU
    for name in sys.argv[1:] or RECIPES:
        make(name)
