"""nanoGPT's GPU mark on two CPU cores (bench/lm_best.py, bench/lm_best_sweep.py,
bench/lm_best_ablation.py, bench/lm_best_profile.py; notebook 14): `load_lm_best()`,
`load_lm_best_sweep()`, `load_lm_best_ablation()` and `load_lm_best_profile()`."""
from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path

from . import RESULTS


@dataclass
class LMBestRun:
    """One whole `python -m minitf train --recipe lm-best` command, timed from a cold start."""
    seed: int
    wall_s: float                   # the whole command: imports, data, training, evaluations, saving
    cpu_s: float
    loadavg: float                  # 1-minute load average before the run
    loadavg_after: float
    val_loss: float                 # nats per byte, tiled windows of 256 over the whole last 10 %
    val_loss_random_windows: float  # nanoGPT's estimate_loss: 800 random 256-byte windows
    train_loss: float               # tiled, on the first 111,539 bytes of the training split
    train_seconds: float | None     # None for the nanoGPT anchor (its own clock is not read)
    steps: int
    val_curve: list[dict]           # {"step", "loss"} every 400 steps (tiled, whole split)

    @property
    def gap(self) -> float:
        return self.val_loss - self.train_loss

    def curve(self) -> list[tuple[float, float]]:
        """(seconds, loss) at each validation: step s came after s/steps of the training seconds
        (the steps are alike), plus the whole command's end."""
        per = self.train_seconds / self.steps
        return [(v["step"] * per, v["loss"]) for v in self.val_curve]


@dataclass
class LMBestResults:
    command: str
    date: str
    cpu: str
    target: float                   # 1.47: nanoGPT's train_shakespeare_char on one A100
    limit_s: float                  # 600: ten minutes
    arms: dict[str, list[LMBestRun]]

    def runs(self, arm: str = "lm-best") -> list[LMBestRun]:
        return sorted(self.arms[arm], key=lambda r: r.seed)

    def reached(self, arm: str = "lm-best") -> list[bool]:
        """Per seed: at or below the mark, within the time."""
        return [r.val_loss <= self.target and r.wall_s <= self.limit_s for r in self.runs(arm)]

    def table(self) -> str:
        lines = [f"{'arm':<38} {'seed':>4} {'wall s':>6} {'load':>9} {'tiled':>7} {'random':>7} "
                 f"{'train':>7} {'gap':>6}"]
        for name in self.arms:
            for r in self.runs(name):
                lines.append(f"{name[:38]:<38} {r.seed:>4} {r.wall_s:>6.0f} {r.loadavg:>4.1f}→{r.loadavg_after:<4.1f} "
                             f"{r.val_loss:>7.4f} {r.val_loss_random_windows:>7.4f} {r.train_loss:>7.4f} "
                             f"{r.gap:>6.3f}")
        return "\n".join(lines)

    def __repr__(self):
        return self.table()

    def plot(self, arm: str = "lm-best"):
        """Validation loss against seconds, a line per seed, with the mark and the ten minutes."""
        from matplotlib.figure import Figure

        fig = Figure(figsize=(7.5, 3.6), layout="constrained")
        ax = fig.subplots()
        for i, r in enumerate(self.runs(arm)):
            xs, ys = zip(*r.curve())
            ax.plot(xs, ys, "o-", color=f"C{i}", ms=4, label=f"seed {r.seed}: {r.val_loss:.3f} after "
                    f"{r.wall_s:.0f} s (whole command)")
            ax.plot([r.wall_s], [r.val_loss], "*", color=f"C{i}", ms=10)
        ax.axhline(self.target, color="C3", ls="--", lw=1, label=f"nanoGPT on an A100: {self.target}")
        ax.axvline(self.limit_s, color="k", ls=":", lw=1, label="ten minutes")
        ax.set_xlabel(f"seconds ({self.cpu}, 2 threads)", fontsize=9)
        ax.set_ylabel("validation loss (nats/byte)", fontsize=9)
        ax.set_xlim(0, self.limit_s * 1.05)
        ax.tick_params(labelsize=9)
        ax.legend(fontsize=9, loc="upper right")
        ax.set_title("the decay (the last 40 % of the steps) takes the last 0.1 nats", fontsize=10)
        return fig


