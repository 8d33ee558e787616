"""Reference solutions of the course's exercises, written the way a learner would write them.

They are deliberately plain (a loop where a loop is clearer, no fused kernels): each is the answer
a notebook shows, collapsed, after its exercise. The tests run every one of them through its
exercise's check, and check that each notebook's "Solution" block is this file's code, so the
solutions, the checks and the notebooks cannot drift apart. notebook 08 builds a model from them
wherever a learner has not written a piece yet.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from ..core.attention import attention, causal_mask
from ..core.rope import rope_angles
from ..core.tokens import EOS, IGNORE, PAD, TAB
from .by_hand import F1, F2, T


def my_embed(ids, table):
    # one row of the table per byte id: (B, T) ids → (B, T, C) vectors
    return table[ids]


def my_count_parameters(config):
    V, C, L, F = config.vocab_size, config.d_model, config.n_layers, config.d_ff
    embedding = V * C
    attention = 4 * (C * C + C)     # W_Q, W_K, W_V, W_O, each with a bias
    ffn = (C * F + F) + (F * C + C)  # up C→F and down F→C, with biases
    norms = 2 * (C + C)             # two LayerNorms per layer: γ and β
    head = C * V + V                # the output head, with its bias
    return embedding + L * (attention + ffn + norms) + head


def my_apply_rope(x, cos, sin):
    a = x[..., 0::2]  # first element of every pair: dims 0, 2, 4, …
    b = x[..., 1::2]  # second element: dims 1, 3, 5, …
    a_rot = a * cos - b * sin
    b_rot = a * sin + b * cos
    out = torch.empty_like(x)
    out[..., 0::2] = a_rot  # put each rotated pair back in its own two slots
    out[..., 1::2] = b_rot
    return out


def my_causal_mask(T):
    i = torch.arange(T)[:, None]  # query positions, as a column
    j = torch.arange(T)[None, :]  # key positions, as a row
    return j > i                  # True where the key is in the query's future


def my_softmax(x):
    z = x - x.amax(-1, keepdim=True)      # the row's largest entry becomes 0: e^z ≤ 1, no overflow
    e = z.exp()                           # a masked −inf entry gives e^−inf = 0
    return e / e.sum(-1, keepdim=True)    # each row sums to 1


def my_attention(q, k, v, mask):
    d = q.size(-1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)  # (B, H, T, T)
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))  # the future gets weight e^-inf = 0
    weights = my_softmax(scores)                         # yours, over the keys: each row sums to 1
    return weights @ v, weights


def my_multi_head_attention(attn, x, cos, sin):
    B, T, C = x.shape
    H, hd = attn.n_heads, attn.head_dim
    q, k, v = attn.qkv(x).split(H * hd, dim=-1)                        # (B, T, H·hd) each
    q, k, v = (t.view(B, T, H, hd).transpose(1, 2) for t in (q, k, v))  # (B, H, T, hd): one per head
    q, k = attn.rotate(q, cos, sin), attn.rotate(k, cos, sin)          # RoPE on each head's q and k
    y, weights = my_attention(q, k, v, my_causal_mask(T).to(x.device))  # (B, H, T, hd), (B, H, T, T)
    y = y.transpose(1, 2).reshape(B, T, H * hd)                        # heads side by side again
    return attn.out(y), weights                                        # W_O mixes the heads


def my_layer_norm(x, weight, bias, eps):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)  # biased: divide by C, not C − 1
    return (x - mean) / torch.sqrt(var + eps) * weight + bias


def my_rms_norm(x, weight, eps):
    rms = torch.sqrt((x ** 2).mean(-1, keepdim=True) + eps)
    return x / rms * weight


def my_feed_forward(x, w_up, b_up, w_down, b_down):
    hidden = torch.relu(x @ w_up.T + b_up)  # (B, T, d_ff); nn.Linear stores W as (out, in)
    return hidden @ w_down.T + b_down        # (B, T, C)


def my_swiglu(x, w_up, w_gate, w_down):
    import torch.nn.functional as F
    hidden = F.silu(x @ w_up.T) * (x @ w_gate.T)  # (..., d_ff): SiLU on up, times the linear gate
    return hidden @ w_down.T                       # back to (..., C); the modern block has no biases


def my_block(block, h, cos, sin):
    if block.pre_norm:  # h + f(norm(h)): the stream itself is never normalised
        a, weights = block.attn(block.norm1(h), cos, sin, need_weights=True)
        h = h + a
        h = h + block.ffn(block.norm2(h))      # the FFN reads the stream after attention's addition
    else:               # post-norm: norm(h + f(h)), each sub-layer with its own norm
        a, weights = block.attn(h, cos, sin, need_weights=True)
        h = block.norm1(h + a)
        h = block.norm2(h + block.ffn(h))
    return h, weights


def my_make_batch(pairs):
    seqs = [[*p.input, TAB, *p.output, EOS] for p in pairs]
    T = max(len(s) for s in seqs) - 1  # the model never reads the last byte
    ids = torch.full((len(pairs), T), PAD)
    targets = torch.full((len(pairs), T), IGNORE)
    for row, (pair, seq) in enumerate(zip(pairs, seqs)):
        n = len(seq) - 1
        ids[row, :n] = torch.tensor(seq[:-1])
        for t in range(len(pair.input), n):  # from the TAB on, position t predicts seq[t + 1]
            targets[row, t] = seq[t + 1]
    return ids, targets


def my_ablate_head(model, layer, head):
    import copy
    model = copy.deepcopy(model)
    hd = model.config.head_dim
    with torch.no_grad():
        # W_O reads the heads side by side: zeroing this head's columns removes its contribution
        model.blocks[layer].attn.out.weight[:, head * hd:(head + 1) * hd] = 0
    return model


def my_widen_weight(W, k):
    # k × k copies of W, each divided by k: the k copies of x add back up to W x
    return torch.cat([torch.cat([W / k] * k, dim=1)] * k, dim=0)


__all__ = [name for name in dir() if name.startswith("my_")]


def my_position_ids(ids):
    B, T = ids.shape
    t = torch.arange(T)                            # the usual numbering 0, 1, 2, …
    out = torch.zeros(B, T, dtype=torch.long)
    for b in range(B):
        row = ids[b].tolist()
        tab = row.index(TAB) if TAB in row else T  # the first TAB (T: the row has none)
        out[b] = torch.where(t < tab, t + 1, t - tab)  # input j → j + 1; TAB → 0; output j → j + 1
    return out


def my_byte_circle(k):
    E = torch.zeros(256, 4, dtype=torch.float64)
    for b in range(32, 127):                   # the 95 printable bytes
        a = k * 2 * math.pi * (b - 32) / 95    # one step of k·2π/95 per byte, 126 → 32 a full turn
        E[b] = math.cos(a) * F1 + math.sin(a) * F2
    E[TAB] = E[EOS] = T                        # the third direction, off the byte plane
    return E


def my_query(S, omega):
    # pair 1: one RoPE step ahead of a byte key's (1, 0); pair 2: TAB's channel
    return math.sqrt(S) * torch.tensor([math.cos(omega), math.sin(omega), 1.0, 0.0],
                                       dtype=torch.float64)


def my_tab_score(S, omega):
    # halfway between the source byte's S and a neighbour's S·cos ω
    return (S + S * math.cos(omega)) / 2


def my_value_rotation(k):
    turn = k * 2 * math.pi / 95                             # one byte further round the circle
    R = torch.tensor([[math.cos(turn), -math.sin(turn)],
                      [math.sin(turn), math.cos(turn)]], dtype=torch.float64)
    A = torch.stack([T, F1, F2], dim=1)                     # (4, 3): the three directions as columns
    inside = torch.eye(3, dtype=torch.float64)
    inside[1:, 1:] = R                                      # T stays, the byte plane turns
    return A @ inside @ A.T


def my_model_forward(model, ids):
    from minitf.core.rope import rope_angles
    B, T = ids.shape
    h = model.embed(ids)                                   # (B, T, C)
    pos = model.positions(ids)                             # None: 0, 1, 2, …; coupled ids restart at TAB
    cos, sin = rope_angles(model.blocks[0].attn.inv_freq, T, positions=pos)
    for block in model.blocks:
        h, _ = block(h, cos, sin)                          # each block returns (h, weights)
    if model.final_norm is not None:                       # pre-norm only: the stream, normalised once more
        h = model.final_norm(h)
    return model.head(h)                                   # (B, T, 256); tied to embed if the config says so


# --- the training core (notebook 08) ---------------------------------------------------------------

def my_output_loss(logits, targets):
    from minitf.core.tokens import IGNORE               # −100: the positions that are not scored
    keep = targets != IGNORE                            # the output bytes and EOS: what is scored
    logp = torch.log_softmax(logits, dim=-1)            # (B, T, V) log-probabilities
    safe = torch.where(keep, targets, 0)                # any valid index where the target is IGNORE
    picked = logp.gather(-1, safe[..., None])[..., 0]   # (B, T) log-prob of each target byte
    return -(picked * keep).sum() / keep.sum()          # mean over the kept positions only


def my_clip_gradients(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]  # a list: a generator is used up once
    total = torch.stack([g.norm() for g in grads]).norm()       # √(‖g₁‖² + ‖g₂‖² + …): ONE norm
    if total > max_norm:                                        # only ever scale down
        for g in grads:
            g.mul_(max_norm / (total + 1e-6))                   # in place; + 1e-6 as PyTorch does


def my_train_step(model, optimizer, ids, targets, loss_fn, clip=1.0):
    optimizer.zero_grad()                               # .grad would otherwise add up step after step
    loss = loss_fn(model(ids), targets)
    loss.backward()
    my_clip_gradients(model.parameters(), clip)         # your clipping, from the exercise above
    optimizer.step()                                    # after backward and clipping
    return loss


def my_lr_at(step, steps, lr, warmup, min_lr_ratio=0.1):
    import math
    if step < warmup:
        return lr * (step + 1) / warmup                 # step 0 gets lr/warmup, step warmup−1 gets lr
    progress = (step - warmup) / max(1, steps - warmup)  # 0 → 1 over the steps after the warm-up
    progress = min(1, progress)                         # past the end: hold the floor
    floor = lr * min_lr_ratio
    return floor + (lr - floor) * 0.5 * (1 + math.cos(math.pi * progress))


def my_adamw(param, grad, m, v, t, lr, betas, eps, weight_decay):
    beta1, beta2 = betas
    param = param * (1 - lr * weight_decay)             # decoupled decay: on the weight, not the gradient
    m = beta1 * m + (1 - beta1) * grad                  # running mean of the gradient
    v = beta2 * v + (1 - beta2) * grad ** 2             # running mean of its square
    m_hat = m / (1 - beta1 ** t)                        # bias correction: m and v start at 0
    v_hat = v / (1 - beta2 ** t)
    param = param - lr * m_hat / (v_hat.sqrt() + eps)   # eps outside the square root
    return param, m, v


def my_train_loop(model, optimizer, next_batch, step_fn, schedule, steps, eval_every, evaluate):
    history = {"loss": [], "lr": [], "val": []}
    for step in range(steps):
        rate = schedule(step)
        for group in optimizer.param_groups:            # the rate this step runs with
            group["lr"] = rate
        ids, targets = next_batch()
        loss = step_fn(model, optimizer, ids, targets)
        history["loss"].append(loss.item())             # a number, not the tensor and its graph
        history["lr"].append(rate)
        if (step + 1) % eval_every == 0:                # after steps eval_every, 2·eval_every, …
            history["val"].append({"step": step + 1, **evaluate(model)})
            model.train()
    return history


# --- notebook 09: the sampler and the cached step -----------------------------------------------------

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


# --- notebook 08: your model as modules (the classes of your file, my_parts/model.py) ---------------

class MyAttention(nn.Module):
    """Multi-head attention: the parameters live here, your my_multi_head_attention computes."""

    def __init__(self, config):
        super().__init__()
        self.n_heads, self.head_dim = config.n_heads, config.head_dim
        inner = config.n_heads * config.head_dim
        self.qkv = nn.Linear(config.d_model, 3 * inner)  # W_Q, W_K, W_V in one matrix
        self.out = nn.Linear(inner, config.d_model)      # W_O: the heads back into the stream
        pairs = torch.arange(0, self.head_dim, 2, dtype=torch.float64)
        theta = config.positions.rope_base ** (-pairs / self.head_dim)  # one frequency per pair
        # a buffer: saved with the weights and moved by .to(), but not trained
        self.register_buffer("inv_freq", theta.float().expand(config.n_heads, -1).clone())

    def rotate(self, x, cos, sin):
        return my_apply_rope(x, cos, sin)  # yours, notebook 02

    def forward(self, x, cos, sin, need_weights=False):
        y, weights = my_multi_head_attention(self, x, cos, sin)  # yours, notebook 03
        return y, (weights if need_weights else None)


class MyLayerNorm(nn.Module):
    """LayerNorm's γ and β, computed by your my_layer_norm."""

    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))   # γ
        self.bias = nn.Parameter(torch.zeros(dim))    # β

    def forward(self, x):
        return my_layer_norm(x, self.weight, self.bias, self.eps)  # yours, notebook 04


