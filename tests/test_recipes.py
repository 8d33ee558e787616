"""Named recipes (`train --recipe NAME`) and the early stop on a held-out exact-match target."""
import contextlib
import io
import shlex

import pytest
import torch

from minitf import Config, cli, load
from minitf.cli.checks import check_args
from minitf.core import recipes
from support import ROOT



def parse(argv):
    args = cli.parser().parse_args(argv)
    return cli.with_recipe(args.recipe, argv) if getattr(args, "recipe", None) else (args, argv)


def without(args, *names):
    return {k: v for k, v in vars(args).items() if k not in names}


@pytest.mark.parametrize("name", list(recipes.RECIPES))
def test_every_recipe_parses_into_a_model(name):
    recipe = recipes.RECIPES[name]
    args, _ = parse(["train", "--recipe", name, "--out", "x.pt"])
    for dest, value in recipe.values.items():  # each setting is a `train` flag's, parsed back as it is
        assert hasattr(args, dest) and getattr(args, dest) == value and \
            type(getattr(args, dest)) is type(value), dest
    assert isinstance(cli.config_from_args(args), Config)
    assert recipe.description and "\n" not in recipe.description


def test_help_lists_every_recipe_with_its_description():
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        cli.parser().parse_args(["train", "--help"])
    text = " ".join(out.getvalue().split())  # help wraps lines
    for r in recipes.RECIPES.values():
        assert f"{r.name}: " in text and " ".join(r.description.split()) in text
        assert " ".join(cli.flag_words(r.values)) in text


def test_an_unknown_recipe_is_refused():
    with contextlib.redirect_stderr(io.StringIO()), pytest.raises(SystemExit):
        cli.parser().parse_args(["train", "--recipe", "nope", "--out", "x.pt"])
    with pytest.raises(ValueError, match="unknown recipe"):
        recipes.get("nope")


@pytest.mark.parametrize("override", [["--lr", "0.02"], ["--lr=0.02"], ["--lr", "3e-3"]])
def test_flags_given_override_the_recipe(override):
    """Even a value equal to train's own default (--lr 3e-3) wins over the recipe's."""
    args, words = parse(["train", "--recipe", "shift-fast", *override, "--out", "x.pt"])
    plain, _ = parse(["train", "--out", "x.pt"])
    assert args.lr == float(override[-1].split("=")[-1])
    recipe = recipes.RECIPES["shift-fast"].values
    assert args.d_model == recipe["d_model"] != plain.d_model  # the rest comes from the recipe
    assert args.recipe == "shift-fast"


@pytest.mark.parametrize("argv", [
    ["train", "--recipe", "shift-fast", "--out", "x.pt"],
    ["train", "--rec", "shift-fast", "--seed", "3", "--steps", "10", "--out", "x.pt"],
    ["train", "--out", "x.pt", "--recipe=shift-fast", "--lr", "0.02", "--target-exact", "0.9"],
    ["train", "--recipe", "lm", "--steps", "5", "--out", "x.pt"],
    ["train", "--recipe", "shift-smallest", "--tie-embeddings", "--d-model", "8", "--out", "x.pt"],
    ["train", "--recipe", "lm-best", "--no-qk-norm", "--norm-position", "post", "--out", "x.pt"],
    ["train", "--recipe", "lm-best", "--optimizer", "adamw", "--out", "x.pt"],
])
def test_the_written_out_command_parses_to_the_same_arguments(argv):
    """The checkpoint records the recipe's flags written out: without --recipe, same run."""
    args, words = parse(argv)
    assert not any(w.startswith("--rec") for w in words)
    again = cli.parser().parse_args(words)
    assert without(again, "recipe") == without(args, "recipe")
    flags = [w.split("=")[0] for w in words if w.startswith("--")]
    assert len(flags) == len(set(flags))  # no flag twice: the recipe's overridden ones are left out


def test_a_switch_the_recipe_sets_can_be_turned_off():
    args, words = parse(["train", "--recipe", "lm-best", "--no-qk-norm", "--out", "x.pt"])
    assert recipes.RECIPES["lm-best"].values["qk_norm"] is True and args.qk_norm is False
    assert "--qk-norm" not in words and "--no-qk-norm" in words


def test_switching_the_optimizer_drops_the_recipe_s_muon_lr():
    """lm-best's --muon-lr belongs to Muon: `--optimizer adamw` runs without it, not into an error."""
    args, words = parse(["train", "--recipe", "lm-best", "--optimizer", "adamw", "--out", "x.pt"])
    assert args.optimizer == "adamw" and args.muon_lr is None and "--muon-lr" not in words
    assert check_args(args) is None
    kept, _ = parse(["train", "--recipe", "lm-best", "--out", "x.pt"])
    assert kept.muon_lr == recipes.RECIPES["lm-best"].values["muon_lr"]


def test_shift_smallest_is_the_shipped_smallest_solver():
    """The recipe trains data/checkpoints/shift_smallest.pt: its flags are the recorded command."""
    meta = load(ROOT / "data" / "checkpoints" / "shift_smallest.pt").metadata
    words = shlex.split(meta["command"])
    out = words.index("--out")
    del words[out:out + 2]
    shipped = cli.parser().parse_args(words[3:] + ["--out", "x.pt"])
    args, _ = parse(["train", "--recipe", "shift-smallest", "--out", "x.pt"])
    assert without(args, "recipe") == without(shipped, "recipe")


