"""Stored benchmark results, ready for a notebook: rows, a readable table and a figure.

`load_ablation()` reads the stored `ablation.json` (written by `bench/ablation.py`) and returns
an `Ablation`: one `Row` per task, rung and variant, averaged over the random seeds. Notebooks print
it or plot it; they never touch the JSON.

    ladder = minitf.results.load_ablation()
    ladder                      # the table, both tasks side by side
    ladder.row("copy", "no FFN").exact_match
    ladder.plot()               # exact match per rung; loss with the baselines as lines

The results travel with the package: `make bench` writes them into `minitf/experiments/stored/`,
which is package data, so an installed minitf (a wheel, not only a checkout) reads them too. Every
reader also takes the path of another result file (`load_ablation("my_ablation.json")`).
"""
from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path

from ..core.config import Config

RESULTS = Path(str(resources.files(__package__).joinpath("stored")))  # what `make bench` stores
ABLATION_JSON = RESULTS / "ablation.json"
# the tiny model after 1,500 steps on shift, as bench/origami_growth.py trained and grew it
GROWTH_START = RESULTS / "origami_seed_model.pt"
BASELINE_LABELS = {"uniform_256": "uniform 256", "uniform_96": "uniform 95+EOS",
                   "unigram": "unigram", "length_oracle": "length oracle"}


@dataclass(frozen=True)
class Row:
    """One variant on one task, over its random seeds."""
    task: str
    rung: str
    variant: str
    change: str           # what differs from the base, in words
    seeds: tuple[int, ...]
    exact_match: float    # mean over the seeds; held-out, greedy generation to EOS
    exact_min: float
    exact_max: float
    loss: float           # mean held-out loss (nats per output byte and EOS)
    char_accuracy: float  # mean, teacher-forced
    params: int
    train_seconds: float  # mean wall time of training (one thread)


