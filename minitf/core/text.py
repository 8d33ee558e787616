"""Text for a language model: any file as bytes, split by position, random windows, every byte scored.

There is no vocabulary to build: the bytes are the tokens (as everywhere in minitf), so any file
works, UTF-8 or not. The first 90 % of the file is for training and the last 10 % for validation —
split by position, not at random, so no validation window overlaps a training window. A training
batch is B windows of `context` bytes at random offsets; the target of position t is the byte after
it, and the loss counts every position (there is no prompt part as in the pairs).

A tokenizer (minitf.core.bpe, `read_text(..., tokenizer=)`) turns each split into token ids
instead: the windows are then `context` tokens, and `evaluate_text` still reports nats and bits per
*byte* of the original text (each target token's loss spread over the bytes it stands for), the
only unit in which a byte-level model and a BPE model can be compared.

What a validation loss is worth: `text_baselines` gives the loss of three counting predictors fitted
on the same training split and scored on the same validation bytes (see its docstring).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from .bpe import BPE, train_bpe
from .devices import device_of
from .model import evaluating
from .tokens import VOCAB
from .words import plural

VAL_FRACTION = 0.1
LN2 = math.log(2)


class TextError(ValueError):
    """A text that cannot be trained on: the message names the file and says what is wrong."""


@dataclass(frozen=True)
class TextPart:
    """One split of a text file: its bytes (N,) as uint8, or its token ids (N,) as int32 when a
    tokenizer made them, and the window length the model reads (in tokens: bytes or BPE tokens)."""
    path: str
    name: str           # "train" or "validation"
    data: torch.Tensor  # (N,) uint8, or int32 token ids
    context: int
    tokenizer: BPE | None = None  # None: the bytes are the tokens
    n_bytes: int | None = None    # the split's length in bytes (with a tokenizer)

    def __len__(self) -> int:
        return len(self.data)

    def __repr__(self) -> str:
        if self.tokenizer is None:
            return f"TextPart({self.path!r}, {self.name}: {len(self):,} bytes, context {self.context})"
        return (f"TextPart({self.path!r}, {self.name}: {len(self):,} tokens of {self.n_bytes:,} bytes, "
                f"context {self.context} tokens)")


@dataclass(frozen=True)
class Text:
    """A text file split by position: `train` (the first 90 %) and `val` (the last 10 %)."""
    path: str
    train: TextPart
    val: TextPart

    @property
    def context(self) -> int:
        return self.train.context

    def __repr__(self) -> str:
        return (f"Text({self.path!r}: {len(self.train) + len(self.val):,} bytes = "
                f"{len(self.train):,} train + {len(self.val):,} validation, context {self.context})")


def read_text(path, context: int, max_len: int | None = None,
              val_fraction: float = VAL_FRACTION, tokenizer: BPE | None = None) -> Text:
    """Read any file as bytes and split it: the first (1 − val_fraction) trains, the rest validates.

    Each split must hold at least one window (context tokens and the one after it). Give the
    model's max_len to check that it can read a whole window. tokenizer: each split is encoded
    on its own (a BPE from `train_tokenizer`, trained on the training split only).
    """
    path = Path(path)
    if not isinstance(context, int) or context < 1:
        raise TextError(f"{path}: context must be a positive number of bytes, got {context!r}")
    if max_len is not None and context > max_len:
        raise TextError(f"{path}: context {context} is longer than the model's max_len {max_len}; "
                        f"use --context {max_len} or less (or a model with a larger --max-len)")
    if not 0 < val_fraction < 1:
        raise TextError(f"{path}: val_fraction must be in (0, 1), got {val_fraction}")
    if not path.exists():
        raise TextError(f"{path}: no such file")
    if path.is_dir():
        raise TextError(f"{path}: is a directory, not a text file")
    raw = path.read_bytes()
    if not raw:
        raise TextError(f"{path}: the file is empty: no bytes to learn from")
    data = torch.frombuffer(bytearray(raw), dtype=torch.uint8)
    split = round(len(data) * (1 - val_fraction))
    parts = (TextPart(str(path), "train", data[:split], context),
             TextPart(str(path), "validation", data[split:], context))
    if tokenizer is not None:
        parts = tuple(TextPart(str(path), part.name,
                               torch.tensor(tokenizer.encode(raw[start:end]), dtype=torch.int32),
                               context, tokenizer, end - start)
                      for part, (start, end) in zip(parts, [(0, split), (split, len(raw))]))
    unit = "byte" if tokenizer is None else "token"
    for part in parts:
        if len(part) < context + 1:
            raise TextError(
                f"{path}: too short for a window: its {part.name} split holds "
                f"{plural(len(part), unit, sep=True)} "
                f"(of {len(data):,}), and one window needs context + 1 = {context + 1} (the context "
                "and the byte after it); use a longer file or a smaller context")
    return Text(str(path), *parts)


def check_fits(part: TextPart, model) -> None:
    """The model must read a whole window: context <= max_len."""
    if part.context > model.config.max_len:
        raise TextError(f"{part.path}: context {part.context} is longer than the model's max_len "
                        f"{model.config.max_len}")


def random_windows(part: TextPart, batch_size: int, generator: torch.Generator | None = None):
    """B windows at random offsets: ids (B, T) and targets (B, T), targets[:, t] = ids[:, t + 1]'s
    byte in the text (the byte after position t). T = context."""
    T = part.context
    start = torch.randint(len(part) - T, (batch_size,), generator=generator)  # (B,)
    index = start[:, None] + torch.arange(T)                                 # (B, T)
    return part.data[index].long(), part.data[index + 1].long()


def tiled_windows(part: TextPart, max_windows: int | None = None):
    """Windows side by side, each target byte scored once: ids and targets (N, T).

    Window i reads bytes [iT, iT + T) and predicts [iT + 1, iT + T + 1), so every byte after the
    first is a target exactly once (the last partial window is dropped). max_windows: that many,
    spread evenly over the split (a quicker estimate for curves during training).
    """
    T = part.context
    n = (len(part) - 1) // T
    starts = torch.arange(n) * T
    if max_windows is not None and max_windows < n:
        starts = starts[torch.linspace(0, n - 1, max_windows).round().long()]
    index = starts[:, None] + torch.arange(T)  # (N, T)
    return part.data[index].long(), part.data[index + 1].long()


def train_tokenizer(path, spec: str, val_fraction: float = VAL_FRACTION) -> BPE:
    """The tokenizer `spec` names, trained on the file's training split only (the first
    1 − val_fraction of its bytes): "bpe:N" (N tokens, GPT-2's pre-tokenizer) or "bpe:N:none"
    (no pre-tokenizer: tokens may cross spaces)."""
    words = spec.split(":")
    if words[0] != "bpe" or len(words) not in (2, 3) or not words[1].isdigit() or \
            (len(words) == 3 and words[2] not in ("gpt2", "none")):
        raise TextError(f"tokenizer {spec!r}: give bpe:N (a vocabulary of N tokens, N > 256) or "
                        "bpe:N:none (no pre-tokenizer)")
    if int(words[1]) <= 256:
        raise TextError(f"tokenizer {spec!r}: a BPE vocabulary holds the 256 bytes and at least "
                        "one merge: N > 256")
    path = Path(path)
    if not path.is_file():
        raise TextError(f"{path}: no such file")
    raw = path.read_bytes()
    return train_bpe(raw[:round(len(raw) * (1 - val_fraction))], int(words[1]),
                     words[2] if len(words) == 3 else "gpt2")


@torch.no_grad()
def evaluate_text(model, part: TextPart, max_windows: int | None = None,
                  batch_size: int = 256) -> dict:
    """Mean loss over the split's tiled windows: {"loss" (nats per byte), "bits_per_byte", "bytes"}.

    With a tokenizer, the loss is summed over the target tokens and divided by the bytes those
    tokens stand for; "tokens" and "nats_per_token" say how it was counted."""
    check_fits(part, model)
    device = device_of(model)  # the windows are cut on the CPU, scored where the weights are
    ids, targets = tiled_windows(part, max_windows)
    total = 0.0
    with evaluating(model):
        for start in range(0, len(ids), batch_size):
            logits = model(ids[start:start + batch_size].to(device))  # (B, T, 256)
            total += F.cross_entropy(logits.flatten(0, 1),
                                     targets[start:start + batch_size].flatten().to(device),
                                     reduction="sum").item()
    if part.tokenizer is None:
        loss = total / targets.numel()
        return {"loss": loss, "bits_per_byte": loss / LN2, "bytes": targets.numel()}
    n_bytes = int(torch.tensor(part.tokenizer.token_lengths())[targets].sum())
    return {"loss": total / n_bytes, "bits_per_byte": total / n_bytes / LN2, "bytes": n_bytes,
            "tokens": targets.numel(), "nats_per_token": total / targets.numel()}


@torch.no_grad()
def loss_by_position(model, part: TextPart, max_windows: int | None = None,
                     batch_size: int = 256) -> torch.Tensor:
    """The mean loss (nats) at each position of the split's tiled windows, (T,).

    Position t of a window has read t + 1 bytes, so entry t is what the model pays for a byte
    when it can see only the t + 1 bytes before it: the loss against how much context it had.
    The windows tile the text, so every position sees the same mix of text. max_windows: that many,
    spread evenly over the split, as in `tiled_windows`.
    """
    check_fits(part, model)
    device = device_of(model)
    ids, targets = tiled_windows(part, max_windows)  # (N, T) each
    total = torch.zeros(part.context, dtype=torch.float64)
    with evaluating(model):
        for start in range(0, len(ids), batch_size):
            logits = model(ids[start:start + batch_size].to(device))  # (B, T, 256)
            losses = F.cross_entropy(logits.transpose(1, 2), targets[start:start + batch_size].to(device),
                                     reduction="none")                # (B, T)
            total += losses.double().sum(0).cpu()
    return total / len(ids)


# --- baselines: what counting alone achieves on the same split ------------------------------------

@dataclass(frozen=True)
class TextBaselines:
    """Losses of counting predictors on a validation split, in nats per byte."""
    uniform: float
    unigram: float
    bigram: float
    n_targets: int

    LABELS = {"uniform": "uniform over 256 bytes", "unigram": "unigram counts (add-one)",
              "bigram": "bigram counts (add-one)"}

    def items(self) -> list[tuple[str, float]]:
        """(label, nats per byte) from the weakest baseline to the strongest."""
        return [(label, getattr(self, key)) for key, label in self.LABELS.items()]

    def __repr__(self) -> str:
        width = max(len(label) for label in self.LABELS.values())
        lines = [f"{'baseline':<{width}}  nats/byte  bits/byte"]
        lines += [f"{label:<{width}}  {loss:9.3f}  {loss / LN2:9.3f}" for label, loss in self.items()]
        lines.append(f"({self.n_targets:,} validation bytes scored)")
        return "\n".join(lines)


def text_baselines(text: Text) -> TextBaselines:
    """Uniform, unigram and bigram losses on every validation byte after the first.

    uniform: ln 256 (8 bits) for every byte. unigram: p(b) = (n(b) + 1) / (N + 256), counted on the
    training split. bigram: p(b | a) = (n(a b) + 1) / (n(a ·) + 256), the pair counts of the training
    split. The +1 (Laplace's add-one) keeps a byte never seen in training from costing infinity;
    on a million training bytes it hardly moves the others (add-0.1 or interpolating with the
    unigram changed the bigram loss by less than 0.01 nats here). The bigram knows which byte tends
    to follow which: a model must use more than the previous byte to beat it.
    """
    if text.train.tokenizer is not None:
        raise TextError(f"{text.path}: the baselines count bytes; read the text without a tokenizer")
    train, val = text.train.data.long(), text.val.data.long()
    unigram = torch.bincount(train, minlength=VOCAB).double() + 1                       # (256,)
    pairs = torch.bincount(train[:-1] * VOCAB + train[1:], minlength=VOCAB * VOCAB)
    bigram = pairs.view(VOCAB, VOCAB).double() + 1                                      # (prev, next)
    prev, nxt = val[:-1], val[1:]
    uni_loss = -(unigram / unigram.sum()).log()[nxt].mean().item()
    bi_loss = -(bigram / bigram.sum(1, keepdim=True)).log()[prev, nxt].mean().item()
    return TextBaselines(uniform=math.log(VOCAB), unigram=uni_loss, bigram=bi_loss,
                         n_targets=len(nxt))
