"""minitf: a minimal Transformer, taught from the bytes up."""
from .attention import MultiHeadAttention, attention, causal_mask
from .checkpoint import CheckpointError, load, save
from .config import Config, seed_dropout
from .diagram import draw_architecture
from .data import (DataError, Pair, ReadReport, TASKS, make_batch, make_pairs, read_pairs, sequence,
                   shift_bytes, write_pairs)
from .baselines import Baselines, baseline_losses
from .evaluate import evaluate, masked_loss
from .exercises import ExerciseError, check_function, compare
from .explorer import Explorer
from .ffn import FeedForward
from .generate import generate, generate_text, next_byte_probs
from .kv_cache import KVCache
from .model import Block, Transformer, count_parameters, format_parameter_table, parameter_table
from .norms import LayerNorm, RMSNorm
from .origami import Growth, GrowthError, deepen, widen, widen_heads
from .rope import apply_rope, rope_angles, rope_frequencies, sinusoidal_table
from .text import Text, TextError, TextPart, evaluate_text, read_text, text_baselines
from .tokens import EOS, IGNORE, PAD, TAB, decode, encode, show
from .trace import Trace, trace
from .train import History, train
from .widgets import RopeExplorer
from .heads import ablate_heads
from .workbook import exercise

from . import baselines, heatmaps, notebook, origami, parts, solutions, workbook

__version__ = "0.1.0"
