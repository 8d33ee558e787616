"""RoPE by hand: sliders for the query and key positions, the base and the pair, redrawn live."""
from __future__ import annotations

import math

import torch

from ..core.rope import apply_rope, rope_angles, rope_frequencies
from .pictures import ShowsPicture, control_values, figure_png, picture_of


class RopeExplorer(ShowsPicture):
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
        q_rot, k_rot = q_m[pair], k_n[pair]
        # the angle from rotated k to rotated q, in (−π, π]: the pair's score is |q||k|·cos(angle)
        angle = math.atan2(float(q_rot[1]), float(q_rot[0])) - math.atan2(float(k_rot[1]), float(k_rot[0]))
        angle = math.remainder(angle, 2 * math.pi)
        return {
            "m": m, "n": n, "base": float(self.base.value), "pair": i, "theta": theta,
            "period": 2 * math.pi / theta,
            "q_pair": self.q[pair].clone(), "k_pair": self.k[pair].clone(),
            "q_rot": q_rot, "k_rot": k_rot, "angle": angle,  # the drawn arrows and the arc between them
            "score": float(q_m @ k_n), "pair_score": float(q_rot @ k_rot),
            "offsets": torch.arange(offsets.start, offsets.stop),
            "curve": q_all @ self.k, "pair_curve": q_all[:, pair] @ self.k[pair],
        }

    def figure(self, state: dict):
        """A matplotlib Figure (not pyplot state: nothing leaks into the notebook cell).

        Left: pair i of q and k before (thin dashed, drawn on top so it stays visible) and after
        (thick) their rotations, with the arc of the angle between the rotated pair. Right: the
        score against the offset; negative offsets (a key after the query) are shaded, since
        causal attention never uses them. Legends sit below the axes, clear of the data.
        """
        from matplotlib.figure import Figure
        from matplotlib.patches import Arc

        fig = Figure(figsize=(9, 4.4), layout="constrained")
        plane, curve = fig.subplots(1, 2, width_ratios=(1, 1.3))
        r = max(float(state["q_pair"].norm()), float(state["k_pair"].norm()), 1e-9) * 1.45  # room for the labels
        for name, before, after, color in (("q", state["q_pair"], state["q_rot"], "tab:blue"),
                                           ("k", state["k_pair"], state["k_rot"], "tab:orange")):
            plane.annotate("", xy=after.tolist(), xytext=(0, 0), zorder=2,
                           arrowprops={"arrowstyle": "-|>", "color": color, "lw": 2.5,
                                       "shrinkA": 0, "shrinkB": 0})
            plane.annotate("", xy=before.tolist(), xytext=(0, 0), zorder=3,
                           arrowprops={"arrowstyle": "->", "color": color, "lw": 1.3, "ls": (0, (3, 2)),
                                       "shrinkA": 0, "shrinkB": 0})
            # the label just past the arrow's tip, away from the origin, on a white ground so the
            # axis lines and the other arrow never run through it
            x, y = after.tolist()
            norm = max(math.hypot(x, y), 1e-12)
            plane.annotate(f"{name} at {'m' if name == 'q' else 'n'}", xy=(x, y),
                           xytext=(12 * x / norm, 12 * y / norm), textcoords="offset points",
                           ha="left" if x >= 0 else "right", va="bottom" if y >= 0 else "top",
                           color=color, fontsize=10, weight="bold", zorder=4,
                           bbox={"fc": "white", "ec": "none", "alpha": 0.85, "pad": 1})
        k_deg = math.degrees(math.atan2(float(state["k_rot"][1]), float(state["k_rot"][0])))
        a_deg = math.degrees(state["angle"])
        radius = 0.45 * min(float(state["q_rot"].norm()), float(state["k_rot"].norm()))
        plane.add_patch(Arc((0, 0), 2 * radius, 2 * radius, theta1=min(k_deg, k_deg + a_deg),
                            theta2=max(k_deg, k_deg + a_deg), color="tab:red", lw=1.8))
        mid = math.radians(k_deg + a_deg / 2)
        plane.text(1.7 * radius * math.cos(mid), 1.7 * radius * math.sin(mid),
                   f"{abs(state['angle']):.2f}", color="tab:red", fontsize=10, ha="center",
                   va="center", bbox={"fc": "white", "ec": "none", "alpha": 0.8, "pad": 1})
        plane.plot([], [], color="tab:blue", lw=2.5, label="q rotated by m·θ")
        plane.plot([], [], color="tab:orange", lw=2.5, label="k rotated by n·θ")
        plane.plot([], [], color="0.3", lw=1.3, ls=(0, (3, 2)), label="dashed: before")
        plane.plot([], [], color="tab:red", lw=1.8, label="angle between (rad)")
        plane.set(xlim=(-r, r), ylim=(-r, r), aspect="equal",
                  xlabel=f"dim {2 * state['pair']}", ylabel=f"dim {2 * state['pair'] + 1}",
                  title=f"pair {state['pair']}: θ = {state['theta']:.3g} rad per position,\n"
                        f"repeats every {state['period']:.3g} positions")
        plane.axhline(0, color="0.85", lw=0.8, zorder=0)
        plane.axvline(0, color="0.85", lw=0.8, zorder=0)
        plane.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, fontsize=9)
        delta = state["m"] - state["n"]
        lo, hi = int(state["offsets"][0]), int(state["offsets"][-1])
        curve.axvspan(lo - 0.5, -0.5, color="0.9", zorder=0,
                      label="m < n: never used (causal)")
        curve.plot(state["offsets"], state["curve"], color="black", lw=1.6, label="whole head")
        if self.head_dim > 2:  # with one pair, the pair is the whole head
            curve.plot(state["offsets"], state["pair_curve"], color="tab:green", lw=1.3,
                       label=f"pair {state['pair']} alone")
        curve.axvline(delta, color="tab:red", lw=1)
        curve.plot([delta], [state["score"]], "o", color="tab:red", label="now: m − n")
        curve.set(xlim=(lo - 0.5, hi + 0.5), xlabel="offset m − n", ylabel="score q·k",
                  title=f"the whole head: q·k = {state['score']:.3f} at m − n = {delta}")
        curve.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, fontsize=9)
        return fig

    def redraw(self) -> None:
        """Recompute, redraw, and replace the Output widget's content with the new figure."""
        from IPython.display import Image

        self.state = self.compute()
        png = figure_png(self.figure(self.state))  # a PNG whatever the matplotlib backend
        self.out.outputs = ()
        self.out.append_display_data(Image(data=png, format="png"))
        self.redraws += 1

    def picture(self) -> bytes:
        return picture_of(self.out, self.sliders, "run the cell to move the sliders")

    def __repr__(self) -> str:
        return f"RopeExplorer({control_values(self.sliders)})"
