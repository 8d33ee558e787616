"""Pre-norm or post-norm, over several seeds, with each layer's gradient measured (notebook 04).

One run trains the copy task's 4-layer, 16-wide model of notebook 04 for 150 steps, with its norms
in one place, from one random seed (the weights' and the batch order's), and records the training
loss, the held-out loss and character accuracy, and after every step the gradient norm of each
block's parameters (before clipping: tensor hooks see the gradient as backward makes it).
`bench/norm_position.py` runs both layouts for seeds 0–4, and seed 0 without residual connections,
and stores the result; `load_norm_position()`
reads it, so the notebook trains nothing.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import torch

from ..core.baselines import baseline_losses
from ..core.config import Config
from ..core.data import make_pairs
from ..core.evaluate import evaluate
from ..core.model import Transformer
from ..core.train import train

STORED = Path(str(resources.files(__package__).joinpath("stored"))) / "norm_position.json"
STEPS, LAYERS = 150, 4
BATCH_SIZE, LR, WARMUP = 32, 1.5e-2, 20  # notebook 04 compares these with the ablation ladder's


def task_pairs():
    """The copy pairs of notebook 04: 2,000 training inputs of 1–3 bytes and 200 held out."""
    train_pairs = make_pairs("copy", 2000, seed=1000, max_len=3)
    held_out = make_pairs("copy", 200, seed=2000, max_len=3, exclude=[p.input for p in train_pairs])
    return train_pairs, held_out


def run(layout: str, seed: int, steps: int = STEPS, **changes) -> dict:
    """One training run: its losses, held-out scores and per-layer gradient norms, step by step.
    `changes` are other Config fields (e.g. residual=False)."""
    train_pairs, held_out = task_pairs()
    torch.manual_seed(seed)
    model = Transformer(Config(d_model=16, d_ff=32, n_layers=LAYERS, dropout=0.0, norm_position=layout,
                               **changes))
    squares = [0.0] * LAYERS
    for layer, block in enumerate(model.blocks):
        for p in block.parameters():
            p.register_hook(lambda g, layer=layer: squares.__setitem__(layer, squares[layer] + g.pow(2).sum().item()))
    grad_norms = []

    def after_step(history):
        grad_norms.append([math.sqrt(s) for s in squares])
        squares[:] = [0.0] * LAYERS

    history = train(model, train_pairs, steps=steps, lr=LR, batch_size=BATCH_SIZE, warmup=WARMUP, seed=seed,
                    progress=False, after_step=after_step)
    scores = evaluate(model, held_out)
    return {"layout": layout, "seed": seed, "residual": changes.get("residual", True),
            "loss": history.loss, "grad_norms": grad_norms,
            "held_out_loss": scores["loss"], "char_accuracy": scores["char_accuracy"]}


@dataclass
class NormPositionStudy:
    runs: list[dict]
    command: str
    length_oracle: float
    unigram: float

    def of(self, layout: str, residual: bool = True) -> list[dict]:
        return [r for r in self.runs if r["layout"] == layout and r["residual"] == residual]

    @property
    def seeds(self) -> list[int]:
        return sorted({r["seed"] for r in self.runs if r["residual"]})

    def pre_ahead(self) -> int:
        """In how many seeds pre-norm's held-out loss is below post-norm's."""
        post = {r["seed"]: r["held_out_loss"] for r in self.of("post")}
        return sum(r["held_out_loss"] < post[r["seed"]] for r in self.of("pre"))

    def below_oracle(self, layout: str) -> int:
        """How many runs of a layout got below the length oracle: learned some of the rule."""
        return sum(r["held_out_loss"] < self.length_oracle for r in self.of(layout))

    def layer_grads(self, layout: str, first: int = 0, last: int = 20) -> list[float]:
        """Each layer's gradient norm, the mean over steps first+1 … last and over the seeds."""
        runs = self.of(layout)
        return [sum(sum(r["grad_norms"][s][layer] for s in range(first, last)) / (last - first)
                    for r in runs) / len(runs) for layer in range(LAYERS)]

    def table(self) -> str:
        """The held-out losses per seed and the per-layer gradient norms, as text."""
        return str(self)

    def __str__(self) -> str:
        lines = [f"copy task, {LAYERS} layers, {STEPS} steps, seeds {self.seeds}: held-out loss "
                 f"(length oracle {self.length_oracle:.2f})",
                 "seed        " + "".join(f"{s:>7d}" for s in self.seeds)]
        for layout in ("post", "pre"):
            lines.append(f"{layout + '-norm':12s}" + "".join(f"{r['held_out_loss']:7.2f}" for r in self.of(layout)))
        lines.append("gradient norm of each layer's parameters, mean of steps 1–20 and of the seeds")
        lines.append("layer       " + "".join(f"{layer:>7d}" for layer in range(LAYERS)))
        for layout in ("post", "pre"):
            lines.append(f"{layout + '-norm':12s}" + "".join(f"{g:7.2f}" for g in self.layer_grads(layout)))
        return "\n".join(lines)

    def plot(self):
        """Left: every run's training loss (mean of 10 steps), its held-out loss after the last step (a
        dot: what the table reports) and the held-out baselines; right: each layer's gradient norm
        over the first 20 steps, per layout."""
        from matplotlib.figure import Figure

        fig = Figure(figsize=(7.6, 3.6), layout="constrained")
        left, right = fig.subplots(1, 2, width_ratios=[1.5, 1])
        colours = {"post": "tab:red", "pre": "tab:blue"}
        for r in self.of("post") + self.of("pre"):
            loss = torch.tensor(r["loss"]).unfold(0, 10, 1).mean(1)
            left.plot(range(10, len(r["loss"]) + 1), loss, color=colours[r["layout"]], lw=1, alpha=0.8,
                      label=f"{r['layout']}-norm" if r["seed"] == self.seeds[0] else None)
        for r in self.of("post") + self.of("pre"):  # the held-out loss the table reports, after the last step
            left.plot(len(r["loss"]), r["held_out_loss"], "o", color=colours[r["layout"]], ms=5, mec="black", mew=0.6)
        left.plot([], [], "o", color="white", mec="black", mew=0.6, label="held-out loss, end")
        for value, name, style in ((self.unigram, "unigram (held out)", ":"),
                                   (self.length_oracle, "length oracle (held out)", "--")):
            left.axhline(value, color="0.4", ls=style, lw=1.2, label=name)
        left.set(xlabel="step", ylabel="loss (nats)", ylim=(0, 6),
                 title=f"training loss (lines), {len(self.seeds)} seeds per layout")
        left.legend(loc="lower left", fontsize=9)
        for layout in ("post", "pre"):
            right.plot(range(LAYERS), self.layer_grads(layout), "o-", color=colours[layout], label=f"{layout}-norm")
        right.set(xlabel="layer", ylabel="gradient norm", xticks=range(LAYERS), ylim=(0, None),
                  title="steps 1–20")
        right.legend(fontsize=9)
        return fig