def load_lm_best(path: Path | None = None) -> LMBestResults:
    """The stored result of bench/lm_best.py (default: the stored one)."""
    doc = json.loads(Path(path or RESULTS / "lm_best.json").read_text())
    fields = LMBestRun.__dataclass_fields__
    arms = {name: [LMBestRun(**{k: v for k, v in r.items() if k in fields}) for r in entry["runs"]]
            for name, entry in doc["arms"].items()}
    return LMBestResults(doc["command"], doc["date"], doc["cpu"], doc["target"], doc["limit_s"], arms)


@dataclass
class LMBestSweep:
    """bench/lm_best_sweep.py: sizes and regularisers at fixed FLOP budgets, on a GPU, one seed."""
    device: str
    runs: list[dict]

    def table(self) -> str:
        lines = [f"{'run':<64} {'FLOPs':>6} {'params':>9} {'steps':>5} {'epochs':>6} {'val':>6} {'train':>6}"]
        for r in sorted(self.runs, key=lambda r: (r["budget"], r["val_loss"])):
            lines.append(f"{r['name'][:64]:<64} {r['budget']:>6.0e} {r['params']:>9,} {r['steps']:>5} "
                         f"{r['epochs']:>6.1f} {r['val_loss']:>6.3f} {r['train_loss']:>6.3f}")
        return "\n".join(lines)

    def __repr__(self):
        return self.table()

    def best(self) -> dict:
        return min(self.runs, key=lambda r: r["val_loss"])

    def plot(self):
        """Validation loss (left) and training loss (right) of every run, grouped by FLOP budget, a
        colour per budget: overfitting shows as a lower training loss with a higher validation loss."""
        from matplotlib.figure import Figure
        from matplotlib.lines import Line2D

        runs = sorted(self.runs, key=lambda r: (r["budget"], r["val_loss"]))
        budgets = sorted({r["budget"] for r in runs})
        colour = {b: f"C{i}" for i, b in enumerate(budgets)}
        height = 0.26 * len(runs) + 2.0
        fig = Figure(figsize=(7.7, height))  # margins by hand: the names need the left 42 %
        fig.subplots_adjust(left=0.42, right=0.98, top=1 - 0.1 / height, bottom=1.25 / height, wspace=0.08)
        ax, bx = fig.subplots(1, 2, sharey=True, gridspec_kw={"width_ratios": [1.4, 1]})
        for y, r in enumerate(runs):
            ax.plot([r["val_loss"]], [y], "o", color=colour[r["budget"]], ms=6)
            bx.plot([r["train_loss"]], [y], "o", color=colour[r["budget"]], mfc="none", ms=6)
        ax.set_yticks(range(len(runs)), [r["name"].replace("weight decay", "wd").replace("windows of 512 (batch 8)", "windows 512")
                                          for r in runs], fontsize=9)
        ax.invert_yaxis()
        ax.set_xlabel("validation loss (nats/byte)", fontsize=9)
        bx.set_xlabel("training loss (nats/byte)", fontsize=9)
        for x in (ax, bx):
            x.tick_params(labelsize=9)
            x.grid(axis="x", color="0.9")
        fig.legend(handles=[Line2D([], [], marker="o", color=colour[b], ls="", label=f"{b:.0e} FLOPs")
                            for b in budgets], fontsize=9, loc="lower center", ncol=len(budgets),
                   title="budget (filled: validation, hollow: training)", title_fontsize=9)
        return fig

    def run(self, name: str, budget: float) -> dict:
        return next(r for r in self.runs if r["name"] == name and r["budget"] == budget)


def load_lm_best_sweep(path: Path | None = None) -> LMBestSweep:
    """The stored result of bench/lm_best_sweep.py."""
    doc = json.loads(Path(path or RESULTS / "lm_best_sweep.json").read_text())
    return LMBestSweep(doc["device"], doc["runs"])


