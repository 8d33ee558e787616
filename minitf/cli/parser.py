"""The command line's grammar: every command and flag with its help and default, minitf's one-line
usage errors, and `train --recipe NAME` parsed with the recipe's flags as defaults."""
from __future__ import annotations

import argparse
import functools
import textwrap

from .. import __version__
from ..core import recipes
from ..core.config import PRESETS, Config
from ..core.data import TASKS
from ..core.devices import CHOICES as DEVICES
from ..core.train import DEFAULT_STEPS, SCHEDULES
from .data_cmd import MAX_PAIRS, PROGRESS_FROM
from .recipe_flags import flag_words, recipe_expanded, recipes_help, unused_settings
from .run_cmds import MAX_NEW_TEXT

# the top-level --help's description
DESCRIPTION = """`python -m minitf …`: check and make data, train, evaluate, generate from the command line.

Pairs by default; `--text FILE` trains and evaluates a language model on a text file instead.
`--device` runs on a GPU; `train --trainer lightning` hands the same training to PyTorch Lightning
(several GPUs or machines with --devices, --num-nodes, --strategy ddp). `info FILE` describes a
checkpoint. A bad input is one line on stderr, `minitf: error: …`, and exit status 2."""

DEFAULT_CONTEXT = 64  # train --text: bytes per window when --context is not given
DEFAULT_WARMUP = 50   # train: steps of warm-up when --warmup is not given


def devices_arg(value: str):
    """Lightning's --devices: a count, or "auto"."""
    return value if value == "auto" else int(value)


class Parser(argparse.ArgumentParser):
    """argparse with minitf's one-line errors: `minitf: error: …` and where the options are."""

    def error(self, message):
        self.exit(2, f"minitf: error: {message} (see {self.prog} --help)\n")

    def parse_known_args(self, args=None, namespace=None):
        namespace, rest = super().parse_known_args(args, namespace)
        vars(namespace).pop(OnOrOff.MEMORY, None)  # the arguments are what was asked, only
        return namespace, rest


class OnOrOff(argparse.BooleanOptionalAction):
    """--x and --no-x; given both on one command line they contradict each other, and argparse
    would silently take the last: refused instead, naming both."""

    MEMORY = "switches_given"  # what the parse has seen, dropped once it ends (Parser)

    def __call__(self, parser, namespace, values, option_string=None):
        said = vars(namespace).setdefault(self.MEMORY, {})
        earlier = said.get(self.dest)
        if earlier and earlier != option_string:
            parser.error(f"{earlier} and {option_string} say opposite things: give one of them")
        said[self.dest] = option_string
        super().__call__(parser, namespace, values, option_string)


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
    """The command line; train_defaults replace `train`'s defaults (a recipe's flags). Without
    them it is built once: one command reads the plain defaults several times (a recipe, the
    flags typed, a resumed run's), and a parser is not changed by parsing."""
    return _plain_parser() if train_defaults is None else _build(train_defaults)


@functools.cache
def _plain_parser() -> argparse.ArgumentParser:
    return _build(None)


