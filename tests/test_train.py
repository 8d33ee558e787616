"""Training, evaluation, generation."""

import math

import pytest
import torch

import minitf
from minitf import Config, Pair, Transformer, evaluate, generate, make_pairs, train
from minitf.core.tokens import EOS, TAB
from minitf.core.train import lr_at, schedule_for, timed_step, wsd_at


def test_schedule_warms_up_then_decays_by_cosine():
    rates = [lr_at(s, 100, 1.0, warmup=10, min_lr_ratio=0.1) for s in range(100)]
    assert rates[0] == pytest.approx(0.1) and rates[9] == pytest.approx(1.0)
    assert all(a >= b for a, b in zip(rates[9:], rates[10:]))
    assert rates[-1] == pytest.approx(0.1, abs=0.01)


def test_schedule_holds_its_floor_past_the_end_of_the_cycle():
    # a run trained on beyond `steps` (resumed, or a loop that overshoots) must not climb back up
    # the cosine: before the fix, steps 105 and 110 got 0.107 and 0.127 here
    past = [lr_at(s, 100, 1.0, warmup=10, min_lr_ratio=0.1) for s in (100, 105, 110, 1000)]
    assert past == [pytest.approx(0.1)] * 4
    assert lr_at(99, 100, 1.0, warmup=10, min_lr_ratio=0.1) > 0.1  # the last step is still above it


def test_training_lowers_the_loss_and_reports_history():
    pairs = make_pairs("copy", 64, seed=0, max_len=4)
    model = Transformer(Config(d_model=16, n_heads=2))
    before = evaluate(model, pairs)["loss"]
    hist = train(model, pairs, pairs[:16], steps=30, batch_size=32, lr=1e-2, eval_every=15,
                 progress=False)
    assert len(hist.loss) == len(hist.lr) == 30
    assert [v["step"] for v in hist.val] == [15, 30]
    assert hist.val[-1]["loss"] < before - 1.0  # 1.78-1.87 lower from three seeds, each perturbed too
    assert hist.tokens > 0 and hist.optimizer is not None


def test_training_is_reproducible_with_a_seed():
    pairs = make_pairs("shift", 32, seed=0, max_len=4)
    losses = []
    for _ in range(2):
        torch.manual_seed(5)
        model = Transformer(Config(dropout=0.0))
        losses.append(train(model, pairs, steps=10, batch_size=8, progress=False).loss)
    assert losses[0] == losses[1]


def test_loss_ignores_input_bytes():
    """Changing only the model's predictions at input positions leaves the loss unchanged."""
    ids, targets = minitf.make_batch([Pair(b"abc", b"bcd")])
    logits = torch.randn(1, ids.size(1), 256)
    tampered = logits.clone()
    tampered[0, :2] += 100 * torch.randn(2, 256)  # positions predicting b, c (input) and TAB
    assert minitf.masked_loss(logits, targets) == minitf.masked_loss(tampered, targets)


class Oracle(torch.nn.Module):
    """A stand-in model that knows the shift rule: evaluation must score it perfectly."""

    def __init__(self):
        super().__init__()
        self.config = Config()

    def forward(self, ids):
        logits = torch.full((*ids.shape, 256), -10.0)
        for b, row in enumerate(ids.tolist()):
            tab = row.index(TAB) if TAB in row else len(row)
            for t in range(len(row)):
                if t >= tab:
                    src = t - tab  # the output byte produced at t copies input position t-tab
                    nxt = minitf.shift_bytes(bytes([row[src]]))[0] if src < tab else EOS
                    logits[b, t, nxt] = 10.0
        return logits


def test_evaluate_scores_a_perfect_model_perfectly_and_a_random_one_at_zero():
    pairs = make_pairs("shift", 20, seed=2, max_len=6)
    m = evaluate(Oracle(), pairs)
    assert m["char_accuracy"] == 1.0 and m["exact_match"] == 1.0 and m["loss"] < 1e-3
    r = evaluate(Transformer(Config()), pairs)
    assert r["exact_match"] == 0.0 and r["loss"] > 4.0


