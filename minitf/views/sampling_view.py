"""Next-byte probabilities, and how temperature, top-k and top-p reshape them before sampling.

A language model's last row of logits becomes a distribution over the 256 bytes; generation picks
one byte from it. `minitf.next_byte_probs` is that step written out: divide the logits by
the temperature T, keep the k most likely bytes, keep the smallest set whose probability reaches p,
renormalise; T → 0 is greedy (all mass on the argmax). `NextByteBars` draws those probabilities
as bars for a typed input and redraws them when a slider moves, into an Output widget from the
kernel side (nothing leaks into the notebook cell; a test moves a slider by setting `.value` and
reads `.state`); where no widget can run, it shows as a picture (minitf.views.pictures.ShowsPicture).
"""
from __future__ import annotations

from html import escape

import torch

from ..core.generate import continue_ids, next_byte_probs, picker
from ..core.tokens import EOS, TAB, byte_label, show, to_bytes
from .pictures import ShowsPicture, figure_png, output_png, picture_of


def number(x: float) -> str:
    """A slider's value as a person would write it: a slider stepping by 0.05 reaches
    0.7000000000000002, not 0.7; four significant digits show every value its step can reach."""
    return f"{x:.4g}"


def sample_output(model, text: bytes | str, temperature: float = 0.0, top_k: int | None = None,
                  top_p: float | None = None, seed: int = 0, max_new_tokens: int = 40):
    """Generate an output for `text` with these settings: (output bytes, the (steps, V)
    probabilities each byte was drawn from). The last step is the one that drew EOS, if any."""
    drawn_from = []
    pick = picker(temperature, top_k, top_p, torch.Generator().manual_seed(seed), drawn_from)
    new, _ = continue_ids(model, list(to_bytes(text)) + [TAB], max_new_tokens, pick, cache=False,
                          until_eos=True)
    return bytes(new[:-1] if new and new[-1] == EOS else new), torch.stack(drawn_from)


