"""How `--recipe lm-best` was found: a sweep of sizes and regularisers at fixed compute budgets.

    python bench/lm_best_sweep.py --device cuda --workers 4   # the stored sweep (an H100: minutes)
    python bench/lm_best_sweep.py --quick                     # a smoke run on the CPU, to /tmp
    python bench/lm_best_sweep.py                             # without a GPU: the stored sweep's report again

Ten minutes of two CPU cores train a model for about 5·10¹³ FLOPs (minitf.core.flops' count),
so a sweep on the CPU would take hours. A GPU runs the same minitf.train in minutes: each run here
is given a budget in FLOPs, trains for the steps that budget buys at its size, and is scored at the
end on the whole last 10 % of tiny Shakespeare (tiled windows of its context, bench/lm.py's
evaluator) and on as many bytes of the training split (the gap). The losses of a GPU run differ
from a CPU run's in their last digits, and one seed is not a spread: the sweep picks settings, and
bench/lm_best.py measures the chosen recipe on the CPU. Every run: pre-norm, QK-norm, d_ff 4·d_model,
heads of 32 dimensions, Muon (0.02) for the blocks' matrices, AdamW (1.5e-2, the embedding ×3) for
the rest, warm-up–stable–decay (20 steps up, the last 40 % down), windows of 256 bytes in batches
of 16, float32 (TF32 off). Writes minitf/experiments/stored/lm_best_sweep.json and .md; `make bench`
runs it (its `lm_best_sweep` section), which on a machine without a GPU renders the stored sweep's
report again and trains nothing. Notebook 14 prints the same table (`minitf.results.load_lm_best_sweep()`).
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(ROOT))
TEXT = ROOT / "data" / "text" / "tinyshakespeare.txt"

from reporting import command_line, text_report, utc_now  # noqa: E402
from store import add_study_arguments, open_study  # noqa: E402


def size(d_model: int, n_layers: int, dropout: float = 0.0) -> dict:
    return dict(d_model=d_model, n_heads=d_model // 32, n_layers=n_layers, d_ff=4 * d_model,
                dropout=dropout)


def arm(name: str, budget: float, config: dict, **train) -> dict:
    return {"name": name, "budget": budget, "config": config,
            "train": {"context": 256, "batch": 16, "lr": 1.5e-2, "seed": 0, "wd": 0.01, **train}}


# The runs of the stored sweep, in the order it took them: sizes at three budgets, then
# regularisers (weight decay, dropout) and the context at the best size
ARMS = ([arm(f"d{d}L{n}", b, size(d, n)) for b in (4e13, 8e13)
         for d, n in ((128, 4), (128, 6), (128, 8), (192, 4), (192, 6), (256, 4))
         if (d, n, b) not in ((192, 4, 4e13), (192, 6, 4e13), (256, 4, 4e13))]
        + [arm("d192L6 dropout 0.1", 8e13, size(192, 6, 0.1)),
           arm("d256L4 dropout 0.1", 8e13, size(256, 4, 0.1)),
           arm("d128L6 weight decay 0.1", 4e13, size(128, 6), wd=0.1),
           arm("d128L6 dropout 0.1", 4e13, size(128, 6, 0.1)),
           arm("d128L6 dropout 0.1", 6e13, size(128, 6, 0.1)),
           arm("d128L6 weight decay 0.1, dropout 0.05", 4e13, size(128, 6, 0.05), wd=0.1),
           arm("d128L6 weight decay 0.1, dropout 0.05", 5e13, size(128, 6, 0.05), wd=0.1),
           arm("d128L6 weight decay 0.1, dropout 0.05, seed 1", 5e13, size(128, 6, 0.05), wd=0.1, seed=1),
           arm("d128L6 weight decay 0.2, dropout 0.05", 5e13, size(128, 6, 0.05), wd=0.2),
           arm("d128L6 weight decay 0.1, dropout 0.05, windows of 512 (batch 8)", 5e13,
               size(128, 6, 0.05), wd=0.1, context=512, batch=8)])


def run(job: dict, device: str = "cuda", quick: bool = False) -> dict:
    """One arm: train for the steps its budget buys, then score it (nats per byte)."""
    import torch
    import minitf
    from minitf.core.flops import flops_per_token
    from minitf.core.text import TextPart, evaluate_text
    from minitf.core.train import make_lm_optimizer

    torch.backends.cuda.matmul.allow_tf32 = False
    c, t = job["config"], job["train"]
    T = t["context"]
    text = minitf.read_text(TEXT, T)
    torch.manual_seed(t["seed"])
    model = minitf.Transformer(minitf.Config(max_len=T, norm_position="pre", qk_norm=True, **c))
    fpt = flops_per_token(model, T)
    steps = 10 if quick else max(50, round(job["budget"] / (fpt * t["batch"] * T)))
    model.to(device)
    opt = make_lm_optimizer(model, t["lr"], kind="muon", embed_lr=3.0, muon_lr=0.02, weight_decay=t["wd"])
    start = time.time()
    minitf.train(model, text.train, None, steps=steps, batch_size=t["batch"], lr=t["lr"],
                 warmup=20, schedule="wsd", cooldown=0.4, seed=t["seed"], progress=False,
                 optimizer=opt, weight_decay=t["wd"])
    seconds = time.time() - start
    val = TextPart(text.val.path, "val", text.val.data[:8 * T], T) if quick else text.val  # a smoke run scores 8 windows
    head = TextPart(text.train.path, "train", text.train.data[:len(val.data)], T)
    return {**job, "steps": steps, "params": minitf.count_parameters(model), "flops_per_token": fpt,
            "epochs": steps * t["batch"] * T / len(text.train.data),
            "val_loss": evaluate_text(model, val)["loss"],
            "train_loss": evaluate_text(model, head)["loss"], "seconds": seconds, "device": device}


def _run(args):
    return run(*args)


def report(doc: dict) -> str:
    from minitf.experiments.lm_best import LMBestSweep
    return text_report("How `--recipe lm-best` was found: sizes and regularisers at fixed budgets",
                       f"`{doc['command']}`, {doc['date']}, on {doc['device']}: one seed per run, each "
                       "trained for the steps its budget (FLOPs) buys and scored on the whole validation "
                       "split (val) and as many bytes of the training split (train).",
                       LMBestSweep(doc["device"], doc["runs"]).table())


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_study_arguments(p, "lm_best_sweep", quick_help="10 steps of the first arm on the CPU, scored on 8 windows, to /tmp")
    p.add_argument("--device", default="cuda")
    p.add_argument("--workers", type=int, default=1, help="runs at a time (processes)")
    args = p.parse_args(argv)
    arms, device = (ARMS[:1], "cpu") if args.quick else (ARMS, args.device)
    store = open_study("lm_best_sweep", args)
    if device == "cuda" and not torch_cuda():
        if not store.doc:
            p.error(f"no stored sweep in {store.path} and no GPU here: run with --device cuda on one")
        print(f"no GPU here: the stored sweep's report again ({store.markdown_path}), nothing trained")
        store.save(report(store.doc))
        return 0
    with mp.get_context("spawn").Pool(args.workers) as pool:
        records = list(pool.imap(_run, [(a, device, args.quick) for a in arms]))
    for r in records:
        print(f"{r['name']:60s} {r['budget']:.0e} FLOPs, {r['steps']:5d} steps: {r['val_loss']:.4f} "
              f"(train {r['train_loss']:.4f})")
    store.doc = {"device": device_name(device, args.workers), "date": utc_now(),
                 "command": command_line("lm_best_sweep.py", argv), "runs": records}
    store.save(report(store.doc))
    return 0


def torch_cuda() -> bool:
    import torch
    return torch.cuda.is_available()


def device_name(device: str, workers: int) -> str:
    """The device as the stored sweep names it: 'one NVIDIA H100 80GB HBM3, torch 2.11.0+cu130, 4 runs at a time'."""
    import torch
    name = f"one {torch.cuda.get_device_name()}" if device == "cuda" else "the CPU"
    return f"{name}, torch {torch.__version__}, {workers} run{'s' * (workers != 1)} at a time"


if __name__ == "__main__":
    sys.exit(main())
