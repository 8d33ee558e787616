"""Config: the sizes and the block's layout at the top, the variants in three groups that check
themselves; the flat keywords, dicts and repr written before the groups still work."""
import dataclasses
import json

import pytest
import torch

from minitf import Config
from minitf.core.config import GROUP_OF, LEFT_OUT_AT, Ablations, ModernBlock, Positions
from support import ROOT

TOP_LEVEL = ["vocab_size", "d_model", "n_heads", "head_dim", "n_layers", "d_ff", "activation", "norm",
             "norm_position", "norm_eps", "positions", "tie_embeddings", "ablations", "dropout",
             "max_len", "modern_block"]


def stored_config_dicts():
    """Every config dict the repository keeps: in checkpoints and in the stored results' JSON."""
    found = []
    for path in sorted((ROOT / "data").rglob("*.pt")) + sorted((ROOT / "minitf/experiments/stored").glob("*.pt")):
        payload = torch.load(path, weights_only=True, map_location="cpu")
        if isinstance(payload, dict) and payload.get("config") is not None:
            found.append((path.name, payload["config"]))

    def walk(x, name):
        if isinstance(x, dict):
            if {"vocab_size", "d_model", "n_heads"} <= set(x):
                found.append((name, x))
            for v in x.values():
                walk(v, name)
        elif isinstance(x, list):
            for v in x:
                walk(v, name)
    for path in sorted((ROOT / "minitf/experiments/stored").glob("*.json")):
        walk(json.loads(path.read_text(encoding="utf-8")), path.name)
    return found


def test_the_top_level_holds_the_sizes_the_layout_and_three_groups():
    assert [f.name for f in dataclasses.fields(Config)] == TOP_LEVEL
    c = Config()
    assert (type(c.positions), type(c.ablations), type(c.modern_block)) == (Positions, Ablations,
                                                                             ModernBlock)
    assert c.positions == Positions() and c.ablations == Ablations() and c.modern_block == ModernBlock()


def test_a_variant_by_its_own_name_sets_its_group():
    assert Config(causal=False) == Config(ablations=Ablations(causal=False))
    assert Config(rope_base=20.0, position_ids="coupled").positions == \
        Positions(rope_base=20.0, position_ids="coupled")
    assert Config(qk_norm=True).modern_block == ModernBlock(qk_norm=True)
    # given both, the variant's own name wins over the group's value, the rest of the group stays
    both = Config(positions=Positions(rope_base=20.0, rope_on_v=True), rope_base=30.0)
    assert both.positions == Positions(rope_base=30.0, rope_on_v=True)
    # both ways of copying with a change take the flat names too
    assert dataclasses.replace(Config(), causal=False) == Config(causal=False)
    assert Config(d_model=8).replace(ffn=False, n_heads=4) == Config(d_model=8, n_heads=4, ffn=False)
    assert Config.modern().modern_block == ModernBlock(bias=False, ffn_gate=True, qk_norm=True)


def test_every_stored_config_reads_and_writes_as_before():
    stored = stored_config_dicts()
    assert len(stored) >= 20  # the checkpoints in data/ and the studies' configs
    for name, d in stored:
        config = Config.from_dict(d)
        again = {k: list(v) if isinstance(v, tuple) else v for k, v in config.to_dict().items()}
        as_stored = {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}
        # what was saved comes back, and nothing more (a field at its old default may be missing)
        assert {k: again[k] for k in as_stored} == as_stored, name
        assert set(again) - set(as_stored) <= set(Config().to_dict()), name
        assert Config.from_dict(config.to_dict()) == config


