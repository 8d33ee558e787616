"""Watch a model learn: train it for a few seconds and redraw what it knows every few steps.

`TrainingView` trains a fresh model with `minitf.train` and, at each of train's validations
(`eval_every` steps), draws four things:

- the held-out loss beside the baselines of the same pairs (`minitf.baseline_losses`): unigram and
  length oracle; when training ends, the training loss of every step joins it;
- the held-out exact match;
- a progress measure only a task with a known answer allows: the **attention on the source
  byte**. For shift (and copy) output byte k is computed from input byte k, so the row that
  predicts output byte k should put its weight on input byte k (`heatmaps.source_position`).
  `source_attention` is the mean of that weight over the output bytes of some held-out pairs, for
  each head: it rises before exact match does, which only counts outputs that are right in full;
- the attention of one fixed example, a heatmap per head with byte labels and red rings on the
  sources.

The hook is train's `stop_when`: called with each validation's metrics (the same dict that goes
into the History), it records them, measures, redraws and returns False, so training runs its
whole schedule and the History is exactly that of `minitf.train` with the same arguments. What was
drawn is kept in `.drawn`, and the History in `.history`, so a test can compare them.

Drawing goes into an Output widget from the kernel side (nothing leaks into the cell; see
minitf.views.pictures), and the view shows as a picture where no widget can run.
"""
from __future__ import annotations

from html import escape
from types import SimpleNamespace

import torch

from ..core.baselines import baseline_losses
from ..core.data import TASKS, Pair, make_batch
from ..core.generate import generate
from ..core.model import Transformer, count_parameters, evaluating
from ..core.tokens import show, to_bytes
from ..core.train import train
from .heatmaps import attention_weights, draw_head, label_size, mark_sources, source_position
from .pictures import ShowsPicture, captioned, control_values, figure_png, picture_of

NUMBERINGS = {"coupled": "coupled (output byte j numbered like input byte j)",
              "sequence": "usual (0, 1, 2, … along the sequence)"}
SHORT = {"coupled": "coupled", "sequence": "usual"}
HEAD_COLOURS = ("tab:purple", "tab:orange", "tab:brown", "tab:pink")


@torch.no_grad()
def source_attention(model, pairs: list[Pair], task: str = "shift") -> torch.Tensor:
    """(n_layers, n_heads): for each head, the mean attention weight that the rows predicting
    output bytes put on their source byte (row n+k on column source_position(task, n, k)), over
    every output byte of `pairs`. 1 for a head that copies exactly; about 1/(n+k+1) for a head that
    spreads its weight evenly."""
    ids, _ = make_batch(pairs)  # (B, T); padding comes after each row's real bytes (causal: unseen)
    batch, rows, cols = [], [], []
    for b, pair in enumerate(pairs):
        n = len(pair.input)
        for k in range(min(n, len(pair.output))):
            batch.append(b)
            rows.append(n + k)
            cols.append(source_position(task, n, k))
    if not batch:
        raise ValueError("source_attention needs pairs with at least one output byte")
    b, r, c = (torch.tensor(x) for x in (batch, rows, cols))
    with evaluating(model):
        _, weights = model(ids, return_attention=True)  # n_layers × (B, H, T, T)
    return torch.stack([w[b, :, r, c].mean(0) for w in weights])  # w[b, :, r, c]: (N, H)


