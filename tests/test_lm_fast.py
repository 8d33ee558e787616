"""`--recipe lm-fast` (docs/recipes.md's fast language model): the recipe, the shipped checkpoint and bench/lm_fast.py's arm are one
run, and the stored ablation holds what docs/recipes.md says of it."""
import shlex
import sys

import pytest

import minitf
from support import ROOT
from minitf import cli
from minitf.core import recipes
from minitf.core.text import evaluate_text, read_text
from minitf.experiments.results import load_lm_fast

sys.path.insert(0, str(ROOT / "bench"))
import lm_fast  # noqa: E402

CHECKPOINT = ROOT / "data" / "checkpoints" / "lm_fast.pt"
pytestmark = pytest.mark.usefixtures("one_thread")


def test_the_recipe_is_the_bench_arm_and_the_checkpoint_command():
    args = cli.parser().parse_args(["train", *cli.flag_words(recipes.get("lm-fast").values), "--out", "x.pt"])
    fast = lm_fast.FAST
    assert cli.config_from_args(args) == minitf.Config(max_len=64, **fast["config"])
    assert {k: getattr(args, k) for k in fast["train"]} == fast["train"]
    assert (args.optimizer, args.muon_lr, args.embed_lr) == tuple(fast["opt"][k] for k in ("kind", "muon_lr", "embed_lr"))
    sys.path.insert(0, str(ROOT / "data" / "checkpoints"))
    import make
    made = cli.parser().parse_args(["train", *shlex.split(make.RECIPES["lm_fast"]), "--out", "x.pt"])
    assert vars(made) == vars(args)  # make.py trains the recipe's settings
    recorded = minitf.load(CHECKPOINT).metadata["command"]
    assert recorded == f"python -m minitf train {make.RECIPES['lm_fast']} --out data/checkpoints/lm_fast.pt"


@pytest.mark.slow
def test_the_shipped_run_reaches_nanogpts_mark():
    model = minitf.load(CHECKPOINT)
    text = read_text(ROOT / "data" / "text" / "tinyshakespeare.txt", 64)
    loss = evaluate_text(model, text.val)["loss"]
    assert loss <= lm_fast.TARGET
    assert abs(loss - model.metadata["val"]["loss"]) < 0.01
    assert model.config.modern_block.qk_norm and model.config.n_layers == 2
    assert minitf.count_parameters(model) == 133_184


def test_stored_ablation_meets_the_goal():
    res = load_lm_fast()
    fast, ref = res.arm("lm-fast"), res.arm("reference")
    assert len(fast.seeds) >= 3 and fast.seeds == ref.seeds[:len(fast.seeds)]
    assert max(fast.losses) <= res.target          # every seed reaches nanoGPT's mark
    assert fast.ratio <= 0.25 and fast.cpu_ratio <= 0.25  # in a quarter of the reference's time
    assert min(ref.losses) > res.target - 0.02      # the reference lands near the mark itself
    for a in res.arms:
        assert len(a.losses) >= 3, a.name


def test_recipe_md_writes_out_the_recipe():
    import re

    text = re.sub(r"\\\n\s*", " ", (ROOT / "docs" / "recipes.md").read_text())
    command = next(m.group(0) for m in re.finditer(r"python -m minitf train[^\n`]*", text)
                   if "--qk-norm" in m.group(0))
    written = shlex.split(command)[3:]  # after "python -m minitf"
    assert written[-2] == "--out"
    assert vars(cli.parser().parse_args(written)) == vars(cli.parser().parse_args(
        ["train", *cli.flag_words(recipes.get("lm-fast").values), *written[-2:]]))


def test_loaders_read_the_stored_results():
    from matplotlib.figure import Figure
    from minitf.experiments.results import load_lm_envelope

    res = load_lm_fast()
    assert "lm-fast" in res.table() and "reference" in repr(res)
    assert isinstance(res.plot(), Figure)
    env = load_lm_envelope()
    assert set(env.points) == set(env.sizes) and "vs envelope" in env.growth_table()
    assert isinstance(env.plot(), Figure)


def test_lm_long_is_lm_fast_with_four_layers_and_more_steps():
    fast, long = recipes.get("lm-fast").values, recipes.get("lm-long").values
    assert {k: v for k, v in long.items() if fast.get(k) != v} == {"n_layers": 4, "steps": 1700}
    assert set(fast) == set(long)