def test_to_dict_and_the_repr_keep_the_flat_form():
    c = Config()
    assert list(c.to_dict()) == ["vocab_size", "d_model", "n_heads", "head_dim", "n_layers", "d_ff",
                                 "activation", "norm", "norm_position", "norm_eps", "positional",
                                 "rope_base", "rope_on_v", "rope_scale", "rope_freqs",
                                 "position_ids", "tie_embeddings", "causal", "residual", "ffn",
                                 "dropout", "max_len"]
    # the repr is the call that rebuilds it, as notebooks 00, 09 and 12 print it
    assert eval(repr(Config(causal=False, rope_on_v=True)), {"Config": Config}) == \
        Config(causal=False, rope_on_v=True)
    assert repr(c).startswith("Config(vocab_size=256, d_model=4, n_heads=2, head_dim=2, n_layers=2, ")
    assert "positions=" not in repr(c) and "position_offset" not in repr(c)


def test_the_repr_shows_every_option_that_differs_from_its_default():
    """Two configs that differ print differently: an option added later (the modern block's,
    position_offset) shows once it is set, and the repr rebuilds the config."""
    assert repr(Config(bias=False)) != repr(Config())
    assert "bias=False" in repr(Config(bias=False)) and "bias" not in repr(Config())
    for name in LEFT_OUT_AT:
        assert f"{name}=" not in repr(Config())
    changed = {"bias": False, "ffn_gate": True, "qk_norm": True, "logit_softcap": 30.0, "zero_init": True,
               "position_ids": "coupled", "position_offset": 3}
    assert set(LEFT_OUT_AT) <= set(changed)  # every option the repr may leave out is tried here
    for name, value in changed.items():
        c = Config(**{name: value, "position_ids": "coupled"})
        assert f"{name}={value!r}" in repr(c), name
        assert eval(repr(c), {"Config": Config}) == c
    modern = Config.modern(d_model=16)
    assert eval(repr(modern), {"Config": Config}) == modern
    assert "bias=False" in repr(modern) and "qk_norm=True" in repr(modern)


def test_from_dict_reads_the_grouped_form_too():
    c = Config(d_model=8, position_ids="coupled", position_offset=3, residual=False, zero_init=True)
    grouped = dataclasses.asdict(c)
    assert grouped["positions"]["position_offset"] == 3
    assert Config.from_dict(grouped) == Config.from_dict(c.to_dict()) == c
    with pytest.raises(ValueError, match=r"unknown fields \['rope_bass'\] in positions"):
        Config.from_dict({**grouped, "positions": {**grouped["positions"], "rope_bass": 2.0}})
    with pytest.raises(ValueError, match=r"unknown fields \['casual'\]"):
        Config.from_dict({**c.to_dict(), "casual": False})


def test_each_group_checks_its_own_values():
    with pytest.raises(ValueError, match="rope_base must be > 1"):
        Positions(rope_base=1.0)
    with pytest.raises(ValueError, match="position_offset .* needs position_ids='coupled'"):
        Positions(position_offset=4)
    with pytest.raises(ValueError, match="causal must be True or False, got 'yes'"):
        Ablations(causal="yes")
    with pytest.raises(ValueError, match="logit_softcap must be a positive number"):
        ModernBlock(logit_softcap=0)
    # what a group asks of the sizes, or of another group, Config checks
    with pytest.raises(ValueError, match="head_dim must be even"):
        Config(d_model=6, n_heads=2)
    with pytest.raises(ValueError, match=r"rope_freqs needs head_dim/2 = 1"):
        Config(rope_freqs=(1.0, 0.5, 0.25))
    with pytest.raises(ValueError, match="ffn_gate gates the FFN"):
        Config(ffn=False, ffn_gate=True)


def test_a_wrong_name_or_a_flat_read_says_where_to_look():
    with pytest.raises(TypeError, match=r"unknown fields \['casual'\]"):
        Config(casual=False)
    with pytest.raises(TypeError, match="positions must be a Positions"):
        Config(positions={"rope_base": 20.0})
    for name, group in GROUP_OF.items():
        with pytest.raises(AttributeError, match=rf"config\.{group}\.{name}"):
            getattr(Config(), name)
