"""Notebook 08's first training pieces: the output-only cross-entropy and one training step
(its driver runs the learner's step on a copy of a tiny model; a slip is run through it too)."""
from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch import nn

from ...core.data import make_batch, make_pairs
from ...core.evaluate import masked_loss
from ...core.tokens import IGNORE
from ...core.train import train, train_step
from ..cases import random_case as _rand, driven_slips as _slips, numbers as _numbers, tiny_model as _tiny_model
from ..declaration import Exercise, Piece, on_face, refused
from ..feedback import ExerciseError
from .nb08_clip_gradients import my_clip_gradients


# --- 1 · the output-only cross-entropy -------------------------------------------------------------

def _loss_cases():
    pairs = [make_pairs("shift", 3, seed=4), make_pairs("shift", 5, seed=5, repeats=1.0)]
    cases = []
    for seed, chunk in enumerate(pairs):
        ids, targets = make_batch(chunk)
        cases.append((_rand(*ids.shape, 256, seed=seed, low=-3, high=3), targets))
    return cases


def _loss_slips(logits, targets):
    """The output-only loss gone wrong: over the input part too, averaged over every position, the
    targets shifted once more, a mean per row, no log-softmax."""
    keep = targets != IGNORE
    logp = torch.log_softmax(logits, -1)
    nll = -logp.gather(-1, targets.clamp(min=0)[..., None])[..., 0]  # IGNORE read as byte 0
    per_row = (nll * keep).sum(1) / keep.sum(1).clamp(min=1)
    raw = -logits.gather(-1, targets.clamp(min=0)[..., None])[..., 0]
    return (_slips("_loss_positions", [
        (nll.mean(), "yours is the loss over every position: the input part and the padding too "
                     "(their IGNORE targets read as byte 0). The model is given the input; only "
                     "the output bytes and EOS, where the target is not IGNORE, are scored"),
        ((nll * keep).sum() / keep.numel(), "yours sums the loss over the output positions but "
                                            "divides by every position (B·T): divide by the number of "
                                            "targets that are not IGNORE"),
        ((nll * keep).sum(), "yours is the sum over the output positions, not their mean"),
        (per_row.mean(), "yours averages each row first, then the rows: a short output then weighs "
                         "as much as a long one. Average over all output positions of the batch "
                         "together")]),
            _slips("_loss_shift", [
        (masked_loss(logits[:, :-1], targets[:, 1:]), "yours shifts the targets once more (logits[:, :-1] "
                                                      "against targets[:, 1:]): make_batch's targets[t] "
                                                      "is already the byte after position t"),
        (masked_loss(logits[:, 1:], targets[:, :-1]), "yours pairs each target with the next "
                                                      "position's logits (logits[:, 1:] against "
                                                      "targets[:, :-1]): targets[t] belongs to logits[t]")]),
            _slips("_loss_no_log_softmax", [
        ((raw * keep).sum() / keep.sum(), "yours takes −logit of the target, not −log softmax: the "
                                          "logits are scores, log_softmax makes them log-probabilities")]))


# --- 2 · one training step -------------------------------------------------------------------------

def _step_cases():
    cases = []
    for seed, clip in enumerate([0.5, 0.05]):  # both clips are below the gradients' norm: clipping acts
        ids, targets = make_batch(make_pairs("shift", 4, seed=seed, max_len=5))
        cases.append((_tiny_model(seed), ids, targets, clip))
    return cases


def drive_step(fn, model, ids, targets, clip):
    """Three steps of `fn` on a copy of the model with AdamW (lr 0.05): the losses it returned and
    the weights after each step, (3,) and (3, parameters)."""
    model = copy.deepcopy(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.05, weight_decay=0.1)
    dtype = next(model.parameters()).dtype
    losses, weights = [], []
    for _ in range(3):
        loss = fn(model, optimizer, ids, targets, masked_loss, clip)
        _returns_the_loss_tensor(loss, dtype)
        losses.append(loss)
        weights.append(torch.cat([p.detach().flatten() for p in model.parameters()]).clone())
    return _numbers(losses, dtype), torch.stack(weights)


