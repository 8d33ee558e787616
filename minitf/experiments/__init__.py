"""Stored benchmark results and their readers: rows, readable tables and figures for the
notebooks. Imports the core only.

One module per study (ablation, origami_growth, exact_copies, lm_growth, growth_verdict, lm_fast,
lm_envelope, length, smallest, norm_position, train_seeds); `results` gathers the readers the notebooks reach
as `minitf.results.load_…`. A few measure live in seconds instead, so a notebook shows one call, not
its code: 02's `rope_scores`, 03's `without_mask` and `score_scale`, 04's `residuals`."""
from importlib import resources
from pathlib import Path

# the stored results: package data, so an installed minitf (a wheel, not only a checkout) reads
# them too; `make bench` writes them
RESULTS = Path(str(resources.files(__package__).joinpath("stored")))
