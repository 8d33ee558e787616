"""Length generalisation: randomised position offsets (Config.position_offset), the CLI's exact match per input
length, and the stored length study (bench/length_study.py)."""
import json
import shlex

import pytest
import torch

import minitf
from minitf import Config, Transformer
from minitf.cli import main
from minitf.core.model import offset_positions
from minitf.core.rope import position_ids
from minitf.core.tokens import TAB
from minitf.experiments.length import LENGTH_STUDY_JSON, load_length_study

COUPLED = dict(d_model=8, n_heads=2, n_layers=1, position_ids="coupled", dropout=0.0)


def test_position_offset_defaults_change_nothing():  # its repr and dict at the default: test_config
    assert Config().positions.position_offset == 0
    off = Config(**COUPLED, position_offset=12)
    assert off.to_dict()["position_offset"] == 12 and Config.from_dict(off.to_dict()) == off
    for bad in (-1, 1.5):
        with pytest.raises(ValueError, match="position_offset"):
            Config(**COUPLED, position_offset=bad)
    with pytest.raises(ValueError, match="coupled"):
        Config(position_offset=3)  # sequence ids
    with pytest.raises(ValueError, match="coupled"):
        Config(**{**COUPLED, "positional": "sinusoidal"}, position_offset=3)


def test_offset_positions_shift_every_id_but_tabs_by_one_draw_per_row():
    ids = torch.tensor([[ord("a"), ord("b"), TAB, ord("b"), ord("c"), 10],
                        [ord("x"), TAB, ord("y"), 10, 0, 0]])
    pos = position_ids(ids, "coupled")
    g = torch.Generator().manual_seed(0)
    shifted = offset_positions(pos, 24, generator=g)
    k = shifted - pos
    assert (k[ids == TAB] == 0).all() and (shifted[ids == TAB] == 0).all()
    for row in range(2):
        others = k[row][ids[row] != TAB]
        assert (others == others[0]).all() and 0 <= int(others[0]) <= 24
    draws = {int((offset_positions(pos, 24, generator=g) - pos)[0, 0]) for _ in range(50)}
    assert len(draws) > 5 and min(draws) >= 0 and max(draws) <= 24


def test_position_offset_acts_in_training_only():
    torch.manual_seed(0)
    plain = Transformer(Config(**COUPLED))
    off = Transformer(Config(**COUPLED, position_offset=12))
    off.load_state_dict(plain.state_dict())
    batch = minitf.make_batch(minitf.make_pairs("shift", 8, 0))
    plain.eval(), off.eval()
    assert torch.equal(plain(batch.ids), off(batch.ids))  # evaluation: the ids of the plain model
    plain.train(), off.train()
    torch.manual_seed(1)
    assert torch.equal(plain(batch.ids), plain(batch.ids))  # dropout 0, no offset: deterministic
    assert not torch.allclose(plain(batch.ids), off(batch.ids))  # training: shifted ids
    # generation (KV cache, eval mode) reads the same ids as the plain model
    assert minitf.generate(plain.eval(), "abc", 4) == minitf.generate(off.eval(), "abc", 4)


def test_cli_eval_prints_exact_match_by_length(capsys):
    assert main(["eval", "data/checkpoints/shift_smallest.pt", "data/val.txt"]) == 0
    out = json.loads(capsys.readouterr().out)
    by_len = out["exact_match_by_length"]
    pairs = minitf.read_pairs("data/val.txt")
    assert set(by_len) == {str(len(p.input)) for p in pairs}
    assert out["exact_match"] == 1.0 and all(v == 1.0 for v in by_len.values())