def _returns_the_loss_tensor(loss, dtype) -> None:
    """The step returns the loss as a 0-d tensor: the loop (train_loop) calls loss.item() on it, so
    a float (loss.item() inside the step) would pass the numbers and break the training later."""
    if isinstance(loss, torch.Tensor) and loss.dim() == 0 and loss.is_floating_point():
        return
    if isinstance(loss, (int, float)) and not isinstance(loss, bool):
        raise ExerciseError(
            f"yours returns a Python {type(loss).__name__} ({loss:.4g}), not the loss tensor: the "
            f"training loop records loss.item() itself, and a {type(loss).__name__} has no .item(). "
            f"Return `loss` as loss_fn gave it (a 0-d tensor)", ("_step_returns_a_number",))
    what = (f"a tensor of shape {tuple(loss.shape)}" if isinstance(loss, torch.Tensor)
            else type(loss).__name__)
    raise ExerciseError(f"yours returns {what}, not the loss: return `loss` as loss_fn gave it, a "
                        f"0-d {str(dtype).removeprefix('torch.')} tensor the loop calls .item() on",
                        ("_step_returns_a_number",))


def _step_in_order(*actions):
    """A learner's step that does these actions in this order; the right order is zero_grad, loss,
    backward, clip, step (my_train_step), and each slip below leaves one out or moves one."""
    def train_step(model, optimizer, ids, targets, loss_fn, clip):
        loss = None
        for action in actions:
            if action == "zero_grad":
                optimizer.zero_grad()
            elif action == "loss":
                loss = loss_fn(model(ids), targets)
            elif action == "backward":
                loss.backward()
            elif action == "clip":
                torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            elif action == "step":
                optimizer.step()
        return loss
    return train_step


_step_no_zero_grad = _step_in_order("loss", "backward", "clip", "step")
_step_no_clip = _step_in_order("zero_grad", "loss", "backward", "step")
_step_before_backward = _step_in_order("zero_grad", "loss", "step", "backward", "clip")
_step_clip_after_step = _step_in_order("zero_grad", "loss", "backward", "step", "clip")


def _step_slips(model, ids, targets, clip):
    run = lambda slip: drive_step(slip, model, ids, targets, clip)
    said = run(my_train_step)  # the expected result, to find where each slip first shows
    return (_slips("_no_zero_grad", [(run(_step_no_zero_grad), (
                "yours never clears the gradients: from the second step on, backward() adds the new "
                "gradient to the old ones (PyTorch accumulates .grad), so step 2 moves by the sum of "
                "two gradients. Call optimizer.zero_grad() before backward()"))], said),
            _slips("_no_clip", [(run(_step_no_clip), (
                "yours does not clip the gradient: with a gradient norm above `clip`, "
                "my_clip_gradients(model.parameters(), clip) scales it down to `clip` before the "
                "step"))], said),
            _slips("_step_order", [
                (run(_step_before_backward), "yours calls optimizer.step() before loss.backward(): "
                                             "each step then uses the gradient of the step before "
                                             "(the first one none at all). backward, clip, then step"),
                (run(_step_clip_after_step), "yours clips after optimizer.step(): the step has used "
                                             "the unclipped gradient already. Clip between backward "
                                             "and step")], said))


def _minitf_train_step(model, optimizer, ids, targets, loss_fn, clip):
    """minitf's own step (its loss is masked_loss, the loss_fn the check passes)."""
    return train_step(model, optimizer, ids, targets, clip)


