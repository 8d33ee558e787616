"""Checks on the flags, before any work: numbers out of range, flags that would be silently
ignored, and an --out where the checkpoint could not be saved."""
from __future__ import annotations

import math
import tempfile
from pathlib import Path

from .inputs import warn_if_pairs_file
from .parser import parser
from .recipe_flags import GENERATED_HELD_OUT, unused_settings
from .settings import max_len


# Flags that count something, per command: each must be a whole number >= 1 (None: not given).
AT_LEAST_ONE = {
    "train": {"--steps": "training steps", "--batch-size": "pairs or windows per step",
              "--threads": "CPU threads",
              "--eval-every": "steps between two validations; leave it out to validate once, "
                              "at the end",
              "--n-train": "generated training pairs", "--pair-len": "bytes of the longest "
              "generated input", "--context": "bytes per training window",
              "--d-model": "the model's width", "--n-heads": "attention heads per layer",
              "--n-layers": "blocks", "--d-ff": "the feed-forward width",
              "--max-len": "the longest sequence the model reads", "--num-nodes": "machines"},
    "data make": {"--n": "pairs to make", "--min-len": "bytes of the shortest input",
                  "--max-len": "bytes of the longest input"},
    "data check": {"--max-len": "the longest sequence a model reads"},
    "eval": {"--context": "bytes per window", "--threads": "CPU threads"},
    "generate": {"--max-new": "bytes to generate", "--threads": "CPU threads"},
}


def fraction_problem(flag: str, value: float, meaning: str) -> str | None:
    """A flag that is a fraction in [0, 1]: what is wrong with its value, or None."""
    if not (math.isfinite(value) and 0 <= value <= 1):
        return f"{flag} must be a fraction in [0, 1] ({meaning}), got {value}"
    return None


def dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


def typed_flags(argv: list[str]) -> set[str]:
    """The `train` settings (argparse dests) the command line itself gives: a recipe's own values
    are not among them, so a check on what the user typed never refuses what a recipe set."""
    dests = set(vars(parser().parse_args(["train", "--out", "-"]))) - {"command", "resumed"}
    unset = object()
    marked = vars(parser(dict.fromkeys(dests, unset)).parse_args(argv))
    return {dest for dest in dests if marked.get(dest) is not unset}


def ignored_problem(args) -> str | None:
    """The flags the user typed that this run would silently ignore (unused_settings), named in
    one line, or None. Only typed flags count (args.typed, from typed_flags): a recipe's values
    never do."""
    ignored = [d for d in unused_settings(args) if d in getattr(args, "typed", set())]
    if not ignored:
        return None
    if "cooldown" in ignored:
        return (f"--cooldown is the length of the wsd schedule's decay, and --schedule is "
                f"{args.schedule}: give --schedule wsd, or leave out --cooldown")
    flags = ["--" + d.replace("_", "-") for d in ignored]
    flags = " and ".join([", ".join(flags[:-1]), flags[-1]] if len(flags) > 2 else flags)
    one = len(ignored) == 1
    if args.text:
        return (f"{flags} {'is' if one else 'are'} for pairs, and --text trains a language model "
                f"on a text (validated on its last 10 %): leave out {flags}")
    if args.val and set(ignored) <= set(GENERATED_HELD_OUT):
        return (f"{flags} {'shapes' if one else 'shape'} generated held-out pairs, and --val "
                f"{args.val} gives them: leave out {flags}")
    return (f"{flags} {'shapes' if one else 'shape'} generated pairs, and --train {args.train} "
            f"trains on that file's pairs: leave out {flags}")


