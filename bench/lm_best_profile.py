"""Where lm-best's ten minutes go, and how far they are from what the CPU can do.

    python bench/lm_best_profile.py           # about a minute on 2 threads
    python bench/lm_best_profile.py --quick   # fewer repeats, to /tmp/minitf-bench-lm_best_profile

1. The FLOP rate of this CPU on the recipe's own matrix products (a batch of 16 windows of 256 bytes,
   so 4,096 rows; d_model 128), forward shapes, next to a large square product (2,048³), the best
   rate this CPU reaches from PyTorch: the practical peak.
2. The rate the recipe reaches: its FLOPs per step (minitf.core.flops' count: 6·N + attention) over
   the seconds of a training step.
3. A profile of training steps (torch.profiler): matrix products, attention, the optimizer (Muon's
   Newton–Schulz products included), drawing the batch, the rest; and one evaluation of the whole
   validation split, which the recipe runs four times.
Writes minitf/experiments/stored/lm_best_profile.json and .md; `make bench` runs it (its
`lm_best_profile` section). Notebook 14 prints the same table (`minitf.results.load_lm_best_profile()`).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))

import minitf  # noqa: E402
from minitf.core.flops import flops_per_token  # noqa: E402
from minitf.core.recipes import get as get_recipe  # noqa: E402
from minitf.core.text import TextPart, evaluate_text, random_windows  # noqa: E402
from minitf.core.train import make_lm_optimizer, train_step  # noqa: E402
from minitf.experiments.lm_best import format_profile  # noqa: E402
from lm import TEXT  # noqa: E402
from reporting import command_line, cpu_model, text_report, utc_now  # noqa: E402
from store import add_study_arguments, open_study  # noqa: E402


def rate(m: int, k: int, n: int, repeats: int) -> float:
    """GFLOP/s of (m, k) @ (k, n) in float32, best of `repeats` timed batches."""
    a, b = torch.randn(m, k), torch.randn(k, n)
    for _ in range(3):
        a @ b
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(10):
            a @ b
        best = min(best, (time.perf_counter() - t) / 10)
    return 2 * m * k * n / best / 1e9


def recipe_model():
    v = get_recipe("lm-best").values
    cfg = minitf.Config(d_model=v["d_model"], n_heads=v["n_heads"], n_layers=v["n_layers"], d_ff=v["d_ff"],
                        max_len=v["context"], norm_position=v["norm_position"], dropout=v["dropout"],
                        qk_norm=v["qk_norm"])
    torch.manual_seed(0)
    model = minitf.Transformer(cfg)
    opt = make_lm_optimizer(model, v["lr"], weight_decay=v["weight_decay"], kind=v["optimizer"],
                            embed_lr=v["embed_lr"], muon_lr=v["muon_lr"])
    return v, model, opt


CATEGORIES = (("matrix products", ("aten::mm", "aten::addmm", "aten::bmm", "aten::matmul")),
              ("attention (fused)", ("scaled_dot_product", "flash_attention")),)


def profile_steps(steps: int) -> dict:
    """Self CPU time per category over `steps` training steps, each step split into its phases."""
    from torch.profiler import ProfilerActivity, profile, record_function

    v, model, opt = recipe_model()
    part = minitf.read_text(TEXT, v["context"]).train
    g = torch.Generator().manual_seed(0)
    model.train()
    for _ in range(3):
        train_step(model, opt, *random_windows(part, v["batch_size"], g))
    phases = {"data": 0.0, "forward and backward": 0.0, "optimizer": 0.0}
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            t = time.perf_counter()
            with record_function("data"):
                ids, targets = random_windows(part, v["batch_size"], g)
            t1 = time.perf_counter()
            with record_function("forward and backward"):
                loss = minitf.core.evaluate.masked_loss(model(ids), targets)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            t2 = time.perf_counter()
            with record_function("optimizer"):
                opt.step()
            t3 = time.perf_counter()
            phases["data"] += t1 - t
            phases["forward and backward"] += t2 - t1
            phases["optimizer"] += t3 - t2
    total = sum(e.self_cpu_time_total for e in prof.key_averages())
    by = {name: sum(e.self_cpu_time_total for e in prof.key_averages() if any(k in e.key for k in keys))
          for name, keys in CATEGORIES}
    by["everything else (norms, RoPE, activations, copies, the loss)"] = total - sum(by.values())
    return {"steps": steps, "wall_s_per_step": sum(phases.values()) / steps,
            "phases_s_per_step": {k: x / steps for k, x in phases.items()},
            "self_cpu_share": {k: x / total for k, x in by.items()}}


def report(doc: dict) -> str:
    return text_report("Where `--recipe lm-best`'s ten minutes go",
                       f"`{doc.get('command', 'python bench/lm_best_profile.py')}`, {doc['date']}: the CPU's "
                       "rate on the recipe's matrix products against a large square product's, the rate "
                       "whole training steps reach, and a step's time by kind of work.", format_profile(doc))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_study_arguments(p, "lm_best_profile", quick_help="fewer repeats and steps, to /tmp")
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    repeats = 2 if args.quick else 8
    rows = 4096
    shapes = {"Q, K, V (4096×128 @ 128×384)": (rows, 128, 384), "W_O (4096×128 @ 128×128)": (rows, 128, 128),
              "FFN up (4096×128 @ 128×512)": (rows, 128, 512), "FFN down (4096×512 @ 512×128)": (rows, 512, 128),
              "head (4096×128 @ 128×256)": (rows, 128, 256), "square 2048³ (the practical peak)": (2048, 2048, 2048)}
    rates = {name: round(rate(*s, repeats), 1) for name, s in shapes.items()}
    v, model, opt = recipe_model()
    tokens = v["batch_size"] * v["context"]
    fpt = flops_per_token(model, v["context"])
    prof = profile_steps(3 if args.quick else 20)
    val = minitf.read_text(TEXT, v["context"]).val
    if args.quick:  # a smoke run times the evaluation on 8 windows, not the whole split
        val = TextPart(val.path, "val", val.data[:8 * v["context"]], v["context"])
    t = time.perf_counter()
    evaluate_text(model, val)
    eval_s = time.perf_counter() - t
    doc = {"date": utc_now(), "cpu": cpu_model(cores=True),
           "threads": args.threads, "matmul_gflops": rates, "flops_per_token": fpt, "tokens_per_step": tokens,
           "recipe_gflops": round(fpt * tokens / prof["wall_s_per_step"] / 1e9, 1), "profile": prof,
           "evaluation_s": round(eval_s, 2), "evaluations": v["steps"] // v["eval_every"],
           "command": command_line("lm_best_profile.py", argv)}
    store = open_study("lm_best_profile", args)
    store.doc = doc
    store.save(report(doc))
    print(report(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
