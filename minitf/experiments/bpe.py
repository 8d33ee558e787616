"""Bytes or BPE? (bench/bpe.py, notebook 15): `load_bpe()` reads the stored comparison.

lm-fast's model on bytes and on BPE tokens of 512, 1,024 and 2,048, trained at equal time and at
equal FLOPs, scored in bits per byte of tiny Shakespeare's last 10 %, three seeds each.
"""
from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path

from . import RESULTS

BUDGETS = {"time": "equal training time (2 threads)", "flops": "equal training FLOPs"}


@dataclass(frozen=True)
class BPEArm:
    """One tokenizer's model: what it costs and what its tokens hold."""
    name: str
    vocab: int
    params: int
    embed_head_params: int       # the embedding table and the output head: grow with the vocabulary
    flops_per_token: int
    bytes_per_token: float       # on the validation split
    context_bytes: float         # 64 tokens, in bytes
    s_per_step: float            # the probe: seconds per training step, 2 threads
    train_tokens: int
    unused_ids: int              # ids training never reads
    median_count: int            # how often the median id in use occurs in training


@dataclass(frozen=True)
class BPERow:
    """One arm at one budget: its steps and each seed's bits per byte."""
    budget: str
    arm: str
    steps: int
    bytes_trained: float         # steps x batch x context x bytes per training token
    bits: list[float]            # per seed

    @property
    def median(self) -> float:
        return statistics.median(self.bits)


@dataclass(frozen=True)
class BPEResults:
    command: str
    date: str
    cpu: str
    isa: str
    load_range: str
    tokenizer_speed: dict
    arms: dict[str, BPEArm]
    rows: list[BPERow]

    def row(self, budget: str, arm: str) -> BPERow:
        return next(r for r in self.rows if r.budget == budget and r.arm == arm)

    def best(self, budget: str) -> BPERow:
        """The arm with the lowest median bits per byte at that budget."""
        return min((r for r in self.rows if r.budget == budget), key=lambda r: r.median)

    def table(self) -> str:
        """Every arm at both budgets: steps, bytes trained on, bits per byte (median, min–max)."""
        lines = [f"{'budget':<12} {'arm':<9} {'steps':>5} {'bytes seen':>10}  bits/byte (3 seeds: median, min-max)"]
        for r in self.rows:
            lines.append(f"equal {r.budget:<6} {r.arm:<9} {r.steps:>5} {r.bytes_trained / 1e6:>8.2f} M  "
                         f"{r.median:.3f} ({min(r.bits):.3f}-{max(r.bits):.3f})")
        return "\n".join(lines)

    def costs(self) -> str:
        """What each tokenizer costs and holds: parameters, context in bytes, data per id."""
        lines = [f"{'arm':<9} {'vocab':>5} {'parameters':>10} {'embed+head':>10} {'bytes/token':>11} "
                 f"{'context':>7} {'ms/step':>7} {'training tokens':>15} {'median count':>12}"]
        for a in self.arms.values():
            lines.append(f"{a.name:<9} {a.vocab:>5,} {a.params:>10,} {a.embed_head_params:>10,} "
                         f"{a.bytes_per_token:>11.2f} {a.context_bytes:>5.0f} B {1000 * a.s_per_step:>7.0f} "
                         f"{a.train_tokens:>15,} {a.median_count:>12,}")
        return "\n".join(lines)


def load_bpe(path: Path | None = None) -> BPEResults:
    doc = json.loads(Path(path or RESULTS / "bpe.json").read_text(encoding="utf-8"))
    arms = {name: BPEArm(name, f["vocab"], f["params"], f["embed_head_params"], f["flops_per_token"],
                         f["bytes_per_token_val"], f["context_bytes"], doc["probe"][name]["s_per_step"],
                         f["train_tokens"], f["unused_ids"], f["median_count_of_used_id"])
            for name, f in doc["arms"].items()}
    rows = []
    for budget in BUDGETS:
        for name, arm in arms.items():
            runs = [r for k, r in sorted(doc["runs"].items()) if k.startswith(f"{budget}/{name}/")]
            if runs:
                steps = runs[0]["steps"]
                trained = steps * 24 * 64 * doc["arms"][name]["bytes_per_token_train"]
                rows.append(BPERow(budget, name, steps, trained, [r["bits_per_byte"] for r in runs]))
    return BPEResults(doc.get("command", ""), doc.get("date", ""), doc.get("cpu", ""), doc.get("isa", ""),
                      doc.get("load_range", ""), doc["tokenizer_speed"], arms, rows)


def load_bpe_model():
    """(model, tokenizer): `--recipe lm-fast-bpe`'s seed-0 run, stored beside the comparison
    (stored/bpe.pt, made by `python -m minitf train --recipe lm-fast-bpe --out
    minitf/experiments/stored/bpe.pt`), and the BPE it reads, from its checkpoint."""
    from ..core.bpe import BPE
    from ..core.checkpoint import load
    model = load(RESULTS / "bpe.pt")
    return model, BPE.from_dict(model.metadata["tokenizer"])
