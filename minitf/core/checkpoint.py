"""Checkpoints: config + weights + free-form metadata in one file, loaded with weights_only=True
(no pickled code runs on load). A checkpoint saved part-way through training also holds the
training state (`History.state()`: optimizer moments, step, data order, random state), which
`train_state(path)` reads back to resume the run; `load` reads such a file like any other."""
from __future__ import annotations

import pickle
import re
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path

import torch

from .config import Config
from .data import Pair, make_pairs, make_splits
from .files import atomic_write
from .model import Transformer
from .words import plural

FORMAT = "minitf-checkpoint-1"


class CheckpointError(ValueError):
    """A file that is not a loadable minitf checkpoint; the message says which and why."""


def save(model: torch.nn.Module, path, *, metadata: dict | None = None, overwrite: bool = False,
         train_state: dict | None = None, optimizer: torch.optim.Optimizer | None = None,
         step: int | None = None) -> Path:
    """Write model to path atomically; an existing file is kept unless overwrite=True.
    train_state (a History.state()) makes the file resumable.

    model may be any nn.Module: a minitf Transformer's config is saved so `load(path)` can rebuild
    it; any other module's weights go in alone and load back into a model you give
    (`load(path, model)`). optimizer and step save a training loop's own state beside the weights
    (`load(path, model, optimizer)` restores it, `saved_step(path)` reads the step)."""
    config = model.config.to_dict() if isinstance(model, Transformer) else None
    payload = {"format": FORMAT, "config": config,
               "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()},
               "metadata": metadata or {}}
    if train_state is not None:
        payload["train_state"] = train_state
    if optimizer is not None:
        payload["optimizer"] = optimizer.state_dict()
    if step is not None:
        payload["step"] = int(step)
    return atomic_write(path, lambda tmp: torch.save(payload, tmp), overwrite=overwrite)


def _scores(val: dict) -> str:
    """A validation entry of a checkpoint's metadata in words."""
    loss = f"{val['loss']:.3f}" if val["loss"] >= 0.01 else f"{val['loss']:.1e}"
    parts = [f"loss {loss} nats"]
    if "bits_per_byte" in val:
        parts[0] += f" per byte = {val['bits_per_byte']:.2f} bits per byte"
    if "char_accuracy" in val:
        parts.append(f"characters right {val['char_accuracy']:.1%}")
    if "exact_match" in val:
        parts.append(f"whole outputs right {val['exact_match']:.1%}")
    scored = f" ({val['bytes']:,} bytes)" if "bytes" in val else ""
    return f"validation at step {val['step']:,}{scored}: " + ", ".join(parts)


def describe(metadata: dict) -> str:
    """What a checkpoint says about how it was made, in lines a person reads: the command that
    trained it, its steps, random seed and training time, and its last validation scores.

    `python -m minitf train` records these in the checkpoint's metadata (`model.metadata` after
    `load`); a key it did not record is left out, an unknown one ignored.
    """
    lines = []
    if "command" in metadata:
        lines.append(f"trained by: {metadata['command']}")
    run = []
    if "steps" in metadata:
        run.append(plural(metadata["steps"], "step", sep=True))
    if "seed" in metadata:
        run.append(f"random seed {metadata['seed']}")
    if "lr" in metadata:
        run.append(f"peak learning rate {metadata['lr']:g}")
    if "train_seconds" in metadata:
        run.append(f"{metadata['train_seconds']:.0f} s of training")
    if "text" in metadata:
        run.append(f"text {metadata['text']}, windows of {metadata['context']} bytes")
    if run:
        lines.append(", ".join(run))
    if metadata.get("val"):  # None: a run without validation (--n-val 0)
        lines.append(_scores(metadata["val"]))
    if "validated_on" in metadata:
        lines.append(f"validated on {metadata['validated_on']}")
    val_curve, loss_curve = metadata.get("val_curve"), metadata.get("loss_curve")
    curves = [f"validation every {plural(val_curve[0]['step'], 'step', sep=True)} "
              f"({plural(len(val_curve), 'point')})" if val_curve else "",
              f"training loss in means of {plural(metadata['loss_curve_every'], 'step')} "
              f"({plural(len(loss_curve), 'point')})" if loss_curve else ""]
    if any(curves):
        lines.append("curves: " + "; ".join(c for c in curves if c))
    return "\n".join(lines) or "no training record in this checkpoint"


