"""Attention heatmaps: what each head of a trained model looks at, with the bytes as labels.

A model reads `input TAB output` (the EOS it is asked to predict last is never read). Row t of a
head's (T, T) weight matrix is the distribution position t attends with; row t predicts byte t+1.
With an input of n bytes, row n+k predicts output byte k, so for a task whose output byte k is
computed from input byte s(k), a head that does the work puts its weight on column s(k):
copy and shift: s(k) = k (a diagonal shifted down by n rows), reverse: s(k) = n−1−k (an
anti-diagonal).
"""
from __future__ import annotations

import io

import torch

from .data import Pair, sequence
from .tokens import show, to_bytes


def byte_labels(ids) -> list[str]:
    """One axis label per byte: printable bytes as themselves, space as ␣, TAB as ⇥, EOS as ⏎."""
    return ["␣" if int(b) == 32 else show([int(b)]) for b in ids]


def model_input(pair: Pair | tuple) -> torch.Tensor:
    """The ids the model reads for a pair under teacher forcing: input TAB output, (1, T)."""
    return torch.tensor([sequence(Pair(to_bytes(pair[0]), to_bytes(pair[1])))[:-1]])


@torch.no_grad()
def attention_weights(model, pair: Pair | tuple) -> tuple[list[torch.Tensor], list[str]]:
    """Every layer's attention for one pair: a list of (H, T, T) tensors and the T byte labels."""
    ids = model_input(pair)  # (1, T)
    was_training = model.training
    model.eval()  # no dropout: the picture is the model the metrics describe
    _, weights = model(ids, return_attention=True)  # n_layers × (1, H, T, T)
    model.train(was_training)
    return [w[0] for w in weights], byte_labels(ids[0])


def source_position(task: str, n_input: int, k: int) -> int:
    """The input position output byte k of a task is computed from (n_input bytes of input).

    copy and shift: output k comes from input k; reverse: from input n_input−1−k.
    """
    if not 0 <= k < n_input:
        raise ValueError(f"output position {k} outside an input of {n_input} bytes")
    if task in ("copy", "shift"):
        return k
    if task == "reverse":
        return n_input - 1 - k
    raise ValueError(f"no source position rule for task {task!r}; known: copy, shift, reverse")


def head_hits(weights: torch.Tensor, n_input: int, task: str) -> torch.Tensor:
    """For one pair's (H, T, T) weights: (H, n_out) bool, True where the row predicting output
    byte k has its largest weight on source_position(task, n_input, k)."""
    n_out = weights.size(-1) - n_input - 1  # rows n … n+n_out−1 predict output bytes
    rows = torch.arange(n_input, n_input + n_out)
    expected = torch.tensor([source_position(task, n_input, k) for k in range(n_out)])
    return weights[:, rows].argmax(-1) == expected  # (H, n_out)


@torch.no_grad()
def head_scores(model, pairs: list[Pair], task: str) -> torch.Tensor:
    """(n_layers, n_heads): per head, the fraction of all output bytes of `pairs` whose row has
    its argmax on the input byte the task says the output comes from."""
    hits = torch.zeros(model.config.n_layers, model.config.n_heads)
    total = 0
    for pair in pairs:
        weights, _ = attention_weights(model, pair)
        for layer, w in enumerate(weights):
            hits[layer] += head_hits(w, len(pair.input), task).sum(-1)
        total += len(pair.output)
    return hits / total


def draw_head(ax, weights: torch.Tensor, labels: list[str], title: str = "") -> None:
    """One head's (T, T) weights on `ax`: rows are the attending positions, columns the attended."""
    T = len(labels)
    ax.imshow(weights.numpy(), cmap="viridis", vmin=0.0, vmax=1.0)
    ax.set_xticks(range(T), labels, fontsize=7, family="monospace")
    ax.set_yticks(range(T), labels, fontsize=7, family="monospace")
    ax.tick_params(length=0, pad=1)
    ax.set_title(title, fontsize=9)