def load_norm_position(path: Path = STORED) -> NormPositionStudy:
    """The stored result of bench/norm_position.py."""
    data = json.loads(Path(path).read_text())
    return NormPositionStudy(data["runs"], data["command"], data["length_oracle"], data["unigram"])


def baselines() -> tuple[float, float]:
    """(length oracle, unigram) of the held-out pairs, as notebook 04 prints them."""
    train_pairs, held_out = task_pairs()
    b = baseline_losses(held_out, train_pairs)
    return b.length_oracle, b.unigram


STREAM_TEXT = (b"A language model reads text one byte at a time and guesses the byte that comes next. "
               b"It is scored on every guess: the loss is small when the guess is good.")


def stream_rms(layout: str, depth: int = 16) -> torch.Tensor:
    """The RMS of the residual stream after each block of a fresh `depth`-layer model with its norms
    in `layout` ("pre" or "post"), read over three 32-byte windows of STREAM_TEXT: (depth,)."""
    ids = torch.tensor([list(STREAM_TEXT[i:i + 32]) for i in range(0, 96, 32)])  # (B=3, T=32)
    torch.manual_seed(0)
    model = Transformer(Config(n_layers=depth, norm_position=layout, dropout=0.0))
    seen = []
    hooks = [b.register_forward_hook(lambda mod, inp, out: seen.append(out[0].pow(2).mean().sqrt()))
             for b in model.blocks]
    with torch.no_grad():
        model(ids)
    for hook in hooks:
        hook.remove()
    return torch.stack(seen)


def print_stream_rms(depth: int = 16, after=(1, 4, 8, 12, 16)) -> None:
    """Post-norm pins the stream's RMS after every block; pre-norm lets it grow with depth."""
    print("after block " + "".join(f"{b:6d}" for b in after))
    for name, layout in (("post-norm", "post"), ("pre-norm", "pre")):
        r = stream_rms(layout, depth)
        print(f"{name:10s}" + "".join(f"{r[b - 1].item():6.1f}" for b in after))
