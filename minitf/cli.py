"""`python -m minitf …`: check and make data, train, evaluate, generate from the command line.

Pairs by default; `--text FILE` trains and evaluates a language model on a text file instead.
`--device` runs on a GPU; `train --trainer lightning` hands the same training to PyTorch Lightning
(several GPUs or machines with --devices, --num-nodes, --strategy ddp). `info FILE` describes a
checkpoint. A bad input is one line on stderr, `minitf: error: …`, and exit status 2."""
from __future__ import annotations

import argparse
import codecs
import json
import math
import os
import random
import shlex
import signal
import sys
import tempfile
import textwrap
from pathlib import Path

from . import __version__
from .core import recipes
from .core.checkpoint import PAIRS, CheckpointError, load, save, train_state
from .core.config import PRESETS, Config
from .core.data import (TASKS, DataError, iter_pairs, make_splits, parse_line, read_pairs,
                        write_pairs)
from .core.devices import CHOICES as DEVICES, pick_device
from .core.evaluate import evaluate, exact_match_by_length
from .core.generate import check_sampling, generate, generate_text, pair_prompt, text_prompt
from .core.model import Transformer, count_parameters
from .core.text import evaluate_text, read_text, text_baselines
from .core.train import DEFAULT_STEPS, train


def fail(message: str) -> int:
    print(f"minitf: error: {message}", file=sys.stderr)
    return 2


def warn(message: str) -> None:
    print(f"minitf: warning: {message}", file=sys.stderr)


# --- checks on the flags, before any work ---------------------------------------------------------

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

DEFAULT_CONTEXT = 64  # train --text: bytes per window when --context is not given
DEFAULT_WARMUP = 50   # train: steps of warm-up when --warmup is not given


def fraction_problem(flag: str, value: float, meaning: str) -> str | None:
    """A flag that is a fraction in [0, 1]: what is wrong with its value, or None."""
    if not (math.isfinite(value) and 0 <= value <= 1):
        return f"{flag} must be a fraction in [0, 1] ({meaning}), got {value}"
    return None


def dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


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
        if args.text:
            warn_if_pairs_file(args.text)
    if command == "eval":
        if args.text and args.data:
            return (f"give a pairs file ({args.data}) or --text FILE ({args.text}), not both: "
                    "a pairs file scores a pairs model, --text a language model")
        if args.context is not None and not args.text:
            return "--context is the window length for --text; a pairs file has no windows"
        if args.skip_bad_lines and args.text:
            return "--skip-bad-lines is for pairs files; --text reads every byte of its file"
    return None


def warn_if_pairs_file(path) -> None:
    """--text given a pairs file (Base64 lines of `input TAB output`) is allowed, but is most
    likely a mistake: say so on stderr. Judged on its first 20 non-blank lines."""
    try:
        with open(path, encoding="ascii", errors="strict") as f:
            lines = [line.strip() for _, line in zip(range(200), f) if line.strip()][:20]
        for line in lines:
            parse_line(line)
    except (OSError, UnicodeDecodeError, ValueError):
        return
    if lines:
        warn(f"{path} looks like a pairs file (Base64 lines of input TAB output): --text reads "
             "it as plain bytes, Base64 and all; a pairs file goes without --text")


def read_pairs_arg(path, args, max_len: int | None = None, flag: str | None = None):
    """A pairs file named on the command line: strictly (a bad line is an error, and main points
    to `data check`), or with --skip-bad-lines only its good pairs, saying how many were skipped.
    Pairs longer than max_len (the model's) are bad lines. A file without a pair is refused."""
    named = f"{flag} {path}" if flag else str(path)
    if not getattr(args, "skip_bad_lines", False):
        pairs = read_pairs(path, max_len=max_len)
        if not pairs:
            raise ValueError(f"{named} holds no pairs (the file is empty or blank)")
        return pairs
    pairs = read_pairs(path, strict=False, max_len=max_len)
    report = pairs.report
    check = f"python -m minitf data check {shlex.quote(str(path))}"
    if not pairs:
        raise ValueError(f"{named}: none of its {report.lines} lines is a pair (`{check}` says why)")
    if report.skipped:
        warn(f"{path}: skipped {len(report.skipped)} bad lines of {report.lines} and read "
             f"{report.pairs} pairs (--skip-bad-lines; `{check}` lists them)")
    return pairs


def model_kind(model) -> str | None:
    """"text" for a language model (`train --text` records the text and context in the
    checkpoint), "pairs" for a model `train` trained on pairs (its metadata has an exact match),
    None when the metadata does not say (e.g. a model saved from Python)."""
    meta = model.metadata
    if "text" in meta:
        return "text"
    if isinstance(meta.get("val"), dict) and "exact_match" in meta["val"]:
        return "pairs"
    return None


def cmd_data_check(args) -> int:
    bad = 0
    for path in args.files:
        report = read_pairs(path, strict=False, max_len=args.max_len).report
        for line, reason in report.skipped:
            print(f"{path}:{line}: {reason}")
        print(report)
        bad += len(report.skipped)
    return 1 if bad else 0


MAX_PAIRS = 10_000_000  # data make's limit: beyond it, the inputs kept distinct outgrow memory
PROGRESS_FROM = 100_000  # data make shows a progress bar from this many pairs (about a second)


def make_estimate(n: int, min_len: int, max_len: int) -> str:
    """What `data make` of n pairs would cost: file size, memory, time (measured rates)."""
    lengths = range(min_len, max_len + 1)
    line = sum(4 * math.ceil((2 * k + 1) / 3) + 1 for k in lengths) / len(lengths)  # Base64 + \n
    memory = sum(100 + k for k in lengths) / len(lengths)  # an input kept in a set: ~100 B + bytes
    seconds = n * 5e-6  # 4-6 µs a pair, measured on the course's busy 2-core CPU (10M: 40 s, 1 GB)
    return (f"about {n * line / 1e9:.1f} GB of file, {n * memory / 1e9:.1f} GB of memory (every "
            f"input is kept to make them distinct) and {seconds / 60:.0f} minutes")