def test_stored_length_study():
    """The summary of minitf/experiments/stored/length_study.json that docs/recipes.md quotes."""
    study = load_length_study()
    assert study.buckets == ["1-12", "13-16", "17-20", "21-24"]
    assert all(len(a.seeds) == 3 for a in study.arms.values())
    fast = study["fast"]
    assert fast.params == 29_408 and fast.buckets["1-12"] == (1.0, 1.0, 1.0)
    assert fast.buckets["21-24"][2] == 0.0 and fast.by_length[17] == 1.0 and fast.by_length[18] == 0.0
    assert study["fast + offset 12"].buckets["21-24"][2] <= 0.05
    assert sorted(study.solved()) == ["d8, ω=2π/27", "fast, ω=2π/27"]
    assert study["fast, ω=2π/27"].params == 29_408 and study["d8, ω=2π/27"].params == 2_624
    assert min(study["d8, ω=2π/27"].exact_13_24) >= 0.99
    assert study["d8"].buckets["21-24"][2] == 0.0  # the same model at base 20
    offsets = study["small + offset 12, 6,000 steps"]
    assert offsets.params == 1_984 and sum(x >= 0.99 for x in offsets.exact_13_24) == 2
    assert len(study.rows()) == len(study.arms) and "fast" in repr(study)
    doc = json.loads(LENGTH_STUDY_JSON.read_text())
    assert doc["arms"]["fast, ω=2π/27"]["config"]["rope_freqs"][0] == pytest.approx(2 * 3.14159265 / 27)


LONG = {"shift_long": "shift-long", "shift_long_small": "shift-long-small"}


@pytest.mark.parametrize("name", list(LONG))
@pytest.mark.slow
def test_shift_long_checkpoints_shift_inputs_longer_than_they_trained_on(name):
    """Trained on 1-12 bytes (the command says so), >= 99 % exact match on fresh 13-24-byte pairs,
    a third with repeated bytes; the baseline shift.pt fails there."""
    torch.set_num_threads(1)
    model = minitf.load(f"data/checkpoints/{name}.pt")
    assert "--pair-len" not in model.metadata["command"]  # the default: inputs of 1-12 bytes
    fresh = minitf.make_pairs("shift", 600, 2023, min_len=13, max_len=24, repeats=0.33)
    by_len = minitf.core.evaluate.exact_match_by_length(model, fresh)
    assert set(by_len) == set(range(13, 25))
    assert minitf.evaluate(model, fresh)["exact_match"] >= 0.99
    assert min(by_len.values()) >= 0.95
    short = minitf.make_pairs("shift", 300, 2024, repeats=0.33)
    assert minitf.evaluate(model, short)["exact_match"] >= 0.99
    if name == "shift_long_small":
        assert minitf.count_parameters(model) == 2_624  # the stretch goal: <= 3,000
    baseline = minitf.load("data/checkpoints/shift.pt")
    assert minitf.evaluate(baseline, fresh[:200])["exact_match"] < 0.2


@pytest.mark.parametrize("name", list(LONG))
def test_shift_long_recipes_are_the_shipped_checkpoint_commands(name):
    from minitf.core import recipes

    model = minitf.load(f"data/checkpoints/{name}.pt")
    recorded = minitf.cli.parser().parse_args(shlex.split(model.metadata["command"])[3:])
    flags = minitf.cli.flag_words(recipes.get(LONG[name]).values)
    assert vars(recorded) == vars(minitf.cli.parser().parse_args(
        ["train", *flags, "--out", f"data/checkpoints/{name}.pt"]))  # the same settings, flag by flag
    words = minitf.cli.recipe_expanded(LONG[name], ["--out", "x.pt"], set())
    args = minitf.cli.parser().parse_args(["train", *words])
    assert minitf.cli.config_from_args(args) == model.config
    assert model.config.positions.rope_freqs[0] == pytest.approx(2 * 3.141592653589793 / 27, rel=1e-9)
    assert model.config.positions.position_offset == 0


def test_cli_position_offset_flag(tmp_path, capsys):
    out = tmp_path / "m.pt"
    assert main(["train", "--task", "shift", "--n-train", "40", "--n-val", "5", "--steps", "2",
                 "--d-model", "8", "--position-ids", "coupled", "--position-offset", "12",
                 "--out", str(out), "--no-progress"]) == 0
    assert minitf.load(out).config.positions.position_offset == 12
    assert main(["train", "--position-offset", "3", "--steps", "1", "--n-train", "10",
                 "--n-val", "5", "--out", str(tmp_path / "x.pt"), "--no-progress"]) == 2
    assert "position_ids='coupled'" in capsys.readouterr().err