@dataclass
class LMBestAblation:
    """bench/lm_best_ablation.py: each ingredient taken out, 3 seeds, with the steps the recipe's ten
    CPU minutes buy it (seconds per step measured on the CPU), the losses computed on a GPU."""
    doc: dict

    @property
    def arms(self) -> list[str]:
        """The recipe and its arms (not the nanoGPT anchor: `anchor`)."""
        names = dict.fromkeys(r["arm"] for r in self.doc["runs"] if not r["arm"].startswith("nanoGPT"))
        return sorted(names, key=lambda a: a != "lm-best")

    @property
    def anchor(self) -> dict | None:
        """nanoGPT's own GPU run (train_shakespeare_char), run beside the arms on the same GPU."""
        return next((r for r in self.doc["runs"] if r["arm"].startswith("nanoGPT")), None)

    def runs(self, arm: str) -> list[dict]:
        return sorted((r for r in self.doc["runs"] if r["arm"] == arm), key=lambda r: r["seed"])

    def step_cost(self, arm: str) -> float | None:
        """The arm's CPU seconds per step ÷ the recipe's, probed side by side (the fastest probe of
        each: the least disturbed); None for an arm that does the recipe's arithmetic, not probed."""
        probed = [t["seconds_per_step"] for t in self.doc["step_times"] if arm in t["seconds_per_step"]]
        return min(probed[-1][arm]) / min(probed[-1]["lm-best"]) if probed else None

    def deltas(self, arm: str) -> list[float]:
        """The arm's tiled loss minus the recipe's, seed by seed (same first weights and batches)."""
        base = {r["seed"]: r["val_loss"] for r in self.runs("lm-best")}
        return [r["val_loss"] - base[r["seed"]] for r in self.runs(arm) if r["seed"] in base]

    def table(self) -> str:
        lines = [f"{'arm':<38} {'cost':>6} {'steps':>5} {'tiled, per seed':<24} {'Δ median':>8} "
                 f"{'gap':>5}"]
        rs_base = self.runs("lm-best")[0]["steps"]
        # the recipe, then its ingredients by what taking them out costs, most first
        order = ["lm-best", *sorted(self.arms[1:], key=lambda a: -statistics.median(self.deltas(a)))]
        for arm in order:
            rs = self.runs(arm)
            d = self.deltas(arm)
            delta = f"{statistics.median(d):+.4f}" if arm != "lm-best" and d else "—"
            gap = statistics.median(r["val_loss"] - r["train_loss"] for r in rs)
            per_seed = " ".join(f"{r['val_loss']:.4f}" for r in rs)
            # an arm with the recipe's steps does its arithmetic (its probe is the probes' noise)
            cost = 1.0 if arm == "lm-best" else None if rs[0]["steps"] == rs_base else self.step_cost(arm)
            lines.append(f"{arm.split(' (')[0]:<38} {'same' if cost is None else f'{cost:.2f}×':>6} {rs[0]['steps']:>5} "
                         f"{per_seed:<24} {delta:>8} {gap:>5.3f}")
        a = self.anchor
        if a:
            lines.append(f"{a['arm'].split(' (')[0]:<38} {'':>6} {a['steps']:>5} {a['val_loss']:<24.4f} {'':>8} "
                         f"{a['val_loss'] - a['train_loss']:>5.3f}")
        return "\n".join(lines)

    def __repr__(self):
        return self.table()

    def plot(self):
        """What each ingredient buys: the loss without it minus the recipe's, a dot per seed (paired:
        same first weights, same batches) and the median; right of 0, the ingredient pays."""
        from matplotlib.figure import Figure
        from matplotlib.lines import Line2D

        order = sorted(self.arms[1:], key=lambda a: -statistics.median(self.deltas(a)))
        fig = Figure(figsize=(7.7, 0.32 * len(order) + 1.4), layout="constrained")
        ax = fig.subplots()
        for y, arm in enumerate(order):
            d = self.deltas(arm)
            ax.plot(d, [y] * len(d), "o", color="C0", alpha=0.7, ms=6)
            ax.plot([statistics.median(d)], [y], "|", color="k", ms=14, mew=2)
        ax.axvline(0, color="0.3", lw=1)
        ax.set_yticks(range(len(order)), [a.split(" (")[0] for a in order], fontsize=9)
        ax.invert_yaxis()
        ax.set_xlabel("validation loss without it − the recipe's (nats/byte)", fontsize=9)
        ax.tick_params(labelsize=9)
        ax.legend(handles=[Line2D([], [], marker="o", color="C0", ls="", label="a seed"),
                           Line2D([], [], marker="|", color="k", ls="", ms=12, mew=2, label="median")],
                  fontsize=9, loc="lower right")
        return fig


