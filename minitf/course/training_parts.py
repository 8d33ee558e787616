"""The training core as the learner's pieces, in notebook 08: the loss, one step, the schedule,
AdamW and the loop.

What 08 trains with: `YourAdamW`, an optimizer whose update is the learner's function; `mine` (the
saved training pieces, the reference solutions where one is missing); `check`, the training twin of
`minitf.parts.check`, which names the training piece that breaks, and `usable`, which puts the
reference in a broken piece's place so the notebook still runs (`your_pieces` does all of it in
one call); `batches`, the batch stream as a function; and `renumbered`, an intervention on a
trained model's position ids. The exercises (their cases and slips) are declared in
`minitf.course.lessons` (nb08_loss_and_step, …).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Callable

import torch

from ..core.data import make_batch
from .check_report import CheckReport
from . import my_parts
from .exercises import optional_stand_ins, run_check
from .feedback import ExerciseError
from .lessons import pieces

# --- your AdamW, as an optimizer ---------------------------------------------------------------------

class YourAdamW(torch.optim.Optimizer):
    """AdamW whose update is your function: for every parameter with a gradient it calls
    `update(param, grad, m, v, t, lr, betas, eps, weight_decay)` and keeps the (param, m, v) it
    returns. Param groups work as torch.optim.AdamW's (decay on matrices only, as minitf's
    make_optimizer does), and so does setting group["lr"] between steps (the schedule)."""

    def __init__(self, params, update: Callable, lr: float = 1e-3, betas=(0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.01):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))
        self.update = update

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state.update(t=0, m=torch.zeros_like(p), v=torch.zeros_like(p))
                state["t"] += 1
                new_p, state["m"], state["v"] = self.update(
                    p.detach().clone(), p.grad, state["m"], state["v"], state["t"], group["lr"],
                    group["betas"], group["eps"], group["weight_decay"])
                p.copy_(new_p)


def make_optimizer(model, update: Callable, lr: float, weight_decay: float = 0.01) -> YourAdamW:
    """YourAdamW with decay on matrices only (not on biases and norm gains), as minitf trains."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    return YourAdamW([{"params": decay, "weight_decay": weight_decay},
                      {"params": rest, "weight_decay": 0.0}], update, lr=lr)


# --- the training pieces in 08: saved, loaded back, checked ----------------------------------------

# piece → (the call the training makes, "08"), from the declarations (Exercise.fills == "training")
TRAINING_PIECES = pieces("training")

TrainingParts = my_parts.parts_class(
    "TrainingParts", TRAINING_PIECES,
    "The learner's training functions, one per piece (TRAINING_PIECES); None: minitf's own.", __name__)


def reference(piece: str) -> Callable:
    """The reference solution of a piece (of the model's or of the training's)."""
    from . import solutions
    return getattr(solutions, f"my_{piece}")


def mine(fallback: Callable[[str], Callable] | None = reference) -> TrainingParts:
    """Your saved training pieces (my_parts/, as `minitf.parts.mine` loads the model's); the
    required ones you have not saved come from `fallback(name)`, by default the reference solutions,
    the optional ones (the loss, clipping, the schedule, AdamW) from the library."""
    found, origin = my_parts.load_saved(TRAINING_PIECES, fallback)
    return TrainingParts(**found, origin=origin)


def usable(parts, broken, fallback: Callable[[str], Callable] = reference):
    """`parts` (Parts or TrainingParts) with every piece named in `broken` replaced by the fallback,
    and its origin saying so: a notebook then trains although one of your pieces is wrong."""
    swap = {name: fallback(name) for name in broken if name != "float32"}
    origin = dict(parts.origin, **{name: "reference solution (yours is broken: see the check above)"
                                   for name in swap})
    values = {name: getattr(parts, name) for name in parts.given()}
    values.update(swap)
    if values.get("train_step") and values.get("clip_gradients"):  # your step calls the clipping by name
        values["train_step"] = my_parts.calling(values["train_step"], my_clip_gradients=values["clip_gradients"])
    return type(parts)(**values, origin=origin)


@dataclass
class YourPieces:
    """What notebook 08 trains with: your model's pieces and your training pieces, checked, each one
    that fails its check replaced by the reference solution (the checks say why), so the run goes on."""
    model: my_parts.Parts
    training: TrainingParts
    model_check: object  # minitf.parts.PartsCheck
    training_check: "TrainingCheck"

    def summary(self) -> str:
        """The checks' verdicts and one line counting whose each piece is: what a notebook shows."""
        origins = [*self.model.origin.values(), *self.training.origin.values()]
        counts = [(sum(o.startswith("yours") for o in origins), "yours"),
                  (sum(o == my_parts.NOT_SAVED_YET for o in origins), "reference solutions (not written yet)"),
                  (sum("broken" in o for o in origins), "reference solutions in place of yours (broken)"),
                  (sum(o == my_parts.OPTIONAL_NOT_WRITTEN for o in origins), "minitf's own (optional, not written)")]
        said = ", ".join(f"{n} {what}" for i, (n, what) in enumerate(counts) if n or i == 0)
        return f"{self.model_check}\n{self.training_check}\nyour {len(origins)} pieces: {said}"

    def table(self) -> str:
        """Which piece is whose, one line each: the model's pieces, then the training's."""
        return f"the model\n{self.model!r}\n\nthe training\n{self.training!r}"

    def __repr__(self):
        return f"{self.summary()}\n\n{self.table()}"

    def _repr_html_(self):
        """In a notebook: the summary, and the table behind a click."""
        from html import escape
        return (f"<pre>{escape(self.summary())}</pre><details><summary>which piece is whose</summary>"
                f"<pre>{escape(self.table())}</pre></details>")


