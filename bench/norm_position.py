"""Pre-norm against post-norm on notebook 04's copy task, seeds 0–4, with per-layer gradient norms;
and seed 0 of each without residual connections (04's "Try this").

    python bench/norm_position.py      # minitf/experiments/stored/norm_position.json (about a minute)
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from minitf.experiments import norm_position  # noqa: E402

COMMAND = "python bench/norm_position.py"
SEEDS = range(5)


def main() -> None:
    torch.set_num_threads(1)
    runs = [norm_position.run(layout, seed) for seed in SEEDS for layout in ("post", "pre")]
    runs += [norm_position.run(layout, 0, residual=False) for layout in ("post", "pre")]
    runs.sort(key=lambda r: (not r["residual"], r["layout"], r["seed"]))
    oracle, unigram = norm_position.baselines()
    norm_position.STORED.write_text(json.dumps(
        {"command": COMMAND, "length_oracle": oracle, "unigram": unigram, "runs": runs}) + "\n")
    print(norm_position.load_norm_position())


if __name__ == "__main__":
    main()
