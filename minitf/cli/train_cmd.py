"""`train`: check, build, train and save, with nothing lost on the way: Ctrl-C and SIGTERM save
the model reached, --save-every saves part-way, --resume goes on from such a checkpoint; or the
same training run by PyTorch Lightning."""
from __future__ import annotations

import os
import shlex
import signal
import sys
import time
from pathlib import Path

from ..core.checkpoint import PAIRS, load, save, train_state
from ..core.devices import pick_device
from ..core.model import Transformer, count_parameters
from ..core.text import read_text, train_tokenizer
from ..core.train import train
from ..core.words import plural
from .checks import LIGHTNING_KEEPS_ITS_OWN, out_problem, target_problem
from .messages import fail
from .parser import DEFAULT_CONTEXT, DEFAULT_WARMUP, parser
from .settings import config_from_args, split_args, train_val_pairs, validated_on


LOSS_CURVE_EVERY = 10  # the stored training-loss curve: the mean of every 10 steps


def cmd_train(args) -> int:
    """Train and save. Nothing is lost on the way: --out is checked before training starts,
    --save-every N saves a resumable checkpoint every N steps, Ctrl-C (SIGINT) or SIGTERM saves
    the model reached and exits 130 or 143 (128 + the signal's number, the shell's convention),
    and --resume FILE goes on from such a checkpoint as if the run had never stopped."""
    began = time.perf_counter()  # --time counts from here
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
                                        or args.muon_lr is not None or args.schedule != "cosine"
                                        or args.weight_decay != 0.01):
        return fail("--optimizer, --muon-lr, --embed-lr, --weight-decay and --schedule are for "
                    "--trainer minitf; "
                    "Lightning trains with its own AdamW and cosine schedule")
    if args.trainer == "lightning" and args.device:
        return fail("--device is for --trainer minitf; Lightning takes --accelerator and --devices")
    device = pick_device(args.device or "cpu")
    torch.manual_seed(args.seed)
    config = config_from_args(args)
    if args.text and getattr(args, "tokenizer", None):  # tokens instead of bytes
        tokenizer = train_tokenizer(args.text, args.tokenizer)
        config = config.replace(vocab_size=tokenizer.vocab_size)
        text = read_text(args.text, args.context, max_len=config.max_len, tokenizer=tokenizer)
        train_data, val_data = text.train, text.val
        described = (f"text {args.text}: {tokenizer!r}, {len(text.train):,} training and "
                     f"{len(text.val):,} validation tokens, windows of {args.context} tokens "
                     f"(about {args.context * text.train.n_bytes / len(text.train):.0f} bytes)")
    elif args.text:
        text = read_text(args.text, args.context, max_len=config.max_len)
        train_data, val_data = text.train, text.val
        described = (f"text {args.text}: {len(text.train):,} training and {len(text.val):,} "
                     f"validation bytes, windows of {args.context}")
    else:
        train_data, val_data = train_val_pairs(args, max_len=config.max_len)
        described = (f"{plural(len(train_data), 'training pair')} "
                     f"({'from ' + args.train if args.train else f'generated {args.task}'})")
    args.validated_on = validated_on(args, val_data)
    described += f"; validating on {args.validated_on or 'nothing (--n-val 0)'}"
    if args.trainer == "lightning":
        model = Transformer(config)  # initialised on the CPU: the same weights whatever the device
        hist, run = train_with_lightning(args, model, train_data, val_data, described)
        if hist is None:
            return 0  # a DDP process other than the first: the first one reports and saves
        save_run(model, args, hist, run)
        for v in hist.val:  # Lightning's run: its validations once it ends
            print(validation_line(v))
    else:
        # resumed: the weights reached; new: initialised on the CPU (the same whatever the device)
        model = load(args.resume) if state else Transformer(config)
        budget = None if args.time is None else args.time - seconds_since_start(began)
        if budget is not None and budget <= 0:
            return fail(f"--time {args.time:g}: the budget was used up before training could start "
                        f"(starting and reading the data took {seconds_since_start(began):.1f} s)")
        hist, run, stopped_by = train_with_minitf(args, model, device, train_data, val_data,
                                                  described, state, budget)
        if stopped_by:
            of = f"in a {args.time:g} s budget" if args.time else f"of {args.steps}"
            print(f"interrupted ({stopped_by.name}) at step {hist.step} {of}; "
                  f"saved {args.out}; resume with: python -m minitf train --resume "
                  f"{shlex.quote(args.out)} --out {shlex.quote(args.out)}")
            return 128 + stopped_by
    final = hist.last_val()
    if args.target_exact is not None:
        print(f"exact match {final['exact_match']:.4f} "
              + (f">= {args.target_exact}: stopped" if final["exact_match"] >= args.target_exact
                 else f"< {args.target_exact}: target not reached, all steps trained"))
    done = len(hist.loss) if args.target_exact is not None or args.time else args.steps
    resumed = f" (resumed at step {state['step']})" if state else ""
    unchecked = "; no validation (--n-val 0)" if final is None else ""
    print(f"trained {plural(done, 'step')} in {hist.seconds:.1f} s{resumed}{unchecked}; "
          f"saved {args.out}")
    return 0


