"""What notebook 08 shows of the shift model it trains with the learner's code: its loss beside the
baselines only a model that finds the right input byte can beat, its held-out exact match, and which
of its heads look exactly n positions back, at the byte they shift.
"""
from __future__ import annotations

from ..core.data import shift_bytes
from .heatmaps import attention_weights, head_hits


def plot_loss(history: dict, baselines: dict, title: str = "Your model learns to shift, with your training code"):
    """The training loss of every step and the held-out loss of each evaluation (a training loop's
    history: {"loss": [...], "val": [{"step", "loss", ...}]}) on a log axis, each baseline (label →
    nats) as a line. A matplotlib Figure."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 3.8), layout="constrained")
    ax = fig.subplots()
    ax.plot(range(1, len(history["loss"]) + 1), history["loss"], lw=1, color="tab:blue",
            label="training loss (your model)")
    ax.plot([v["step"] for v in history["val"]], [v["loss"] for v in history["val"]], "o-",
            color="tab:orange", label="held-out loss")
    styles = [("black", ":"), ("dimgrey", "--"), ("tab:purple", "-."), ("tab:green", (0, (5, 1)))]
    for (name, value), (color, style) in zip(baselines.items(), styles):
        ax.axhline(value, color=color, ls=style, lw=1.2, label=f"baseline: {name} ({value:.2f})")
    ax.set(xlabel="training step", ylabel="loss (nats per output byte, log scale)", yscale="log", title=title)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5))
    return fig


def held_out(history: dict) -> str:
    """The last evaluation's exact match and loss, and the exact match at each evaluation."""
    final = history["val"][-1]
    return (f"held-out exact match {final['exact_match']:.1%}, loss {final['loss']:.3f}; by step: "
            + ", ".join(f"{v['step']}: {v['exact_match']:.0%}" for v in history["val"]))


def diagonal_heads(model, text: bytes) -> None:
    """Print the heads of the last layer whose every output row on `text` and its shift
    looks hardest exactly n back, at the input byte it shifts (notebook 06 draws such heads)."""
    weights, _ = attention_weights(model, (text.decode(), shift_bytes(text).decode()))
    heads = [h for h, hits in enumerate(head_hits(weights[-1], len(text), "shift")) if bool(hits.all())]
    print("heads whose every output row looks hardest exactly n back:", heads)