class TrainingView(ShowsPicture):
    """Train a fresh model from `config` on `train_pairs`, validated on `held_out` every `every`
    steps, and watch it learn (see the module docstring for what is drawn).

    `run()` shows the view and trains (a notebook cell: the picture updates live); the button
    trains again from the same start, with the numbering chosen in the dropdown (coupled or the
    usual), so the two can be compared; with `compare_numbering=False` there is no dropdown and the
    button trains the config's own numbering again. Training is minitf.train's, with `steps`,
    `batch_size`, `lr`, `warmup` and `seed` passed on; the model starts from `torch.manual_seed(seed)`.
    """

    hint = "run the cell, then press “train again” to watch it learn"

    def __init__(self, config, train_pairs: list[Pair], held_out: list[Pair], example, *,
                 steps: int = 300, every: int = 50, batch_size: int = 64, lr: float = 4e-2,
                 warmup: int = 20, seed: int = 0, task: str = "shift", probe: int = 100,
                 baselines=None, compare_numbering: bool = True):
        import ipywidgets as W

        if task not in TASKS:
            raise ValueError(f"unknown task {task!r}; choose from {sorted(TASKS)}")
        if every < 1 or steps < every:
            raise ValueError(f"need 1 <= every <= steps, got every={every}, steps={steps}")
        self.config, self.train_pairs, self.held_out = config, train_pairs, held_out
        self.example = Pair(to_bytes(example[0]), to_bytes(example[1]))
        self.task, self.seed, self.steps, self.every = task, seed, steps, every
        self.options = dict(steps=steps, batch_size=batch_size, lr=lr, warmup=warmup, seed=seed,
                            eval_every=every, progress=False)
        self.probe = held_out[:probe]
        self.baselines = baselines or baseline_losses(held_out, train_pairs)
        if compare_numbering:
            self.numbering = W.Dropdown(options=[(label, key) for key, label in NUMBERINGS.items()],
                                        value=config.positions.position_ids, description="position ids",
                                        style={"description_width": "initial"},
                                        layout=W.Layout(width="auto"))
        else:  # the config's numbering, with no control (and no widget saved with the notebook)
            self.numbering = SimpleNamespace(value=config.positions.position_ids)
        self.button = W.Button(description="train again", icon="play",
                               tooltip="train a fresh model from the same start and watch it learn")
        self.button.on_click(lambda _: self.train())
        self.status = W.HTML()
        self.out = W.Output()
        self.controls = (self.numbering,) if compare_numbering else ()  # what the learner can set
        self.widget = W.VBox([W.HBox([*self.controls, self.button]), self.status, self.out])
        self.widget.add_class("mtf-training-view")
        self.history = None
        self._fig = None     # built at the first redraw, then updated
        self.drawn = None    # the numbers on show (compute()), None before the first picture
        self.redraws = 0     # pictures drawn so far (a test counts them)
        self._pending = False  # run() shows the view before training: no picture worth drawing yet
        self._start(config.positions.position_ids)
        self.status.value = self.written(None)

    # --- training ---------------------------------------------------------------------------------
    def _start(self, numbering: str) -> None:
        """A fresh model with this numbering, from the seed's start; nothing measured yet."""
        torch.manual_seed(self.seed)
        self.model = Transformer(self.config.replace(position_ids=numbering))
        self.val: list[dict] = []       # train's validations, the very dicts in History.val
        self.mass: list[torch.Tensor] = []  # source_attention at each validation, (L, H)
        self.history = None

    def train(self):
        """Train a fresh model (the dropdown's numbering), redrawing at every validation; returns
        minitf.train's History."""
        self.button.disabled = True
        try:
            self._start(self.numbering.value)
            if self.drawn is not None:  # an earlier run is on show: show the fresh start
                self.redraw()
            else:
                self.status.value = self.written(None)
            self.history = train(self.model, self.train_pairs, self.held_out, **self.options,
                                 stop_when=self._validated)
            self.redraw()
        finally:
            self.button.disabled = False
        return self.history

    def _validated(self, metrics: dict) -> bool:
        """train's stop_when: record, measure, redraw; never stop early."""
        self.val.append(metrics)
        self.mass.append(source_attention(self.model, self.probe, self.task))
        if metrics["step"] < self.steps:  # the last one is drawn when train returns, with its History
            self.redraw()
        return False

    def run(self):
        """Show the view, then train: in a notebook the picture is redrawn live at every
        validation, and the output is brought up to date (with its final picture) at the end.
        Returns the History."""
        from IPython.display import display

        self._pending = True  # the picture shown until the update below is only a caption
        try:
            handle = display(self, display_id=True)
        finally:
            self._pending = False
        history = self.train()
        if handle is not None:
            handle.update(self)
        return history

    # --- what is drawn ----------------------------------------------------------------------------
    def compute(self) -> dict:
        """The numbers the picture shows now (all of them from .val, .mass and .history)."""
        weights, labels = attention_weights(self.model, self.example)
        layer = len(weights) - 1  # the last layer: the one whose heads feed the output
        output = generate(self.model, self.example.input, max_new_tokens=len(self.example.output) + 4)
        return {
            "numbering": self.model.config.positions.position_ids,
            "step": self.val[-1]["step"] if self.val else 0,
            "steps": [v["step"] for v in self.val],
            "val_loss": [v["loss"] for v in self.val],
            "exact_match": [v["exact_match"] for v in self.val],
            "mass": [m[layer].tolist() for m in self.mass],  # per validation: one value per head
            "train_loss": list(self.history.loss) if self.history is not None else [],
            "layer": layer,
            "weights": weights[layer],  # (H, T, T) the example's attention, teacher-forced
            "labels": labels,
            "output": output,
            "done": self.history is not None,
        }

    def figure(self, s: dict):
        """The picture of state `s`: loss and fractions on the top row, one heatmap per head of the
        last layer below. Built once (a bare Figure with fixed margins in inches: no pyplot state,
        no layout engine); each redraw only gives its lines and images new data, which is what
        makes a redraw cheap enough to do every few steps."""
        if self._fig is None:
            self._fig, self._parts = self._build(s["weights"].size(0), s["labels"])
        fig, p = self._fig, self._parts
        p["val_loss"].set_data(s["steps"], s["val_loss"])
        p["exact"].set_data(s["steps"], s["exact_match"])
        for h, line in enumerate(p["mass"]):
            line.set_data(s["steps"], [m[h] for m in s["mass"]])
        for h, image in enumerate(p["heads"]):
            image.set_data(s["weights"][h].numpy())
        p["train_loss"].set_data(range(1, len(s["train_loss"]) + 1), s["train_loss"])
        shown = [*p["baselines"], *(line for line in (p["train_loss"], p["val_loss"])
                                     if len(line.get_xdata()))]
        if shown != p["in_legend"]:  # a key for every line drawn, and only for those
            p["ax_loss"].legend(handles=shown, fontsize=8, loc="lower left")
            p["in_legend"] = shown
        p["title"].set_text(self.title(s))
        return fig

    def _build(self, H: int, labels: list[str]):
        """The figure's fixed parts (axes, baselines, rings, colorbar) and the artists a redraw
        updates."""
        from matplotlib.figure import Figure

        panel = min(2.7, 5.4 / H)            # inches per heatmap
        width, top_h = 7.8, 2.0              # inches: the figure's width, the line panels' height
        height = 0.6 + top_h + 0.75 + panel + 0.45
        fig = Figure(figsize=(width, height))

        def axes(left, bottom, w, h):         # a panel placed in inches from the bottom left
            return fig.add_axes([left / width, bottom / height, w / width, h / height])

        row2 = 0.45 + panel + 0.75           # the bottom of the line panels
        ax_loss, ax_frac = axes(0.7, row2, 2.85, top_h), axes(4.55, row2, 2.85, top_h)
        b = self.baselines
        baselines = [ax_loss.axhline(b.unigram, color="grey", ls="--", lw=1.2,
                                     label=f"unigram {b.unigram:.2f}"),
                     ax_loss.axhline(b.length_oracle, color="grey", ls="-.", lw=1.2,
                                     label=f"length oracle {b.length_oracle:.2f}")]
        train_loss, = ax_loss.plot([], [], color="tab:blue", lw=0.8, alpha=0.6,
                                   label="training loss (each step)")
        val_loss, = ax_loss.plot([], [], "o-", color="tab:red", ms=4, label="held-out loss")
        ax_loss.set(xlim=(0, self.steps), yscale="log", ylim=(1e-3, 10), xlabel="training step",
                    ylabel="loss (nats per target)")
        ax_loss.set_yticks([1e-3, 1e-2, 0.1, 1, 10], ["0.001", "0.01", "0.1", "1", "10"])
        ax_loss.minorticks_off()
        ax_loss.set_title("loss, beside two baselines", fontsize=10)

        exact, = ax_frac.plot([], [], "o-", color="tab:green", ms=4, label="exact match (held out)")
        mass = [ax_frac.plot([], [], "s-", ms=3.5, color=HEAD_COLOURS[h % 4],
                             label=f"head {h}: on the source byte")[0] for h in range(H)]
        # the fractions end at 1; the band above holds the key, so no line ever runs under it
        ax_frac.set(xlim=(0, self.steps), ylim=(-0.03, 1.03 + 0.2 * (H + 1)), xlabel="training step",
                    ylabel="fraction")
        ax_frac.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
        ax_frac.axhline(1.03, color="0.85", lw=0.8)
        ax_frac.set_title("exact match, and where the heads look", fontsize=10)
        ax_frac.legend(fontsize=8, loc="upper left", borderaxespad=0.3)

        size = max(10.0, label_size(panel, len(labels)))  # 10 pt: the heatmaps' bytes read at the column's width
        left = (width - H * panel - (H - 1) * 0.2 - 0.9) / 2 + 0.2  # centred, with the colorbar
        heads = []
        for h in range(H):
            ax = axes(left + h * (panel + 0.2), 0.45, panel, panel)
            T = len(labels)
            heads.append(draw_head(ax, torch.zeros(T, T), labels, f"layer {self.model.config.n_layers - 1}"
                                   f" · head {h}", size, y_labels=h == 0))
            ax.title.set_color(HEAD_COLOURS[h % 4])
            mark_sources(ax, self.task, len(self.example.input), len(self.example.output))
        ax.legend(fontsize=8, loc="upper right")
        cax = axes(left + H * (panel + 0.2) - 0.05, 0.45, 0.12, panel)
        fig.colorbar(heads[0], cax=cax).set_label("attention weight", fontsize=9)
        title = fig.text(0.5, 1 - 0.12 / height, "", ha="center", va="top", fontsize=10)
        return fig, {"ax_loss": ax_loss, "baselines": baselines, "train_loss": train_loss,
                     "val_loss": val_loss, "in_legend": None,
                     "exact": exact, "mass": mass, "heads": heads, "title": title}

    def title(self, s: dict) -> str:
        right = " ✓" if s["output"] == self.example.output else ""
        numbering = f", {SHORT[s['numbering']]} position ids" if self.controls else ""
        return (f"step {s['step']} of {self.steps}{numbering}: "
                f"{show(self.example.input)} ⇥ → {show(s['output']) or '(nothing)'}{right}")

    def written(self, s: dict | None) -> str:
        """The line above the picture (HTML)."""
        if s is None or not s["steps"]:
            return f"step 0 of {self.steps}: not trained yet ({count_parameters(self.model):,} parameters)"
        state = "done" if s["done"] else "training…"
        mass = max(s["mass"][-1])
        return (f"step {s['step']} of {self.steps} ({state}) · held-out loss {s['val_loss'][-1]:.3f}"
                f" · exact match {s['exact_match'][-1]:.0%} · attention on the source byte "
                f"{mass:.0%} (the best head) · <code>{escape(show(self.example.input))} ⇥ → "
                f"{escape(show(s['output'])) or '(nothing)'}</code>")

    def redraw(self) -> None:
        from IPython.display import Image

        self.drawn = s = self.compute()
        self.status.value = self.written(s)
        self.out.outputs = ()
        self.out.append_display_data(Image(data=figure_png(self.figure(s)), format="png"))
        self.redraws += 1

    # --- how it shows -----------------------------------------------------------------------------
    def picture(self) -> bytes:
        if self._pending:
            return captioned(None, f"{control_values(self.controls)}\n(training: the picture "
                                   "comes when it ends)")
        if self.drawn is None:
            self.redraw()  # shown untrained: the start
        return picture_of(self.out, self.controls, self.hint)

    def __repr__(self) -> str:
        return (f"TrainingView({self.task}, {count_parameters(self.model):,} parameters, "
                f"{SHORT[self.numbering.value]} position ids, {self.steps} steps, "
                f"redrawn every {self.every})")
