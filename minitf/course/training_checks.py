"""The checks of notebook 08's training exercises: their cases, the drivers that turn a piece into
numbers to compare, and the common slips each check recognises (minitf.course.lessons.nb08_training
declares the exercises; minitf.course.training_parts is what 08 trains with).

A piece that changes weights in place (a training step, a loop) is checked through a driver: the
driver runs the piece and the reference on copies of the same model, for a few steps, and returns
the numbers to compare (losses, weights), so the usual checks (`feedback.check_function`: float64
and float32, dtype, the library watch) apply unchanged. A slip is recognised by running the slip
itself through the same driver and finding yours equal to it.
"""
from __future__ import annotations

import copy
import math
from typing import Callable

import torch

from ..core.config import Config
from ..core.data import make_batch, make_pairs
from ..core.evaluate import masked_loss
from ..core.model import Transformer
from ..core.tokens import IGNORE
from ..core.train import lr_at
from .cases import random_case as _rand, same as _same
from .feedback import ExerciseError, _describe

def _slips(name: str, results: list[tuple[object, str]], reference: tuple | None = None) -> Callable:
    """A recogniser (got, expected) → the words of the first slip whose result equals yours.
    A driver's result is a tuple (losses, weights, …): then `reference` is the expected tuple, and a
    slip is recognised on the first of its parts that differs from the reference's, once."""
    def recognise(got, expected):
        for result, words in results:
            if reference is None:
                if _same(got, result) and not _same(expected, result):
                    return words
                continue
            first = next((i for i, (a, b) in enumerate(zip(result, reference)) if not _same(a, b)), None)
            if first is not None and _same(expected, reference[first]) and _same(got, result[first]):
                return words
        return None
    recognise.__name__ = name
    return recognise


def _numbers(values, dtype=torch.float64):
    """A list of numbers (floats, or 0-d tensors, which keep their dtype) as one tensor; the first
    odd value as it is, for the check to describe ("expected a tensor …, got None")."""
    out = []
    for v in values:
        if isinstance(v, torch.Tensor) and v.numel() == 1:
            out.append(v.detach().reshape(()))
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            out.append(torch.tensor(float(v), dtype=dtype))
        else:
            return v
    return torch.stack(out) if out else torch.zeros(0, dtype=dtype)


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

def _tiny_model(seed: int, **config) -> Transformer:
    torch.manual_seed(seed)
    return Transformer(Config(**{**dict(d_model=8, n_heads=2, n_layers=1, d_ff=16, dropout=0.0,
                                        norm_position="pre"), **config})).double()


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
        losses.append(fn(model, optimizer, ids, targets, masked_loss, clip))
        weights.append(torch.cat([p.detach().flatten() for p in model.parameters()]).clone())
    return _numbers(losses, dtype), torch.stack(weights)


def _step_no_zero_grad(model, optimizer, ids, targets, loss_fn, clip):
    loss = loss_fn(model(ids), targets)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()
    return loss


def _step_no_clip(model, optimizer, ids, targets, loss_fn, clip):
    optimizer.zero_grad()
    loss = loss_fn(model(ids), targets)
    loss.backward()
    optimizer.step()
    return loss


def _step_before_backward(model, optimizer, ids, targets, loss_fn, clip):
    optimizer.zero_grad()
    loss = loss_fn(model(ids), targets)
    optimizer.step()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    return loss


def _step_clip_after_step(model, optimizer, ids, targets, loss_fn, clip):
    optimizer.zero_grad()
    loss = loss_fn(model(ids), targets)
    loss.backward()
    optimizer.step()
    torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    return loss


def _step_slips(model, ids, targets, clip):
    from .solutions import my_train_step
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


# --- 3 · warm-up, then cosine ----------------------------------------------------------------------

SCHEDULES = [(100, 3e-3, 10, 0.1), (20, 1.0, 4, 0.0), (12, 0.5, 1, 0.25)]  # steps, lr, warmup, floor


