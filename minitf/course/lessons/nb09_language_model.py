"""Notebook 09's two exercises: their declarations, the cases they are checked on and the slips
they recognise.

`next_byte_probs`: the distribution sampling draws from (temperature, top-k, top-p), under minitf's
one sampling rule (`minitf.core.generate`): temperature 0 is greedy, all the mass on the argmax.
`cached_attention`: one attention sub-layer of a cached generation step. The T new positions follow
the S whose keys and values are cached: rotate their queries and keys by RoPE at their absolute
positions S … S+T−1, append the keys and values, let the queries attend over all S+T keys through
the rows S … S+T−1 of the causal mask.

Each slip is a variant of the right computation; a learner's result that equals one is named in
words. `minitf.course.speaking` runs the pieces in a model.
"""
from __future__ import annotations

import torch

from ...core.attention import MultiHeadAttention, attention, causal_mask
from ...core.config import Config
from ...core.generate import next_byte_probs, next_token, picker
from ...core.kv_cache import LayerCache
from ...core.rope import rope_angles
from ..cases import merge_heads, random_case, same, split_heads
from ..declaration import Exercise, on_face, refused

# --- next_byte_probs ---------------------------------------------------------------------------------


def sampling_cases() -> list[tuple]:
    """(logits, temperature, top_k, top_p): each setting alone, greedy, ties at the k-th logit, a
    nucleus whose border byte crosses p, everything at once, and a full 256-byte row."""
    plain = random_case(2, 10, seed=0, low=-3, high=3)
    tied = torch.tensor([[2.0, 1.0, 1.0, 1.0, 0.5, -1.0, 0.0, 1.5, -2.0, 0.25],   # 3rd largest: 1.0, three times
                         [0.0, 3.0, 1.0, 1.0, -1.0, 2.0, 0.5, -0.5, 0.0, 1.0]], dtype=torch.float64)
    # softmax of these: 0.5, 0.3, 0.2 (the rest next to nothing): p = 0.7 keeps two bytes, the
    # second being the one whose probability carries the sum past 0.7
    nucleus = torch.log(torch.tensor([[0.5, 0.3, 0.2] + [1e-12] * 7,
                                      [0.25, 0.15, 0.6] + [1e-12] * 7], dtype=torch.float64))
    return [(plain, 1.0, None, None), (plain, 0.5, None, None), (plain, 2.0, None, None),
            (plain, 0.0, None, None), (tied, 1.0, 3, None), (nucleus, 1.0, None, 0.7),
            (random_case(2, 10, seed=1, low=-3, high=3), 0.8, 5, 0.6), (random_case(1, 256, seed=2, low=-3, high=3), 0.7, 40, 0.9)]


def _top_p_keep(probs, top_p, rule):
    """Which bytes a nucleus rule keeps, in the original order."""
    sorted_probs, order = probs.sort(-1, descending=True)
    cumulative = sorted_probs.cumsum(-1)
    keep_sorted = rule(cumulative - sorted_probs, cumulative, top_p)
    return torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)


def _probs_variant(logits, temperature, top_k, top_p, *, temperature_after=False,
                   topk_exact=False, top_p_rule=None, renormalise=True, top_p_first=False):
    """next_byte_probs with one slip switched on (none: the right answer)."""
    if temperature == 0:
        return torch.nn.functional.one_hot(logits.argmax(-1), logits.size(-1)).to(logits.dtype)
    scaled = logits if temperature_after else logits / temperature
    keep = torch.ones_like(logits, dtype=torch.bool)
    if top_k is not None:
        if topk_exact:  # exactly k bytes, ties at the border cut by index
            keep = torch.zeros_like(keep).scatter(-1, scaled.topk(top_k, dim=-1).indices, True)
        else:
            keep = scaled >= scaled.topk(top_k, dim=-1).values[..., -1:]
    probs = scaled.softmax(-1)
    if temperature_after:  # the softmax first, then divided by T
        probs = probs / temperature
    if top_p is not None and top_p < 1:
        rule = top_p_rule or (lambda before, cumulative, p: before < p)
        base = probs if top_p_first else (probs * keep) / (probs * keep).sum(-1, keepdim=True)
        keep = keep & _top_p_keep(base, top_p, rule)
    probs = probs * keep
    return probs / probs.sum(-1, keepdim=True) if renormalise else probs


