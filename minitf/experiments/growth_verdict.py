"""Notebook 07's answer in one figure: does growing pay, on the tiny model and on the language
model (`plot_growth_verdict()`)."""
from __future__ import annotations

from .growth_curves import GROWTH_MARK, value_at
from .lm_envelope import LMEnvelope, load_lm_envelope
from .lm_growth import LMGrowthResults, load_lm_growth
from .origami_growth import GrowthResults, load_growth


def plot_growth_verdict(growth: GrowthResults | None = None, lm_growth: LMGrowthResults | None = None,
                        envelope: LMEnvelope | None = None):
    """Does growing pay? Two of the stored measurements, each grown arm at its best against training
    the big model from scratch on the same compute (means over the seeds): left, the tiny model
    grown ×8 in width on shift; right, notebook 09's language model grown from 2 to 4 layers.
    A ring where the model grew; dotted, scratch's final loss. The language model's panel also says
    what the same arm costs against the best fixed size for its budget (lm_envelope: extra 14),
    since beating the 4-layer target alone would mislead. A matplotlib Figure."""
    from matplotlib.figure import Figure

    growth = growth or load_growth()
    lm_growth = lm_growth or load_lm_growth()
    envelope = envelope or load_lm_envelope()
    fig = Figure(figsize=(7.6, 3.9), layout="constrained")
    left, right = fig.subplots(1, 2)

    scratch = growth.arm("from scratch")
    best = min((a for a in growth.arms if a is not scratch), key=lambda a: a.loss)
    xs, ys, _ = growth.mean_curve("from scratch")
    left.plot(xs, ys, color="black", lw=2.5)
    xs, ys, grown = growth.mean_curve(best.arm)
    left.plot(xs, ys, color="tab:blue", lw=2)
    left.plot(grown, [value_at(xs, ys, g) for g in grown], color="tab:blue", **GROWTH_MARK)
    left.axhline(scratch.loss, color="black", ls=":", lw=1.2)
    left.text(1.0, best.loss - 0.05, f"grown ends at {best.loss:.2f} nats", ha="right", va="top", fontsize=9,
              color="tab:blue")
    left.text(1.0, scratch.loss - 0.04, f"scratch ends at {scratch.loss:.2f}", ha="right", va="top", fontsize=9)
    left.set_ylim(scratch.loss - 0.2, None)
    left.set_title(f"Shift: the tiny model grown ×8 in width\n({best.arm})", fontsize=10)
    left.set_ylabel("held-out loss (nats)", fontsize=9)

    arm = lm_growth.best()
    lo, hi = arm.ratio_range
    xs, ys, _, _ = lm_growth.mean_curve("scratch")
    right.plot(xs, ys, color="black", lw=2.5)
    xs, ys, at, before = lm_growth.mean_curve(arm.name)
    right.plot(xs, ys, color="tab:blue", lw=2)
    right.plot([at], [before], color="tab:blue", **GROWTH_MARK)
    right.axhline(lm_growth.target_loss, color="black", ls=":", lw=1.2)
    right.annotate(f"scratch's final loss reached\nat {lo:.2f}–{hi:.2f} of its FLOPs", xy=((lo + hi) / 2, lm_growth.target_loss),
                   xytext=(0.04, lm_growth.target_loss - 0.09), fontsize=9, color="tab:blue", va="bottom",
                   arrowprops={"arrowstyle": "->", "color": "tab:blue"})
    right.set_ylim(lm_growth.target_loss - 0.1, lm_growth.target_loss + 0.5)
    if arm.name in envelope.rescored:
        best_size = envelope.envelope[1.0][0]
        right.text(0.97, 0.97, f"but against the best fixed size ({best_size}):\n"
                   f"{envelope.rescored[arm.name]['vs_envelope']:.2f}× its compute for this loss",
                   transform=right.transAxes, ha="right", va="top", fontsize=9, color="tab:red")
    right.set_title("Language model: 2 → 4 layers\n(deepen after 0.8 of the budget)" if arm.name == "deepen 2→4, τ=0.8"
                    else f"Language model\n({arm.name})", fontsize=10)
    right.set_ylabel("validation loss (nats per byte)", fontsize=9)
    for ax in (left, right):
        ax.set_xlim(0, 1.02)
        ax.set_xlabel("compute (fraction of scratch's)", fontsize=9)
        ax.tick_params(labelsize=9)
    handles = [right.plot([], [], color="black", lw=2.5)[0], right.plot([], [], color="tab:blue", lw=2)[0],
               right.plot([], [], color="tab:blue", **GROWTH_MARK)[0],
               right.plot([], [], color="black", ls=":", lw=1.2)[0]]
    fig.legend(handles, ["the big model from scratch", "grown from a small model", "where it grew",
                         "scratch's final loss"], loc="outside lower center", ncol=2, fontsize=9)
    return fig
