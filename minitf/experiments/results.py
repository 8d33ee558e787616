"""Stored benchmark results, ready for a notebook: rows, a readable table and a figure. The face
binds this module as `minitf.results`; each study lives in its own module, and this one gathers
their readers under one name:

    ladder = minitf.results.load_ablation()      # ablation.py (notebooks 04, 11)
    ladder.row("copy", "no FFN").exact_match
    minitf.results.load_growth()                 # origami_growth.py (07, 13)
    minitf.results.load_recipe_growth()          # origami_growth.py (13)
    minitf.results.load_lm_growth()              # lm_growth.py (13)
    minitf.results.plot_growth_verdict()         # growth_verdict.py (07)
    minitf.results.load_lm_fast()                # lm_fast.py (14)
    minitf.results.load_lm_envelope()            # lm_envelope.py (13, 14)
    minitf.results.load_lm_best()                # lm_best.py (14)
    minitf.results.load_norm_position()          # norm_position.py (04)
    minitf.results.load_bpe()                    # bpe.py (15), and load_bpe_model()

The results travel with the package: `make bench` writes them into `minitf/experiments/stored/`
(RESULTS), which is package data, so an installed minitf (a wheel, not only a checkout) reads them
too. Every reader also takes the path of another result file (`load_ablation("my_ablation.json")`).
"""
from . import RESULTS
from .bpe import BPEArm, BPEResults, BPERow, load_bpe, load_bpe_model
from .ablation import ABLATION_JSON, BASELINE_LABELS, Ablation, Row, load_ablation
from .growth_verdict import plot_growth_verdict
from .lm_best import (LMBestAblation, LMBestProfile, LMBestResults, LMBestRun, LMBestSweep,
                      load_lm_best, load_lm_best_ablation, load_lm_best_profile, load_lm_best_sweep)
from .lm_envelope import LMEnvelope, load_lm_envelope
from .lm_fast import LMFastArm, LMFastResults, load_lm_fast
from .norm_position import load_norm_position
from .lm_growth import LMGrowthArm, LMGrowthCurve, LMGrowthResults, load_lm_growth
from .origami_growth import (GROWTH_START, GrowthArm, GrowthCurve, GrowthResults,
                             RecipeGrowthResults, RecipeRun, load_growth, load_recipe_growth)

__all__ = ["RESULTS", "ABLATION_JSON", "BASELINE_LABELS", "Ablation", "Row", "load_ablation",
           "plot_growth_verdict", "LMBestResults", "LMBestRun", "LMBestSweep", "load_lm_best",
           "load_lm_best_sweep", "load_lm_best_profile", "LMBestProfile", "LMBestAblation",
           "load_lm_best_ablation", "LMEnvelope", "load_lm_envelope", "LMFastArm", "LMFastResults",
           "load_lm_fast", "LMGrowthArm", "LMGrowthCurve", "LMGrowthResults", "load_lm_growth",
           "GROWTH_START", "GrowthArm", "GrowthCurve", "GrowthResults", "RecipeGrowthResults",
           "RecipeRun", "load_growth", "load_recipe_growth", "load_norm_position", "BPEArm", "BPEResults",
           "BPERow", "load_bpe", "load_bpe_model"]