@dataclass(frozen=True)
class Ablation:
    rows: list[Row]
    baselines: dict[str, dict[str, float]]  # task → {uniform_256, uniform_96, unigram, length_oracle}
    rungs: dict[str, list[str]]             # rung → its variants, in table order
    settings: dict
    date: str
    cpu_seconds: float  # training CPU time of all the runs together (one thread each)

    @classmethod
    def from_dict(cls, doc: dict) -> "Ablation":
        """Average the stored runs per task and variant; rungs share the base's runs."""
        runs: dict[tuple[str, str], list[dict]] = {}
        kept = [r for r in doc["runs"] if r.get("settings", doc["settings"]) == doc["settings"]]
        for r in kept:
            runs.setdefault((r["task"], r["variant"]), []).append(r)
        tasks = [t for t in doc["baselines"] if any(k[0] == t for k in runs)]
        rows = []
        for task in tasks:
            for rung, variants in doc["rungs"].items():
                for variant in variants:
                    group = sorted(runs.get((task, variant), []), key=lambda r: r["seed"])
                    if not group:
                        continue
                    mean = lambda key: statistics.fmean(r[key] for r in group)
                    exact = [r["exact_match"] for r in group]
                    rows.append(Row(task, rung, variant, doc["variants"][variant]["change"],
                                    tuple(r["seed"] for r in group), mean("exact_match"), min(exact),
                                    max(exact), mean("loss"), mean("char_accuracy"), group[0]["params"],
                                    mean("train_seconds")))
        return cls(rows, doc["baselines"], doc["rungs"], doc["settings"], doc.get("date", "?"),
                   sum(r.get("train_cpu_seconds", 0.0) for r in kept))

    @property
    def tasks(self) -> list[str]:
        return list(dict.fromkeys(r.task for r in self.rows))

    def only(self, *rungs: str) -> "Ablation":
        """The same results restricted to some rungs, e.g. ladder.only("tiny 2×2") for notebook 05."""
        unknown = [r for r in rungs if r not in self.rungs]
        if unknown:
            raise KeyError(f"no rung {unknown[0]!r}; the rungs are {list(self.rungs)}")
        return replace(self, rows=[r for r in self.rows if r.rung in rungs],
                       rungs={r: v for r, v in self.rungs.items() if r in rungs})

    def row(self, task: str, variant: str) -> Row:
        for r in self.rows:
            if r.task == task and r.variant == variant:
                return r
        raise KeyError(f"no results for {variant!r} on {task!r}")

    def _lines(self, markdown: bool) -> list[str]:
        tasks = self.tasks
        keyed = {(r.task, r.rung, r.variant): r for r in self.rows}
        head = ["rung", "variant", "params"] + [f"{t} {what}" for t in tasks for what in ("exact", "loss")]
        body = []
        for rung, variants in self.rungs.items():
            named = False
            for variant in variants:
                found = [keyed.get((t, rung, variant)) for t in tasks]
                if not any(found):
                    continue
                cells = [rung if not named or markdown else "", variant]
                named = True
                cells.append(f"{next(r for r in found if r).params:,}")
                for r in found:
                    cells += ([f"{r.exact_match:.2f} ({r.exact_min:.2f}–{r.exact_max:.2f})", f"{r.loss:.3f}"]
                              if r else ["—", "—"])
                body.append(cells)
        if markdown:
            return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + \
                   ["| " + " | ".join(c) + " |" for c in body]
        widths = [max(len(row[i]) for row in [head] + body) for i in range(len(head))]
        fmt = lambda cells: "  ".join(c.ljust(w) if i < 2 else c.rjust(w)
                                      for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
        return [fmt(head)] + [fmt(c) for c in body]

    def baseline_text(self) -> str:
        return "\n".join(f"{task} baselines (loss): " + ", ".join(
            f"{label} {self.baselines[task][key]:.3f}" for key, label in BASELINE_LABELS.items())
            for task in self.tasks)

    def table(self) -> str:
        """Exact match: mean over the random seeds (min–max); loss: mean, nats per target."""
        seeds = sorted({s for r in self.rows for s in r.seeds})
        return "\n".join([f"held-out exact match, mean (min–max) over random seeds {seeds}; loss in nats",
                          *self._lines(markdown=False), self.baseline_text()])

    def markdown(self, command: str | None = None) -> str:
        """The stored report (ablation.md); `command`: what produced the result, named by its
        writer (the installed package has no bench/ to name)."""
        s, by = self.settings, f" by `{command}`" if command else ""
        return "\n".join([
            "# The ablation ladder: what each component buys", "",
            f"Run {self.date}{by}. Each variant changes one thing in the base "
            f"and trains {s['steps']} steps (batch {s['batch_size']}, lr {s['lr']}, one thread) on "
            f"{s['train_pairs']:,} generated pairs of 1–{s['max_len']} printable bytes (repeats "
            f"{s['repeats']}); evaluated on {s['held_out_pairs']} fresh held-out pairs (repeats included). "
            "Exact match: greedy generation to EOS, mean (min–max) over the random seeds; loss: "
            "held-out cross-entropy per output byte and EOS. The base's runs appear in every rung "
            f"(the same runs). Training took {self.cpu_seconds / 60:.0f} min of CPU time in all "
            f"({len({(r.task, r.variant) for r in self.rows})} task × variant pairs).", "",
            *self._lines(markdown=True), "",
            "Baselines (the loss of predictors that ignore the input, `minitf.baselines`):", "",
            *(f"- {line}" for line in self.baseline_text().splitlines()), "",
            "Variants:", "",
            *(f"- **{v}**: {c}" for v, c in dict((r.variant, r.change) for r in self.rows).items())])

    def __repr__(self):
        return self.table()

    def plot(self, tasks: list[str] | None = None):
        """A matplotlib Figure: exact match per rung (bars: tasks; whiskers: min–max over seeds)
        above the loss on a log scale with the length oracle as a line (the strongest baseline; the
        others, close to it on a log axis, are in the table)."""
        from matplotlib.figure import Figure
        from matplotlib.ticker import NullFormatter

        tasks = tasks or self.tasks
        keyed = {(r.task, r.rung, r.variant): r for r in self.rows}
        slots, ticks, rung_spans, x = [], [], [], 0.0
        for rung, variants in self.rungs.items():
            first = x
            for variant in variants:
                if any((t, rung, variant) in keyed for t in tasks):
                    slots.append((rung, variant, x))
                    ticks.append(variant)
                    x += 1
            rung_spans.append((rung, first, x - 1))
            x += 0.6
        fig = Figure(figsize=(max(6.0, 0.36 * len(slots) + 3.0), 6.4))
        top, bottom = fig.subplots(2, 1, sharex=True)
        width = 0.8 / len(tasks)
        smallest = 1.0
        for k, task in enumerate(tasks):
            xs, em, lo, hi, loss = [], [], [], [], []
            for rung, variant, pos in slots:
                r = keyed.get((task, rung, variant))
                if r:
                    xs.append(pos + (k - (len(tasks) - 1) / 2) * width)
                    em.append(r.exact_match)
                    lo.append(r.exact_match - r.exact_min)
                    hi.append(r.exact_max - r.exact_match)
                    loss.append(max(r.loss, 1e-4))
            top.bar(xs, em, width, yerr=[lo, hi], capsize=2, color=f"C{k}", label=task)
            bottom.bar(xs, loss, width, color=f"C{k}")
            smallest = min([smallest, *loss])
        oracle = statistics.fmean(self.baselines[t]["length_oracle"] for t in tasks)
        bottom.axhline(oracle, color="0.3", lw=1.2, ls="--")
        bottom.text(0.01, oracle * 0.85, f"length oracle {oracle:.2f} (all baselines: see the table)",
                    transform=bottom.get_yaxis_transform(), ha="left", va="top", fontsize=9, color="0.2",
                    bbox={"fc": "white", "ec": "none", "alpha": 0.8, "pad": 1})
        for i, (rung, a, b) in enumerate(rung_spans):
            top.text((a + b) / 2, 1.02, rung.replace(" ", "\n"), ha="center", va="bottom", fontsize=10,
                     fontweight="bold", transform=top.get_xaxis_transform())
            for ax in (top, bottom):
                ax.axvspan(a - 0.45, b + 0.45, color="0.93" if i % 2 else "white", zorder=0)
        top.set_ylim(0, 1.05)
        top.set_ylabel("held-out exact match")
        top.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=9, title="task", title_fontsize=9)
        bottom.set_yscale("log")
        decades = [10.0 ** -k for k in range(math.ceil(-math.log10(smallest / 2)), -1, -1)]  # …, 0.1, 1
        bottom.set_ylim(decades[0], 8)
        bottom.set_yticks(decades, [f"{d:g}" for d in decades])
        bottom.yaxis.set_minor_formatter(NullFormatter())
        bottom.set_ylabel("held-out loss (nats)")
        bottom.set_xticks([pos for _, _, pos in slots], ticks, rotation=60, ha="right", fontsize=9)
        bottom.set_xlim(-0.7, slots[-1][2] + 0.7)
        fig.tight_layout()
        return fig


