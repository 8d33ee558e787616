"""minitf: a minimal Transformer, taught from the bytes up.

The package is a house in four wings; this face re-exports the names the notebooks and the README
use, so `import minitf; minitf.Transformer(...)` is all a learner needs.

- `minitf.core`: the Transformer library (tokens, model, training, generation, Origami). It
  imports nothing else of minitf.
- `minitf.course`: the exercises, the feedback on a learner's answer, the reference solutions,
  the learner's saved pieces and the model assembled from them.
- `minitf.views`: pictures and widgets, the trace of a forward pass, the Explorer.
- `minitf.experiments`: stored benchmark results and the readers that turn them into tables.

The doors stand at the top: `cli` (`python -m minitf`), `notebook` (the one-line set-up),
`doctor` (why your numbers may differ from the stored ones) and `lightning` (optional). Wings
import the core, never one another or a door (tests/test_architecture.py holds that rule).
"""
import os as _os
import signal as _signal
import sys as _sys


def _interrupted_while_starting(signum, frame):
    """Ctrl-C while the command line is still importing (torch takes seconds): one line and exit
    status 130 (128 + SIGINT, the shell's convention) instead of a traceback through the imports.
    Python's usual handler is back once the package is imported; minitf.cli.main handles Ctrl-C."""
    _sys.stderr.write("minitf: interrupted (Ctrl-C) while starting; nothing was done\n")
    raise SystemExit(130)


# `python -m minitf …` (sys.argv[0] is "-m" while the package is imported) or the `minitf` script
_argv0 = (getattr(_sys, "argv", None) or [""])[0]
_STARTING = ((_argv0 == "-m" or _os.path.basename(_argv0) == "minitf")
             and _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler)
if _STARTING:
    _signal.signal(_signal.SIGINT, _interrupted_while_starting)

from .core.attention import MultiHeadAttention, attention, causal_mask
from .core.baselines import Baselines, baseline_losses
from .core.checkpoint import CheckpointError, checkpoint_pairs, load, save, train_state
from .core.checkpoint import LossCurves, fresh_pairs, loss_curves  # what a run stored, read by name
from .core.config import Config, seed_dropout
from .core.data import (DataError, Pair, PairsRead, ReadReport, TASKS, make_batch, make_pairs,
                        read_pairs, sequence, shift_bytes, write_pairs)
from .core.evaluate import evaluate, exact_match_by_length, masked_loss
from .core.ffn import FeedForward
from .core.generate import generate, generate_text, next_byte_probs
from .core.heads import ablate_heads
from .core.heads import head_outputs, mean_ablate_heads, patch_heads  # the causal tools of 06
from .core.kv_cache import KVCache
from .core.model import Block, Transformer, count_parameters, format_parameter_table, parameter_table
from .core.norms import LayerNorm, RMSNorm
from .core.origami import Growth, GrowthError, deepen, widen, widen_heads
from .core.rope import apply_rope, rope_angles, rope_frequencies, sinusoidal_table
from .core.text import Text, TextError, TextPart, evaluate_text, read_text, text_baselines
from .core.tokens import EOS, IGNORE, PAD, TAB, decode, encode, show
from .core.train import History, train
from .course.exercises import exercise
from .course.feedback import ExerciseError, check_function, compare
from .views.diagram import draw_architecture
from .views.explorer import Explorer
from .views.rope_explorer import RopeExplorer
from .views.trace import Trace, trace

# modules the notebooks reach as attributes (`minitf.parts.check`, `minitf.results.load_ablation`)
from . import notebook
from .core import baselines, data, devices, flops, norms, origami, rope
from .course import exercises, head_census, parts, solutions
from .course import training_parts  # notebook 08: your loss, step, schedule, AdamW and loop
from .experiments import results, smallest
from .views import diagram, explorer, heatmaps

__version__ = "0.1.0"

if _STARTING:  # imported: Ctrl-C is a KeyboardInterrupt again, which minitf.cli.main turns into a line
    _signal.signal(_signal.SIGINT, _signal.default_int_handler)
