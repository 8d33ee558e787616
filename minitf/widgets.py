"""Interactive views for the notebooks: sliders whose callbacks redraw a figure into an Output widget.

The figure is drawn on the kernel side into `Output.outputs` (never `with out:` or `interact`), so
a callback prints nothing into the notebook cell, nbval has nothing unstable to compare, and a test
can move a slider by setting `.value` and read back the numbers that were drawn (`state`).
ipywidgets and matplotlib are imported when an explorer is built, so `import minitf` stays light.
"""
from __future__ import annotations

import math

import torch

from .rope import apply_rope, rope_angles, rope_frequencies


class RopeExplorer:
    """RoPE by hand: sliders for the query position m, the key position n, the base and the pair i.

    Each move redraws two panels: the pair (2i, 2i+1) of q and k before and after their rotations
    by m·θ_i and n·θ_i, and the score q_m·k_n of the whole head against the offset m − n (it
    depends on nothing else). `state` holds the drawn numbers; `redraws` counts the redraws.
    """

    def __init__(self, q: torch.Tensor | None = None, k: torch.Tensor | None = None,
                 head_dim: int = 8, base: float = 10000.0, max_pos: int = 32, m: int = 5, n: int = 2):
        import ipywidgets as W

        if head_dim % 2:
            raise ValueError(f"RoPE rotates pairs: head_dim must be even, got {head_dim}")
        if q is None or k is None:
            gen = torch.Generator().manual_seed(0)  # torch.rand is the same on every CPU
            q, k = torch.rand(2, head_dim, generator=gen, dtype=torch.float64) * 2 - 1
        self.q, self.k = q.double().flatten(), k.double().flatten()  # (hd,) each, unrotated
        if self.q.numel() != head_dim or self.k.numel() != head_dim:
            raise ValueError(f"q and k must have head_dim = {head_dim} entries")
        self.head_dim, self.max_pos = head_dim, max_pos
        # redraw when a drag ends (each key press still redraws): a figure per drag step would lag
        style, common = {"description_width": "initial"}, {"continuous_update": False}
        self.query_pos = W.IntSlider(value=m, min=0, max=max_pos, description="query position m",
                                     style=style, **common)
        self.key_pos = W.IntSlider(value=n, min=0, max=max_pos, description="key position n",
                                   style=style, **common)
        self.base = W.FloatLogSlider(value=base, base=10, min=0.5, max=5, step=0.05,
                                     description="base", readout_format=",.4r", style=style, **common)
        self.pair = W.IntSlider(value=0, min=0, max=head_dim // 2 - 1, description="pair i",
                                disabled=head_dim == 2, style=style, **common)
        self.sliders = (self.query_pos, self.key_pos, self.base, self.pair)
        self.out = W.Output()
        for slider in self.sliders:
            slider.observe(self._on_change, names="value")
        self.widget = W.VBox([W.HBox([self.query_pos, self.key_pos]), W.HBox([self.base, self.pair]),
                              self.out])
        self.redraws = 0
        self.state: dict = {}
        self.redraw()

    def _on_change(self, change) -> None:
        self.redraw()

    def _rotate(self, x: torch.Tensor, inv_freq: torch.Tensor, positions: range) -> torch.Tensor:
        """x (hd,) rotated to every position in `positions`: (len, hd)."""
        cos, sin = rope_angles(inv_freq, len(positions), offset=positions.start)  # (1, T, hd/2)
        return apply_rope(x.expand(1, 1, len(positions), -1), cos, sin)[0, 0]

    def compute(self) -> dict:
        """The numbers one picture shows, from the sliders' current values."""
        m, n, i = self.query_pos.value, self.key_pos.value, self.pair.value
        inv_freq = rope_frequencies(self.head_dim, self.base.value, dtype=torch.float64)  # (1, hd/2)
        q_m = self._rotate(self.q, inv_freq, range(m, m + 1))[0]  # (hd,)
        k_n = self._rotate(self.k, inv_freq, range(n, n + 1))[0]
        # scores depend on m − n only, so the curve puts k at 0 and q at every offset
        offsets = range(-self.max_pos, self.max_pos + 1)
        q_all = self._rotate(self.q, inv_freq, offsets)  # (2·max_pos+1, hd)
        pair = slice(2 * i, 2 * i + 2)
        theta = float(inv_freq[0, i])
        return {
            "m": m, "n": n, "base": float(self.base.value), "pair": i, "theta": theta,
            "period": 2 * math.pi / theta,
            "q_pair": self.q[pair].clone(), "k_pair": self.k[pair].clone(),
            "q_rot": q_m[pair], "k_rot": k_n[pair],  # the drawn arrows
            "score": float(q_m @ k_n), "pair_score": float(q_m[pair] @ k_n[pair]),
            "offsets": torch.arange(offsets.start, offsets.stop),
            "curve": q_all @ self.k, "pair_curve": q_all[:, pair] @ self.k[pair],
        }

    def figure(self, state: dict):
        """A matplotlib Figure (not pyplot state: nothing leaks into the notebook cell)."""
        from matplotlib.figure import Figure

        fig = Figure(figsize=(8.4, 3.4), layout="constrained")
        plane, curve = fig.subplots(1, 2, width_ratios=(1, 1.5))
        r = max(float(state["q_pair"].norm()), float(state["k_pair"].norm()), 1e-9) * 1.15
        for name, before, after, color in (("q", state["q_pair"], state["q_rot"], "tab:blue"),
                                           ("k", state["k_pair"], state["k_rot"], "tab:orange")):
            plane.annotate("", xy=before.tolist(), xytext=(0, 0),
                           arrowprops={"arrowstyle": "->", "color": color, "alpha": 0.35, "ls": "--"})
            plane.annotate("", xy=after.tolist(), xytext=(0, 0),
                           arrowprops={"arrowstyle": "->", "color": color, "lw": 2})
            plane.plot([], [], color=color, lw=2, label=f"{name} rotated")
        plane.plot([], [], color="grey", ls="--", alpha=0.5, label="before")
        plane.set(xlim=(-r, r), ylim=(-r, r), aspect="equal",
                  xlabel=f"dim {2 * state['pair']}", ylabel=f"dim {2 * state['pair'] + 1}",
                  title=f"pair {state['pair']}: θ = {state['theta']:.3g} rad/step")
        plane.legend(loc="lower left", fontsize=7)
        delta = state["m"] - state["n"]
        curve.plot(state["offsets"], state["curve"], color="black", label="whole head")
        curve.plot(state["offsets"], state["pair_curve"], color="tab:green", alpha=0.7,
                   label=f"pair {state['pair']} alone")
        curve.axvline(delta, color="tab:red", lw=1)
        curve.plot([delta], [state["score"]], "o", color="tab:red")
        curve.set(xlabel="offset m − n", ylabel="q·k",
                  title=f"q·k = {state['score']:.3f} at m − n = {delta}; "
                        f"pair period {state['period']:.3g}")
        curve.legend(loc="lower left", fontsize=7)
        return fig

    def redraw(self) -> None:
        """Recompute, redraw, and replace the Output widget's content with the new figure."""
        self.state = self.compute()
        fig = self.figure(self.state)
        self.out.outputs = ()
        self.out.append_display_data(fig)
        self.redraws += 1

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)