class MyFeedForward(nn.Module):
    """Up to d_ff, ReLU, back down: your my_feed_forward with these two layers' weights."""

    def __init__(self, config):
        super().__init__()
        self.up = nn.Linear(config.d_model, config.d_ff)
        self.down = nn.Linear(config.d_ff, config.d_model)

    def forward(self, x):
        return my_feed_forward(x, self.up.weight, self.up.bias, self.down.weight, self.down.bias)


class MyBlock(nn.Module):
    """Attention and the FFN, each with its norm; your my_block adds them to the stream."""

    def __init__(self, config):
        super().__init__()
        self.pre_norm = config.norm_position == "pre"
        self.norm1 = MyLayerNorm(config.d_model, config.norm_eps)  # one norm per sub-layer
        self.attn = MyAttention(config)
        self.norm2 = MyLayerNorm(config.d_model, config.norm_eps)
        self.ffn = MyFeedForward(config)

    def forward(self, h, cos, sin, need_weights=False):
        h, weights = my_block(self, h, cos, sin)  # yours, notebook 04: the residuals and norms
        return h, (weights if need_weights else None)


class MyTransformer(nn.Module):
    """ids (B, T) → logits (B, T, 256), with the parameter names of minitf.Transformer."""

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.d_model)  # one learned row per byte
        self.blocks = nn.ModuleList(MyBlock(config) for _ in range(config.n_layers))
        pre = config.norm_position == "pre"  # pre-norm: the stream is normalised once more at the end
        self.final_norm = MyLayerNorm(config.d_model, config.norm_eps) if pre else None
        self.head = nn.Linear(config.d_model, config.vocab_size)
        if config.tie_embeddings:
            self.head.weight = self.embed.weight  # one table reads bytes in and scores them out

    def positions(self, ids):
        coupled = self.config.positions.position_ids == "coupled"
        return my_position_ids(ids) if coupled else None  # None: 0, 1, 2, …

    def forward(self, ids):
        T = ids.size(1)
        h = self.embed(ids)                                            # (B, T, C)
        cos, sin = rope_angles(self.blocks[0].attn.inv_freq, T, positions=self.positions(ids))
        for block in self.blocks:
            h, _ = block(h, cos, sin)
        if self.final_norm is not None:
            h = self.final_norm(h)
        return self.head(h)                                            # (B, T, 256) logits


