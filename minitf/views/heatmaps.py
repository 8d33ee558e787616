"""Attention heatmaps: what each head of a trained model looks at, with the bytes as labels.

A model reads `input TAB output` (the EOS it is asked to predict last is never read). Row t of a
head's (T, T) weight matrix is the distribution position t attends with; row t predicts byte t+1.
With an input of n bytes, row n+k predicts output byte k, so for a task whose output byte k is
computed from input byte s(k), a head that does the work puts its weight on column s(k):
copy and shift: s(k) = k (a diagonal shifted down by n rows), reverse: s(k) = n−1−k (an
anti-diagonal).
"""
from __future__ import annotations

from html import escape

import torch

from ..core.data import Pair, sequence
from ..core.model import evaluating
from ..core.tokens import byte_label, show, to_bytes
from .pictures import ShowsPicture, control_values, figure_png, picture_of


def byte_labels(ids) -> list[str]:
    """One axis label per byte: printable bytes as themselves, space as ␣, TAB as ⇥, EOS as ⏎."""
    return [byte_label(b) for b in ids]


def model_input(pair: Pair | tuple) -> torch.Tensor:
    """The ids the model reads for a pair under teacher forcing: input TAB output, (1, T)."""
    return torch.tensor([sequence(Pair(to_bytes(pair[0]), to_bytes(pair[1])))[:-1]])


@torch.no_grad()
def attention_weights(model, pair: Pair | tuple) -> tuple[list[torch.Tensor], list[str]]:
    """Every layer's attention for one pair: a list of (H, T, T) tensors and the T byte labels."""
    ids = model_input(pair)  # (1, T)
    with evaluating(model):  # no dropout: the picture is the model the metrics describe
        _, weights = model(ids, return_attention=True)  # n_layers × (1, H, T, T)
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


def show_head_scores(model, pairs: list[Pair], task: str) -> torch.Tensor:
    """head_scores, printed a line per layer ("head 2 100%"); returns them."""
    scores = head_scores(model, pairs, task)
    print("share of output bytes whose row has its largest weight on the source byte")
    for layer, row in enumerate(scores):
        print(f"layer {layer}:", "   ".join(f"head {h} {s:4.0%}" for h, s in enumerate(row)))
    return scores


def ring_hits(weights: list[torch.Tensor], layer: int, head: int, task: str, n_input: int) -> int:
    """Print and return how many of one pair's output rows have head (layer, head)'s largest weight
    on the source byte (the ring mark_sources draws)."""
    hits = head_hits(weights[layer], n_input, task)[head]
    print(f"this example: {int(hits.sum())} of {len(hits)} output rows have their largest weight on the ring")
    return int(hits.sum())


def plot_ring(weights: list[torch.Tensor], labels: list[str], task: str, pair, **grid):
    """Every layer and head (plot_attention, with `grid`'s options), each with a red ring where an
    output row doing `task` should look. A Figure."""
    fig = plot_attention(weights, labels, **grid)
    for ax in fig.axes:
        if ax.get_visible() and ax.get_title().startswith("layer"):
            mark_sources(ax, task, len(pair.input), len(pair.output))
    fig.axes[0].legend(loc="upper right", fontsize=8)
    return fig


LABEL_PX = 12.5  # the smallest tick label font, in pixels at the notebooks' 110 dpi: capitals of
# the monospace font are 0.73 of it, 9 px; a panel needs LABEL_PX per byte for the labels not to touch


def label_size(panel_inches: float, n_labels: int, dpi: float = 110.0) -> float:
    """A font size in points that fits n_labels ticks on a panel, but never below LABEL_PX pixels."""
    room = panel_inches * 72 / n_labels  # points per tick
    return max(LABEL_PX * 72 / dpi, min(10.0, 0.8 * room))


