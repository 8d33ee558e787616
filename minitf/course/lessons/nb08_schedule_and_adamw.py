"""Notebook 08's schedule (warm-up, then cosine to a floor) and AdamW from its update rule."""
from __future__ import annotations

import math

import torch
from torch.optim import adam as torch_adam

from ...core.train import lr_at, wsd_at
from .. import training_checks
from ..cases import random_case as _rand, driven_slips as _slips, numbers as _numbers
from ..declaration import Exercise, Piece, refused
from ..feedback import ExerciseError, _describe
from ..training_checks import torch_adamw_step


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


def my_lr_at(step, steps, lr, warmup, min_lr_ratio=0.1):
    import math
    if step < warmup:
        return lr * (step + 1) / warmup                 # step 0 gets lr/warmup, step warmup−1 gets lr
    progress = (step - warmup) / max(1, steps - warmup)  # 0 → 1 over the steps after the warm-up
    progress = min(1, progress)                         # past the end: hold the floor
    floor = lr * min_lr_ratio
    return floor + (lr - floor) * 0.5 * (1 + math.cos(math.pi * progress))


def my_adamw(param, grad, m, v, t, lr, betas, eps, weight_decay):
    beta1, beta2 = betas
    param = param * (1 - lr * weight_decay)             # decoupled decay: on the weight, not the gradient
    m = beta1 * m + (1 - beta1) * grad                  # running mean of the gradient
    v = beta2 * v + (1 - beta2) * grad ** 2             # running mean of its square
    m_hat = m / (1 - beta1 ** t)                        # bias correction: m and v start at 0
    v_hat = v / (1 - beta2 ** t)
    param = param - lr * m_hat / (v_hat.sqrt() + eps)   # eps outside the square root
    return param, m, v


EXERCISES = [
    Exercise(name="lr_at", notebook="08",
             teaches="the learning-rate schedule: a linear warm-up, then a cosine down to a floor",
             difficulty=2, minutes=10, solution=my_lr_at, reference=lr_at, cases=lambda: list(SCHEDULES),
             hint="steps 0 … warmup−1 climb linearly to lr, lr·(step + 1)/warmup; then the progress "
             "p = (step − warmup)/(steps − warmup) goes from 0 to 1 and the rate is "
             "floor + (lr − floor)·½(1 + cos πp), floor = lr·min_lr_ratio; past the last step p "
             "stays 1 (the floor)",
             drive=drive_schedule,
             options={"diagnoses": _schedule_slips,
                      "case_names": [f"steps={n}, lr={lr}, warmup={w}, min_lr_ratio={r}"
                                     for n, lr, w, r in SCHEDULES],
                      "hints_by_diagnosis": {
                 "_no_warmup": "if step < warmup: return lr * (step + 1) / warmup",
                 "_rate_is_a_tensor": "math.cos and math.pi work on Python floats and return one; "
                                      "torch.cos and torch.tensor make a tensor",
                 "_cosine_to_zero": "the cosine goes from lr down to floor = lr * min_lr_ratio, not to 0",
                 "_off_by_one": "step is 0-based: warm-up lr·(step + 1)/warmup; after it, progress "
                                "(step − warmup)/(steps − warmup)",
                 "_climbs_after_end": "past the last step the rate stays at the floor: "
                                      "progress = min(1, (step − warmup)/(steps − warmup))"}},
             library=refused(lr_at, wsd_at),
             own_work="math.cos, math.pi and arithmetic are fine: minitf's lr_at is the schedule itself",
             piece=Piece(fills="training", order=3,
                         call='lr_at(step, steps, lr, warmup, min_lr_ratio) → learning rate'),
             optional=True),
    Exercise(name="adamw", notebook="08",
             teaches="AdamW from its update rule: moments, bias correction, decoupled decay",
             difficulty=4, minutes=25, solution=my_adamw, reference=training_checks.torch_adamw_step,
             cases=_adamw_cases,
             hint="m = β₁m + (1 − β₁)g, v = β₂v + (1 − β₂)g², m̂ = m/(1 − β₁ᵗ), v̂ = v/(1 − β₂ᵗ); the "
             "weight first decays, param·(1 − lr·weight_decay), then moves by −lr·m̂/(√v̂ + eps); "
             "return (param, m, v)", result_names=("param", "m", "v"),
             options={"diagnoses": _adamw_slips, "hints_by_diagnosis": {
                 "_no_bias_correction": "m and v start at 0: divide them by 1 − β₁ᵗ and 1 − β₂ᵗ "
                                        "(t counts from 1)",
                 "_l2_not_decoupled": "leave grad alone: the decay is param * (1 − lr * weight_decay), "
                                      "outside m and v",
                 "_decay_wrong_tensor": "the decay multiplies the weight, param * (1 − lr * weight_decay)",
                 "_eps_inside_sqrt": "v_hat.sqrt() + eps: eps after the square root"}},
             library=refused((torch_adam._single_tensor_adam, "torch.optim.AdamW"),
                             (torch_adam._multi_tensor_adam, "torch.optim.AdamW"),
                             (torch_adam._fused_adam, "torch.optim.AdamW"),
                             training_checks.torch_adamw_step),
             own_work="*, +, ** and .sqrt() on the tensors are fine (the update rule is the "
                      "exercise): torch.optim.AdamW and torch.optim.Adam are the optimizer itself",
             piece=Piece(fills="training", order=4,
                         call='adamw(param, grad, m, v, t, lr, betas, eps, weight_decay) → (param, m, v)'),
             optional=True),
]
