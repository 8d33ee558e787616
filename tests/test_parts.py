"""A learner's pieces inside a real Transformer: the reference solutions give minitf's logits exactly,
a wrong piece is named by the check, and the assembled model trains."""
import functools
import re

import pytest
import torch

import minitf
from support import attention_without_scale, block_without_residuals, tiny_config
from test_workbook import (layer_norm_unbiased, rope_halves, softmax_without_the_maximum,  # wrong pieces
                           swiglu_activating_the_gate)
from minitf import parts, solutions
from minitf.core.config import MODERN

ALL = parts.Parts(**{name: getattr(solutions, f"my_{name}") for name in parts.PIECES})


@functools.cache
def check_all(config):
    """parts.check(ALL, config), made once per config: several tests ask it of the same config (each
    broken piece's test first sees the reference pass), and nothing changes a PartsCheck."""
    return parts.check(ALL, config)

CONFIGS = [
    minitf.Config(),                                                   # the tiny model: post-norm, LayerNorm
    minitf.Config(d_model=8, n_heads=2, norm="rms", norm_position="pre"),
    minitf.Config(d_model=8, n_heads=1, causal=False, positional="sinusoidal"),
    minitf.Config(d_model=6, n_heads=1, n_layers=1, norm_position="pre", position_ids="coupled",
                  tie_embeddings=True, ffn=False),                    # the smallest solver's layout
]


@pytest.mark.parametrize("config", CONFIGS, ids=["tiny", "pre-rms", "no-mask-sinusoidal", "coupled-tied"])
def test_the_reference_solutions_compute_minitfs_logits(config):
    result = check_all(config)
    assert result.ok, str(result)
    assert result.max_diff < 1e-12


def test_assembled_model_keeps_minitfs_parameter_names_and_initial_weights():
    torch.manual_seed(3)
    ours = minitf.Transformer(minitf.Config())
    torch.manual_seed(3)
    yours = parts.assemble(minitf.Config(), ALL)
    assert list(ours.state_dict()) == list(yours.state_dict())
    assert all(torch.equal(a, b) for a, b in zip(ours.state_dict().values(), yours.state_dict().values()))
    assert isinstance(yours.blocks[0].attn, parts.YourAttention)
    assert isinstance(yours.blocks[0].norm1, parts.YourLayerNorm)


def test_an_unassembled_piece_stays_minitfs():
    model = parts.assemble(minitf.Config(), embed=solutions.my_embed)
    assert isinstance(model.embed, parts.YourEmbedding)
    assert type(model.blocks[0].attn) is minitf.MultiHeadAttention
    rows = {line.split()[0]: line.split(None, 1)[1] for line in repr(model.parts).splitlines()}
    assert rows["embed"] == "yours" and rows["attention"] == "minitf"


# deliberately wrong pieces: the check must name exactly the broken one
def layer_norm_in_float64(x, weight, bias, eps):
    return solutions.my_layer_norm(x.double(), weight.double(), bias.double(), eps)


def merge_without_transpose(attn, x, cos, sin):
    B, T, C = x.shape
    q, k, v = (t.view(B, T, attn.n_heads, attn.head_dim).transpose(1, 2) for t in attn.qkv(x).split(C, dim=-1))
    q, k = attn.rotate(q, cos, sin), attn.rotate(k, cos, sin)
    y, w = solutions.my_attention(q, k, v, solutions.my_causal_mask(T))
    return attn.out(y.reshape(B, T, C)), w


def forward_without_positions(model, ids):
    h = model.embed(ids)
    cos, sin = minitf.rope_angles(model.blocks[0].attn.inv_freq, ids.size(1))
    for blk in model.blocks:
        h, _ = blk(h, cos, sin)
    return model.head(model.final_norm(h))


NB08 = minitf.Config(d_model=8, n_heads=2, n_layers=1, d_ff=16, norm_position="pre", dropout=0.0,
                     rope_base=20.0, position_ids="coupled", tie_embeddings=True)  # 08's model
