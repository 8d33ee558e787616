"""Bytes or BPE? The language model of `--recipe lm-fast` on bytes and on BPE tokens, compared in
bits per byte of tiny Shakespeare's last 10 %, at equal training time and at equal FLOPs.

    python bench/bpe.py                 # probe, then every run (resumable: bench/store.py)
    python bench/bpe.py --quick         # a smoke run: short probes, a few steps, one seed, to /tmp
    python bench/bpe.py --report-only   # re-write bpe.md from the stored bpe.json

Three parts, all stored in minitf/experiments/stored/bpe.json (and bpe.md):

1. The tokenizer's speed: minitf's BPE (incremental pair counts) trained to 1,024 tokens on the
   training split, with and without GPT-2's pre-tokenizer; the plain loop (every pair recounted
   after every merge, as the notebook's exercise writes it) timed on a slice and projected.
2. The probe: each arm's seconds per training step, short runs interleaved round by round: the
   CPU seconds of one thread (on a 2-core machine shared with other work, the wall time of a
   2-thread run measures the others' load more than ours: see `probe`), and
   its FLOPs per step (minitf.core.flops). The byte-level arm trains lm-fast's 340 steps; a BPE arm
   gets the steps that take the same CPU time (its measured seconds per step) and, second, the same
   FLOPs. Each run's own training CPU seconds are stored, to check the budget held.
3. The runs: every arm and budget, 3 seeds, trained with one thread (the steps were fixed by the
   probe, so the result does not depend on the load), scored by minitf.evaluate_text: the loss of
   every target token of tiled 64-token windows, divided by the bytes those tokens stand for.

Every arm keeps lm-fast's layout, context (64 tokens) and settings, tuned for bytes, not for BPE.
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(ROOT))

import minitf  # noqa: E402
from minitf.core.bpe import train_bpe  # noqa: E402
from minitf.core.flops import flops_per_token  # noqa: E402
from minitf.core.text import evaluate_text, read_text  # noqa: E402
from minitf.core.train import make_lm_optimizer  # noqa: E402
from store import add_study_arguments, open_study  # noqa: E402

TEXT = ROOT / "data" / "text" / "tinyshakespeare.txt"
CONTEXT = 64           # tokens per window, every arm (as lm-fast)
BYTE_STEPS = 340       # lm-fast's steps: the byte-level arm's budget
PATTERN = "gpt2"
ARMS = {"bytes": 256, "bpe-512": 512, "bpe-1024": 1024, "bpe-2048": 2048}
LM_FAST = dict(config=dict(d_model=64, n_heads=4, n_layers=2, d_ff=256, norm_position="pre",
                           dropout=0.0, qk_norm=True),
               train=dict(batch_size=24, lr=1.5e-2, warmup=20, schedule="wsd", cooldown=0.4),
               opt=dict(kind="muon", muon_lr=0.02, embed_lr=3.0))


def cpu_name() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def instruction_set() -> str:
    flags = ""
    try:
        flags = next(line for line in open("/proc/cpuinfo") if line.startswith("flags"))
    except (OSError, StopIteration):
        pass
    return ", ".join(f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f" {f}" in flags) or "?"


# --- 1. the tokenizer's speed ---------------------------------------------------------------------

def plain_merges(data: bytes, n_merges: int) -> list:
    """The plain loop: recount every pair of the whole sequence, merge the top one everywhere."""
    ids, merges = list(data), []
    for n in range(n_merges):
        counts = {}
        for pair in zip(ids, ids[1:]):
            counts[pair] = counts.get(pair, 0) + 1
        pair = min(counts, key=lambda p: (-counts[p], p))
        merges.append(pair)
        out, i = [], 0
        while i < len(ids):
            if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
                out.append(256 + n)
                i += 2
            else:
                out.append(ids[i])
                i += 1
        ids = out
    return merges


def tokenizer_speed(train: bytes, quick: bool) -> dict:
    """Seconds to train 1,024 tokens on the training split; the plain loop on a slice, projected."""
    out = {}
    gpt2 = minitf.core.bpe.gpt2_pattern  # built once (about a second), timed apart
    t = time.perf_counter()
    gpt2()
    out["gpt2_pattern_build_s"] = time.perf_counter() - t
    data = train[:100_000] if quick else train
    for pattern in ("gpt2", "none"):
        times, cpu = [], []
        for _ in range(1 if quick else 3):  # the least disturbed of 3: the machine is shared
            t, c = time.perf_counter(), time.process_time()
            tok = train_bpe(data, 1024, pattern)
            times.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
        out[f"fast_{pattern}_s"], out[f"fast_{pattern}_all_s"] = min(times), times
        out[f"fast_{pattern}_cpu_s"] = min(cpu)
        out[f"fast_{pattern}_merges"] = len(tok.merges)
    length, merges = (20_000, 5) if quick else (100_000, 20)
    t, c = time.perf_counter(), time.process_time()
    plain_merges(train[:length], merges)
    slice_s, slice_cpu = time.perf_counter() - t, time.process_time() - c
    # each merge of the plain loop reads the whole sequence (which shrinks as merges go: taking its
    # starting length makes the projection an upper bound, within the ~2.5x the sequence shrinks)
    out.update(loadavg=round(os.getloadavg()[0], 2), plain_slice_bytes=length, plain_slice_merges=merges, plain_slice_s=slice_s,
               plain_projected_s=slice_s * (len(train) / length) * (768 / merges),
               plain_slice_cpu_s=slice_cpu, plain_projected_cpu_s=slice_cpu * (len(train) / length) * (768 / merges),
               train_bytes=len(train))
    return out


# --- 2. the probe ----------------------------------------------------------------------------------

def build(vocab: int, seed: int, steps: int):
    cfg = minitf.Config(vocab_size=vocab, max_len=CONTEXT, **LM_FAST["config"])
    torch.manual_seed(seed)
    model = minitf.Transformer(cfg)
    opt = make_lm_optimizer(model, LM_FAST["train"]["lr"], **LM_FAST["opt"])
    return model, opt


def texts() -> dict:
    """Each arm's text: the bytes, or the training split's BPE (trained on the first 90 % only)."""
    raw = TEXT.read_bytes()
    train = raw[:round(0.9 * len(raw))]
    out = {}
    for name, vocab in ARMS.items():
        tok = None if vocab == 256 else train_bpe(train, vocab, PATTERN)
        out[name] = read_text(TEXT, CONTEXT, tokenizer=tok)
    return out


def probe(parts: dict, rounds: int, steps: int) -> dict:
    """CPU seconds per training step of each arm with one thread, `steps` steps after 3 unmeasured
    ones, arms interleaved in each round: the median over rounds, and all values. (Wall seconds of
    a 2-thread run were tried and dropped: with the machine's 2 cores shared, a --quick probe at
    load 9 gave 0.7-1.8 s a step against 32-53 ms of CPU, the others' load and not ours.)"""
    torch.set_num_threads(1)
    seen = {name: [] for name in ARMS}
    for _ in range(rounds):
        for name, vocab in ARMS.items():
            model, opt = build(vocab, 0, steps)
            gen = torch.Generator().manual_seed(0)
            for k in range(3 + steps):
                if k == 3:
                    t = time.process_time()
                ids, targets = minitf.core.text.random_windows(parts[name].train, 24, gen)
                minitf.core.train.train_step(model, opt, ids, targets)
            seen[name].append((time.process_time() - t) / steps)
    return {name: {"s_per_step": statistics.median(v), "all": v} for name, v in seen.items()}


# --- 3. the runs -----------------------------------------------------------------------------------

def arm_facts(name: str, part) -> dict:
    vocab = ARMS[name]
    model, _ = build(vocab, 0, 1)
    bytes_per_token = 1.0 if part.val.tokenizer is None else part.val.n_bytes / len(part.val)
    train_bpt = 1.0 if part.train.tokenizer is None else part.train.n_bytes / len(part.train)
    counts = torch.bincount(part.train.data.long(), minlength=vocab)
    return {"vocab": vocab, "params": minitf.count_parameters(model),
            "embed_head_params": model.embed.weight.numel() + sum(p.numel() for p in model.head.parameters()),
            "flops_per_token": flops_per_token(model, CONTEXT),
            "bytes_per_token_val": bytes_per_token, "bytes_per_token_train": train_bpt,
            "context_bytes": CONTEXT * bytes_per_token, "train_tokens": len(part.train),
            "unused_ids": int((counts == 0).sum()),  # rows of the embedding and head training never reads
            "median_count_of_used_id": int(counts[counts > 0].median())}


def run(name: str, part, steps: int, seed: int) -> dict:
    torch.set_num_threads(1)
    model, opt = build(ARMS[name], seed, steps)
    tr = {**LM_FAST["train"], "steps": steps}
    t = time.process_time()
    hist = minitf.train(model, part.train, None, seed=seed, progress=False, optimizer=opt, **tr)
    cpu = time.process_time() - t
    m = evaluate_text(model, part.val)
    return {"seed": seed, "steps": steps, "bits_per_byte": m["bits_per_byte"], "bytes_scored": m["bytes"],
            "nats_per_token": m.get("nats_per_token", m["loss"]), "train_wall_s": hist.seconds,
            "train_cpu_s": cpu, "final_train_loss": sum(hist.loss[-10:]) / len(hist.loss[-10:]),
            "loadavg": round(os.getloadavg()[0], 2)}


def budgets(doc: dict) -> dict:
    """{budget: {arm: steps}}: equal time (the probe's CPU seconds per step) and equal FLOPs."""
    probe_, facts = doc["probe"], doc["arms"]
    base_s, base_f = probe_["bytes"]["s_per_step"], facts["bytes"]["flops_per_token"]
    return {"time": {n: max(1, round(BYTE_STEPS * base_s / probe_[n]["s_per_step"])) for n in ARMS},
            "flops": {n: max(1, round(BYTE_STEPS * base_f / facts[n]["flops_per_token"])) for n in ARMS}}


# --- the report -----------------------------------------------------------------------------------

def report(doc: dict) -> str:
    sp = doc.get("tokenizer_speed", {})
    L = ["# Bytes or BPE? lm-fast on bytes and on BPE tokens, in bits per byte", "",
         f"Run by `{doc.get('command', 'python bench/bpe.py')}`, finished {doc.get('date', '?')}, on "
         f"{doc.get('cpu', '?')} ({doc.get('isa', '?')}), 2 cores shared with other work (load "
         f"{doc.get('load_range', '?')}); equal time is equal CPU seconds of one thread, as the probe "
         "measured them. Every arm: lm-fast's layout and settings (2 layers, d_model 64, "
         "Muon, WSD), windows of 64 tokens, batch 24; BPE trained on the first 90 % with GPT-2's "
         "pre-tokenizer. Scored on the last 10 % in bits per byte of the original text "
         "(minitf.evaluate_text). Medians over 3 seeds (min–max).", ""]
    if sp:
        L += ["## The tokenizer's speed", "",
              f"Wall seconds (the least of 3) and CPU seconds, at load {sp.get('loadavg', '?')}:", "",
              f"- minitf's BPE, 1,024 tokens on the {sp['train_bytes']:,}-byte training split: "
              f"{sp['fast_gpt2_s']:.2f} s ({sp.get('fast_gpt2_cpu_s', float('nan')):.2f} s CPU) with GPT-2's "
              f"pre-tokenizer (+{sp['gpt2_pattern_build_s']:.2f} s to build the pattern once), "
              f"{sp['fast_none_s']:.2f} s ({sp.get('fast_none_cpu_s', float('nan')):.2f} s CPU) without;",
              f"- the plain loop: {sp['plain_slice_merges']} merges on {sp['plain_slice_bytes']:,} bytes took "
              f"{sp['plain_slice_s']:.2f} s ({sp.get('plain_slice_cpu_s', float('nan')):.2f} s CPU), so 768 merges "
              f"on the training split would take about {sp.get('plain_projected_cpu_s', sp['plain_projected_s']):,.0f} s "
              f"of CPU ({sp.get('plain_projected_cpu_s', 0) / sp.get('fast_none_cpu_s', 1):,.0f}x the fast loop "
              "without a pre-tokenizer; an upper bound, as each merge shortens the sequence the plain loop "
              "re-reads, by about 2.5x over all 768).", ""]
    if "arms" in doc:
        L += ["## The arms", "", "| arm | vocab | parameters | embedding + head | bytes/token (val) | "
              "context in bytes | FLOPs/token | CPU s/step (1 thread) | training tokens | ids unused in training | "
              "median count of a used id |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for n, f in doc["arms"].items():
            s = doc.get("probe", {}).get(n, {}).get("s_per_step")
            L.append(f"| {n} | {f['vocab']:,} | {f['params']:,} | {f['embed_head_params']:,} | "
                     f"{f['bytes_per_token_val']:.2f} | {f['context_bytes']:.0f} | {f['flops_per_token']:,} | "
                     f"{'' if s is None else f'{1000 * s:.1f} ms'} | {f['train_tokens']:,} | {f['unused_ids']} | "
                     f"{f['median_count_of_used_id']:,} |")
    if doc.get("runs"):
        L += ["", "## Bits per byte", "", "| budget | arm | steps | bytes trained on | training CPU s | bits/byte | seeds |",
              "|---|---|---:|---:|---:|---|---|"]
        for budget in ("time", "flops"):
            for n in ARMS:
                runs = [r for k, r in doc["runs"].items() if k.startswith(f"{budget}/{n}/")]
                if not runs:
                    continue
                b = [r["bits_per_byte"] for r in runs]
                steps = runs[0]["steps"]
                trained = steps * 24 * CONTEXT * doc["arms"][n]["bytes_per_token_train"]
                cpu = statistics.median(r["train_cpu_s"] for r in runs)
                L.append(f"| equal {budget} | {n} | {steps} | {trained / 1e6:.2f} M | {cpu:.1f} | {statistics.median(b):.4f} "
                         f"({min(b):.4f}–{max(b):.4f}) | {', '.join(f'{x:.4f}' for x in b)} |")
    return "\n".join(L)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_study_arguments(p, "bpe", quick_help="a smoke run: short probes, a few steps, one seed, to /tmp")
    p.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2])
    p.add_argument("--rounds", type=int, default=5, help="probe rounds")
    p.add_argument("--reprobe", action="store_true", help="probe again (changes the steps: re-runs)")
    p.add_argument("--respeed", action="store_true", help="time the tokenizer again")
    p.add_argument("--report-only", action="store_true")
    args = p.parse_args(argv)
    store = open_study("bpe", args)
    doc = store.doc
    if args.report_only:
        store.save(report(doc))
        return 0
    doc.update(cpu=cpu_name(), isa=instruction_set())
    raw = TEXT.read_bytes()
    if "tokenizer_speed" not in doc or args.quick or args.respeed:
        doc["tokenizer_speed"] = tokenizer_speed(raw[:round(0.9 * len(raw))], args.quick)
        store.save(report(doc))
    print(doc["tokenizer_speed"], flush=True)
    parts = texts()
    doc["arms"] = {n: arm_facts(n, parts[n]) for n in ARMS}
    if "probe" not in doc or args.reprobe or args.quick:
        doc["probe"] = probe(parts, 1 if args.quick else args.rounds, 3 if args.quick else 20)
        doc["probe_loadavg"] = round(os.getloadavg()[0], 2)
        store.save(report(doc))
    print({n: round(1000 * v["s_per_step"], 1) for n, v in doc["probe"].items()}, flush=True)
    plan = budgets(doc)
    if args.quick:
        plan = {b: {n: 3 for n in ARMS} for b in plan}
    doc["budgets"] = plan
    runs = doc.setdefault("runs", {})
    seeds = args.seeds[:1] if args.quick else args.seeds
    for seed in seeds:  # round by round
        for budget, steps_of in plan.items():
            for name, steps in steps_of.items():
                if budget == "flops" and name == "bytes":
                    continue  # the same run as equal time: the byte arm sets both budgets
                spec = {"arm": name, "vocab": ARMS[name], "pattern": PATTERN, "lm_fast": LM_FAST,
                        "context": CONTEXT, "steps": steps, "seed": seed, "quick": args.quick}
                key = f"{budget}/{name}/seed{seed}"
                r, new = store.run(runs, spec, lambda: run(name, parts[name], steps, seed), key=key,
                                   markdown=lambda: report(doc))
                if new:
                    print(f"{key}: {r['bits_per_byte']:.4f} bits/byte, {steps} steps, "
                          f"{r['train_cpu_s']:.1f} s CPU (load {r['loadavg']})", flush=True)
    for seed in seeds:  # the byte arm's runs stand in both budgets
        runs[f"flops/bytes/seed{seed}"] = runs[f"time/bytes/seed{seed}"]
    loads = [r["loadavg"] for r in runs.values()]
    doc["load_range"] = f"{min(loads):.1f}–{max(loads):.1f}"
    doc["date"] = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    doc["command"] = " ".join(["python bench/bpe.py", *(argv if argv is not None else sys.argv[1:])])
    store.save(report(doc))
    print(report(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
