"""How small can it be? The tiny shift sweep's stored results and the pictures of notebook 11.

`load_tiny_sweep()` reads the stored `tiny_sweep.json` (written by `bench/tiny_sweep.py`) and
returns a `TinySweep`: one `SweepConfig` per configuration, summarised over its random seeds, the
Pareto front and the smallest solver. Notebooks print it or plot it; they never touch the JSON.

    sweep = minitf.smallest.load_tiny_sweep()
    sweep                       # the table: parameters, held-out exact match, seeds solved
    sweep.ablation()            # from the smallest solver, one change at a time
    sweep.plot()                # parameters vs held-out exact match, every seed a dot

`draw_position_ids` and `plot_offset_scores` draw the two ideas behind it: coupled position ids
turn shift's length-dependent offset into a constant one, and a head needs two or more RoPE
frequencies to single out one offset among twelve.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch

from ..core.rope import alias_margin, position_ids
from ..core.tokens import EOS, TAB, byte_label
from . import RESULTS

TINY_SWEEP_JSON = RESULTS / "tiny_sweep.json"
GROUP_COLOURS = {"pareto": "#1b9e77", "sequence": "#7570b3", "ablation": "#d95f02"}
GROUP_LABELS = {"pareto": "coupled ids, tied head, 1 layer (the pareto group)",
                "sequence": "positions 0, 1, 2, … (2 layers, tied)",
                "ablation": "ablation: one change from the smallest solver, or the seed + …"}


@dataclass(frozen=True)
class SweepConfig:
    """One configuration of the sweep, over its random seeds."""
    name: str
    group: str            # pareto, sequence or ablation
    what: str             # the configuration in words
    params: int           # count_parameters: every parameter, embeddings included
    exact: tuple[float, ...]  # held-out exact match, one per seed
    exact_median: float
    solved_seeds: int     # seeds with >= 99 % held-out exact match
    first_step_99: float | None  # median first validation step with >= 99 %, over the seeds that got there
    steps: int
    cpu_seconds: float    # median training CPU time, one thread


@dataclass
class TinySweep:
    configs: dict[str, SweepConfig]
    front: list[str]           # the Pareto front, smallest first
    smallest_solver: str | None
    settings: dict
    command: str

    def __getitem__(self, name: str) -> SweepConfig:
        return self.configs[name]

    def table(self, groups=("pareto", "sequence")) -> str:
        rows = [c for c in self.configs.values() if c.group in groups]
        rows.sort(key=lambda c: (groups.index(c.group), c.params))
        return _table(rows)

    def ablation(self) -> str:
        """From the smallest solver, one change at a time; then the seed with ingredients added."""
        return _table([c for c in self.configs.values() if c.group == "ablation"])

    def __repr__(self):
        return self.table()

    def plot(self):
        """Parameters vs held-out exact match for the sweep's two groups (coupled ids, and the usual
        numbering): each seed a small dot, the median a large one, the Pareto front as a line; the
        key below the axes. The ablation has a figure of its own (`plot_ablation`). A Figure."""
        from matplotlib.figure import Figure
        from matplotlib.lines import Line2D

        fig = Figure(figsize=(9, 5.4))
        fig.subplots_adjust(left=0.09, right=0.97, bottom=0.27, top=0.93)
        ax = fig.subplots()
        shown = [c for c in self.configs.values() if c.group in ("pareto", "sequence")]
        for c in shown:
            colour = GROUP_COLOURS[c.group]
            ax.scatter([c.params] * len(c.exact), [100 * e for e in c.exact], s=16, color=colour,
                       alpha=0.45, zorder=2)
            ax.scatter([c.params], [100 * c.exact_median], s=70, color=colour, edgecolor="black",
                       linewidth=0.6, zorder=3)
            if c.name != self.smallest_solver:  # (named apart, with an arrow)
                # a name on the Pareto front sits above its point, folded after its comma so that it
                # ends before the dashed step climbs to the next point
                on_front = c.name in self.front
                ax.annotate(c.name.replace(", ", ",\n") if on_front else c.name, (c.params, 100 * c.exact_median),
                            xytext=(3, 6) if on_front else (7, -3), textcoords="offset points", fontsize=10,
                            color=colour, zorder=4, va="bottom" if on_front else "baseline")
        front = [self.configs[n] for n in self.front if n in {c.name for c in shown}]
        ax.step([c.params for c in front], [100 * c.exact_median for c in front], where="post",
                color="0.3", lw=1.2, ls="--", zorder=1)
        if self.smallest_solver:
            s = self.configs[self.smallest_solver]
            ax.annotate(f"smallest solver: {s.name}\n{s.params:,} parameters",
                        (s.params, 100 * s.exact_median), xytext=(40, -70), textcoords="offset points",
                        fontsize=10, arrowprops=dict(arrowstyle="->", color="0.2"))
        ax.set_xscale("log")
        sizes = [c.params for c in shown]
        ax.set_xlim(min(sizes) / 1.08, max(sizes) * 1.45)  # room for the names on the right
        ax.axhline(99, color="red", lw=0.8, ls=":")
        ax.text(0.005, 99, " 99 %", color="red", fontsize=10, ha="left", va="bottom",
                transform=ax.get_yaxis_transform())
        ax.set_xlabel("parameters (embedding and head included; log scale)", fontsize=10)
        ax.set_ylabel("held-out exact match (%)", fontsize=10)
        ax.set_ylim(-3, 108)
        ax.tick_params(labelsize=10)
        ax.xaxis.set_major_formatter(lambda x, _: f"{x:,.0f}")
        ax.xaxis.set_minor_formatter(lambda x, _: f"{x:,.0f}" if str(int(round(x)))[0] in "2358" else "")
        ax.tick_params(axis="x", which="minor", labelsize=9)
        ax.grid(alpha=0.3)
        handles = [Line2D([], [], marker="o", ls="", color=GROUP_COLOURS[g], markeredgecolor="black",
                          markersize=8, label=GROUP_LABELS[g]) for g in ("pareto", "sequence")
                   if any(c.group == g for c in shown)]
        handles += [Line2D([], [], marker="o", ls="", color="0.5", alpha=0.45, markersize=5,
                           label="one random seed (large: the median)"),
                    Line2D([], [], color="0.3", ls="--", label="Pareto front (median)"),
                    Line2D([], [], color="red", ls=":", label="99 % exact: solved")]
        fig.legend(handles=handles, fontsize=10, loc="lower center", ncol=2, frameon=False,
                   bbox_to_anchor=(0.5, 0.0))
        ax.set_title("How small can it be? Shift, held-out exact match against size", fontsize=11)
        return fig

    def plot_ablation(self):
        """The ablation as bars: each arm's median held-out exact match (its seeds as dots), the
        arms that change one thing of the smallest solver apart from those that add to the seed.
        A Figure."""
        from matplotlib.figure import Figure
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch

        arms = [c for c in self.configs.values() if c.group == "ablation"]
        kinds = {"from the smallest solver, one change": GROUP_COLOURS["ablation"],
                 "the seed's layout, ingredients added": GROUP_COLOURS["sequence"]}
        height = 0.42 * len(arms) + 1.9
        fig = Figure(figsize=(9, height))
        fig.subplots_adjust(left=0.34, right=0.97, bottom=1.25 / height, top=1 - 0.4 / height)
        ax = fig.subplots()
        for y, c in enumerate(arms):
            colour = list(kinds.values())[c.name.startswith("seed")]
            ax.barh(y, 100 * c.exact_median, color=colour, alpha=0.85, height=0.65)
            ax.scatter([100 * e for e in c.exact], [y] * len(c.exact), s=18, color="black", zorder=3)
            ax.text(103, y, f"{c.exact_median:.0%}", va="center", fontsize=10, color="0.15")
        ax.set_yticks(range(len(arms)), [f"{c.name}  ({c.params:,})" for c in arms], fontsize=10)
        ax.invert_yaxis()
        ax.axvline(99, color="red", lw=0.8, ls=":")
        ax.set_xlim(0, 114)
        ax.set_xticks([0, 20, 40, 60, 80, 100])
        ax.set_xlabel("held-out exact match (%), median of the seeds", fontsize=10)
        ax.tick_params(axis="x", labelsize=10)
        ax.grid(axis="x", alpha=0.3)
        handles = [Patch(color=colour, alpha=0.85, label=kind) for kind, colour in kinds.items()]
        handles += [Line2D([], [], marker="o", ls="", color="black", markersize=5, label="one random seed"),
                    Line2D([], [], color="red", ls=":", label="99 %")]
        fig.legend(handles=handles, fontsize=10, loc="lower center", ncol=2, frameon=False,
                   bbox_to_anchor=(0.5, 0.0))
        ax.set_title("What each ingredient adds (arm, parameters)", fontsize=11)
        return fig


def _table(rows: list[SweepConfig]) -> str:
    width = max(len(c.name) for c in rows)
    lines = [f"{'configuration':<{width}}  {'params':>6}  {'exact (median)':>14}  {'seeds solved':>12}"
             f"  {'≥ 99 % at step':>14}"]
    for c in rows:
        first = "–" if c.first_step_99 is None else f"{c.first_step_99:,.0f}"
        lines.append(f"{c.name:<{width}}  {c.params:>6,}  {c.exact_median:>14.1%}  "
                     f"{c.solved_seeds:>5} of {len(c.exact)}  {first:>14}")
    return "\n".join(lines)


def load_tiny_sweep(path: Path | str = TINY_SWEEP_JSON) -> TinySweep:
    doc = json.loads(Path(path).read_text())
    configs = {}
    for name, c in doc["configs"].items():
        runs = [r for key, r in doc["runs"].items() if key.startswith(f"{c['group']}/{name}/seed")]
        exact = tuple(r["exact_match"] for r in sorted(runs, key=lambda r: r["seed"]))
        configs[name] = SweepConfig(name, c["group"], c["what"], c["params"], exact, c["exact_median"],
                                    c["solved_seeds"], c["first_step_99_median"], c["steps"],
                                    c["train_cpu_s_median"])
    return TinySweep(configs, doc["pareto_front"], doc.get("smallest_solver"), doc["settings"],
                     doc["command"])


# --- the pictures -----------------------------------------------------------------------------------

def draw_position_ids(inputs=(b"abc", b"hello")):
    """Each input's sequence `input TAB output EOS` as boxes, with both numberings under them and
    an arrow from the byte that predicts output 0 to its source, the first input byte; returns a
    matplotlib Figure. Under sequence ids the arrow spans the input's length, under coupled ids it
    is always +1."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch, Rectangle

    from ..core.data import shift_bytes

    colours = {"input": "#d9d9d9", "TAB": "#6baed6", "output": "#fdae6b", "EOS": "#bdbdbd"}
    seqs = [[*x, TAB, *shift_bytes(x), EOS] for x in inputs]
    T = max(len(s) for s in seqs)
    step = 4.3  # rows of drawing per example: the arrow and its note, the boxes, two rows of ids
    width, height = T * 0.6 + 2.6, len(seqs) * step * 0.5 + 0.4
    fig = Figure(figsize=(width, height))
    ax = fig.add_axes([2.0 / width, 0.05, 1 - 2.1 / width, 1 - 0.5 / height])
    for e, (x, seq) in enumerate(zip(inputs, seqs)):
        y, n = e * step + 2.0, len(x)  # y: the row of boxes
        ids = torch.tensor([seq])
        numbering = {"sequence id": position_ids(ids, "sequence")[0].tolist(),
                     "coupled id": position_ids(ids, "coupled")[0].tolist()}
        for t, b in enumerate(seq):
            role = "input" if t < n else "TAB" if b == TAB else "EOS" if t == len(seq) - 1 else "output"
            ax.add_patch(Rectangle((t - 0.45, y - 0.45), 0.9, 0.9, facecolor=colours[role],
                                   edgecolor="0.4"))
            ax.text(t, y, byte_label(b), ha="center", va="center", fontsize=15, family="monospace")
        for r, (label, pos) in enumerate(numbering.items()):
            style = dict(color="#08519c", weight="bold") if r else dict(color="0.2")
            for t in range(len(seq)):
                ax.text(t, y + 0.85 + 0.6 * r, str(pos[t]), ha="center", va="center", fontsize=12, **style)
            ax.text(-0.7, y + 0.85 + 0.6 * r, label, ha="right", va="center", fontsize=11, **style)
        # the TAB (position n) predicts output 0, whose source is input 0 (position 0)
        ax.annotate("", xy=(0, y - 0.5), xytext=(n, y - 0.5),
                    arrowprops=dict(arrowstyle="->", color="#cb181d", lw=1.6,
                                    connectionstyle="arc3,rad=0.3"))
        back = numbering["sequence id"][n] - numbering["sequence id"][0]
        ax.text(-0.45, y - 1.55, f"TAB reads input 0 to write output 0: {back} back in sequence "
                f"ids (the length), +1 in coupled ids", ha="left", va="center", fontsize=10,
                color="#cb181d")
    ax.set(xlim=(-0.6, T - 0.4), ylim=(len(seqs) * step - 0.6, 0))
    ax.axis("off")
    fig.legend(handles=[Patch(facecolor=c, edgecolor="0.4", label=k) for k, c in colours.items()],
               loc="upper center", ncol=4, fontsize=10, frameon=False)
    return fig