MODERN_SMALL = minitf.Config.modern(d_model=8, n_heads=2, n_layers=2, d_ff=12)  # RMSNorm, pre, SwiGLU, QK-norm
WRONG = [  # (piece, a wrong one, the config it shows on, words the check says)
    ("attention", attention_without_scale, minitf.Config(), ""),
    ("causal_mask", lambda T: torch.ones(T, T, dtype=torch.bool).triu(0), minitf.Config(), ""),  # hides i == j too
    ("layer_norm", layer_norm_unbiased, minitf.Config(), ""),
    ("feed_forward", lambda x, wu, bu, wd, bd: torch.relu((x @ wu.T + bu) @ wd.T + bd),  # ReLU at the end
     minitf.Config(), ""),
    ("embed", lambda ids, table: table[ids.flip(-1)], minitf.Config(), ""),
    ("apply_rope", rope_halves, minitf.Config(d_model=8, n_heads=2), ""),  # head_dim 2: the halves are the pair
    ("position_ids", lambda ids: torch.arange(ids.size(1)).expand(ids.shape),  # usual numbering 0, 1, 2, …
     minitf.Config(d_model=8, n_heads=2, position_ids="coupled"), ""),
    ("layer_norm", layer_norm_in_float64, minitf.Config(), "right in float64, but in float32"),
    ("swiglu", swiglu_activating_the_gate, MODERN_SMALL, "notebook 04"),
    ("softmax", softmax_without_the_maximum, minitf.Config(), "overflows"),
    ("multi_head_attention", merge_without_transpose, NB08, "notebook 03"),
    ("block", block_without_residuals, tiny_config(), "notebook 04"),
    ("block", block_without_residuals, tiny_config(norm_position="post"), "notebook 04"),
    ("model_forward", forward_without_positions, NB08, "notebook 08"),
]


@pytest.mark.parametrize("broken, wrong, config, words", WRONG,
                         ids=[f"{w[0]}-{w[1].__name__}" for w in WRONG])
def test_the_check_names_the_broken_piece(broken, wrong, config, words):
    assert check_all(config).ok
    pieces = {name: getattr(solutions, f"my_{name}") for name in parts.PIECES}
    pieces[broken] = wrong
    result = parts.check(parts.Parts(**pieces), config)
    assert not result.ok
    assert list(result.broken) == [broken], str(result)
    assert f"broken piece: {broken}" in str(result) and words in str(result), str(result)


def test_every_saved_reference_piece_loads_back_and_computes_minitfs_logits(tmp_path, monkeypatch):
    # a saved piece runs in a namespace of its own: the names the notebooks gave it must be there
    monkeypatch.setenv("MINITF_MY_PARTS", str(tmp_path))
    for name in parts.PIECES:
        assert parts.save(name, getattr(solutions, f"my_{name}")) is not None
    mine = parts.mine()
    assert mine.given() == list(parts.PIECES)
    assert parts.check(mine, minitf.Config(d_model=8, n_heads=2, position_ids="coupled")).ok
    ids, targets = mine.make_batch(minitf.make_pairs("shift", 4, seed=0))
    expected = minitf.make_batch(minitf.make_pairs("shift", 4, seed=0))
    assert torch.equal(ids, expected[0]) and torch.equal(targets, expected[1])


def test_a_piece_that_raises_is_named_with_its_error():
    result = parts.check(parts.Parts(embed=lambda ids, table: table[ids.float()]))
    assert list(result.broken) == ["embed"] and "raises IndexError" in str(result)
    assert str(result).startswith("✗ your model does not compute minitf's logits: it raises IndexError\n")


def test_a_wrong_make_batch_is_named_under_a_headline_that_says_the_logits_agree():
    def no_output_only(pairs):
        ids, targets = solutions.my_make_batch(pairs)
        ids2 = torch.cat([ids[:, 1:], ids[:, :1]], 1)
        return ids, torch.where(targets == minitf.IGNORE, ids2, targets)

    result = parts.check(parts.Parts(make_batch=no_output_only))
    assert list(result.broken) == ["make_batch"] and not result.ok
    headline, piece = str(result).splitlines()
    assert headline == ("✗ your model computes minitf's logits (every one within 1e-09), but your make_batch "
                        "builds other batches than minitf's: the model would train on the wrong targets")
    assert piece.startswith("  broken piece: make_batch — no_output_only on case 0")
    assert "differ from minitf's" not in headline


def test_the_library_make_batch_is_not_a_broken_piece():
    # check asks whether the pieces compute minitf's function; refusing library calls is the exercise's job
    assert parts.check(parts.Parts(make_batch=minitf.make_batch)).ok


def embed_in_float64(ids, table):  # right in float64; in float32 a one-hot product of two dtypes
    return torch.nn.functional.one_hot(ids, 256).double() @ table


@pytest.mark.parametrize("config", [minitf.Config(), minitf.Config(d_model=16, n_heads=4, n_layers=3, d_ff=64,
                                                                    norm_position="pre", dropout=0.0)],
                         ids=["tiny", "notebook-08"])
