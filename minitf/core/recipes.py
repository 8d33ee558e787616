"""Named training recipes: `python -m minitf train --recipe NAME --out model.pt`.

A recipe is a set of `train` settings under a name, so a learner types one short command instead of
fifteen flags. It is data: each setting under its argparse name (`n_train`, not `--n-train`), a
switch as True; the CLI turns it into flags (minitf.cli.recipe_flags). Flags given on the command
line override the recipe's (`--recipe shift-fast --seed 1` trains the same recipe with another
seed; a switch a recipe sets, such as tie_embeddings, stays on). The checkpoint records the command
written out in full (the recipe's flags, then the ones typed), so it reproduces the run even if a
recipe changes later.
"""
from __future__ import annotations

from dataclasses import dataclass

# 2π/27 rad per position to 10 digits, as shift_long.pt and shift_long_small.pt were trained with
TWO_PI_27 = 0.2327105669


@dataclass(frozen=True)
class Recipe:
    name: str
    values: dict      # `train`'s settings by argparse name: {"n_train": 10000, "no_ffn": True, …}
    description: str  # one line: what it trains, and what it took here


# shift-fast's layout, data and training (its stop and seed are its own); shift-long trains the same
# longer, with RoPE frequencies for the task's period
_SHIFT_FAST_RUN = {"task": "shift", "n_train": 10000, "repeats": 0.33, "position_ids": "coupled",
                   "n_layers": 1, "d_model": 32, "n_heads": 2, "d_ff": 128, "norm_position": "pre",
                   "dropout": 0.0, "batch_size": 64, "lr": 1e-2, "warmup": 20, "steps": 300,
                   "eval_every": 50, "n_val": 1000, "val_repeats": 0.33}
# lm-fast's run; lm-long is the same training with 4 layers and 1,700 steps
_LM_FAST = {"text": "data/text/tinyshakespeare.txt", "context": 64, "d_model": 64, "n_heads": 4,
            "n_layers": 2, "d_ff": 256, "norm_position": "pre", "dropout": 0.0, "qk_norm": True,
            "batch_size": 24, "optimizer": "muon", "lr": 1.5e-2, "muon_lr": 0.02, "embed_lr": 3.0,
            "schedule": "wsd", "cooldown": 0.4, "warmup": 20, "steps": 340, "seed": 0}