def draw_head(ax, weights: torch.Tensor, labels: list[str], title: str = "", fontsize: float = 9.0,
              x_labels: bool = True, y_labels: bool = True):
    """One head's (T, T) weights on `ax` (0 = dark, 1 = yellow): rows attend, columns are attended.
    Returns the image, for a colorbar."""
    T = len(labels)
    image = ax.imshow(weights.numpy(), cmap="viridis", vmin=0.0, vmax=1.0)
    # inner panels of a grid get no ticks at all: hundreds of empty tick labels cost drawing time
    if x_labels:
        ax.set_xticks(range(T), labels, fontsize=fontsize, family="monospace")
    else:
        ax.set_xticks([])
    if y_labels:
        ax.set_yticks(range(T), labels, fontsize=fontsize, family="monospace")
    else:
        ax.set_yticks([])
    ax.tick_params(length=0, pad=1)
    ax.set_title(title, fontsize=10)
    return image


def mark_sources(ax, task: str, n_input: int, n_output: int) -> None:
    """Red rings where a head doing `task` should look: column source_position(task, n, k) of row n+k."""
    rows = range(min(n_input, n_output))
    # a ring inside its cell (0.75 of the cell's side), so the weight under it stays visible
    width_points = ax.get_position().width * ax.figure.get_figwidth() * 72
    cells = ax.get_xlim()[1] - ax.get_xlim()[0]
    ring = max(3.0, 0.75 * width_points / cells)
    ax.scatter([source_position(task, n_input, k) for k in rows], [n_input + k for k in rows],
               s=ring ** 2, facecolors="none", edgecolors="red", linewidths=1.0, label="expected source byte")


def plot_attention(weights: list[torch.Tensor], labels: list[str], layers=None, heads=None,
                   size: float = 2.6, colorbar: bool = True, title: str = "", columns: int | None = None):
    """A grid of heatmaps, one row per layer and one column per head, each panel `size` inches square,
    with one shared colorbar; returns a matplotlib Figure. Byte labels on the left column and the
    bottom row only. `columns` wraps the panels, (layer, head) in order, into rows of that many:
    four heads as 2 × 2 stay readable in a notebook column where 1 × 4 would be too wide.

    A bare Figure (not pyplot) so it can be drawn into a widget without touching global state.
    """
    from matplotlib.figure import Figure

    layers = list(range(len(weights))) if layers is None else list(layers)
    heads = list(range(weights[0].size(0))) if heads is None else list(heads)
    bar = 0.9 if colorbar else 0.0
    panels = [(layer, head) for layer in layers for head in heads]
    n_cols = len(heads) if columns is None else columns
    grid = [panels[i:i + n_cols] for i in range(0, len(panels), n_cols)]
    fontsize = label_size(size, len(labels))
    label_room = 0.12 + fontsize / 72 * 1.2  # one monospace glyph and its padding
    top = 0.75 if title else 0.4
    gap, row_gap = 0.15, 0.45  # inches between panels; a row gap holds the next row's titles
    width = size * n_cols + gap * (n_cols - 1) + 0.3 + label_room + 0.1 + bar
    height = size * len(grid) + row_gap * (len(grid) - 1) + 0.35 + top + label_room
    fig = Figure(figsize=(width, height))
    # fixed margins in inches, so each panel is `size` wide and its labels get the room label_size
    # gave them; a layout engine would also redo the layout on every draw, 2-3× slower
    fig.subplots_adjust(left=(0.3 + label_room) / width, right=1 - (0.1 + bar) / width,
                        bottom=(0.35 + label_room) / height, top=1 - top / height,
                        wspace=gap / size, hspace=row_gap / size)
    if title:
        fig.suptitle(title, fontsize=11, y=1 - 0.12 / height, va="top")
    axes = fig.subplots(len(grid), n_cols, squeeze=False)
    for r, row in enumerate(grid):
        for c in range(n_cols):
            if c >= len(row):
                axes[r][c].set_visible(False)
                continue
            layer, head = row[c]
            image = draw_head(axes[r][c], weights[layer][head], labels, f"layer {layer} · head {head}",
                              fontsize, x_labels=r == len(grid) - 1, y_labels=c == 0)
    if colorbar:
        cax = fig.add_axes([1 - (bar - 0.15) / width, (0.35 + label_room) / height, 0.15 / width,
                            1 - (0.35 + top + label_room) / height])
        fig.colorbar(image, cax=cax).set_label("attention weight (each row sums to 1)", fontsize=9)
    fig.supylabel("attending position (row t predicts byte t+1)", fontsize=9, x=0.12 / width)
    fig.supxlabel("attended position", fontsize=9, y=0.08 / height)
    return fig


