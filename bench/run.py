"""`make bench`: how fast minitf and the course are, measured side by side, written to bench/REPORT.md.

    python bench/run.py                       # everything: ~40 min on 2 cores, 20 of them Origami's
    python bench/run.py --origami collect     # the same without re-running the Origami experiment
    python bench/run.py --quick               # fewer rounds and repeats: a smoke run
    python bench/run.py --only steps solve    # a subset; the report is rebuilt from all results
    python bench/run.py --report-only         # re-render REPORT.md from bench/results/*.json

Sections (each writes bench/results/bench_<name>.json; REPORT.md and bench/results/bench.png are
rendered from whatever results exist, each with its own date):
  steps      training-step time (forward + backward + clip + AdamW) on the full batch of the 450
             data/train.txt pairs: minitf vs the seed's formulation vs a compact expert one (and the
             fast-path prototype), interleaved round by round, ratios taken per round
  solve      the documented recipe (RECIPE.md, else a placeholder), run through minitf.cli.main in
             a child process: training time until the first evaluation with >= 99 % exact match on
             the CLI's fresh held-out pairs (evaluation time counted apart), and the child's peak RSS
  notebooks  wall time of `pytest --nbval notebooks` and of each notebook in it (JUnit XML)
  origami    runs bench/origami_growth.py and bench/origami_recipe_growth.py, collects bench/results/origami*.json

A benchmark, not a test: nothing here fails on a slow machine; goals are reported as met or missed.
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import datetime as dt
import importlib
import json
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
sys.path.insert(0, str(BENCH))

PLACEHOLDER_RECIPE = ("python -m minitf train --d-model 32 --n-heads 4 --norm-position pre "
                      "--steps 3000 --lr 6e-3 --out model.pt")
SOLVED = 0.99          # exact match that counts as solved
SOLVE_GOAL_S = 60.0
SUITE_GOAL_S = 60.0
STEP_IMPLS = ("seed-style", "expert", "minitf", "minitf+fast(exact)", "minitf+fast")


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def stats(values) -> dict:
    v = sorted(values)
    return {"min": v[0], "median": statistics.median(v), "max": v[-1], "n": len(v)}


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def save_result(name: str, data: dict, results: Path) -> None:
    results.mkdir(parents=True, exist_ok=True)
    (results / f"bench_{name}.json").write_text(json.dumps(data, indent=1) + "\n")


# --- 1. training-step time ----------------------------------------------------------------------

def step_models(config, seed: int = 0) -> dict:
    """The implementations to time, all holding the same initial weights."""
    import torch
    from minitf import Transformer
    from reference_models import ExpertTransformer, SeedStyleTransformer, minitf_fast_path

    torch.manual_seed(seed)
    base = Transformer(config)
    return {"seed-style": SeedStyleTransformer.from_minitf(base, seed_quirks=True),
            "expert": ExpertTransformer.from_minitf(base),
            "minitf": copy.deepcopy(base),
            "minitf+fast(exact)": minitf_fast_path(copy.deepcopy(base), fused_norm=False, rope="contiguous"),
            "minitf+fast": minitf_fast_path(copy.deepcopy(base), fused_norm=True, rope="complex")}


def bench_steps(args) -> dict:
    import torch
    import minitf
    from minitf.train import make_optimizer, train_step

    pairs = minitf.read_pairs(ROOT / "data/train.txt")
    ids, targets = minitf.make_batch(pairs)  # the full batch: (450, T)
    sizes = {"d_model 4 (seed)": minitf.Config(),
             "d_model 64": minitf.Config(d_model=64, n_heads=4, d_ff=128)}
    rounds, per_round = (3, 2) if args.quick else (args.rounds, 3)
    out = {"date": now(), "loadavg_start": loadavg(), "batch": list(ids.shape),
           "rounds": rounds, "steps_per_round": per_round, "warmup_steps": 3, "runs": []}
    for threads in args.threads:
        torch.set_num_threads(threads)
        for label, config in sizes.items():
            models = step_models(config)
            opts = {k: make_optimizer(m, 1e-3) for k, m in models.items()}

            def step(k):
                train_step(models[k], opts[k], ids, targets)

            for k, m in models.items():
                m.train()
                for _ in range(3):
                    step(k)
            times = {k: [] for k in models}
            order = list(models)
            for r in range(rounds):
                for k in order[r % len(order):] + order[:r % len(order)]:  # rotate who goes first
                    t0 = time.perf_counter()
                    for _ in range(per_round):
                        step(k)
                    times[k].append((time.perf_counter() - t0) / per_round * 1e3)
            ratios = {f"minitf / {k}": [a / b for a, b in zip(times["minitf"], times[k])]
                      for k in models if k != "minitf"}
            ratios["minitf+fast / expert"] = [a / b for a, b in zip(times["minitf+fast"], times["expert"])]
            params = {k: sum(p.numel() for p in m.parameters()) for k, m in models.items()}
            run = {"size": label, "config": config.to_dict(), "threads": threads, "params": params,
                   "ms_per_step": times, "ratios_per_round": ratios}
            out["runs"].append(run)
            print(f"  steps {label}, {threads} thread(s): " + ", ".join(
                f"{k} {statistics.median(v):.1f} ms" for k, v in times.items()), flush=True)
    out["profiles"] = [profile_steps(config, ids, targets) for config in sizes.values()]
    out["loadavg_end"] = loadavg()
    return out


def profile_steps(config, ids, targets, steps: int = 3) -> dict:
    """torch.profiler self-CPU time by op and input shape, minitf vs expert, 1 thread."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    import minitf
    from minitf.train import make_optimizer, train_step

    torch.set_num_threads(1)
    models = step_models(config)
    out = {"config": config.to_dict(), "steps": steps, "threads": 1}
    for k in ("minitf", "expert", "minitf+fast"):
        model, opt = models[k].train(), make_optimizer(models[k], 1e-3)

        def step():
            train_step(model, opt, ids, targets)

        step()
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
            for _ in range(steps):
                step()
        rows = sorted(prof.key_averages(group_by_input_shape=True), key=lambda e: -e.self_cpu_time_total)
        total = sum(e.self_cpu_time_total for e in prof.key_averages())
        out[k] = {"total_ms_per_step": total / 1e3 / steps,
                  "top": [{"op": e.key, "shapes": str(e.input_shapes)[:80], "calls_per_step": e.count // steps,
                           "self_ms_per_step": e.self_cpu_time_total / 1e3 / steps} for e in rows[:12]]}
    return out


