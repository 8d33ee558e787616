"""minitf on PyTorch Lightning: the same model, data and schedule, run by Lightning's Trainer.

Optional: `pip install -e ".[lightning]"`; `import minitf` never imports this module. Lightning adds
what a bigger run needs — devices and strategies (`Trainer(accelerator="gpu", devices=8,
strategy="ddp")`, several machines with `num_nodes`), mixed precision, loggers, checkpoints,
callbacks — while the maths stays minitf's: `MinitfModule` trains a `minitf.Transformer` with
minitf.train's AdamW groups, warm-up + cosine schedule (`lr_at`) and gradient clipping, on the
batches minitf.train would draw (its own `PairBatches` / `TextBatches`, same random seed, same
order), and validates with minitf's own `evaluate` / `evaluate_text`. So on one CPU process the
two trainers give the same loss curve (tests/test_lightning.py).

    model = minitf.Transformer(minitf.Config(d_model=16))
    data = TaskDataModule("copy", n_train=2000, n_val=200, batch_size=64)  # or MinitfDataModule(
                                                                  # pairs, val) / TextDataModule(…)
    history = fit(model, data, steps=500, eval_every=100)   # a minitf History
    minitf.save(model, "copy.pt")
    # or let Lightning checkpoint (fit(…, enable_checkpointing=True, default_root_dir="runs"))
    # and convert its file: to_minitf_checkpoint("runs/checkpoints/epoch=0-step=500.ckpt", "copy.pt")
"""
from __future__ import annotations

import time
import warnings
from pathlib import Path

import torch

try:
    import lightning as L
except ImportError:
    raise ImportError("minitf.lightning needs PyTorch Lightning, an optional extra: "
                      "pip install -e '.[lightning]' (make test installs it)") from None
from torch.utils.data import DataLoader, IterableDataset

from .core.checkpoint import CheckpointError, save
from .core.config import Config
from .core.data import make_splits, read_pairs
from .core.evaluate import masked_loss
from .core.model import Transformer
from .core.text import TextPart, check_fits, read_text
from .core.tokens import IGNORE
from .core.train import DEFAULT_STEPS, History, lr_at, make_batches, make_optimizer, validate

KINDS = ("pairs", "text")


class MinitfSchedule(torch.optim.lr_scheduler.LRScheduler):
    """minitf.train's schedule as a scheduler Lightning steps after every update: update k (0-based)
    runs at lr_at(k, …) exactly (the same float, so both trainers take the same steps)."""

    def __init__(self, optimizer, steps: int, lr: float, warmup: int, min_lr_ratio: float):
        self.steps, self.peak_lr, self.warmup, self.min_lr_ratio = steps, lr, warmup, min_lr_ratio
        super().__init__(optimizer)

    def get_lr(self) -> list[float]:
        rate = lr_at(self.last_epoch, self.steps, self.peak_lr, self.warmup, self.min_lr_ratio)
        return [rate for _ in self.optimizer.param_groups]


class MinitfModule(L.LightningModule):
    """A minitf.Transformer as a LightningModule.

    kind "pairs": batches (ids, targets) with IGNORE on the input part, so the loss is on the output
    bytes + EOS only; validation logs loss, char_accuracy and exact_match. kind "text": every
    position is a target; validation logs loss and bits_per_byte. Metrics are logged as
    `train_loss`, `lr`, `val_loss`, `val_exact_match`, … (and kept in `val_metrics`).
    """

    def __init__(self, config: Config | dict | None = None, *, kind: str = "pairs",
                 steps: int = DEFAULT_STEPS, lr: float = 3e-3, weight_decay: float = 0.01, warmup: int = 50,
                 min_lr_ratio: float = 0.1, clip: float = 1.0, seed: int = 0,
                 model: Transformer | None = None):
        super().__init__()
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        if model is None:
            model = Transformer(Config.from_dict(config) if isinstance(config, dict) else config)
        # plain numbers and the config as a dict: the .ckpt loads with weights_only=True
        self.save_hyperparameters({"config": model.config.to_dict(), "kind": kind, "steps": steps,
                                   "lr": lr, "weight_decay": weight_decay, "warmup": warmup,
                                   "min_lr_ratio": min_lr_ratio, "clip": clip, "seed": seed})
        self.model = model
        self.val_metrics: dict = {}

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.model(ids)  # (B, T, vocab)

    def on_train_start(self):
        torch.manual_seed(self.hparams.seed)  # dropout masks, as minitf.train seeds them

    def training_step(self, batch, batch_idx):
        ids, targets = batch                          # (B, T) each
        loss = masked_loss(self(ids), targets)        # pairs: IGNORE marks the input part
        self.log("train_loss", loss, prog_bar=True, batch_size=ids.size(0))
        self.log("lr", self.optimizers().param_groups[0]["lr"])
        return loss

    def validation_step(self, batch, batch_idx):
        split = batch.data  # the whole validation split (see WholeSplit)
        metrics = validate(self.model, split)
        self.val_metrics = metrics
        # every process scores the whole split, so the mean over processes is the same number
        self.log_dict({f"val_{k}": float(v) for k, v in metrics.items() if k != "bytes"},
                      prog_bar=True, sync_dist=True, batch_size=1)

    def configure_optimizers(self):
        h = self.hparams
        optimizer = make_optimizer(self.model, h.lr, h.weight_decay)
        schedule = MinitfSchedule(optimizer, h.steps, h.lr, h.warmup, h.min_lr_ratio)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": schedule, "interval": "step"}}

    def configure_gradient_clipping(self, optimizer, gradient_clip_val=None,
                                    gradient_clip_algorithm=None):
        # minitf.train_step's clipping, over model.parameters() in the same order (Lightning's own
        # clip_gradients walks the optimizer's groups, which sums the norms in another order)
        if self.hparams.clip:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.hparams.clip)


