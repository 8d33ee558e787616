"""A key-value cache: generation feeds only the new byte through the model.

Under the causal mask, the keys and values of position j depend only on bytes 0…j: once computed,
they never change. So while generating, each layer keeps the keys and values of every position
read so far, and a step computes Q, K, V for the new position only, appends its K and V, and lets
its query attend over all cached keys. RoPE rotates the new query and key by their *absolute*
position (the cache length), exactly as the full forward pass would. One step then costs O(T)
instead of the full pass's O(T²), and the logits are the same (tests check it to 1e-5 in float32
and 1e-10 in float64 over whole generated sequences).

`forward_cached` runs the model's own modules (embedding, norms, projections, FFN, head) in the
order `Block.forward` does; only attention is re-wired to read the cache.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from .rope import rope_angles


class KVCache:
    """Per layer, the keys and values of the positions read so far: (B, H, length, head_dim) each."""

    def __init__(self, n_layers: int):
        self.keys: list[torch.Tensor | None] = [None] * n_layers
        self.values: list[torch.Tensor | None] = [None] * n_layers
        self.ids: torch.Tensor | None = None  # (B, length) the bytes read: coupled position ids need them

    def __len__(self) -> int:
        """How many positions are cached."""
        return 0 if self.keys[0] is None else self.keys[0].size(2)

    def append(self, layer: int, k: torch.Tensor, v: torch.Tensor):
        """Add the new positions' k, v (B, H, T_new, hd); return all of them (B, H, length, hd)."""
        if self.keys[layer] is not None:
            k = torch.cat([self.keys[layer], k], dim=2)
            v = torch.cat([self.values[layer], v], dim=2)
        self.keys[layer], self.values[layer] = k, v
        return k, v


def forward_cached(model, ids: torch.Tensor, cache: KVCache) -> torch.Tensor:
    """Logits (B, T_new, vocab) for ids (B, T_new) that continue the positions in `cache`.

    The first call (empty cache) reads the prompt; each later call usually one new byte.
    """
    config = model.config
    if not config.causal:
        raise ValueError("a KV cache needs a causal model: without the mask, earlier positions "
                         "would change as new bytes arrive")
    start, T = len(cache), ids.size(1)
    if start + T > config.max_len:
        raise ValueError(f"sequence length {start + T} exceeds max_len {config.max_len}")
    pos = None  # sequence ids: start … start+T−1
    if config.position_ids == "coupled":  # a new byte's id depends on where the first TAB was
        cache.ids = ids if cache.ids is None else torch.cat([cache.ids, ids], dim=1)
        pos = model.positions(cache.ids)[:, start:]  # (B, T)
    h = model.embed(ids)  # (B, T, C)
    if config.positional == "sinusoidal":
        h = h + (model.pos_table[start:start + T] if pos is None else model.pos_table[pos])
    h = model.drop(h)
    cos = sin = freq = None
    for layer, block in enumerate(model.blocks):
        inv_freq = getattr(block.attn, "inv_freq", None)
        if inv_freq is not None and (freq is None or not torch.equal(inv_freq, freq)):
            freq = inv_freq
            cos, sin = rope_angles(inv_freq, T, offset=start, positions=pos)  # the new positions' angles

        def attend(x, block=block, layer=layer):
            return cached_attention(block.attn, x, cos, sin, cache, layer)

        if block.pre_norm:  # Block.forward, with attention reading the cache
            h = block.add(h, attend(block.norm1(h)))
            if block.ffn is not None:
                h = block.add(h, block.ffn(block.norm2(h)))
        else:
            h = block.norm1(block.add(h, attend(h)))
            if block.ffn is not None:
                h = block.norm2(block.add(h, block.ffn(h)))
    if model.final_norm is not None:
        h = model.final_norm(h)
    return model.head(h)  # (B, T, vocab)


def cached_attention(attn, x, cos, sin, cache: KVCache, layer: int) -> torch.Tensor:
    """MultiHeadAttention.forward for new positions x (B, T, C), attending over cache + themselves."""
    B, T, _ = x.shape
    q, k, v = attn.qkv(x).split(attn.n_heads * attn.head_dim, dim=-1)  # (B, T, H·hd) each
    q, k, v = (t.view(B, T, attn.n_heads, attn.head_dim).transpose(1, 2) for t in (q, k, v))
    if attn.rope:
        q, k = attn.rotate(q.contiguous(), cos, sin), attn.rotate(k.contiguous(), cos, sin)
    if attn.rope_on_v:
        v = attn.rotate(v.contiguous(), cos, sin)
    k, v = cache.append(layer, k, v)  # (B, H, start + T, hd)
    start = k.size(2) - T
    # new position start+i may look at keys 0 … start+i (True = may look, as SDPA wants it)
    keys, new = torch.arange(k.size(2), device=k.device), torch.arange(T, device=k.device)
    allowed = keys <= start + new[:, None]  # (T, start + T)
    y = F.scaled_dot_product_attention(q, k, v, attn_mask=None if T == 1 else allowed)
    y = y.transpose(1, 2).reshape(B, T, attn.n_heads * attn.head_dim)  # (B, T, H·hd)
    return attn.out(y)