PAST_THE_END = 3  # steps after the cycle the curve is checked on too: the rate holds its floor there


def drive_schedule(fn, steps, lr, warmup, min_lr_ratio):
    """The whole curve: fn(step, …) for every step 0 … steps−1 and a few past the end (a run
    trained on beyond `steps` must stay at the floor), as one float64 tensor.

    Each rate must be a Python number: the loop writes it into the optimizer's param groups and the
    history, and a tensor there (torch.cos for math.cos) would pass a comparison of values."""
    rates = [fn(step, steps, lr, warmup, min_lr_ratio) for step in range(steps + PAST_THE_END)]
    for step, rate in enumerate(rates):
        if isinstance(rate, torch.Tensor):
            raise ExerciseError(
                f"step {step} returns {_describe(rate)}, {rate.item():.6g}, where the rate is a Python "
                f"float: the training loop writes it into optimizer.param_groups and the history. "
                f"Compute it with math.cos and arithmetic on numbers (or return rate.item())",
                ("_rate_is_a_tensor",))
    return _numbers(rates)


def _schedule_slips(steps, lr, warmup, min_lr_ratio):
    def curve(rate):
        return torch.tensor([rate(s) for s in range(steps + PAST_THE_END)], dtype=torch.float64)

    def cosine(hold):  # the cosine part; hold=False: climbing back up past the end, as it did once
        return lambda progress, floor: lr * (floor + (1 - floor) * 0.5 * (
            1 + math.cos(math.pi * (min(1, progress) if hold else progress))))

    def either(make, words):  # a slip is named whether or not the floor is also held past the end
        return [(curve(make(cosine(True))), words), (curve(make(cosine(False))), words)]

    after = lambda s: (s - warmup) / max(1, steps - warmup)
    return (_slips("_no_warmup", [
                *either(lambda cos: lambda s: cos(s / steps, min_lr_ratio),
                        "yours has no warm-up: it starts at the full rate. The first `warmup` steps "
                        "climb linearly, lr·(step + 1)/warmup"),
                *either(lambda cos: lambda s: lr if s < warmup else cos(after(s), min_lr_ratio),
                        "yours holds the full rate during the warm-up: it climbs linearly, "
                        "lr·(step + 1)/warmup")]),
            _slips("_cosine_to_zero", either(
                lambda cos: lambda s: lr * (s + 1) / warmup if s < warmup else cos(after(s), 0.0),
                "yours decays to 0: the cosine ends at the floor lr·min_lr_ratio, "
                "lr·(min_lr_ratio + (1 − min_lr_ratio)·½(1 + cos(π·progress)))")
                   if min_lr_ratio else []),  # with a floor of 0 this slip is no slip
            _slips("_off_by_one", [
                *either(lambda cos: lambda s: lr * s / warmup if s < warmup else cos(after(s), min_lr_ratio),
                        "yours warms up from 0: step 0 gets lr·0/warmup = 0, a wasted step. Step s "
                        "(0-based) gets lr·(s + 1)/warmup, so the last warm-up step reaches lr"),
                *either(lambda cos: lambda s: lr * (s + 1) / warmup if s < warmup
                        else cos((s - warmup + 1) / max(1, steps - warmup), min_lr_ratio),
                        "yours starts the cosine one step late: at step = warmup the progress is 0, "
                        "(step − warmup)/(steps − warmup)"),
                *either(lambda cos: lambda s: lr * (s + 1) / warmup if s < warmup
                        else cos((s - warmup) / max(1, steps - warmup - 1), min_lr_ratio),
                        "yours divides the progress by steps − warmup − 1: the cosine reaches its "
                        "floor on the last step. minitf's divides by steps − warmup")]),
            _slips("_climbs_after_end", [
                (curve(lambda s: lr * (s + 1) / warmup if s < warmup
                       else cosine(False)(after(s), min_lr_ratio)),
                 f"yours climbs back up after the last step: past step {steps - 1} the progress "
                 "passes 1 and the cosine rises again. Hold the floor there: progress = "
                 "min(1, (step − warmup)/(steps − warmup))")]))


