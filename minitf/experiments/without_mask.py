"""What the causal mask prevents (notebook 03): a next-byte model that may read the byte it must guess.

The same model, start and batches are trained on one paragraph with and without the mask. Without it
the training loss falls far lower, yet the model learned to read the answer, not to guess it: when it
writes, each position sees only the bytes before it, and its loss is near a uniform guess. Trained
live in seconds; nothing is stored.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ..core.config import Config
from ..core.evaluate import masked_loss
from ..core.generate import generate
from ..core.model import Transformer

WINDOW, BATCH, STEPS, LR = 32, 16, 120, 1.5e-2  # window length, windows per batch, optimizer steps
SMALL = Config(d_model=16, d_ff=32, dropout=0.0)


def positions_changed(before: bytes = b"hello", after: bytes = b"helpo") -> None:
    """The positions whose output changes when one input byte changes, in a fresh model with the
    mask and the same weights without it: the future may not change the past. Prints one line each."""
    causal = Transformer(Config()).eval()
    open_ = Transformer(Config(causal=False)).eval()
    open_.load_state_dict(causal.state_dict())  # same weights, only the mask differs
    a, b = torch.tensor([list(before)]), torch.tensor([list(after)])
    for name, model in (("causal", causal), ("no mask", open_)):
        with torch.no_grad():
            changed = ((model(a) - model(b)).abs().amax(-1)[0] > 1e-6).nonzero().flatten().tolist()
        print(f"{name:8s} positions whose output changed: {changed}")


def _train(config: Config, data: torch.Tensor) -> tuple[Transformer, list[float]]:
    """A fresh model (seed 0) trained on STEPS batches of random windows (generator seed 0)."""
    torch.manual_seed(0)
    model = Transformer(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR)
    gen = torch.Generator().manual_seed(0)
    losses = []
    for _ in range(STEPS):
        starts = torch.randint(0, len(data) - WINDOW - 1, (BATCH,), generator=gen).tolist()
        rows = torch.stack([data[s:s + WINDOW + 1] for s in starts])  # (B, L + 1)
        loss = masked_loss(model(rows[:, :-1]), rows[:, 1:])          # targets[:, t] = ids[:, t + 1]
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return model.eval(), losses


@torch.no_grad()
def _loss_from_prefix(model: Transformer, ids: torch.Tensor, targets: torch.Tensor) -> float:
    """The loss when position t sees only ids[:, :t+1], as while writing."""
    logits = torch.stack([model(ids[:, :t + 1])[:, -1] for t in range(ids.size(1))], dim=1)
    return masked_loss(logits, targets).item()


@dataclass
class MaskComparison:
    """Both trained models, their training losses, and their losses on 16 fixed windows read whole
    and from the prefix alone."""
    text: bytes
    models: dict          # "with mask" / "no mask" → the trained model
    train_losses: dict    # name → the loss at each step
    full: dict            # name → loss reading the whole window
    prefix: dict          # name → loss from the prefix alone (writing)
    ids: torch.Tensor

    def plot(self):
        """Training curves, with each model's loss when writing as a dashed line. A Figure."""
        from matplotlib.figure import Figure
        fig = Figure(figsize=(8, 4.2), layout="constrained")
        ax = fig.subplots()
        for color, name in (("C0", "with mask"), ("C1", "no mask")):
            ax.plot(self.train_losses[name], color=color, label=f"{name}: training loss")
            ax.axhline(self.prefix[name], color=color, ls="--", label=f"{name}: loss from the prefix (writing)")
        ax.axhline(math.log(256), color="grey", ls=":", label="uniform guess, ln 256 = 5.55")
        ax.set(xlabel="optimizer step", ylabel="cross-entropy (nats per byte)", ylim=(0, 6.2),
               title="The unmasked model's training loss is not what it gets when it writes")
        ax.legend(loc="upper right", bbox_to_anchor=(1, 0.79), fontsize=9)  # the empty band above the curves
        return fig

    def write(self, prompt: str = "The model ", new_bytes: int = 60) -> None:
        """Each model continues the prompt greedily; prints the text and the share of its words that
        occur in the paragraph."""
        words = set(self.text.decode().split())
        for name, model in self.models.items():
            written = generate(model, prompt, tab=False, max_new_tokens=new_bytes).decode("utf-8", "replace")
            share = sum(w in words for w in written.split()) / max(1, len(written.split()))
            print(f"{name:9s}: {prompt + written!r}")
            print(f"           {share:.0%} of its {len(written.split())} words occur in the text")

    @torch.no_grad()
    def where_it_looks(self) -> None:
        """The unmasked model's mean attention weight on position t+1, per layer and head (prints it)."""
        _, per_layer = self.models["no mask"](self.ids, return_attention=True)  # list of (B, H, T, T)
        next_weight = torch.stack([w.diagonal(offset=1, dim1=-2, dim2=-1).mean(dim=(0, 2)) for w in per_layer])
        for layer, row in enumerate(next_weight.tolist()):
            print(f"layer {layer}: weight on position t+1, per head:", "  ".join(f"{x:.1f}" for x in row))


def compare(text: bytes, config: Config = SMALL) -> MaskComparison:
    """Train the model with and without the mask (same start, same batches) and print, for each, its
    final training loss and its loss on 16 fixed windows read whole and from the prefix alone."""
    data = torch.tensor(list(text))
    rows = torch.stack([data[i:i + WINDOW + 1] for i in range(0, 16 * WINDOW, WINDOW)])  # 16 fixed windows
    ids, targets = rows[:, :-1], rows[:, 1:]
    models, losses, full, prefix = {}, {}, {}, {}
    for name, c in (("with mask", config), ("no mask", config.replace(causal=False))):
        models[name], losses[name] = _train(c, data)
        with torch.no_grad():
            full[name] = masked_loss(models[name](ids), targets).item()
        prefix[name] = _loss_from_prefix(models[name], ids, targets)
    for name in models:
        print(f"{name:9s}: final training loss {losses[name][-1]:.1f}, loss reading the whole window "
              f"{full[name]:.1f}, from the prefix alone {prefix[name]:.1f}")
    print(f"a uniform guess over 256 bytes: {math.log(256):.2f}")
    return MaskComparison(text, models, losses, full, prefix, ids)