def test_a_piece_that_changes_the_dtype_is_named_by_its_float32_run(config):
    pieces = {name: getattr(solutions, f"my_{name}") for name in parts.PIECES}
    pieces["embed"] = embed_in_float64
    result = parts.check(parts.Parts(**pieces), config)
    assert not result.ok and result.max_diff < 1e-12  # float64 alone would have passed it
    assert list(result.broken) == ["embed"], str(result)
    headline, piece = str(result).splitlines()
    assert headline == ("✗ your model computes minitf's logits in float64 (every one within 1e-09), but not in "
                        "float32, the dtype it trains in (it raises RuntimeError)")
    assert piece.startswith("  broken piece: embed — right in float64, but in float32, the dtype the model "
                            "trains in, it raises RuntimeError (")
    assert "it does not keep its inputs' dtype" in piece


def test_the_float32_run_agrees_to_float32_precision():
    result = check_all(minitf.Config())
    assert result.ok and 0 <= result.float32 < 1e-5 and result.tolerance32 == 1e-4


def test_feed_forward_needs_a_relu_model():
    with pytest.raises(ValueError, match="ReLU"):
        parts.assemble(minitf.Config(activation="gelu"), feed_forward=solutions.my_feed_forward)


def test_the_assembled_model_trains_with_the_learners_batch():
    torch.manual_seed(0)
    model = parts.assemble(minitf.Config(d_model=8, n_heads=2, dropout=0.0), ALL)
    pairs = minitf.make_pairs("copy", 64, seed=0, max_len=4)
    history = minitf.train(model, pairs, steps=30, batch_size=16, lr=1e-2, progress=False,
                           make_batch=ALL.make_batch)
    assert history.loss[-1] < history.loss[0] - 0.5


def test_a_modern_model_from_your_pieces_computes_minitfs_logits_through_your_gated_ffn():
    assert check_all(MODERN_SMALL).ok
    assert type(parts.assemble(MODERN_SMALL, ALL).blocks[0].ffn).__name__ == "YourGatedFeedForward"


def test_a_saved_softmax_over_the_wrong_dimension_is_blamed_alone(tmp_path, monkeypatch):
    """Saved pieces call each other by name (your attention calls my_softmax): each piece is tried
    with the others from the reference, so only the softmax is named, not the attention calling it."""
    monkeypatch.setenv("MINITF_MY_PARTS", str(tmp_path))
    (tmp_path / "softmax.py").write_text(
        "def my_softmax(x):\n    z = x - x.amax(0, keepdim=True)\n    return z.exp() / z.exp().sum(0, keepdim=True)\n"
        "__piece__ = my_softmax\n")
    for name in ("attention", "multi_head_attention"):
        assert parts.save(name, getattr(solutions, f"my_{name}")) is not None
    result = minitf.training_parts.your_pieces(minitf.Config(d_model=8, n_heads=2)).model_check
    assert list(result.broken) == ["softmax"], str(result)
    assert "the softmax ran over dim -2" in str(result)


def test_a_passing_model_shows_each_dtype_s_rounding():
    """The success line shows the differences the notebook talks about (float32's ~1e-6), each as
    the power of ten above it, the allowances beside them."""
    result = check_all(minitf.Config())
    line = str(result)
    assert line.startswith("✓ your model computes minitf's logits"), line
    f64, f32 = (float(x) for x in re.findall(r"under (1e[-+]\d+) in float(?:64|32)", line))
    assert result.max_diff < f64 <= 10 * max(result.max_diff, 1e-300) and f64 <= 1e-12
    assert result.float32 < f32 <= 10 * result.float32 and 1e-7 <= f32 <= 1e-4
    assert "allows 1e-09" in line and "allows 1e-04" in line


def test_your_multi_head_attention_runs_the_model_with_your_attention_inside():
    config, calls = NB08, []

    def counting_attention(q, k, v, mask):
        calls.append(mask is not None)
        return solutions.my_attention(q, k, v, mask)

    model = parts.assemble(config, multi_head_attention=solutions.my_multi_head_attention,
                           attention=counting_attention)
    with torch.no_grad():
        model(torch.tensor([list(b"abc\tbcd")]))
    assert calls == [True]  # the forward is yours, and the attention it calls by name is the Parts' one
    assert parts.check(parts.Parts(multi_head_attention=solutions.my_multi_head_attention), config).ok


@pytest.mark.parametrize("position", ["pre", "post"])
def test_your_block_runs_the_model(position):
    config = tiny_config(norm_position=position)
    model = parts.assemble(config, block=solutions.my_block)
    assert all(type(b).__name__ == "YourBlock" for b in model.blocks)
    assert parts.check(parts.Parts(block=solutions.my_block), config).ok