# --- 4 · AdamW from its update rule ----------------------------------------------------------------

def torch_adamw_step(param, grad, m, v, t, lr, betas, eps, weight_decay):
    """One step of torch.optim.AdamW from the state (m, v, t − 1 steps done): the truth the learner's
    update is compared with. Returns (param, m, v) after the step, leaving the arguments alone."""
    p = param.detach().clone().requires_grad_(True)
    p.grad = grad.detach().clone()
    optimizer = torch.optim.AdamW([p], lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                  foreach=False)
    optimizer.state[p] = {"step": torch.tensor(float(t - 1)), "exp_avg": m.detach().clone(),
                          "exp_avg_sq": v.detach().clone()}
    optimizer.step()
    state = optimizer.state[p]
    return p.detach(), state["exp_avg"], state["exp_avg_sq"]


def _adamw_cases():
    """States along a real AdamW run (steps 1, 2, 3 and 8): each case is the next step from one."""
    cases = []
    for seed, (shape, lr, wd, eps) in enumerate([((3, 4), 0.1, 0.1, 1e-8), ((5,), 0.01, 0.0, 1e-3),
                                                 ((2, 3), 0.05, 0.5, 1e-2)]):
        p, m, v = _rand(*shape, seed=seed), torch.zeros(shape, dtype=torch.float64), \
            torch.zeros(shape, dtype=torch.float64)
        for t in range(1, 9):
            grad = _rand(*shape, seed=100 * seed + t) * 0.1 ** (t % 3)  # gradients of changing size
            if t in (1, 2, 3, 8):
                cases.append((p, grad, m, v, t, lr, (0.9, 0.95), eps, wd))
            p, m, v = torch_adamw_step(p, grad, m, v, t, lr, (0.9, 0.95), eps, wd)
    return cases


def _adamw_slips(param, grad, m, v, t, lr, betas, eps, weight_decay):
    b1, b2 = betas
    m1 = b1 * m + (1 - b1) * grad
    v1 = b2 * v + (1 - b2) * grad ** 2
    mh, vh = m1 / (1 - b1 ** t), v1 / (1 - b2 ** t)
    decayed = param * (1 - lr * weight_decay)
    g2 = grad + weight_decay * param  # L2: the decay folded into the gradient
    m2, v2 = b1 * m + (1 - b1) * g2, b2 * v + (1 - b2) * g2 ** 2
    l2 = param - lr * (m2 / (1 - b1 ** t)) / ((v2 / (1 - b2 ** t)).sqrt() + eps)
    md = m1 * (1 - lr * weight_decay)
    return (_slips("_no_bias_correction", [
                (decayed - lr * m1 / (v1.sqrt() + eps), "yours leaves out the bias correction: m and v "
                                                        "start at 0, so early on they are too small; "
                                                        "divide them by 1 − β₁ᵗ and 1 − β₂ᵗ"),
                (decayed - lr * (m1 / (1 - b1 ** t)) / (v1.sqrt() + eps),
                 "yours corrects m but not v: divide v by 1 − β₂ᵗ too"),
                (decayed - lr * m1 / ((v1 / (1 - b2 ** t)).sqrt() + eps),
                 "yours corrects v but not m: divide m by 1 − β₁ᵗ too")]),
            _slips("_l2_not_decoupled", [(l2, (
                "yours adds the decay to the gradient (grad + weight_decay·param, the L2 penalty of "
                "Adam): then it passes through m and v and is rescaled with the gradient. AdamW's decay "
                "is decoupled: param·(1 − lr·weight_decay), apart from the Adam update"))]),
            _slips("_decay_wrong_tensor", [
                (param * (1 - weight_decay) - lr * mh / (vh.sqrt() + eps),
                 "yours decays the weight by weight_decay, without the learning rate: AdamW multiplies "
                 "it by 1 − lr·weight_decay"),
                (param - lr * (md / (1 - b1 ** t)) / (vh.sqrt() + eps),
                 "yours decays the moment m instead of the weight: the decay is "
                 "param·(1 − lr·weight_decay)"),
                (param - lr * mh / (vh.sqrt() + eps),
                 "yours leaves out the weight decay: multiply the weight by 1 − lr·weight_decay")]),
            _slips("_eps_inside_sqrt", [(decayed - lr * mh / (vh + eps).sqrt(), (
                "yours puts eps inside the square root, sqrt(v̂ + eps): AdamW adds it after, "
                "sqrt(v̂) + eps"))]))


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
    from .solutions import my_train_step  # the reference step, so only the loop is under test
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


