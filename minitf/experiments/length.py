"""Length generalisation (inputs longer than trained on): the stored `length_study.json` as rows.

`load_length_study()` reads what `bench/length_study.py` wrote and returns a `LengthStudy`: one
`LengthArm` per arm (a layout, its RoPE frequencies, randomised position offsets or not), with the
exact match per length bucket over its seeds. Trained on inputs of 1-12 bytes, tested on 1-24.

    study = minitf.experiments.length.load_length_study()
    study                       # the table: arm, parameters, exact match per bucket (min over seeds)
    study["fast, ω=2π/27"].buckets["21-24"]   # (min, median, max) over the seeds
    study.solved()              # arms with >= 99 % on 13-24 for every seed
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from . import RESULTS

LENGTH_STUDY_JSON = RESULTS / "length_study.json"
GOAL = 0.99


@dataclass(frozen=True)
class LengthArm:
    name: str
    what: str
    params: int
    steps: int
    seeds: tuple[int, ...]
    buckets: dict[str, tuple[float, float, float]]  # "13-16" → (min, median, max) over the seeds
    exact_13_24: tuple[float, ...]                  # exact match on all of 13-24, one per seed
    by_length: dict[int, float]                     # input length → median exact match over seeds
    config: dict

    @property
    def solved(self) -> bool:
        """>= 99 % exact match on lengths 13-24 for every seed."""
        return min(self.exact_13_24) >= GOAL


@dataclass
class LengthStudy:
    arms: dict[str, LengthArm]
    buckets: list[str]
    settings: dict
    command: str

    def __getitem__(self, name: str) -> LengthArm:
        return self.arms[name]

    def rows(self) -> list[dict]:
        return [{"arm": a.name, "params": a.params, "steps": a.steps, "seeds": len(a.seeds),
                 **{b: a.buckets[b] for b in self.buckets}, "solved": a.solved}
                for a in self.arms.values()]

    def solved(self) -> list[str]:
        return [n for n, a in self.arms.items() if a.solved]

    def __repr__(self):
        return self.table()

    def table(self) -> str:
        """Arm, parameters, and exact match per bucket as min–max over the seeds."""
        head = f"{'arm':36} {'params':>7} " + " ".join(f"{b:>13}" for b in self.buckets)
        lines = [head]
        for a in self.arms.values():
            cells = " ".join(f"{a.buckets[b][0]:6.1%}–{a.buckets[b][2]:6.1%}" for b in self.buckets)
            lines.append(f"{a.name:36} {a.params:7,} {cells}")
        return "\n".join(lines)

    def plot(self):
        """A row per arm, a column per length bucket: the colour is the median exact match over the
        seeds (the key on the right), the text min–max; a bold name holds past 12 bytes for every seed."""
        from matplotlib.figure import Figure

        arms = list(self.arms.values())
        fig = Figure(figsize=(7.7, 0.3 * len(arms) + 1.2), layout="constrained")
        ax = fig.subplots()
        grid = [[a.buckets[b][1] for b in self.buckets] for a in arms]
        image = ax.imshow(grid, cmap="viridis", vmin=0, vmax=1, aspect="auto")
        for y, a in enumerate(arms):
            for x, b in enumerate(self.buckets):
                low, _, high = a.buckets[b]
                ax.text(x, y, f"{low:.0%}–{high:.0%}", ha="center", va="center", fontsize=9,
                        color="black" if a.buckets[b][1] > 0.6 else "white")
        ax.set_xticks(range(len(self.buckets)), [f"{b} bytes" for b in self.buckets], fontsize=9)
        ax.xaxis.tick_top()
        ax.set_yticks(range(len(arms)), [f"{a.name} ({a.params:,})" for a in arms], fontsize=9)
        for label, a in zip(ax.get_yticklabels(), arms):
            label.set_fontweight("bold" if a.solved else "normal")
        ax.set_xlabel("trained on 1-12 bytes; a cell: min–max over the seeds; bold: every seed ≥ 99 % past 12",
                      fontsize=9)
        bar = fig.colorbar(image, ax=ax, shrink=0.6)
        bar.set_label("exact match, median over the seeds", fontsize=9)
        bar.ax.tick_params(labelsize=9)
        return fig



def load_length_study(path: str | Path = LENGTH_STUDY_JSON) -> LengthStudy:
    doc = json.loads(Path(path).read_text())
    arms = {}
    for name, c in doc["arms"].items():
        runs = [doc["runs"][k] for k in c["runs"]]
        lengths = sorted({int(n) for r in runs for n in r["by_length"]})
        med = {n: sorted(r["by_length"][str(n)] for r in runs)[len(runs) // 2] for n in lengths}
        arms[name] = LengthArm(
            name=name, what=c["what"], params=c["params"], steps=c["steps"], seeds=tuple(c["seeds"]),
            buckets={b: (v["min"], v["median"], v["max"]) for b, v in c["buckets"].items()},
            exact_13_24=tuple(r["exact_13_24"] for r in runs), by_length=med, config=c["config"])
    return LengthStudy(arms, doc["buckets"], doc["settings"], doc["command"])
