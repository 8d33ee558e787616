"""Notebook 08's training loop and gradient clipping as a function, each checked through a
driver that runs it on copies."""
from __future__ import annotations

import copy
import inspect as _inspect

import torch
from torch.nn.utils import clip_grad as _clip_grad

from ...core.data import make_batch, make_pairs
from ...core.evaluate import masked_loss
from ...core.train import lr_at, train
from .. import training_checks
from ..cases import random_case as _rand, driven_slips as _slips, numbers as _numbers, tiny_model as _tiny_model
from ..declaration import Exercise, Piece, on_face, refused
from ..training_checks import reference_loop


# --- 5 · the training loop -------------------------------------------------------------------------

def _loop_cases():
    pairs = make_pairs("shift", 12, seed=7, max_len=5)
    batches = [tuple(make_batch(pairs[i:i + 4])) for i in range(0, 12, 4)]  # (ids, targets) each
    val = tuple(make_batch(make_pairs("shift", 4, seed=8, max_len=5)))
    return [(_tiny_model(3), batches, val, 6, 3), (_tiny_model(4), batches, val, 4, 2)]


def drive_loop(fn, model, batches, val, steps, eval_every):
    """Run `fn` on a copy of the model with minitf's step, schedule (lr 0.05, 2 warm-up steps) and
    torch's AdamW; batches are handed out in turn by next_batch. Returns the history as tensors:
    losses (steps,), learning rates (steps,), the validated steps, their losses, and the weights."""
    # the reference step, so only the loop is under test (imported here: that module imports this one)
    from .nb08_loss_and_step import my_train_step
    model = copy.deepcopy(model)
    dtype = next(model.parameters()).dtype
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.05)
    drawn = []

    def next_batch():
        drawn.append(1)
        return batches[(len(drawn) - 1) % len(batches)]

    def evaluate(model):
        with torch.no_grad():
            return {"loss": masked_loss(model(val[0]), val[1]).item()}

    schedule = lambda step: lr_at(step, steps, 0.05, 2)
    step_fn = lambda model, optimizer, ids, targets: my_train_step(model, optimizer, ids, targets,
                                                                  masked_loss, 1.0)
    history = fn(model, optimizer, next_batch, step_fn, schedule, steps, eval_every, evaluate)
    if not isinstance(history, dict) or not all(k in history for k in ("loss", "lr", "val")):
        raise ValueError(f"return the history as a dict with the lists 'loss', 'lr' and 'val'; yours "
                         f"returned {type(history).__name__}"
                         + (f" with keys {sorted(history)}" if isinstance(history, dict) else ""))
    val_steps = [v.get("step") if isinstance(v, dict) else v for v in history["val"]]
    val_losses = [v.get("loss") if isinstance(v, dict) else v for v in history["val"]]
    weights = torch.cat([p.detach().flatten() for p in model.parameters()])
    return (_numbers(history["loss"], dtype), _numbers(history["lr"]), _numbers(val_steps),
            _numbers(val_losses, dtype), weights)


# The slips below are a learner's loop with one thing wrong; they share the plumbing that each
# writes right: setting the rate, recording a step, validating after every eval_every steps.

def _set_rate(optimizer, rate):
    for group in optimizer.param_groups:
        group["lr"] = rate


def _record(history, loss, rate):
    history["loss"].append(loss.item())
    history["lr"].append(rate)


def _validate_after(step, eval_every, evaluate, model, history):
    if (step + 1) % eval_every == 0:
        history["val"].append({"step": step + 1, **evaluate(model)})


def _loop_lr_after_step(model, optimizer, next_batch, step_fn, schedule, steps, eval_every, evaluate):
    history = {"loss": [], "lr": [], "val": []}
    for step in range(steps):
        loss = step_fn(model, optimizer, *next_batch())
        _set_rate(optimizer, schedule(step))  # the slip: after the step, which ran at the last rate
        _record(history, loss, schedule(step))
        _validate_after(step, eval_every, evaluate, model, history)
    return history


def _loop_lr_not_set(model, optimizer, next_batch, step_fn, schedule, steps, eval_every, evaluate):
    history = {"loss": [], "lr": [], "val": []}
    for step in range(steps):  # the slip: no _set_rate, the rate is only recorded
        _record(history, step_fn(model, optimizer, *next_batch()), schedule(step))
        _validate_after(step, eval_every, evaluate, model, history)
    return history


def _loop_one_batch(model, optimizer, next_batch, step_fn, schedule, steps, eval_every, evaluate):
    history = {"loss": [], "lr": [], "val": []}
    ids, targets = next_batch()  # the slip: one batch, drawn before the loop
    for step in range(steps):
        _set_rate(optimizer, schedule(step))
        _record(history, step_fn(model, optimizer, ids, targets), schedule(step))
        _validate_after(step, eval_every, evaluate, model, history)
    return history


