"""The ablation switches `Config(residual=..., ffn=...)`: what they remove, and that the defaults
are untouched (same parameters, same names, the shipped checkpoints load and compute the same)."""
import itertools

import pytest
import torch

import minitf
from support import ROOT
from minitf import Config, Transformer

FFN_PER_LAYER = 4 * 8 + 8 + 8 * 4 + 4 + 2 * 4  # up, down and norm2 of the tiny model: 84


def test_defaults_keep_the_tiny_model():  # its 2,648 parameters and its dict: test_model, test_config
    assert Config().ablations.residual and Config().ablations.ffn


def test_without_ffn_the_block_has_no_ffn_parameters():
    model = Transformer(Config(ffn=False))
    assert minitf.count_parameters(model) == 2648 - 2 * FFN_PER_LAYER  # 2,480
    names = [n for n, _, _ in minitf.parameter_table(model)]
    assert not any(".ffn." in n or ".norm2." in n for n in names)
    assert model.blocks[0].ffn is None and model.blocks[0].norm2 is None


def test_without_residuals_the_parameters_are_the_same():
    full, ablated = Transformer(Config()), Transformer(Config(residual=False))
    assert [(n, s) for n, s, _ in minitf.parameter_table(ablated)] == \
           [(n, s) for n, s, _ in minitf.parameter_table(full)]


@pytest.mark.parametrize("norm_position,residual,ffn",
                         list(itertools.product(["post", "pre"], [True, False], [True, False])))
def test_every_combination_runs_and_trains(norm_position, residual, ffn):
    model = Transformer(Config(d_model=8, norm_position=norm_position, residual=residual, ffn=ffn))
    logits = model(torch.randint(0, 256, (3, 7)))
    assert logits.shape == (3, 7, 256)
    logits.logsumexp(-1).mean().backward()
    assert all(p.grad is not None for p in model.parameters())


def block_and_input(**changes):
    torch.manual_seed(0)
    config = Config(d_model=8, dropout=0.0, positional="none", **changes)  # no angles to pass
    block = minitf.Block(config).double().eval()
    return block, torch.randn(2, 5, 8, dtype=torch.float64)


def then(mid, rest):
    return rest(mid)


BLOCKS = [  # (layout, switch, the block's output from its own parts; a: attention, without angles)
    ("post", dict(residual=False), lambda b, a, h: b.norm2(b.ffn(b.norm1(a(h))))),  # h = LN(f(h))
    ("pre", dict(residual=False), lambda b, a, h: b.ffn(b.norm2(a(b.norm1(h))))),   # h = f(LN(h))
    ("post", dict(ffn=False), lambda b, a, h: b.norm1(h + a(h))),                   # attention alone
    ("pre", dict(ffn=False), lambda b, a, h: h + a(b.norm1(h))),
    ("post", dict(), lambda b, a, h: then(b.norm1(h + a(h)), lambda m: b.norm2(m + b.ffn(m)))),  # unchanged
    ("pre", dict(), lambda b, a, h: then(h + a(b.norm1(h)), lambda m: m + b.ffn(b.norm2(m)))),
]


@pytest.mark.parametrize("layout, switch, formula", BLOCKS,
                         ids=[f"{l}-{s or 'defaults'}" for l, s, _ in BLOCKS])
def test_each_switch_computes_its_block(layout, switch, formula):
    block, h = block_and_input(norm_position=layout, **switch)
    assert torch.allclose(block(h)[0], formula(block, lambda x: block.attn(x)[0], h), atol=1e-12)


def reference_logits(model, ids):
    """The forward pass as it was before the switches existed, written out from the model's parts."""
    h = model.embed(ids)
    T = ids.shape[1]
    if model.config.positions.positional == "sinusoidal":
        h = h + model.pos_table[:T]
    for block in model.blocks:
        a = lambda x: block.attn(x, *minitf.rope_angles(block.attn.inv_freq, T))[0] \
            if getattr(block.attn, "inv_freq", None) is not None else block.attn(x)[0]
        if model.config.norm_position == "pre":
            h = h + a(block.norm1(h))
            h = h + block.ffn(block.norm2(h))
        else:
            h = block.norm1(h + a(h))
            h = block.norm2(h + block.ffn(h))
    if model.final_norm is not None:
        h = model.final_norm(h)
    return model.head(h)


# made later with options this reference does not write out (no FFN, coupled ids, a tied head);
# tests/test_tiny_options.py, notebooks/test_notebook_claims_11.py and test_by_hand.py check them
NEWER_LAYOUTS = {"shift_smallest.pt", "shift_by_hand.pt", "shift_long.pt",  # shift_long*: tests/test_length.py
                 "shift_long_small.pt"}


@pytest.mark.parametrize("path", sorted(p for p in (ROOT / "data" / "checkpoints").glob("*.pt")
                                        if p.name not in NEWER_LAYOUTS), ids=lambda p: p.name)
def test_shipped_checkpoints_load_and_compute_as_before(path):
    model = minitf.load(path).eval()  # load_state_dict is strict: the parameter names are unchanged
    assert model.config.ablations.residual and model.config.ablations.ffn
    ids = torch.tensor([[*b"Hello", 9, *b"Ifmmp"]])
    with torch.no_grad():
        assert torch.allclose(model(ids), reference_logits(model, ids), atol=1e-5)
