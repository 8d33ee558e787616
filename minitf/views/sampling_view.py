"""Next-byte probabilities, and how temperature, top-k and top-p reshape them before sampling.

A language model's last row of logits becomes a distribution over the 256 bytes; generation picks
one byte from it. `minitf.generate.next_byte_probs` is that step written out: divide the logits by
the temperature T, keep the k most likely bytes, keep the smallest set whose probability reaches p,
renormalise; T → 0 is greedy (all mass on the argmax). `NextByteBars` draws those probabilities
as bars for a typed input and redraws them when a slider moves, into an Output widget from the
kernel side (nothing leaks into the notebook cell; a test moves a slider by setting `.value` and
reads `.state`); where no widget can run, it shows as a picture (minitf.views.pictures.ShowsPicture).
"""
from __future__ import annotations

import torch

from ..core.generate import next_byte_probs
from ..core.tokens import EOS, TAB, byte_label, show, to_bytes
from .pictures import ShowsPicture, figure_png, output_png, picture_of


def slider_probs(logits: torch.Tensor, temperature: float, top_k: int | None,
                 top_p: float | None) -> torch.Tensor:
    """next_byte_probs for the sliders, which are all live at once: at temperature 0 (greedy)
    top-k and top-p change nothing, so they are left out here instead of refused
    (minitf.core.generate.check_sampling refuses greedy together with either)."""
    if temperature == 0:
        top_k = top_p = None
    return next_byte_probs(logits, temperature, top_k, top_p)


@torch.no_grad()
def sample_output(model, text: bytes | str, temperature: float = 0.0, top_k: int | None = None,
                  top_p: float | None = None, seed: int = 0, max_new_tokens: int = 40):
    """Generate an output for `text` with these settings: (output bytes, the (steps, V)
    probabilities each byte was drawn from). The last step is the one that drew EOS, if any."""
    was_training = model.training
    model.eval()
    gen = torch.Generator().manual_seed(seed)
    seq = list(to_bytes(text)) + [TAB]
    out, steps = [], []
    for _ in range(min(max_new_tokens, model.config.max_len - len(seq))):
        logits = model(torch.tensor([seq]))[0, -1]  # (V,) the next byte's logits
        probs = slider_probs(logits, temperature, top_k, top_p)
        steps.append(probs)
        nxt = int(probs.argmax()) if temperature == 0 else int(torch.multinomial(probs, 1, generator=gen))
        if nxt == EOS:
            break
        out.append(nxt)
        seq.append(nxt)
    model.train(was_training)
    return bytes(out), torch.stack(steps)


class NextByteBars(ShowsPicture):
    """Type an input, see the model's output and, as bars, the next-byte probabilities at one step.

    Sliders: temperature, top-k (256 = off), top-p (1 = off), and the output step whose
    distribution is drawn. The grey outline is the model's own distribution (T = 1, nothing cut);
    the coloured bars are what sampling draws from with the sliders' settings.
    """

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

    def compute(self) -> dict:
        """Generate with the current settings; the numbers the picture shows."""
        temperature = self.temperature.value
        top_k = None if self.top_k.value >= 256 else self.top_k.value
        top_p = None if self.top_p.value >= 1 else self.top_p.value
        text = self.text.value.encode("utf-8")
        output, probs = sample_output(self.model, text, temperature, top_k, top_p, self.seed)
        step = min(self._wanted_step, len(probs) - 1)
        prefix = list(text) + [TAB] + list(output[:step])
        with torch.no_grad():
            raw = self.model.eval()(torch.tensor([prefix]))[0, -1].softmax(-1)  # (V,) at T = 1
        shown = probs[step]
        order = torch.maximum(shown, raw).argsort(descending=True, stable=True)[:self.bars]
        return {"text": text, "output": output, "step": step, "steps": len(probs),
                "temperature": temperature, "top_k": top_k, "top_p": top_p,
                "probs": shown, "raw": raw, "order": order, "prefix": prefix}

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
        settings = (f"T = {state['temperature']:g}, top-k = {state['top_k'] or 'off'}, "
                    f"top-p = {state['top_p'] or 'off'}")
        ax.set_title(f"{show(state['text'])} ⇥ → {show(state['output'])}   ({settings}, random seed "
                     f"{self.seed})\nnext-byte probabilities after reading {show(state['prefix'])}",
                     fontsize=10)
        ax.legend(loc="upper right")
        return fig

    def redraw(self) -> None:
        from IPython.display import Image

        self.state = self.compute()
        s = self.state
        self.step.unobserve(self._on_change, names="value")  # fitting the range is not a user move
        self.step.max = s["steps"] - 1
        self.step.value = s["step"]
        self.step.observe(self._on_change, names="value")
        ended = "then ⏎" if s["steps"] > len(s["output"]) else "cut off"
        self.output.value = (f"<code>{_html(show(s['text']))} ⇥ → {_html(show(s['output']))}</code>"
                             f" ({len(s['output'])} bytes, {ended})")
        self.out.outputs = ()
        self.out.append_display_data(Image(data=figure_png(self.figure(s)), format="png"))

    def png(self) -> bytes:
        """The bars on show, as PNG bytes."""
        return output_png(self.out)

    def picture(self) -> bytes:
        controls = (self.text, self.step, self.temperature, self.top_k, self.top_p)
        return picture_of(self.out, controls, "run the cell to move the sliders")

    def __repr__(self) -> str:
        s = self.state
        return (f"NextByteBars(input={s['text'].decode('utf-8', 'replace')!r}, "
                f"output={s['output'].decode('utf-8', 'replace')!r}, step {s['step']}, "
                f"T={s['temperature']:g}, top_k={s['top_k']}, top_p={s['top_p']})")


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
