"""Where a trained embedding puts the printable bytes (notebook 01).

The 95 printable rows of a model's table along their two directions of largest spread (principal
components), coloured by byte value, with two runs of neighbours (a → f, 0 → 5) joined; and the
average cosine similarity of neighbouring bytes (c, c + 1) against any two, so the picture's answer
is also a number.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

PRINTABLE_ROWS = slice(32, 127)  # space … ~


def plot_byte_embedding(model, runs=(("abcdef", "tab:red"), ("012345", "tab:blue"))):
    """Prints the average cosine similarity of bytes c and c + 1 and of any two printable bytes, and
    draws the rows' two principal directions. A matplotlib Figure."""
    from matplotlib.figure import Figure

    rows = model.embed.weight.detach().double()[PRINTABLE_ROWS]  # (95, d_model)
    centred = rows - rows.mean(0)
    _, S, V = torch.linalg.svd(centred, full_matrices=False)
    xy = centred @ V[:2].T                                        # (95, 2)
    share = (S[:2] ** 2).sum() / (S ** 2).sum()
    fig = Figure(figsize=(7.5, 5.6), layout="constrained")
    ax = fig.subplots()
    dots = ax.scatter(xy[:, 0], xy[:, 1], c=range(32, 127), cmap="viridis", s=40)
    for text, colour in runs:                                     # runs of neighbours, labelled
        chain = [ord(ch) - 32 for ch in text]
        ax.plot(xy[chain, 0], xy[chain, 1], color=colour, lw=1.2, label=" → ".join(text))
        for j, ch in zip(chain, text):
            ax.annotate(ch, xy[j].tolist(), xytext=(4, 3), textcoords="offset points", fontsize=11,
                        color=colour, weight="bold")
    ax.legend(loc="upper left", bbox_to_anchor=(0, -0.1), ncols=2)
    fig.colorbar(dots, label="byte value (32 = space … 126 = ~)")
    ax.set(xlabel="principal direction 1", ylabel="principal direction 2",
           title=f"the embedding: 95 printable bytes ({share:.0%} of their spread shown)")
    unit = F.normalize(rows, dim=1)
    cosine = unit @ unit.T                                        # (95, 95)
    neighbours = cosine.diagonal(1).mean().item()                 # bytes c and c + 1
    any_two = ((cosine.sum() - cosine.diagonal().sum()) / (95 * 94)).item()
    print(f"average cosine similarity: bytes c and c + 1 {neighbours:.2f}; any two bytes {any_two:.2f}")
    return fig