def cmd_data_make(args) -> int:
    if args.n > MAX_PAIRS:
        cost = make_estimate(args.n, args.min_len, args.max_len)
        return fail(f"--n {args.n:,} is more than data make makes at once ({MAX_PAIRS:,} "
                    f"pairs): it would take {cost}. A model trains on far fewer (the course's: "
                    "20,000 to 30,000)")
    exclude = [p.input for f in args.exclude for p in read_pairs(f)]
    pairs = iter_pairs(args.task, args.n, args.seed, min_len=args.min_len, max_len=args.max_len,
                       exclude=exclude, repeats=args.repeats)  # checked now, drawn while writing
    if args.n >= PROGRESS_FROM and not args.no_progress:
        from tqdm.auto import tqdm
        pairs = tqdm(pairs, total=args.n, desc="data make", unit=" pairs", unit_scale=True,
                     leave=False, mininterval=0.5)
    try:
        write_pairs(args.out, pairs, overwrite=args.force)  # streamed: no list of pairs in memory
    except KeyboardInterrupt:
        print(f"minitf: interrupted (Ctrl-C); {args.out} was not written (a pairs file is written "
              "whole or not at all)", file=sys.stderr)
        return 130
    print(f"wrote {args.n} {args.task} pairs (seed {args.seed}) to {args.out}")
    return 0


def config_from_args(args) -> Config:
    kw = dict(d_model=args.d_model, n_heads=args.n_heads, n_layers=args.n_layers,
              d_ff=args.d_ff or 2 * args.d_model, norm_position=args.norm_position,
              norm=args.norm, activation=args.activation, rope_base=args.rope_base,
              dropout=args.dropout, max_len=max_len(args),
              position_ids=args.position_ids, tie_embeddings=args.tie_embeddings,
              rope_scale=args.rope_scale, rope_freqs=args.rope_freqs, ffn=not args.no_ffn,
              position_offset=args.position_offset)
    # the modern block's switches (getattr: a namespace made before they existed has none)
    modern = dict(bias=not getattr(args, "no_bias", False), ffn_gate=getattr(args, "ffn_gate", False),
                  qk_norm=getattr(args, "qk_norm", False),
                  logit_softcap=getattr(args, "logit_softcap", None),
                  zero_init=getattr(args, "zero_init", False))
    kw.update(modern)
    preset = getattr(args, "preset", None)
    if preset:  # --preset sets its options where the command line left them at their defaults
        defaults = vars(parser().parse_args(["train", "--out", "-"]))
        given = {"norm": args.norm != defaults["norm"],
                 "norm_position": args.norm_position != defaults["norm_position"],
                 "activation": args.activation != defaults["activation"]}
        for name, value in PRESETS[preset].items():
            if not given.get(name, False):
                kw[name] = value
    return Config(**kw)


def max_len(args) -> int:
    """--max-len, else the text's --context (a language model reads windows of that length) or 128."""
    if args.max_len:
        return args.max_len
    return text_context(args) if getattr(args, "text", None) else 128


def text_context(args) -> int:
    """train --text's window length: --context, or 64 when it is not given."""
    return DEFAULT_CONTEXT if args.context is None else args.context


def split_args(args) -> dict:
    """data.make_splits's arguments for the pairs `train` generates (a checkpoint trained on
    generated pairs records them: core.checkpoint.checkpoint_pairs makes the same pairs again)."""
    return {"task": args.task, "n_train": args.n_train, "n_val": 0 if args.val else args.n_val,
            "seed": args.seed, "max_len": args.pair_len, "repeats": args.repeats,
            "val_repeats": args.val_repeats}


def train_val_pairs(args, max_len: int | None = None):
    """The pairs `train` uses: (training pairs, held-out pairs). --train FILE and --val FILE are
    read (pairs longer than max_len are bad lines); a --train FILE without --val holds out part of
    itself (hold_out); without --train, pairs of --task are generated (data.make_splits).
    validated_on(args, held-out pairs) says which of these the held-out pairs are."""
    if args.train:
        given = read_pairs_arg(args.train, args, max_len=max_len, flag="--train")
        if args.val:
            return given, read_pairs_arg(args.val, args, max_len=max_len, flag="--val")
        return hold_out(given, args.n_val, args.seed, args.train)
    train_pairs, val_pairs = make_splits(**split_args(args))
    if args.val:
        val_pairs = read_pairs_arg(args.val, args, max_len=max_len, flag="--val")
    return train_pairs, val_pairs


HELD_OUT_SHARE = 10  # a --train file without --val holds out one input in this many (<= --n-val)