def unpickling_detail(message: str) -> str:
    """PyTorch's reason without its advice (which is to retry with weights_only=False)."""
    advice = ("Weights only load failed", "Please file an issue", "Check the documentation")
    lines = [line.strip() for line in message.splitlines()
             if line.strip() and not line.strip().startswith(advice)]
    return " ".join(lines) or "not a file torch.save wrote"


def refusal(path, detail: str) -> str:
    """Why a file with pickled code is refused, in minitf's words (PyTorch's own message suggests
    retrying with weights_only=False — exactly what must not be done with a file you did not make)."""
    found = re.search(r"GLOBAL ([\w.]+)", detail)
    what = f" (it names `{found.group(1)}`)" if found else ""
    return (f"{path}: refused: the file holds pickled Python objects{what}, and unpickling them "
            "can run any code. A minitf checkpoint holds only a config, tensors and plain "
            "metadata, so minitf loads nothing else and ran nothing from this file. Treat the file "
            "as untrusted; make checkpoints with minitf.save or `python -m minitf train`.")


ZIP_START = b"PK\x03\x04"  # how every file torch.save writes begins (a zip archive)
OLD_TORCH_START = b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19"  # before torch 1.6
UNREADABLE = "not a readable checkpoint"


def why_unreadable(path: Path) -> str:
    """What is wrong with a file torch.load could not read, in words and in one line, judged
    from the file itself (torch's own reasons name its zip reader's internals: "failed finding
    central directory", "Unsupported operand 194", "[Errno 22] Invalid argument", EOFError)."""
    size = path.stat().st_size
    if size == 0:
        return (f"{path}: {UNREADABLE}: the file is empty (0 bytes); was it copied or "
                "downloaded while still being written?")
    with open(path, "rb") as f:
        head = f.read(256)
    cut = (f"{path}: {UNREADABLE}: truncated: it begins as every checkpoint does (a zip archive, "
           f"as torch.save writes) but its end is missing (only {plural(size, 'byte', sep=True)}); "
           "the copy or "
           "download was cut short, or the disk filled up: copy it again, or save it again")
    if ZIP_START.startswith(head[:4]) and size < 4:
        return cut
    if head.startswith(ZIP_START):
        if not zipfile.is_zipfile(path):  # the archive's index, at its end, is not there
            return cut
        with zipfile.ZipFile(path) as archive:
            if not any(name.split("/")[-1] == "data.pkl" for name in archive.namelist()):
                return (f"{path}: {UNREADABLE}: a zip archive, but not one torch.save wrote "
                        "(it holds no data.pkl)")
            broken = archive.testzip()
        if broken:
            return (f"{path}: {UNREADABLE}: damaged: a part of it does not match its checksum "
                    "(a bad copy or disk): copy it again, or save it again")
        return (f"{path}: {UNREADABLE}: damaged, or written by a torch that this one cannot read "
                f"(torch {torch.__version__} read its archive but not what is inside)")
    if head.startswith(OLD_TORCH_START):
        return (f"{path}: {UNREADABLE}: a file in torch's old format (before torch 1.6), cut "
                "short or damaged; minitf never writes that format")
    if head[:1] == b"\x80":
        return f"{path}: {UNREADABLE}: a Python pickle, not a file torch.save writes"
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:  # maybe a character cut at byte 256: judge the bytes before it
        text = head[:-4].decode("utf-8", errors="replace")
    if text and "\ufffd" not in text and all(c.isprintable() or c in "\t\r\n" for c in text):
        first = " ".join(text.split())[:40]
        return (f"{path}: {UNREADABLE}: a text file (it begins {first!r}), not a checkpoint; "
                "a checkpoint is what `python -m minitf train` or minitf.save writes")
    return (f"{path}: {UNREADABLE}: its bytes are not a file torch.save writes (a checkpoint is "
            f"a zip archive, beginning with the bytes 'PK'; this one begins with {head[:4]!r})")