def reference_loop(model, optimizer, next_batch, step_fn, schedule, steps, eval_every, evaluate):
    """The loop the learner's is compared with: minitf.train's order (rate, batch, step, record,
    validate after every eval_every steps), with the step and schedule given."""
    history = {"loss": [], "lr": [], "val": []}
    for step in range(steps):
        rate = schedule(step)
        for group in optimizer.param_groups:
            group["lr"] = rate
        ids, targets = next_batch()
        history["loss"].append(step_fn(model, optimizer, ids, targets).item())
        history["lr"].append(rate)
        if (step + 1) % eval_every == 0:
            history["val"].append({"step": step + 1, **evaluate(model)})
            model.train()
    return history


def _loop_lr_after_step(model, optimizer, next_batch, step_fn, schedule, steps, eval_every, evaluate):
    history = {"loss": [], "lr": [], "val": []}
    for step in range(steps):
        ids, targets = next_batch()
        loss = step_fn(model, optimizer, ids, targets)
        for group in optimizer.param_groups:
            group["lr"] = schedule(step)
        history["loss"].append(loss.item())
        history["lr"].append(schedule(step))
        if (step + 1) % eval_every == 0:
            history["val"].append({"step": step + 1, **evaluate(model)})
    return history


def _loop_lr_not_set(model, optimizer, next_batch, step_fn, schedule, steps, eval_every, evaluate):
    history = {"loss": [], "lr": [], "val": []}
    for step in range(steps):
        ids, targets = next_batch()
        loss = step_fn(model, optimizer, ids, targets)
        history["loss"].append(loss.item())
        history["lr"].append(schedule(step))
        if (step + 1) % eval_every == 0:
            history["val"].append({"step": step + 1, **evaluate(model)})
    return history


def _loop_one_batch(model, optimizer, next_batch, step_fn, schedule, steps, eval_every, evaluate):
    history = {"loss": [], "lr": [], "val": []}
    ids, targets = next_batch()
    for step in range(steps):
        for group in optimizer.param_groups:
            group["lr"] = schedule(step)
        loss = step_fn(model, optimizer, ids, targets)
        history["loss"].append(loss.item())
        history["lr"].append(schedule(step))
        if (step + 1) % eval_every == 0:
            history["val"].append({"step": step + 1, **evaluate(model)})
    return history


def _loop_validate_at_0(model, optimizer, next_batch, step_fn, schedule, steps, eval_every, evaluate):
    history = {"loss": [], "lr": [], "val": []}
    for step in range(steps):
        if step % eval_every == 0:
            history["val"].append({"step": step, **evaluate(model)})
        for group in optimizer.param_groups:
            group["lr"] = schedule(step)
        ids, targets = next_batch()
        loss = step_fn(model, optimizer, ids, targets)
        history["loss"].append(loss.item())
        history["lr"].append(schedule(step))
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


def torch_clip(parameters, max_norm):
    """PyTorch's clipping: the truth the learner's is compared with."""
    torch.nn.utils.clip_grad_norm_(parameters, max_norm)


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