def load_ablation(path=ABLATION_JSON) -> Ablation:
    """The stored ablation ladder (ablation.json, or the file at `path`), averaged per task and variant."""
    return Ablation.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))


# --- Origami growth (notebook 07): bench/origami_growth.py and bench/origami_recipe_growth.py -------


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
        xs, ys = _mean_curve([([x / budget[c.seed] for x in c.compute], c.loss) for c in runs])
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
                ax.plot(grown, [_at(xs, ys, g) for g in grown], color=colour[arm], **_ring(k))
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
    """bench/origami_recipe_growth.py: growing into RECIPE.md's model, which solves the shift task."""
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
                ax.plot(grown, [_at(xs, c.exact_match, g) for g in grown], color=colours[c.arm],
                        **_ring(list(colours).index(c.arm) - 1))
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


def _growth_points(stages: list[dict]) -> list[float]:
    """The compute at the end of every stage but the last: where the model was grown."""
    done, points = 0.0, []
    for stage in [s for s in stages if "d_model" in s][:-1]:
        done += 6 * stage["parameters"] * stage["tokens"]
        points.append(done)
    return points


def _mean_curve(curves: list) -> tuple[list[float], list[float]]:
    """Mean over seeds of curves evaluated at the same points: (compute, value). Every seed of an
    arm is evaluated at the same steps; its compute differs in the last digits (parameters × tokens
    of slightly different batches), so x is averaged too."""
    n = len(curves)
    xs = [sum(c[0][i] for c in curves) / n for i in range(len(curves[0][0]))]
    ys = [sum(c[1][i] for c in curves) / n for i in range(len(curves[0][1]))]
    return xs, ys


def _at(xs: list[float], ys: list[float], x: float) -> float:
    """y at x on the polyline (xs, ys), x inside its range."""
    for (x0, y0), (x1, y1) in zip(zip(xs, ys), zip(xs[1:], ys[1:])):
        if x0 <= x <= x1:
            return y0 if x1 == x0 else y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return ys[-1]