def your_pieces(config) -> YourPieces:
    """Load and check every piece you saved (the model's for `config`, and the training's); one call
    that says which pieces are yours, which are the reference and which of yours gave way, and why."""
    from . import parts
    model_parts = parts.yours()
    model_check = parts.check(model_parts, config)
    training = mine()
    training_check = check(training)
    return YourPieces(usable(model_parts, model_check.broken), usable(training, training_check.broken),
                      model_check, training_check)


@dataclass(repr=False)
class TrainingCheck(CheckReport):
    """The outcome of `check`: each training piece that fails its exercise, with why."""
    broken: dict  # piece → the first lines of its check's message

    def __str__(self):
        if self.ok:
            return ("✓ your training pieces compute what minitf's do (loss, clipping, step, "
                    "schedule, AdamW, loop)")
        lines = [f"✗ {len(self.broken)} of your training pieces differ from minitf's:"]
        for piece, why in self.broken.items():
            lines.append(f"  broken piece: {piece} — {why}; re-run its check above: "
                         f"minitf.exercise({piece!r}, your_function)")
        return "\n".join(lines)


def check(parts: TrainingParts) -> TrainingCheck:
    """Run every given training piece through its exercise's check (without refusing library
    calls: the question here is whether it computes the right thing) and name the ones that fail.
    An optional piece that another calls by name (your train_step's my_clip_gradients) is the
    library's in that other's check when it fails its own: the broken one is named, not its caller."""
    broken = {}
    for name in parts.given():
        fn = getattr(parts, name)
        try:
            run_check(name, my_parts.calling(fn, **optional_stand_ins(fn)), own_work=False)
        except ExerciseError as e:  # the failing case, and the slip in words where one is recognised
            lines = [line.strip() for line in str(e).splitlines() if not line.startswith("Hint:")]
            said = [line for line in lines[1:] if line.startswith("Yours ")]
            broken[name] = " ".join(lines[:1] + (said[:1] or lines[1:2]))
    return TrainingCheck(broken)


# --- what notebook 08 trains with, and one intervention on the trained model ------------------------

def batches(pairs, batch_size: int, seed: int, make_batch: Callable | None = None) -> Callable:
    """next_batch() for a training loop: minitf.train's stream of batches (pairs drawn without
    replacement, epoch after epoch, from a generator seeded with `seed`), built by `make_batch`."""
    from ..core.train import PairBatches
    return PairBatches(pairs, batch_size, torch.Generator().manual_seed(seed), make_batch).next


@torch.no_grad()
def renumbered(model, pairs, offset: int = 1) -> dict:
    """An intervention on the position ids: every position from the TAB on is numbered `offset`
    further, nothing else changes. Teacher-forced, on the output bytes k with k + offset inside the
    input and input[k] ≠ input[k + offset] (so the two answers differ), the share predicted as

    - "moved": the answer for input byte k + offset (the model follows the numbering), and
    - "unmoved": the answer for input byte k (it finds its byte some other way),

    beside "before": the share right without the intervention."""
    from ..core.model import evaluating
    from ..core.tokens import TAB
    if not callable(getattr(model, "positions", None)):
        raise TypeError(f"renumbered needs a model that asks model.positions(ids) for its position ids, "
                        f"as minitf.Transformer does; {type(model).__name__} has no positions method: load "
                        "its weights into a minitf.Transformer of its config (load_state_dict) and pass that")
    ids, _ = make_batch(pairs)
    moved = copy.deepcopy(model)
    base = model.positions

    def positions(ids):
        pos = base(ids)  # None: the usual numbering 0, 1, 2, …
        pos = torch.arange(ids.size(1), device=ids.device).expand_as(ids) if pos is None else pos
        return pos + offset * ((ids == TAB).long().cumsum(1) > 0)

    moved.positions = positions
    with evaluating(model), evaluating(moved):
        before, after = model(ids).argmax(-1), moved(ids).argmax(-1)
    counts = {"before": 0, "moved": 0, "unmoved": 0}
    n_rows = 0
    for row, pair in enumerate(pairs):
        n = len(pair.input)
        for k in range(n - offset):
            if pair.input[k] == pair.input[k + offset]:
                continue
            n_rows += 1
            counts["before"] += int(before[row, n + k]) == pair.output[k]
            counts["moved"] += int(after[row, n + k]) == pair.output[k + offset]
            counts["unmoved"] += int(after[row, n + k]) == pair.output[k]
    return {name: value / max(1, n_rows) for name, value in counts.items()} | {"bytes": n_rows}


def renumbering(model, pairs, offset: int = 1) -> str:
    """`renumbered`'s shares in two lines: what notebook 08's prediction is about."""
    moved = renumbered(model, pairs, offset)
    further = "one" if offset == 1 else str(offset)
    return (f"{moved['bytes']} output bytes; without the change {moved['before']:.0%} right\n"
            f"numbered {further} further on: {moved['moved']:.0%} are the byte for input k + {offset}, "
            f"{moved['unmoved']:.0%} the byte for input k")