# --- data ----------------------------------------------------------------------------------------

class BatchStream(IterableDataset):
    """minitf.train's batches, endlessly: make() returns a PairBatches or TextBatches.

    Under DDP each of the W processes takes every W-th batch of the same seeded sequence, so they
    train on different data and together draw W batches per step.
    """

    def __init__(self, make):
        self.make = make

    def __iter__(self):
        batches = self.make()
        rank, world = 0, 1
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            rank, world = torch.distributed.get_rank(), torch.distributed.get_world_size()
        while True:
            for i in range(world):
                batch = batches.next()
                if i == rank:
                    yield batch


class WholeSplit:
    """A validation split handed to validation_step in one piece, for minitf's evaluate (or
    evaluate_text) to score exactly as minitf.train's validation does. Not a tensor or a
    dataclass, so Lightning passes it on untouched; minitf moves each chunk to the model's device."""

    def __init__(self, data):
        self.data = data


class MinitfDataModule(L.LightningDataModule):
    """Training batches as minitf.train draws them (same seed → same batches, same order) and the
    validation split in one piece. The data: lists of pairs, or the splits of a minitf.read_text."""

    def __init__(self, train_data, val_data, batch_size: int = 64, seed: int = 0, make_batch=None):
        super().__init__()
        self.train_data, self.val_data = train_data, val_data
        self.batch_size, self.seed, self.make_batch = batch_size, seed, make_batch

    @property
    def kind(self) -> str:
        """Which loss the module takes: "text" (every position) or "pairs" (the output part)."""
        return "text" if isinstance(self.train_data, TextPart) else "pairs"

    def batches(self):
        gen = torch.Generator().manual_seed(self.seed)
        return make_batches(self.train_data, self.batch_size, gen, self.make_batch)

    def train_dataloader(self):
        # batch_size=None: the stream yields whole batches. The loaders get generators of their
        # own, so making their iterators draws nothing from torch's global generator (dropout's).
        return DataLoader(BatchStream(self.batches), batch_size=None,
                          generator=torch.Generator().manual_seed(self.seed))

    def val_dataloader(self):
        return DataLoader([WholeSplit(self.val_data)], batch_size=None,
                          generator=torch.Generator().manual_seed(self.seed))


class PairsFileDataModule(MinitfDataModule):
    """Pairs files, as `python -m minitf train --train FILE --val FILE` reads them."""

    def __init__(self, train_path, val_path, batch_size: int = 64, seed: int = 0):
        super().__init__(read_pairs(train_path), read_pairs(val_path), batch_size, seed)


class TaskDataModule(MinitfDataModule):
    """A generated task's training pairs and fresh held-out pairs (minitf.data.make_splits), as
    `python -m minitf train --task T --n-train N --n-val M --seed S` makes them."""

    def __init__(self, task: str, n_train: int, n_val: int, batch_size: int = 64, seed: int = 0, *,
                 max_len: int = 12, repeats: float = 0.0):
        train, val = make_splits(task, n_train, n_val, seed, max_len=max_len, repeats=repeats)
        super().__init__(train, val, batch_size, seed)


class TextDataModule(MinitfDataModule):
    """A text file for a language model: windows of `context` bytes from its first 90 %, scored on
    its last 10 % (minitf.read_text)."""

    def __init__(self, path, context: int, batch_size: int = 64, seed: int = 0):
        text = read_text(path, context)
        super().__init__(text.train, text.val, batch_size, seed)


# --- running it ----------------------------------------------------------------------------------

