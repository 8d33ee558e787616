"""Checkpoints: config + weights + free-form metadata in one file, loaded with weights_only=True
(no pickled code runs on load)."""
from __future__ import annotations

from pathlib import Path

import torch

from .config import Config
from .files import atomic_write
from .model import Transformer

FORMAT = "minitf-checkpoint-1"


class CheckpointError(ValueError):
    """A file that is not a loadable minitf checkpoint; the message says which and why."""


def save(model: Transformer, path, *, metadata: dict | None = None, overwrite: bool = False) -> Path:
    """Write model to path atomically; an existing file is kept unless overwrite=True."""
    payload = {"format": FORMAT, "config": model.config.to_dict(),
               "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()},
               "metadata": metadata or {}}
    return atomic_write(path, lambda tmp: torch.save(payload, tmp), overwrite=overwrite)


def load(path) -> Transformer:
    """Rebuild the model a checkpoint describes; its metadata is at model.metadata."""
    path = Path(path)
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise
    except Exception as e:
        raise CheckpointError(f"{path}: not a readable checkpoint ({type(e).__name__}: {e})") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise CheckpointError(f"{path}: not a minitf checkpoint (expected format {FORMAT!r})")
    try:
        config = Config.from_dict(payload["config"])
    except (KeyError, TypeError, ValueError) as e:
        raise CheckpointError(f"{path}: bad config in checkpoint: {e}") from None
    model = Transformer(config)
    try:
        model.load_state_dict(payload["state_dict"])
    except RuntimeError as e:
        raise CheckpointError(f"{path}: weights do not match its config: {e}") from None
    model.metadata = payload.get("metadata", {})
    model.eval()
    return model