GROWTH_MARK = {"marker": "o", "ms": 8, "mfc": "none", "mew": 1.8, "ls": ""}  # a ring: where an arm grew


def _ring(k: int) -> dict:
    """The growth ring of the k-th arm in a panel: arms that grow at the same point (the same small
    run) get rings of different sizes, one inside the other, so that each shows."""
    return {**GROWTH_MARK, "ms": 13 - 3 * k}


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
                          [loss for _, loss in r["curve"]], None, _growth_points(r["stages"]))
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
                                  _growth_points(r["stages"])))
    return RecipeGrowthResults(Config(**raw["recipe_config"]), Config(**raw["small_config"]),
                               raw["recipe_parameters"], raw["small_parameters"], raw["runs"][0]["steps"],
                               raw["data"]["n_train"], raw["data"]["n_val"], s["eval_every"], s["seeds"],
                               runs, curves)


# --- bench/lm_growth.py: growing the language model, against scratch at equal FLOPs ----------------

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
    """bench/lm_growth.py: RECIPE.md's language model grown in depth or width, against scratch."""
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
        xs, ys = _mean_curve([(c.compute, c.loss) for c in runs])
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
                    ax.plot([at], [before], color=colour, **_ring(k))
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


# --- notebook 07's answer in one figure ------------------------------------------------------------

def plot_growth_verdict(growth: GrowthResults | None = None, lm_growth: LMGrowthResults | None = None):
    """Does growing pay? Two of the stored measurements, each grown arm at its best against training
    the big model from scratch on the same compute (means over the seeds): left, the tiny model
    grown ×8 in width on shift; right, notebook 09's language model grown from 2 to 4 layers.
    A ring where the model grew; dotted, scratch's final loss. A matplotlib Figure."""
    from matplotlib.figure import Figure

    growth = growth or load_growth()
    lm_growth = lm_growth or load_lm_growth()
    fig = Figure(figsize=(7.6, 3.9), layout="constrained")
    left, right = fig.subplots(1, 2)

    scratch = growth.arm("from scratch")
    best = min((a for a in growth.arms if a is not scratch), key=lambda a: a.loss)
    xs, ys, _ = growth.mean_curve("from scratch")
    left.plot(xs, ys, color="black", lw=2.5)
    xs, ys, grown = growth.mean_curve(best.arm)
    left.plot(xs, ys, color="tab:blue", lw=2)
    left.plot(grown, [_at(xs, ys, g) for g in grown], color="tab:blue", **GROWTH_MARK)
    left.axhline(scratch.loss, color="black", ls=":", lw=1.2)
    left.text(1.0, best.loss - 0.05, f"grown ends at {best.loss:.2f} nats", ha="right", va="top", fontsize=9,
              color="tab:blue")
    left.text(1.0, scratch.loss - 0.04, f"scratch ends at {scratch.loss:.2f}", ha="right", va="top", fontsize=9)
    left.set_ylim(scratch.loss - 0.2, None)
    left.set_title(f"Shift: the tiny model grown ×8 in width\n({best.arm})", fontsize=10)
    left.set_ylabel("held-out loss (nats)", fontsize=9)

    arm = lm_growth.best()
    lo, hi = arm.ratio_range
    xs, ys, _, _ = lm_growth.mean_curve("scratch")
    right.plot(xs, ys, color="black", lw=2.5)
    xs, ys, at, before = lm_growth.mean_curve(arm.name)
    right.plot(xs, ys, color="tab:blue", lw=2)
    right.plot([at], [before], color="tab:blue", **GROWTH_MARK)
    right.axhline(lm_growth.target_loss, color="black", ls=":", lw=1.2)
    right.annotate(f"scratch's final loss reached\nat {lo:.2f}–{hi:.2f} of its FLOPs", xy=((lo + hi) / 2, lm_growth.target_loss),
                   xytext=(0.04, lm_growth.target_loss - 0.09), fontsize=9, color="tab:blue", va="bottom",
                   arrowprops={"arrowstyle": "->", "color": "tab:blue"})
    right.set_ylim(lm_growth.target_loss - 0.1, lm_growth.target_loss + 0.5)
    right.set_title("Language model: 2 → 4 layers\n(deepen after 0.8 of the budget)" if arm.name == "deepen 2→4, τ=0.8"
                    else f"Language model\n({arm.name})", fontsize=10)
    right.set_ylabel("validation loss (nats per byte)", fontsize=9)
    for ax in (left, right):
        ax.set_xlim(0, 1.02)
        ax.set_xlabel("compute (fraction of scratch's)", fontsize=9)
        ax.tick_params(labelsize=9)
    handles = [right.plot([], [], color="black", lw=2.5)[0], right.plot([], [], color="tab:blue", lw=2)[0],
               right.plot([], [], color="tab:blue", **GROWTH_MARK)[0],
               right.plot([], [], color="black", ls=":", lw=1.2)[0]]
    fig.legend(handles, ["the big model from scratch", "grown from a small model", "where it grew",
                         "scratch's final loss"], loc="outside lower center", ncol=2, fontsize=9)
    return fig


