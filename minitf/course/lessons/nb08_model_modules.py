"""Notebook 08: the model as the learner's own nn.Module classes (MyAttention, MyBlock,
MyTransformer), each built from a Config, loaded with minitf's weights by name and run
(`minitf.course.module_checks`); the slips of their forwards are the function exercises' own."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ...core.attention import MultiHeadAttention
from ...core.config import Config
from ...core.model import Block, Transformer
from ...core.rope import rope_angles
from ..cases import random_case as _rand
from ..declaration import Exercise, refused
from ..module_checks import drive_module, minitf_module
from .nb02_rope import my_apply_rope
from .nb03_attention import _mha_slips, my_multi_head_attention
from .nb04_ffn_block import _block_slips, my_block, my_feed_forward, my_layer_norm
from .nb08_model_forward import _forward_cases, _forward_slips

# notebook 08's model: one pre-norm layer 8 wide, positions numbered 0, 1, 2, … (the usual way), the
# head tied to the embedding
CONFIG_08 = Config(d_model=8, n_heads=2, n_layers=1, d_ff=16, norm_position="pre", dropout=0.0,
                   rope_base=20.0, tie_embeddings=True)


def _configured(module: nn.Module, config: Config) -> nn.Module:
    """A minitf module that remembers its config, as a case of a class exercise: the learner's
    class is built from it (minitf's Transformer keeps its own; its attention and block do not)."""
    module.config = config
    return module.double().eval().requires_grad_(False)


def _attention_cases():
    """Two attentions (heads of 4 and of 2, H ≠ T), rope_base 20 in one; x and RoPE angles."""
    cases = []
    for seed, (C, H, B, T, base) in enumerate([(8, 2, 2, 5, 10000.0), (8, 4, 1, 3, 20.0)]):
        torch.manual_seed(seed)
        config = Config(d_model=C, n_heads=H, dropout=0.0, rope_base=base)
        attn = _configured(MultiHeadAttention(config), config)
        cos, sin = rope_angles(attn.inv_freq, T)
        cases.append((attn, _rand(B, T, C, seed=seed + 10), cos, sin))
    return cases


def _block_cases():
    """A post-norm and a pre-norm block, norms away from γ = 1, β = 0; h and RoPE angles."""
    cases = []
    for seed, (position, B, T) in enumerate([("post", 2, 5), ("pre", 1, 3)]):
        torch.manual_seed(seed)
        config = Config(d_model=8, n_heads=2, d_ff=16, norm_position=position, dropout=0.0)
        block = _configured(Block(config), config)
        with torch.no_grad():
            for i, norm in enumerate((block.norm1, block.norm2)):
                norm.weight.copy_(_rand(8, seed=10 * seed + i + 20, low=0.5, high=1.5))
                norm.bias.copy_(_rand(8, seed=10 * seed + i + 30, low=-0.5, high=0.5))
        cos, sin = rope_angles(block.attn.inv_freq, T)
        cases.append((block, _rand(B, T, 8, seed=seed + 40, low=-2, high=2), cos, sin))
    return cases


def _model_cases():
    """model_forward's cases with notebook 08's model in place of the coupled one: MyTransformer
    numbers its positions 0, 1, 2, … (coupled ids are notebook 11's)."""
    cases = _forward_cases()[:2]
    torch.manual_seed(2)
    model = _configured(Transformer(CONFIG_08), CONFIG_08)
    with torch.no_grad():
        model.final_norm.weight.copy_(_rand(8, seed=52, low=0.5, high=1.5))
    return cases + [(model, torch.tensor([list(b"hello\tifmmp")]))]


def _with_weights(module, x, cos, sin):
    return module(x, cos, sin, need_weights=True)


def _logits(model, ids):
    return model(ids)


_CLASS_HINTS = {
    "_not_a_class": "`class <its name>(nn.Module):` with def __init__(self, config) and def forward(…)",
    "_not_a_module": "`class <its name>(nn.Module):`, and super().__init__() as the first line of __init__",
    "_plain_tensor": "self.register_buffer(\"inv_freq\", theta): a buffer moves with .to() and is in "
                     "the state dict; a plain attribute is neither",
    "_made_in_forward": "every nn.Linear, nn.Embedding and nn.Parameter goes in __init__, as self.<name>",
    "_state_dict_names": "the attribute names are the state dict's names: self.qkv, self.out, "
                         "self.norm1, self.attn, self.ffn.up, self.embed, self.blocks, self.head, …",
    "_state_dict_shapes": "nn.Linear(in_features, out_features): its weight is (out, in)",
    "_head_not_tied": "if config.tie_embeddings: self.head.weight = self.embed.weight",
    "_head_tied": "tie only when config.tie_embeddings is True",
}


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

    def forward(self, ids):
        h = self.embed(ids)                                            # (B, T, C)
        cos, sin = rope_angles(self.blocks[0].attn.inv_freq, ids.size(1))  # positions 0, 1, 2, …
        for block in self.blocks:
            h, _ = block(h, cos, sin)
        if self.final_norm is not None:
            h = self.final_norm(h)
        return self.head(h)                                            # (B, T, 256) logits


EXERCISES = [
    Exercise(name="MyAttention", notebook="08",
             teaches="multi-head attention as a module of your own: its layers, its "
             "buffer, its forward", difficulty=3, minutes=10, solution=MyAttention, reference=minitf_module,
             cases=_attention_cases,
             hint="the state dict of MultiHeadAttention(config) is qkv.weight (3·H·hd, C), qkv.bias, "
             "out.weight (C, H·hd), out.bias and the buffer inv_freq (H, hd/2); forward(x, cos, sin, "
             "need_weights=False) returns (output, weights or None), as my_multi_head_attention "
             "computes them", drive=drive_module(_with_weights), result_names=("output", "weights"),
             options={"diagnoses": _mha_slips, "hints_by_diagnosis": {
                 **_CLASS_HINTS,
                 "_mha_merge": "y.transpose(1, 2).reshape(B, T, H * hd): heads back beside each other",
                 "_mha_split": "t.view(B, T, H, hd).transpose(1, 2) for each of q, k and v",
                 "_mha_no_out": "the merged heads go through self.out (W_O)",
                 "_mha_no_mask": "my_attention(q, k, v, my_causal_mask(T).to(x.device))",
                 "_mha_kv_swapped": "q, k, v = self.qkv(x).split(H * hd, dim=-1), in this order",
                 "_mha_no_rope": "rotate q and k (not v) after the split, before the scores"}},
             library=refused((MultiHeadAttention.forward, "minitf.MultiHeadAttention (its forward)"),
                             F.scaled_dot_product_attention, nn.MultiheadAttention.forward),
             own_work="nn.Linear, register_buffer, your my_multi_head_attention, my_attention and "
                      "my_apply_rope are fine (which layers, which shapes, and the forward are the "
                      "exercise): minitf.MultiHeadAttention is the module itself",
             answer_name="MyAttention"),
    Exercise(name="MyBlock", notebook="08",
             teaches="the block as a module of your own: two norms, your attention, the "
             "FFN, and your block's residuals", difficulty=2, minutes=10, solution=MyBlock,
             reference=minitf_module, cases=_block_cases,
             hint="the state dict of Block(config) is norm1.weight, norm1.bias, attn.… (your MyAttention), "
             "norm2.weight, norm2.bias, ffn.up.weight (d_ff, C), ffn.up.bias, ffn.down.weight (C, d_ff), "
             "ffn.down.bias; forward(h, cos, sin, need_weights=False) returns (h, weights or None), "
             "pre-norm or post-norm as config.norm_position says", drive=drive_module(_with_weights),
             result_names=("h", "weights"),
             options={"diagnoses": _block_slips, "hints_by_diagnosis": {
                 **_CLASS_HINTS,
                 "_block_no_residual": "each sub-layer adds to the stream: h + f(…)",
                 "_block_norm_side": "self.pre_norm = config.norm_position == 'pre'; pre: h + f(norm(h)), "
                                     "post: norm(h + f(h))",
                 "_block_shared_norm": "two norms: self.norm1 with attention, self.norm2 with the FFN",
                 "_block_ffn_input": "the FFN reads the stream after attention's addition",
                 "_block_double_norm": "post-norm: attention reads h itself; the norm comes after the "
                                       "addition only"}},
             library=refused((Block.forward, "minitf.Block (its forward)"),
                             (MultiHeadAttention.forward, "minitf.MultiHeadAttention (its forward)")),
             own_work="nn.Linear, nn.Parameter, your MyAttention and your my_block, my_layer_norm and "
                      "my_feed_forward are fine (the modules and their names are the exercise): "
                      "minitf.Block and minitf.MultiHeadAttention are the modules themselves",
             answer_name="MyBlock", shows=(MyLayerNorm, MyFeedForward, MyBlock)),
    Exercise(name="MyTransformer", notebook="08",
             teaches="the model as a module of your own: the embedding, the blocks, "
             "the final norm, the head (tied or not), and its forward", difficulty=2, minutes=10,
             solution=MyTransformer, reference=minitf_module, cases=_model_cases,
             hint="the state dict of Transformer(config) is embed.weight (256, C), blocks.0.… (your MyBlock) "
             "for each of config.n_layers blocks in an nn.ModuleList, final_norm.weight and .bias in "
             "a pre-norm model only (None in post-norm), head.weight (256, C), head.bias; the head "
             "shares embed's weight when config.tie_embeddings; forward(ids) returns the logits "
             "(B, T, 256)", drive=drive_module(_logits),
             options={"diagnoses": _forward_slips, "hints_by_diagnosis": {
                 **_CLASS_HINTS,
                 "_forward_no_final_norm": "a pre-norm model normalises the stream once more before "
                                           "the head: self.final_norm",
                 "_forward_tied": "the head is tied only when the config says so"}},
             library=refused((Transformer.forward, "minitf.Transformer (its forward)"),
                             (Block.forward, "minitf.Block (its forward)")),
             own_work="nn.Embedding, nn.ModuleList, nn.Linear, rope_angles, your MyBlock and "
                      "MyLayerNorm are fine (the modules and the tied head are the exercise): "
                      "minitf.Transformer is the model itself",
             answer_name="MyTransformer"),
]