def hold_out(pairs, n_val: int, seed: int, path):
    """(training pairs, held-out pairs) of one pairs file: one input in HELD_OUT_SHARE, at most
    n_val, drawn with the seed; every pair of a held-out input is held out, so no validation input
    is trained on. n_val 0: all pairs train and none validates. The task of the file is unknown,
    so generated pairs of --task would not measure it (a sort model scored on shift pairs)."""
    if n_val == 0:
        return pairs, []
    inputs = list(dict.fromkeys(p.input for p in pairs))
    n = min(n_val, len(inputs) // HELD_OUT_SHARE)
    if n == 0:
        raise ValueError(f"--train {path} has {len(inputs)} distinct inputs: too few to hold out "
                         f"one in {HELD_OUT_SHARE} for validation; give --val FILE, or --n-val 0 to "
                         "train without validation")
    held = set(random.Random(seed + 3000).sample(inputs, n))
    return [p for p in pairs if p.input not in held], [p for p in pairs if p.input in held]


def validated_on(args, val_pairs) -> str | None:
    """What the held-out pairs are, in words (the checkpoint records it), or None: no validation."""
    if args.text:
        return f"the last 10 % of {args.text}"
    if not val_pairs:
        return None
    if args.val:
        return f"{len(val_pairs)} pairs of {args.val}"
    if args.train:
        return (f"{len(val_pairs)} pairs held out of {args.train} (1 input in {HELD_OUT_SHARE}, "
                f"at most --n-val {args.n_val}, drawn with --seed {args.seed}; not trained on)")
    return f"{len(val_pairs)} generated {args.task} pairs with inputs not trained on"


LOSS_CURVE_EVERY = 10  # the stored training-loss curve: the mean of every 10 steps


def cmd_train(args) -> int:
    """Train and save. Nothing is lost on the way: --out is checked before training starts,
    --save-every N saves a resumable checkpoint every N steps, Ctrl-C (SIGINT) or SIGTERM saves
    the model reached and exits 130 or 143 (128 + the signal's number, the shell's convention),
    and --resume FILE goes on from such a checkpoint as if the run had never stopped."""
    if args.trainer == "lightning" and (args.resume or args.save_every is not None):
        return fail(LIGHTNING_KEEPS_ITS_OWN)
    state = None
    if args.resume:
        args, state = resumed_args(args)
    if args.text and args.context is None:
        args.context = DEFAULT_CONTEXT
    if args.warmup is None:
        args.warmup = DEFAULT_WARMUP
    problem = out_problem(args) or target_problem(args)
    if problem:
        return fail(problem)
    if args.save_every is not None and args.save_every < 1:
        return fail(f"--save-every is a number of steps >= 1, got {args.save_every}")
    import torch
    torch.set_num_threads(args.threads)
    if args.trainer == "lightning" and (args.optimizer != "adamw" or args.embed_lr != 1.0
                                        or args.muon_lr is not None or args.schedule != "cosine"):
        return fail("--optimizer, --muon-lr, --embed-lr and --schedule are for --trainer minitf; "
                    "Lightning trains with its own AdamW and cosine schedule")
    if args.trainer == "lightning" and args.device:
        return fail("--device is for --trainer minitf; Lightning takes --accelerator and --devices")
    device = pick_device(args.device or "cpu")
    torch.manual_seed(args.seed)
    config = config_from_args(args)
    if args.text:
        text = read_text(args.text, args.context, max_len=config.max_len)
        train_data, val_data = text.train, text.val
        described = (f"text {args.text}: {len(text.train):,} training and {len(text.val):,} "
                     f"validation bytes, windows of {args.context}")
    else:
        train_data, val_data = train_val_pairs(args, max_len=config.max_len)
        described = (f"{len(train_data)} training pairs "
                     f"({'from ' + args.train if args.train else f'generated {args.task}'})")
    args.validated_on = validated_on(args, val_data)
    described += f"; validating on {args.validated_on or 'nothing (--n-val 0)'}"
    if args.trainer == "lightning":
        model = Transformer(config)  # initialised on the CPU: the same weights whatever the device
        hist, run = train_with_lightning(args, model, train_data, val_data, described)
        if hist is None:
            return 0  # a DDP process other than the first: the first one reports and saves
        save_run(model, args, hist, run)
    else:
        # resumed: the weights reached; new: initialised on the CPU (the same whatever the device)
        model = load(args.resume) if state else Transformer(config)
        hist, run, stopped_by = train_with_minitf(args, model, device, train_data, val_data,
                                                  described, state)
        if stopped_by:
            print(f"interrupted ({stopped_by.name}) at step {hist.step} of {args.steps}; "
                  f"saved {args.out}; resume with: python -m minitf train --resume "
                  f"{shlex.quote(args.out)} --out {shlex.quote(args.out)}")
            return 128 + stopped_by
    for v in hist.val:
        if args.text:
            print(f"step {v['step']:6d}  val loss {v['loss']:.4f} nats/byte  "
                  f"{v['bits_per_byte']:.4f} bits/byte")
        else:
            print(f"step {v['step']:6d}  val loss {v['loss']:.4f}  char acc {v['char_accuracy']:.4f}  "
                  f"exact {v['exact_match']:.4f}")
    final = hist.last_val()
    if args.target_exact is not None:
        print(f"exact match {final['exact_match']:.4f} "
              + (f">= {args.target_exact}: stopped" if final["exact_match"] >= args.target_exact
                 else f"< {args.target_exact}: target not reached, all steps trained"))
    done = len(hist.loss) if args.target_exact is not None else args.steps
    resumed = f" (resumed at step {state['step']})" if state else ""
    unchecked = "; no validation (--n-val 0)" if final is None else ""
    print(f"trained {done} steps in {hist.seconds:.1f} s{resumed}{unchecked}; saved {args.out}")
    return 0


def train_with_minitf(args, model, device, train_data, val_data, described, state):
    """`train` (the default trainer): (History, what to record of the run, the signal that
    stopped it or None). The model is saved every --save-every steps, where a signal stopped it,
    or at the end."""
    model.to(device)
    on = "" if device.type == "cpu" else f" on {device}"
    resuming = f"; resuming {args.resume} at step {state['step']} of {args.steps}" if state else ""
    print(f"model: {count_parameters(model):,} parameters{on}, {described}{resuming}")
    run = {} if device.type == "cpu" else {"device": str(device)}

    def save_every(history):
        if args.save_every and history.step % args.save_every == 0 and history.step < args.steps:
            save_run(model, args, history, run, partial={"saved_every": args.save_every})

    with Stop() as stop:  # a signal from here on, the final save included, stops and saves
        hist = train(model, train_data, val_data, steps=args.steps, batch_size=args.batch_size,
                     lr=args.lr, warmup=args.warmup, seed=args.seed, eval_every=args.eval_every,
                     progress=not args.no_progress, stop_when=target_reached(args),
                     resume=state, after_step=save_every, should_stop=stop,
                     optimizer=optimizer_from_args(args, model),
                     schedule=args.schedule, cooldown=args.cooldown)
        if hist.interrupted:
            save_run(model, args, hist, run, partial={"interrupted": True, "signal": stop.signal.name})
            return hist, run, stop.signal
        save_run(model, args, hist, run)
    return hist, run, None


def optimizer_from_args(args, model):
    """None (train makes its usual AdamW) unless --optimizer, --embed-lr or --muon-lr ask for more."""
    if args.optimizer == "adamw" and args.embed_lr == 1.0 and args.muon_lr is None:
        return None
    from .core.train import make_lm_optimizer
    return make_lm_optimizer(model, args.lr, kind=args.optimizer, embed_lr=args.embed_lr,
                             muon_lr=args.muon_lr)


def save_run(model, args, hist, run: dict, partial: dict | None = None) -> None:
    """Save the model with what the run recorded. partial (a run stopped or saved on the way):
    how it was saved; the file then also holds the training state that --resume goes on from.
    --out was checked before training (free, or --force, or this run's own file): replace it."""
    final = hist.last_val()
    kind = ({"text": args.text, "context": args.context} if args.text
            else {} if args.train else {PAIRS: split_args(args)})
    every = LOSS_CURVE_EVERY
    curve = [round(sum(hist.loss[i:i + every]) / len(hist.loss[i:i + every]), 4)
             for i in range(0, len(hist.loss), every)]
    where = {**partial, "step": hist.step} if partial else {}
    save(model, args.out, overwrite=True, train_state=hist.state() if partial else None, metadata={
        "command": args.command_line, "steps": args.steps, "seed": args.seed, **where,
        **({"recipe": args.recipe} if args.recipe else {}),
        **({"target_exact": args.target_exact, "steps_trained": len(hist.loss)}
           if args.target_exact is not None else {}),
        **({"resumed": args.resumed} if args.resumed else {}),
        **({"validated_on": args.validated_on} if getattr(args, "validated_on", None) else {}),
        "train_seconds": round(hist.seconds, 1), "val": final, "val_curve": hist.val,
        "loss_curve_every": every, "loss_curve": curve, **kind, **run})


class Stop:
    """Ctrl-C (SIGINT) and SIGTERM while `train` runs: noted, and the step under way finishes; the
    run then stops and saves (train's should_stop asks this object). A second signal has its usual
    effect at once: a KeyboardInterrupt, or the end of the process."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __enter__(self):
        self.signal = None
        self.usual = {s: signal.signal(s, self.note) for s in self.SIGNALS}
        return self

    def note(self, signum, frame):
        self.signal = signal.Signals(signum)
        for s, handler in self.usual.items():
            signal.signal(s, handler)

    def __call__(self) -> bool:
        return self.signal is not None

    def __exit__(self, *exc):
        for s, handler in self.usual.items():
            signal.signal(s, handler)


# the flags a resumed run may set; every other one comes from the command the checkpoint records
RESUME_FLAGS = ("resume", "out", "force", "no_progress", "save_every")


def resumed_args(args):
    """`train --resume FILE`: the arguments of the run FILE records (its command), with this
    command's --out, --force, --no-progress and --save-every; and the training state to go on from."""
    defaults = vars(parser().parse_args(["train", "--out", args.out]))
    other = sorted(k for k, v in vars(args).items()
                   if k in defaults and k not in RESUME_FLAGS and v != defaults[k])
    if other:
        flags = ", ".join("--" + k.replace("_", "-") for k in other)
        raise ValueError(f"--resume goes on with the flags its checkpoint records; drop {flags} "
                         "(only --out, --force, --no-progress and --save-every may be given)")
    if not Path(args.resume).is_file():
        raise ValueError(f"--resume {args.resume}: no such file")
    state, meta = train_state(args.resume), load(args.resume).metadata
    if state is None or "command" not in meta:
        raise ValueError(f"{args.resume} holds no training state to go on from: it is a finished "
                         "run's checkpoint, or was not saved part-way by `python -m minitf train`")
    recorded = parser().parse_args(shlex.split(meta["command"])[3:])
    for name in RESUME_FLAGS:
        if name != "save_every" or args.save_every is not None:
            setattr(recorded, name, getattr(args, name))
    recorded.command_line, recorded.recipe = meta["command"], meta.get("recipe")
    recorded.resumed = [*meta.get("resumed", []), state["step"]]
    return recorded, state


def out_problem(args) -> str | None:
    """What would stop the checkpoint from being saved at --out, found before any training."""
    out = Path(args.out)
    if out.is_dir():
        return f"--out {out} is a folder; give the checkpoint's file name, e.g. {out / 'model.pt'}"
    own = args.resume and out.exists() and out.samefile(args.resume)  # a resumed run's own file
    if out.exists() and not (args.force or own):
        return f"{out} exists; pass --force to replace it"
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


def target_reached(args):
    """--target-exact: train's stop_when, true at the first validation whose exact match on the
    held-out pairs reaches the target (then the model is saved as it is); None without it."""
    if args.target_exact is None:
        return None
    return lambda metrics: metrics["exact_match"] >= args.target_exact


def train_with_lightning(args, model, train_data, val_data, described):
    """`train --trainer lightning`: (History, what to record of the run), or (None, None) in every
    process but the first of a multi-process run."""
    try:
        import lightning
    except ImportError:
        raise ValueError("--trainer lightning needs PyTorch Lightning, an optional extra: "
                         "pip install -e '.[lightning]'") from None
    from lightning.fabric.utilities.exceptions import MisconfigurationException
    from lightning.pytorch.utilities import rank_zero_only

    from .lightning import MinitfDataModule, fit

    options = {"accelerator": args.accelerator, "devices": args.devices, "strategy": args.strategy,
               "precision": args.precision, "num_nodes": args.num_nodes}
    if rank_zero_only.rank == 0:
        print(f"model: {count_parameters(model):,} parameters, {described}; Lightning "
              + ", ".join(f"{k} {v}" for k, v in options.items()))
    data = MinitfDataModule(train_data, val_data, batch_size=args.batch_size, seed=args.seed)
    try:
        hist = fit(model, data, steps=args.steps, lr=args.lr, warmup=args.warmup, seed=args.seed,
                   eval_every=args.eval_every, enable_progress_bar=not args.no_progress, **options)
    except MisconfigurationException as e:  # e.g. --accelerator gpu on a machine without one
        asked = " ".join(f"--{k.replace('_', '-')} {v}" for k, v in options.items())
        raise ValueError(f"Lightning cannot run {asked}: {' '.join(str(e).split())} "
                         "(--accelerator auto uses what this machine has)") from None
    if not hist.trainer.is_global_zero:
        return None, None
    model.cpu()
    return hist, {"trainer": {"lightning": lightning.__version__, **options,
                              "processes": hist.trainer.world_size}}


def devices_arg(value: str):
    """Lightning's --devices: a count, or "auto"."""
    return value if value == "auto" else int(value)


def use_threads(args) -> None:
    """--threads for the command (1 by default): torch's default, a thread per core, makes these
    small models slower, and on a shared machine many times slower (3 of 9 runs 9x)."""
    import torch
    torch.set_num_threads(args.threads)


def cmd_eval(args) -> int:
    use_threads(args)
    model = load(args.checkpoint).to(pick_device(args.device))
    kind = model_kind(model)
    if args.text and kind == "pairs":
        return fail(f"{args.checkpoint} is a pairs model (trained on input TAB output pairs), and "
                    "--text scores a language model: give a pairs file instead "
                    f"(python -m minitf eval {shlex.quote(args.checkpoint)} FILE)")
    if args.data and kind == "text":
        return fail(f"{args.checkpoint} is a language model (trained with --text "
                    f"{model.metadata['text']}), and a pairs file scores a pairs model: give "
                    "--text FILE instead")
    if args.text:
        warn_if_pairs_file(args.text)
        context = args.context or model.metadata.get("context", model.config.max_len)
        text = read_text(args.text, context, max_len=model.config.max_len)
        metrics = evaluate_text(model, text.val)
        baselines = text_baselines(text)
        print(json.dumps({"split": "validation (last 10 %)", "bytes": metrics["bytes"],
                          "loss": round(metrics["loss"], 4),
                          "bits_per_byte": round(metrics["bits_per_byte"], 4),
                          "baselines_bits_per_byte": {key: round(loss / math.log(2), 4) for key, loss
                                                      in zip(("uniform", "unigram", "bigram"),
                                                             (baselines.uniform, baselines.unigram,
                                                              baselines.bigram))}}))
        return 0
    if not args.data:
        return fail("eval needs a pairs file, or --text FILE for a language model")
    pairs = read_pairs_arg(args.data, args, max_len=model.config.max_len)
    metrics = {k: round(v, 4) for k, v in evaluate(model, pairs).items()}
    # a model right on the lengths it trained on and wrong beyond cannot hide that in the mean
    metrics["exact_match_by_length"] = {str(n): round(v, 4)
                                        for n, v in exact_match_by_length(model, pairs).items()}
    print(json.dumps(metrics))
    return 0


# check_sampling's messages on the command line name the flags
SAMPLING_FLAGS = {"temperature": "--temperature", "top_k": "--top-k", "top_p": "--top-p",
                  "greedy": "--greedy"}


# generate --max-new for a language model: at most this many bytes in one run. Measured here:
# about 900 bytes a second for lm.pt on one thread of the course's busy 2-core AMD EPYC.
MAX_NEW_TEXT = 20_000


def max_new_problem(max_new: int | None, model, lm: bool) -> str | None:
    """What is wrong with --max-new for this model, or None. A pairs model's sequence (input, TAB,
    output) ends at its max_len, so a longer output cannot come; a language model writes on
    without end, so a run is bounded where it would take minutes."""
    if max_new is None:
        return None
    if lm and max_new > MAX_NEW_TEXT:
        return (f"--max-new {max_new} is more than generate writes in one run ({MAX_NEW_TEXT:,} "
                "bytes, about 20 s at the 900 bytes a second measured on a busy 2-core AMD EPYC; "
                f"the model reads only its last {model.config.max_len} bytes, so a longer run "
                f"writes no better text): give --max-new {MAX_NEW_TEXT} or less, and continue "
                "from the end of the text")
    room = model.config.max_len - 2  # a one-byte input and its TAB
    if not lm and max_new > room:
        return (f"--max-new {max_new} is more than a pairs model can write: its sequence (input, "
                f"TAB, output) ends at max_len {model.config.max_len}, so an output has at most "
                f"{room} bytes; give --max-new {room} or less")
    return None


def cmd_generate(args) -> int:
    """Each input's output, printed as it is made: a language model's text byte by byte, a pairs
    model's outputs line by line. Every input is checked before anything is printed. Ctrl-C keeps
    what was printed, ends the line and exits 130."""
    use_threads(args)
    model = load(args.checkpoint).to(pick_device(args.device))
    lm = model_kind(model) == "text"  # a language model continues each prompt
    temperature = check_sampling(args.temperature, args.top_k, args.top_p, greedy=args.greedy,
                                 vocab_size=model.config.vocab_size, default=1.0 if lm else 0.0,
                                 names=SAMPLING_FLAGS)
    problem = max_new_problem(args.max_new, model, lm)
    if problem:
        return fail(problem)
    sampling = {"temperature": temperature, "top_k": args.top_k, "top_p": args.top_p,
                "seed": args.seed, "max_new": args.max_new}
    for text in args.text:  # all checked first: every input answered, or an error and no output
        if lm:
            text_prompt(text)
        else:
            pair_prompt(model, text)
    out = sys.stdout
    decoder = codecs.getincrementaldecoder("utf-8")(errors="backslashreplace")
    written = 0

    def show(byte: int) -> None:
        nonlocal written
        out.write(decoder.decode(bytes([byte])))
        out.flush()
        written += 1

    try:
        for text in args.text:
            if lm:
                out.write(text)
                generate_text(model, text, **sampling, on_byte=show)
                out.write(decoder.decode(b"", final=True) + "\n")
            else:
                answer = generate(model, text, **sampling)
                out.write(f"{text}\t{answer.decode('utf-8', errors='backslashreplace')}\n")
                written += len(answer)
            out.flush()
    except KeyboardInterrupt:
        out.write(decoder.decode(b"", final=True) + "\n")
        out.flush()
        print(f"minitf: interrupted (Ctrl-C); the {written:,} bytes generated so far are printed "
              "above", file=sys.stderr)
        return 130
    return 0


def cmd_doctor(args) -> int:
    from . import doctor
    return doctor.main()


def cmd_info(args) -> int:
    model = load(args.checkpoint)
    meta = dict(model.metadata)
    if args.json:
        print(json.dumps({"config": model.config.to_dict(), "parameters": count_parameters(model),
                          "metadata": meta}, indent=1))
        return 0
    kind = {"text": "a language model", "pairs": "a pairs model (input TAB output)",
            None: "a model whose metadata does not say what it was trained on"}[model_kind(model)]
    rows = [("config", " ".join(f"{k}={v}" for k, v in model.config.to_dict().items()))]
    if "command" in meta:
        rows.append(("command", meta.pop("command")))
    if "text" in meta:
        rows.append(("text", f"{meta.pop('text')}, context {meta.pop('context', '?')}"))
    trained = [steps_reached(meta),
               f"seed {meta.pop('seed')}" if "seed" in meta else None,
               f"{meta.pop('train_seconds')} s" if "train_seconds" in meta else None]
    if any(trained):
        rows.append(("training", ", ".join(t for t in trained if t)))
    if isinstance(meta.get("val"), dict):
        val = meta.pop("val")
        rows.append(("validation", ", ".join(f"{k} {format_number(v)}" for k, v in val.items())))
    curve = meta.pop("val_curve", None)
    if isinstance(curve, list) and curve:
        steps = ", ".join(str(v.get("step")) for v in curve[:8]) + (" …" if len(curve) > 8 else "")
        rows.append(("val curve", f"{len(curve)} validations, at steps {steps}"))
    losses, every = meta.pop("loss_curve", None), meta.pop("loss_curve_every", None)
    if isinstance(losses, list) and losses:
        rows.append(("loss curve", f"{len(losses)} means of {every or '?'} steps: "
                     f"{format_number(losses[0])} first, {format_number(losses[-1])} last"))
    rows += [(key, json.dumps(value) if isinstance(value, (dict, list)) else str(value))
             for key, value in meta.items()]
    print(f"{args.checkpoint}: {kind}, {count_parameters(model):,} parameters")
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(textwrap.fill(value, 100, initial_indent=f"  {key:<{width}}  ",
                            subsequent_indent=" " * (width + 4), break_on_hyphens=False,
                            break_long_words=False))
    return 0


def steps_reached(meta: dict) -> str | None:
    """The steps a checkpoint's run trained, in words (popped from meta): the planned --steps, or
    the step reached and the plan when the run stopped early (--target-exact, Ctrl-C, a save
    part-way)."""
    planned, trained, step = (meta.pop(k, None) for k in ("steps", "steps_trained", "step"))
    reached = trained if trained is not None else step
    if planned is None or reached is None or reached >= planned:
        known = planned if planned is not None else reached
        return None if known is None else f"{known} steps"
    why = ("interrupted" if meta.get("interrupted") else
           f"reached --target-exact {meta['target_exact']}" if "target_exact" in meta else
           "saved part-way" if "saved_every" in meta else "stopped early")
    return f"{reached} of {planned} planned steps ({why})"


def format_number(v) -> str:
    return f"{v:.4f}" if isinstance(v, float) else str(v)


class Parser(argparse.ArgumentParser):
    """argparse with minitf's one-line errors: `minitf: error: …` and where the options are."""

    def error(self, message):
        self.exit(2, f"minitf: error: {message} (see {self.prog} --help)\n")


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """--help shows each option's default where it has one that its help does not already state."""

    def _get_help_string(self, action):
        help = action.help or ""
        unset = action.default is None or action.default is False or action.default == []
        if (unset or action.default == argparse.SUPPRESS or not action.option_strings
                or "%(default)" in help or "default" in help.lower()):
            return help
        return f"{help} (default: %(default)s)" if help else "default: %(default)s"


def parser(train_defaults: dict | None = None) -> argparse.ArgumentParser:
    """The command line; train_defaults replace `train`'s defaults (a recipe's flags)."""
    p = Parser(prog="python -m minitf", description=__doc__, formatter_class=HelpFormatter,
               epilog=textwrap.fill("`python -m minitf COMMAND --help` lists a command's options. "
                                    "Alone, `python -m minitf` prints this help and exits with "
                                    "status 2 (a usage error).", 79))
    p.add_argument("--version", action="version", version=f"minitf {__version__}")
    p.set_defaults(func=None)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    kw = {"formatter_class": HelpFormatter}

    d = sub.add_parser("data", help="check or make pairs files", **kw)
    data = d.add_subparsers(dest="data_cmd", metavar="{check,make}")
    c = data.add_parser("check", help="report every bad line as FILE:LINE: reason (exit 1 if any)",
                        **kw)
    c.add_argument("files", nargs="+", metavar="FILE", help="pairs files")
    c.add_argument("--max-len", type=int, default=None, help="also flag pairs longer than this")
    c.set_defaults(func=cmd_data_check)
    m = data.add_parser("make", help="generate a task's pairs into a file", **kw)
    m.add_argument("--task", choices=sorted(TASKS), default="shift",
                   help="the rule from input to output")
    m.add_argument("--n", type=int, required=True,
                   help=f"how many distinct pairs (at most {MAX_PAIRS:,}; streamed to the file)")
    m.add_argument("--seed", type=int, default=0, help="random seed: the same file every time")
    m.add_argument("--min-len", type=int, default=1, help="shortest input, in bytes")
    m.add_argument("--max-len", type=int, default=12, help="longest input, in bytes")
    m.add_argument("--repeats", type=float, default=0.0,
                   help="fraction of inputs from a 2-6 byte sub-alphabet, so bytes repeat")
    m.add_argument("--exclude", nargs="*", default=[], help="pairs files whose inputs to leave out")
    m.add_argument("--out", required=True, help="the pairs file to write")
    m.add_argument("--force", action="store_true", help="replace an existing file")
    m.add_argument("--no-progress", action="store_true",
                   help=f"no progress bar (shown from {PROGRESS_FROM:,} pairs)")
    m.set_defaults(func=cmd_data_make)

    t = sub.add_parser("train", help="train a model and save a checkpoint",
                       epilog=recipes_help(), formatter_class=HelpFormatter)
    t.add_argument("--text", help="train a language model on this file (any bytes; first 90 %% "
                   "trains, last 10 %% validates) instead of on pairs")
    t.add_argument("--context", type=int, default=None,
                   help=f"with --text: bytes per training window (default {DEFAULT_CONTEXT})")
    t.add_argument("--train", help="pairs file (default: generate --n-train pairs of --task)")
    t.add_argument("--val", help="pairs file (default: with --train, the pairs of one input in 10 "
                   "of that file, held out; else --n-val fresh held-out pairs of --task)")
    t.add_argument("--skip-bad-lines", action="store_true",
                   help="read only the good lines of --train/--val files, saying how many were "
                   "skipped")
    t.add_argument("--task", choices=sorted(TASKS), default="shift",
                   help="generated pairs' rule (without --train)")
    t.add_argument("--n-train", type=int, default=20000,
                   help="generated training pairs (without --train)")
    t.add_argument("--n-val", type=int, default=1000,
                   help="held-out pairs without --val: generated ones, or at most this many inputs "
                   "held out of --train; 0: no validation")
    t.add_argument("--val-repeats", type=float, default=0.0,
                   help="fraction of the fresh held-out inputs with repeated bytes (as --repeats)")
    t.add_argument("--repeats", type=float, default=0.0,
                   help="fraction of generated training inputs with repeated bytes")
    t.add_argument("--pair-len", type=int, default=12, help="longest generated input")
    t.add_argument("--d-model", type=int, default=4, help="the model's width")
    t.add_argument("--n-heads", type=int, default=2, help="attention heads per layer")
    t.add_argument("--n-layers", type=int, default=2, help="blocks (layers)")
    t.add_argument("--d-ff", type=int, default=None, help="default 2·d_model")
    t.add_argument("--norm-position", choices=["post", "pre"], default="post",
                   help="normalise after each sub-layer (post) or before it (pre)")
    t.add_argument("--norm", choices=["layer", "rms"], default="layer", help="LayerNorm or RMSNorm")
    t.add_argument("--activation", choices=["relu", "gelu", "silu", "relu2"], default="relu",
                   help="the feed-forward's non-linearity (relu2: ReLU squared)")
    t.add_argument("--rope-base", type=float, default=10000.0,
                   help="RoPE's base: frequencies base^(-2i/head_dim)")
    t.add_argument("--rope-scale", type=float, default=1.0,
                   help="multiply every RoPE frequency (= the positions) by this")
    t.add_argument("--rope-freqs", type=float, nargs="+", default=None, metavar="THETA",
                   help="RoPE frequencies in rad/position: head_dim/2 numbers, or n_heads·head_dim/2 "
                   "(head by head), instead of --rope-base")
    t.add_argument("--position-ids", choices=["sequence", "coupled"], default="sequence",
                   help="coupled: output byte j gets input byte j's position id (they restart after TAB)")
    t.add_argument("--position-offset", type=int, default=0, metavar="N",
                   help="training only: shift every coupled position id but TAB's by a random 0…N "
                   "per row (randomised positions; needs --position-ids coupled)")
    t.add_argument("--tie-embeddings", action="store_true",
                   help="the output head reuses the embedding table (keeps its own bias)")
    t.add_argument("--no-ffn", action="store_true",
                   help="blocks of attention only: no feed-forward sub-layer (and no norm before it)")
    t.add_argument("--no-bias", action="store_true", help="linear layers without biases")
    t.add_argument("--ffn-gate", action="store_true",
                   help="gated FFN: down(act(up x) * gate x); SwiGLU with --activation silu")
    t.add_argument("--qk-norm", action="store_true", help="RMSNorm on each head's q and k")
    t.add_argument("--logit-softcap", type=float, default=None, metavar="C",
                   help="logits = C·tanh(logits/C)")
    t.add_argument("--zero-init", action="store_true",
                   help="the blocks' output projections start at zero")
    t.add_argument("--preset", choices=sorted(PRESETS), default=None,
                   help="modern: RMSNorm pre-norm, no biases, SwiGLU, QK-norm (flags given win)")
    t.add_argument("--optimizer", choices=["adamw", "muon"], default="adamw",
                   help="muon: torch.optim.Muon for the blocks' matrices, AdamW for the rest")
    t.add_argument("--muon-lr", type=float, default=None, help="Muon's peak lr (default --lr)")
    t.add_argument("--embed-lr", type=float, default=1.0, metavar="X",
                   help="the embedding's lr is --lr times this")
    t.add_argument("--schedule", choices=["cosine", "wsd"], default="cosine",
                   help="cosine: warm-up, cosine decay; wsd: warm-up, constant, linear cooldown")
    t.add_argument("--cooldown", type=float, default=0.2,
                   help="with --schedule wsd: the fraction of steps spent decaying")
    t.add_argument("--dropout", type=float, default=None, help="default: the seed's rule")
    t.add_argument("--max-len", type=int, default=None,
                   help="longest sequence the model reads (default 128; with --text: --context)")
    t.add_argument("--steps", type=int, default=DEFAULT_STEPS, help="training steps")
    t.add_argument("--batch-size", type=int, default=64, help="pairs or windows per step")
    t.add_argument("--lr", type=float, default=3e-3, help="peak learning rate")
    t.add_argument("--warmup", type=int, default=None,
                   help=f"steps of linear warm-up, at most --steps (default {DEFAULT_WARMUP})")
    t.add_argument("--eval-every", type=int, default=None,
                   help="validate every N steps (default: once, at the end)")
    t.add_argument("--seed", type=int, default=0, help="random seed: weights, data, batches")
    t.add_argument("--threads", type=int, default=1,
                   help="CPU threads (models this small train fastest on one)")
    t.add_argument("--device", choices=DEVICES, default=None,
                   help="where minitf trains: auto = cuda, else mps, else cpu. Default cpu: the "
                   "course's models are tiny (faster there) and the CPU repeats stored results exactly")
    t.add_argument("--trainer", choices=["minitf", "lightning"], default="minitf",
                   help="lightning: the same training run by PyTorch Lightning "
                   "(pip install -e '.[lightning]'), with the four options below")
    t.add_argument("--accelerator", default="auto", help="with --trainer lightning: cpu, gpu, mps, auto")
    t.add_argument("--devices", type=devices_arg, default=1,
                   help="with --trainer lightning: processes/GPUs per machine (or auto)")
    t.add_argument("--num-nodes", type=int, default=1, help="with --trainer lightning: machines")
    t.add_argument("--strategy", default="auto", help="with --trainer lightning: e.g. ddp")
    t.add_argument("--precision", default="32-true",
                   help="with --trainer lightning: 32-true, bf16-mixed, 16-mixed, 64-true")
    t.add_argument("--out", required=True, help="checkpoint path")
    t.add_argument("--force", action="store_true", help="replace an existing checkpoint")
    t.add_argument("--save-every", type=int, default=None, metavar="N",
                   help="also save a resumable checkpoint at --out every N steps (a long run then "
                   "loses at most N steps); Ctrl-C or SIGTERM saves one where the run stopped")
    t.add_argument("--resume", metavar="FILE",
                   help="go on from a checkpoint saved part-way (--save-every, Ctrl-C) exactly as "
                   "if the run had not stopped; its flags come from the command FILE records")
    t.add_argument("--no-progress", action="store_true")
    t.add_argument("--recipe", choices=list(recipes.RECIPES),
                   help="start from a named recipe's flags (listed below); flags given override them")
    t.add_argument("--target-exact", type=float, default=None, metavar="FRACTION",
                   help="stop at the first evaluation (every --eval-every steps) whose exact match "
                   "on the held-out pairs reaches this, and save the model there")
    t.set_defaults(func=cmd_train, resumed=None, **(train_defaults or {}))

    e = sub.add_parser("eval", help="loss, character accuracy and exact match on a pairs file; "
                       "with --text, a language model's validation loss beside counting baselines",
                       **kw)
    e.add_argument("checkpoint", help="a checkpoint `train` saved")
    e.add_argument("data", nargs="?", help="pairs file (a pairs model)")
    e.add_argument("--text", help="text file (a language model): scored on its last 10 %%")
    e.add_argument("--skip-bad-lines", action="store_true",
                   help="score only the pairs file's good lines, saying how many were skipped "
                   "(`data check FILE` lists them)")
    e.add_argument("--context", type=int, default=None,
                   help="window length (default: the checkpoint's training context)")
    e.add_argument("--device", choices=DEVICES, default="cpu", help="auto = cuda, else mps, else cpu")
    e.add_argument("--threads", type=int, default=1,
                   help="CPU threads (models this small evaluate fastest on one)")
    e.set_defaults(func=cmd_eval)

    g = sub.add_parser("generate", help="print the model's output for each input (a language "
                       "model: each prompt continued)", **kw,
                       epilog=textwrap.fill(
                           "Greedy decoding takes the most likely byte every time: --greedy, or "
                           "--temperature 0 (the same). A temperature > 0 samples; --top-k and "
                           "--top-p then narrow the bytes it draws from, so with greedy decoding "
                           "they are refused, as is --greedy with a temperature > 0.", 79))
    g.add_argument("checkpoint", help="a checkpoint `train` saved")
    g.add_argument("text", nargs="+", metavar="TEXT",
                   help="inputs for a pairs model, prompts for a language model")
    g.add_argument("--greedy", action="store_true",
                   help="the most likely byte every time (= --temperature 0)")
    g.add_argument("--temperature", type=float, default=None,
                   help=">= 0, 0 = greedy; default: greedy for pairs, 1.0 for a language model")
    g.add_argument("--top-k", type=int, default=None,
                   help="sample among the k most likely bytes (1 to 256)")
    g.add_argument("--top-p", type=float, default=None,
                   help="sample among the most likely bytes that together reach probability p, "
                   "in (0, 1]")
    g.add_argument("--seed", type=int, default=None, help="random seed: the same text every time")
    g.add_argument("--max-new", type=int, default=None,
                   help="bytes to generate, >= 1 (default: 64 for pairs, up to EOS, and at most "
                   f"max_len - 2; 200 for a language model, at most {MAX_NEW_TEXT:,})")
    g.add_argument("--device", choices=DEVICES, default="cpu", help="auto = cuda, else mps, else cpu")
    g.add_argument("--threads", type=int, default=1,
                   help="CPU threads (models this small generate fastest on one)")
    g.set_defaults(func=cmd_generate)

    d = sub.add_parser("doctor", help="why your numbers may differ from the book's: package "
                       "versions against the pins, CPU kernels, threads, a forward pass and a "
                       "training step against stored values, a GPU against the CPU (exit 1 if "
                       "something differs)", **kw)
    d.set_defaults(func=cmd_doctor)
    i = sub.add_parser("info", help="a checkpoint's config, parameter count and what its metadata "
                       "records (command, steps, metrics)", **kw)
    i.add_argument("checkpoint", help="a checkpoint file")
    i.add_argument("--json", action="store_true", help="config, parameters and metadata as JSON")
    i.set_defaults(func=cmd_info)
    return p


def flag_words(values: dict) -> list[str]:
    """`train` settings by argparse name (a recipe's values) as flags: n_train 10000 → --n-train
    10000, a switch set True → --tie-embeddings, a list → one flag followed by its values."""
    words = []
    for name, value in values.items():
        flag = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            words += [flag] if value else []
        else:
            words += [flag, *map(str, value if isinstance(value, list) else [value])]
    return words


def recipes_help() -> str:
    """The recipes as `train --help` lists them: each one's description and its flags."""
    lines = ["recipes (--recipe NAME; flags given on the command line override the recipe's):"]
    for r in recipes.RECIPES.values():
        lines += textwrap.wrap(r.description, 92, initial_indent=f"  {r.name}: ",
                               subsequent_indent="      ", break_on_hyphens=False)
        lines += textwrap.wrap(shlex.join(flag_words(r.values)), 92, initial_indent="      = ",
                               subsequent_indent="        ", break_on_hyphens=False)
    return "\n".join(lines)


def recipe_expanded(name: str, argv: list[str], given: set[str]) -> list[str]:
    """The `train` words a recipe run stands for: the recipe's flags that were not given on the
    command line (`given`: their argparse dests), then `argv` (without `--recipe NAME`)."""
    kept = flag_words({k: v for k, v in recipes.get(name).values.items() if k not in given})
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


def with_recipe(name: str, argv: list[str]):
    """`train --recipe NAME …` parsed again with the recipe's flags as defaults (flags given on the
    command line win), and the words of the same command written out in full (recipe_expanded)."""
    recipe = recipes.get(name)
    flags = vars(parser().parse_args(["train", *flag_words(recipe.values), "--out", "-"]))  # typed and checked
    defaults = {dest: flags[dest] for dest in recipe.values}
    args = parser(defaults).parse_args(argv)
    unset = object()  # which of the recipe's flags were given: those that do not come back unset
    marked = parser(dict.fromkeys(defaults, unset)).parse_args(argv)
    given = {dest for dest in defaults if getattr(marked, dest) is not unset}
    start = argv.index("train") + 1
    return args, [*argv[:start], *recipe_expanded(name, argv[start:], given)]


def main(argv=None) -> int:
    """Run one command; returns the exit status: 0, 1 (`data check` found bad lines), 2 (a bad
    input: one line on stderr), 130 (Ctrl-C: one line on stderr; `train` saves first, `generate`
    keeps what it printed), 141 (the reader of stdout went away, as with `… | head`)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        status = run(argv)
        sys.stdout.flush()  # a closed pipe shows here, not at exit
    except KeyboardInterrupt:  # Ctrl-C: one line, and the shell's status for SIGINT (128 + 2)
        print("minitf: interrupted (Ctrl-C)", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `python -m minitf data check FILE | head`: stop quietly, as Unix tools do (killed by
        # SIGPIPE, the shell reports 128 + 13); what is still buffered goes nowhere
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    return status


def run(argv: list[str]) -> int:
    try:
        args = parser().parse_args(argv)
        words = argv
        if getattr(args, "recipe", None):
            args, words = with_recipe(args.recipe, argv)
    except SystemExit as e:  # --help, --version, or argparse's one-line error
        return e.code if isinstance(e.code, int) else 0
    if args.func is None:  # `python -m minitf` or `python -m minitf data` alone: its help, and
        try:               # the status of a usage error
            parser().parse_args([args.command, "--help"] if args.command else ["--help"])
        except SystemExit:
            return 2
    # how to make the same result again: flags that change nothing about it are left out
    args.command_line = shlex.join(["python", "-m", "minitf",
                                    *(a for a in words if a not in ("--force", "--no-progress"))])
    try:
        problem = check_args(args)
        if problem:
            return fail(problem)
        return args.func(args)
    except DataError as e:
        lenient = hasattr(args, "skip_bad_lines")  # eval and train read leniently on request
        reader = ", or --skip-bad-lines to read the good ones only" if lenient else ""
        return fail(f"{e}; `python -m minitf data check {shlex.quote(e.path)}` lists every bad "
                    f"line{reader}")
    except (CheckpointError, FileExistsError, ValueError) as e:
        return fail(str(e))
    except BrokenPipeError:
        raise
    except OSError as e:  # a missing file, a directory given for a file, no permission
        if e.filename is None:
            raise
        return fail(f"{e.filename}: {(e.strerror or str(e)).lower()}")
