"""Origami growth (notebook 07): the tiny model grown ×8 in width on shift against training it from
scratch (bench/origami_growth.py, `load_growth()`), and the recipe's growth by steps
(bench/origami_recipe_growth.py, `load_recipe_growth()`)."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..core.config import Config
from . import RESULTS
from .growth_curves import GROWTH_MARK, growth_points, mean_curve, ring, value_at


# the tiny model after 1,500 steps on shift, as bench/origami_growth.py trained and grew it
GROWTH_START = RESULTS / "origami_seed_model.pt"


_GROWTH_NAMES = {  # the benchmark's arm → what it did, in words
    "scratch": "from scratch",
    "grow_late": "grow after 1,500 steps",
    "grow_early": "grow after 300 steps",
    "grow_early_adam": "grow after 300, Adam kept",
    "grow_early_copies": "grow after 300, exact copies",
    "staged": "staged 4→8→16→32",
}


_RECIPE_NAMES = {
    "scratch": "from scratch",
    "grow_500": "grow after 500 steps",
    "grow_1000": "grow after 1,000 steps",
    "staged": "staged 8→16→32",
}


@dataclass
class GrowthCurve:
    """One training run of one arm: held-out numbers against the compute spent so far."""
    arm: str                      # what the arm did, in words ("grow after 300 steps")
    seed: int
    compute: list[float]          # FLOPs (6 × parameters × trained tokens) at each evaluation
    loss: list[float]             # held-out loss (nats) at each evaluation
    exact_match: list[float] | None  # held-out share of whole outputs right (recipe runs only)
    grown_at: list[float]         # compute at each growth step (none for "from scratch")


@dataclass
class GrowthArm:
    """One arm's end result over the seeds: means, and the range over seeds for the loss."""
    arm: str
    loss: float                   # mean final held-out loss
    loss_range: tuple[float, float]   # (lowest, highest) over the seeds
    char_accuracy: float          # mean share of output characters right
    exact_match: float            # mean share of whole outputs right
    reached_scratch: int          # in how many seeds it reached scratch's final loss
    scratch_as_good_after: float  # mean fraction of its compute after which scratch is as good