@pytest.fixture
def eight_pairs(tmp_path):
    """Eight short copy pairs: memorised in a few dozen steps, a target a tiny run reaches."""
    path = tmp_path / "p8.txt"
    assert cli.main(["data", "make", "--task", "copy", "--n", "8", "--max-len", "2",
                     "--out", str(path)]) == 0
    return path


def tiny(path, *extra):
    return ["--train", str(path), "--val", str(path), "--d-model", "16", "--n-heads", "2",
            "--d-ff", "32", "--n-layers", "1", "--lr", "1e-2", "--steps", "400", "--batch-size", "8",
            "--eval-every", "10", "--no-progress", *extra]


def test_target_exact_stops_at_the_first_evaluation_that_reaches_it(eight_pairs, tmp_path):
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert cli.main(["train", *tiny(eight_pairs, "--target-exact", "1"),
                         "--out", str(tmp_path / "m.pt")]) == 0
    meta = load(tmp_path / "m.pt").metadata
    curve = [v["exact_match"] for v in meta["val_curve"]]
    assert curve[-1] >= 1.0 and all(e < 1.0 for e in curve[:-1])  # stopped at the first that did
    assert meta["steps_trained"] == meta["val_curve"][-1]["step"] < 400 == meta["steps"]
    assert meta["target_exact"] == 1.0 and meta["val"]["exact_match"] == 1.0
    assert f"trained {meta['steps_trained']} steps" in out.getvalue()


def test_an_unreachable_target_trains_every_step(eight_pairs, tmp_path):
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert cli.main(["train", *tiny(eight_pairs, "--target-exact", "1"), "--steps", "20",
                         "--out", str(tmp_path / "m.pt")]) == 0
    meta = load(tmp_path / "m.pt").metadata
    assert meta["steps_trained"] == 20 and meta["val"]["exact_match"] < 1.0
    assert "target not reached" in out.getvalue()


def test_a_recipe_run_is_reproduced_by_its_recorded_command(eight_pairs, tmp_path):
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli.main(["train", "--recipe", "shift-fast", *tiny(eight_pairs, "--target-exact", "1"),
                         "--out", str(tmp_path / "a.pt")]) == 0
        a = load(tmp_path / "a.pt")
        assert a.metadata["recipe"] == "shift-fast" and "--recipe" not in a.metadata["command"]
        words = shlex.split(a.metadata["command"])
        assert words[:4] == ["python", "-m", "minitf", "train"]
        out_at = words.index("--out")
        words[out_at + 1] = str(tmp_path / "b.pt")
        assert cli.main(words[3:]) == 0
    b = load(tmp_path / "b.pt")
    assert a.metadata["steps_trained"] == b.metadata["steps_trained"]
    for (name, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items()):
        assert torch.equal(x, y), name


@pytest.mark.parametrize("extra, message", [
    (["--target-exact", "1.5"], "fraction in"),
    (["--target-exact", "0"], "fraction in"),
    (["--target-exact", "0.9", "--eval-every", "0"], "--eval-every must be a whole number >= 1"),
])
def test_a_bad_target_is_a_clear_error(eight_pairs, tmp_path, extra, message, capsys):
    assert cli.main(["train", *tiny(eight_pairs), *extra, "--out", str(tmp_path / "m.pt")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "m.pt").exists()


def test_a_target_needs_pairs(tmp_path, capsys):
    text = tmp_path / "t.txt"
    text.write_text("hello world " * 200)
    assert cli.main(["train", "--text", str(text), "--context", "16", "--target-exact", "0.9",
                     "--eval-every", "5", "--out", str(tmp_path / "m.pt")]) == 2
    assert "--text has none" in capsys.readouterr().err


def test_val_repeats_makes_held_out_pairs_with_repeated_bytes():
    """--val-repeats: the early stop's held-out pairs can include repeated-byte inputs, none trained on;
    without it they are make_splits' own, as before."""
    from minitf.core.data import make_splits

    base = ["train", "--n-train", "2000", "--n-val", "300", "--repeats", "0.33", "--seed", "4", "--out", "x.pt"]
    train_pairs, plain = cli.train_val_pairs(cli.parser().parse_args(base))
    assert plain == make_splits("shift", 2000, 300, 4, repeats=0.33)[1]
    again, mixed = cli.train_val_pairs(cli.parser().parse_args(base + ["--val-repeats", "0.5"]))
    assert again == train_pairs and len(mixed) == 300
    assert not {p.input for p in mixed} & {p.input for p in train_pairs}
    few_letters = lambda pairs: sum(len(p.input) >= 3 and len(set(p.input)) <= 6 and
                                    len(set(p.input)) < len(p.input) for p in pairs)
    assert few_letters(mixed) > 100 > few_letters(plain)


@pytest.mark.parametrize("name, marker", [("shift", "--task shift --n-train 30000"),
                                          ("lm", "--text data/text/tinyshakespeare.txt")])
def test_the_documented_recipes_are_recipe_md_s_commands(name, marker):
    """`--recipe shift` and `--recipe lm` train what docs/recipes.md's commands train."""
    import re

    text = re.sub(r"\\\n\s*", " ", (ROOT / "docs" / "recipes.md").read_text())  # join continued lines
    command = next(m.group(0) for m in re.finditer(r"python -m minitf train[^\n`]*", text)
                   if marker in m.group(0))
    documented = cli.parser().parse_args(shlex.split(command)[3:] + ["--out", "x.pt"])
    args, _ = parse(["train", "--recipe", name, "--out", "x.pt"])
    assert without(args, "recipe") == without(documented, "recipe")