# --- bench/lm_fast.py: the fast language-model recipe, trick by trick ------------------------------

@dataclass
class LMFastArm:
    """One arm of bench/lm_fast.py over its seeds: loss on the whole validation split and time."""
    name: str
    spec: dict | str              # config, train and optimizer settings (the reference: its script)
    params: int
    steps: int
    seeds: list[int]
    losses: list[float]           # nats per byte, per seed
    wall_s: list[float]           # training wall seconds, per seed
    cpu_s: list[float]
    ms_per_step: list[float]
    ratios: list[float]           # wall ÷ the reference's in the same round, per seed ([] for it)
    cpu_ratios: list[float]       # CPU seconds ÷ the reference's in the same round

    @property
    def cpu_ratio(self) -> float | None:
        return statistics.median(self.cpu_ratios) if self.cpu_ratios else None

    @property
    def loss(self) -> float:
        return statistics.median(self.losses)

    @property
    def ratio(self) -> float | None:
        return statistics.median(self.ratios) if self.ratios else None


ARM_WIDTH = 30  # characters of an arm's name per line in LMFastResults.table


@dataclass
class LMFastResults:
    """bench/lm_fast.py: `--recipe lm-fast`, one ablation row per trick, and the reference."""
    command: str
    date: str
    load_range: str
    target: float                 # 1.89 nats per byte: nanoGPT's CPU quick-start
    arms: list[LMFastArm]

    def arm(self, name: str) -> LMFastArm:
        return next(a for a in self.arms if a.name == name)

    def paired(self, name: str) -> list[float]:
        """The arm's final loss minus lm-fast's, seed by seed (both saw the same batches)."""
        base = dict(zip(self.arm("lm-fast").seeds, self.arm("lm-fast").losses))
        a = self.arm(name)
        return [x - base[s] for s, x in zip(a.seeds, a.losses) if s in base]

    def delta(self, name: str) -> float:
        """The median over seeds of the paired difference from lm-fast (nats per byte)."""
        return statistics.median(self.paired(name))

    def table(self, width: int = ARM_WIDTH) -> str:
        """One row per arm; a name longer than `width` goes on over the lines below its row, so
        the table stays narrower than a notebook's column (about 110 characters)."""
        import textwrap

        lines = [f"{'arm':<{width}} {'params':>7} {'steps':>5} {'ms/step':>7} {'CPU s':>5} "
                 f"{'val loss (min–max)':>20} {'Δ paired':>8} {'wall÷ref':>8} {'CPU÷ref':>7}"]
        for a in self.arms:
            name, *more = textwrap.wrap(a.name, width, break_long_words=False) or [""]
            ratio = f"{1:>8} {1:>7}" if a.name == "reference" else f"{a.ratio:>8.3f} {a.cpu_ratio:>7.3f}"
            lines.append(f"{name:<{width}} {a.params:>7,} {a.steps:>5} {statistics.median(a.ms_per_step):>7.1f} "
                         f"{statistics.median(a.cpu_s):>5.1f} {a.loss:.4f} ({min(a.losses):.3f}–"
                         f"{max(a.losses):.3f}) {self.delta(a.name):>+8.3f} {ratio}")
            lines += [f"  {line}" for line in more]
        return "\n".join(lines)

    def __repr__(self):
        return self.table()

    def plot(self, names: list[str] | None = None):
        """Left: validation loss per arm (a dot per seed), the 1.89 line. Right: training wall time
        as a fraction of the nanoGPT-style reference's in the same round."""
        from matplotlib.figure import Figure
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch

        arms = [a for a in self.arms if a.name != "reference" and (names is None or a.name in names)]
        fig = Figure(figsize=(9.5, 0.42 * len(arms) + 1.6), layout="constrained")
        ax, bx = fig.subplots(1, 2, sharey=True, gridspec_kw={"width_ratios": [1.2, 1]})
        ys = range(len(arms))
        for y, a in zip(ys, arms):
            ax.plot(a.losses, [y] * len(a.losses), "o", color="C0", alpha=0.7, ms=5)
            ax.plot([a.loss], [y], "|", color="k", ms=14, mew=2)
            bx.barh(y, a.ratio, color="C1" if a.name.startswith("lm-fast") else "C7")
            bx.plot([a.cpu_ratio], [y], "D", color="k", ms=5)
            bx.text(max(a.ratio, a.cpu_ratio) + 0.008, y, f"{a.ratio:.2f}×", va="center", fontsize=9)
        ax.axvline(self.target, color="C3", ls="--", lw=1)
        ax.text(self.target, len(arms) - 0.4, f" nanoGPT's {self.target}", color="C3", fontsize=9)
        ax.set_yticks(list(ys), [a.name for a in arms], fontsize=9)
        ax.invert_yaxis()
        ax.set_xlabel("validation loss (nats/byte; a dot per seed)", fontsize=9)
        bx.axvline(0.25, color="C3", ls=":", lw=1)
        bx.set_xlabel("time ÷ the reference's (same round)", fontsize=9)
        bx.set_xlim(0, max(0.3, max(max(a.ratio, a.cpu_ratio) for a in arms) * 1.3))
        bx.legend(handles=[Patch(color="C1", label="wall time, lm-fast"),
                           Patch(color="C7", label="wall time, one change"),
                           Line2D([], [], marker="D", color="k", ls="", ms=5, label="CPU time"),
                           Line2D([], [], color="C3", ls=":", lw=1, label="goal: 0.25×")],
                  fontsize=9, loc="upper center", bbox_to_anchor=(0.5, -0.06), ncol=2)
        for x in (ax, bx):
            x.tick_params(labelsize=9)
        return fig