def test_generate_stops_at_the_end_marker():
    assert generate(Oracle(), "abc") == b"bcd"
    assert generate(Oracle(), "hello world") == b"ifmmp!xpsme"


def test_generate_sampling_is_seeded_and_respects_top_k():
    model = Transformer(Config()).eval()
    a = generate(model, "ab", temperature=1.0, seed=3, max_new_tokens=8)
    assert a == generate(model, "ab", temperature=1.0, seed=3, max_new_tokens=8)
    logits = torch.tensor([[0.0, 5.0, 4.0, -1.0]])
    from minitf.core.generate import next_token
    picks = {int(next_token(logits, 1.0, top_k=2)) for _ in range(50)}
    assert picks <= {1, 2}  # a negative temperature: test_cli_inputs' one-check test


def test_stop_when_ends_training_at_the_first_validation_that_satisfies_it():
    import minitf
    pairs = minitf.make_pairs("copy", 64, seed=0, max_len=3)
    model = minitf.Transformer(minitf.Config(d_model=8, dropout=0.0))
    seen = []
    history = minitf.train(model, pairs, pairs[:8], steps=50, batch_size=16, eval_every=10,
                           progress=False, stop_when=lambda m: seen.append(m["step"]) or m["step"] >= 20)
    assert seen == [10, 20] and len(history.loss) == 20 and history.val[-1]["step"] == 20
    assert not model.training  # left in eval mode like a full run


def test_both_schedules_take_the_same_arguments_with_warmup_in_steps():
    # the cosine the course teaches, to its last step (moved here from the growth study's test)
    assert lr_at(99, 100, 1.0, 10) == pytest.approx(0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * 89 / 90)))
    cosine, wsd = schedule_for("cosine", min_lr_ratio=0.2), schedule_for("wsd", cooldown=0.3)
    for rate in (cosine, wsd):  # rate(step, steps, lr, warmup): the same warm-up, step by step
        assert [rate(s, 100, 2.0, 10) for s in range(10)] == [2.0 * (s + 1) / 10 for s in range(10)]
    # the very floats of the schedules themselves: train steps at the rates it always did
    assert [cosine(s, 100, 2.0, 10) for s in range(100)] == [lr_at(s, 100, 2.0, 10, 0.2) for s in range(100)]
    assert [wsd(s, 100, 2.0, 10) for s in range(100)] == [wsd_at(s, 100, 2.0, 10, 0.3) for s in range(100)]
    assert cosine(99, 100, 2.0, 10) > 2.0 * 0.2 and wsd(99, 100, 2.0, 10) == pytest.approx(2.0 / 30)
    with pytest.raises(ValueError, match="schedule must be one of cosine, wsd, got 'linear'"):
        schedule_for("linear")
    with pytest.raises(ValueError, match=r"cooldown .* in \(0, 1\], got 0"):
        schedule_for("wsd", cooldown=0)
    with pytest.raises(ValueError, match="got 'linear'"):  # refused before any step is trained
        train(Transformer(Config(d_model=8, n_heads=2)), make_pairs("copy", 8, seed=0, max_len=2),
              steps=1, schedule="linear", progress=False)


class FakeClock:
    """A clock that advances `tick` seconds each time it is read: a timed run without real time."""

    def __init__(self, tick: float):
        self.now, self.tick = 0.0, tick

    def __call__(self) -> float:
        self.now += self.tick
        return self.now


