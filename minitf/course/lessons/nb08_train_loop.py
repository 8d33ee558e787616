"""Notebook 08's training loop, checked through a driver that runs it on copies, with the
reference step (so only the loop is under test)."""
from __future__ import annotations

import copy

import torch

from ...core.data import make_batch, make_pairs
from ...core.evaluate import masked_loss
from ...core.train import lr_at, train
from .. import training_checks
from ..cases import driven_slips as _slips, numbers as _numbers, tiny_model as _tiny_model
from ..declaration import Exercise, Piece, on_face, refused
from ..training_checks import reference_loop
from .nb08_loss_and_step import my_train_step


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
]