def sampling_slips(logits, temperature, top_k, top_p):
    """Recognisers (got, expected) → words, for this case's typical slips."""
    v = lambda **slip: _probs_variant(logits, temperature, top_k, top_p, **slip)
    cut = top_k is not None or (top_p is not None and top_p < 1)
    slips = []
    if temperature == 0:
        slips += [(logits.softmax(-1), "yours is the softmax at T = 1: temperature 0 means greedy "
                   "decoding, all the mass on the most likely byte (a one-hot row on the argmax)")]
    if temperature not in (0, 1):
        if not cut:
            slips.append((v(temperature_after=True, renormalise=False),
                          "yours divides the probabilities by T after the softmax, so a row no longer "
                          "sums to 1: the temperature divides the logits, before the softmax "
                          "(softmax(logits / T))"))
        slips += [(_probs_variant(logits, 1.0, top_k, top_p), "yours is the distribution at T = 1: "
                   "the temperature is left out, or applied after the softmax and undone by "
                   "renormalising; it divides the logits, before the softmax (softmax(logits / T))"),
                  (_probs_variant(logits * temperature, 1.0, top_k, top_p),
                   "yours multiplies the logits by T: divide them (T < 1 sharpens, T > 1 flattens)")]
    if top_k is not None:
        slips.append((v(topk_exact=True), f"yours keeps exactly k = {top_k} bytes where several "
                      "logits tie with the k-th largest: keep every byte whose logit is at least the "
                      "k-th largest (logits >= kth), as minitf does, so equal logits are treated "
                      "alike"))
    if top_p is not None and top_p < 1:
        slips.append((v(top_p_rule=lambda before, cumulative, p: cumulative <= p),
                      "yours drops the byte whose probability carries the running sum past p, so it "
                      "keeps one byte too few: keep each byte while the mass of the more likely bytes "
                      "BEFORE it is still below p (cumulative − p_i < p); the crossing byte stays"))
        if top_k is not None:
            slips.append((v(top_p_first=True), "yours measures the nucleus on the full softmax: "
                          "top-k comes first, then top-p on what is left, renormalised"))
    if cut:
        slips.append((v(renormalise=False), "yours does not renormalise: after cutting the tail, "
                      "divide by the sum of what is left so the row sums to 1 again"))

    def recognise(got, expected):
        if temperature == 0 and isinstance(got, torch.Tensor) and got.isnan().any():
            return ("yours divides by T = 0, which gives NaN: temperature 0 means greedy decoding, a "
                    "one-hot row on the argmax; test for it before dividing")
        return next((words for result, words in slips if same(got, result)), None)
    recognise.__name__ = "_sampling_slip"
    return (recognise,)


# --- cached_attention ---------------------------------------------------------------------------------


def attention_layer(seed: int, d_model: int = 8, n_heads: int = 2) -> MultiHeadAttention:
    """A float64 attention sub-layer with random weights (biases included), RoPE on Q and K."""
    torch.manual_seed(seed)
    attn = MultiHeadAttention(Config(d_model=d_model, n_heads=n_heads, dropout=0.0)).double()
    with torch.no_grad():
        for p in attn.parameters():
            p.uniform_(-0.6, 0.6)
    return attn


def cached_attention_reference(attn, x, keys, values):
    """minitf's own cached step: the module's forward with a LayerCache holding keys and values,
    RoPE angles for the positions after them. Returns (output, keys, values) of all positions."""
    start = keys.size(2)
    kv = LayerCache()
    if start:
        kv.append(keys, values)
    cos, sin = rope_angles(attn.inv_freq, x.size(1), offset=start)
    out, _ = attn(x, cos, sin, kv=kv)
    return out, kv.keys, kv.values


