"""The fast language-model recipe, trick by trick (bench/lm_fast.py, notebook 14): `load_lm_fast()`."""
from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path

from . import RESULTS


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
