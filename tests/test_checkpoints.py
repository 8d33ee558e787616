"""Every shipped checkpoint in data/checkpoints/ loads, says how it was made, and still reaches the
validation metrics its metadata (and the README there) state."""
import shlex

import pytest

import minitf
from support import ROOT, script
from minitf.cli import parser

FOLDER = ROOT / "data" / "checkpoints"
LANGUAGE_MODELS = {"lm", "lm_fast"}  # trained on text, not pairs: tests/test_lm.py, test_lm_fast.py check them
BY_HAND = {"shift_by_hand"}  # built, not trained: tests/test_by_hand.py checks them
CHECKPOINTS = sorted(p for p in FOLDER.glob("*.pt") if p.stem not in LANGUAGE_MODELS | BY_HAND)


pytestmark = pytest.mark.usefixtures("one_thread")  # conftest.one_thread


def maker():
    return script("data/checkpoints/make.py", "make_checkpoints")


def test_every_recipe_has_its_checkpoint_and_vice_versa():
    assert sorted(p.stem for p in FOLDER.glob("*.pt")) == sorted([*maker().RECIPES, *maker().BUILT])
    assert set(maker().BUILT) == BY_HAND


@pytest.mark.parametrize("path", CHECKPOINTS, ids=lambda p: p.name)
def test_checkpoint_is_small_and_documented(path):
    assert path.stat().st_size < 400_000
    model = minitf.load(path)
    meta = model.metadata
    assert meta["command"] == f"python -m minitf train {maker().RECIPES[path.stem]} --out data/checkpoints/{path.name}"
    readme = (FOLDER / "README.md").read_text()
    assert meta["command"] in readme, "README.md must give the exact command"
    assert f"{meta['val']['exact_match']:.1%}" in readme, "README.md must state the exact match"


@pytest.mark.parametrize("path", CHECKPOINTS, ids=lambda p: p.name)
@pytest.mark.slow
def test_checkpoint_reaches_its_stated_metrics(path):
    model = minitf.load(path)
    meta = model.metadata
    args = parser().parse_args(shlex.split(meta["command"])[3:])
    _, val_pairs = minitf.cli.train_val_pairs(args)
    assert model.config == minitf.cli.config_from_args(args)
    got, stated = minitf.evaluate(model, val_pairs), meta["val"]
    assert got["exact_match"] == pytest.approx(stated["exact_match"], abs=0.02)
    assert got["char_accuracy"] == pytest.approx(stated["char_accuracy"], abs=0.01)
    assert got["loss"] == pytest.approx(stated["loss"], rel=0.05, abs=0.005)


def test_loss_curves_reads_what_the_run_stored_by_name():
    tiny = minitf.load(FOLDER / "tiny.pt")
    curves = minitf.loss_curves(tiny)
    meta = tiny.metadata
    assert curves.val_steps == [v["step"] for v in meta["val_curve"]]
    assert curves.val_loss == [v["loss"] for v in meta["val_curve"]]
    every = meta["loss_curve_every"]
    assert curves.recent_train_loss(100) == pytest.approx(sum(meta["loss_curve"][-100 // every:]) / (100 // every))
    with pytest.raises(ValueError, match="stores no loss curves"):
        minitf.loss_curves(minitf.Transformer(minitf.Config()))


def test_fresh_pairs_leave_out_every_input_the_models_saw():
    model = minitf.load(FOLDER / "shift_smallest.pt")
    seen = {p.input for p in sum(minitf.checkpoint_pairs(model), [])}
    fresh = minitf.fresh_pairs("shift", 300, seed=3, repeats=0.33, unseen_by=[model])
    assert len(fresh) == 300 and not {p.input for p in fresh} & seen
    assert all(p.output == minitf.shift_bytes(p.input) for p in fresh)
