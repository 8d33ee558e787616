"""Origami: grow a trained Transformer into a larger one that starts out computing the same function.

Three folds, each function-preserving and each checked on the spot:

- `widen(model, k)`: d_model, d_ff and n_heads × k, head_dim kept. Every feature vector is laid out
  as k copies [x, x, …]. A weight whose input is copied is split into column blocks
  [W/k + E_1, …, W/k + E_k] with ΣE_j = 0, so the blocks applied to [x, …, x] still give W x; its
  output rows are copied. LayerNorm and RMSNorm of [x, x] are [LN(x), LN(x)] (same mean, variance
  and RMS), so the norms only need γ and β copied. Copied heads keep their RoPE frequencies.
  E is the symmetry breaker: with E = 0 every copy gets the same gradient and stays a copy forever.
- `widen_heads(model)`: head_dim × 2, n_heads kept: each head gains new RoPE frequencies. The new
  half of Q starts at zero, so the new dimensions add nothing to the scores yet, and the old half
  of Q is scaled by √2 to undo the change of 1/√head_dim. The new half of K and V is random, so the
  new frequencies receive gradients; W_O reads the new V half with zero weights.
- `deepen(model, after)`: new layers. Pre-norm: a layer whose attention and FFN output projections
  are zero adds nothing to the residual stream, a bit-exact identity. Post-norm: h = LN(h + f(h))
  renormalises even when f = 0, so zeroing is not an identity. Instead the new layer takes over the
  γ, β of the LayerNorm just before it, which becomes plain normalisation (γ = 1, β = 0): the new
  layer then sees normalised input, renormalises it (a no-op up to LayerNorm's eps) and applies the
  moved γ, β. Exact up to eps; the check reports how close.

One more operator is not a fold: `stack(model, order)` builds a deeper model whose layers are
copies of trained layers (G_stack: [0, 1] → [0, 1, 0, 1]). The copies add their output to the
residual stream a second time, so the function changes; `stack` measures by how much and does not
refuse. It is here because copying trained layers, not inserting blank ones, is what grows
language models fastest in Du et al. (2024).

Every operator returns a `Growth` with the new model, the optimizer carried over (if one was
given) and max |Δlogits| between the old and the new model on probe inputs, in eval mode. It raises
GrowthError when the check fails or when no function-preserving construction exists.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields

import torch

from .config import Config, ModernBlock
from .model import Transformer, count_parameters
from .rope import rope_frequencies
from .train import make_optimizer

_KEEP = object()  # "leave this Config field as it is"


class GrowthError(ValueError):
    """A growth that would not preserve the function; the message says why and what to do."""


@dataclass
class Growth:
    """The result of one fold: the grown model, its optimizer, and the function check."""
    model: Transformer
    operation: str            # e.g. "widen ×2: d_model 4→8, n_heads 2→4, d_ff 8→16"
    old_parameters: int
    max_logit_diff: float     # max |logits_grown − logits_old| on the probe inputs, eval mode
    tolerance: float          # the check passed: max_logit_diff <= tolerance
    exactness: str            # "bit-exact", "exact up to rounding", "exact up to LayerNorm eps" (stack: "not function-preserving")
    optimizer: torch.optim.Optimizer | None = None

    @property
    def new_parameters(self) -> int:
        return count_parameters(self.model)

    def __str__(self):
        diff = ("max |Δlogits| = 0" if self.max_logit_diff == 0
                else f"max |Δlogits| = {self.max_logit_diff:.3g}" if math.isinf(self.tolerance)
                else f"max |Δlogits| < {self.tolerance:.0e}")
        return (f"{self.operation}: {self.old_parameters:,} → {self.new_parameters:,} parameters; "
                f"{diff} ({self.exactness})")


# --- the function check ---------------------------------------------------------------------------

def probe_ids(batch: int = 4, length: int = 24, vocab_size: int = 256) -> torch.Tensor:
    """A fixed (batch, length) batch of byte ids from a formula: the same on every machine."""
    i = torch.arange(batch * length)
    return ((i * 97 + 31 * (i // length) + 7) % vocab_size).view(batch, length)


@torch.no_grad()
def max_logit_diff(a: Transformer, b: Transformer, ids: torch.Tensor) -> float:
    """max |a(ids) − b(ids)| in eval mode (dropout off); both models keep their train/eval flag."""
    flags = a.training, b.training
    a.eval()
    b.eval()
    diff = (a(ids) - b(ids)).abs().max().item()
    a.train(flags[0])
    b.train(flags[1])
    return diff


@torch.no_grad()
def default_tolerance(model: Transformer, ids: torch.Tensor, extra: float = 0.0) -> float:
    """(1e-5 in float32, 1e-10 in float64, + extra) × the logits' scale max(1, max |logit|)."""
    was = model.training
    model.eval()
    scale = max(1.0, model(ids).abs().max().item())
    model.train(was)
    base = 1e-10 if next(model.parameters()).dtype == torch.float64 else 1e-5
    return (base + extra) * scale