def _step_variant(attn, x, keys, values, *, rope_at_zero=False, mask="causal", over_cached=True):
    """The cached step written out, with one slip switched on (none: the right answer)."""
    T, H, hd = x.size(1), attn.n_heads, attn.head_dim
    start = keys.size(2)
    q, k, v = (split_heads(t, H) for t in attn.qkv(x).split(H * hd, dim=-1))
    cos, sin = rope_angles(attn.inv_freq, T, offset=0 if rope_at_zero else start)
    q, k = attn.rotate(q, cos, sin), attn.rotate(k, cos, sin)
    all_k, all_v = torch.cat([keys, k], 2), torch.cat([values, v], 2)
    S = start + T
    rows = {"causal": causal_mask(S)[start:], "top": causal_mask(S)[:T], "none": None}[mask]
    if over_cached:
        y, _ = attention(q, all_k, all_v, rows)
    else:  # the new queries see only the new keys
        y, _ = attention(q, k, v, causal_mask(T))
    out = attn.out(merge_heads(y))
    return out, all_k, all_v


def cached_attention_cases() -> list[tuple]:
    """(attn, x, keys, values): one new byte after 4 cached (a generation step), the first step
    (nothing cached yet: the prompt), and 3 new positions after 2 (the mask's rows matter)."""
    cases = []
    for seed, (B, S, T) in enumerate([(1, 4, 1), (2, 0, 3), (2, 2, 3)]):
        attn = attention_layer(seed)
        g = torch.Generator().manual_seed(100 + seed)
        past, x = random_case(B, S, 8, seed=g), random_case(B, T, 8, seed=g)
        keys = values = torch.zeros(B, 2, 0, 4, dtype=torch.float64)  # nothing cached yet
        if S:  # the cache of the S positions read before
            with torch.no_grad():
                _, keys, values = cached_attention_reference(attn, past, keys, values)
        cases.append((attn, x, keys, values))
    return cases


def cached_attention_slips(attn, x, keys, values):
    """Recognisers for the cache's typical slips: RoPE at position 0, the wrong mask rows, no mask,
    the cached keys left out. (Keys not appended come back one step short: a wrong shape, which
    the exercise's hint for "shape" names.)"""
    with torch.no_grad():
        v = lambda **slip: _step_variant(attn, x, keys, values, **slip)
        start, T = keys.size(2), x.size(1)
        slips = []
        if start:
            slips += [(v(rope_at_zero=True), "yours rotates the new query and key as if they stood at "
                       "position 0, 1, …: RoPE turns them by their absolute position, start = the number "
                       "of cached positions (keys.size(2)): rope_angles(attn.inv_freq, T, offset=start)"),
                      (v(over_cached=False), "yours lets the new queries attend over the new keys only: "
                       "they must see every cached key too (attend over torch.cat([keys, k], dim=2))"),
                      (v(mask="top"), "yours masks with the first T rows of the causal mask: the new "
                       "queries are positions start … start+T−1, so their rows are "
                       "causal_mask(start + T)[start:]")]
        if T > 1:
            slips.append((v(mask="none"), "yours does not mask: with several new positions, each may "
                          "see only the keys up to itself (causal_mask(start + T)[start:])"))
    slips = [(tuple(t.detach() for t in result), words) for result, words in slips]

    def recognise(got, expected):
        return next((words for result, words in slips if any(same(got, r) for r in result)), None)
    recognise.__name__ = "_cache_slip"
    return (recognise,)