def offset_profile(theta, offsets=range(0, 13)) -> tuple[list[float], float]:
    """The best single-offset score profile of a head with frequencies theta: Σ_i a_i·cos(θ_i·m)
    for m in offsets, with the weights a that maximise the margin over offsets 1–12 (rope.alias_margin),
    and that margin."""
    margin, a = alias_margin(theta, weights=True)
    theta = torch.as_tensor(theta, dtype=torch.float64).flatten()
    m = torch.tensor(list(offsets), dtype=torch.float64)
    return (a @ torch.cos(theta[:, None] * m[None, :])).tolist(), margin


def plot_offset_scores(heads: dict):
    """heads: label → frequencies (rad/position). For each, the score a head can give relative
    offset m (offset 0 scores 1) at its sharpest; returns a matplotlib Figure."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9.5, 4.3))
    fig.subplots_adjust(left=0.09, right=0.7, bottom=0.14, top=0.9)
    ax = fig.subplots()
    offsets = list(range(13))
    for (label, theta), colour in zip(heads.items(), ("#cb181d", "#2171b5", "#238b45", "#6a51a3")):
        profile, margin = offset_profile(theta)
        ax.plot(offsets, profile, "o-", color=colour, lw=1.6, ms=5,
                label=f"{label}\nmargin {margin:.3f}")
    ax.axhline(1, color="0.5", lw=0.8, ls=":")
    ax.set_xticks(offsets)
    ax.set_xlabel("offset Δ of a key from the target key (positions)", fontsize=10)
    ax.set_ylabel("score at offset Δ (the target = 1)", fontsize=10)
    ax.tick_params(labelsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=9, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False,
              title="head (margin: 1 − closest\ncompetitor over Δ = 1…12)", title_fontsize=9)
    ax.set_title("Can one head pick its target (Δ = 0) and no other key?", fontsize=11)
    return fig