def plot_heads(panels: list[tuple[str, torch.Tensor]], labels: list[str], size: float = 4.6):
    """Heads side by side on the same byte labels, one shared colorbar: panels are (title, (T, T)).
    For comparing one head across models (or before and after a change)."""
    from matplotlib.figure import Figure

    fontsize = label_size(size, len(labels))
    label_room = 0.12 + fontsize / 72 * 1.2
    width, height = size * len(panels) + 0.6 + label_room + 0.9, size + 0.75 + label_room
    fig = Figure(figsize=(width, height))
    fig.subplots_adjust(left=(0.3 + label_room) / width, right=1 - 1.0 / width,
                        bottom=(0.35 + label_room) / height, top=1 - 0.4 / height, wspace=0.12)
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for c, (title, weights) in enumerate(panels):
        image = draw_head(axes[c], weights, labels, title, fontsize, y_labels=c == 0)
    cax = fig.add_axes([1 - 0.75 / width, (0.35 + label_room) / height, 0.15 / width,
                        1 - (0.75 + label_room) / height])
    fig.colorbar(image, cax=cax).set_label("attention weight (each row sums to 1)", fontsize=9)
    fig.supylabel("attending position (row t predicts byte t+1)", fontsize=9, x=0.12 / width)
    fig.supxlabel("attended position", fontsize=9, y=0.08 / height)
    return fig


def load_task_models(tasks=("shift", "copy", "reverse"), n_val: int = 40, folder="../data/checkpoints"):
    """({task: model}, {task: held-out pairs}): each task's trained checkpoint `<folder>/<task>.pt` and
    n_val pairs its training run never saw (minitf.checkpoint_pairs), so that a notebook measures
    heads on unseen inputs without re-deriving the run's splits."""
    from pathlib import Path

    from ..core.checkpoint import checkpoint_pairs, load

    models = {task: load(Path(folder) / f"{task}.pt") for task in tasks}
    return models, {task: checkpoint_pairs(model, n_val=n_val)[1] for task, model in models.items()}


def mean_ablated(model, heads, n_val: int = 200):
    """A copy of `model` with each (layer, head) of `heads` replaced by its mean output over the
    output rows of n_val held-out pairs of the model's own run (minitf.mean_ablate_heads): the rows
    the head serves, so that only what it reads from this input is lost."""
    from ..core.checkpoint import checkpoint_pairs
    from ..core.data import make_batch
    from ..core.heads import mean_ablate_heads
    from ..core.tokens import IGNORE

    ids, targets = make_batch(checkpoint_pairs(model, n_val=n_val)[1])
    return mean_ablate_heads(model, heads, ids, targets != IGNORE)


def plot_zero_against_mean(zeroed: dict, mean: dict, tasks=("shift", "reverse"), n_layers: int = 2,
                           n_heads: int = 4):
    """Held-out exact match with one head switched off in two ways, zeroed and replaced by its mean:
    two bars per head, a panel per task (zeroed[(task, layer, head)] in [0, 1], mean likewise)."""
    from matplotlib.figure import Figure

    heads = [(l, h) for l in range(n_layers) for h in range(n_heads)]
    fig = Figure(figsize=(9, 3.4), layout="constrained")
    axes = fig.subplots(1, len(tasks), sharey=True, squeeze=False)[0]
    for ax, task in zip(axes, tasks):
        for offset, (name, exact, colour) in zip((-0.2, 0.2), (("zeroed", zeroed, "tab:grey"),
                                                             ("replaced by its mean", mean, "tab:red"))):
            ax.bar([i + offset for i in range(len(heads))], [100 * exact[task, l, h] for l, h in heads],
                   width=0.4, color=colour, label=name)
        ax.set_xticks(range(len(heads)), [f"{l}.{h}" for l, h in heads], fontsize=9)
        ax.axhline(100, color="grey", ls=":", lw=1)
        ax.set(title=task, xlabel="head switched off (layer.head)")
    axes[0].set_ylabel("held-out exact match (%)")
    axes[-1].legend(fontsize=9, loc="upper right")
    return fig