def test_with_every_piece_yours_the_model_is_yours_from_its_forward_down_and_computes_minitfs_logits():
    config = NB08
    model = parts.assemble(config, ALL)
    kinds = [type(model).__name__, type(model.blocks[0]).__name__, type(model.blocks[0].attn).__name__,
             type(model.blocks[0].ffn).__name__, type(model.embed).__name__]
    assert kinds == ["YourTransformer", "YourBlock", "YourAttention", "YourFeedForward", "YourEmbedding"]
    assert check_all(config).ok


def test_check_yours_takes_the_reference_for_an_unwritten_piece_and_names_a_wrong_one(capsys):
    """04's one call: notebook 04's three layouts compared in one sentence, a piece not yet written
    replaced by the reference (and named so); a piece that fails its check is replaced too."""
    import minitf

    def unwritten(x, w_up, b_up, w_down, b_down):
        raise NotImplementedError("your FFN here")

    right = minitf.parts.check_yours(feed_forward=unwritten, block=minitf.solutions.my_block)
    assert list(right) == ["LayerNorm", "RMSNorm", "Config.modern()"] and all(o.ok for o in right.values())
    shown = capsys.readouterr().out
    assert shown.count("\n") == 1 and shown.startswith("✓ Your block, with the reference solution for feed_forward")
    assert "under LayerNorm, RMSNorm and Config.modern()" in shown
    minitf.parts.check_yours({"post": minitf.Config()}, layer_norm=layer_norm_unbiased)  # fails its check:
    assert "reference solutions of layer_norm (none of yours" in capsys.readouterr().out  # the reference is used


def test_check_yours_says_which_layout_fails_and_reports_it():
    from minitf.course.parts import PartsCheck, _yours_sentence
    good = PartsCheck(max_diff=0.0, broken={}, tolerance=1e-9)
    bad = PartsCheck(max_diff=0.2, broken={"block": "alone it changes the logits by 0.2"}, tolerance=1e-9)
    said = _yours_sentence({"block": True}, {"LayerNorm": good, "RMSNorm": bad})
    assert said.startswith("✗ Your block does not compute minitf's logits under RMSNorm:")


# every option of Config (each top-level field and each group's variant) at a value that is not its
# default (BESIDE: what that value needs beside it): a new option without a row here fails
# test_every_config_option_has_a_row, so an option the Your* adapters do not pass on to your pieces
# (it reaches them as None, or not at all) fails test_the_adapters_pass_on_every_config_option
NON_DEFAULT = dict(vocab_size=300, d_model=8, n_heads=1, head_dim=4, n_layers=3, d_ff=12,
                   activation="gelu", norm="rms", norm_position="pre", norm_eps=0.3,
                   positional="sinusoidal", rope_base=3.0, rope_on_v=True, rope_scale=2.5,
                   rope_freqs=(0.7,), position_ids="coupled", position_offset=3, tie_embeddings=True,
                   causal=False, residual=False, ffn=False, dropout=0.3, max_len=16, bias=False,
                   ffn_gate=True, qk_norm=True, logit_softcap=0.5, zero_init=True)
BESIDE = {"position_offset": dict(position_ids="coupled")}  # what a value needs beside it


def test_every_config_option_has_a_row():
    assert set(NON_DEFAULT) == set(minitf.Config().flat()), \
        "a Config option was added or removed: give it a non-default value in NON_DEFAULT"


@pytest.mark.parametrize("option", list(NON_DEFAULT))
@pytest.mark.parametrize("layout", ["seed", "modern"])
def test_the_adapters_pass_on_every_config_option(option, layout):
    """The model assembled from the reference pieces (parts.py's Your* modules calling them) computes
    minitf's own logits under every option, alone on the seed and on the modern block (where the
    gated FFN calls your swiglu): an option the adapters do not pass on shows as a difference."""
    base = {} if layout == "seed" else dict(MODERN)
    # the modern block sets some options already: for those, the option at its default is the change
    change = ({option: minitf.Config().flat()[option]} if option in base
              else {**BESIDE.get(option, {}), option: NON_DEFAULT[option]})
    if layout == "modern" and option == "ffn":
        base.pop("ffn_gate")  # a gated FFN needs an FFN
    config = minitf.Config(**{**base, **change})
    assert config != minitf.Config(**base)
    # every reference piece the config's model can take (parts.unfit: the plain FFN is ReLU's with biases)
    pieces = parts.Parts(**{name: getattr(ALL, name) for name in ALL.given()
                            if not parts.unfit(name, config)})
    result = parts.check(pieces, config)
    assert result.ok, f"{option}: {result}"
    model = parts.assemble(config, pieces)
    assert any(type(m).__name__.startswith("Your") for m in model.modules())
