"""Named training recipes: `python -m minitf train --recipe NAME --out model.pt`.

A recipe is a set of `train` flags under a name, so a learner types one short command instead of
fifteen flags. Flags given on the command line override the recipe's (`--recipe shift-fast --seed 1`
trains the same recipe with another seed; a switch a recipe sets, such as --tie-embeddings, stays
on). The checkpoint records the command written out in full (the recipe's flags, then the ones
typed), so it reproduces the run even if a recipe changes later.
"""
from __future__ import annotations

import itertools
import shlex
import textwrap
from dataclasses import dataclass


@dataclass(frozen=True)
class Recipe:
    name: str
    flags: str      # `train` flags, as typed on the command line: "--opt value" or a switch "--opt"
    description: str  # one line: what it trains, and what it took here

    def words(self) -> list[str]:
        return shlex.split(self.flags)

    def pairs(self) -> list[tuple[str, str | None]]:
        """[(option, value), …]: each flag with its value, None for a switch (--tie-embeddings);
        a flag of several values (--rope-freqs 0.23 0.23 1e-4 1e-4) has them joined by spaces."""
        words, out = self.words(), []
        for i, w in enumerate(words):
            if w.startswith("--"):
                values = list(itertools.takewhile(lambda v: not v.startswith("--"), words[i + 1:]))
                out.append((w, " ".join(values) if values else None))
        return out

    def dests(self) -> list[str]:
        """The argparse names of its flags: --n-train → n_train."""
        return [dest(opt) for opt, _ in self.pairs()]


def dest(option: str) -> str:
    return option.lstrip("-").replace("-", "_")


