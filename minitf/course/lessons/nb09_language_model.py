"""Notebook 09: the sampler's distribution and cached attention. Their cases and slips are
`minitf.course.speaking_cases`."""
from __future__ import annotations


from .. import speaking_cases
from ...core.attention import MultiHeadAttention
from ...core.generate import next_byte_probs, next_token, picker
from ...core.kv_cache import LayerCache
from ..declaration import Exercise


EXERCISES = [
    Exercise("next_byte_probs", "09", "sampling: temperature, top-k and top-p reshape the next-byte "
             "distribution", 3, 20, next_byte_probs, speaking_cases.sampling_cases,
             "divide the logits by T before the softmax (T = 0: all the mass on the argmax); top-k "
             "keeps every byte whose logit is at least the k-th largest; top-p keeps, most likely "
             "first, each byte while the mass before it is below p; renormalise what is left",
             options={"diagnoses": speaking_cases.sampling_slips, "hints_by_diagnosis": {
                 "_sampling_slip": "temperature before the softmax, top-k by value (ties kept), then "
                                   "top-p on the renormalised top-k distribution keeping the byte "
                                   "that crosses p, and one renormalisation at the end",
                 "rows_not_summing_to_1": "divide what is left by its sum: each row sums to 1",
                 "not_finite": "a row with nothing kept gives NaN: the most likely byte is always "
                               "kept (top-p: the mass before it is 0 < p)"}},
             library={next_byte_probs: "minitf.next_byte_probs", next_token: "minitf.next_token",
                      picker: "minitf.core.generate.picker"},
             own_work="torch.softmax, .topk, .sort, .cumsum, .scatter, masked_fill and "
                      "F.one_hot are fine (choosing what to keep is the exercise): "
                      "minitf.next_byte_probs is the sampler's distribution itself"),
    Exercise("cached_attention", "09", "a KV cache: the new positions' keys join the cache, their "
             "queries attend over all of it", 3, 20, speaking_cases.cached_attention_reference,
             speaking_cases.cached_attention_cases,
             "start = keys.size(2) positions are cached; rotate the new q and k by RoPE at positions "
             "start … start+T−1 (rope_angles(attn.inv_freq, T, offset=start)), append k and v along "
             "dim 2, and mask with the rows start … of causal_mask(start + T)",
             result_names=("output", "keys", "values"),
             options={"diagnoses": speaking_cases.cached_attention_slips, "hints_by_diagnosis": {
                 "shape": "return the cache with this step appended: keys and values (B, H, start + T, "
                          "head_dim), torch.cat([keys, k], dim=2); an unappended cache leaves the "
                          "next step blind to this one",
                 "_cache_slip": "RoPE at the absolute positions (offset=start), attention over "
                                "every cached key and the new ones, mask rows causal_mask(start + "
                                "T)[start:]"}},
             library={MultiHeadAttention.forward: "minitf.MultiHeadAttention (its forward)",
                      MultiHeadAttention.attend: "minitf.MultiHeadAttention.attend",
                      LayerCache.append: "minitf.core.kv_cache.LayerCache.append"},
             own_work="attn.qkv, attn.rotate, attn.out, rope_angles, causal_mask, torch.cat and "
                      "minitf.attention (or your own) are fine (the positions, the cache and the "
                      "mask rows are the exercise): the attention module's own forward is the "
                      "cached step itself"),
]
