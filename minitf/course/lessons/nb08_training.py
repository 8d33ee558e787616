"""Notebook 08: the training core, as the learner's pieces (the loss, clipping, one step,
the schedule, AdamW, the loop). Their cases, drivers and slips are `minitf.course.training_checks`."""
from __future__ import annotations

import inspect as _inspect
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils import clip_grad as _clip_grad
from torch.optim import adam as torch_adam

from .. import training_checks
from ...core.evaluate import masked_loss
from ...core.train import lr_at, train, train_step, wsd_lr
from ..declaration import Exercise


def _minitf_train_step(model, optimizer, ids, targets, loss_fn, clip):
    """minitf's own step (its loss is masked_loss, the loss_fn the check passes)."""
    return train_step(model, optimizer, ids, targets, clip)


EXERCISES = [
    Exercise("output_loss", "08", "the output-only cross-entropy: −log p(target), averaged over the "
             "output bytes and EOS", 2, 15, masked_loss, training_checks._loss_cases,
             "log_softmax over the last dimension, pick each target's log-probability (gather), and "
             "average −log p over the positions whose target is not IGNORE, the whole batch together",
             options={"diagnoses": training_checks._loss_slips, "hints_by_diagnosis": {
                 "_loss_positions": "keep = targets != IGNORE; the mean is (nll * keep).sum() / keep.sum()",
                 "_loss_shift": "make_batch has shifted already: logits[b, t] is scored against "
                                "targets[b, t], no slicing",
                 "_loss_no_log_softmax": "torch.log_softmax(logits, -1) turns scores into "
                                         "log-probabilities; then gather the target's",
                 "raised": "gather needs a valid index everywhere: torch.where(keep, targets, 0) "
                           "replaces IGNORE (−100) by any byte; the mask then drops those positions"}},
             library={F.cross_entropy: "F.cross_entropy", F.nll_loss: "F.nll_loss",
                      masked_loss: "minitf.masked_loss", nn.CrossEntropyLoss.forward: "nn.CrossEntropyLoss",
                      nn.NLLLoss.forward: "nn.NLLLoss"},
             own_work="torch.log_softmax (or logsumexp), gather, torch.where and sums are fine (the "
                      "mask and the mean are the exercise): F.cross_entropy and minitf.masked_loss are "
                      "the loss itself",
             fills="training", order=0,
             call='output_loss(logits, targets) → mean cross-entropy over the output part'),
    Exercise("clip_gradients", "08", "gradient clipping: one norm over all the gradients, scaled "
             "down to max_norm only when above it", 2, 10, training_checks.torch_clip,
             training_checks._clip_cases,
             "keep the gradients that exist (p.grad is not None) in a list; their total norm is "
             "√(Σ g²) over every entry of every tensor; if it is above max_norm, multiply every "
             "gradient in place by max_norm / (norm + 1e-6), else leave them alone",
             drive=training_checks.drive_clip,
             options={"diagnoses": training_checks._clip_slips,
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
             library={_inspect.unwrap(_clip_grad.clip_grad_norm_): "torch.nn.utils.clip_grad_norm_",
                      _inspect.unwrap(_clip_grad.clip_grad_norm): "torch.nn.utils.clip_grad_norm",
                      _inspect.unwrap(torch.nn.utils.get_total_norm): "torch.nn.utils.get_total_norm",
                      _inspect.unwrap(torch.nn.utils.clip_grads_with_norm_):
                          "torch.nn.utils.clip_grads_with_norm_",
                      training_checks.torch_clip: "minitf.course.training_checks.torch_clip"},
             own_work="p.grad, ** 2, .sum(), torch.sqrt (or .norm() on one tensor) and .mul_ are "
                      "fine (the one norm and the only-when-above are the exercise): "
                      "torch.nn.utils.clip_grad_norm_ is clipping itself",
             fills="training", order=1,
             call='clip_gradients(parameters, max_norm): one norm over all gradients, scaled down to max_norm when above it'),
    Exercise("train_step", "08", "one training step: zero_grad, forward, loss, backward, clip, step",
             2, 10, _minitf_train_step, training_checks._step_cases,
             "clear the old gradients first (optimizer.zero_grad()), then loss = loss_fn(model(ids), "
             "targets), loss.backward(), clip the gradient norm to `clip`, optimizer.step(); return "
             "the loss", drive=training_checks.drive_step, result_names=("losses", "weights"),
             options={"diagnoses": training_checks._step_slips, "hints_by_diagnosis": {
                 "_no_zero_grad": "PyTorch adds each backward() into .grad: optimizer.zero_grad() first",
                 "_no_clip": "my_clip_gradients(model.parameters(), clip) between backward() and "
                             "step()",
                 "_step_order": "the order is zero_grad, forward, loss, backward, clip, step"}},
             library={train_step: "minitf.core.train.train_step", train: "minitf.train"},
             own_work="model(ids), loss_fn, .backward(), optimizer.zero_grad() and .step(), your "
                      "my_clip_gradients and torch.nn.utils.clip_grad_norm_ are fine (their order is "
                      "the exercise): "
                      "minitf's train_step is the step itself",
             fills="training", order=2,
             call='train_step(model, optimizer, ids, targets, loss_fn, clip) → loss'),
    Exercise("lr_at", "08", "the learning-rate schedule: a linear warm-up, then a cosine down to a floor",
             2, 10, lr_at, lambda: list(training_checks.SCHEDULES),
             "steps 0 … warmup−1 climb linearly to lr, lr·(step + 1)/warmup; then the progress "
             "p = (step − warmup)/(steps − warmup) goes from 0 to 1 and the rate is "
             "floor + (lr − floor)·½(1 + cos πp), floor = lr·min_lr_ratio; past the last step p "
             "stays 1 (the floor)",
             drive=training_checks.drive_schedule,
             options={"diagnoses": training_checks._schedule_slips,
                      "case_names": [f"steps={n}, lr={lr}, warmup={w}, min_lr_ratio={r}"
                                     for n, lr, w, r in training_checks.SCHEDULES],
                      "hints_by_diagnosis": {
                 "_no_warmup": "if step < warmup: return lr * (step + 1) / warmup",
                 "_rate_is_a_tensor": "math.cos and math.pi work on Python floats and return one; "
                                      "torch.cos and torch.tensor make a tensor",
                 "_cosine_to_zero": "the cosine goes from lr down to floor = lr * min_lr_ratio, not to 0",
                 "_off_by_one": "step is 0-based: warm-up lr·(step + 1)/warmup; after it, progress "
                                "(step − warmup)/(steps − warmup)",
                 "_climbs_after_end": "past the last step the rate stays at the floor: "
                                      "progress = min(1, (step − warmup)/(steps − warmup))"}},
             library={lr_at: "minitf.core.train.lr_at", wsd_lr: "minitf.core.train.wsd_lr"},
             own_work="math.cos, math.pi and arithmetic are fine: minitf's lr_at is the schedule itself",
             fills="training", order=3,
             call='lr_at(step, steps, lr, warmup, min_lr_ratio) → learning rate'),
    Exercise("adamw", "08", "AdamW from its update rule: moments, bias correction, decoupled decay",
             4, 25, training_checks.torch_adamw_step, training_checks._adamw_cases,
             "m = β₁m + (1 − β₁)g, v = β₂v + (1 − β₂)g², m̂ = m/(1 − β₁ᵗ), v̂ = v/(1 − β₂ᵗ); the "
             "weight first decays, param·(1 − lr·weight_decay), then moves by −lr·m̂/(√v̂ + eps); "
             "return (param, m, v)", result_names=("param", "m", "v"),
             options={"diagnoses": training_checks._adamw_slips, "hints_by_diagnosis": {
                 "_no_bias_correction": "m and v start at 0: divide them by 1 − β₁ᵗ and 1 − β₂ᵗ "
                                        "(t counts from 1)",
                 "_l2_not_decoupled": "leave grad alone: the decay is param * (1 − lr * weight_decay), "
                                      "outside m and v",
                 "_decay_wrong_tensor": "the decay multiplies the weight, param * (1 − lr * weight_decay)",
                 "_eps_inside_sqrt": "v_hat.sqrt() + eps: eps after the square root"}},
             library={torch_adam._single_tensor_adam: "torch.optim.AdamW",
                      torch_adam._multi_tensor_adam: "torch.optim.AdamW",
                      torch_adam._fused_adam: "torch.optim.AdamW",
                      training_checks.torch_adamw_step: "minitf.course.training_checks.torch_adamw_step"},
             own_work="*, +, ** and .sqrt() on the tensors are fine (the update rule is the "
                      "exercise): torch.optim.AdamW and torch.optim.Adam are the optimizer itself",
             fills="training", order=4,
             call='adamw(param, grad, m, v, t, lr, betas, eps, weight_decay) → (param, m, v)'),
    Exercise("train_loop", "08", "the training loop: a batch, the rate, a step, the history, "
             "validation every few steps", 2, 15, training_checks.reference_loop,
             training_checks._loop_cases,
             "for each step: set group['lr'] = schedule(step) in every param group, draw a batch with "
             "next_batch(), loss = step_fn(model, optimizer, ids, targets); record loss.item() and "
             "the rate; after step + 1 = eval_every, 2·eval_every, … append "
             "{'step': step + 1, **evaluate(model)} to history['val']",
             drive=training_checks.drive_loop,
             result_names=("losses", "rates", "validated steps", "validation losses", "weights"),
             options={"diagnoses": training_checks._loop_slips, "hints_by_diagnosis": {
                 "_lr_not_applied": "for group in optimizer.param_groups: group['lr'] = schedule(step), "
                                    "before the step",
                 "_one_batch": "ids, targets = next_batch() inside the loop",
                 "_validation_steps": "if (step + 1) % eval_every == 0: validate, with 'step': step + 1"}},
             library={training_checks.reference_loop: "minitf.course.training_checks.reference_loop",
                      train: "minitf.train"},
             own_work="a for loop, the functions you are given and list.append are fine: "
                      "minitf.train is a loop itself",
             fills="training", order=5,
             call='train_loop(model, optimizer, next_batch, step_fn, schedule, steps, eval_every, evaluate) → history'),
]