def my_next_byte_probs(logits, temperature=1.0, top_k=None, top_p=None):
    if temperature == 0:  # greedy: all the mass on the most likely byte
        return torch.nn.functional.one_hot(logits.argmax(-1), logits.size(-1)).to(logits.dtype)
    logits = logits / temperature                   # before the softmax: T < 1 sharpens
    if top_k is not None:                           # every byte at least as likely as the k-th
        kth = logits.topk(top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = torch.softmax(logits, dim=-1)
    if top_p is not None and top_p < 1:
        sorted_probs, order = probs.sort(dim=-1, descending=True)
        before = sorted_probs.cumsum(-1) - sorted_probs   # the mass of the more likely bytes
        keep = torch.zeros_like(probs).scatter(-1, order, (before < top_p).to(probs.dtype))
        probs = probs * keep                        # the byte that crosses p stays
    return probs / probs.sum(-1, keepdim=True)      # renormalise what is left


def my_cached_attention(attn, x, keys, values):
    B, T, _ = x.shape
    H, hd = attn.n_heads, attn.head_dim
    start = keys.size(2)                                   # positions already in the cache
    q, k, v = attn.qkv(x).split(H * hd, dim=-1)            # (B, T, H·hd) each
    q, k, v = (t.view(B, T, H, hd).transpose(1, 2) for t in (q, k, v))  # (B, H, T, hd)
    cos, sin = rope_angles(attn.inv_freq, T, offset=start)  # at their absolute positions
    q, k = attn.rotate(q, cos, sin), attn.rotate(k, cos, sin)
    keys = torch.cat([keys, k], dim=2)                     # (B, H, start + T, hd)
    values = torch.cat([values, v], dim=2)
    mask = causal_mask(start + T, x.device)[start:]        # the rows of the new queries
    y, _ = attention(q, keys, values, mask)                # (B, H, T, hd)
    return attn.out(y.transpose(1, 2).reshape(B, T, H * hd)), keys, values


EXERCISES = [
    Exercise(name="next_byte_probs", notebook="09",
             teaches="sampling: temperature, top-k and top-p reshape the next-byte "
             "distribution", difficulty=3, minutes=20, solution=my_next_byte_probs, reference=next_byte_probs,
             cases=sampling_cases,
             hint="divide the logits by T before the softmax (T = 0: all the mass on the argmax); top-k "
             "keeps every byte whose logit is at least the k-th largest; top-p keeps, most likely "
             "first, each byte while the mass before it is below p; renormalise what is left",
             options={"diagnoses": sampling_slips, "hints_by_diagnosis": {
                 "_sampling_slip": "temperature before the softmax, top-k by value (ties kept), then "
                                   "top-p on the renormalised top-k distribution keeping the byte "
                                   "that crosses p, and one renormalisation at the end",
                 "rows_not_summing_to_1": "divide what is left by its sum: each row sums to 1",
                 "not_finite": "a row with nothing kept gives NaN: the most likely byte is always "
                               "kept (top-p: the mass before it is 0 < p)"}},
             library=refused(on_face(next_byte_probs),
                             (next_token, "minitf.next_token"), picker),
             own_work="torch.softmax, .topk, .sort, .cumsum, .scatter, masked_fill and "
                      "F.one_hot are fine (choosing what to keep is the exercise): "
                      "minitf.next_byte_probs is the sampler's distribution itself"),
    Exercise(name="cached_attention", notebook="09",
             teaches="a KV cache: the new positions' keys join the cache, their "
             "queries attend over all of it", difficulty=3, minutes=20, solution=my_cached_attention,
             reference=cached_attention_reference,
             cases=cached_attention_cases,
             hint="start = keys.size(2) positions are cached; rotate the new q and k by RoPE at positions "
             "start … start+T−1 (rope_angles(attn.inv_freq, T, offset=start)), append k and v along "
             "dim 2, and mask with the rows start … of causal_mask(start + T)",
             result_names=("output", "keys", "values"),
             options={"diagnoses": cached_attention_slips, "hints_by_diagnosis": {
                 "shape": "return the cache with this step appended: keys and values (B, H, start + T, "
                          "head_dim), torch.cat([keys, k], dim=2); an unappended cache leaves the "
                          "next step blind to this one",
                 "_cache_slip": "RoPE at the absolute positions (offset=start), attention over "
                                "every cached key and the new ones, mask rows causal_mask(start + "
                                "T)[start:]"}},
             library=refused((MultiHeadAttention.forward, "minitf.MultiHeadAttention (its forward)"),
                             on_face(MultiHeadAttention.attend),
                             LayerCache.append),
             own_work="attn.qkv, attn.rotate, attn.out, rope_angles, causal_mask, torch.cat and "
                      "minitf.attention (or your own) are fine (the positions, the cache and the "
                      "mask rows are the exercise): the attention module's own forward is the "
                      "cached step itself",
             optional=True),
]
