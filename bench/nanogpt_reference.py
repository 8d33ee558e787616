"""A reference formulation of a character-level language model in nanoGPT's style, for `bench/lm.py`.

Written anew here after the structure of karpathy/nanoGPT's `model.py` and the settings of its
`config/train_shakespeare_char.py` for a CPU (the README's "4 layers, 4 heads, 128 wide, context
64, batch 12, 2,000 iterations, dropout 0"): learned absolute position embeddings, pre-norm blocks
with LayerNorm, fused QKV projection and `F.scaled_dot_product_attention(is_causal=True)`, a 4×
GELU MLP, a final LayerNorm, the output head tied to the token embedding, weights initialised with
N(0, 0.02) (residual projections 0.02/√(2·n_layer)), AdamW with betas (0.9, 0.99) and weight decay
0.1 on matrices, warm-up then cosine decay of the learning rate, gradient clipping at 1.

One difference: the vocabulary is the 256 byte values (nanoGPT builds one of the 65 characters the
text holds). Tiny Shakespeare is plain ASCII, so bytes are characters and the losses compare.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class GPTConfig:
    block_size: int = 64
    vocab_size: int = 256
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    dropout: float = 0.0
    bias: bool = False


class CausalSelfAttention(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.n_head, self.dropout = config.n_head, config.dropout

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout if self.training else 0,
                                           is_causal=True)  # (B, nh, T, hs)
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class MLP(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(F.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            drop=nn.Dropout(config.dropout),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=nn.LayerNorm(config.n_embd, bias=config.bias)))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying
        self.apply(self._init_weights)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx):
        """idx (B, T) → logits (B, T, vocab)."""
        T = idx.size(1)
        pos = torch.arange(0, T, dtype=torch.long, device=idx.device)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))

    def configure_optimizers(self, weight_decay, learning_rate, betas):
        params = [p for p in self.parameters() if p.requires_grad]
        decay = [p for p in params if p.dim() >= 2]
        nodecay = [p for p in params if p.dim() < 2]
        return torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                                  {"params": nodecay, "weight_decay": 0.0}], lr=learning_rate, betas=betas)


@dataclass
class TrainConfig:
    """config/train_shakespeare_char.py with its CPU overrides from nanoGPT's README."""
    batch_size: int = 12
    max_iters: int = 2000
    learning_rate: float = 1e-3
    min_lr: float = 1e-4
    warmup_iters: int = 100
    lr_decay_iters: int = 2000
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.99
    grad_clip: float = 1.0


def get_lr(it: int, tc: TrainConfig) -> float:
    """nanoGPT's schedule: linear warm-up, cosine decay to min_lr at lr_decay_iters."""
    if it < tc.warmup_iters:
        return tc.learning_rate * (it + 1) / (tc.warmup_iters + 1)
    if it > tc.lr_decay_iters:
        return tc.min_lr
    ratio = (it - tc.warmup_iters) / (tc.lr_decay_iters - tc.warmup_iters)
    return tc.min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (tc.learning_rate - tc.min_lr)


def get_batch(data: torch.Tensor, block_size: int, batch_size: int, generator: torch.Generator):
    """Random windows of the training bytes, as nanoGPT's get_batch: x (B, T), y shifted by one."""
    ix = torch.randint(len(data) - block_size, (batch_size,), generator=generator)
    x = torch.stack([data[i:i + block_size] for i in ix]).long()
    y = torch.stack([data[i + 1:i + 1 + block_size] for i in ix]).long()
    return x, y


def train_step(model: GPT, optimizer, x, y, it: int, tc: TrainConfig) -> float:
    for group in optimizer.param_groups:
        group["lr"] = get_lr(it, tc)
    logits = model(x)
    loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), tc.grad_clip)
    optimizer.step()
    return loss.item()