def _build(train_defaults: dict | None) -> argparse.ArgumentParser:
    p = Parser(prog="python -m minitf", description=DESCRIPTION, formatter_class=HelpFormatter,
               epilog=textwrap.fill("`python -m minitf COMMAND --help` lists a command's options. "
                                    "Alone, `python -m minitf` prints this help and exits with "
                                    "status 2 (a usage error).", 79))
    p.add_argument("--version", action="version", version=f"minitf {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    kw = {"formatter_class": HelpFormatter}

    d = sub.add_parser("data", help="check or make pairs files", **kw)
    data = d.add_subparsers(dest="data_cmd", metavar="{check,make}")
    c = data.add_parser("check", help="report every bad line as FILE:LINE: reason (exit 1 if any)",
                        **kw)
    c.add_argument("files", nargs="+", metavar="FILE", help="pairs files")
    c.add_argument("--max-len", type=int, default=Config.max_len,
                   help="flag pairs longer than a model of this max_len reads (default: %(default)s, "
                   "train's)")
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

    t = sub.add_parser("train", help="train a model and save a checkpoint",
                       epilog=recipes_help(), formatter_class=HelpFormatter)
    t.add_argument("--text", help="train a language model on this file (any bytes; first 90 %% "
                   "trains, last 10 %% validates) instead of on pairs")
    t.add_argument("--context", type=int, default=None,
                   help=f"with --text: bytes per training window (default {DEFAULT_CONTEXT})")
    t.add_argument("--tokenizer", default=None, metavar="bpe:N",
                   help="with --text: tokens instead of bytes, a byte-pair encoding of N tokens "
                   "trained on the first 90 %% (GPT-2's pre-tokenizer; bpe:N:none for none) and "
                   "saved in the checkpoint; --context then counts tokens, and the validation "
                   "still reports bits per byte")
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
    t.add_argument("--qk-norm", action=OnOrOff, default=False,
                   help="RMSNorm on each head's q and k (--no-qk-norm: none, where a recipe has it)")
    t.add_argument("--logit-softcap", type=float, default=None, metavar="C",
                   help="logits = C·tanh(logits/C)")
    t.add_argument("--zero-init", action="store_true",
                   help="the blocks' output projections start at zero")
    t.add_argument("--preset", choices=sorted(PRESETS), default=None,
                   help="modern: RMSNorm pre-norm, no biases, SwiGLU, QK-norm (flags given win)")
    t.add_argument("--optimizer", choices=["adamw", "muon"], default="adamw",
                   help="muon: Muon (torch.optim.Muon's update; in float32 on a CPU without fast "
                   "bf16) for the blocks' matrices, AdamW for the rest")
    t.add_argument("--muon-lr", type=float, default=None, help="Muon's peak lr (default --lr)")
    t.add_argument("--embed-lr", type=float, default=1.0, metavar="X",
                   help="the embedding's lr is --lr times this")
    t.add_argument("--weight-decay", type=float, default=0.01, metavar="W",
                   help="decoupled weight decay on the matrices (AdamW's, and Muon's)")
    t.add_argument("--schedule", choices=SCHEDULES, default="cosine",
                   help="cosine: warm-up, cosine decay; wsd: warm-up, constant, linear cooldown")
    t.add_argument("--cooldown", type=float, default=0.2,
                   help="with --schedule wsd: the fraction of steps spent decaying")
    t.add_argument("--dropout", type=float, default=None, help="default: the seed's rule")
    t.add_argument("--max-len", type=int, default=None,
                   help="longest sequence the model reads (default 128; with --text: --context)")
    t.add_argument("--steps", type=int, default=DEFAULT_STEPS, help="training steps")
    t.add_argument("--time", type=float, default=None, metavar="SECONDS",
                   help="a wall-clock budget: train until it is used up, the schedule following "
                   "the elapsed time (its shape from --steps and --warmup), the last validation "
                   "included, so the command ends on time on any CPU")
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
    t.set_defaults(resumed=None, **(train_defaults or {}))

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

    d = sub.add_parser("doctor", help="why your numbers may differ from the book's: package "
                       "versions against the pins, CPU kernels, threads, a forward pass and a "
                       "training step against stored values, a GPU against the CPU (exit 1 if "
                       "something differs)", **kw)
    i = sub.add_parser("info", help="a checkpoint's config, parameter count and what its metadata "
                       "records (command, steps, metrics)", **kw)
    i.add_argument("checkpoint", help="a checkpoint file")
    i.add_argument("--json", action="store_true", help="config, parameters and metadata as JSON")
    return p


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
    # a recipe setting that belongs to a choice the command line changed goes with it
    # (`--recipe lm-best --optimizer adamw` drops the recipe's Muon lr)
    for setting, (choice, value) in BELONGS_TO.items():
        if setting in defaults and setting not in given and getattr(args, choice) != value:
            setattr(args, setting, None)
            given.add(setting)
    # a recipe setting this run ignores (its generated pairs' under --train, say) is not written
    # out: the recorded command, typed again, must not be refused for it (cli.checks)
    plain = vars(parser().parse_args(["train", "--out", "-"]))
    for setting in set(unused_settings(args)) & set(defaults) - given:
        setattr(args, setting, plain[setting])
        given.add(setting)
    start = argv.index("train") + 1
    return args, [*argv[:start], *recipe_expanded(name, argv[start:], given)]


# recipe settings that only mean something for one choice of another flag
BELONGS_TO = {"muon_lr": ("optimizer", "muon")}
