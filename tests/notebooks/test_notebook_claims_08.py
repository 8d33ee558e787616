"""What notebook 08 says about the learner's model, held to its printed numbers: the rounding the
check shows in each dtype (the Answer's "a few 10⁻¹⁵ ... a few 10⁻⁶"), the learner's file, the
standard model it trains, and what that model writes for inputs of another length."""
import re

import pytest

import minitf
from support import code, markdown, numbers, printed
from minitf.experiments import train_seeds

SUPERSCRIPT = str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789")

NOTEBOOK = "08_assemble_your_model"


def test_the_check_shows_the_float32_rounding_the_answer_talks_about():
    # the prediction's own cell is stored without output; section 8's check prints the same line
    line = printed(NOTEBOOK, containing="pieces = minitf.training_parts.your_pieces(config)", results=True)
    powers = dict((dtype, int(p)) for p, dtype in re.findall(r"under 1e([-+]\d+) in float(64|32)", line))
    assert -15 <= powers["64"] <= -13, line  # a few 1e-15: above 1e-15, under the printed power
    assert -6 <= powers["32"] <= -5, line    # a few 1e-6, float32's last digits, far under 1e-4
    assert re.search(r"allows 1e-09\).*allows 1e-04\)", line), line
    # "In float64 the logits differ by a few 10⁻¹⁵, in float32 by a few 10⁻⁶": each just under the printed power
    said = markdown(NOTEBOOK).split("logits differ by", 1)[1][:60].translate(SUPERSCRIPT)
    stated = [int(p) for p in re.findall(r"\b10(-\d+)", said)][:2]
    assert len(stated) == 2 and all(0 <= printed_power - e <= 1 for printed_power, e in
                                    zip((powers["64"], powers["32"]), stated)), (stated, powers)


def test_the_learners_file_is_printed_with_its_length_and_its_modules():
    shown = printed(NOTEBOOK, containing="minitf.parts.modules_of(")
    lines = numbers(shown.splitlines()[0], after="model.py:")[0]   # "your file, my_parts/model.py: 160 lines"
    assert 100 <= lines <= 250, lines
    assert [name for name in re.findall(r"^class (\w+)\(nn\.Module\)", shown, re.M)] == \
        ["MyAttention", "MyLayerNorm", "MyFeedForward", "MyBlock", "MyTransformer"]


def test_the_model_the_notebook_trains_is_the_standard_one_of_the_stored_spread():
    """08 trains the usual numbering (0, 1, 2, …), not coupled ids; its config, data and recipe are
    the stored seed spread's, so the spread's sentences are about the learner's run."""
    config = minitf.Config(**train_seeds.RECIPE["config"])
    assert config.positions.position_ids == "sequence" and "coupled" not in code(NOTEBOOK)
    # the config and data in 08's code are the recipe's: test_training_parts' test_notebook_08_trains_the_recipe_…
    assert numbers(markdown(NOTEBOOK), after="shift inputs of")[0] == 8 == train_seeds.RECIPE["data"]["max_len"]


@pytest.mark.slow  # trains 08's model with the reference pieces, as the notebook does: about 3-6 s
def test_the_models_answer_on_other_lengths_is_what_the_reveal_says(tmp_path, monkeypatch):
    """The Try-this reveal: 'eight bytes ending in `Ifmmp`' for Hello, and no string right on
    held-out inputs of 3 to 12 bytes but 8. The learner's run (seed 1, the reference pieces), one
    ulp away under MINITF_PERTURB as another CPU's would be."""
    import torch
    from minitf.core.perturb import perturb_if_asked
    from minitf.course import training_parts as tp
    monkeypatch.setenv("MINITF_MY_PARTS", str(tmp_path / "my_parts"))
    said = markdown(NOTEBOOK).split("What to expect", 2)[-1]
    assert "eight bytes ending in `Ifmmp`" in said
    low, high, aside = numbers(said, after="held-out inputs of")[:3]
    r = train_seeds.RECIPE
    config = minitf.Config(**r["config"])
    train_pairs, val_pairs = minitf.data.make_splits("shift", 10000, 200, min_len=8, max_len=8,
                                                     repeats=0.33, val_repeats=0.33)
    pieces = tp.your_pieces(config)
    torch.manual_seed(1)
    model = perturb_if_asked(minitf.parts.my_model(config, pieces.model, pieces.training))
    training = pieces.training
    optimizer = tp.make_optimizer(model, training.adamw, lr=r["lr"], weight_decay=r["weight_decay"])
    model.train()
    training.train_loop(model, optimizer, tp.batches(train_pairs, r["batch_size"], seed=1),
                        lambda m, o, i, t: training.train_step(m, o, i, t, training.output_loss, 1.0),
                        lambda s: training.lr_at(s, r["steps"], r["lr"], r["warmup"], 0.1), r["steps"],
                        r["steps"], lambda m: minitf.evaluate(m, val_pairs))
    hello = minitf.generate(model, b"Hello")
    assert len(hello) == 8 and hello.endswith(b"Ifmmp"), hello
    for length in range(int(low), int(high) + 1):
        if length == aside:
            continue
        _, held_out = minitf.data.make_splits("shift", 10, 200, min_len=length, max_len=length,
                                              repeats=0.33, val_repeats=0.33)
        assert minitf.evaluate(model, held_out)["exact_match"] == 0, length


def test_the_pieces_table_is_behind_a_click_and_the_summary_counts_it():
    """Section 8 shows the checks and one line counting whose each piece is; the table of pieces
    is in the HTML output's <details> (what JupyterLab shows), whole in the plain text."""
    from support import cells, code_cell
    cell = code_cell(cells(NOTEBOOK), containing="pieces = minitf.training_parts.your_pieces(config)")
    data = next(o["data"] for o in cell["outputs"] if "data" in o)
    html, plain = "".join(data["text/html"]), "".join(data["text/plain"])
    shown, hidden = html.split("<details>", 1)
    assert "embed " not in shown and "reference solution (you have not saved one yet)" in hidden
    count = re.search(r"your (\d+) pieces: (\d+) yours, (\d+) reference solutions \(not written yet\), "
                      r"(\d+) minitf&#x27;s own \(optional, not written\)", shown)
    table = [line for line in plain.split("\n\n", 1)[1].splitlines() if line and not line.startswith("the ")]
    assert count and int(count.group(1)) == len(table) == sum(int(n) for n in count.groups()[1:]), (count, table)
