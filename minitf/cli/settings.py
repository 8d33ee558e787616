"""`train`'s arguments turned into what the library takes: the model's Config, the window length,
and the training and held-out pairs (read, held out of a file, or generated), in words too."""
from __future__ import annotations

import random

from ..core.config import PRESETS, Config
from ..core.data import make_splits
from ..core.words import plural
from .inputs import read_pairs_arg
from .parser import DEFAULT_CONTEXT, parser


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
    """--max-len, else the text's --context (a language model reads windows of that length) or
    Config's 128 (which `data check` checks against too)."""
    if args.max_len:
        return args.max_len
    return text_context(args) if getattr(args, "text", None) else Config.max_len


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
        return f"{plural(len(val_pairs), 'pair')} of {args.val}"
    if args.train:
        return (f"{plural(len(val_pairs), 'pair')} held out of {args.train} (1 input in {HELD_OUT_SHARE}, "
                f"at most --n-val {args.n_val}, drawn with --seed {args.seed}; not trained on)")
    return f"{plural(len(val_pairs), 'generated ' + args.task + ' pair')} with inputs not trained on"
