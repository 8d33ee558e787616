"""The references 08's training exercises are compared with, as functions: one step of PyTorch's
AdamW from a given state, PyTorch's gradient clipping, and minitf.train's loop with its step and
schedule given. The exercises themselves, their cases, drivers and slips are declared in
minitf.course.lessons (nb08_loss_and_step, nb08_schedule_and_adamw, nb08_train_loop, nb08_clip_gradients).
"""
from __future__ import annotations

import torch


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


def torch_clip(parameters, max_norm):
    """PyTorch's clipping: the truth the learner's is compared with."""
    torch.nn.utils.clip_grad_norm_(parameters, max_norm)