def _loop_validate_at_0(model, optimizer, next_batch, step_fn, schedule, steps, eval_every, evaluate):
    history = {"loss": [], "lr": [], "val": []}
    for step in range(steps):
        if step % eval_every == 0:  # the slip: before steps 0, eval_every, …, counted from 0
            history["val"].append({"step": step, **evaluate(model)})
        _set_rate(optimizer, schedule(step))
        _record(history, step_fn(model, optimizer, *next_batch()), schedule(step))
    return history


def _loop_slips(model, batches, val, steps, eval_every):
    run = lambda slip: drive_loop(slip, model, batches, val, steps, eval_every)
    said = run(reference_loop)  # the expected result, to find where each slip first shows
    return (_slips("_lr_not_applied", [
                (run(_loop_lr_after_step), "yours sets the learning rate after the step: each step runs "
                                           "with the rate of the step before. Set "
                                           "group['lr'] = schedule(step) for every param group, then step"),
                (run(_loop_lr_not_set), "yours records the schedule's rate but never gives it to the "
                                        "optimizer: set group['lr'] = schedule(step) in every "
                                        "optimizer.param_groups before the step")], said),
            _slips("_one_batch", [(run(_loop_one_batch), (
                "yours draws one batch and trains on it at every step: call next_batch() inside the "
                "loop, once per step"))], said),
            _slips("_validation_steps", [(run(_loop_validate_at_0), (
                "yours validates before steps 0, eval_every, …: validate after step + 1 is a multiple "
                "of eval_every, and record that count as the step"))], said))


# --- 6 · gradient clipping as a function --------------------------------------------------------------

def _clip_grads(seed: int, scale: float) -> list:
    """Three gradients of different sizes (and one parameter without a gradient, None)."""
    return [_rand(2, 3, seed=seed) * scale, _rand(4, seed=seed + 1) * scale * 0.1, None,
            _rand(3, 2, seed=seed + 2) * scale * 3]


def _clip_cases():
    """Above the limit (scaled down), below it (left alone), and far above with a small limit."""
    return [(_clip_grads(0, 1.0), 1.0), (_clip_grads(1, 0.1), 5.0), (_clip_grads(2, 10.0), 0.5)]


def drive_clip(fn, grads, max_norm):
    """The gradients after fn(parameters, max_norm), one flat tensor: fn gets fresh parameters
    holding copies of `grads` (None: a parameter without a gradient), as a generator, the way
    model.parameters() hands them over."""
    params = []
    for g in grads:
        p = torch.nn.Parameter(torch.zeros(2, dtype=torch.float64) if g is None else torch.zeros_like(g))
        p.grad = None if g is None else g.clone()
        params.append(p)
    fn((p for p in params), max_norm)
    after = [p.grad for p in params if p.grad is not None]
    return torch.cat([g.reshape(-1) for g in after]) if after else None


def _clip_slips(grads, max_norm):
    present = [g for g in grads if g is not None]
    flat = lambda gs: torch.cat([g.reshape(-1) for g in gs])
    total = torch.sqrt(sum((g ** 2).sum() for g in present))
    per_tensor = flat([g * min(1.0, max_norm / (float(g.norm()) + 1e-6)) for g in present])
    always = flat([g * (max_norm / (total + 1e-6)) for g in present])
    summed = sum(float(g.norm()) for g in present)
    sum_of_norms = flat([g * min(1.0, max_norm / (summed + 1e-6)) for g in present])
    return (_slips("_clip_per_tensor", [(per_tensor, (
                "yours clips each tensor by its own norm: the limit is on ONE norm over all the "
                "gradients together, √(Σ over every tensor of Σ g²), and every tensor is scaled by "
                "the same factor"))]),
            _slips("_clip_below_limit", [(always, (
                f"yours scales the gradients although their norm ({float(total):.4g}) is below "
                f"max_norm ({max_norm:g}): clipping only ever scales DOWN, by max_norm / norm when "
                "the norm is above the limit, and leaves them alone otherwise"))]),
            _slips("_clip_sum_of_norms", [(sum_of_norms, (
                "yours adds up the tensors' norms: the total norm is the square root of the sum of "
                "every squared entry, √(Σ ‖g‖²), not Σ ‖g‖"))]),
            _slips("_clip_never", [(flat(present), (
                f"yours leaves the gradients as they were, though their norm ({float(total):.4g}) is "
                f"above max_norm ({max_norm:g}). If you loop over `parameters` twice, make it a "
                "list first: model.parameters() is a generator, empty after the first pass"))]))


def my_clip_gradients(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]  # a list: a generator is used up once
    total = torch.stack([g.norm() for g in grads]).norm()       # √(‖g₁‖² + ‖g₂‖² + …): ONE norm
    if total > max_norm:                                        # only ever scale down
        for g in grads:
            g.mul_(max_norm / (total + 1e-6))                   # in place; + 1e-6 as PyTorch does


