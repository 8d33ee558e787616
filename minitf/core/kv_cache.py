"""A key-value cache: generation feeds only the new byte through the model.

Under the causal mask, the keys and values of position j depend only on bytes 0…j: once computed,
they never change. So while generating, each layer keeps the keys and values of every position
read so far, and a step computes Q, K, V for the new position only, appends its K and V, and lets
its query attend over all cached keys. RoPE rotates the new query and key by their *absolute*
position (the cache length), exactly as the full forward pass would. One step then costs O(T)
instead of the full pass's O(T²), and the logits are the same (tests check it to 1e-5 in float32
and 1e-10 in float64 over whole generated sequences).

The cache is only storage: `model(ids, cache=kv)` runs the model's own forward pass (the same
modules, a learner's own pieces included), which reads and extends it.
"""
from __future__ import annotations

import torch


class LayerCache:
    """One layer's keys and values of the positions read so far: (B, H, length, head_dim) each."""

    def __init__(self):
        self.keys: torch.Tensor | None = None
        self.values: torch.Tensor | None = None

    def append(self, k: torch.Tensor, v: torch.Tensor):
        """Add the new positions' k, v (B, H, T_new, hd); return all of them (B, H, length, hd)."""
        if self.keys is not None:
            k = torch.cat([self.keys, k], dim=2)
            v = torch.cat([self.values, v], dim=2)
        self.keys, self.values = k, v
        return k, v


class KVCache:
    """What a model has read so far: the bytes (coupled position ids need them) and, per layer,
    their keys and values. Pass it to the model: `model(ids, cache=kv)`."""

    def __init__(self, n_layers: int):
        self.layers = [LayerCache() for _ in range(n_layers)]
        self.ids: torch.Tensor | None = None  # (B, length)

    def __len__(self) -> int:
        """How many positions are cached."""
        return 0 if self.ids is None else self.ids.size(1)

    def extend(self, ids: torch.Tensor) -> None:
        """Record the bytes (B, T_new) the model is about to read after the cached ones."""
        self.ids = ids if self.ids is None else torch.cat([self.ids, ids], dim=1)