def heads_problem(d_model: int, n_heads: int) -> str | None:
    """Why --d-model cannot be split into --n-heads heads, in the flags the command line has
    (it has no --head-dim: each head is d_model / n_heads wide, and RoPE, which rotates pairs of
    dimensions, needs that width even), or None."""
    step = 2 * n_heads
    if d_model % step == 0:
        return None
    width = (f"d_model / n_heads = {d_model} / {n_heads} is not a whole number"
             if d_model % n_heads else f"each head would be {d_model // n_heads} wide, an odd width")
    lower = d_model // step * step
    sizes = " or ".join(f"--d-model {d}" for d in (lower, lower + step) if d > 0)
    heads = [n for n in range(1, d_model // 2 + 1) if d_model % (2 * n) == 0]
    other = (f", or --n-heads {' or '.join(map(str, heads[-3:]))} with --d-model {d_model}"
             if heads else "")
    return (f"--d-model {d_model} and --n-heads {n_heads}: {width}, and each head needs an even "
            f"width (RoPE rotates pairs of dimensions): give {sizes} (a multiple of 2 × "
            f"--n-heads){other}")


def check_args(args) -> str | None:
    """What is wrong with the flags given, or None: numbers out of range and flags that would be
    silently ignored, found before any work (a bad value halfway through a run would be a traceback
    or, worse, a result that does not mean what was asked)."""
    command = args.command + (f" {args.data_cmd}" if args.command == "data" else "")
    for flag, meaning in AT_LEAST_ONE.get(command, {}).items():
        value = getattr(args, dest(flag), None)
        if value is not None and value < 1:
            return f"{flag} must be a whole number >= 1 ({meaning}), got {value}"
    if command == "train":
        problem = heads_problem(args.d_model, args.n_heads)
        if problem:
            return problem
        if not (math.isfinite(args.lr) and args.lr > 0):
            return f"--lr must be a number > 0 (the peak learning rate), got {args.lr}"
        if args.warmup is not None and args.warmup < 0:
            return f"--warmup must be >= 0 (steps of linear warm-up), got {args.warmup}"
        if args.warmup is not None and args.warmup > args.steps:
            return (f"--warmup {args.warmup} is longer than --steps {args.steps}: the learning "
                    f"rate would still be rising when training ends and never reach --lr; give "
                    f"--warmup {args.steps} or less")
        if args.n_val < 0:
            return (f"--n-val must be a whole number >= 0 (held-out pairs; 0: no validation), "
                    f"got {args.n_val}")
        for flag, meaning in (("--repeats", "of the generated training inputs"),
                              ("--val-repeats", "of the generated held-out inputs")):
            problem = fraction_problem(flag, getattr(args, dest(flag)), meaning)
            if problem:
                return problem
        if not (math.isfinite(args.embed_lr) and args.embed_lr > 0):
            return (f"--embed-lr must be a number > 0 (the embedding's lr is --lr times it), "
                    f"got {args.embed_lr}")
        if args.muon_lr is not None and args.optimizer != "muon":
            return (f"--muon-lr is Muon's learning rate, and --optimizer is {args.optimizer}: "
                    "give --optimizer muon, or leave out --muon-lr")
        if args.muon_lr is not None and not (math.isfinite(args.muon_lr) and args.muon_lr > 0):
            return f"--muon-lr must be a number > 0 (Muon's peak learning rate), got {args.muon_lr}"
        if not (math.isfinite(args.weight_decay) and args.weight_decay >= 0):
            return f"--weight-decay must be a number >= 0, got {args.weight_decay}"
        if args.time is not None and not (math.isfinite(args.time) and args.time > 0):
            return f"--time must be a number of seconds > 0 (the wall-clock budget), got {args.time}"
        if args.time is not None and args.trainer == "lightning":
            return "--time is for --trainer minitf; Lightning trains for --steps"
        if not 0 < args.cooldown <= 1:
            return (f"--cooldown must be a fraction in (0, 1] (of the steps spent decaying), "
                    f"got {args.cooldown}")
        if args.context is not None and not args.text:
            return ("--context is the window length of --text's language model; pairs have no "
                    "windows (--max-len sets the longest sequence a pairs model reads)")
        if not args.text and not args.train:
            longest = 2 * args.pair_len + 1  # input TAB output: the model reads all but EOS
            if longest > max_len(args):
                return (f"--pair-len {args.pair_len} makes sequences of up to {longest} tokens "
                        f"(input, TAB, output), and the model reads at most {max_len(args)} "
                        f"(--max-len): give --pair-len {(max_len(args) - 1) // 2} or less, or "
                        f"--max-len {longest} or more")
        if isinstance(args.devices, int) and args.devices < 1:
            return f"--devices must be a whole number >= 1 or auto, got {args.devices}"
        if args.text and (args.train or args.val):
            given = [f for f in ("--train", "--val") if getattr(args, dest(f))]
            named = " and ".join(given) + (" name pairs files" if len(given) > 1
                                           else " names a pairs file")
            return (f"{named}, and --text trains a language model on a text instead: give one "
                    "or the other")
        if args.text and args.skip_bad_lines:
            return "--skip-bad-lines is for pairs files; --text reads every byte of its file"
        if getattr(args, "tokenizer", None) and not args.text:
            return "--tokenizer is for --text's language model; pairs are bytes"
        if getattr(args, "tokenizer", None) and args.trainer == "lightning":
            return "--tokenizer is for --trainer minitf"
        problem = ignored_problem(args)
        if problem:
            return problem
        if args.text:
            warn_if_pairs_file(args.text)
    if command == "data make":
        out = Path(args.out)
        if out.is_dir():
            return f"--out {out} is a folder; give the pairs file's name, e.g. {out / 'pairs.txt'}"
        return folder_problem(out)
    if command == "eval":
        if args.text and args.data:
            return (f"give a pairs file ({args.data}) or --text FILE ({args.text}), not both: "
                    "a pairs file scores a pairs model, --text a language model")
        if args.context is not None and not args.text:
            return "--context is the window length for --text; a pairs file has no windows"
        if args.skip_bad_lines and args.text:
            return "--skip-bad-lines is for pairs files; --text reads every byte of its file"
    return None


def out_problem(args) -> str | None:
    """What would stop the checkpoint from being saved at --out, found before any training."""
    out = Path(args.out)
    if out.is_dir():
        return f"--out {out} is a folder; give the checkpoint's file name, e.g. {out / 'model.pt'}"
    own = args.resume and out.exists() and out.samefile(args.resume)  # a resumed run's own file
    if out.exists() and not (args.force or own):
        return f"{out} exists; pass --force to replace it"
    return folder_problem(out)


def folder_problem(out: Path) -> str | None:
    """What stops a file from being written at --out because of its folder, or None: train and
    data make refuse a folder that is not there rather than create it (a typo would otherwise
    make a tree of folders, as root even at the top of the file system)."""
    folder = out.parent
    if not folder.exists():
        return f"--out {out}: the folder {folder} does not exist (create it first)"
    if not folder.is_dir():
        return f"--out {out}: {folder} is a file, not a folder"
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as e:
        return f"--out {out}: cannot write in the folder {folder} ({e.strerror})"
    return None


LIGHTNING_KEEPS_ITS_OWN = ("--resume and --save-every are for --trainer minitf; Lightning saves and "
                           "resumes its own checkpoints (its ModelCheckpoint callback, "
                           "Trainer.fit's ckpt_path)")


def target_problem(args) -> str | None:
    """What is wrong with --target-exact in these arguments, or None."""
    t = args.target_exact
    if t is None:
        return None
    if not 0 < t <= 1:
        return f"--target-exact is an exact-match fraction in (0, 1], got {t}"
    if args.text:
        return "--target-exact stops on the exact match of held-out pairs; --text has none"
    if not args.val and args.n_val == 0:
        return "--target-exact stops on the exact match of held-out pairs; --n-val 0 leaves none"
    if args.trainer != "minitf":
        return "--target-exact is for --trainer minitf"
    if not args.eval_every:
        return "--target-exact needs --eval-every N: how many steps between two checks"
    return None
