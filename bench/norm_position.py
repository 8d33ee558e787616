"""Pre-norm against post-norm on notebook 04's copy task, seeds 0–4, with per-layer gradient norms;
and seed 0 of each without residual connections (04's "Try this").

    python bench/norm_position.py           # minitf/experiments/stored/norm_position.json and .md (about a minute)
    python bench/norm_position.py --quick   # seed 0, 20 steps, to /tmp/minitf-bench-norm_position

`make bench` runs it (its `norm_position` section). The training itself is
minitf.experiments.norm_position.run, so notebook 04 reads what this stores and trains nothing.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

import torch  # noqa: E402

from minitf.experiments import norm_position  # noqa: E402
from reporting import text_report  # noqa: E402
from store import add_study_arguments, open_study  # noqa: E402

COMMAND = "python bench/norm_position.py"
SEEDS = range(5)


def report(doc: dict) -> str:
    study = norm_position.NormPositionStudy(doc["runs"], doc["command"], doc["length_oracle"], doc["unigram"])
    return text_report("Pre-norm against post-norm on the copy task (notebook 04)",
                       f"`{doc['command']}`, one thread: each layout from each seed, and seed 0 of each "
                       "without residual connections; held-out loss after the last step, and each layer's "
                       "gradient norm before clipping.", study.table())


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_study_arguments(p, "norm_position", quick_help="seed 0 of each layout for 20 steps, to /tmp")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    seeds, steps = ([0], 20) if args.quick else (SEEDS, norm_position.STEPS)
    runs = [norm_position.run(layout, seed, steps) for seed in seeds for layout in ("post", "pre")]
    runs += [norm_position.run(layout, 0, steps, residual=False) for layout in ("post", "pre")]
    runs.sort(key=lambda r: (not r["residual"], r["layout"], r["seed"]))
    oracle, unigram = norm_position.baselines()
    store = open_study("norm_position", args)
    store.doc.update({"command": COMMAND + " --quick" * args.quick, "length_oracle": oracle,
                      "unigram": unigram, "runs": runs})
    store.save(report(store.doc))
    print(report(store.doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
