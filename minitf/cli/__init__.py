"""`python -m minitf …` and the `minitf` command: the door to the library from a shell.

One module per job: `parser` (the commands and flags), `checks` (flags checked before any work),
`settings` (train's arguments as a Config and pairs), `inputs` (files named on the command line),
`data_cmd` (data check, data make), `train_cmd` (training with signals, --save-every and --resume),
`run_cmds` (eval, generate, info, doctor), `recipe_flags` (recipes as flags) and `messages` (the
one-line errors). This module runs a command: main() and the exit statuses it returns."""
from __future__ import annotations

import os
import shlex
import sys

from ..core.checkpoint import CheckpointError
from ..core.config import Config
from ..core.data import DataError
from . import data_cmd, run_cmds, train_cmd
from .checks import check_args, typed_flags
from .messages import fail
from .parser import parser, with_recipe
from .recipe_flags import flag_words, recipe_expanded
from .settings import config_from_args, hold_out, split_args, train_val_pairs

__all__ = ["main", "parser", "with_recipe", "flag_words", "recipe_expanded", "config_from_args",
           "hold_out", "split_args", "train_val_pairs"]


def command(args):
    """The function that runs the parsed command, or None (`python -m minitf` or `data` alone).
    Looked up at each call, so that a test may replace one command's function in its module."""
    if args.command is None:
        return None
    name = args.command + (f" {args.data_cmd}" if args.command == "data" else "")
    return {"data check": data_cmd.cmd_data_check, "data make": data_cmd.cmd_data_make,
            "train": train_cmd.cmd_train, "eval": run_cmds.cmd_eval,
            "generate": run_cmds.cmd_generate, "doctor": run_cmds.cmd_doctor,
            "info": run_cmds.cmd_info}.get(name)


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


def data_error(e: DataError, args) -> str:
    """A bad pairs file in one line: its first bad line, the `data check` command that lists
    every bad line by the same rule (the same max_len), and what else may help."""
    lenient = hasattr(args, "skip_bad_lines")  # eval and train read leniently on request
    reader = ", or --skip-bad-lines to read the good ones only" if lenient else ""
    longest = f" --max-len {e.max_len}" if e.max_len not in (None, Config.max_len) else ""
    message = (f"{e}; `python -m minitf data check {shlex.quote(e.path)}{longest}` lists every "
               f"bad line{reader}")
    if (getattr(args, "command", None) == "train" and e.bad == e.lines
            and e.reason.startswith("not valid Base64")):  # no line is Base64: a text, most likely
        message += (f". No line of it is Base64: if it is a text to learn from, train a language "
                    f"model on it with --text {shlex.quote(e.path)}")
    return message


def run(argv: list[str]) -> int:
    try:
        args = parser().parse_args(argv)
        words = argv
        if getattr(args, "recipe", None):
            args, words = with_recipe(args.recipe, argv)
    except SystemExit as e:  # --help, --version, or argparse's one-line error
        return e.code if isinstance(e.code, int) else 0
    run_command = command(args)
    if run_command is None:  # `python -m minitf` or `python -m minitf data` alone: its help, and
        try:               # the status of a usage error
            parser().parse_args([args.command, "--help"] if args.command else ["--help"])
        except SystemExit:
            return 2
    # how to make the same result again: flags that change nothing about it are left out
    args.command_line = shlex.join(["python", "-m", "minitf",
                                    *(a for a in words if a not in ("--force", "--no-progress"))])
    if args.command == "train":
        args.typed = typed_flags(argv)
    try:
        problem = check_args(args)
        if problem:
            return fail(problem)
        return run_command(args)
    except DataError as e:
        return fail(data_error(e, args))
    except (CheckpointError, FileExistsError, ValueError) as e:
        return fail(str(e))
    except BrokenPipeError:
        raise
    except OSError as e:  # a missing file, a directory given for a file, no permission
        if e.filename is None:
            raise
        return fail(f"{e.filename}: {(e.strerror or str(e)).lower()}")