@dataclass
class GrowthResults:
    """bench/origami_growth.py: the tiny model grown ×8 in width against the big model from scratch."""
    small_parameters: int
    big_parameters: int
    scratch_steps: int            # the budget: scratch's steps of `batch_size` pairs
    batch_size: int
    n_train: int
    seeds: list[int]
    arms: list[GrowthArm]
    curves: list[GrowthCurve]
    start_model_path: Path        # the tiny model after 1,500 steps, as the benchmark grew it

    def arm(self, name: str) -> GrowthArm:
        return next(a for a in self.arms if a.arm == name)

    def start_model(self):
        """The trained tiny model the benchmark grew (its checkpoint metadata has its held-out scores)."""
        from ..core.checkpoint import load
        return load(self.start_model_path)

    PANELS = {"when to grow": ["grow after 1,500 steps", "grow after 300 steps", "staged 4→8→16→32"],
              "what the growth carries": ["grow after 300 steps", "grow after 300, Adam kept",
                                          "grow after 300, exact copies"]}

    def mean_curve(self, arm: str) -> tuple[list[float], list[float], list[float]]:
        """(compute as a fraction of scratch's, held-out loss, growth points): means over the seeds."""
        budget = {c.seed: c.compute[-1] for c in self.curves if c.arm == "from scratch"}
        runs = [c for c in self.curves if c.arm == arm]
        xs, ys = mean_curve([([x / budget[c.seed] for x in c.compute], c.loss) for c in runs])
        grown = [sum(c.grown_at[i] / budget[c.seed] for c in runs) / len(runs) for i in range(len(runs[0].grown_at))]
        return xs, ys, grown

    def plot(self, panels: dict[str, list[str]] | None = None):
        """Held-out loss against compute (log scale, fraction of scratch's), means over the seeds:
        one panel per question, each arm of it against scratch; a ring where an arm grew."""
        from matplotlib.figure import Figure

        panels = panels or self.PANELS
        fig = Figure(figsize=(7.6, 3.7), layout="constrained")
        axes = fig.subplots(1, len(panels), sharey=True)
        colour = dict(zip([a.arm for a in self.arms if a.arm != "from scratch"],
                          ["tab:blue", "tab:orange", "tab:purple", "tab:red", "tab:green"]))  # one per arm
        for ax, (title, arms) in zip(axes, panels.items()):
            xs, ys, _ = self.mean_curve("from scratch")
            ax.plot(xs, ys, color="black", lw=2.5, label="from scratch")
            for k, arm in enumerate(arms):
                xs, ys, grown = self.mean_curve(arm)
                ax.plot(xs, ys, color=colour[arm], lw=1.6, label=arm)
                ax.plot(grown, [value_at(xs, ys, g) for g in grown], color=colour[arm], **ring(k))
            ax.set_xscale("log")
            ax.set_xticks([0.01, 0.03, 0.1, 0.3, 1], ["0.01", "0.03", "0.1", "0.3", "1"])
            ax.minorticks_off()
            ax.set_title(title, fontsize=10)
            ax.set_xlabel("compute (fraction of scratch's)", fontsize=9)
            ax.tick_params(labelsize=9)
            ax.plot([], [], color="0.3", **GROWTH_MARK, label="growth step")
            ax.legend(fontsize=9, loc="lower left")
        axes[0].set_ylabel("held-out loss (nats)", fontsize=9)
        return fig

    def table(self) -> str:
        lines = [f"{'arm':<30} {'held-out loss (range)':>22} {'chars':>6} {'exact':>6} "
                 f"{'scratch as good after':>22}"]
        for a in self.arms:
            lines.append(f"{a.arm:<30} {a.loss:>8.2f} ({a.loss_range[0]:.2f}–{a.loss_range[1]:.2f}) "
                         f"{a.char_accuracy:>6.0%} {a.exact_match:>6.0%} "
                         f"{a.scratch_as_good_after:>12.0%} of its compute")
        return "\n".join(lines)


@dataclass
class RecipeRun:
    """One arm and seed of bench/origami_recipe_growth.py."""
    arm: str
    seed: int
    compute: float                # total FLOPs spent
    final_loss: float
    final_exact_match: float
    reach: dict                   # threshold ("exact match ≥ 99 %", …) → (step, compute ÷ scratch's) or None


@dataclass
class RecipeGrowthResults:
    """bench/origami_recipe_growth.py: growing into docs/recipes.md's model, which solves the shift task."""
    recipe_config: Config
    small_config: Config
    recipe_parameters: int
    small_parameters: int
    steps: int                    # steps per arm, small and big stages together
    n_train: int
    n_val: int
    eval_every: int
    seeds: list[int]
    runs: list[RecipeRun]
    curves: list[GrowthCurve]

    def run(self, arm: str, seed: int) -> RecipeRun:
        return next(r for r in self.runs if r.arm == arm and r.seed == seed)

    def plot(self):
        """Held-out exact match against compute (GFLOP), one panel per seed; a ring where an arm grew."""
        from matplotlib.figure import Figure

        colours = {"from scratch": "black", "grow after 500 steps": "tab:blue",
                   "grow after 1,000 steps": "tab:orange", "staged 8→16→32": "tab:purple"}
        fig = Figure(figsize=(7.6, 3.9), layout="constrained")
        axes = fig.subplots(1, len(self.seeds), sharey=True)
        for ax, seed in zip(axes, self.seeds):
            for c in (c for c in self.curves if c.seed == seed):
                xs = [x / 1e9 for x in c.compute]
                ax.plot(xs, c.exact_match, color=colours[c.arm], lw=2.5 if c.arm == "from scratch" else 1.5,
                        label=c.arm)
                grown = [g / 1e9 for g in c.grown_at]
                ax.plot(grown, [value_at(xs, c.exact_match, g) for g in grown], color=colours[c.arm],
                        **ring(list(colours).index(c.arm) - 1))
            ax.axhline(0.99, color="gray", ls=":", lw=1.5)
            ax.set_title(f"random seed {seed}", fontsize=10)
            ax.set_xlabel("compute (GFLOP)", fontsize=9)
            ax.tick_params(labelsize=9)
        axes[0].set_ylabel("held-out exact match", fontsize=9)
        axes[0].plot([], [], color="gray", ls=":", lw=1.5, label="99 %")
        axes[0].plot([], [], color="0.3", **GROWTH_MARK, label="growth step")
        axes[0].legend(fontsize=9, loc="lower right")
        return fig

    def table(self) -> str:
        labels = list(self.runs[0].reach)
        lines = [f"{'arm':<24} {'seed':>4} {'GFLOP':>6} {'exact':>7}  "
                 + "  ".join(f"{label:>19}" for label in labels)]
        for r in self.runs:
            cells = ["not reached" if x is None else f"step {x[0]:,}: {x[1]:.2f}×" for x in r.reach.values()]
            lines.append(f"{r.arm:<24} {r.seed:>4} {r.compute / 1e9:>6.0f} {r.final_exact_match:>7.1%}  "
                         + "  ".join(f"{c:>19}" for c in cells))
        return "\n".join(lines)