def foreign(path, payload) -> str:
    """Why a file torch.load read is not a minitf checkpoint, in words: what it holds instead."""
    if isinstance(payload, dict) and payload and all(isinstance(v, torch.Tensor)
                                                     for v in payload.values()):
        return (f"{path}: not a minitf checkpoint: it holds a bare state_dict "
                f"({plural(len(payload), 'tensor')}, no config): load it into a module built to match, "
                "module.load_state_dict(torch.load(path))")
    if isinstance(payload, dict):
        keys = ", ".join(map(repr, list(payload)[:6])) + (" …" if len(payload) > 6 else "")
        holds = f"a dict with the keys {keys}" if payload else "an empty dict"
    else:
        holds = f"a {type(payload).__name__}"
    return (f"{path}: not a minitf checkpoint: torch.save wrote it, but it holds {holds}; a minitf "
            f"checkpoint is a dict of format {FORMAT!r} with its config, state_dict and metadata")


def read(path) -> dict:
    """The checkpoint's contents (format, config, state_dict, metadata, maybe train_state), read
    with weights_only=True; CheckpointError says why a file is not one, in words: empty,
    truncated, damaged, a text or other file that is no checkpoint, or a torch file not minitf's."""
    path = Path(path)
    try:
        with warnings.catch_warnings(record=True) as said:  # a foreign file's warnings: noise
            warnings.simplefilter("always")
            payload = torch.load(path, map_location="cpu", weights_only=True)
    except (FileNotFoundError, IsADirectoryError, PermissionError):
        raise
    except pickle.UnpicklingError as e:
        detail = unpickling_detail(str(e))
        if "GLOBAL" in detail:  # the file asks to import and call something: code, not data
            raise CheckpointError(refusal(path, detail)) from None
        raise CheckpointError(why_unreadable(path)) from None
    except Exception:
        raise CheckpointError(why_unreadable(path)) from None
    for w in said:  # a file that loaded: its warnings are worth seeing
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise CheckpointError(foreign(path, payload))
    missing = [key for key in ("state_dict",) if not isinstance(payload.get(key), dict)]
    if missing:
        raise CheckpointError(f"{path}: damaged: a minitf checkpoint without its {missing[0]}")
    return payload


def load(path, model: torch.nn.Module | None = None,
         optimizer: torch.optim.Optimizer | None = None) -> torch.nn.Module:
    """Rebuild the model a checkpoint describes; its metadata is at model.metadata.

    Given a model (any nn.Module, built by you), the weights load into it instead, and given an
    optimizer (built on that model's parameters), the optimizer state saved with them too, ready
    to go on training from `saved_step(path)`; a given model keeps its train/eval mode."""
    payload = read(path)
    if model is None:
        if payload.get("config") is None:
            raise CheckpointError(f"{path}: holds the weights of a module that is not a minitf "
                                  "Transformer, so it cannot be rebuilt from the file alone: build "
                                  "the module and load into it, load(path, model)")
        try:
            config = Config.from_dict(payload["config"])
        except (KeyError, TypeError, ValueError) as e:
            raise CheckpointError(f"{path}: bad config in checkpoint: {e}") from None
        model, given = Transformer(config), False
    else:
        given = True
    try:
        model.load_state_dict(payload["state_dict"])
    except RuntimeError as e:
        what = "the model you gave" if given else "its config"
        raise CheckpointError(f"{path}: weights do not match {what}: {e}") from None
    if optimizer is not None:
        if "optimizer" not in payload:
            raise CheckpointError(f"{path}: holds no optimizer state (save it with "
                                  "save(model, path, optimizer=optimizer))")
        try:
            optimizer.load_state_dict(payload["optimizer"])
        except (ValueError, KeyError) as e:
            raise CheckpointError(f"{path}: the saved optimizer state does not fit the optimizer "
                                  f"you gave: {e}") from None
    model.metadata = payload.get("metadata", {})
    if not given:
        model.eval()
    return model


