"""`train --time SECONDS`: the flag's errors, each one line naming it, and a timed run's checkpoint
recording what happened (its budget, the steps it trained). The schedule as a function of elapsed
time is held with a fake clock in tests/test_train.py; bench/lm_best_time.py measures real runs."""
import pytest

import minitf
from minitf.cli import main

TRAIN = ["train", "--train", "data/train.txt", "--val", "data/val.txt", "--steps", "3",
         "--no-progress", "--out"]


@pytest.mark.parametrize("extra, says", [
    (["--time", "0"], "--time must be a number of seconds > 0 (the wall-clock budget), got 0.0"),
    (["--time", "-60"], "--time must be a number of seconds > 0 (the wall-clock budget), got -60.0"),
    (["--time", "nan"], "--time must be a number of seconds > 0"),
    (["--time", "inf"], "--time must be a number of seconds > 0"),
    (["--time", "60", "--trainer", "lightning"], "--time is for --trainer minitf; Lightning trains for --steps"),
])
def test_a_bad_time_budget_is_one_line_naming_the_flag(extra, says, tmp_path, capsys):
    assert main([*TRAIN, str(tmp_path / "m.pt"), *extra]) == 2
    out, err = capsys.readouterr()
    assert err.startswith("minitf: error: ") and err.count("\n") == 1 and says in err, err
    assert out == "" and not (tmp_path / "m.pt").exists()


def test_time_that_is_not_a_number_is_refused_by_the_parser(tmp_path, capsys):
    assert main([*TRAIN, str(tmp_path / "m.pt"), "--time", "ten"]) == 2
    assert "--time" in capsys.readouterr().err


def test_a_timed_run_records_its_budget_and_the_steps_it_trained(tmp_path, capsys):
    """The run trains until the budget is used up, not for --steps, and validates last."""
    out = tmp_path / "m.pt"
    assert main([*TRAIN, str(out), "--d-model", "8", "--time", "0.2"]) == 0
    printed = capsys.readouterr().out
    meta = minitf.load(out).metadata
    assert meta["time_budget"] == 0.2 and meta["steps_trained"] >= 1
    assert meta["val_curve"][-1]["step"] == meta["steps_trained"]  # validated after the last step
    assert f"trained {meta['steps_trained']} step" in printed and "--time 0.2" in meta["command"]