def my_count_pairs(ids):
    counts = {}
    for pair in zip(ids, ids[1:]):          # every adjacent pair: `aaa` holds (a, a) twice
        counts[pair] = counts.get(pair, 0) + 1
    return counts


def my_merge(ids, pair, new_id):
    out, i = [], 0
    while i < len(ids):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
            out.append(new_id)              # the pair becomes one token …
            i += 2                          # … and both its halves are used up
        else:
            out.append(ids[i])
            i += 1
    return out


def my_train_merges(data, n_merges):
    ids, merges = list(data), []
    for n in range(n_merges):
        counts = my_count_pairs(ids)        # counted again after every merge
        if not counts:
            break
        pair = min(counts, key=lambda p: (-counts[p], p))   # most frequent; a tie: the smallest pair
        if counts[pair] < 2:
            break                           # no pair repeats: a token would save nothing
        merges.append(pair)
        ids = my_merge(ids, pair, 256 + n)
    return merges


def my_encode(data, merges, special):
    for token, token_id in special.items():     # a special token is cut out first, never merged
        if token in data:
            before, after = data.split(token, 1)
            return my_encode(before, merges, special) + [token_id] + my_encode(after, merges, special)
    ids = list(data)
    for n, pair in enumerate(merges):           # in the order they were learned
        ids = my_merge(ids, pair, 256 + n)
    return ids


def my_decode(ids, merges, special):
    vocab = {i: bytes([i]) for i in range(256)}
    for n, (a, b) in enumerate(merges):
        vocab[256 + n] = vocab[a] + vocab[b]    # a merged token is its halves' bytes
    for token, token_id in special.items():
        vocab[token_id] = token
    return b"".join(vocab[i] for i in ids)      # bytes: a token may end inside a character