RECIPES = {r.name: r for r in [
    Recipe("shift-fast", {**_SHIFT_FAST_RUN, "target_exact": 0.998, "seed": 0},
           "the fastest to >= 99.8 % exact match on 1,000 fresh held-out shift pairs (a third with "
           "repeated bytes): coupled position ids, 1 layer, 29,408 parameters; stops at its first "
           "evaluation that reaches it (step 150-200; 14x faster than --recipe shift, side by side; "
           "7.7-12 s from start to checkpoint on a busy 2-core AMD EPYC (AVX-512, bf16))"),
    # the smallest solver: the settings of data/checkpoints/shift_smallest.pt (the sweep of
    # bench/tiny_sweep.py); tests/notebooks/test_notebook_claims_11.py checks that they are its recorded command
    Recipe("shift-smallest",
           {"task": "shift", "repeats": 0.33, "d_model": 6, "n_heads": 1, "n_layers": 1,
            "norm_position": "pre", "dropout": 0.0, "rope_base": 20.0, "position_ids": "coupled",
            "tie_embeddings": True, "no_ffn": True, "steps": 3000, "lr": 1e-2, "seed": 1,
            "eval_every": 250},
           "the smallest model measured to solve shift (data/checkpoints/shift_smallest.pt, "
           "notebook 11): 1,984 parameters, one layer of one attention head and no FFN, coupled "
           "position ids, tied head; 3,000 steps (the whole command: 21 s of CPU on a busy 2-core AMD "
           "EPYC (AVX-512, bf16), 27 s on a quiet 2-core Intel Xeon (AVX-512))"),
    # length generalisation: trained on 1-12 bytes, right on 13-24 too (bench/length_study.py, arm
    # "fast, ω=2π/27"); data/checkpoints/shift_long.pt is its run, tests/test_length.py checks it
    Recipe("shift-long",
           {**_SHIFT_FAST_RUN, "steps": 600, "eval_every": 200, "rope_freqs": [TWO_PI_27] * 4 + [1e-4] * 4,
            "seed": 0},
           "shift-fast's layout with RoPE frequencies for the task's period (2π/27 rad/position, "
           "so offsets up to 26 do not alias, and a near-zero one): trained on inputs of 1-12 "
           "bytes, >= 99 % exact match on fresh 13-24-byte inputs too (3 of 3 seeds); 29,408 "
           "parameters, 600 steps (about 10 s of CPU on a 2-core AMD EPYC (AVX-512, bf16))"),
    # the same frequencies in a model under 3,000 parameters (bench/length_study.py, arm
    # "d8, ω=2π/27"); data/checkpoints/shift_long_small.pt is its run
    Recipe("shift-long-small",
           {"task": "shift", "repeats": 0.33, "d_model": 8, "n_heads": 1, "n_layers": 1,
            "norm_position": "pre", "dropout": 0.0, "position_ids": "coupled", "tie_embeddings": True,
            "no_ffn": True, "rope_freqs": [TWO_PI_27] * 3 + [1e-4], "steps": 3000, "lr": 1e-2,
            "eval_every": 500, "n_val": 1000, "val_repeats": 0.33, "seed": 0},
           "the smallest layout measured to generalise in length: d_model 8, one head, no FFN, "
           "tied head, coupled ids, RoPE frequencies 2π/27 (x3) and 1e-4; trained on 1-12 bytes, "
           ">= 99 % on fresh 13-24-byte inputs (3 of 3 seeds); 2,624 parameters, 3,000 steps (the "
           "whole command: 19 s of CPU on a busy 2-core AMD EPYC (AVX-512, bf16), 22 s on a quiet "
           "2-core Intel Xeon (AVX-512))"),
    Recipe("shift",
           {"task": "shift", "n_train": 30000, "repeats": 0.33, "d_model": 32, "n_heads": 4,
            "d_ff": 128, "norm_position": "pre", "dropout": 0.0, "steps": 3000, "lr": 6e-3,
            "eval_every": 1000, "seed": 0},
           "the shift recipe of docs/recipes.md: 42,112 parameters, all 3,000 steps (99-116 s on a busy "
           "2-core AMD EPYC (AVX-512, bf16), 68 s on a quiet 2-core Intel Xeon (AVX-512))"),
    Recipe("lm",
           {"text": "data/text/tinyshakespeare.txt", "context": 64, "d_model": 64, "n_heads": 4,
            "n_layers": 4, "d_ff": 256, "norm_position": "pre", "dropout": 0.0, "batch_size": 32,
            "lr": 3e-3, "steps": 800, "seed": 0},
           "docs/recipes.md's language model on tiny Shakespeare: 233,088 parameters, 800 steps, "
           "about 1.77 nats per byte after about 65 s of CPU on a 2-core AMD EPYC (AVX-512, bf16)"),
    # the fastest measured to nanoGPT's CPU mark (1.89 nats per byte on the last 10 %);
    # bench/lm_fast.py's arm "lm-fast" (its FAST), data/checkpoints/lm_fast.pt is its seed-0 run
    Recipe("lm-fast", _LM_FAST,
           "the language model fastest to nanoGPT's CPU mark (<= 1.89 nats per byte on the last "
           "10 % of tiny Shakespeare): 2 layers with QK-norm, Muon for the blocks' matrices, a "
           "warm-up-stable-decay schedule; 133,184 parameters, 340 steps (about 10 s of training CPU "
           "on a 2-core AMD EPYC (AVX-512, bf16); the whole command 19-24 s on a quiet 2-core Intel "
           "Xeon (AVX-512), 0.26x "
           "the time of nanoGPT's own CPU quick-start there)"),
    # lm-fast on BPE tokens: bench/bpe.py's arm "bpe-1024" at equal time (notebook 15, RECIPE.md)
    Recipe("lm-fast-bpe", {**_LM_FAST, "tokenizer": "bpe:1024", "steps": 267},
           "lm-fast on 1,024 BPE tokens (GPT-2's pre-tokenizer, learned from the first 90 % before "
           "training starts, saved in the checkpoint): 232,256 parameters, 267 steps, the CPU time of "
           "lm-fast's 340 (about 10 s of training CPU on a 2-core AMD EPYC (AVX-512, bf16)); "
           "2.41-2.42 bits per byte on the last 10 % against lm-fast's 2.62-2.67 over 3 seeds"),
    # as low as it goes in about nanoGPT's CPU time (87 s): lm-fast's
    # training with 4 layers and 1,700 steps; docs/recipes.md gives its 3 seeds (not tuned further)
    Recipe("lm-long", {**_LM_FAST, "n_layers": 4, "steps": 1700},
           "lm-fast's training for about nanoGPT's CPU time (85-87 s of training CPU on a 2-core AMD "
           "EPYC (AVX-512, bf16); the whole command 141 s of CPU on a quiet 2-core Intel Xeon "
           "(AVX-512)): 4 layers, 233,216 "
           "parameters, 1,700 steps; about 1.61 nats per byte"),
    # nanoGPT's GPU mark (1.4697 nats, its train_shakespeare_char) on two CPU cores: docs/recipes.md's
    # "lm-best" section gives how it was found, its seeds and times, and what each setting buys
    Recipe("lm-best",
           {"text": "data/text/tinyshakespeare.txt", "context": 256, "d_model": 128, "n_heads": 4,
            "n_layers": 6, "d_ff": 512, "norm_position": "pre", "dropout": 0.05, "qk_norm": True,
            "batch_size": 16, "optimizer": "muon", "lr": 1.5e-2, "muon_lr": 0.02, "embed_lr": 3.0,
            "weight_decay": 0.1, "schedule": "wsd", "cooldown": 0.4, "warmup": 20, "steps": 1600,
            "eval_every": 400, "threads": 2, "seed": 0},
           "as low as it goes in ten minutes of two CPU cores: 6 layers 128 wide with QK-norm, "
           "windows of 256 bytes, Muon, weight decay 0.1 and dropout 0.05 against overfitting "
           "the 1 MB text; 1,256,064 parameters, 1,600 steps on 2 threads (the whole command: 9 min 39 s "
           "of wall time on a 2-core AMD EPYC (AVX-512, bf16), seed 0; add --time 600 to end in ten "
           "minutes of wall time on any CPU, its schedule following the clock)"),
]}


def get(name: str) -> Recipe:
    if name not in RECIPES:
        raise ValueError(f"unknown recipe {name!r}; choose from {', '.join(RECIPES)}")
    return RECIPES[name]
