"""A Muon training step of `--recipe lm-fast` against an AdamW step, with and without the CPU's bf16.

    python bench/muon_step.py            # both settings, ~1 min on 2 cores
    python bench/muon_step.py --quick    # a smoke run

torch.optim.Muon orthogonalises in bfloat16; on a CPU without native bf16 that is emulated and slow.
minitf's Muon (minitf/core/muon.py) orthogonalises in float32 there. This script times, in one
process per setting, whole training steps of lm-fast's model (forward, backward, clipping, the
optimizer) with three optimizers holding the same initial weights: AdamW (lm-fast's "- Muon" arm,
AdamW everywhere), minitf's Muon (the recipe's), and torch.optim.Muon (in bf16, what minitf used
before). The optimizers take turns round by round, so the machine's load falls on all alike, and
each ratio to AdamW is taken within a round (its median over the rounds is reported).
The settings: the CPU as it is, and its bf16 switched off (ONEDNN_MAX_CPU_ISA=AVX2,
ATEN_CPU_CAPABILITY=avx2: a stand-in for an AVX2 CPU); each child also times a bf16 matrix product
pair against a float32 one, which shows whether bf16 really was off.
Writes bench/results/muon_step.json (or --out) and prints a table.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = {"as it is": {}, "bf16 off": {"ONEDNN_MAX_CPU_ISA": "AVX2", "ATEN_CPU_CAPABILITY": "avx2"}}


def matmul_pair_ms(dtype, repeats: int) -> float:
    """doctor's timing of (a @ b) @ a for a 256x64 a in `dtype` (the shape of lm-fast's FFN matrices), in ms."""
    from minitf.doctor import matmul_pair_seconds
    return 1000 * matmul_pair_seconds(dtype, repeats)


def child(rounds: int, steps: int, threads: int) -> dict:
    """Time the three optimizers in this process (its environment decides the CPU's bf16)."""
    import copy

    import torch

    sys.path.insert(0, str(ROOT / "bench"))
    import minitf
    from lm_fast import CONTEXT, FAST
    from lm import TEXT
    from minitf.core.muon import Muon, cpu_has_fast_bf16
    from minitf.core.train import Combined, make_batches, make_lm_optimizer, train_step

    torch.set_num_threads(threads)
    text = minitf.read_text(TEXT, CONTEXT)
    torch.manual_seed(0)
    base = minitf.Transformer(minitf.Config(max_len=CONTEXT, **FAST["config"]))
    tr, opt = FAST["train"], FAST["opt"]
    runs = {}
    for name in ("adamw", "muon (minitf)", "muon (torch, bf16)"):
        model = copy.deepcopy(base)
        kind = "adamw" if name == "adamw" else "muon"
        o = make_lm_optimizer(model, 6e-3 if kind == "adamw" else tr["lr"], kind=kind,
                              embed_lr=opt["embed_lr"], muon_lr=opt["muon_lr"] if kind == "muon" else None)
        if name == "muon (torch, bf16)":
            o.optimizers[0].dtype = torch.bfloat16  # torch.optim.Muon's arithmetic, bit for bit
        batches = make_batches(text.train, tr["batch_size"], torch.Generator().manual_seed(0))
        runs[name] = (model, o, batches)
    for model, o, batches in runs.values():  # warm up
        for _ in range(3):
            train_step(model, o, *batches.next())
    times = {name: [] for name in runs}
    for _ in range(rounds):
        for name, (model, o, batches) in runs.items():
            t = time.perf_counter()
            for _ in range(steps):
                train_step(model, o, *batches.next())
            times[name].append(1000 * (time.perf_counter() - t) / steps)
    ratios = {name: statistics.median(t / a for t, a in zip(times[name], times["adamw"])) for name in times}
    muon = runs["muon (minitf)"][1].optimizers[0]
    assert isinstance(runs["muon (minitf)"][1], Combined) and isinstance(muon, Muon)
    return {"cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "fast_bf16": cpu_has_fast_bf16(),
            "minitf_muon_dtype": "bfloat16" if cpu_has_fast_bf16() else "float32",
            "matmul_pair_ms": {"float32": matmul_pair_ms(torch.float32, 200),
                               "bfloat16": matmul_pair_ms(torch.bfloat16, 200)},
            "ms_per_step": {n: statistics.median(t) for n, t in times.items()},
            "ratio_to_adamw": ratios, "rounds": rounds, "steps_per_round": steps, "threads": threads}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="2 rounds of 3 steps: a smoke run")
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--steps", type=int, default=20, help="steps per optimizer per round")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "muon_step.json")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.quick:
        args.rounds, args.steps = 2, 3
    if args.child:
        print(json.dumps(child(args.rounds, args.steps, args.threads)))
        return 0
    sys.path.insert(0, str(ROOT / "bench"))
    from reporting import cpu_model  # noqa: E402 (the report's CPU name)
    result = {"cpu": cpu_model(), "loadavg_before": [round(x, 2) for x in os.getloadavg()], "settings": {}}
    for setting, env in SETTINGS.items():
        cmd = [sys.executable, __file__, "--child", "--rounds", str(args.rounds), "--steps",
               str(args.steps), "--threads", str(args.threads)]
        proc = subprocess.run(cmd, env={**os.environ, **env}, cwd=ROOT, capture_output=True, text=True)
        if proc.returncode:
            sys.stderr.write(proc.stderr)
            return proc.returncode
        result["settings"][setting] = {"env": env, **json.loads(proc.stdout.strip().splitlines()[-1])}
    result["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(table(result))
    return 0


def table(result: dict) -> str:
    lines = [f"lm-fast training steps on {result['cpu']}, {next(iter(result['settings'].values()))['threads']}"
             f" thread(s), load average {result['loadavg_before'][0]}:", "",
             "| setting | bf16 pair / float32 pair | Muon precision | AdamW ms/step | minitf Muon / AdamW "
             "| torch Muon (bf16) / AdamW |", "|---|---|---|---|---|---|"]
    for setting, r in result["settings"].items():
        mm, ratio = r["matmul_pair_ms"], r["ratio_to_adamw"]
        lines.append(f"| {setting} ({r['cpu_capability']}) | {mm['bfloat16'] / mm['float32']:.2f}x "
                     f"| {r['minitf_muon_dtype']} | {r['ms_per_step']['adamw']:.1f} "
                     f"| {ratio['muon (minitf)']:.2f}x | {ratio['muon (torch, bf16)']:.2f}x |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
