"""Claims notebooks 05 and 06 make in words, checked here where an assert in the cell would teach
nothing."""
import math

import torch

import minitf
from minitf import heatmaps
from minitf.core.baselines import baseline_losses
from minitf.views.sampling_view import sample_output


def test_05_the_seed_sample_holds_8_and_7_real_pairs_5_and_5_following_the_rule():
    (train, train_report), (val, val_report) = (minitf.read_pairs(f"data/seed/{name}.txt", strict=False)
                                                for name in ("train", "val"))
    assert (train_report.lines, len(train)) == (159, 8)
    assert (val_report.lines, len(val)) == (43, 7)
    assert [sum(p.output == minitf.shift_bytes(p.input) for p in ps) for ps in (train, val)] == [5, 5]


def test_05_argmax_of_an_all_false_row_is_0():
    """The one-line aside: finding the TAB with argmax silently says 0 when there is none."""
    no_tab = torch.tensor([list(b"abc") + [minitf.EOS]])
    assert (no_tab == minitf.TAB).int().argmax(dim=1).item() == 0


def test_05_a_loss_over_random_input_bytes_has_a_floor_of_ln_95():
    assert round(math.log(95), 2) == 4.55


def test_05_baselines_quoted_in_the_text():
    train, val = minitf.read_pairs("data/train.txt"), minitf.read_pairs("data/val.txt")
    b = baseline_losses(val, train)
    assert round(b.uniform_256, 2) == 5.55 and round(b.unigram, 2) == 4.34
    assert round(b.length_oracle, 2) == 3.92
    eos_share = len(val) / sum(len(p.output) + 1 for p in val)
    assert 1 / 7.5 < eos_share < 1 / 7  # "EOS, 1 in 7 targets"


def test_05_tiny_checkpoint_overfits_as_stated():
    meta = minitf.load("data/checkpoints/tiny.pt").metadata
    val = [round(v["loss"], 2) for v in meta["val_curve"]]
    assert val[0] == 4.34 and val[-1] == 4.46
    assert round(sum(meta["loss_curve"][-10:]) / 10, 1) == 4.1


def test_05_solving_model_is_over_99_percent_sure_at_every_step_of_hello():
    model = minitf.load("data/checkpoints/shift.pt")
    output, _ = sample_output(model, b"Hello", temperature=0)
    assert output == b"Ifmmp"
    seq = list(b"Hello\t") + list(output)
    with torch.no_grad():
        probs = model.eval()(torch.tensor([seq]))[0, 5:].softmax(-1)  # rows predicting output + EOS
    assert (probs.max(-1).values > 0.99).all()


def test_05_offset_statement_row_n_plus_k_reads_input_k_n_back():
    pair = minitf.Pair(b"abcd", b"bcde")
    ids, targets = minitf.make_batch([pair])
    n = len(pair.input)
    for k in range(len(pair.output)):
        assert targets[0, n + k] == pair.output[k]           # row n+k predicts output byte k
        assert (n + k) - k == n                               # its source, input byte k, is n back


def test_06_layer_1_heads_rest_on_the_first_byte_for_input_rows():
    model = minitf.load("data/checkpoints/reverse.pt")
    weights, _ = heatmaps.attention_weights(model, minitf.Pair(b"stressed", b"desserts"))
    assert weights[1][0, 1:8, 0].mean() > 0.5


def test_05_explorer_claims_where_the_solving_model_looks():
    """05's explorer text: on `Hi⇥` layer 1 reads H, after `I` most heads read i, after `Ij` ⏎."""
    import minitf as m
    model = m.load("data/checkpoints/shift.pt")

    def layer1_rows(text):
        tr = m.trace(model, text)
        T = len(text)
        return [[tr.value(f"L1.h{h}.weights.{T - 1}.{j}") for j in range(T)]
                for h in range(model.config.n_heads)]

    assert all(row[0] > 0.9 for row in layer1_rows(b"Hi\t"))
    assert sum(max(range(4), key=row.__getitem__) == 1 for row in layer1_rows(b"Hi\tI")) >= 3
    assert m.generate(model, "Hi") == b"Ij"