def plot_attention(weights: list[torch.Tensor], labels: list[str], layers=None, heads=None,
                   size: float = 2.6):
    """A grid of heatmaps, one row per layer and one column per head; returns a matplotlib Figure.

    A bare Figure (not pyplot) so it can be drawn into a widget without touching global state.
    """
    from matplotlib.figure import Figure

    layers = list(range(len(weights))) if layers is None else list(layers)
    heads = list(range(weights[0].size(0))) if heads is None else list(heads)
    width, height = size * len(heads) + 0.5, size * len(layers) + 0.7
    fig = Figure(figsize=(width, height))
    # fixed margins in inches: a layout engine would redo the layout on every draw, 2-3× slower
    fig.subplots_adjust(left=0.55 / width, right=1 - 0.1 / width, bottom=0.5 / height,
                        top=1 - 0.6 / height, wspace=0.25, hspace=0.3)
    axes = fig.subplots(len(layers), len(heads), squeeze=False)
    for r, layer in enumerate(layers):
        for c, head in enumerate(heads):
            draw_head(axes[r][c], weights[layer][head], labels, f"layer {layer} · head {head}")
    fig.supylabel("attending position (row t predicts byte t+1)", fontsize=9, x=0.1 / width)
    fig.supxlabel("attended position", fontsize=9, y=0.08 / height)
    return fig


class AttentionSelector:
    """Pick an example, a layer and a head; the heatmap is redrawn into an Output widget.

    examples: (name, model, pair) triples, so one selector can compare models trained on different
    tasks. Drawing from the kernel side (out.append_display_data) keeps widget callbacks from
    printing into the notebook cell, and lets a test set `.example.value` etc. and look at
    `.out.outputs`.
    """

    def __init__(self, examples, example: int = 0, layer: int = 0, head: int = 0, size: float = 4.0):
        import ipywidgets as w

        self.examples, self.size = list(examples), size
        if not self.examples:
            raise ValueError("AttentionSelector needs at least one (name, model, pair) example")
        options = [(f"{name}: {show(pair[0])} → {show(pair[1])}", i)
                   for i, (name, _, pair) in enumerate(self.examples)]
        self.example = w.Dropdown(options=options, value=example, description="example")
        self.layer = w.IntSlider(value=0, min=0, max=0, description="layer")
        self.head = w.IntSlider(value=0, min=0, max=0, description="head")
        self.out = w.Output()
        self.drawn = None  # (example, layer, head) of the picture on show
        self._fit_sliders()
        self.layer.value, self.head.value = layer, head  # before observing: one drawing, not three
        self.example.observe(lambda change: (self._fit_sliders(), self.redraw()), names="value")
        for control in (self.layer, self.head):
            control.observe(lambda change: self.redraw(), names="value")
        self.widget = w.VBox([w.HBox([self.example, self.layer, self.head]), self.out])
        self.redraw()

    def _fit_sliders(self) -> None:
        """Slider ranges follow the chosen example's model (values are clipped, not redrawn twice)."""
        config = self.examples[self.example.value][1].config
        self.layer.max, self.head.max = config.n_layers - 1, config.n_heads - 1

    def redraw(self) -> None:
        from IPython.display import Image

        _, model, pair = self.examples[self.example.value]
        weights, labels = attention_weights(model, pair)
        fig = plot_attention(weights, labels, [self.layer.value], [self.head.value], self.size)
        png = io.BytesIO()
        fig.savefig(png, format="png")  # a PNG whatever the matplotlib backend (also in tests)
        self.out.outputs = ()
        self.out.append_display_data(Image(data=png.getvalue(), format="png"))
        self.drawn = (self.example.value, self.layer.value, self.head.value)

    def _ipython_display_(self):
        from IPython.display import display
        display(self.widget)


def to_bertviz(weights: list[torch.Tensor]) -> list[torch.Tensor]:
    """The layout bertviz's head_view(attention, tokens) takes: one (1, H, T, T) tensor per layer.

    Accepts our per-layer (H, T, T) tensors or the model's (B=1, H, T, T) ones.
    """
    out = []
    for layer, w in enumerate(weights):
        if w.dim() == 3:
            w = w[None]
        if w.dim() != 4 or w.size(0) != 1 or w.size(-1) != w.size(-2):
            raise ValueError(f"layer {layer}: expected (H, T, T) or (1, H, T, T), got {tuple(w.shape)}")
        out.append(w.detach().float().cpu())
    return out
