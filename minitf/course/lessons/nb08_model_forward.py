"""Notebook 08: the model's forward, from the learner's pieces."""
from __future__ import annotations

import torch

from ...core.config import Config
from ...core.model import Transformer
from ...core.rope import rope_angles
from ..cases import named_slip as _named_slip, random_case as _rand
from ..declaration import Exercise, Piece, refused


def _forward_cases():
    """A pre-norm model (a final norm, an untied head), a post-norm one (no final norm) and 08's
    kind with coupled position ids (pre-norm, tied head); float64, no gradients, norms away from 1, 0."""
    cases = []
    for seed, config in enumerate([
            Config(d_model=8, n_heads=2, n_layers=2, d_ff=16, norm_position="pre", dropout=0.0),
            Config(d_model=8, n_heads=2, n_layers=1, d_ff=16, dropout=0.0),
            Config(d_model=8, n_heads=2, n_layers=1, d_ff=16, norm_position="pre", dropout=0.0,
                   rope_base=20.0, position_ids="coupled", tie_embeddings=True)]):
        torch.manual_seed(seed)
        model = Transformer(config).double().eval().requires_grad_(False)
        if model.final_norm is not None:
            with torch.no_grad():
                model.final_norm.weight.copy_(_rand(8, seed=seed + 50, low=0.5, high=1.5))
        text = [b"ab\tbc", b"xyz\tyz{"][seed % 2] if seed < 2 else b"hello\tifmmp"
        cases.append((model, torch.tensor([list(text)])))
    return cases


def _forward_reference(model, ids):
    """minitf's own forward (Transformer.forward, not model(ids): as the library's stand-in for
    this optional piece, it runs inside a model whose forward calls it, and trains: no no_grad)."""
    return Transformer.forward(model, ids)


def _forward_slips(model, ids):
    """The forward with one step wrong, computed with the model's own modules."""
    T = ids.size(1)

    def forward(final=True, positions=True, tied=False):
        with torch.no_grad():
            h = model.embed(ids)
            pos = model.positions(ids) if positions else None
            cos, sin = rope_angles(model.blocks[0].attn.inv_freq, T, positions=pos)
            for block in model.blocks:
                h, _ = block(h, cos, sin)
            if final and model.final_norm is not None:
                h = model.final_norm(h)
            if tied:
                return h @ model.embed.weight.T + (model.head.bias if model.head.bias is not None else 0)
            return model.head(h)

    def slip(name, result, words):
        return _named_slip(name, [result], words)

    return (slip("_forward_no_final_norm", forward(final=False),
                 "yours leaves out the final norm: a pre-norm model normalises the stream once more "
                 "before the head (model.final_norm; a post-norm model has none, it is None)"),
            slip("_forward_positions", forward(positions=False),
                 "yours numbers the positions 0, 1, 2, …: this model's config numbers them its own way "
                 f"(position_ids={model.config.positions.position_ids!r}); pass positions=model.positions(ids) "
                 "to rope_angles"),
            slip("_forward_tied", forward(tied=True),
                 "yours reads the embedding table as the output head, but this config does not tie "
                 "them (tie_embeddings=False): the head is model.head, a table of its own"))


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


EXERCISES = [
    Exercise(name="model_forward", notebook="08",
             teaches="the model's forward: embedding, RoPE angles, the blocks, the "
             "final norm, the head", difficulty=2, minutes=15, solution=my_model_forward,
             reference=_forward_reference, cases=_forward_cases,
             hint="h = model.embed(ids); cos, sin = rope_angles(model.blocks[0].attn.inv_freq, T, "
             "positions=model.positions(ids)); h, _ = block(h, cos, sin) for every block; "
             "model.final_norm(h) if it is not None; return model.head(h)",
             options={"diagnoses": _forward_slips, "hints_by_diagnosis": {
                 "_forward_no_final_norm": "if model.final_norm is not None: h = model.final_norm(h)",
                 "_forward_positions": "pos = model.positions(ids) (None means 0, 1, 2, …), then "
                                       "rope_angles(inv_freq, T, positions=pos)",
                 "_forward_tied": "return model.head(h): model.head is tied to the embedding only "
                                  "when the config says so",
                 "raised": "post-norm models have no final norm (model.final_norm is None); each "
                           "block returns (h, weights)"}},
             library=refused((Transformer.forward, "minitf.Transformer (its forward)")),
             own_work="model.embed, model.positions, rope_angles, the blocks, model.final_norm and "
                      "model.head are fine (their order and the final norm are the exercise): the "
                      "model's own forward is the answer itself",
             piece=Piece(fills="model", order=11,
                         call='model_forward(model, ids) → logits: the embedding, the blocks, the final norm and the head'),
             # the main path writes the same forward in MyTransformer (nb08_model_modules)
             optional=True),
]
