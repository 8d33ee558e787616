"""Re-make the shipped checkpoints: `python data/checkpoints/make.py [NAME ...]` from the repo root.

Each entry is a `python -m minitf train` argument list, run through the CLI itself (one thread, its
default); the checkpoint's metadata records the command, the validation and training-loss curves.
"""
from __future__ import annotations

import sys

from minitf.cli import main

RECIPES = {
    "tiny": "--train data/train.txt --val data/val.txt --steps 2000 --eval-every 500",
    "shift": "--task shift --n-train 30000 --repeats 0.33 --d-model 32 --n-heads 4 --d-ff 128 "
             "--norm-position pre --dropout 0 --steps 3000 --lr 6e-3 --seed 0 --eval-every 500",
    "shift_uniform": "--task shift --n-val 200 --d-model 32 --n-heads 4 --n-layers 2 "
                     "--norm-position pre --steps 3000 --eval-every 500",
    "copy": "--task copy --n-train 30000 --repeats 0.33 --d-model 32 --n-heads 4 --d-ff 128 "
            "--norm-position pre --dropout 0 --steps 3000 --lr 6e-3 --seed 0 --eval-every 500",
    "reverse": "--task reverse --n-val 200 --d-model 32 --n-heads 4 --n-layers 2 "
               "--norm-position pre --steps 1500 --eval-every 250",
    "shift_smallest": "--task shift --repeats 0.33 --d-model 6 --n-heads 1 --n-layers 1 "
                      "--norm-position pre --dropout 0 --rope-base 20 --position-ids coupled "
                      "--tie-embeddings --no-ffn --steps 3000 --lr 1e-2 --seed 1 --eval-every 250",
    "lm": "--text data/text/tinyshakespeare.txt --context 64 --d-model 64 --n-heads 4 --n-layers 4 "
          "--d-ff 256 --norm-position pre --dropout 0 --batch-size 32 --lr 3e-3 --steps 3000 "
          "--eval-every 250 --seed 0",
}


def make(name: str) -> None:
    """Train one checkpoint with `python -m minitf train`, replacing the shipped file."""
    argv = ["train", *RECIPES[name].split(), "--out", f"data/checkpoints/{name}.pt", "--force",
            "--no-progress"]
    if main(argv) != 0:
        raise SystemExit(f"{name}: training failed")


if __name__ == "__main__":
    for name in sys.argv[1:] or RECIPES:
        make(name)