# --- 2. time to solve and peak memory (child processes) -----------------------------------------

def read_recipe() -> tuple[str, str]:
    """The documented training command from RECIPE.md, or the placeholder."""
    path = ROOT / "RECIPE.md"
    if path.exists():
        text = re.sub(r"\\\n\s*", " ", path.read_text())  # join backslash continuations
        m = re.search(r"python -m minitf train[^\n`]*", text)
        if m:
            return m.group(0).strip(), "RECIPE.md"
    return PLACEHOLDER_RECIPE, "placeholder (RECIPE.md had no `python -m minitf train` command)"


def solve_child(argv: list[str]) -> None:
    """Run the recipe through `minitf.cli.main`, exactly as `python -m minitf train …` does, with
    evaluation every --eval-every steps on the CLI's own fresh held-out pairs, timing each one."""
    import resource
    import tempfile
    import torch
    import minitf
    from minitf import cli

    opts = argparse.ArgumentParser()
    opts.add_argument("--eval-every", type=int, required=True)
    opts.add_argument("--json", required=True)
    opts.add_argument("--stop-when-solved", action="store_true")
    opts.add_argument("--threads", type=int, default=0, help="0: the recipe's (the CLI's) setting")
    opts.add_argument("--time-limit", type=float, default=0, help="stop at the first evaluation past it")
    opts.add_argument("recipe")
    ours = opts.parse_args(argv)
    words = shlex.split(ours.recipe)
    tmp = tempfile.mkdtemp(prefix="minitf-bench-")
    cli_argv = words[words.index("train"):] + [
        "--eval-every", str(ours.eval_every), "--no-progress", "--force", "--out", f"{tmp}/model.pt"]
    if ours.threads:
        cli_argv += ["--threads", str(ours.threads)]
    train_mod = importlib.import_module("minitf.train")
    original_evaluate, original_train = train_mod.evaluate, cli.train
    evals, info = [], {}
    clock = {"eval": 0.0, "eval_cpu": 0.0}

    class Stop(Exception):
        pass

    def timed_train(model, train_pairs, val_pairs, **kw):
        info.update(threads=torch.get_num_threads(), params=minitf.count_parameters(model),
                    train_pairs=len(train_pairs), held_out_pairs=len(val_pairs), steps=kw["steps"])
        clock["start"], clock["start_cpu"] = time.perf_counter(), time.process_time()
        return original_train(model, train_pairs, val_pairs, **kw)

    def timed_evaluate(model, pairs, *a, **kw):
        t0, c0 = time.perf_counter(), time.process_time()
        result = original_evaluate(model, pairs, *a, **kw)
        dt_eval, dc_eval = time.perf_counter() - t0, time.process_time() - c0
        evals.append({"step": min(len(evals) * ours.eval_every + ours.eval_every, info["steps"]),
                      "train_seconds": t0 - clock["start"] - clock["eval"], "eval_seconds": dt_eval,
                      "train_cpu_seconds": c0 - clock["start_cpu"] - clock["eval_cpu"], **result})
        clock["eval"] += dt_eval
        clock["eval_cpu"] += dc_eval
        print(f"    step {evals[-1]['step']}: exact {result['exact_match']:.3f} after "
              f"{evals[-1]['train_seconds']:.1f} s", file=sys.stderr, flush=True)
        if ours.stop_when_solved and result["exact_match"] >= SOLVED:
            raise Stop("solved")
        if ours.time_limit and time.perf_counter() - clock["start"] > ours.time_limit:
            raise Stop("time limit")
        return result

    train_mod.evaluate, cli.train = timed_evaluate, timed_train
    stopped = "all steps done"
    try:
        with contextlib.redirect_stdout(sys.stderr):
            code = cli.main(cli_argv)
        if code:
            raise SystemExit(code)
    except Stop as why:
        stopped = str(why)
    wall = time.perf_counter() - clock["start"]
    train_cpu = time.process_time() - clock["start_cpu"] - clock["eval_cpu"]
    shutil.rmtree(tmp, ignore_errors=True)
    solved = next((e for e in evals if e["exact_match"] >= SOLVED), None)
    Path(ours.json).write_text(json.dumps({
        **info, "cli_argv": cli_argv[:-1] + ["<tmp>/model.pt"], "evals": evals, "stopped": stopped,
        "wall_seconds": wall, "eval_seconds": clock["eval"], "train_seconds": wall - clock["eval"],
        "train_cpu_seconds": train_cpu, "last_step": evals[-1]["step"],
        "final_exact_match": evals[-1]["exact_match"],
        "solved_step": solved and solved["step"], "time_to_solve": solved and solved["train_seconds"],
        "cpu_time_to_solve": solved and solved["train_cpu_seconds"],
        "peak_rss_mb": peak_rss_mb(),
        "maxrss_self_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def peak_rss_mb() -> float:
    """This process's own peak resident set (VmHWM). Unlike ru_maxrss, which Linux carries over
    from the parent through fork and exec, VmHWM starts afresh with the new program."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def baseline_child(argv: list[str]) -> None:
    import torch  # noqa: F401  the memory every run pays before training starts
    import minitf  # noqa: F401
    Path(argv[0]).write_text(json.dumps({"peak_rss_mb": peak_rss_mb()}))


def run_child(argv: list[str]) -> tuple[int, float, float]:
    """Run this script as a child; return (exit code, wall seconds, peak RSS in MB from wait4)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, str(Path(__file__)), *argv], cwd=ROOT)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, time.perf_counter() - t0, usage.ru_maxrss / 1024


def bench_solve(args, results: Path) -> dict:
    recipe, source = (args.recipe, "--recipe") if args.recipe else read_recipe()
    repeats = [1] + [0] * (len(args.solve_threads) - 1) if args.quick else \
        (args.solve_repeats + args.solve_repeats[-1:] * len(args.solve_threads))[:len(args.solve_threads)]
    out = {"date": now(), "loadavg_start": loadavg(), "recipe": recipe, "recipe_source": source,
           "stop_when_solved": args.stop_when_solved, "time_limit_s": args.solve_time_limit,
           "criterion": f"first evaluation with exact match >= {SOLVED:.0%} on the CLI's fresh held-out "
                        "pairs (generated, no input seen in training)",
           "eval_every": args.eval_every, "memory_method": "the child's own peak resident set, VmHWM from /proc/self/status at its end "
                            "(ru_maxrss from os.wait4 is kept in the JSON: Linux carries it over from the "
                            "parent, so it can show the runner's memory instead)",
           "runs": []}
    tmp = results / ".baseline.json"
    run_child(["_baseline-child", str(tmp)])
    out["baseline_peak_rss_mb"] = json.loads(tmp.read_text())["peak_rss_mb"]
    tmp.unlink()
    for r in range(max(repeats)):
      for threads, n in zip(args.solve_threads, repeats):  # interleaved: load hits all settings alike
        if r >= n:
            continue
        tmp = results / f".solve-{r}.json"
        code, wall, rss = run_child(["_solve-child", "--eval-every", str(args.eval_every),
                                     "--json", str(tmp), "--threads", str(threads),
                                     "--time-limit", str(args.solve_time_limit), recipe]
                                    + (["--stop-when-solved"] if args.stop_when_solved else []))
        if code != 0:
            out["runs"].append({"error": f"child exited with {code}", "setting": threads})
            continue
        run = json.loads(tmp.read_text())
        tmp.unlink()
        run.update(process_wall_seconds=wall, maxrss_mb=rss, setting=threads)
        out["runs"].append(run)
        print(f"  solve run {r + 1}/{n}, threads {threads or 'as the recipe'}: solved at step {run['solved_step']} after "
              f"{run['time_to_solve'] or float('nan'):.1f} s of training "
              f"({run['cpu_time_to_solve'] or float('nan'):.1f} s CPU); run "
              f"{run['wall_seconds']:.1f} s; peak RSS {run['peak_rss_mb']:.0f} MB", flush=True)
    out["loadavg_end"] = loadavg()
    return out


# --- 3. notebooks -------------------------------------------------------------------------------

def bench_notebooks(args, results: Path) -> dict:
    notebooks = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
    repeats = 1 if args.quick else args.nb_repeats
    out = {"date": now(), "loadavg_start": loadavg(), "notebooks": notebooks, "runs": [],
           "command": ".venv/bin/python -m pytest --nbval notebooks -q --junitxml=<file>"}
    for r in range(repeats):
        xml = results / f".nbval-{r}.xml"
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "pytest", "--nbval", "notebooks", "-q",
                               f"--junitxml={xml}", "-p", "no:randomly"],
                              cwd=ROOT, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        per_nb, failed, cells = {}, {}, []
        for case in ET.parse(xml).getroot().iter("testcase"):
            name = Path(case.get("file") or case.get("classname", "").replace(".", "/")).name
            name = next((n for n in notebooks if n[:-6] in (case.get("classname") or "") or n == name), name)
            per_nb[name] = per_nb.get(name, 0.0) + float(case.get("time", 0))
            cells.append((float(case.get("time", 0)), f"{name} {case.get('name')}"))
            if case.find("failure") is not None or case.find("error") is not None:
                failed[name] = failed.get(name, 0) + 1
        xml.unlink()
        tail = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
        out["runs"].append({"wall_seconds": wall, "exit_code": proc.returncode, "summary": tail,
                            "per_notebook_seconds": per_nb, "failed_cells": failed,
                            "slowest_cells": [[c, t] for t, c in sorted(cells, reverse=True)[:8]]})
        print(f"  notebooks run {r + 1}/{repeats}: {wall:.1f} s, {tail}", flush=True)
    out["loadavg_end"] = loadavg()
    return out


