"""The sampling view for a language model: the next-byte bars of `minitf.sampling_view`, on a text.

`TextSampler` is `NextByteBars` with a prompt instead of an input: the model continues the prompt
with the sliders' settings (temperature, top-k, top-p), the bars show the probabilities the chosen
byte of the continuation was drawn from, and a "sample" button draws a new continuation (the next
random seed). Same rules as every minitf view: drawn from the kernel side, a picture where no
widget can run, a stable one-line repr for nbval.
"""
from __future__ import annotations

import torch

from ..core.generate import continue_ids, sample
from ..core.tokens import show
from .sampling_view import NextByteBars, _html, slider_probs


class TextSampler(NextByteBars):
    """Type a prompt, move the sliders, press "sample": the continuation and its next-byte bars."""

    def __init__(self, model, prompt: str = "ROMEO:", length: int = 60, temperature: float = 1.0,
                 top_k: int = 256, top_p: float = 1.0, step: int = 0, seed: int = 0, bars: int = 12):
        import ipywidgets as W

        self.length = length
        self.button = W.Button(description="sample", tooltip="a new continuation: the next random seed")
        super().__init__(model, prompt, temperature, top_k, top_p, step, seed, bars)
        self.text.description, self.step.description = "prompt", "byte of the continuation"
        self.button.on_click(self.sample)
        first, *rest = self.widget.children  # [prompt, step] gets the button beside it
        self.widget.children = (W.HBox([*first.children, self.button]), *rest)
        self.widget.add_class("mtf-text-sampler")

    def sample(self, _button=None) -> None:
        """Draw a new continuation with the same settings."""
        self.seed += 1
        self.redraw()

    @torch.no_grad()
    def compute(self) -> dict:
        temperature = self.temperature.value
        top_k = None if self.top_k.value >= 256 else self.top_k.value
        top_p = None if self.top_p.value >= 1 else self.top_p.value
        prompt = self.text.value.encode("utf-8") or b" "
        gen = torch.Generator().manual_seed(self.seed)
        drawn_from = []

        def pick(logits):  # temperature 0: the one-hot of the argmax, so the draw is greedy
            probs = slider_probs(logits, temperature, top_k, top_p)
            drawn_from.append(probs)
            return sample(probs, gen)

        new, logits = continue_ids(self.model, list(prompt), self.length, pick)
        step = min(self._wanted_step, len(new) - 1)
        raw = logits[step].softmax(-1)  # (V,) the model's own distribution (T = 1, nothing cut)
        shown = drawn_from[step]
        order = torch.maximum(shown, raw).argsort(descending=True, stable=True)[:self.bars]
        return {"text": prompt, "output": bytes(new), "step": step, "steps": len(new),
                "temperature": temperature, "top_k": top_k, "top_p": top_p,
                "probs": shown, "raw": raw, "order": order, "prefix": list(prompt) + new[:step]}

    def figure(self, state: dict):
        fig = super().figure(state)
        settings = (f"T = {state['temperature']:g}, top-k = {state['top_k'] or 'off'}, "
                    f"top-p = {state['top_p'] or 'off'}, random seed {self.seed}")
        tail = show(state["prefix"][-40:])
        fig.axes[0].set_title(f"{show(state['text'])} | {show(state['output'])}\n"
                              f"byte {state['step']} of the continuation ({settings})\n"
                              f"was drawn from these probabilities, after …{tail}", fontsize=10)
        return fig

    def redraw(self) -> None:
        super().redraw()
        s = self.state
        continuation = s["output"].decode("utf-8", errors="replace")
        self.output.value = (f"<pre style='margin:0'>{_html(s['text'].decode('utf-8', 'replace'))}"
                             f"<b>{_html(continuation)}</b></pre>")

    def picture(self) -> bytes:
        from .pictures import picture_of
        controls = (self.text, self.step, self.temperature, self.top_k, self.top_p)
        return picture_of(self.out, controls, "run the cell to move the sliders and sample")

    def __repr__(self) -> str:
        s = self.state
        return (f"TextSampler(prompt={s['text'].decode('utf-8', 'replace')!r}, {s['steps']} new bytes, "
                f"byte {s['step']}, T={s['temperature']:g}, top_k={s['top_k']}, top_p={s['top_p']}, "
                f"random seed {self.seed})")