class NextByteBars(ShowsPicture):
    """Type an input, see the model's output and, as bars, the next-byte probabilities at one step.

    Sliders: temperature, top-k (256 = off), top-p (1 = off), and the output step whose
    distribution is drawn. The grey outline is the model's own distribution (T = 1, nothing cut);
    the coloured bars are what sampling draws from with the sliders' settings.
    """

    hint = "run the cell to move the sliders"  # under the picture of a stored notebook
    empty_text = b""                            # what an emptied text box stands for

    def __init__(self, model, text: str = "Hello", temperature: float = 1.0, top_k: int = 256,
                 top_p: float = 1.0, step: int = 0, seed: int = 0, bars: int = 12):
        import ipywidgets as W

        self.model, self.seed, self.bars = model, seed, bars
        style, common = {"description_width": "initial"}, {"continuous_update": False}
        self.text = W.Text(value=text, description="input", style=style, continuous_update=False)
        self.temperature = W.FloatSlider(value=temperature, min=0.0, max=5.0, step=0.1,
                                         description="temperature", style=style, **common)
        self.top_k = W.IntSlider(value=top_k, min=1, max=256, description="top-k", style=style, **common)
        self.top_p = W.FloatSlider(value=top_p, min=0.05, max=1.0, step=0.05, description="top-p",
                                   style=style, **common)
        self.step = W.IntSlider(value=0, min=0, max=0, description="output step", style=style, **common)
        self.output = W.HTML()
        self.out = W.Output()
        self.state: dict = {}
        self._wanted_step = step
        for control in (self.text, self.temperature, self.top_k, self.top_p, self.step):
            control.observe(self._on_change, names="value")
        self.widget = W.VBox([W.HBox([self.text, self.step]),
                              W.HBox([self.temperature, self.top_k, self.top_p]),
                              self.output, self.out])
        self.widget.add_class("mtf-next-byte-bars")
        self.redraw()

    def _on_change(self, change) -> None:
        if change["owner"] is self.step:
            self._wanted_step = change["new"]
        self.redraw()

    def continuation(self, text: bytes, temperature: float, top_k: int | None, top_p: float | None):
        """What the model writes after `text` with these settings: (the bytes, the probabilities
        each was drawn from (steps, V), a function step → the model's own logits (V,) there)."""
        output, probs = sample_output(self.model, text, temperature, top_k, top_p, self.seed)

        @torch.no_grad()
        def logits_at(step: int) -> torch.Tensor:
            return self.model.eval()(torch.tensor([self.prefix(text, output, step)]))[0, -1]
        return output, probs, logits_at

    def prefix(self, text: bytes, output: bytes, step: int) -> list[int]:
        """The bytes the model has read when it writes byte `step` of its output."""
        return list(text) + [TAB] + list(output[:step])

    def compute(self) -> dict:
        """Generate with the current settings; the numbers the picture shows."""
        temperature = self.temperature.value
        top_k = None if self.top_k.value >= 256 else self.top_k.value
        top_p = None if self.top_p.value >= 1 else self.top_p.value
        if temperature == 0:  # greedy: the sliders are all live, but top-k and top-p change
            top_k = top_p = None  # nothing then (check_sampling refuses them beside greedy)
        text = self.text.value.encode("utf-8") or self.empty_text
        output, probs, logits_at = self.continuation(text, temperature, top_k, top_p)
        step = min(self._wanted_step, len(probs) - 1)
        raw = logits_at(step).softmax(-1)  # (V,) the model's own distribution (T = 1, nothing cut)
        shown = probs[step]
        order = torch.maximum(shown, raw).argsort(descending=True, stable=True)[:self.bars]
        return {"text": text, "output": output, "step": step, "steps": len(probs),
                "temperature": temperature, "top_k": top_k, "top_p": top_p,
                "probs": shown, "raw": raw, "order": order,
                "prefix": self.prefix(text, output, step)}

    def figure(self, state: dict):
        """Bars for the most likely bytes at the chosen step, and one for all the others together
        (a bare Figure: no pyplot state)."""
        from matplotlib.figure import Figure

        fig = Figure(figsize=(8.0, 3.6), layout="constrained")
        ax = fig.subplots()
        order = state["order"].tolist()
        shown, raw = state["probs"][order].tolist(), state["raw"][order].tolist()
        rest = len(state["probs"]) - len(order)
        x = list(range(len(order) + 1))
        labels = [byte_label(b) for b in order] + [f"the other\n{rest}"]
        ax.bar(x, shown + [1 - sum(shown)], color="tab:blue", label="sampled from (sliders)")
        ax.bar(x, raw + [1 - sum(raw)], fill=False, edgecolor="0.35", lw=1.2,
               label="the model's own (T = 1, nothing cut)")
        ax.set_xticks(x, labels, fontsize=12, family="monospace")
        ax.get_xticklabels()[-1].set(fontsize=9, family="sans-serif")
        ax.set(ylim=(0, 1.05), ylabel="probability", xlabel="next byte (most likely first)")
        ax.set_title(self.title(state), fontsize=10)
        ax.legend(loc="upper right")
        return fig

    def settings(self, state: dict) -> str:
        return (f"T = {number(state['temperature'])}, top-k = {state['top_k'] or 'off'}, "
                f"top-p = {number(state['top_p']) if state['top_p'] else 'off'}, random seed {self.seed}")

    def title(self, state: dict) -> str:
        return (f"{show(state['text'])} ⇥ → {show(state['output'])}   ({self.settings(state)})\n"
                f"next-byte probabilities after reading {show(state['prefix'])}")

    def written(self, state: dict) -> str:
        """The line above the bars: what the model wrote (HTML)."""
        ended = "then ⏎" if state["steps"] > len(state["output"]) else "cut off"
        return (f"<code>{escape(show(state['text']))} ⇥ → {escape(show(state['output']))}</code>"
                f" ({len(state['output'])} bytes, {ended})")

    def redraw(self) -> None:
        from IPython.display import Image

        self.state = self.compute()
        s = self.state
        self.step.unobserve(self._on_change, names="value")  # fitting the range is not a user move
        self.step.max = s["steps"] - 1
        self.step.value = s["step"]
        self.step.observe(self._on_change, names="value")
        self.output.value = self.written(s)
        self.out.outputs = ()
        self.out.append_display_data(Image(data=figure_png(self.figure(s)), format="png"))

    def png(self) -> bytes:
        """The bars on show, as PNG bytes."""
        return output_png(self.out)

    def picture(self) -> bytes:
        controls = (self.text, self.step, self.temperature, self.top_k, self.top_p)
        return picture_of(self.out, controls, self.hint)

    def knobs(self, state: dict) -> str:
        """The sampling settings as __repr__ writes them (a stable text for stored notebooks)."""
        return (f"T={number(state['temperature'])}, top_k={state['top_k']}, "
                f"top_p={number(state['top_p']) if state['top_p'] else None}")

    def __repr__(self) -> str:
        s = self.state
        return (f"NextByteBars(input={s['text'].decode('utf-8', 'replace')!r}, "
                f"output={s['output'].decode('utf-8', 'replace')!r}, step {s['step']}, "
                f"{self.knobs(s)})")