def load_lm_fast(path: Path | None = None) -> LMFastResults:
    """The stored result of bench/lm_fast.py (default: the stored one)."""
    raw = json.loads(Path(path or RESULTS / "lm_fast.json").read_text())
    ref = raw["runs"].get("reference", {}).get("runs", [])
    arms = []
    for name, entry in raw["runs"].items():
        runs = entry["runs"]
        if not runs:
            continue
        by_seed = {r["seed"]: r for r in ref}
        pairs = [] if name == "reference" else [(a, by_seed[a["seed"]]) for a in runs if a["seed"] in by_seed]
        arms.append(LMFastArm(name, entry["spec"], runs[0]["params"], runs[0]["steps"],
                              [r["seed"] for r in runs], [r["val_loss"] for r in runs],
                              [r["wall_s"] for r in runs], [r["cpu_s"] for r in runs],
                              [r["ms_per_step"] for r in runs], [a["wall_s"] / b["wall_s"] for a, b in pairs],
                              [a["cpu_s"] / b["cpu_s"] for a, b in pairs]))
    return LMFastResults(raw.get("command", ""), raw.get("date", ""), raw.get("load_range", ""),
                         raw.get("target", 1.89), arms)


# --- bench/lm_envelope.py: the best fixed size at each budget, and growth against it --------------

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
        lines = [f"{'growth arm':<40} {'budget':>6} {'final':>7} {'vs 4L':>7} {'vs envelope':>11}"]
        for name, a in self.rescored.items():
            lines.append(f"{name:<40} {a['budget']:>6} {a['final_loss']:>7.4f} "
                         f"{cell(a['vs_scratch'], a['where_scratch'], a['budget']):>7} "
                         f"{cell(a['vs_envelope'], a['where'], a['budget']):>11}")
        if self.into_best:
            lines.append("into the envelope's best size, 4L d32, from 2L d32:")
            for name, a in self.into_best.items():
                lines.append(f"{name:<40} {a['budget']:>6} {a['final_loss']:>7.4f} "
                             f"{cell(a['vs_scratch'], a['where_scratch'], a['budget']):>7} "
                             f"{cell(a['vs_envelope'], a['where'], a['budget']):>11}")
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


def load_norm_position():
    """04's stored study of pre-norm against post-norm (minitf.experiments.norm_position), under the
    same name as the other stored results: `minitf.results.load_norm_position()`."""
    from .norm_position import load_norm_position as load
    return load()