def seconds_since_start(began: float) -> float:
    """How long this command has run: for `python -m minitf` on Linux since its process started
    (Python's imports included), else since `began`: --time's budget is the whole command's."""
    main = sys.modules.get("__main__")
    if not getattr(getattr(main, "__spec__", None), "name", "").startswith("minitf"):
        return time.perf_counter() - began  # called from Python (a test, a notebook)
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22, clock ticks after boot
        return float(Path("/proc/uptime").read_text().split()[0]) - started
    except (OSError, ValueError, IndexError, AttributeError):
        return time.perf_counter() - began


def train_with_minitf(args, model, device, train_data, val_data, described, state, budget=None):
    """`train` (the default trainer): (History, what to record of the run, the signal that
    stopped it or None). The model is saved every --save-every steps, where a signal stopped it,
    or at the end. budget: --time's seconds still left when training starts."""
    model.to(device)
    on = "" if device.type == "cpu" else f" on {device}"
    resuming = f"; resuming {args.resume} at step {state['step']} of {args.steps}" if state else ""
    print(f"model: {count_parameters(model):,} parameters{on}, {described}{resuming}")
    run = {} if device.type == "cpu" else {"device": str(device)}
    shown = ShownValidations(state["history"]["val"] if state else [])

    def after_step(history):
        shown(history)  # each validation as soon as it is made
        if (args.save_every and history.step % args.save_every == 0
                and (args.time or history.step < args.steps)):
            save_run(model, args, history, run, partial={"saved_every": args.save_every})

    with Stop() as stop:  # a signal from here on, the final save included, stops and saves
        hist = train(model, train_data, val_data, steps=args.steps, batch_size=args.batch_size,
                     lr=args.lr, weight_decay=args.weight_decay, warmup=args.warmup, seed=args.seed,
                     eval_every=args.eval_every,
                     progress=not args.no_progress, stop_when=target_reached(args),
                     resume=state, after_step=after_step, should_stop=stop,
                     optimizer=optimizer_from_args(args, model),
                     schedule=args.schedule, cooldown=args.cooldown, time_budget=budget)
        shown(hist)  # a --target-exact stop's or a timed run's last one comes after the last after_step
        if hist.interrupted:
            save_run(model, args, hist, run, partial={"interrupted": True, "signal": stop.signal.name})
            return hist, run, stop.signal
        save_run(model, args, hist, run)
    return hist, run, None


def validation_line(v: dict) -> str:
    """One validation as train prints it: the held-out loss, and for pairs the accuracies."""
    if "bits_per_byte" in v:
        return (f"step {v['step']:6d}  val loss {v['loss']:.4f} nats/byte  "
                f"{v['bits_per_byte']:.4f} bits/byte")
    return (f"step {v['step']:6d}  val loss {v['loss']:.4f}  char acc {v['char_accuracy']:.4f}  "
            f"exact {v['exact_match']:.4f}")


class ShownValidations:
    """Prints each validation of a run once, as soon as it is made (not all at the end, where a
    --no-progress run would be silent until then and a stopped one would show none). Under the
    progress bar the line goes through tqdm.write, which prints it above the bar and redraws the
    bar below; without a bar tqdm.write is a plain print. A resumed run first shows the
    validations it had made before it stopped."""

    def __init__(self, earlier: list):
        self.count = 0
        self.show(earlier)

    def show(self, validations: list) -> None:
        from tqdm.auto import tqdm
        for v in validations[self.count:]:
            tqdm.write(validation_line(v))
        self.count = max(self.count, len(validations))

    def __call__(self, history) -> None:
        self.show(history.val)


def optimizer_from_args(args, model):
    """None (train makes its usual AdamW) unless --optimizer, --embed-lr or --muon-lr ask for more."""
    if args.optimizer == "adamw" and args.embed_lr == 1.0 and args.muon_lr is None:
        return None
    from ..core.train import make_lm_optimizer
    return make_lm_optimizer(model, args.lr, weight_decay=args.weight_decay, kind=args.optimizer,
                             embed_lr=args.embed_lr, muon_lr=args.muon_lr)


def save_run(model, args, hist, run: dict, partial: dict | None = None) -> None:
    """Save the model with what the run recorded. partial (a run stopped or saved on the way):
    how it was saved; the file then also holds the training state that --resume goes on from.
    --out was checked before training (free, or --force, or this run's own file): replace it."""
    final = hist.last_val()
    # a BPE the text was encoded with goes with the weights: eval and generate decode by it
    tokenizer = getattr(getattr(getattr(hist, "batches", None), "part", None), "tokenizer", None)
    kind = ({"text": args.text, "context": args.context,
             **({"tokenizer": tokenizer.to_dict()} if tokenizer is not None else {})} if args.text
            else {} if args.train else {PAIRS: split_args(args)})
    every = LOSS_CURVE_EVERY
    curve = [round(sum(hist.loss[i:i + every]) / len(hist.loss[i:i + every]), 4)
             for i in range(0, len(hist.loss), every)]
    where = {**partial, "step": hist.step} if partial else {}
    save(model, args.out, overwrite=True, train_state=hist.state() if partial else None, metadata={
        "command": args.command_line, "steps": args.steps, "seed": args.seed, **where,
        **({"recipe": args.recipe} if args.recipe else {}),
        **({"target_exact": args.target_exact} if args.target_exact is not None else {}),
        **({"time_budget": args.time} if args.time else {}),
        **({"steps_trained": len(hist.loss)} if args.target_exact is not None or args.time else {}),
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

    from ..lightning import MinitfDataModule, fit

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