def my_output_loss(logits, targets):
    from minitf.core.tokens import IGNORE               # −100: the positions that are not scored
    keep = targets != IGNORE                            # the output bytes and EOS: what is scored
    logp = torch.log_softmax(logits, dim=-1)            # (B, T, V) log-probabilities
    safe = torch.where(keep, targets, 0)                # any valid index where the target is IGNORE
    picked = logp.gather(-1, safe[..., None])[..., 0]   # (B, T) log-prob of each target byte
    return -(picked * keep).sum() / keep.sum()          # mean over the kept positions only


def my_train_step(model, optimizer, ids, targets, loss_fn, clip=1.0):
    optimizer.zero_grad()                               # .grad would otherwise add up step after step
    loss = loss_fn(model(ids), targets)
    loss.backward()
    my_clip_gradients(model.parameters(), clip)         # your clipping, from the exercise above
    optimizer.step()                                    # after backward and clipping
    return loss


EXERCISES = [
    Exercise(name="output_loss", notebook="08",
             teaches="the output-only cross-entropy: −log p(target), averaged over the "
             "output bytes and EOS", difficulty=2, minutes=15, solution=my_output_loss, reference=masked_loss,
             cases=_loss_cases,
             hint="log_softmax over the last dimension, pick each target's log-probability (gather), and "
             "average −log p over the positions whose target is not IGNORE, the whole batch together",
             options={"diagnoses": _loss_slips, "hints_by_diagnosis": {
                 "_loss_positions": "keep = targets != IGNORE; the mean is (nll * keep).sum() / keep.sum()",
                 "_loss_shift": "make_batch has shifted already: logits[b, t] is scored against "
                                "targets[b, t], no slicing",
                 "_loss_no_log_softmax": "torch.log_softmax(logits, -1) turns scores into "
                                         "log-probabilities; then gather the target's",
                 "raised": "gather needs a valid index everywhere: torch.where(keep, targets, 0) "
                           "replaces IGNORE (−100) by any byte; the mask then drops those positions"}},
             library=refused(F.cross_entropy, F.nll_loss, on_face(masked_loss),
                             nn.CrossEntropyLoss.forward, nn.NLLLoss.forward),
             own_work="torch.log_softmax (or logsumexp), gather, torch.where and sums are fine (the "
                      "mask and the mean are the exercise): F.cross_entropy and minitf.masked_loss are "
                      "the loss itself",
             piece=Piece(fills="training", order=0,
                         call='output_loss(logits, targets) → mean cross-entropy over the output part'),
             optional=True),  # issue 42: it re-derives F.cross_entropy(..., ignore_index=IGNORE)
    Exercise(name="train_step", notebook="08",
             teaches="one training step: zero_grad, forward, loss, backward, clip, step",
             difficulty=2, minutes=10, solution=my_train_step, reference=_minitf_train_step,
             cases=_step_cases,
             hint="clear the old gradients first (optimizer.zero_grad()), then loss = loss_fn(model(ids), "
             "targets), loss.backward(), clip the gradient norm to `clip`, optimizer.step(); return "
             "the loss", drive=drive_step, result_names=("losses", "weights"),
             options={"diagnoses": _step_slips, "hints_by_diagnosis": {
                 "_no_zero_grad": "PyTorch adds each backward() into .grad: optimizer.zero_grad() first",
                 "_no_clip": "my_clip_gradients(model.parameters(), clip) between backward() and "
                             "step()",
                 "_step_order": "the order is zero_grad, forward, loss, backward, clip, step",
                 "_step_returns_a_number": "return loss, the tensor: train_loop calls loss.item() "
                                           "when it records it"}},
             library=refused(train_step, on_face(train)),
             own_work="model(ids), loss_fn, .backward(), optimizer.zero_grad() and .step(), your "
                      "my_clip_gradients and torch.nn.utils.clip_grad_norm_ are fine (their order is "
                      "the exercise): "
                      "minitf's train_step is the step itself",
             piece=Piece(fills="training", order=2,
                         call='train_step(model, optimizer, ids, targets, loss_fn, clip) → loss')),
]