# --- 4. origami ---------------------------------------------------------------------------------

ORIGAMI_SCRIPTS = ("origami_growth.py", "origami_recipe_growth.py")


def bench_origami(args, results: Path) -> dict:
    """Run the Origami experiments (each writes bench/results/origami*.json) and collect them."""
    out = {"date": now(), "mode": args.origami, "runs": []}
    for name in ORIGAMI_SCRIPTS:
        script = BENCH / name
        if not script.exists() or args.origami != "run":
            continue
        cmd = [sys.executable, str(script.relative_to(ROOT))] + (["--quick"] if args.quick else [])
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        run = {"command": " ".join(["python"] + cmd[1:]), "exit_code": proc.returncode,
               "wall_seconds": time.perf_counter() - t0,
               "stderr_tail": proc.stderr.strip().splitlines()[-5:]}
        out["runs"].append(run)
        print(f"  {name}: exit {proc.returncode} after {run['wall_seconds']:.1f} s", flush=True)
    out["results"] = {p.name: json.loads(p.read_text()) for p in sorted(results.glob("origami*.json"))}
    out["summaries"] = {p.name: p.read_text() for p in sorted(results.glob("origami*.md"))}
    return out


# --- the report ---------------------------------------------------------------------------------

def machine() -> dict:
    import torch
    cpu = next((l.split(":", 1)[1].strip() for l in Path("/proc/cpuinfo").read_text().splitlines()
                if l.startswith("model name")), platform.processor())
    mem = next((l.split(":", 1)[1].strip() for l in Path("/proc/meminfo").read_text().splitlines()
                if l.startswith("MemTotal")), "?")
    git = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return {"cpu": cpu, "cores": os.cpu_count(), "memory": mem, "os": platform.platform(),
            "python": platform.python_version(), "torch": torch.__version__,
            "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "git": git.stdout.strip() + (" (with uncommitted changes)" if subprocess.run(
                ["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True).stdout.strip() else "")}


def fmt(s: dict, digits: int = 1, unit: str = "") -> str:
    return f"{s['median']:.{digits}f}{unit} ({s['min']:.{digits}f}–{s['max']:.{digits}f})"


def render(results: Path, out_md: Path, argv: list[str]) -> None:
    load = lambda n: json.loads((results / f"bench_{n}.json").read_text()) \
        if (results / f"bench_{n}.json").exists() else None
    steps, solve, nbs, origami, env = (load(n) for n in ("steps", "solve", "notebooks", "origami", "machine"))
    L = ["# minitf benchmark report", "",
         "Written by `bench/run.py` (`make bench`); each section says when it ran. Figures are "
         "**median (min–max)** over the repeats stated. The machine was shared with other jobs: the "
         "load average (1, 5, 15 min) is given per section, and ratios are taken *within* each round "
         "so that load hits every implementation alike.", ""]
    if env:
        L += ["## Machine", "", "| | |", "|---|---|"]
        L += [f"| {k} | {v} |" for k, v in env.items() if k not in ("date", "command")]
        L += ["", "Each section below names the `bench/run.py` command that produced it (`make bench` "
              "runs them all; `--only` runs a subset and keeps the other sections' stored results).", ""]
    goals = []
    if steps:
        L += ["## 1. Training-step time", "", f"`{steps.get('run_command', 'python bench/run.py')}`", "",
              f"Run {steps['date']}, load average {steps['loadavg_start']} → {steps['loadavg_end']}. "
              f"One step = forward, masked cross-entropy, backward, gradient clipping, AdamW, on the "
              f"full batch of the 450 `data/train.txt` pairs (ids {tuple(steps['batch'])}), dropout on "
              f"(the seed's rule) for all implementations. {steps['rounds']} interleaved rounds of "
              f"{steps['steps_per_round']} steps each after {steps['warmup_steps']} warm-up steps; the "
              "first implementation of a round rotates.", "",
              "- **seed-style**: the seed's formulation, re-created in `bench/reference_models.py`: separate "
              "Q/K/V/O linears, RoPE angles rebuilt in every layer, masked-softmax attention, `ln1` applied "
              "twice per layer (its extra LayerNorm is part of what is timed).",
              "- **expert**: fused QKV, RoPE tables computed once (rotate-half layout), "
              "`F.scaled_dot_product_attention`, `nn.LayerNorm`.",
              "- **minitf**: `minitf.Transformer` as shipped.",
              "- **minitf+fast(exact)**: prototype: minitf with RoPE angles cached per length and q/k made "
              "contiguous before `apply_rope`. Bit-identical outputs (tested).",
              "- **minitf+fast**: prototype: as above plus LayerNorm via `F.layer_norm` and RoPE as a complex "
              "multiplication. Equal to minitf within 1e-5, with equal gradients (tested).", "",
              "`tests/test_bench.py` checks that seed-style (quirks off), expert and both prototypes compute "
              "minitf's logits from the same weights.", ""]
        for run in steps["runs"]:
            t = run["ms_per_step"]
            counts = set(run["params"].values())
            same = "the same in every implementation" if len(counts) == 1 else \
                ", ".join(f"{k} {v:,}" for k, v in run["params"].items())
            L += [f"**{run['size']}, {run['threads']} thread(s)** — {run['params']['minitf']:,} parameters "
                  f"({same})", "",
                  "| implementation | ms per step | minitf ÷ it (per round) |", "|---|---|---|"]
            for k in t:
                ratio = run["ratios_per_round"].get(f"minitf / {k}")
                L.append(f"| {k} | {fmt(stats(t[k]))} | {fmt(stats(ratio), 2) if ratio else '—'} |")
            r = stats(run["ratios_per_round"]["minitf / expert"])
            rf = stats(run["ratios_per_round"]["minitf+fast / expert"])
            L += ["", f"minitf+fast ÷ expert per round: {fmt(rf, 2)}.", ""]
            if run["threads"] == 1:
                goals.append((f"training step, {run['size']}: minitf at least as fast as expert",
                              r["median"] <= 1.0, f"minitf ÷ expert = {fmt(r, 2)}; with the fast path "
                              f"{fmt(rf, 2)}"))
        for prof in steps.get("profiles", []):
            L += [f"### Where the time goes (torch.profiler, d_model {prof['config']['d_model']}, 1 thread, "
                  f"self CPU time per step over {prof['steps']} steps)", ""]
            for k in ("minitf", "expert", "minitf+fast"):
                p = prof[k]
                L += [f"**{k}**: {p['total_ms_per_step']:.0f} ms of op self-time per step.", "",
                      "| op | input shapes | calls/step | ms/step |", "|---|---|---|---|"]
                L += [f"| `{r['op']}` | `{r['shapes']}` | {r['calls_per_step']} | {r['self_ms_per_step']:.1f} |"
                      for r in p["top"][:8]]
                L.append("")
    if solve:
        runs = [r for r in solve["runs"] if "error" not in r]
        L += ["## 2. Time to solve, and 5. peak memory", "", f"`{solve.get('run_command', 'python bench/run.py')}`", "",
              f"Run {solve['date']}, load average {solve['loadavg_start']} → {solve['loadavg_end']}. "
              f"Recipe ({solve['recipe_source']}):", "", f"    {solve['recipe']}", "",
              f"Each repeat runs the recipe in a fresh child process (`bench/run.py _solve-child`) through "
              f"`minitf.cli.main`, exactly as `python -m minitf train` runs it, with `--eval-every "
              f"{solve['eval_every']}` added. Criterion: {solve['criterion']}. *Time to solve* is training time up to that "
              "evaluation, with all evaluation time subtracted; evaluation time is listed apart. "
              f"Memory: {solve['memory_method']}; the baseline is a child that only imports torch and minitf. "
              + ("Runs end at their first solved evaluation" if solve.get("stop_when_solved") else
                 "Runs go through all the recipe's steps")
              + (f", or at the first evaluation after {solve['time_limit_s']:.0f} s of wall time"
                 if solve.get("time_limit_s") else "") + ".", ""]
        settings = sorted({r.get("setting", 0) for r in runs})
        groups = {t: [r for r in runs if r.get("setting", 0) == t] for t in settings}
        head = lambda t: (f"as the recipe says ({groups[t][0]['threads']} thread(s))" if t == 0
                          else f"with --threads {t}")
        cell = lambda vals, d=1: fmt(stats(vals), d) if vals else "—"
        rows = [
            ("repeats", lambda g: str(len(g))),
            ("model parameters", lambda g: f"{g[0]['params']:,}"),
            ("training pairs / held-out pairs", lambda g: f"{g[0]['train_pairs']:,} / {g[0]['held_out_pairs']}"),
            (f"step of the first evaluation with ≥ {SOLVED:.0%} exact match",
             lambda g: ", ".join(str(r["solved_step"]) for r in g)),
            ("**time to solve** (s of training, evaluation excluded)",
             lambda g: cell([r["time_to_solve"] for r in g if r["time_to_solve"] is not None])),
            ("CPU time to solve (s of training: user + system of all threads)",
             lambda g: cell([r["cpu_time_to_solve"] for r in g if r.get("cpu_time_to_solve") is not None])),
            ("training time of the run (s)",
             lambda g: cell([r["train_seconds"] for r in g])),
            ("training CPU time of the run (s)", lambda g: cell([r["train_cpu_seconds"] for r in g])),
            ("how each run ended (at step)",
             lambda g: ", ".join(f"{r.get('stopped', '?')} ({r['last_step']})" for r in g)),
            ("evaluation time in the run (s)", lambda g: cell([r["eval_seconds"] for r in g])),
            ("child process wall time (s, with start-up and data)",
             lambda g: cell([r["process_wall_seconds"] for r in g])),
            ("last held-out exact match", lambda g: cell([r["final_exact_match"] for r in g], 3)),
            ("**peak RSS** of the training child (MB, VmHWM)", lambda g: cell([r["peak_rss_mb"] for r in g], 0)),
        ]
        if runs:
            L += ["| figure | " + " | ".join(head(t) for t in settings) + " |",
                  "|---|" + "---|" * len(settings)]
            L += [f"| {name} | " + " | ".join(f(groups[t]) for t in settings) + " |" for name, f in rows]
            L += [f"| peak RSS of a child that only imports torch + minitf (MB, VmHWM) | "
                  f"{solve['baseline_peak_rss_mb']:.0f} |" + " |" * (len(settings) - 1), ""]
            for t in settings:
                g = groups[t]
                solved = [r["time_to_solve"] for r in g if r["time_to_solve"] is not None]
                if t == 0:  # the goal is about the recipe as documented; other settings are comparisons
                    goals.append((f"time to solve ≤ 60 s (the recipe, {groups[t][0]['threads']} thread(s))",
                                  len(solved) == len(g) and statistics.median(solved) <= SOLVE_GOAL_S,
                                  f"{fmt(stats(solved))} s, solved in {len(solved)} of {len(g)} runs"
                                  if solved else "not solved: " + ", ".join(
                                      f"{r['stopped']} at step {r['last_step']}" for r in g)))
                curve = g[0]["evals"]
                L += [f"Held-out exact match by step, first repeat, {head(t)}: " + ", ".join(
                    f"{e['step']}: {e['exact_match']:.2f}" for e in curve[:: max(1, len(curve) // 12)]), ""]
    if nbs:
        runs = nbs["runs"]
        L += ["## 3. Notebook suite", "", f"`{nbs.get('run_command', 'python bench/run.py')}`", "",
              f"Run {nbs['date']}, load average {nbs['loadavg_start']} → {nbs['loadavg_end']}. "
              f"Command: `{nbs['command']}`, {len(runs)} repeat(s). Per notebook: the sum of its cells' "
              "test times from the JUnit XML (kernel start included); the whole suite: wall time of the "
              "pytest process.", "",
              "| notebook | seconds | failed cells (last run) |", "|---|---|---|"]
        for n in nbs["notebooks"]:
            vals = [r["per_notebook_seconds"].get(n) for r in runs if n in r["per_notebook_seconds"]]
            L.append(f"| {n} | {fmt(stats(vals)) if vals else '—'} | {runs[-1]['failed_cells'].get(n, 0)} |")
        wall = stats([r["wall_seconds"] for r in runs])
        L += [f"| **whole `pytest --nbval notebooks`** | **{fmt(wall)}** | {runs[-1]['summary']} |", "",
              "Slowest cells of the last run (the first cell of a notebook includes its kernel start): "
              + ", ".join(f"{c} {t:.1f} s" for c, t in runs[-1].get("slowest_cells", [])) + ".", ""]
        goals.append((f"notebook suite ≤ 60 s ({len(nbs['notebooks'])} notebooks when measured)",
                      wall["median"] <= SUITE_GOAL_S, f"{fmt(wall)} s"))
    L += ["## 4. Origami: growth vs scratch", ""]
    if origami and origami["results"]:
        if origami.get("runs"):
            L += [f"`{run['command']}` ran from `bench/run.py` on {origami['date']}: exit "
                  f"{run['exit_code']}, {run['wall_seconds']:.0f} s wall time." for run in origami["runs"]]
            L.append("")
        else:
            L += [f"Collected on {origami['date']} from the stored results (`--origami collect`: the "
                  "experiment was not re-run by this benchmark run).", ""]
        for name, res in origami["results"].items():
            md = origami.get("summaries", {}).get(name[:-5] + ".md")
            L += [f"Result `bench/results/{name}`" + (", its summary as the experiment wrote it:" if md else ":"), ""]
            if md:
                L += [("##" + line) if line.startswith("#") else line for line in md.strip().splitlines()]
                L.append("")
            else:
                L += ["```json", json.dumps(res, indent=1)[:3000], "```", ""]
    else:
        L += ["Not measured: no bench/results/origami*.json when the benchmark last ran. "
              "Re-run with `python bench/run.py --only origami`.", ""]
    if goals:
        L[L.index("## Machine") if "## Machine" in L else 4:0] = [
            "## Goals", "", "| goal | met | measured |", "|---|---|---|",
            *[f"| {g} | {'yes' if ok else '**no**'} | {m} |" for g, ok, m in goals], ""]
    if (results / "bench.png").exists():
        L += ["## Plot", "", "![step times and time to solve](results/bench.png)", ""]
    notes = BENCH / "NOTES.md"
    if notes.exists():
        L += [notes.read_text().strip(), ""]
    out_md.write_text("\n".join(L) + "\n")


def plot(results: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    load = lambda n: json.loads((results / f"bench_{n}.json").read_text()) \
        if (results / f"bench_{n}.json").exists() else None
    steps, solve = load("steps"), load("solve")
    panels = [r for r in (steps or {}).get("runs", []) if r["threads"] == 1]
    n = len(panels) + (1 if solve and solve["runs"] else 0)
    if not n:
        return
    fig, axes = plt.subplots(1, n, figsize=(4.2 * n, 3.6), squeeze=False)
    for ax, run in zip(axes[0], panels):
        t = run["ms_per_step"]
        names = [k for k in t if k != "expert"]
        ratios = [[a / b for a, b in zip(t[k], t["expert"])] for k in names]  # same round
        ax.boxplot(ratios, orientation="horizontal")
        ax.set_yticks(range(1, len(names) + 1), names, fontsize=8)
        ax.axvline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_xlabel("step time ÷ expert's in the same round (1 thread)", fontsize=8)
        ax.set_title(f"{run['size']}: expert {statistics.median(t['expert']):.0f} ms/step", fontsize=9)
    if solve and solve["runs"]:
        ax = axes[0][-1]
        for r in (x for x in solve["runs"] if "evals" in x):
            t = r.get("setting", 0)
            ax.plot([e["train_seconds"] for e in r["evals"]], [e["exact_match"] for e in r["evals"]],
                    marker=".", color="C0" if t == 0 else "C1", alpha=0.7,
                    label=f"{r['threads']} thread(s)" + (" (as the recipe)" if t == 0 else ""))
        ax.axhline(SOLVED, color="grey", lw=0.8, ls="--")
        ax.axvline(SOLVE_GOAL_S, color="red", lw=0.8, ls=":")
        ax.set_xlabel("training seconds (evaluation excluded)")
        ax.set_ylabel("held-out exact match")
        ax.set_title("time to solve", fontsize=10)
        handles, labels = ax.get_legend_handles_labels()
        unique = dict(zip(labels, handles))
        ax.legend(unique.values(), unique.keys(), fontsize=7)
    fig.tight_layout()
    fig.savefig(results / "bench.png", dpi=80)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "_solve-child":
        solve_child(argv[1:])
        return 0
    if argv and argv[0] == "_baseline-child":
        baseline_child(argv[1:])
        return 0
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--only", nargs="+", choices=["steps", "solve", "notebooks", "origami"],
                   default=["steps", "solve", "notebooks", "origami"])
    p.add_argument("--quick", action="store_true", help="few rounds and repeats, for a smoke run")
    p.add_argument("--report-only", action="store_true", help="re-render the report from stored results")
    p.add_argument("--rounds", type=int, default=9, help="interleaved timing rounds per size")
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--recipe", help="a `python -m minitf train …` command (default: RECIPE.md)")
    p.add_argument("--eval-every", type=int, default=100)
    p.add_argument("--solve-repeats", type=int, nargs="+", default=[3, 1],
                   help="repeats per --solve-threads setting (the last number applies to the rest)")
    p.add_argument("--solve-time-limit", type=float, default=300,
                   help="end a recipe run at its first evaluation after this many seconds (0: never)")
    p.add_argument("--solve-threads", type=int, nargs="+", default=[0, 2],
                   help="--threads given to the recipe's run; 0 = the recipe's own setting")
    p.add_argument("--stop-when-solved", action="store_true",
                   help="end each recipe run at its first solved evaluation (implied by --quick)")
    p.add_argument("--nb-repeats", type=int, default=2)
    p.add_argument("--origami", choices=["run", "collect"], default="run",
                   help="run the bench/origami_*.py experiments (--quick passes --quick) or only collect their results")
    p.add_argument("--results", type=Path, default=BENCH / "results")
    p.add_argument("--report", type=Path, default=BENCH / "REPORT.md")
    args = p.parse_args(argv)
    args.stop_when_solved = args.stop_when_solved or args.quick
    results = args.results
    results.mkdir(parents=True, exist_ok=True)
    if not args.report_only:
        env = machine()
        env.update(date=now(), command="python bench/run.py " + " ".join(argv))
        save_result("machine", env, results)
        sections = {"steps": lambda: bench_steps(args), "solve": lambda: bench_solve(args, results),
                    "notebooks": lambda: bench_notebooks(args, results),
                    "origami": lambda: bench_origami(args, results)}
        for name in ("steps", "solve", "notebooks", "origami"):
            if name in args.only:
                print(f"[{now()}] {name} …", flush=True)
                data = sections[name]()
                data["quick"] = args.quick
                data["run_command"] = "python bench/run.py " + " ".join(argv)
                save_result(name, data, results)
    plot(results)
    render(results, args.report, argv)
    print(f"wrote {args.report.relative_to(ROOT) if args.report.is_relative_to(ROOT) else args.report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
