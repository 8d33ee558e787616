"""Recipes (core.recipes: `train` settings by argparse name) rendered as command-line flags: for
`train --help`, and for the full command a `--recipe` run records."""
from __future__ import annotations

import functools
import shlex
import textwrap

from ..core import recipes


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


# train settings that shape generated pairs: a run on a text, or on a pairs file, ignores them
GENERATED_TRAINING = ("task", "n_train", "repeats", "pair_len")
GENERATED_HELD_OUT = ("n_val", "val_repeats")


def unused_settings(args) -> list[str]:
    """The `train` settings (argparse dests) this run would ignore, whatever their values: the
    generated pairs' settings with --text or --train (held-out ones too with --val), and the wsd
    schedule's --cooldown under another schedule. Typed on the command line they are refused
    (cli.checks); a recipe's own are left out of the command the run records."""
    unused = []
    if args.text:
        unused += [*GENERATED_TRAINING, *GENERATED_HELD_OUT]
    elif args.train:
        unused += [*GENERATED_TRAINING, "val_repeats", *(["n_val"] if args.val else [])]
    elif args.val:
        unused += GENERATED_HELD_OUT
    if args.schedule != "wsd":
        unused.append("cooldown")
    return unused


@functools.cache  # the recipes are fixed; every command line builds the parser that shows them
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
