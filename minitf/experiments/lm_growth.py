"""Growing the language model against scratch at equal FLOPs (bench/lm_growth.py, notebook 13):
`load_lm_growth()`."""
from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass
from pathlib import Path

from . import RESULTS
from .growth_curves import GROWTH_MARK, mean_curve, ring


@dataclass
class LMGrowthArm:
    """One arm of bench/lm_growth.py over its seeds. Ratios: FLOPs to scratch's final loss ÷ the budget."""
    name: str
    budget: float                 # the arm's FLOPs as a fraction of scratch's (1, or 0.7)
    ratios: list[float | None]    # per seed; None: scratch's final loss not reached
    bound: float                  # τ·(1 − C_small/C_big): the most growth could save (0 for scratch)
    loss_at: dict[float, list[float | None]]  # fraction of the full budget → loss per seed
    final_losses: list[float]
    tokens: int                   # bytes trained on (small and big stage together)
    steps: int
    small_steps: int | None
    cpu_s: list[float]
    growth_jump: list[float] | None   # loss right after growth − right before, per seed
    beats_scratch_range: bool     # every seed reaches scratch's loss before every scratch seed
    goal_met: bool                # every seed reaches it with ≤ 0.7 of scratch's FLOPs

    @property
    def grown(self) -> bool:
        return self.growth_jump is not None

    @property
    def ratio_range(self) -> tuple[float, float] | None:
        """(lowest, highest) ratio over the seeds; None if a seed never reached the loss."""
        return None if None in self.ratios else (min(self.ratios), max(self.ratios))


@dataclass
class LMGrowthCurve:
    """One arm and seed: validation loss against FLOPs (as fractions of the full budget)."""
    arm: str
    seed: int
    compute: list[float]
    loss: list[float]
    grown_at: float | None        # fraction of the full budget at the growth step
    loss_before: float | None
    loss_after: float | None