def load_lm_best_ablation(path: Path | None = None) -> LMBestAblation:
    """The stored result of bench/lm_best_ablation.py."""
    return LMBestAblation(json.loads(Path(path or RESULTS / "lm_best_ablation.json").read_text()))


@dataclass
class LMBestProfile:
    """bench/lm_best_profile.py: FLOP rates on the recipe's shapes and where a step's time goes."""
    doc: dict

    def table(self) -> str:
        return format_profile(self.doc)

    def __repr__(self):
        return self.table()

    @property
    def step_share(self) -> float:
        """Whole training steps' FLOP rate ÷ the large square product's (the practical peak)."""
        return self.doc["recipe_gflops"] / square_rate(self.doc)

    def plot(self):
        """Left: GFLOP/s of each matrix product of the recipe's shapes, the square product (the
        practical peak) and whole training steps. Right: a step's CPU time by kind of work."""
        from matplotlib.figure import Figure

        rates = {name.split(" (")[0]: r for name, r in self.doc["matmul_gflops"].items()}
        rates["whole training steps"] = self.doc["recipe_gflops"]
        shares = self.doc["profile"]["self_cpu_share"]
        fig = Figure(figsize=(7.7, 3.2), layout="constrained")
        ax, bx = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.5, 1]})
        names = list(rates)
        ax.barh(range(len(names)), list(rates.values()),
                color=["C7" if n.startswith("whole") else "C0" for n in names])
        ax.set_yticks(range(len(names)), [n.replace(" (the practical peak)", "") for n in names], fontsize=9)
        ax.invert_yaxis()
        ax.set_xlabel(f"GFLOP/s, float32 ({self.doc['cpu']}, {self.doc['threads']} threads)", fontsize=9)
        ax.set_title("the recipe's matrix products, alone and in whole steps", fontsize=9)
        left = 0.0
        for i, (kind, share) in enumerate(shares.items()):
            bx.bar(0, share, bottom=left, color=f"C{i + 1}", width=0.6)
            bx.text(0, left + share / 2, f"{kind.split(' (')[0]}\n{share:.0%}", ha="center", va="center",
                    fontsize=9)
            left += share
        bx.set_xlim(-0.5, 0.5)
        bx.set_ylim(0, 1)
        bx.set_xticks([])
        bx.set_ylabel("share of a step's CPU time", fontsize=9)
        for x in (ax, bx):
            x.tick_params(labelsize=9)
        return fig


def load_lm_best_profile(path: Path | None = None) -> LMBestProfile:
    """The stored result of bench/lm_best_profile.py."""
    return LMBestProfile(json.loads(Path(path or RESULTS / "lm_best_profile.json").read_text()))


def square_rate(doc: dict) -> float:
    """GFLOP/s of the large square product: the best rate this CPU reaches from PyTorch."""
    return next(r for name, r in doc["matmul_gflops"].items() if name.startswith("square"))


def format_profile(doc: dict) -> str:
    """The profile as a notebook prints it: rates against the practical peak, then a step's time."""
    rates = doc["matmul_gflops"]
    peak = square_rate(doc)
    lines = [f"{doc['cpu']}, {doc['threads']} threads: float32 matrix products, GFLOP/s", ""]
    lines += [f"  {name:<36} {r:>6.1f}  ({r / peak:.0%} of the square's)" for name, r in rates.items()]
    lines += ["", f"  the recipe, whole training steps:    {doc['recipe_gflops']:>6.1f}  "
              f"({doc['recipe_gflops'] / peak:.0%} of the square's)", "",
              f"a step: {doc['profile']['wall_s_per_step'] * 1000:.0f} ms"]
    lines += [f"  {k:<24} {v * 1000:>5.0f} ms" for k, v in doc["profile"]["phases_s_per_step"].items()]
    lines += ["", "a step's CPU time by kind of work:"]
    lines += [f"  {k:<70} {v:>4.0%}" for k, v in doc["profile"]["self_cpu_share"].items()]
    lines += ["", f"one evaluation of the whole validation split: {doc['evaluation_s']:.1f} s "
              f"(the recipe runs {doc['evaluations']})"]
    return "\n".join(lines)