def my_train_loop(model, optimizer, next_batch, step_fn, schedule, steps, eval_every, evaluate):
    history = {"loss": [], "lr": [], "val": []}
    for step in range(steps):
        rate = schedule(step)
        for group in optimizer.param_groups:            # the rate this step runs with
            group["lr"] = rate
        ids, targets = next_batch()
        loss = step_fn(model, optimizer, ids, targets)
        history["loss"].append(loss.item())             # a number, not the tensor and its graph
        history["lr"].append(rate)
        if (step + 1) % eval_every == 0:                # after steps eval_every, 2·eval_every, …
            history["val"].append({"step": step + 1, **evaluate(model)})
            model.train()
    return history


EXERCISES = [
    Exercise(name="train_loop", notebook="08",
             teaches="the training loop: a batch, the rate, a step, the history, "
             "validation every few steps", difficulty=2, minutes=15, solution=my_train_loop,
             reference=training_checks.reference_loop,
             cases=_loop_cases,
             hint="for each step: set group['lr'] = schedule(step) in every param group, draw a batch with "
             "next_batch(), loss = step_fn(model, optimizer, ids, targets); record loss.item() and "
             "the rate; after step + 1 = eval_every, 2·eval_every, … append "
             "{'step': step + 1, **evaluate(model)} to history['val']",
             drive=drive_loop,
             result_names=("losses", "rates", "validated steps", "validation losses", "weights"),
             options={"diagnoses": _loop_slips, "hints_by_diagnosis": {
                 "_lr_not_applied": "for group in optimizer.param_groups: group['lr'] = schedule(step), "
                                    "before the step",
                 "_one_batch": "ids, targets = next_batch() inside the loop",
                 "_validation_steps": "if (step + 1) % eval_every == 0: validate, with 'step': step + 1"}},
             library=refused(training_checks.reference_loop, on_face(train)),
             own_work="a for loop, the functions you are given and list.append are fine: "
                      "minitf.train is a loop itself",
             piece=Piece(fills="training", order=5,
                         call='train_loop(model, optimizer, next_batch, step_fn, schedule, steps, eval_every, evaluate) → history')),
    Exercise(name="clip_gradients", notebook="08",
             teaches="gradient clipping: one norm over all the gradients, scaled "
             "down to max_norm only when above it", difficulty=2, minutes=10, solution=my_clip_gradients,
             reference=training_checks.torch_clip,
             cases=_clip_cases,
             hint="keep the gradients that exist (p.grad is not None) in a list; their total norm is "
             "√(Σ g²) over every entry of every tensor; if it is above max_norm, multiply every "
             "gradient in place by max_norm / (norm + 1e-6), else leave them alone",
             drive=drive_clip,
             options={"diagnoses": _clip_slips,
                      "case_names": ["gradients above the limit", "gradients below it",
                                     "far above a small limit"], "hints_by_diagnosis": {
                 "_clip_per_tensor": "one norm for all, √(‖g₁‖² + ‖g₂‖² + …): total = "
                                     "torch.stack([g.norm() for g in grads]).norm(), and the same "
                                     "factor for every tensor",
                 "_clip_below_limit": "if total > max_norm: scale; otherwise leave the gradients "
                                      "as they are",
                 "_clip_sum_of_norms": "the norms add like the sides of a right angle: "
                                       "√(‖g₁‖² + ‖g₂‖² + …), torch.stack([g.norm() for g in "
                                       "grads]).norm()",
                 "_clip_never": "grads = [p.grad for p in parameters if p.grad is not None] once, "
                                "then work on that list; scale with g.mul_(…) so the change stays "
                                "in p.grad",
                 "raised": "a parameter may have no gradient (p.grad is None): leave it out"}},
             library=refused((_inspect.unwrap(_clip_grad.clip_grad_norm_),
                              "torch.nn.utils.clip_grad_norm_"),
                             (_inspect.unwrap(_clip_grad.clip_grad_norm),
                              "torch.nn.utils.clip_grad_norm"),
                             (_inspect.unwrap(torch.nn.utils.get_total_norm),
                              "torch.nn.utils.get_total_norm"),
                             (_inspect.unwrap(torch.nn.utils.clip_grads_with_norm_),
                              "torch.nn.utils.clip_grads_with_norm_"),
                             training_checks.torch_clip),
             own_work="p.grad, ** 2, .sum(), torch.sqrt (or .norm() on one tensor) and .mul_ are "
                      "fine (the one norm and the only-when-above are the exercise): "
                      "torch.nn.utils.clip_grad_norm_ is clipping itself",
             piece=Piece(fills="training", order=1,
                         call='clip_gradients(parameters, max_norm): one norm over all gradients, scaled down to max_norm when above it'),
             optional=True),
]
