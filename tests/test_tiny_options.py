"""The options behind the smallest shift solver: coupled position ids, tied embeddings, and RoPE
frequencies set per head or scaled (bench/tiny_sweep.py). Defaults stay the seed's."""
import math

import pytest
import torch

import minitf
from minitf import Config, Transformer, count_parameters
from minitf.core.checkpoint import load, save
from minitf.core.evaluate import masked_loss
from minitf.cli import config_from_args, parser
from minitf.core.kv_cache import KVCache
from minitf.course.parts import Parts, assemble
from minitf.core.rope import (alias_margin, apply_rope, config_frequencies, position_ids, rope_angles,
                         rope_frequencies, sinusoidal_table)
from minitf.views.trace import trace
from support import tiny_config

PAIR = list(b"abc\tbcd\n")  # x_0 x_1 x_2 TAB y_0 y_1 y_2 EOS


# --- position ids ----------------------------------------------------------------------------------

def test_sequence_ids_are_0_to_T():
    ids = torch.tensor([PAIR])
    assert position_ids(ids).tolist() == [list(range(8))]


def test_coupled_ids_restart_after_the_tab():
    # x_j → j+1, TAB → 0, y_j → j+1, EOS → L+1 (then padding keeps counting)
    ids = torch.tensor([PAIR + [0, 0, 0], list(b"hello\tifmmp")])
    assert position_ids(ids, "coupled").tolist() == [[1, 2, 3, 0, 1, 2, 3, 4, 5, 6, 7],
                                                     [1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5]]


def test_coupled_output_byte_and_its_input_byte_share_an_id():
    for x in (b"a", b"hello", b"0123456789ab"):
        seq = list(x) + [minitf.TAB] + list(minitf.shift_bytes(x)) + [minitf.EOS]
        pos = position_ids(torch.tensor([seq]), "coupled")[0].tolist()
        L = len(x)
        for j in range(L):
            assert pos[j] == pos[L + 1 + j] == j + 1
        assert pos[L] == 0 and pos[-1] == L + 1


def test_coupled_ids_without_a_tab_count_from_one_and_never_look_ahead():
    text = torch.tensor([list(b"plain text")])
    assert position_ids(text, "coupled").tolist() == [list(range(1, 11))]
    # an id depends only on the bytes up to it: a prefix gets the prefix of the ids
    full = position_ids(torch.tensor([PAIR]), "coupled")[0]
    for n in range(1, len(PAIR) + 1):
        assert position_ids(torch.tensor([PAIR[:n]]), "coupled")[0].tolist() == full[:n].tolist()
    # only the first TAB restarts the count
    assert position_ids(torch.tensor([list(b"a\tb\tc")]), "coupled").tolist() == [[1, 0, 1, 2, 3]]


def test_bad_position_ids_are_refused():
    with pytest.raises(ValueError, match="position_ids must be one of"):
        Config(position_ids="absolute")
    with pytest.raises(ValueError, match="positional='none'"):
        Config(position_ids="coupled", positional="none")
    with pytest.raises(ValueError, match="position_ids must be"):
        position_ids(torch.tensor([PAIR]), "shifted")


def test_coupled_rope_scores_tab_against_first_input_byte_whatever_the_length():
    """The point of coupling: the relative position of TAB (id 0) and x_0 (id 1) no longer
    depends on the input length, so neither does their attention score."""
    def score(config, L):
        torch.manual_seed(0)
        model = Transformer(config).double().eval()
        tr = trace(model, b"a" * L + b"\t")
        return float(tr.layers[0].scores[0, L, 0])  # query TAB, key x_0
    coupled = tiny_config(position_ids="coupled", n_layers=1)
    sequence = tiny_config(n_layers=1, rope_base=10.0)
    assert score(coupled, 3) == pytest.approx(score(coupled, 9), abs=1e-12)
    assert abs(score(sequence, 3) - score(sequence, 9)) > 1e-3


@pytest.mark.parametrize("positional", ["rope", "sinusoidal"])
def test_coupled_forward_matches_the_trace_and_the_kv_cache(positional):
    config = tiny_config(position_ids="coupled", positional=positional, max_len=16)
    torch.manual_seed(1)
    model = Transformer(config).double().eval()
    ids = torch.tensor([PAIR])
    with torch.no_grad():
        logits = model(ids)[0]
        tr = trace(model, PAIR)
        assert tr.positions == [1, 2, 3, 0, 1, 2, 3, 4]
        assert torch.allclose(tr.logits, logits, atol=1e-10)
        cache = KVCache(config.n_layers)
        prompt = model(ids[:, :4], cache=cache)  # input and TAB, then byte by byte
        steps = [model(ids[:, t:t + 1], cache=cache) for t in range(4, 8)]
        cached = torch.cat([prompt, *steps], dim=1)[0]
    assert torch.allclose(cached, logits, atol=1e-10)
    if positional == "sinusoidal":  # x0 = embedding + the table's row at each coupled id
        table = sinusoidal_table(17, 8).double()
        assert torch.allclose(tr.positional, table[[1, 2, 3, 0, 1, 2, 3, 4]])
    else:  # RoPE turns each position by its id times θ
        theta = model.blocks[0].attn.inv_freq
        assert torch.allclose(tr.layers[0].rope_cos, torch.cos(tr.layers[0].rope_theta[:, None, :]
                              * torch.tensor(tr.positions, dtype=torch.float64)[None, :, None]))
        assert torch.equal(tr.layers[0].rope_theta, theta)


