"""Re-make the shipped checkpoints: `python data/checkpoints/make.py [NAME ...]` from the repo root.

Each entry of RECIPES is a `python -m minitf train` argument list, run through the CLI itself (one
thread, its default); the checkpoint's metadata records the command, the validation and
training-loss curves. Each entry of BUILT is a call that sets every weight by hand (no training);
its metadata records the call and its exact match on fresh pairs.

`make.py --record-pairs` only adds to each checkpoint trained on generated pairs the pairs' recipe
(metadata["pairs"], make_splits's arguments, as `train` now records it) from its recorded command,
leaving the weights as they are: minitf.checkpoint_pairs reads it.
"""
from __future__ import annotations

import shlex
import sys

from minitf.cli import main, parser, split_args
from minitf.core.checkpoint import PAIRS, add_metadata, read

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
    "shift_long": "--task shift --n-train 10000 --repeats 0.33 --position-ids coupled --n-layers 1 "
                  "--d-model 32 --n-heads 2 --d-ff 128 --norm-position pre --dropout 0 --batch-size 64 "
                  "--lr 1e-2 --warmup 20 --steps 600 --eval-every 200 --n-val 1000 --val-repeats 0.33 "
                  "--rope-freqs 0.2327105669 0.2327105669 0.2327105669 0.2327105669 1e-4 1e-4 1e-4 "
                  "1e-4 --seed 0",
    "shift_long_small": "--task shift --repeats 0.33 --d-model 8 --n-heads 1 --n-layers 1 --norm-position "
                        "pre --dropout 0 --position-ids coupled --tie-embeddings --no-ffn --rope-freqs "
                        "0.2327105669 0.2327105669 0.2327105669 1e-4 --steps 3000 --lr 1e-2 --eval-every "
                        "500 --n-val 1000 --val-repeats 0.33 --seed 0",
    "lm": "--text data/text/tinyshakespeare.txt --context 64 --d-model 64 --n-heads 4 --n-layers 4 "
          "--d-ff 256 --norm-position pre --dropout 0 --batch-size 32 --lr 3e-3 --steps 3000 "
          "--eval-every 250 --seed 0",
    # `--recipe lm-fast` written out (issue 24; notebook 14)
    "lm_fast": "--text data/text/tinyshakespeare.txt --context 64 --d-model 64 --n-heads 4 --n-layers 2 "
               "--d-ff 256 --norm-position pre --dropout 0 --qk-norm --batch-size 24 --optimizer muon "
               "--lr 1.5e-2 --muon-lr 0.02 --embed-lr 3 --schedule wsd --cooldown 0.4 --warmup 20 "
               "--steps 340 --seed 0",
}


# name → the call that builds it (evaluated with minitf's names in scope)
BUILT = {
    "shift_by_hand": "minitf.course.by_hand.shift_by_hand(HandSet(d_model=3))",
}
BY_HAND_CHECK = dict(n=1000, seed=24, min_len=1, max_len=24, repeats=0.33)  # fresh pairs it is scored on


def build(name: str) -> None:
    """Build one hand-set checkpoint from its recorded call, replacing the shipped file."""
    import minitf
    from minitf.course.by_hand import HandSet

    model = eval(BUILT[name], {"minitf": minitf, "HandSet": HandSet})
    c = BY_HAND_CHECK
    pairs = minitf.make_pairs("shift", c["n"], c["seed"], min_len=c["min_len"], max_len=c["max_len"],
                              repeats=c["repeats"])
    scores = {k: round(v, 4) for k, v in minitf.evaluate(model, pairs).items()}
    minitf.save(model, f"data/checkpoints/{name}.pt", overwrite=True, metadata={
        "built_by": BUILT[name], "trained_steps": 0,
        "val": scores, "val_pairs": f"minitf.make_pairs('shift', **{c})"})
    print(f"{name}: built by {BUILT[name]}; {scores}")


def make(name: str) -> None:
    """Train one checkpoint with `python -m minitf train` (or build a hand-set one), replacing
    the shipped file."""
    if name in BUILT:
        return build(name)
    argv = ["train", *RECIPES[name].split(), "--out", f"data/checkpoints/{name}.pt", "--force",
            "--no-progress"]
    if main(argv) != 0:
        raise SystemExit(f"{name}: training failed")


def record_pairs(name: str) -> None:
    """Add metadata["pairs"] to a checkpoint trained on generated pairs before `train` recorded
    them: the make_splits arguments its recorded command stands for; nothing else changes."""
    path = f"data/checkpoints/{name}.pt"
    args = parser().parse_args(shlex.split(read(path)["metadata"]["command"])[3:])
    if not (args.text or args.train):
        add_metadata(path, **{PAIRS: split_args(args)})
        print(f"{name}: {PAIRS} = {split_args(args)}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--record-pairs"]:
        for name in sys.argv[2:] or RECIPES:
            record_pairs(name)
    else:
        for name in sys.argv[1:] or [*RECIPES, *BUILT]:
            make(name)