RECIPES = {r.name: r for r in [
    Recipe("shift-fast",
           "--task shift --n-train 10000 --repeats 0.33 --position-ids coupled --n-layers 1 "
           "--d-model 32 --n-heads 2 --d-ff 128 --norm-position pre --dropout 0 --batch-size 64 "
           "--lr 1e-2 --warmup 20 --steps 300 --eval-every 50 --n-val 1000 --val-repeats 0.33 "
           "--target-exact 0.998 --seed 0",
           "the fastest to >= 99.8 % exact match on 1,000 fresh held-out shift pairs (a third with "
           "repeated bytes): coupled position ids, 1 layer, 29,408 parameters; stops at its first "
           "evaluation that reaches it (step 150-200; 14x faster than --recipe shift, side by side; "
           "7.7-12 s from start to checkpoint on a busy 2-core AMD EPYC)"),
    # the smallest solver: the flags of data/checkpoints/shift_smallest.pt (issue 14's sweep,
    # bench/tiny_sweep.py); tests/test_recipes.py checks that they are its recorded command
    Recipe("shift-smallest",
           "--task shift --repeats 0.33 --d-model 6 --n-heads 1 --n-layers 1 --norm-position pre "
           "--dropout 0 --rope-base 20 --position-ids coupled --tie-embeddings --no-ffn --steps 3000 "
           "--lr 1e-2 --seed 1 --eval-every 250",
           "the smallest model measured to solve shift (data/checkpoints/shift_smallest.pt, "
           "notebook 11): 1,984 parameters, one layer of one attention head and no FFN, coupled "
           "position ids, tied head; 3,000 steps (the whole command: 21 s of CPU on a busy 2-core AMD "
           "EPYC, 27 s on a quiet 2-core Intel Xeon)"),
    # issue 23: trained on inputs of 1-12 bytes, right on 13-24 too (bench/length_study.py, arm
    # "fast, ω=2π/27"); data/checkpoints/shift_long.pt is its run, tests/test_length.py checks it
    Recipe("shift-long",
           "--task shift --n-train 10000 --repeats 0.33 --position-ids coupled --n-layers 1 "
           "--d-model 32 --n-heads 2 --d-ff 128 --norm-position pre --dropout 0 --batch-size 64 "
           "--lr 1e-2 --warmup 20 --steps 600 --eval-every 200 --n-val 1000 --val-repeats 0.33 "
           "--rope-freqs 0.2327105669 0.2327105669 0.2327105669 0.2327105669 1e-4 1e-4 1e-4 1e-4 "
           "--seed 0",
           "shift-fast's layout with RoPE frequencies for the task's period (2π/27 rad/position, "
           "so offsets up to 26 do not alias, and a near-zero one): trained on inputs of 1-12 "
           "bytes, >= 99 % exact match on fresh 13-24-byte inputs too (3 of 3 seeds); 29,408 "
           "parameters, 600 steps (about 10 s of CPU on a 2-core AMD EPYC)"),
    # the same frequencies in a model under 3,000 parameters (bench/length_study.py, arm
    # "d8, ω=2π/27"); data/checkpoints/shift_long_small.pt is its run
    Recipe("shift-long-small",
           "--task shift --repeats 0.33 --d-model 8 --n-heads 1 --n-layers 1 --norm-position pre "
           "--dropout 0 --position-ids coupled --tie-embeddings --no-ffn --rope-freqs 0.2327105669 "
           "0.2327105669 0.2327105669 1e-4 --steps 3000 --lr 1e-2 --eval-every 500 --n-val 1000 "
           "--val-repeats 0.33 --seed 0",
           "the smallest layout measured to generalise in length: d_model 8, one head, no FFN, "
           "tied head, coupled ids, RoPE frequencies 2π/27 (x3) and 1e-4; trained on 1-12 bytes, "
           ">= 99 % on fresh 13-24-byte inputs (3 of 3 seeds); 2,624 parameters, 3,000 steps (the "
           "whole command: 19 s of CPU on a busy 2-core AMD EPYC, 22 s on a quiet 2-core Intel Xeon)"),
    Recipe("shift",
           "--task shift --n-train 30000 --repeats 0.33 --d-model 32 --n-heads 4 --d-ff 128 "
           "--norm-position pre --dropout 0 --steps 3000 --lr 6e-3 --eval-every 1000 --seed 0",
           "the shift recipe of RECIPE.md: 42,112 parameters, all 3,000 steps (99-116 s on a busy "
           "2-core AMD EPYC, 68 s on a quiet 2-core Intel Xeon)"),
    Recipe("lm",
           "--text data/text/tinyshakespeare.txt --context 64 --d-model 64 --n-heads 4 --n-layers 4 "
           "--d-ff 256 --norm-position pre --dropout 0 --batch-size 32 --lr 3e-3 --steps 800 --seed 0",
           "RECIPE.md's language model on tiny Shakespeare: 233,088 parameters, 800 steps, "
           "about 1.77 nats per byte after about 65 s of CPU on a 2-core AMD EPYC"),
    # issue 24: the fastest measured to nanoGPT's CPU mark (1.89 nats per byte on the last 10 %);
    # bench/lm_fast.py's arm "lm-fast" (its FAST), data/checkpoints/lm_fast.pt is its seed-0 run
    Recipe("lm-fast",
           "--text data/text/tinyshakespeare.txt --context 64 --d-model 64 --n-heads 4 --n-layers 2 "
           "--d-ff 256 --norm-position pre --dropout 0 --qk-norm --batch-size 24 --optimizer muon "
           "--lr 1.5e-2 --muon-lr 0.02 --embed-lr 3 --schedule wsd --cooldown 0.4 --warmup 20 "
           "--steps 340 --seed 0",
           "the language model fastest to nanoGPT's CPU mark (<= 1.89 nats per byte on the last "
           "10 % of tiny Shakespeare): 2 layers with QK-norm, Muon for the blocks' matrices, a "
           "warm-up-stable-decay schedule; 133,184 parameters, 340 steps (about 10 s of training CPU "
           "on a 2-core AMD EPYC; the whole command 19-24 s on a quiet 2-core Intel Xeon, 0.26x "
           "the time of nanoGPT's own CPU quick-start there)"),
    # issue 24's second ask: as low as it goes in about nanoGPT's CPU time (87 s): lm-fast's
    # training with 4 layers and 1,700 steps; RECIPE.md gives its 3 seeds (not tuned further)
    Recipe("lm-long",
           "--text data/text/tinyshakespeare.txt --context 64 --d-model 64 --n-heads 4 --n-layers 4 "
           "--d-ff 256 --norm-position pre --dropout 0 --qk-norm --batch-size 24 --optimizer muon "
           "--lr 1.5e-2 --muon-lr 0.02 --embed-lr 3 --schedule wsd --cooldown 0.4 --warmup 20 "
           "--steps 1700 --seed 0",
           "lm-fast's training for about nanoGPT's CPU time (85-87 s of training CPU on a 2-core AMD "
           "EPYC; the whole command 141 s of CPU on a quiet 2-core Intel Xeon): 4 layers, 233,216 "
           "parameters, 1,700 steps; about 1.61 nats per byte"),
]}


def get(name: str) -> Recipe:
    if name not in RECIPES:
        raise ValueError(f"unknown recipe {name!r}; choose from {', '.join(RECIPES)}")
    return RECIPES[name]


def help_text() -> str:
    """The recipes as `train --help` lists them."""
    lines = ["recipes (--recipe NAME; flags given on the command line override the recipe's):"]
    for r in RECIPES.values():
        lines += textwrap.wrap(r.description, 92, initial_indent=f"  {r.name}: ",
                               subsequent_indent="      ", break_on_hyphens=False)
        lines += textwrap.wrap(r.flags, 92, initial_indent="      = ", subsequent_indent="        ",
                               break_on_hyphens=False)
    return "\n".join(lines)


def expand(name: str, argv: list[str], given: set[str]) -> list[str]:
    """The `train` words a recipe run stands for: the recipe's flags that were not given on the
    command line (`given`: their argparse dests), then `argv` (without `--recipe NAME`)."""
    kept = [w for opt, value in get(name).pairs() if dest(opt) not in given
            for w in ((opt,) if value is None else (opt, *value.split()))]
    rest, skip = [], False
    for w in argv:
        option = w.split("=")[0]
        if skip:
            skip = False
        elif len(option) > 4 and "--recipe".startswith(option):  # argparse takes --rec for --recipe
            skip = "=" not in w
        else:
            rest.append(w)
    return kept + rest