def test_coupled_sinusoidal_reads_a_full_row_without_tab():
    config = tiny_config(position_ids="coupled", positional="sinusoidal", max_len=10)
    model = Transformer(config).eval()
    assert model(torch.full((1, 10), 65)).shape == (1, 10, 256)  # ids 1 … 10 = max_len


def test_coupled_generation_with_and_without_cache_agree():
    torch.manual_seed(2)
    model = Transformer(tiny_config(position_ids="coupled")).eval()
    with_cache = minitf.generate_text(model, "ab\tc", 12, greedy=True)
    without = minitf.generate_text(model, "ab\tc", 12, greedy=True, cache=False)
    assert with_cache == without


# --- tied embeddings -------------------------------------------------------------------------------

def test_tied_head_shares_the_embedding_and_counts_it_once():
    tied = Transformer(Config(tie_embeddings=True))
    assert tied.head.weight is tied.embed.weight
    assert tied.head.bias.shape == (256,)  # the head keeps its own biases
    assert count_parameters(tied) == 2648 - 256 * 4 == 1624  # the untied 2,648: test_model
    assert count_parameters(Transformer(tiny_config(tie_embeddings=True, n_heads=1, n_layers=1))) == 2920


def test_tied_gradient_is_the_sum_of_both_uses():
    torch.manual_seed(3)
    tied = Transformer(tiny_config(tie_embeddings=True)).double()
    untied = Transformer(tiny_config()).double()
    state = tied.state_dict()  # holds the shared matrix under both names
    untied.load_state_dict(state)
    assert torch.equal(untied.head.weight, untied.embed.weight)
    assert untied.head.weight is not untied.embed.weight
    batch = minitf.make_batch(minitf.make_pairs("shift", 8, seed=0))
    for model in (tied, untied):
        masked_loss(model(batch.ids), batch.targets).backward()
    as_input, as_head = untied.embed.weight.grad, untied.head.weight.grad
    assert as_input.abs().sum() > 0 and as_head.abs().sum() > 0  # both uses carry gradient
    assert torch.allclose(tied.embed.weight.grad, as_input + as_head, atol=1e-12)


def test_tied_checkpoint_round_trip(tmp_path):
    torch.manual_seed(4)
    model = Transformer(tiny_config(tie_embeddings=True, position_ids="coupled", rope_freqs=(1.0, 0.25)))
    save(model, tmp_path / "m.pt")
    back = load(tmp_path / "m.pt")
    assert back.config == model.config and back.head.weight is back.embed.weight
    ids = torch.tensor([PAIR])
    assert torch.equal(back(ids), model.eval()(ids))


def test_parts_keep_the_tie():
    model = assemble(tiny_config(tie_embeddings=True), Parts(embed=minitf.solutions.my_embed))
    assert model.head.weight is model.embed.weight
    assert count_parameters(model) == count_parameters(Transformer(tiny_config(tie_embeddings=True)))


# --- RoPE frequencies ------------------------------------------------------------------------------

def test_default_frequencies_are_unchanged():
    for config in (Config(), tiny_config(), tiny_config(rope_base=20.0)):
        expected = rope_frequencies(config.head_dim, config.positions.rope_base, config.n_heads)
        assert torch.equal(config_frequencies(config), expected)
        assert torch.equal(Transformer(config).blocks[0].attn.inv_freq, expected)


def test_rope_scale_multiplies_the_positions():
    scaled = config_frequencies(Config(rope_scale=0.25))
    assert torch.allclose(scaled, torch.full((2, 1), 0.25))
    # turning position m by θ·s is turning position m·s by θ
    cos_a, _ = rope_angles(scaled, 6)
    cos_b, _ = rope_angles(config_frequencies(Config()), 6)
    assert torch.allclose(cos_a[:, 4], cos_b[:, 1])


def test_explicit_frequencies_shared_or_per_head():
    shared = config_frequencies(tiny_config(rope_freqs=(1.0, 0.2)))
    assert torch.allclose(shared, torch.tensor([[1.0, 0.2], [1.0, 0.2]]))
    per_head = config_frequencies(tiny_config(rope_freqs=(1.0, 0.5, 0.3, 0.1)))
    assert torch.allclose(per_head, torch.tensor([[1.0, 0.5], [0.3, 0.1]]))