def _finish(old, new, operation, exactness, state, inputs, tol, extra=0.0) -> Growth:
    """Load `state` into `new`, compare it with `old` on the probe inputs, raise if it differs."""
    dtype = next(old.parameters()).dtype
    new = new.to(dtype)
    with torch.no_grad():
        for name, tensor in new.state_dict().items():
            tensor.copy_(state[name])
    new.train(old.training)
    ids = probe_ids(length=min(24, old.config.max_len)) if inputs is None else inputs
    diff = max_logit_diff(old, new, ids)
    tol = default_tolerance(old, ids, extra) if tol is None else tol
    if not diff <= tol:
        raise GrowthError(f"{operation}: the grown model is not the same function: "
                          f"max |Δlogits| = {diff:.3g} > tolerance {tol:.3g}")
    return Growth(new, operation, count_parameters(old), diff, tol, exactness)


def _new_model(config: Config, seed: int) -> Transformer:
    """A fresh model of `config` whose random parts come from `seed`, not the global generator."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return Transformer(config)


def _config(old: Config, dropout, **changes) -> Config:
    if dropout is not _KEEP:
        changes["dropout"] = dropout
    return old.replace(**changes)


def _grow_optimizer(optimizer, old, new, map_state, new_entries, origin=None) -> torch.optim.Optimizer:
    """An AdamW for `new` with the old one's hyper-parameters and its moments carried over.

    map_state(name, tensor, kind) maps a moment (kind "exp_avg" or "exp_avg_sq") of the old
    parameter `name` onto the new parameter's shape. new_entries(name, p): a bool mask of the
    entries of a mapped tensor that did not exist before, or None; they get exp_avg 0 and
    exp_avg_sq = the mean of the old tensor's exp_avg_sq (a typical scale, so Adam's first steps on
    them are not outsized). origin: new parameter name → old name (default: the same name);
    parameters without an origin, such as whole new layers, start with fresh state.
    """
    groups = optimizer.param_groups
    if not isinstance(optimizer, torch.optim.AdamW) or len(groups) != 2:
        raise GrowthError("only an AdamW made by minitf (train's History.optimizer, make_optimizer) "
                          "can be carried over: its two parameter groups are rebuilt for the new model")
    grown = make_optimizer(new, groups[0]["lr"], groups[0]["weight_decay"])
    for g_new, g_old in zip(grown.param_groups, groups):
        g_new.update({k: v for k, v in g_old.items() if k != "params"})
    old_params = dict(old.named_parameters())
    for name, p in new.named_parameters():
        source = name if origin is None else origin.get(name)
        old_state = optimizer.state.get(old_params[source], {}) if source in old_params else {}
        if not old_state:
            continue
        avg = map_state(name, old_state["exp_avg"], "exp_avg")
        sq = map_state(name, old_state["exp_avg_sq"], "exp_avg_sq")
        is_new = new_entries(name, p)
        if is_new is not None:
            sq = torch.where(is_new, old_state["exp_avg_sq"].mean(), sq)
            avg = torch.where(is_new, torch.zeros_like(avg), avg)
        grown.state[p] = {"step": old_state["step"].clone(), "exp_avg": avg.to(p.dtype).clone(),
                          "exp_avg_sq": sq.to(p.dtype).clone()}
    return grown


# --- widen: d_model, d_ff, n_heads × k --------------------------------------------------------------

def split_inputs(W: torch.Tensor, k: int, noise: float = 0.0,
                 generator: torch.Generator | None = None) -> torch.Tensor:
    """(out, in) → (out, k·in): column blocks W/k + E_j with Σ_j E_j = 0, so that for a copied
    input the blocks add back to W x:  Σ_j (W/k + E_j) x = W x.

    E_j is Gaussian with standard deviation noise · RMS(W), made to sum to zero over j.
    """
    blocks = W.unsqueeze(0).expand(k, *W.shape) / k  # (k, out, in)
    if noise:
        E = torch.randn(k, *W.shape, generator=generator, dtype=torch.float64)
        E = (E - E.mean(0)) * noise * W.double().pow(2).mean().sqrt()
        blocks = blocks + E.to(W.dtype)
    return torch.cat(list(blocks), dim=1)


def widen_weight(W: torch.Tensor, k: int = 2) -> torch.Tensor:
    """The exact widening of a Linear weight whose input and output are both copied k times:
    W' = (1/k)·[[W, …, W], …, [W, …, W]], a (k·out, k·in) matrix, so that W' [x, …, x] = [Wx, …, Wx]."""
    return split_inputs(W.repeat(k, 1), k)


def _tile_rows(t: torch.Tensor, k: int, groups: int) -> torch.Tensor:
    """Copy the rows of each of `groups` equal row blocks k times: [Q; K; V] → [Q; Q; K; K; V; V]
    (k = 2) so head h + c·H of the wide model is a copy of head h."""
    return torch.cat([g.repeat(k, *([1] * (t.dim() - 1))) for g in t.chunk(groups, dim=0)], dim=0)


def _refuse_ablations(cfg, operation: str) -> None:
    """The constructions assume the whole block: residual paths and an FFN in every layer."""
    missing = [f"{name}=False" for name in ("residual", "ffn") if not getattr(cfg.ablations, name)]
    if missing:
        raise GrowthError(f"{operation}: the model is an ablation ({', '.join(missing)}); Origami's "
                          "constructions grow the full block (residual paths and an FFN in every "
                          "layer), so they are not defined for it")
    modern = [f"{f.name}={getattr(cfg.modern_block, f.name)!r}" for f in fields(ModernBlock)
              if getattr(cfg.modern_block, f.name) != f.default]
    if modern:
        raise GrowthError(f"{operation}: the model uses the modern block's options ({', '.join(modern)}); "
                          "Origami's constructions are written and checked for the block with "
                          "biases, an ungated FFN and no QK-norm, so they refuse it")


def widen(model: Transformer, factor: int = 2, *, noise: float = 0.1, seed: int = 0,
          inputs: torch.Tensor | None = None, optimizer: torch.optim.Optimizer | None = None,
          tol: float | None = None, dropout=_KEEP) -> Growth:
    """d_model, d_ff and n_heads × factor with head_dim kept; the same function, checked.

    noise (default 0.1): the relative size of the zero-sum split E that breaks the symmetry between
    copies (0 gives exact copies, which then train as copies forever). optimizer: an AdamW of
    `model` (e.g. History.optimizer) whose moments are carried over to the grown model, mapped as
    the gradients map (a copied output's gradient is split evenly over its k copies).
    dropout: the grown config's dropout (default: as before; None is the seed rule from d_model).
    """
    k, cfg = factor, model.config
    _refuse_ablations(cfg, "widen")
    if not (isinstance(k, int) and k >= 2):
        raise GrowthError(f"widen: factor must be an integer >= 2, got {factor!r}")
    if cfg.positions.positional == "sinusoidal":
        raise GrowthError(
            "widen: the sinusoidal table is a function of d_model, and the table for k·d_model is "
            "not k copies of the small one, so no widening keeps the function. Use RoPE "
            "(positional='rope') or no positions (positional='none'), which have no d_model table.")
    if cfg.tie_embeddings:
        raise GrowthError(
            "widen: with tied embeddings one matrix is both the embedding, whose features widen "
            "copies ([E, E]), and the head, which reads copies and so must be split ([E/2, E/2]); "
            "one matrix cannot be both. Widen a model with its own head (tie_embeddings=False).")
    freqs = cfg.positions.rope_freqs
    if freqs is not None and len(freqs) > cfg.head_dim // 2:  # head by head: each copy keeps its own
        freqs = freqs * k
    new_cfg = _config(cfg, dropout, d_model=k * cfg.d_model, n_heads=k * cfg.n_heads,
                      head_dim=cfg.head_dim, d_ff=k * cfg.d_ff, rope_freqs=freqs)
    gen = torch.Generator().manual_seed(seed)

    def grow(name, t, kind):
        """kind "param": the construction; "exp_avg"/"exp_avg_sq": the gradient map (squared)."""
        if kind == "param":
            if name.endswith("inv_freq"):
                return t.repeat(k, 1)            # (k·H, hd/2): each copied head keeps its frequencies
            if name == "embed.weight":
                return t.repeat(1, k)            # E' = [E, …, E]
            if name == "head.weight":
                return split_inputs(t, k, noise, gen)
            if name == "head.bias":
                return t
            groups = 3 if name.endswith("qkv.weight") or name.endswith("qkv.bias") else 1
            t = _tile_rows(t, k, groups)
            return split_inputs(t, k, noise, gen) if t.dim() == 2 else t
        # a copied output's gradient is shared by its k copies: 1/k each (the head's is not copied)
        scale = 1.0 if name.startswith("head.") else 1.0 / k
        scale = scale ** 2 if kind == "exp_avg_sq" else scale
        if name == "embed.weight":
            return t.repeat(1, k) * scale
        if name.startswith("head."):
            return (t.repeat(1, k) if t.dim() == 2 else t) * scale
        groups = 3 if "qkv" in name else 1
        t = _tile_rows(t, k, groups)
        return (t.repeat(1, k) if t.dim() == 2 else t) * scale

    state = {name: grow(name, t, "param") for name, t in model.state_dict().items()}
    new = _new_model(new_cfg, seed)
    operation = (f"widen ×{k}: d_model {cfg.d_model}→{new_cfg.d_model}, n_heads {cfg.n_heads}→"
                 f"{new_cfg.n_heads}, d_ff {cfg.d_ff}→{new_cfg.d_ff}")
    grown = _finish(model, new, operation, "exact up to rounding", state, inputs, tol)
    if optimizer is not None:
        grown.optimizer = _grow_optimizer(optimizer, model, grown.model, grow, lambda n, p: None)
    return grown


# --- widen_heads: head_dim × 2, new RoPE frequencies --------------------------------------------------

def _head_positions(head_dim: int) -> torch.Tensor:
    """Where old dimension r of a head goes when head_dim doubles: pair i → pair 2i, so the old
    frequencies land on the even pairs and the new ones fill the odd pairs in between."""
    r = torch.arange(head_dim)
    return 4 * (r // 2) + r % 2


def widen_heads(model: Transformer, *, seed: int = 0, inputs: torch.Tensor | None = None,
                optimizer: torch.optim.Optimizer | None = None, tol: float | None = None,
                dropout=_KEEP) -> Growth:
    """head_dim × 2 with n_heads and d_model kept: each head gains new RoPE frequencies.

    Old pair i of a head becomes pair 2i. With standard frequencies θ_i = base^(−2i/hd) this puts
    θ_i exactly where the doubled head_dim has it (θ'_{2i} = base^(−4i/2hd) = θ_i); the odd pairs
    get the new frequencies θ'_{2i+1}. The new Q dimensions start at zero and the old ones are
    scaled by √2, so q'·k'/√(2hd) = q·k/√hd; the new K and V dimensions are random (scaled like
    the old ones) so they can learn; W_O reads the new V dimensions with zero weights.
    """
    cfg = model.config
    _refuse_ablations(cfg, "widen_heads")
    if cfg.positions.rope_freqs is not None:
        raise GrowthError(
            "widen_heads: the doubled head needs new RoPE frequencies between the old ones; with "
            "rope_base (and rope_scale) they follow from the rule, but explicit rope_freqs give no "
            "rule to extend. Use widen, deepen or stack, which keep every head's frequencies.")
    H, hd = cfg.n_heads, cfg.head_dim
    new_cfg = _config(cfg, dropout, head_dim=2 * hd)
    pos = _head_positions(hd)
    is_old = torch.zeros(2 * hd, dtype=torch.bool)
    is_old[pos] = True
    gen = torch.Generator().manual_seed(seed)
    root2 = math.sqrt(2.0)

    def spread(t, part, kind):
        """Rows of one of Q, K, V (H·hd, …) → (H·2hd, …), new rows as the construction wants."""
        t = t.reshape(H, hd, *t.shape[1:])
        out = torch.zeros(H, 2 * hd, *t.shape[2:], dtype=t.dtype)
        if kind == "param":
            if part != "q" and t.dim() == 3:  # K, V weights: random new rows, sized like the old
                std = t.double().pow(2).mean().sqrt()
                out = (torch.randn(out.shape, generator=gen, dtype=torch.float64) * std).to(t.dtype)
            out[:, pos] = t * root2 if part == "q" else t
        else:
            q_scale = 1 / root2 if kind == "exp_avg" else 0.5  # the gradient of √2·W is G/√2
            out[:, pos] = t * q_scale if part == "q" else t
        return out.reshape(H * 2 * hd, *t.shape[2:])

    def grow(name, t, kind):
        if name.endswith("inv_freq"):
            new_freq = rope_frequencies(2 * hd, cfg.positions.rope_base, H, dtype=t.dtype)
            new_freq[:, 0::2] = t
            return new_freq
        if name.endswith("attn.qkv.weight") or name.endswith("attn.qkv.bias"):
            return torch.cat([spread(part_t, part, kind) for part_t, part
                              in zip(t.chunk(3, dim=0), "qkv")], dim=0)
        if name.endswith("attn.out.weight"):  # (d, H·hd) → (d, H·2hd), zero columns for the new V
            out = torch.zeros(t.size(0), H, 2 * hd, dtype=t.dtype)
            out[:, :, pos] = t.view(t.size(0), H, hd)
            return out.view(t.size(0), H * 2 * hd)
        return t

    def new_entries(name, p):
        if name.endswith("attn.qkv.weight") or name.endswith("attn.qkv.bias"):
            mask = (~is_old).repeat(3 * H)
            return mask.view(-1, *([1] * (p.dim() - 1))).expand_as(p)
        if name.endswith("attn.out.weight"):
            return (~is_old).repeat(H).expand_as(p)
        return None

    state = {name: grow(name, t, "param") for name, t in model.state_dict().items()}
    new = _new_model(new_cfg, seed)
    operation = f"widen_heads: head_dim {hd}→{2 * hd} in each of {H} heads"
    grown = _finish(model, new, operation, "exact up to rounding", state, inputs, tol)
    if optimizer is not None:
        grown.optimizer = _grow_optimizer(optimizer, model, grown.model, grow, new_entries)
    return grown


# --- deepen: new layers -------------------------------------------------------------------------------

def deepen(model: Transformer, after: list[int] | None = None, *, seed: int = 0,
           inputs: torch.Tensor | None = None, optimizer: torch.optim.Optimizer | None = None,
           tol: float | None = None, dropout=_KEEP) -> Growth:
    """Insert one new layer after each existing layer listed in `after` (default: after every
    layer, doubling the depth; −1 means before the first layer, pre-norm only).

    The new layers are freshly initialised (from `seed`) except their attention and FFN output
    projections, which are zero (weights and biases), so they start by adding nothing and still
    receive gradients. Post-norm models also move the preceding LayerNorm's γ, β into the new layer
    (see the module docstring); the result is exact up to LayerNorm's eps.

    optimizer: an AdamW of `model`; the old layers keep their moments. Each tensor of a new layer
    gets exp_avg = 0, exp_avg_sq = the mean exp_avg_sq of the same tensor in the layer it follows
    (the first layer for −1), and that tensor's step count. Why: the step count is the model's, so
    Adam's bias correction stays what it is for every other tensor (≈ 1 late in training);
    exp_avg_sq = 0 with that step count would divide by √(1 − β₂)·|g| ≈ 0.03·|g| at first and give
    steps several times lr until exp_avg_sq fills up (≈ 1/(1 − β₂) = 1,000 steps), while a typical
    scale gives steps of the usual size at once. exp_avg = 0 makes the new layer's steps grow over
    ≈ 1/(1 − β₁) = 10 steps: a warm-up for the new layer alone while the rest of the model goes on
    with its schedule.
    """
    cfg = model.config
    _refuse_ablations(cfg, "deepen")
    L = cfg.n_layers
    after = list(range(L)) if after is None else sorted(after)
    if not after:
        raise GrowthError("deepen: `after` is empty, nothing to insert")
    if any(not -1 <= i < L for i in after):
        raise GrowthError(f"deepen: `after` must list layers in −1 … {L - 1}, got {after}")
    post = cfg.norm_position == "post"
    if post and -1 in after:
        raise GrowthError(
            "deepen: a post-norm layer ends in a LayerNorm, so whatever it computes comes out "
            "normalised; the raw embedding that reaches the first layer is not, and cannot be "
            "given back. Insert after an existing layer (after ≥ 0), or use a pre-norm model "
            "(norm_position='pre'), where a zeroed layer is an exact identity anywhere.")
    # new order: old block index, or None for a new block
    order = [None] * after.count(-1)
    for i in range(L):
        order += [i] + [None] * after.count(i)
    new_cfg = _config(cfg, dropout, n_layers=len(order))
    new = _new_model(new_cfg, seed)
    fresh = new.state_dict()
    old_state = model.state_dict()
    state = {k: v for k, v in old_state.items() if not k.startswith("blocks.")}
    origin = {}  # new parameter name → old parameter name, for the optimizer
    last_norm2 = None  # name prefix of the norm2 holding the γ, β a post-norm insertion takes over
    for j, i in enumerate(order):
        prefix = f"blocks.{j}."
        if i is not None:
            for k, v in old_state.items():
                if k.startswith(f"blocks.{i}."):
                    state[prefix + k[len(f"blocks.{i}."):]] = v
                    origin[prefix + k[len(f"blocks.{i}."):]] = k
            last_norm2 = prefix + "norm2."
            continue
        for k, v in fresh.items():
            if k.startswith(prefix):
                state[k] = v
        for k in ("attn.out.weight", "attn.out.bias", "ffn.down.weight", "ffn.down.bias"):
            state[prefix + k] = torch.zeros_like(fresh[prefix + k])
        if post:  # move the preceding γ, β here; the preceding norm just normalises
            for k in [k for k in state if k.startswith(last_norm2)]:
                moved = prefix + "norm2." + k[len(last_norm2):]
                state[moved] = state[k]
                state[k] = torch.ones_like(state[k]) if k.endswith("weight") else torch.zeros_like(state[k])
                if k in origin:
                    origin[moved] = origin.pop(k)
            last_norm2 = prefix + "norm2."
    for k, v in old_state.items():
        if not k.startswith("blocks."):
            origin[k] = k

    # a new layer's moments take their scale from the old layer it follows (the first for −1)
    neighbour, last_old = {}, None
    for j, i in enumerate(order):
        if i is not None:
            last_old = i
            continue
        src = 0 if last_old is None else last_old
        for k in fresh:
            if k.startswith(f"blocks.{j}.") and k not in origin:
                neighbour[k] = f"blocks.{src}." + k[len(f"blocks.{j}."):]
    positions = [j for j, i in enumerate(order) if i is None]
    operation = f"deepen: n_layers {L}→{len(order)}, new layers at {positions}"
    # post-norm: renormalising an already normalised vector is off by a factor ~1 + eps/(2·var)
    # per position; allow 100·eps relative (measured on random models: under 5·eps)
    grown = _finish(model, new, operation, "bit-exact" if not post else "exact up to LayerNorm eps",
                    state, inputs, tol, extra=100 * cfg.norm_eps if post else 0.0)
    if optimizer is not None:  # moved parameters keep their state; new layers: see the docstring
        # a new layer's tensor maps onto its neighbour's, every entry of it new: zero momentum, the
        # neighbour's mean second moment, its step count
        all_new = lambda n, p: torch.ones_like(p, dtype=torch.bool) if n in neighbour else None
        grown.optimizer = _grow_optimizer(optimizer, model, grown.model, lambda n, t, kind: t,
                                          all_new, {**origin, **neighbour})
    return grown


# --- stack: copies of trained layers (not function-preserving) ----------------------------------------

def stack(model: Transformer, order: list[int], *, optimizer: torch.optim.Optimizer | None = None,
          inputs: torch.Tensor | None = None, dropout=_KEEP) -> Growth:
    """A model with len(order) layers, layer j a copy of the trained layer order[j] (G_stack:
    order [0, 1, 0, 1] stacks a 2-layer model on itself; [0, 0, 0, 0] repeats one layer 4 times).

    Not function-preserving: every copy adds its output to the residual stream again, so the
    logits change. The Growth reports max |Δlogits| on the probe inputs (tolerance ∞, exactness
    "not function-preserving"); measure the loss before and after to see what the jump costs.
    optimizer: an AdamW of `model`; each copy gets a copy of its source layer's moments and step
    count (the training state grows with the weights), the embedding, final norm and head keep theirs.
    """
    cfg = model.config
    _refuse_ablations(cfg, "stack")
    L = cfg.n_layers
    order = list(order)
    if not order or any(not (isinstance(i, int) and 0 <= i < L) for i in order):
        raise GrowthError(f"stack: `order` must be a non-empty list of layer indices in 0 … {L - 1}, "
                          f"got {order}")
    old_state = model.state_dict()
    state = {k: v for k, v in old_state.items() if not k.startswith("blocks.")}
    origin = {k: k for k, _ in model.named_parameters() if not k.startswith("blocks.")}
    for j, i in enumerate(order):
        for k, v in old_state.items():
            if k.startswith(f"blocks.{i}."):
                state[f"blocks.{j}." + k[len(f"blocks.{i}."):]] = v.clone()
                origin[f"blocks.{j}." + k[len(f"blocks.{i}."):]] = k
    new = _new_model(_config(cfg, dropout, n_layers=len(order)), 0)
    operation = f"stack: n_layers {L}→{len(order)}, layers copied in the order {order}"
    grown = _finish(model, new, operation, "not function-preserving", state, inputs, math.inf)
    if optimizer is not None:
        grown.optimizer = _grow_optimizer(optimizer, model, grown.model, lambda n, t, kind: t,
                                          lambda n, p: None, origin)
    return grown
