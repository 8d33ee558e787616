"""The Transformer: byte embedding → n_layers blocks → output head over the 256 bytes."""
from __future__ import annotations

from contextlib import contextmanager

import torch
from torch import nn

from .attention import MultiHeadAttention
from .config import Config
from .ffn import FeedForward
from .norms import make_norm
from .perturb import perturb_if_asked
from .rope import position_ids, rope_angles, sinusoidal_table


class Block(nn.Module):
    """Attention then FFN, each inside a residual connection with a norm.

    post-norm (the seed, original Transformer): h = LN(h + f(h)); the stream is renormalised after
    every sub-layer. pre-norm (GPT-2, LLaMA): h = h + f(LN(h)); the residual stream is left alone,
    so gradients reach early layers without passing through a norm, and a new layer whose output
    projections are zero is an exact identity (notebook 04 measures both layouts through depth).

    Two ablations switch parts off (bench/ablation.py measures what each buys):
    `residual=False` replaces h + f(…) by f(…) (post: h = LN(f(h)); pre: h = f(LN(h))), and
    `ffn=False` leaves out the FFN sub-layer with its norm.
    """

    def __init__(self, config: Config):
        super().__init__()
        self.pre_norm = config.norm_position == "pre"
        self.residual = config.ablations.residual
        self.norm1 = make_norm(config.norm, config.d_model, config.norm_eps)
        self.attn = MultiHeadAttention(config)
        if config.ablations.ffn:
            self.norm2 = make_norm(config.norm, config.d_model, config.norm_eps)
            self.ffn = FeedForward(config)
        else:
            self.norm2 = self.ffn = None
        self.drop = nn.Dropout(config.dropout_p)  # on each sub-layer's output, before the residual

    def add(self, h, f_out):
        """The residual connection: h + f(…), or only f(…) when it is ablated."""
        return h + self.drop(f_out) if self.residual else self.drop(f_out)

    def forward(self, h, rope_cos=None, rope_sin=None, need_weights: bool = False, kv=None):
        if self.pre_norm:
            a, weights = self.attn(self.norm1(h), rope_cos, rope_sin, need_weights, kv)
            h = self.add(h, a)
            if self.ffn is not None:
                h = self.add(h, self.ffn(self.norm2(h)))
        else:
            a, weights = self.attn(h, rope_cos, rope_sin, need_weights, kv)
            h = self.norm1(self.add(h, a))
            if self.ffn is not None:
                h = self.norm2(self.add(h, self.ffn(h)))
        return h, weights