@dataclass
class LMGrowthResults:
    """bench/lm_growth.py: docs/recipes.md's language model grown in depth or width, against scratch."""
    command: str
    target_parameters: int
    budget_steps: int             # scratch's steps of batch_size × context bytes
    budget_flops: float
    batch_size: int
    context: int
    flops_per_token: dict         # "target", "L1", "L2", "d32" → training FLOPs per token
    lr: float                     # scratch's best peak learning rate, used by every arm
    lr_tuning: dict[float, float] # peak learning rate → scratch's final loss (seed 0)
    warmup: float
    decay: float
    seeds: list[int]
    target_loss: float            # scratch's final validation loss, mean over the seeds
    scratch_final_losses: list[float]
    arms: list[LMGrowthArm]
    curves: list[LMGrowthCurve]

    def arm(self, name: str) -> LMGrowthArm:
        return next(a for a in self.arms if a.name == name)

    def best(self) -> LMGrowthArm:
        """The grown arm with the lowest highest-over-seeds ratio (unreached counts as infinite)."""
        return min((a for a in self.arms if a.grown),
                   key=lambda a: max(math.inf if x is None else x for x in a.ratios))

    PANELS = {
        "1 → 4 layers": ["deepen 1→4, τ=0.5", "deepen 1→4, τ=0.75", "stack 1→4, τ=0.75",
                         "stack 1→4, τ=0.75, re-warm-up"],
        "2 → 4 layers": ["deepen 2→4, τ=0.5", "deepen 2→4, τ=0.75", "stack 2→4, τ=0.75"],
        "pushing 2 → 4 further, and width": ["deepen 2→4, τ=0.8", "deepen 2→4, τ=0.75, new layers 2× LR",
                                             "widen d32→64, τ=0.75"],
        "0.7 of the budget": ["scratch, 0.7 budget", "deepen 1→4, τ=0.75, 0.7 budget",
                              "stack 1→4, τ=0.75, 0.7 budget", "deepen 2→4, τ=0.75, 0.7 budget"],
    }

    def mean_curve(self, arm: str) -> tuple[list[float], list[float], float | None, float | None]:
        """(compute as a fraction of the budget, validation loss, growth point, loss just before it):
        means over the seeds."""
        runs = [c for c in self.curves if c.arm == arm]
        xs, ys = mean_curve([(c.compute, c.loss) for c in runs])
        if runs[0].grown_at is None:
            return xs, ys, None, None
        n = len(runs)
        return xs, ys, sum(c.grown_at for c in runs) / n, sum(c.loss_before for c in runs) / n

    def plot(self, panels: dict[str, list[str]] | None = None):
        """Validation loss against compute (fraction of scratch's FLOPs), means over the seeds: one
        panel per group of arms, each against scratch, with scratch's final loss (dotted) and the
        range of its seeds' final losses (grey); a ring where an arm grew. Jumps above the panel
        (stacking) are cut off: the table has their size."""
        from matplotlib.figure import Figure

        panels = panels or self.PANELS
        rows = (len(panels) + 1) // 2
        fig = Figure(figsize=(7.6, 3.3 * rows), layout="constrained")
        axes = fig.subplots(rows, 2, sharex=True, sharey=True).flatten()
        styles = [("tab:blue", "-"), ("tab:orange", "-"), ("tab:green", "-"), ("tab:red", "--")]
        for ax, (title, arms) in zip(axes, panels.items()):
            ax.axhspan(min(self.scratch_final_losses), max(self.scratch_final_losses), color="0.85")
            ax.axhline(self.target_loss, color="black", ls=":", lw=1.2)
            xs, ys, _, _ = self.mean_curve("scratch")
            ax.plot(xs, ys, color="black", lw=2.5, label="scratch")
            for k, (arm, (colour, ls)) in enumerate(zip(arms, styles)):
                xs, ys, at, before = self.mean_curve(arm)
                ax.plot(xs, ys, color=colour, ls=ls, lw=1.6, label=arm)
                if at is not None:
                    ax.plot([at], [before], color=colour, **ring(k))
            ax.set_title(title, fontsize=10)
            ax.tick_params(labelsize=9)
            ax.legend(fontsize=9, loc="upper right")
        for ax in axes[len(panels):]:
            ax.set_visible(False)
        top = self.target_loss + 0.42
        axes[0].set_ylim(self.target_loss - 0.04, top)
        axes[0].set_xlim(0, 1.02)
        for ax in axes[-2:]:
            ax.set_xlabel("compute (fraction of scratch's FLOPs)", fontsize=9)
        for ax in axes[::2]:
            ax.set_ylabel("validation loss (nats per byte)", fontsize=9)
        fig.legend(handles=[
            ax.plot([], [], color="0.3", **GROWTH_MARK)[0],
            ax.plot([], [], color="black", ls=":", lw=1.2)[0],
            ax.fill_between([], [], color="0.85")],
            labels=["growth step (loss just before it)", "scratch's final loss (mean of its seeds)",
                    "range of scratch's seeds at the end"], loc="outside lower center", ncol=2, fontsize=9)
        return fig

    def table(self) -> str:
        w = max(len(a.name) for a in self.arms) + 1
        lines = [f"{'arm':<{w}} {'FLOPs to scratch’s loss':>23} {'bound':>5} "
                 f"{'loss at 25/50/75/100 %':>23} {'final':>6} {'jump':>6}"]
        for a in self.arms:
            ratios = " ".join("n/r " if x is None else f"{x:.2f}" for x in a.ratios)
            losses = " ".join("  —  " if None in v else f"{statistics.mean(v):.3f}" for v in a.loss_at.values())
            jump = "" if not a.grown else f"{round(statistics.mean(a.growth_jump), 2) + 0.0:+.2f}"  # no −0.00
            bound = f"{a.bound:.2f}" if a.grown else ""
            lines.append(f"{a.name:<{w}} {ratios:>23} {bound:>5} {losses:>23} "
                         f"{statistics.mean(a.final_losses):>6.3f} {jump:>6}")
        return "\n".join(lines)


def load_lm_growth(path: Path | None = None) -> LMGrowthResults:
    """The stored result of bench/lm_growth.py (default: the stored one)."""
    raw = json.loads(Path(path or RESULTS / "lm_growth.json").read_text())
    s, budget = raw["summary"], raw["budget_flops"]
    arms = [LMGrowthArm(name, a["budget"], a["ratios"], a["bound"],
                        {float(f): v for f, v in a["loss_at"].items()}, a["final_losses"], a["tokens"],
                        a["steps"], a["small_steps"], a["cpu_s"], a["growth_jump"],
                        a["beats_scratch_range"], a["goal_met"])
            for name, a in s["arms"].items()]
    names = {a.name for a in arms}
    curves = []
    for r in raw["runs"].values():
        if r["lr"] != raw["lr"] or r["arm"] not in names:
            continue  # the learning-rate tuning's other runs
        g = r["growth"]
        curves.append(LMGrowthCurve(r["arm"], r["seed"], [p["flops"] / budget for p in r["curve"]],
                                    [p["val_loss"] for p in r["curve"]],
                                    None if g is None else g["flops"] / budget,
                                    None if g is None else g["loss_before"],
                                    None if g is None else g["loss_after"]))
    return LMGrowthResults(raw["command"], raw["target_parameters"], raw["budget_steps"], budget,
                           raw["batch_size"], raw["context"], raw["flops_per_token"], raw["lr"],
                           {float(k): v for k, v in raw["lr_tuning"].items()}, raw["warmup"], raw["decay"],
                           raw["seeds"], s["target_loss"], s["scratch_final_losses"], arms, curves)
