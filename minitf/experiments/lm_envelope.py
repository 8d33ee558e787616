"""The best fixed size at each budget, and growth against it (bench/lm_envelope.py, notebook 14):
`load_lm_envelope()`."""
from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from . import RESULTS


@dataclass
class LMEnvelope:
    """bench/lm_envelope.py: final loss per size and budget (fully decayed), the envelope (the best
    size at each budget) and lm_growth's arms re-scored as effective-compute multipliers."""
    command: str
    budget_flops: float
    sizes: dict[str, dict]                     # size → {"parameters", "flops_per_token"}
    points: dict[str, dict[float, list[float]]]  # size → budget → final losses (one per seed)
    envelope: dict[float, tuple[str, float]]   # budget → (best size, its mean final loss)
    rescored: dict[str, dict]                  # growth arm → budget, final_loss, vs_scratch, vs_envelope, …
    into_best: dict[str, dict] = field(default_factory=dict)  # growth into 4L d32 → the same, per seed too

    def loss(self, size: str, budget: float) -> float:
        return statistics.mean(self.points[size][budget])

    def table(self) -> str:
        budgets = sorted({b for bs in self.points.values() for b in bs})
        lines = [f"{'size':<17} {'params':>8} " + " ".join(f"{'budget ' + str(b):>12}" for b in budgets)]
        for s, bs in self.points.items():
            cells = [f"{self.loss(s, b):>12.4f}" if b in bs else f"{'—':>12}" for b in budgets]
            lines.append(f"{s:<17} {self.sizes[s]['parameters']:>8,} " + " ".join(cells))
        return "\n".join(lines)

    def growth_table(self) -> str:
        def cell(x, where, budget):
            top = max(b for bs in self.points.values() for b in bs)
            if where == "above":
                return f"< {budget / top:.2f}"
            return f"> {x:.2f}" if where == "below" else f"{x:.2f}"
        def row(name, a):
            return (f"{name:<40} {a['budget']:>6} {a['final_loss']:>7.4f} "
                    f"{cell(a['vs_scratch'], a['where_scratch'], a['budget']):>7} "
                    f"{cell(a['vs_envelope'], a['where'], a['budget']):>11}")
        lines = [f"{'growth arm':<40} {'budget':>6} {'final':>7} {'vs 4L':>7} {'vs envelope':>11}"]
        lines += [row(name, a) for name, a in self.rescored.items()]
        if self.into_best:
            lines.append("into the envelope's best size, 4L d32, from 2L d32:")
            lines += [row(name, a) for name, a in self.into_best.items()]
        return "\n".join(lines)

    def __repr__(self):
        return self.table()

    def plot(self):
        """Final loss against training compute, one line per size (mean over seeds, a dot per seed),
        the envelope as a thick grey line under them."""
        from matplotlib.figure import Figure

        fig = Figure(figsize=(7, 4.2), layout="constrained")
        ax = fig.subplots()
        for i, (s, bs) in enumerate(self.points.items()):
            budgets = sorted(bs)
            ax.plot([b * self.budget_flops for b in budgets], [self.loss(s, b) for b in budgets],
                    "-o", color=f"C{i}", ms=4, label=f"{s} ({self.sizes[s]['parameters']:,})")
            for b in budgets:
                ax.plot([b * self.budget_flops] * len(bs[b]), bs[b], ".", color=f"C{i}", alpha=0.4)
        env = sorted(self.envelope)
        ax.plot([b * self.budget_flops for b in env], [self.envelope[b][1] for b in env], "-",
                color="0.6", lw=6, alpha=0.4, zorder=0, label="envelope: best size")
        ax.set_xscale("log")
        ax.set_xlabel("training compute (FLOPs, log scale)", fontsize=9)
        ax.set_ylabel("final validation loss (nats/byte)", fontsize=9)
        ax.tick_params(labelsize=9)
        ax.legend(fontsize=9)
        return fig


def load_lm_envelope(path: Path | None = None) -> LMEnvelope:
    """The stored result of bench/lm_envelope.py (default: the stored one)."""
    raw = json.loads(Path(path or RESULTS / "lm_envelope.json").read_text())
    points = {s: {float(b): v for b, v in bs.items()} for s, bs in raw["points"].items()}
    env = {float(b): (v[0], v[1]) for b, v in raw["envelope"].items()}
    return LMEnvelope(raw["command"], raw["budget_flops"], raw["sizes"], points, env, raw["rescored"],
                      raw.get("into_best", {}))


def plot_growth_against_yardsticks(env: LMEnvelope):
    """Each growth arm's effective-compute multiplier against the two yardsticks: the 4-layer target
    alone and the best fixed size (the envelope). A triangle is a bound: the arm's loss lies outside
    the measured budgets, so only "at least" is known. Below 1 the arm beats the yardstick."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    arms = list(env.rescored.items()) + list(env.into_best.items())
    fig = Figure(figsize=(7.7, 0.27 * len(arms) + 1.9), layout="constrained")
    ax = fig.subplots()
    for y, (name, a) in enumerate(arms):
        for key, where, colour, face in (("vs_scratch", "where_scratch", "C0", "none"),
                                         ("vs_envelope", "where", "C3", "C3")):
            x, side = a[key], a[where]
            if side == "inside":
                ax.plot([x], [y], "o", color=colour, mfc=face, ms=6)
            elif side == "below":  # the arm's loss is above every measured budget's: at least x
                ax.plot([x], [y], ">", color=colour, mfc=face, ms=7)
    ax.axvline(1, color="0.3", lw=1)
    ax.axvline(0.7, color="0.3", lw=1, ls=":")
    if env.into_best:
        ax.axhline(len(env.rescored) - 0.5, color="0.6", lw=0.8)
    ax.set_yticks(range(len(arms)), [name for name, _ in arms], fontsize=9)
    ax.invert_yaxis()
    ax.set_xlabel("arm's FLOPs ÷ the yardstick's FLOPs to the same loss (below 1: growth pays)", fontsize=9)
    ax.set_xlim(0.6, 2.1)
    ax.tick_params(labelsize=9)
    ax.legend(handles=[Line2D([], [], marker="o", color="C0", mfc="none", ls="", label="vs the 4-layer target"),
                       Line2D([], [], marker="o", color="C3", ls="", label="vs the best fixed size"),
                       Line2D([], [], marker=">", color="0.4", ls="", label="at least (outside the budgets)"),
                       Line2D([], [], color="0.3", lw=1, label="as good as the yardstick"),
                       Line2D([], [], color="0.3", lw=1, ls=":", label="a 30 % saving")],
              fontsize=9, loc="upper center", bbox_to_anchor=(0.35, -0.09), ncol=3)
    return fig