def load_growth(path: Path | None = None) -> GrowthResults:
    """The stored result of bench/origami_growth.py (default: the stored origami_growth.json); the
    start model is the origami_seed_model.pt beside it."""
    raw = json.loads(Path(path or RESULTS / "origami_growth.json").read_text())
    runs, seeds = raw["runs"], raw["settings"]["seeds"]
    arms = []
    for key, s in raw["summary"].items():
        losses = [r["final"]["loss"] for r in runs if r["arm"] == key]
        arms.append(GrowthArm(_GROWTH_NAMES[key], s["loss"], (min(losses), max(losses)),
                              s["char_accuracy"], s["exact_match"], s["reached"], s["scratch_matches_at"]))
    curves = [GrowthCurve(_GROWTH_NAMES[r["arm"]], r["seed"], [c for c, _ in r["curve"]],
                          [loss for _, loss in r["curve"]], None, growth_points(r["stages"]))
              for r in runs]
    return GrowthResults(raw["small_parameters"], raw["big_parameters"], raw["settings"]["steps"],
                         raw["settings"]["batch_size"], raw["data"]["n_train"], seeds, arms, curves,
                         Path(path or RESULTS / "origami_growth.json").with_name("origami_seed_model.pt"))


_THRESHOLDS = {"exact_match >= 0.99": "exact match ≥ 99 %", "loss <= 0.05": "loss ≤ 0.05",
               "loss <= 0.01": "loss ≤ 0.01"}


def load_recipe_growth(path: Path | None = None) -> RecipeGrowthResults:
    """The stored result of bench/origami_recipe_growth.py (default: the stored one)."""
    raw = json.loads(Path(path or RESULTS / "origami_recipe_growth.json").read_text())
    s = raw["settings"]
    runs, curves = [], []
    for r in raw["runs"]:
        row = raw["summary"][f"{r['arm']} seed {r['seed']}"]
        reach = {_THRESHOLDS[label]: None if x is None else (x["step"], x["vs_scratch"])
                 for label, x in row["reach"].items()}
        runs.append(RecipeRun(_RECIPE_NAMES[r["arm"]], r["seed"], r["compute"], r["final"]["loss"],
                              r["final"]["exact_match"], reach))
        curves.append(GrowthCurve(_RECIPE_NAMES[r["arm"]], r["seed"], [p["compute"] for p in r["curve"]],
                                  [p["loss"] for p in r["curve"]], [p["exact_match"] for p in r["curve"]],
                                  growth_points(r["stages"])))
    return RecipeGrowthResults(Config(**raw["recipe_config"]), Config(**raw["small_config"]),
                               raw["recipe_parameters"], raw["small_parameters"], raw["runs"][0]["steps"],
                               raw["data"]["n_train"], raw["data"]["n_val"], s["eval_every"], s["seeds"],
                               runs, curves)