@pytest.mark.parametrize("changes, message", [
    (dict(rope_freqs=(1.0, 0.5, 0.2)), "rope_freqs needs head_dim/2"),
    (dict(rope_freqs=(1.0, -0.5)), "positive numbers"),
    (dict(rope_freqs=("a", 1.0)), "positive numbers"),
    (dict(rope_freqs=(1.0, 0.5), rope_scale=2.0), "not both"),
    (dict(rope_scale=0.0), "rope_scale must be a positive"),
    (dict(rope_scale=0.5, positional="sinusoidal"), "has no RoPE"),
])
def test_bad_rope_frequencies_are_refused(changes, message):
    with pytest.raises(ValueError, match=message):
        tiny_config(**changes)


def test_head_dim_2_aliases_whatever_the_base_and_explicit_frequencies_fix_it():
    """A head_dim-2 head has one frequency, 1 rad/position at any base: offset 6 (6 rad, almost a
    full turn) scores 0.96 of offset 0. A frequency of 2π/13 keeps offsets 1-12 apart."""
    for base in (10.0, 10000.0):
        assert config_frequencies(Config(rope_base=base)).tolist() == [[1.0], [1.0]]
    q = torch.ones(1, 1, 13, 2, dtype=torch.float64)  # the same vector at every position

    def scores(theta):  # the query at position 12 against keys at offsets 12 … 0
        cos, sin = rope_angles(theta, 13)
        r = apply_rope(q, cos, sin)[0, 0]
        return (r[12] @ r.T).flip(0) / 2  # score of offset m = 0 … 12, |q||k| = 2
    seed = scores(config_frequencies(Config()).double()[:1])
    assert float(seed[6] / seed[0]) == pytest.approx(math.cos(6), abs=1e-12)
    assert float(seed[6] / seed[0]) > 0.96
    fixed = scores(config_frequencies(Config(rope_freqs=(2 * math.pi / 13,))).double()[:1])
    assert float(fixed[1:].max() / fixed[0]) == pytest.approx(math.cos(2 * math.pi / 13))
    # the margins of the research notes' Table 3 (offsets 1-12)
    assert alias_margin([1.0]) == pytest.approx(1 - math.cos(6), abs=1e-9)  # 0.040
    assert alias_margin([2 * math.pi / 13]) == pytest.approx(0.1145, abs=1e-3)
    assert alias_margin(rope_frequencies(4, 10000.0)[0]) == pytest.approx(0.040, abs=1e-3)
    assert alias_margin(rope_frequencies(4, 20.0)[0]) == pytest.approx(0.30, abs=0.01)
    assert alias_margin(rope_frequencies(4, 20.0)[0]) > 7 * alias_margin([1.0])


# --- the command line -------------------------------------------------------------------------------

def test_cli_flags_reach_the_config():
    args = parser().parse_args(["train", "--out", "x.pt", "--position-ids", "coupled",
                                "--tie-embeddings", "--rope-freqs", "1.0", "0.2"])
    config = config_from_args(args)
    assert config.positions.position_ids == "coupled" and config.tie_embeddings
    assert config.positions.rope_freqs == (1.0, 0.2)
    args = parser().parse_args(["train", "--out", "x.pt", "--rope-scale", "0.5", "--no-ffn"])
    scaled = config_from_args(args)
    assert scaled.positions.rope_scale == 0.5 and not scaled.ablations.ffn
    default = config_from_args(parser().parse_args(["train", "--out", "x.pt"]))
    p = default.positions
    assert (p.position_ids, default.tie_embeddings, p.rope_scale, p.rope_freqs,
            default.ablations.ffn) == ("sequence", False, 1.0, None, True)


# --- the other modules that run the forward pass ------------------------------------------------------

def test_trace_explains_coupled_ids_and_the_tied_head():
    torch.manual_seed(5)
    model = Transformer(tiny_config(tie_embeddings=True, position_ids="coupled"))
    tr = trace(model, "ab\tb")
    assert "E[99,c]" in tr.explain("logits.3.99") and "tied" in tr.explain("logits.3.99")
    assert "m·θ_0 = 2 (the coupled id of position 1)" in tr.explain("L0.h0.q_rot.1.0")
    sinusoidal = trace(Transformer(tiny_config(positional="sinusoidal", position_ids="coupled")), "ab\tb")
    assert sinusoidal.explain("pos.2.0").startswith("pos[2,0] = sin(0 (the coupled id of position 2)")


def test_lightning_module_trains_a_tied_coupled_model():
    pytest.importorskip("lightning")
    from minitf.lightning import MinitfDataModule, fit
    torch.manual_seed(6)
    model = Transformer(tiny_config(tie_embeddings=True, position_ids="coupled", n_layers=1))
    pairs = minitf.make_pairs("shift", 64, seed=1)
    hist = fit(model, MinitfDataModule(pairs, pairs[:8], batch_size=16, seed=0), steps=3, lr=1e-2,
               accelerator="cpu", enable_progress_bar=False)
    assert model.head.weight is model.embed.weight and len(hist.val) == 1