class Recorder(L.Callback):
    """A callback that keeps what minitf.train's History keeps: loss and lr per step, validations."""

    def __init__(self):
        self.history = History()

    def on_train_batch_start(self, trainer, module, batch, batch_idx):
        self.history.lr.append(trainer.optimizers[0].param_groups[0]["lr"])  # this step's rate

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        self.history.loss.append(outputs["loss"].item())
        self.history.tokens += int((batch[1] != IGNORE).sum())

    def on_validation_epoch_end(self, trainer, module):
        if not trainer.sanity_checking:
            self.history.val.append({"step": trainer.global_step, **module.val_metrics})


def fit(model: Transformer, datamodule: MinitfDataModule, *, steps: int = DEFAULT_STEPS, lr: float = 3e-3,
        weight_decay: float = 0.01, warmup: int = 50, min_lr_ratio: float = 0.1, clip: float = 1.0,
        seed: int = 0, eval_every: int | None = None, **trainer_options) -> History:
    """Train `model` in place with a Lightning Trainer; returns a minitf History (this process's).

    The arguments mean what they mean for minitf.train; the batch size and data seed live in the
    datamodule. Validation runs every eval_every steps and after the last. trainer_options go to
    `lightning.Trainer` (accelerator, devices, strategy, precision, logger, callbacks, …); by
    default it logs and checkpoints nothing, the Trainer is at `history.trainer`.
    """
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    if datamodule.kind == "text":
        check_fits(datamodule.train_data, model)
    module = MinitfModule(model=model, kind=datamodule.kind, steps=steps, lr=lr,
                          weight_decay=weight_decay, warmup=warmup, min_lr_ratio=min_lr_ratio,
                          clip=clip, seed=seed)
    recorder = Recorder()
    options = {"logger": False, "enable_checkpointing": False, "enable_model_summary": False,
               **trainer_options}
    options["callbacks"] = [recorder, *options.get("callbacks", [])]
    trainer = L.Trainer(max_steps=steps, val_check_interval=eval_every or steps,
                        check_val_every_n_epoch=None, num_sanity_val_steps=0,
                        log_every_n_steps=min(50, steps), **options)
    start = time.perf_counter()
    with warnings.catch_warnings():
        # batches are slices of tensors already in memory: no loader workers needed
        warnings.filterwarnings("ignore", ".*does not have many workers.*")
        # Lightning 2.6 meets a name torch 2.13 deprecated; nothing a user of minitf can change
        warnings.filterwarnings("ignore", r".*isinstance\(treespec, LeafSpec\).*", FutureWarning)
        trainer.fit(module, datamodule)
        if not recorder.history.val or recorder.history.val[-1]["step"] != steps:
            trainer.validate(module, datamodule, verbose=False)
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        # Lightning leaves the process group (gloo's threads) running; left to the interpreter's
        # exit it can abort a finished run with "terminate called without an active exception"
        torch.distributed.destroy_process_group()
    recorder.history.seconds = time.perf_counter() - start
    recorder.history.optimizer = trainer.optimizers[0] if trainer.optimizers else None
    recorder.history.trainer = trainer
    model.eval()
    return recorder.history


def to_minitf_checkpoint(ckpt_path, out_path, *, metadata: dict | None = None,
                         overwrite: bool = False) -> Path:
    """Convert a Lightning checkpoint of a MinitfModule into a minitf checkpoint (minitf.load
    reads it): the config from its hyperparameters, the weights without the `model.` prefix."""
    try:
        payload = torch.load(ckpt_path, map_location="cpu", weights_only=True)
        hparams, state = payload["hyper_parameters"], payload["state_dict"]
        model = Transformer(Config.from_dict(hparams["config"]))
    except Exception as e:
        raise CheckpointError(f"{ckpt_path}: not a Lightning checkpoint of a MinitfModule "
                              f"({type(e).__name__}: {e})") from None
    model.load_state_dict({k.removeprefix("model."): v for k, v in state.items()})
    info = {"trainer": {"lightning": payload.get("pytorch-lightning_version")},
            "converted_from": Path(ckpt_path).name, "steps": payload.get("global_step"),
            "kind": hparams.get("kind")}
    return save(model, out_path, metadata={**info, **(metadata or {})}, overwrite=overwrite)


# ---- What a CSVLogger wrote, read back (notebook 10)

def logged_metrics(trainer) -> dict[str, list[tuple[int, float]]]:
    """The metrics.csv a trainer's CSVLogger wrote: metric name → (step, value) for every row that
    logged it (one row per logged step; a metric logged less often leaves its cell empty)."""
    import csv

    with open(Path(trainer.logger.log_dir) / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    names = [n for n in rows[0] if n != "step"] if rows else []
    return {name: [(int(r["step"]), float(r[name])) for r in rows if r[name]] for name in names}
