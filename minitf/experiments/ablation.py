"""The ablation ladder (notebooks 04 and 11): `load_ablation()` reads the stored `ablation.json` (written
by bench/ablation.py) as an `Ablation`, one `Row` per task, rung and variant, averaged over the
random seeds; notebooks print it or plot it and never touch the JSON.

    ladder = minitf.results.load_ablation()
    ladder                      # the table, both tasks side by side
    ladder.row("copy", "no FFN").exact_match
    ladder.plot()               # exact match per rung; loss with the baselines as lines
"""
from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass, replace
from pathlib import Path

from . import RESULTS


ABLATION_JSON = RESULTS / "ablation.json"


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
        """The same results restricted to some rungs, e.g. ladder.only("tiny 2×2") for notebook 11."""
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
