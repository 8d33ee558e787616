"""Where a model's parameters are, by kind: the embedding and the head, the matrices of attention
and of the FFN, the biases and the norms' gains. Two blocks side by side show what a change of
layout moves (notebook 14's modern block: no biases, a third FFN matrix, gains for q and k), in a
few lines where the full parameter tables take thirty."""
from __future__ import annotations

from ..core.model import count_parameters

KINDS = ("embedding", "attention matrices", "FFN matrices", "biases", "norm gains", "head")


def kind_of(name: str) -> str:
    """The kind of a parameter, from its name in a minitf Transformer's state dict."""
    if name.startswith("embed."):
        return "embedding"
    if name.startswith("head.") and name.endswith("weight"):
        return "head"
    if "norm" in name:
        return "norm gains" if name.endswith("weight") else "biases"
    if name.endswith("bias"):
        return "biases"
    return "attention matrices" if ".attn." in name else "FFN matrices"


def parameters_by_kind(model) -> dict[str, int]:
    counts = dict.fromkeys(KINDS, 0)
    for name, p in model.named_parameters():
        counts[kind_of(name)] += p.numel()
    return counts


def format_parameter_kinds(models: dict) -> str:
    """A column per model (name → model), a row per kind of parameter, and the total."""
    counts = {name: parameters_by_kind(m) for name, m in models.items()}
    width = max(12, *(len(n) for n in models))
    lines = [f"{'kind':<20}" + "".join(f"{n:>{width + 2}}" for n in models)]
    lines += [f"{kind:<20}" + "".join(f"{counts[n][kind]:>{width + 2},}" for n in models) for kind in KINDS]
    lines.append(f"{'total':<20}" + "".join(f"{count_parameters(m):>{width + 2},}" for m in models.values()))
    return "\n".join(lines)
