"""The sampling view for a language model: the next-byte bars of `NextByteBars`, on a text.

`TextSampler` is `NextByteBars` with a prompt instead of an input: the model continues the prompt
with the sliders' settings (temperature, top-k, top-p), the bars show the probabilities the chosen
byte of the continuation was drawn from, and a "sample" button draws a new continuation (the next
random seed). It changes only what differs: how the text is continued, and the words around it.
"""
from __future__ import annotations

from html import escape

import torch

from ..core.generate import continue_ids, picker
from ..core.tokens import show
from .sampling_view import NextByteBars


class TextSampler(NextByteBars):
    """Type a prompt, move the sliders, press "sample": the continuation and its next-byte bars."""

    hint = "run the cell to move the sliders and sample"
    empty_text = b" "  # a language model needs at least one byte to continue

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

    def continuation(self, text: bytes, temperature: float, top_k: int | None, top_p: float | None):
        drawn_from = []
        pick = picker(temperature, top_k, top_p, torch.Generator().manual_seed(self.seed), drawn_from)
        new, logits = continue_ids(self.model, list(text), self.length, pick)
        return bytes(new), torch.stack(drawn_from), logits.__getitem__

    def prefix(self, text: bytes, output: bytes, step: int) -> list[int]:
        return list(text) + list(output[:step])

    def title(self, state: dict) -> str:
        return (f"{show(state['text'])} | {show(state['output'])}\n"
                f"byte {state['step']} of the continuation ({self.settings(state)})\n"
                f"was drawn from these probabilities, after …{show(state['prefix'][-40:])}")

    def written(self, state: dict) -> str:
        continuation = state["output"].decode("utf-8", errors="replace")
        return (f"<pre style='margin:0'>{escape(state['text'].decode('utf-8', 'replace'))}"
                f"<b>{escape(continuation)}</b></pre>")

    def __repr__(self) -> str:
        s = self.state
        return (f"TextSampler(prompt={s['text'].decode('utf-8', 'replace')!r}, {s['steps']} new bytes, "
                f"byte {s['step']}, {self.knobs(s)}, random seed {self.seed})")