@pytest.mark.parametrize("schedule", ["wsd", "cosine"])
def test_a_timed_run_follows_the_elapsed_fraction_and_ends_on_time(schedule):
    """time_budget: each step's rate is the schedule's at step fraction·steps, the fraction being the
    elapsed share of the budget less the final validation's reserve; the run stops when it is
    used up, with the schedule run to its end, and validates last, inside the budget."""
    pairs = make_pairs("copy", 64, seed=0, max_len=4)
    clock = FakeClock(0.5)
    hist = train(Transformer(Config(d_model=8, n_heads=2)), pairs, pairs[:8], steps=40, warmup=4,
                 batch_size=8, lr=1e-2, progress=False, schedule=schedule, cooldown=0.5,
                 time_budget=60.0, clock=clock)
    rate_at = schedule_for(schedule, 0.1, 0.5)
    # the clock is read at the start, after the timed first validation (0.5 s: a reserve of
    # 1.25 × 0.5 s), then twice per step (its rate, its time): step k's rate is read at 1.0 + 1.0·k
    # seconds, and a step takes 1 s
    expected = [rate_at(timed_step((1.0 + k) / 59.375, 40), 40, 1e-2, 4) for k in range(len(hist.loss))]
    assert hist.lr == pytest.approx(expected)
    assert len(hist.loss) == 58 and hist.step == 58  # the 59th would end past 59.375 s; not `steps`
    # the schedule ran to its end, decayed: the last step started less than 2 steps' time before it
    assert hist.lr[0] < hist.lr[10] and hist.lr[-1] <= rate_at(timed_step(1 - 2 / 59.375, 40), 40, 1e-2, 4)
    assert hist.lr[-1] < (0.1 if schedule == "wsd" else 0.11) * max(hist.lr)
    assert [v["step"] for v in hist.val] == [58]      # one validation, after the last step
    assert 58.5 <= hist.seconds <= 60.0 and not hist.interrupted


def test_timed_step_maps_the_fraction_onto_the_step_schedule():
    assert timed_step(0.0, 1600) == 0 and timed_step(0.5, 1600) == 800 and timed_step(1.0, 1600) == 1600
    rate = schedule_for("wsd", cooldown=0.4)
    assert rate(timed_step(0.3, 1600), 1600, 1.0, 20) == 1.0            # stable
    assert rate(timed_step(0.8, 1600), 1600, 1.0, 20) == pytest.approx(0.5)  # half-way down the decay
    assert rate(timed_step(0.999, 1600), 1600, 1.0, 20) < 0.01          # the decay done


def test_a_timed_run_keeps_its_periodic_validations_and_resumes_its_clock():
    pairs = make_pairs("copy", 64, seed=0, max_len=4)
    model = Transformer(Config(d_model=8, n_heads=2))
    first = train(model, pairs, pairs[:8], steps=40, batch_size=8, progress=False, eval_every=10,
                  time_budget=30.0, clock=FakeClock(0.5), should_stop=lambda: True)
    assert first.interrupted and first.step == 1 and first.val == []
    state = first.state()
    rest = train(model, pairs, pairs[:8], steps=40, batch_size=8, progress=False, eval_every=10,
                 time_budget=30.0, clock=FakeClock(0.5), resume=state)
    assert [v["step"] for v in rest.val] == [10, 20, rest.step]
    assert 29.0 <= rest.seconds <= 30.0  # the budget counts the time before the stop


@pytest.mark.parametrize("budget", [0, -1.0, float("nan"), float("inf")])
def test_a_time_budget_must_be_positive_seconds(budget):
    with pytest.raises(ValueError, match="time_budget is seconds of wall time > 0"):
        train(Transformer(Config()), make_pairs("copy", 8, seed=0, max_len=4), steps=5,
              progress=False, time_budget=budget)


def test_a_timed_run_on_the_command_line_records_its_budget_and_the_steps_it_trained(tmp_path, capsys):
    """`train --time`: the run trains until the budget is used up, not for --steps, and validates last."""
    from minitf.cli import main
    out = tmp_path / "m.pt"
    assert main(["train", "--train", "data/train.txt", "--val", "data/val.txt", "--steps", "3", "--no-progress",
                 "--d-model", "8", "--time", "0.2", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    meta = minitf.load(out).metadata
    assert meta["time_budget"] == 0.2 and meta["steps_trained"] >= 1
    assert meta["val_curve"][-1]["step"] == meta["steps_trained"]  # validated after the last step
    assert f"trained {meta['steps_trained']} step" in printed and "--time 0.2" in meta["command"]