def option_label(name: str, pair) -> str:
    """A dropdown entry: the task and the pair in full (TAB and EOS never appear inside a pair)."""
    return f"{name}: {show(pair[0])} → {show(pair[1])}"


class AttentionSelector(ShowsPicture):
    """Pick an example (or type an input), a layer and a head; switch heads off; the heatmap and the
    model's generated output are redrawn.

    examples: (name, model, pair) triples, so one selector can compare models trained on different
    tasks; when `name` is a task of minitf.TASKS, the output is checked and the expected source bytes
    are ringed. Typing in `text` replaces the example's input. The model reads `input TAB output`
    where output is what the model itself generates, so switching a head off (the `switch_off`
    checkbox adds the head on show to `off`, minitf.ablate_heads) changes both the output and the
    attention of the later layers. Drawing from the kernel side (out.append_display_data) keeps widget
    callbacks from printing into the notebook cell, and lets a test set `.example.value` etc. and look
    at `.out.outputs` and `.state`.
    """

    EXTRA_BYTES = 4  # generation stops this many bytes past the input's length if no ⏎ came
    SLIDER_PX = 220  # the layer and head sliders' width: 40 px of label, a track of about 130 px, the value

    def __init__(self, examples, example: int = 0, layer: int = 0, head: int = 0, size: float = 6.0,
                 off=()):
        import ipywidgets as w

        self.examples, self.size = list(examples), size
        if not self.examples:
            raise ValueError("AttentionSelector needs at least one (name, model, pair) example")
        options = [(option_label(name, pair), i) for i, (name, _, pair) in enumerate(self.examples)]
        wide = w.Layout(width="auto")
        self.example = w.Dropdown(options=options, value=example, description="example", layout=wide)
        self.text = w.Text(value=_text(self.examples[example][2][0]), description="input",
                           continuous_update=False)
        # a slider without a width of its own is squeezed by its row to a track of a few pixels
        slider = dict(layout=w.Layout(width=f"{self.SLIDER_PX}px", min_width=f"{self.SLIDER_PX}px"),
                      style={"description_width": "40px"})
        self.layer = w.IntSlider(value=0, min=0, max=0, description="layer", **slider)
        self.head = w.IntSlider(value=0, min=0, max=0, description="head", **slider)
        self.switch_off = w.Checkbox(value=False, description="switch off this head", indent=False)
        self.switch_off.add_class("mtf-ablate")
        self.output = w.HTML()
        self.out = w.Output()
        self.off: set[tuple[int, int]] = set(off)
        self.drawn = None  # (example, layer, head) of the picture on show
        self.state: dict = {}
        self._settling = False
        self._fit_sliders()
        self.layer.value, self.head.value = layer, head  # before observing: one drawing, not three
        self.switch_off.value = (layer, head) in self.off
        self.example.observe(self._on_example, names="value")
        for control in (self.layer, self.head):
            control.observe(self._on_head, names="value")
        self.text.observe(lambda change: self._settling or self.redraw(), names="value")
        self.switch_off.observe(self._on_switch, names="value")
        controls = w.HBox([self.text, self.layer, self.head, self.switch_off],
                          layout=w.Layout(flex_flow="row wrap"))  # a narrow panel wraps, never squeezes
        self.widget = w.VBox([self.example, controls,
                              self.output, self.out])
        self.redraw()

    def _fit_sliders(self) -> None:
        """Slider ranges follow the chosen example's model (values are clipped, not redrawn twice)."""
        config = self.examples[self.example.value][1].config
        self.layer.max, self.head.max = config.n_layers - 1, config.n_heads - 1

    def _settle(self, fit: bool = False, **values) -> None:
        """Set controls to follow another one without their observers redrawing in between."""
        self._settling = True
        if fit:
            self._fit_sliders()  # may clip the layer and head sliders
        for control, value in values.items():
            getattr(self, control).value = value
        self._settling = False

    def _on_example(self, change) -> None:
        self.off.clear()  # switched-off heads belong to the model they were switched off in
        self._settle(fit=True, text=_text(self.examples[self.example.value][2][0]), switch_off=False)
        self.redraw()

    def _on_head(self, change) -> None:
        if not self._settling:
            self._settle(switch_off=(self.layer.value, self.head.value) in self.off)
            self.redraw()

    def _on_switch(self, change) -> None:
        if not self._settling:
            (self.off.add if change["new"] else self.off.discard)((self.layer.value, self.head.value))
            self.redraw()

    def compute(self) -> dict:
        """The example, the (possibly ablated) model's output for the input, and its attention."""
        from ..core.generate import generate
        from ..core.heads import ablate_heads
        from ..core.data import TASKS

        name, model, pair = self.examples[self.example.value]
        text = to_bytes(self.text.value)
        if self.off:
            model = ablate_heads(model, sorted(self.off))
        # a model without a head it needs may never write ⏎: stop a few bytes past the input's length,
        # so the picture keeps rows few enough to label (these tasks' outputs are as long as the input)
        room = min(len(text) + self.EXTRA_BYTES, model.config.max_len - len(text) - 2)
        output = generate(model, text, max_new_tokens=room + 1) if text else b""
        stopped = len(output) > room
        output = output[:room]
        weights, labels = attention_weights(model, (text, output)) if text else ([], [])
        right = TASKS[name](text) if name in TASKS else None
        return {"name": name, "input": text, "output": output, "right": right, "off": sorted(self.off),
                "weights": weights, "labels": labels, "stopped": stopped}

    def redraw(self) -> None:
        from IPython.display import Image

        self.state = s = self.compute()
        verdict = "" if s["right"] is None else (" ✓" if s["output"] == s["right"] else
                                                 f" ✗ (right: {escape(show(s['right']))})")
        off = ", ".join(f"layer {l} · head {h}" for l, h in s["off"]) or "none"
        more = " …" if s["stopped"] else ""
        stopped = (f" (no ⏎ after {len(s['output'])} bytes: stopped)" if s["stopped"] else "")
        self.output.value = (f"<code>{escape(show(s['input']))} ⇥ → {escape(show(s['output']))}{more}</code>"
                             f"{verdict}{stopped} &nbsp; switched off: {off}")
        self.out.outputs = ()
        if s["input"]:
            layer, head = self.layer.value, self.head.value
            # the title fits the panel: the input and output (clipped), and how many heads are off
            title = (f"{_clip(show(s['input']))} ⇥ → {_clip(show(s['output']) + more)}"
                     f"{' ✓' if s['output'] == s['right'] else ' ✗' if s['right'] is not None else ''}"
                     + (f"  ({len(s['off'])} switched off)" if s["off"] else ""))
            fig = plot_attention(s["weights"], s["labels"], [layer], [head], self.size, title=title)
            ax = fig.axes[0]
            if (layer, head) in self.off:
                ax.set_title(f"layer {layer} · head {head}: switched off", fontsize=10)
            if s["name"] in ("copy", "shift", "reverse"):
                mark_sources(ax, s["name"], len(s["input"]), len(s["output"]))
                ax.legend(loc="upper right", fontsize=9)
            self.out.append_display_data(Image(data=figure_png(fig), format="png"))
        self.drawn = (self.example.value, self.layer.value, self.head.value)

    # how it shows: the live widget, and a picture where widgets cannot run (minitf.views.pictures)
    def _controls(self):
        return (self.example, self.text, self.layer, self.head, self.switch_off)

    def picture(self) -> bytes:
        return picture_of(self.out, self._controls(), "run the cell to pick another head")

    def __repr__(self) -> str:
        return f"AttentionSelector({control_values(self._controls())})"


def _text(data) -> str:
    """Bytes as the text box shows them (the examples' inputs are printable ASCII)."""
    return to_bytes(data).decode("utf-8", "replace")


def _clip(text: str, most: int = 16) -> str:
    """At most `most` characters, so a figure's title stays inside its width."""
    return text if len(text) <= most else text[:most - 1] + "…"



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
