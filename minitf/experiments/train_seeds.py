"""Notebook 08's training run on ten random starts (written by bench/train_seeds.py): the held-out
exact match every 25 steps, per seed. One run shows *that* the model learns; the spread shows how
much *when* depends on the random start.

    spread = minitf.experiments.train_seeds.load()
    spread.first_step(0.5)     # {seed: the first measured step with exact match >= 50 %}
    print(spread.summary())    # what notebook 08 prints
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

STORED = Path(str(resources.files(__package__).joinpath("stored"))) / "train_seeds.json"

# notebook 08's recipe: notebook 05's first working model (positions numbered 0, 1, 2, …, tied head)
# on inputs of one length, 8 bytes, so that the byte to copy sits a fixed distance back
RECIPE = {
    "config": dict(d_model=8, n_heads=2, n_layers=1, d_ff=16, norm_position="pre", dropout=0.0,
                   rope_base=20.0, tie_embeddings=True),
    "data": dict(n_train=10000, n_val=200, min_len=8, max_len=8, repeats=0.33, val_repeats=0.33),
    "steps": 300, "batch_size": 64, "lr": 4e-2, "warmup": 20, "weight_decay": 0.01,
    "eval_every": 25, "seeds": list(range(10)),
}


@dataclass(frozen=True)
class SeedSpread:
    runs: list[dict]   # per seed: steps, exact_match, loss, seconds
    command: str

    @property
    def seeds(self) -> list[int]:
        return [r["seed"] for r in self.runs]

    def first_step(self, level: float) -> dict[int, int | None]:
        """{seed: the first measured step whose exact match is >= level} (None: never)."""
        return {r["seed"]: next((s for s, e in zip(r["steps"], r["exact_match"]) if e >= level), None)
                for r in self.runs}

    def final(self) -> dict[int, float]:
        """{seed: exact match at the last step}."""
        return {r["seed"]: r["exact_match"][-1] for r in self.runs}

    def summary(self, yours: int = 1) -> str:
        """When exact match first passes 50 %, and which starts reach 99 %: what 08's sentence says."""
        half, solved = self.first_step(0.5), self.first_step(0.99)
        stalled = "; ".join(f"seed {s} ends at {e:.0%}" for s, e in self.final().items() if solved[s] is None)
        return (f"first step with exact match ≥ 50 %: {min(half.values())}–{max(half.values())}\n"
                f"reached 99 %: {sum(s is not None for s in solved.values())} of {len(solved)} starts; {stalled}\n"
                f"seed {yours}, yours, among those that reached 99 %: {solved[yours] is not None}")


def load(path: str | Path = STORED) -> SeedSpread:
    data = json.loads(Path(path).read_text())
    return SeedSpread(data["runs"], data["command"])