def saved_step(path) -> int | None:
    """The step saved with `save(..., step=…)`, or None if none was."""
    return read(path).get("step")


def train_state(path) -> dict | None:
    """The training state saved with a checkpoint (train(..., resume=…) goes on from it), or None
    for a finished run's checkpoint."""
    return read(path).get("train_state")


# A model trained on generated pairs records how they were made, as make_splits's arguments:
# metadata["pairs"] = {"task", "n_train", "n_val", "seed", "max_len", "repeats", "val_repeats"}.
# `python -m minitf train` writes it; checkpoint_pairs reads it (no command line to re-parse).
PAIRS = "pairs"


def checkpoint_pairs(model, n_val: int | None = None) -> tuple[list[Pair], list[Pair]]:
    """(training pairs, held-out pairs) exactly as the run that trained `model` made them, from
    the make_splits arguments its metadata records: a notebook leaves out what the model saw.
    `n_val` asks for another number of held-out pairs (none of them a training input)."""
    metadata = getattr(model, "metadata", {})
    made = metadata.get(PAIRS)
    if made is None:
        trained = metadata.get("command", "a command it does not record")
        raise ValueError(f"this model records no generated pairs (metadata[{PAIRS!r}]); it was "
                         f"trained by {trained}. Only a model that `python -m minitf train` trained "
                         "on generated pairs (no --train, no --text) records them")
    return make_splits(**{**made, **({} if n_val is None else {"n_val": n_val})})


def fresh_pairs(task: str, n: int, *, seed: int, unseen_by=(), repeats: float = 0.0) -> list[Pair]:
    """`n` generated pairs of `task` whose inputs no model of `unseen_by` trained or was validated
    on (each model's pairs remade by checkpoint_pairs): a test on inputs the models never saw."""
    seen = [p.input for model in unseen_by for p in sum(checkpoint_pairs(model), [])]
    return make_pairs(task, n, seed=seed, repeats=repeats, exclude=seen)


@dataclass(frozen=True)
class LossCurves:
    """The losses a training run stored in its checkpoint: the held-out loss at each evaluation,
    and the training loss as means of `every` steps."""
    val_steps: list[int]
    val_loss: list[float]
    train_loss: list[float]
    every: int

    def recent_train_loss(self, steps: int) -> float:
        """The mean training loss over the run's last `steps` steps."""
        last = self.train_loss[-max(1, steps // self.every):]
        return sum(last) / len(last)


def loss_curves(model) -> LossCurves:
    """The loss curves `python -m minitf train` stored in a checkpoint's metadata, so a notebook
    reads them by name instead of parsing the metadata."""
    metadata = getattr(model, "metadata", {})
    if "val_curve" not in metadata or "loss_curve" not in metadata:
        raise ValueError(f"this model stores no loss curves (metadata has {sorted(metadata)}); only "
                         "a checkpoint that `python -m minitf train` wrote with --eval-every has them")
    curve = metadata["val_curve"]
    return LossCurves([v["step"] for v in curve], [v["loss"] for v in curve],
                      list(metadata["loss_curve"]), metadata["loss_curve_every"])


def add_metadata(path, **entries) -> Path:
    """Add entries to a checkpoint's metadata in place, the weights and everything else untouched
    (data/checkpoints/make.py records the pairs of checkpoints trained before `train` did)."""
    payload = read(path)
    payload["metadata"] = {**payload.get("metadata", {}), **entries}
    return atomic_write(path, lambda tmp: torch.save(payload, tmp), overwrite=True)
