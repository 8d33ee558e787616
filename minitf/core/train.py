"""Training: AdamW, linear warm-up then cosine decay, gradient clipping, a progress bar — one loop
for pairs (the loss on the output part) and for text (the loss on every byte of random windows).

A run can stop and go on where it was: `history.state()` holds everything the next step depends on
besides the weights (the optimizer's moments, the step, the data order, the random generators and
the history so far), and `train(..., resume=state)` continues from it, bit for bit on the CPU."""
from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass, field

import torch
from tqdm.auto import tqdm

from . import data, text
from .data import Pair
from .devices import device_of
from .evaluate import evaluate, masked_loss
from .muon import Muon
from .tokens import IGNORE


DEFAULT_STEPS = 2000  # train's steps when none are given, in Python and on the command line


def lr_at(step: int, steps: int, lr: float, warmup: int, min_lr_ratio: float = 0.1) -> float:
    """Learning rate for step (0-based): linear warm-up to lr, then cosine down to lr·min_lr_ratio,
    which it holds at every step past the end (a run trained on beyond `steps` stays at the floor
    rather than climbing back up the cosine)."""
    if step < warmup:
        return lr * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, steps - warmup))
    return lr * (min_lr_ratio + (1 - min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


def wsd_at(step: int, steps: int, lr: float, warmup: int, cooldown: float = 0.2) -> float:
    """Learning rate for step (0-based), warm-up, stable, decay (WSD): linear warm-up to lr over
    `warmup` steps as lr_at, lr held, then linear down over the last `cooldown` fraction of the
    steps, to lr/n at the last of those n (no step is spent at rate 0; lm_fast.pt trained so)."""
    n = max(1, round(cooldown * steps))
    if step < warmup:
        return lr * (step + 1) / warmup
    if step >= steps - n:
        return lr * (steps - step) / n
    return lr


SCHEDULES = ("cosine", "wsd")  # train's schedule=, the command line's --schedule


def schedule_for(name: str, min_lr_ratio: float = 0.1, cooldown: float = 0.2):
    """train's schedule by name, as one kind of function: rate(step, steps, lr, warmup), step
    0-based of `steps`, warmup in steps. "cosine": lr_at, down to lr·min_lr_ratio; "wsd": wsd_at,
    down over the last `cooldown` fraction of the steps."""
    if name == "cosine":
        return functools.partial(lr_at, min_lr_ratio=min_lr_ratio)
    if name == "wsd":
        if not 0 < cooldown <= 1:
            raise ValueError(f"schedule wsd: cooldown is the fraction of the steps spent decaying, "
                             f"in (0, 1], got {cooldown}")
        return functools.partial(wsd_at, cooldown=cooldown)
    raise ValueError(f"schedule must be one of {', '.join(SCHEDULES)}, got {name!r}")


@dataclass
class History:
    loss: list[float] = field(default_factory=list)  # training loss, one per step
    lr: list[float] = field(default_factory=list)
    val: list[dict] = field(default_factory=list)    # {"step": …, "loss", …}: see validate()
    tokens: int = 0      # target tokens the loss was taken over (pairs: output bytes + EOS)
    seconds: float = 0.0
    interrupted: bool = False  # should_stop ended the run before its last step
    optimizer: torch.optim.Optimizer | None = field(default=None, repr=False)
    batches: PairBatches | TextBatches | None = field(default=None, repr=False)

    def last_val(self) -> dict | None:
        return self.val[-1] if self.val else None

    @property
    def step(self) -> int:
        """Steps trained so far (those of the run this one resumed included)."""
        return len(self.loss)

    def state(self) -> dict:
        """What `train(..., resume=state)` needs to go on from here exactly as if the run had not
        stopped: the step, AdamW's moments, the batch stream's position and generator, the global
        random state (dropout masks) and the numbers recorded so far. Only tensors, numbers,
        strings, lists and dicts, so a checkpoint holding it still loads with weights_only=True.
        Take it when you save it: the optimizer's tensors are the live ones."""
        return {"step": self.step, "optimizer": self.optimizer.state_dict(),
                "batches": self.batches.state(), "rng": torch.get_rng_state(),
                "history": {"loss": list(self.loss), "lr": list(self.lr), "val": list(self.val),
                            "tokens": self.tokens, "seconds": self.seconds}}


def make_optimizer(model, lr: float, weight_decay: float = 0.01) -> torch.optim.AdamW:
    """AdamW with decay on matrices only (not on biases and norm gains, as usual)."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                              {"params": rest, "weight_decay": 0.0}], lr=lr)


class Combined:
    """Several optimizers stepped as one: train sees one list of param_groups (each group's lr is
    the schedule's rate times its "lr_scale") and one state_dict, so a run still resumes."""

    def __init__(self, *optimizers):
        self.optimizers = optimizers

    @property
    def param_groups(self):
        return [g for o in self.optimizers for g in o.param_groups]

    def zero_grad(self, set_to_none: bool = True):
        for o in self.optimizers:
            o.zero_grad(set_to_none=set_to_none)

    def step(self):
        for o in self.optimizers:
            o.step()

    def state_dict(self) -> dict:
        return {"optimizers": [o.state_dict() for o in self.optimizers]}

    def load_state_dict(self, state: dict) -> None:
        for o, s in zip(self.optimizers, state["optimizers"]):
            o.load_state_dict(s)


def block_matrices(model) -> list:
    """The 2-D weights inside the blocks (Q/K/V, W_O, the FFN's): what Muon orthogonalises."""
    return [p for name, p in model.named_parameters() if name.startswith("blocks.") and p.dim() == 2]


def make_lm_optimizer(model, lr: float, weight_decay: float = 0.01, kind: str = "adamw",
                      embed_lr: float = 1.0, muon_lr: float | None = None):
    """The fast LM recipe's optimizer. kind "adamw": AdamW as make_optimizer, with the embedding's
    lr × embed_lr. kind "muon": Muon (momentum, then Newton–Schulz orthogonalisation; its lr
    matched to AdamW's update RMS; minitf.core.muon: torch.optim.Muon's arithmetic, in float32 on a
    CPU without fast bf16) for the blocks' 2-D weights at muon_lr (default lr),
    AdamW for the embedding (lr × embed_lr), the head, the norms' gains and biases
    (modded-nanogpt's split)."""
    if kind not in ("adamw", "muon"):
        raise ValueError(f"optimizer must be adamw or muon, got {kind!r}")
    embed = [model.embed.weight]
    seen = {id(p) for p in embed}
    muon = block_matrices(model) if kind == "muon" else []
    seen |= {id(p) for p in muon}
    rest = [p for p in model.parameters() if id(p) not in seen]
    groups = [{"params": embed, "weight_decay": 0.0, "lr_scale": embed_lr},
              {"params": [p for p in rest if p.dim() >= 2], "weight_decay": weight_decay, "lr_scale": 1.0},
              {"params": [p for p in rest if p.dim() < 2], "weight_decay": 0.0, "lr_scale": 1.0}]
    adamw = torch.optim.AdamW([g for g in groups if g["params"]], lr=lr)
    if not muon:
        return adamw
    scale = (muon_lr or lr) / lr
    return Combined(Muon([{"params": muon, "lr_scale": scale}], lr=lr * scale,
                         weight_decay=weight_decay, adjust_lr_fn="match_rms_adamw"),
                    adamw)


def train_step(model, optimizer, ids, targets, clip: float = 1.0) -> torch.Tensor:
    """One update: forward, loss on the targets that are not IGNORE, backward, clipping, AdamW step."""
    loss = masked_loss(model(ids), targets)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if clip:
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()
    return loss


class PairBatches:
    """Batches of pairs drawn without replacement, epoch after epoch; the loss on the outputs only.
    The pairs are encoded once, onto `device`; the order is drawn on the CPU (the same on every device)."""

    def __init__(self, pairs: list[Pair], batch_size: int, generator: torch.Generator, make_batch=None,
                 device=None):
        if not pairs:
            raise ValueError("train needs at least one training pair")
        ids, targets = (make_batch or data.make_batch)(pairs)  # encode once, slice rows per step
        self.ids, self.targets = ids.to(device), targets.to(device)
        self.lengths = (targets != IGNORE).long().cumsum(1).argmax(1) + 1  # last real target + 1 (CPU)
        self.batch_size = min(batch_size, len(pairs))
        self.generator = generator
        self.order, self.cursor = torch.randperm(len(pairs), generator=generator), 0

    def next(self):
        """ids, targets (B, T), T the longest sequence among the rows drawn."""
        if self.cursor + self.batch_size > len(self.order):
            self.order, self.cursor = torch.randperm(len(self.order), generator=self.generator), 0
        rows = self.order[self.cursor:self.cursor + self.batch_size]
        self.cursor += self.batch_size
        T = int(self.lengths[rows].max())
        rows = rows.to(self.ids.device)
        return self.ids[rows, :T], self.targets[rows, :T]

    def state(self) -> dict:
        """Where the stream is: its generator, this epoch's order and the place in it."""
        return {"generator": self.generator.get_state(), "order": self.order.clone(),
                "cursor": self.cursor}

    def load_state(self, state: dict) -> None:
        self.generator.set_state(state["generator"])
        self.order, self.cursor = state["order"].clone(), state["cursor"]


class TextBatches:
    """Windows of `context` bytes at random offsets in a text; the loss on every position.
    Offsets are drawn on the CPU (the same on every device), the windows then moved to `device`."""

    def __init__(self, part: text.TextPart, batch_size: int, generator: torch.Generator, device=None):
        self.part, self.batch_size, self.generator, self.device = part, batch_size, generator, device

    def next(self):
        ids, targets = text.random_windows(self.part, self.batch_size, self.generator)  # (B, T) each
        return ids.to(self.device), targets.to(self.device)

    def state(self) -> dict:
        """The generator alone decides the next windows."""
        return {"generator": self.generator.get_state()}

    def load_state(self, state: dict) -> None:
        self.generator.set_state(state["generator"])


def make_batches(data, batch_size: int, generator: torch.Generator, make_batch=None, device=None):
    """The batch stream for pairs (output-only targets) or for a text split (every position)."""
    if isinstance(data, text.TextPart):
        return TextBatches(data, batch_size, generator, device)
    return PairBatches(data, batch_size, generator, make_batch, device)


def validate(model, val) -> dict:
    """Validation metrics: pairs → loss, char_accuracy, exact_match; a text split → loss, bits_per_byte."""
    if isinstance(val, text.TextPart):
        return text.evaluate_text(model, val)
    return evaluate(model, val)


def train(model, train_data: list[Pair] | text.TextPart, val_data=None, *,
          steps: int = DEFAULT_STEPS, batch_size: int = 64, lr: float = 3e-3,
          weight_decay: float = 0.01, warmup: int = 50,
          min_lr_ratio: float = 0.1, clip: float = 1.0, seed: int = 0, eval_every: int | None = None,
          progress: bool = True, optimizer: torch.optim.Optimizer | None = None,
          make_batch=None, stop_when=None, resume: dict | None = None, after_step=None,
          should_stop=None, schedule: str = "cosine", cooldown: float = 0.2,
          time_budget: float | None = None, clock=time.perf_counter) -> History:
    """Train `model` in place; returns the History. One loop for both kinds of data:

    - pairs (a list of Pair): the loss on each pair's output part; batches drawn without
      replacement, epoch after epoch. `make_batch` replaces minitf.make_batch (a learner's own).
    - text (a minitf.TextPart, e.g. `minitf.read_text(path, context).train`): the loss on every
      byte of windows of `context` bytes at random offsets.

    Batches are built on the model's device (`model.to("cuda")` trains on the GPU); random draws
    come from a CPU generator seeded with `seed`, so every device sees the same data. val_data (pairs, or a text split such as
    `text.val`) is evaluated every eval_every steps (default: only at the end). Pass the optimizer
    of an earlier run (history.optimizer) to continue with its moments. `stop_when(metrics)` ends
    training at the first validation it returns True for (e.g. exact match ≥ 0.99), so `steps`
    becomes a budget: a run that learns fast stops early, a slow one gets the whole schedule.

    Stopping and going on: `after_step(history)` is called after every step (e.g. to save
    `history.state()` every N steps); `should_stop()` is asked after every step, and True ends the
    run there with history.interrupted set (a Ctrl-C handler sets such a flag). `resume` is the
    `state()` of a stopped run, with the model holding that run's weights and every other argument
    as before: training goes on from its step as if it had never stopped (on the CPU, bit for bit).

    schedule "cosine" (the default): warm-up then cosine down to lr·min_lr_ratio (lr_at); "wsd":
    warm-up, constant, then linear down over the last `cooldown` fraction of the steps (wsd_at);
    both warm up over `warmup` steps (schedule_for). A group with an "lr_scale"
    (make_lm_optimizer) runs at the rate times it.

    time_budget (seconds of wall time, `clock`'s): the run ends on time on any machine, its
    schedule complete. The schedule then follows the elapsed fraction of the budget instead of the
    step count (timed_step: the rate at fraction f is the rate at step f·steps, so `steps` and
    `warmup` give its shape); a step that would end past the budget (if as long as the last one)
    is not started, but one step always is; the final validation is inside the budget (one is
    timed first, and 1.25 times the longest kept in reserve). How many steps fit depends on the
    machine and its load, so such a run is not bit-for-bit repeatable.
    """
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    timed = time_budget is not None
    if timed and not (math.isfinite(time_budget) and time_budget > 0):
        raise ValueError(f"time_budget is seconds of wall time > 0, got {time_budget}")
    rate_at = schedule_for(schedule, min_lr_ratio, cooldown)
    torch.manual_seed(seed)  # dropout masks
    gen = torch.Generator().manual_seed(seed)
    device = device_of(model)
    for part in (train_data, val_data):
        if isinstance(part, text.TextPart):
            text.check_fits(part, model)
    batches = make_batches(train_data, batch_size, gen, make_batch, device)
    opt = optimizer or make_optimizer(model, lr, weight_decay)
    history = History(optimizer=opt, batches=batches)
    if resume is not None:
        if not timed and not 0 <= resume["step"] <= steps:
            raise ValueError(f"resume: the state is at step {resume['step']}, this run has {steps} steps")
        opt.load_state_dict(resume["optimizer"])
        batches.load_state(resume["batches"])
        torch.set_rng_state(resume["rng"])
        for name, value in resume["history"].items():
            setattr(history, name, value)
    start, before = clock(), history.seconds
    reserve = 0.0  # a timed run: the final validation's time, kept out of the training time
    margin = 1.25  # a validation takes longer when the machine gets busier: keep a quarter more
    if timed and val_data:
        validate(model, val_data)
        reserve = margin * (clock() - start)
    model.train()
    bar = tqdm(desc="train", disable=not progress, leave=False, initial=history.step,
               total=None if timed else steps)
    step = first = history.step
    solved = False
    top, step_seconds = None, 0.0  # a timed run: the last step's time, validations left out
    while True:
        if timed:
            now = clock()
            if top is not None:
                step_seconds = now - top - validating
            top, validating = now, 0.0
            elapsed, training_time = before + now - start, time_budget - reserve
            if elapsed + step_seconds >= training_time and step > first:  # the next step would
                break                                                     # end past it (one at least)
            rate = rate_at(timed_step(elapsed / training_time, steps), steps, lr, warmup)
        else:
            if step >= steps:
                break
            rate = rate_at(step, steps, lr, warmup)
        ids, targets = batches.next()
        for group in opt.param_groups:
            group["lr"] = rate * group["lr_scale"] if "lr_scale" in group else rate
        loss = train_step(model, opt, ids, targets, clip)
        history.loss.append(loss.item())
        history.lr.append(rate)
        history.tokens += int((targets != IGNORE).sum())
        history.seconds = before + clock() - start
        bar.update()
        if val_data and ((eval_every and (step + 1) % eval_every == 0) or (not timed and step + 1 == steps)):
            t = clock()
            history.val.append({"step": step + 1, **validate(model, val_data)})
            validating = clock() - t
            reserve = max(reserve, margin * validating)
            model.train()
            bar.set_postfix(loss=f"{loss.item():.3f}", **val_postfix(history.val[-1]))
            if stop_when is not None and stop_when(history.val[-1]):
                solved = True
                break
        elif step % 20 == 0:
            bar.set_postfix(loss=f"{loss.item():.3f}")
        if after_step is not None:
            after_step(history)
        step += 1
        if should_stop is not None and (timed or step < steps) and should_stop():
            history.interrupted = True
            break
    if timed and val_data and not (solved or history.interrupted) and history.step and (
            not history.val or history.val[-1]["step"] != history.step):
        history.val.append({"step": history.step, **validate(model, val_data)})
    bar.close()
    history.seconds = before + clock() - start
    model.eval()
    return history


def timed_step(fraction: float, steps: int) -> float:
    """A timed run's place in its schedule: at `fraction` of the time budget, the (fractional)
    step fraction·steps of the same schedule over `steps` steps."""
    return fraction * steps


def val_postfix(metrics: dict) -> dict:
    """What the progress bar shows of a validation: exact match for pairs, bits per byte for text."""
    if "exact_match" in metrics:
        return {"val_exact": f"{metrics['exact_match']:.2f}"}
    return {"val_bits": f"{metrics['bits_per_byte']:.3f}"}
