"""Training compute in FLOPs per token, counted as Kaplan et al. (2020) count it, plus the head.

    C = 6 · N + 6 · n_layers · context · attn_dim        (FLOPs per trained token)

N is every parameter but the embedding table: the blocks' weights and biases, their norm gains,
the final norm and the output head. A weight used once per token costs 2 FLOPs in the forward pass
(a multiply and an add) and 4 in the backward pass (the gradient for its input and for itself): 6.
The embedding is a table lookup, free. The head is counted: with 256 bytes it is a large part of
a small model (23 % of a 1-layer d_model-64 model's compute, 7 % of the 4-layer one's). The second
term is attention's scores Q·Kᵀ and its weighted sum of V, which have no parameters. Each is
2 · attn_dim FLOPs per position read; a causal position reads context/2 positions on average, so
both together are 2 · context · attn_dim per token and layer in the forward pass, times 3 with the
backward pass (Kaplan's attention term).

Not counted: softmax, norm and activation arithmetic, RoPE rotations, the optimizer's update and
evaluation. They are the same kind of cost for every model here, and small beside the matrices.
"""
from __future__ import annotations

from .config import Config
from .model import Transformer, count_parameters


def non_embedding_parameters(model: Transformer) -> int:
    """Every parameter except the embedding table (the head included)."""
    return count_parameters(model) - model.embed.weight.numel()


def flops_per_token(model_or_config, context: int | None = None) -> int:
    """Training FLOPs per token: 6 · non-embedding parameters + 6 · n_layers · context · attn_dim.

    context: the window length the model trains on (default: config.max_len)."""
    if isinstance(model_or_config, Config):
        model = Transformer(model_or_config)
    elif isinstance(model_or_config, Transformer):
        model = model_or_config
    else:
        raise TypeError(f"flops_per_token needs a Transformer or a Config, got {type(model_or_config).__name__}")
    cfg = model.config
    context = cfg.max_len if context is None else context
    if not isinstance(context, int) or not 0 < context <= cfg.max_len:
        raise ValueError(f"context must be an integer in 1 … max_len {cfg.max_len}, got {context!r}")
    return 6 * non_embedding_parameters(model) + 6 * cfg.n_layers * context * cfg.attn_dim