class Transformer(nn.Module):
    """A decoder-only (causal) Transformer over bytes.

    `model(ids)` → logits (B, T, vocab): row t scores the byte that follows ids[:, t].
    `model(ids, return_attention=True)` → (logits, weights), weights a list with one (B, H, T, T)
    tensor per layer.
    `model(ids, cache=kv)` reads ids as the positions after those `kv` (a `KVCache`) holds, and
    adds theirs: generation then feeds one new byte per step through these same modules.
    """

    def __init__(self, config: Config | None = None):
        super().__init__()
        self.config = config = config or Config()
        self.embed = nn.Embedding(config.vocab_size, config.d_model)
        if config.positions.positional == "sinusoidal":
            # coupled ids reach max_len
            rows = config.max_len + (config.positions.position_ids == "coupled")
            self.register_buffer("pos_table", sinusoidal_table(rows, config.d_model),
                                 persistent=False)
        self.drop = nn.Dropout(config.dropout_p)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layers))
        # pre-norm leaves the stream un-normalised, so it needs one final norm before the head
        self.final_norm = make_norm(config.norm, config.d_model, config.norm_eps) \
            if config.norm_position == "pre" else None
        # its own matrix unless tied below
        self.head = nn.Linear(config.d_model, config.vocab_size, bias=config.modern_block.bias)
        if config.tie_embeddings:
            # one (vocab, C) matrix reads bytes in and scores them out: logit_b = h · E[b] + bias_b.
            # The width the head's 256 rows cost is free for d_model; the 256 biases stay
            self.head.weight = self.embed.weight
        if config.modern_block.zero_init:  # every block starts as the identity: W_O and down are 0
            with torch.no_grad():
                for block in self.blocks:
                    block.attn.out.weight.zero_()
                    if block.ffn is not None:
                        block.ffn.down.weight.zero_()
        perturb_if_asked(self)  # MINITF_PERTURB: start one ulp away, as another CPU's run would drift

    def positions(self, ids: torch.Tensor) -> torch.Tensor | None:
        """Every token's position id (B, T) for config.positions.position_ids="coupled", else None
        (0 … T−1). A method, so a learner's own numbering can take its place (minitf.parts)."""
        coupled = self.config.positions.position_ids == "coupled"
        return position_ids(ids, "coupled") if coupled else None

    def forward(self, ids: torch.Tensor, return_attention: bool = False, cache=None):
        if ids.dim() != 2:
            raise ValueError(f"ids must be (batch, length), got shape {tuple(ids.shape)}")
        B, T = ids.shape
        start = 0 if cache is None else len(cache)  # positions already read (cached)
        if start + T > self.config.max_len:
            raise ValueError(f"sequence length {start + T} exceeds max_len {self.config.max_len}")
        if cache is not None:
            if not self.config.ablations.causal:
                raise ValueError("a KV cache needs a causal model: without the mask, earlier "
                                 "positions would change as new bytes arrive")
            cache.extend(ids)
        pos = self.positions(ids if cache is None else cache.ids)  # (B, start + T), or None: 0, 1, …
        if pos is not None:
            pos = pos[:, start:]  # a coupled id depends on the bytes before it, cached ones too
        positions = self.config.positions
        if self.training and cache is None and positions.position_offset and pos is not None:
            pos = offset_positions(pos, positions.position_offset)
        h = self.embed(ids)  # (B, T, C)
        if positions.positional == "sinusoidal":
            h = h + (self.pos_table[start:start + T] if pos is None else self.pos_table[pos])
        h = self.drop(h)
        all_weights = []
        cos = sin = freq = None
        for layer, block in enumerate(self.blocks):
            inv_freq = getattr(block.attn, "inv_freq", None)
            if inv_freq is not None and (freq is None or not torch.equal(inv_freq, freq)):
                freq = inv_freq  # layers usually share their frequencies: compute the angles once
                # (H, T, hd/2) for positions start … start+T−1; coupled ids: (B, H, T, hd/2)
                cos, sin = rope_angles(inv_freq, T, offset=start, positions=pos)
            kv = None if cache is None else cache.layers[layer]
            h, weights = block(h, cos, sin, need_weights=return_attention, kv=kv)
            all_weights.append(weights)
        if self.final_norm is not None:
            h = self.final_norm(h)
        logits = self.head(h)  # (B, T, vocab)
        cap = self.config.modern_block.logit_softcap
        if cap is not None:  # c·tanh(z/c): about z for |z| ≪ c, never past ±c
            logits = cap * torch.tanh(logits / cap)
        return (logits, all_weights) if return_attention else logits


def offset_positions(pos: torch.Tensor, most: int, generator: torch.Generator | None = None):
    """pos (B, T) with every id but 0 (the TAB's, under coupled ids) shifted by one random integer
    in [0, most] per row: the training-time randomised positions of position_offset (Positions).
    Relative offsets among the shifted tokens stay; their distance to the TAB grows by the row's
    shift."""
    k = torch.randint(0, most + 1, (pos.shape[0], 1), generator=generator, device=pos.device)
    return pos + k * (pos > 0)


@contextmanager
def evaluating(model: nn.Module):
    """Evaluation mode (no dropout) for a measurement or generation, and the caller's mode back
    afterwards, even if it raises: a model in the middle of training stays in training."""
    was_training = model.training
    model.eval()
    try:
        yield model
    finally:
        model.train(was_training)


def count_parameters(model: nn.Module) -> int:
    """Every trained number, a tensor shared by two modules (tied embeddings) counted once."""
    return sum(p.numel() for p in model.parameters())


def parameter_table(model: nn.Module) -> list[tuple[str, tuple[int, ...], int]]:
    """(name, shape, count) for every parameter tensor, in the model's order."""
    return [(name, tuple(p.shape), p.numel()) for name, p in model.named_parameters()]


def format_parameter_table(model: nn.Module) -> str:
    rows = parameter_table(model)
    width = max(len(n) for n, _, _ in rows)
    lines = [f"{'parameter':<{width}}  {'shape':>10}  {'count':>6}"]
    lines += [f"{n:<{width}}  {str(tuple(s)):>10}  {c:>6,}" for n, s, c in rows]
    lines.append(f"{'total':<{width}}  {'':>10}  {count_parameters(model):>6,}")
    return "\n".join(lines)
