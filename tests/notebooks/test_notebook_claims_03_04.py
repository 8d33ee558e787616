"""Claims notebooks 03 (attention) and 04 (FFN block) make in words, checked here so the notebooks
can state them without a wall of asserts."""

import json
import math
import re

import pytest
import torch

import minitf
import minitf.core.baselines
from minitf.experiments.norm_position import baselines, load_norm_position, run
from support import (course_map, ROOT, cell_output, cells, code, code_cell, exercise_checks, joined, markdown,
                     numbers, printed, source)



# --- 03 · attention -------------------------------------------------------------------------------

def test_the_paragraph_is_one_line_of_printable_text():
    text = (ROOT / "data" / "text" / "paragraph.txt").read_bytes()
    assert len(text) == 1592
    assert all(32 <= b < 127 for b in text)  # no newline: one line, plain ASCII


def test_a_sharper_query_approaches_a_hard_lookup_and_zero_scores_average_the_past():
    """03's "try this", as the learner types it: c × the queries (so c × every score); large c →
    row 1 ≈ (0, 1, 0); c = 0 → every row the mean of the positions it may see."""
    Q = torch.tensor([[2., 0, 0, 0], [0, 2, 0, 0], [2, 2, 0, 0]], dtype=torch.float64)
    K = torch.eye(3, 4, dtype=torch.float64)
    V = torch.tensor([[1., 0], [0, 1], [1, 1]], dtype=torch.float64)

    def weights(c):
        return minitf.attention(c * Q[None, None], K[None, None], V[None, None], mask=minitf.causal_mask(3))[1][0, 0]

    row1 = {c: weights(c)[1] for c in (1, 5, 20)}
    assert row1[1][1] < row1[5][1] < row1[20][1] and row1[20][1] > 0.999999
    expected = torch.tril(torch.ones(3, 3, dtype=torch.float64))
    assert torch.allclose(weights(0), expected / expected.sum(1, keepdim=True))
    text = " ".join(joined("03_attention").split())
    assert "minitf.attention(c * Q[None, None]" in text and "mask=minitf.causal_mask(3))[1][0, 0]" in text


def seed_split_heads(x, n_heads):
    """The seed documents' head split (the bug 03 names): B and L both set to the length."""
    _, seq_len, d_model = x.shape
    B, L = seq_len, seq_len
    return x.view(B, L, n_heads, d_model // n_heads).permute(0, 2, 1, 3)


def test_the_seeds_head_split_works_only_when_the_batch_equals_the_length():
    square = torch.rand(3, 3, 4)
    assert torch.equal(seed_split_heads(square, 2), square.view(3, 3, 2, 2).transpose(1, 2))
    with pytest.raises(RuntimeError):
        seed_split_heads(torch.rand(2, 3, 4), 2)


def test_the_data_flow_pictures_shapes_are_the_modules():
    """03's picture: x (1, 5, 4) → weights (1, 2, 5, 5) → output (1, 5, 4) for the tiny model."""
    mha = minitf.MultiHeadAttention(minitf.Config())
    seen = {}
    mha.qkv.register_forward_hook(lambda m, i, o: seen.update(qkv=o.shape))  # returns None: output kept
    cos, sin = minitf.rope_angles(mha.inv_freq, 5)
    out, weights = mha(torch.rand(1, 5, 4), cos, sin, need_weights=True)
    assert seen["qkv"] == (1, 5, 12)  # q, k, v side by side: [W_Q; W_K; W_V]
    assert weights.shape == (1, 2, 5, 5) and out.shape == (1, 5, 4)


# --- 04 · the FFN block ---------------------------------------------------------------------------

def test_silu_in_config_is_the_plain_ffn_not_a_gated_one():
    relu, silu = (minitf.FeedForward(minitf.Config(activation=a)) for a in ("relu", "silu"))
    names = [n for n, _ in silu.named_parameters()]
    assert names == ["up.weight", "up.bias", "down.weight", "down.bias"]  # no third (gate) matrix
    assert minitf.count_parameters(silu) == minitf.count_parameters(relu)


def test_a_norm_divides_the_gradient_by_its_inputs_standard_deviation():
    v = torch.tensor([0.3, -1.2, 0.8, 2.0], dtype=torch.float64)
    jac = lambda u: torch.autograd.functional.jacobian(minitf.LayerNorm(4).double(), u)
    assert torch.allclose(jac(3 * v), jac(v) / 3, atol=1e-6)


def seed_double_norm_block(block, h, cos, sin):
    """The seed documents' layer (the bug 04 names): ln1 before attention and again after the sum."""
    a, _ = block.attn(block.norm1(h), cos, sin)
    h = block.norm1(h + a)
    return block.norm2(h + block.ffn(h))


def test_the_double_layernorm_differs_from_post_norm_once_gamma_and_beta_move():
    torch.manual_seed(0)
    block = minitf.Block(minitf.Config()).double().eval()
    cos, sin = minitf.rope_angles(block.attn.inv_freq, 6)
    normed = minitf.LayerNorm(4).double()(torch.rand(2, 6, 4, dtype=torch.float64) * 4 - 2).detach()

    def gap(h):
        with torch.no_grad():
            return (seed_double_norm_block(block, h, cos, sin) - block(h, cos, sin)[0]).abs().max().item()

    assert gap(normed) < 1e-4  # at initialisation LN(LN(x)) ≈ LN(x): the bug hides
    with torch.no_grad():
        block.norm1.weight.copy_(torch.tensor([1.5, 0.5, 2.0, 1.0]))
        block.norm1.bias.copy_(torch.tensor([0.3, -0.2, 0.0, 0.1]))
    assert gap(normed) > 0.05  # trained γ, β: one norm doing two jobs computes something else




@pytest.mark.slow
def test_without_residuals_neither_layout_passes_the_length_oracle(one_thread):
    """04's "try this": the learner's call, run("pre", 0, residual=False), gives the stored run."""
    study = load_norm_position()
    [stored] = study.of("pre", residual=False)
    again = run("pre", 0, residual=False)
    assert abs(again["held_out_loss"] - stored["held_out_loss"]) < 0.05
    assert again["held_out_loss"] > study.length_oracle
    assert again["held_out_loss"] > study.of("pre")[0]["held_out_loss"] + 0.5   # pre-norm loses its lead


# ---- 04's pre-norm against post-norm: the stored five-seed study and the sentences on it

@pytest.mark.slow
def test_04_the_stored_norm_study_is_what_its_code_computes():
    """One stored run trained again (pre-norm, seed 0): the same losses and gradient norms, to
    float32 accuracy, so the file is the recorded command's output and not an edited table."""
    from support import assert_close_float32
    stored = load_norm_position().of("pre")[0]
    again = run("pre", 0)
    assert_close_float32(torch.tensor(again["loss"][:20]), torch.tensor(stored["loss"][:20]))
    assert_close_float32(torch.tensor(again["grad_norms"][:20]), torch.tensor(stored["grad_norms"][:20]))
    assert abs(again["held_out_loss"] - stored["held_out_loss"]) < 0.05


def test_04_what_the_norm_study_says():
    study = load_norm_position()
    assert study.seeds == [0, 1, 2, 3, 4] and study.command == "python bench/norm_position.py"
    assert (round(study.length_oracle, 2), round(study.unigram, 2)) == (3.26, 3.86)
    assert [round(x, 6) for x in baselines()] == [round(study.length_oracle, 6), round(study.unigram, 6)]
    post = {r["seed"]: r["held_out_loss"] for r in study.of("post")}
    pre = {r["seed"]: r["held_out_loss"] for r in study.of("pre")}
    assert all(pre[s] < post[s] for s in pre)                                    # ahead in all five
    assert round(min(pre.values()), 1) == 1.2 and round(max(pre.values()), 1) == 2.8
    on_plateau = [s for s in post if abs(post[s] - study.unigram) < 0.02]        # "two … still on the plateau (3.87)"
    between = [s for s in post if study.length_oracle < post[s] < study.unigram - 0.02]
    assert len(on_plateau) == 2 and round(post[on_plateau[0]], 2) == 3.87 and len(between) == 1
    assert study.below_oracle("post") == 2 and study.below_oracle("pre") == 5
    assert (round(post[4], 2), round(pre[0], 2)) == (1.75, 2.84) and post[4] < pre[0]
    post_grads, pre_grads = study.layer_grads("post"), study.layer_grads("pre")
    assert 0.4 < post_grads[0] / post_grads[3] < 0.6                             # "about half"
    assert max(pre_grads) / min(pre_grads) < 1.15                                # "about the same"


def test_04_try_this_without_residuals_both_layouts_stay_on_the_plateau():
    study = load_norm_position()
    flat = [r["held_out_loss"] for layout in ("post", "pre") for r in study.of(layout, residual=False)]
    assert len(flat) == 2 and all(round(loss, 2) == 3.87 for loss in flat)


# --- 04 · what SwiGLU buys, read from notebook 14's stored comparison ----------------------------

def test_04_points_to_14_for_swiglu_and_14s_stored_modern_preset_arm():
    import statistics

    from minitf.experiments.results import load_lm_fast

    text = markdown("04_ffn_block")
    # 04 is on the main path: it points to extra 14 for the measurement and uses none of its numbers
    assert numbers(text, after="measured in extra")[:1] == [14] and "0.013" not in text
    fast = load_lm_fast()
    # "SwiGLU alone was not measured": the one arm with SwiGLU is the modern preset
    (name,) = [a.name for a in fast.arms if "SwiGLU" in a.name]
    assert "modern preset" in name
    paired = fast.paired(name)
    # 14's arm: +0.013 nats per byte higher, in each of three seeds
    assert round(statistics.median(paired), 3) == 0.013 and len(paired) == 3 and min(paired) > 0
    # about as many parameters as the ReLU FFN it replaces
    assert abs(fast.arm(name).params / fast.arm("lm-fast").params - 1) < 0.02


def test_03_the_future_cannot_change_the_past():
    text = printed("03_attention", "without_mask.positions_changed(")
    changed = {line.split("  ")[0]: numbers(line.split(":")[1]) for line in text.splitlines() if "changed:" in line}
    assert changed == {"causal": [3, 4], "no mask": [0, 1, 2, 3, 4]}


def test_03_scaling_by_sqrt_dk_keeps_the_softmax_the_same_at_every_width():
    rows = {}
    for line in printed("03_attention", "score_scale.by_width(").splitlines()[2:]:
        d_k, *values = numbers(line)
        rows[int(d_k)] = values  # raw var, scaled var, raw largest, scaled largest, raw grad, scaled grad
    assert sorted(rows) == [2, 16, 64]
    for d_k, (raw_var, scaled_var, _, scaled_top, _, scaled_grad) in rows.items():
        assert abs(raw_var / d_k - 1) < 0.15 and abs(scaled_var - 1) < 0.15  # variance d_k, then 1
        assert scaled_top < 0.45 and 0.3 < scaled_grad < 0.5                   # scaled: the same at every width
    raw_var, _, raw_top, _, raw_grad, scaled_grad = rows[64]
    assert raw_top > 0.8 and raw_grad < 0.5 * scaled_grad  # "most of the row", "less than half the gradient"


def test_03_the_unmasked_model_trains_well_and_writes_badly():
    """Section 7's sentences, on the stored run (float32 training: the cells are nbval-ignore-output)."""
    lines = printed("03_attention", containing="without_mask.compare(text)").splitlines()
    (masked_train, m_full, m_prefix), (open_train, o_full, o_prefix) = numbers(lines[0])[-3:], numbers(lines[1])[-3:]
    assert open_train < 0.4 < 1.2 < masked_train  # no mask: far lower training loss
    uniform = numbers(lines[2])[-1]
    assert uniform == round(math.log(256), 2)
    assert abs(m_full - m_prefix) <= 0.1                     # causal: training's loss is writing's loss
    assert abs(m_prefix - masked_train) < 0.3                # "close to its training loss"
    assert o_full < 0.4 and o_prefix > 10 * o_full           # "more than ten times its training loss"
    assert o_prefix > 2 * m_prefix and o_prefix > 0.75 * uniform  # "near a uniform guess"
    shown = printed("03_attention", 'run.write(')
    shares = [numbers(l)[0] for l in shown.splitlines() if "occur" in l]
    assert shares[0] > shares[1] + 10  # with the mask, more of its words are words of the text (in %)
    shown = printed("03_attention", "run.where_it_looks(")
    per_head = [numbers(l.split(":")[1]) for l in shown.splitlines()]
    assert min(per_head[-1]) > 0.8  # the last layer's heads spend almost all their attention on t + 1


def test_04_gelu_and_silu_approach_relu_gelu_faster():
    at3 = torch.tensor([-3.0, 3.0], dtype=torch.float64)
    gap_gelu, gap_silu = ((fn(at3) - torch.relu(at3)).abs().max().item()
                          for fn in (torch.nn.functional.gelu, torch.nn.functional.silu))
    assert gap_gelu < gap_silu < 0.15 and minitf.Config().activation == "relu"


def test_04_post_norm_pins_the_stream_and_pre_norm_lets_it_grow():
    lines = printed("04_ffn_block", "norm_position.print_stream_rms(").splitlines()
    post, pre = numbers(lines[1]), numbers(lines[2])
    assert post == [1.0] * 5                                   # pinned at 1 after every block
    assert pre == sorted(pre) and pre[-1] > 1.5 * pre[0]       # grows with depth


def test_04_the_norm_figure_shows_the_held_out_losses_its_text_reads():
    """The left panel's lines are training losses; each run's held-out loss (the table's) is a dot at
    its last step, and the baselines are labelled as held-out ones."""
    study = minitf.results.load_norm_position()
    left = study.plot().axes[0]
    dots = sorted(round(float(line.get_ydata()[0]), 4) for line in left.lines
                  if line.get_marker() == "o" and len(line.get_ydata()) == 1)
    table = sorted(round(r["held_out_loss"], 4) for layout in ("post", "pre") for r in study.of(layout))
    assert dots == table
    labels = left.get_legend_handles_labels()[1]
    assert "held-out loss, end" in labels and "length oracle (held out)" in labels


def test_the_norms_by_hand_are_what_minitfs_modules_print():
    """04's "By hand for x = (1, 2, 3, 6)": the numbers the prose works out are the ones the cell
    prints from minitf's modules (and PyTorch's agree); the formulas live here, not in the cell, so
    that the exercises after it are not answered in view."""
    shown = printed("04_ffn_block", containing="ln, rms = minitf.LayerNorm(4).double()")
    rows = {name: [float(v) for v in re.findall(r"-?\d+\.\d+", line)]
            for name, line in re.findall(r"^(LayerNorm|RMSNorm) +tensor\(\[\[(.*?)\]\]", shown, re.M)}
    x = torch.tensor([1.0, 2.0, 3.0, 6.0], dtype=torch.float64)
    by_hand = {"LayerNorm": (x - 3) / (3.5 + 1e-5) ** 0.5, "RMSNorm": x / (12.5 + 1e-5) ** 0.5}
    for name, values in by_hand.items():
        assert torch.allclose(torch.tensor(rows[name], dtype=torch.float64), values, atol=1e-4), (name, shown)
    # "(x - 3)/\sqrt{3.5} \approx (-1.069, -0.535, 0, 1.604)", "x/\sqrt{12.5} \approx (0.283, …)"
    for name, anchor in (("LayerNorm", "\\sqrt{3.5} \\approx"), ("RMSNorm", "\\sqrt{12.5} \\approx")):
        assert numbers(markdown("04_ffn_block"), after=anchor)[:4] == [round(v, 3) for v in by_hand[name].tolist()]
    assert "own agree: True True" in shown
    sizes = [sum(p.numel() for p in norm.parameters()) for norm in (minitf.LayerNorm(4), minitf.RMSNorm(4))]
    assert numbers(shown, after="parameters:") == sizes == [8, 4]   # "LayerNorm 8 (γ and β), RMSNorm 4 (γ)"



# --- 03 and 04 after issue 42: shorter prose, the harness out of sight, the studies reconciled ----

CHECKS_LINK = "[how the checks work](01_embeddings.ipynb#How-the-checks-work)"


@pytest.mark.parametrize("notebook", ["03_attention", "04_ffn_block"])
def test_a_third_less_prose(notebook):
    """Issue 42: each at most 1,400 words outside the reveals (2,022 and 2,030 before)."""
    assert course_map.prose_words(ROOT / "notebooks" / f"{notebook}.ipynb") <= 1400


@pytest.mark.parametrize("notebook", ["03_attention", "04_ffn_block"])
def test_each_statement_says_what_is_refused_in_one_sentence_and_links_the_rule(notebook):
    """The general rule (cases in float64 and float32, what is fine, why a call is refused) is said
    once, in 01; each statement names only its own refusal and links there."""
    statements = [source(c) for c in cells(notebook)
                  if c["cell_type"] == "markdown" and "### Exercise" in source(c)]
    assert len(statements) == len([name for nb, name, _ in exercise_checks() if nb.startswith(notebook)])
    for text in statements:
        flat = " ".join(text.split())
        assert flat.count(CHECKS_LINK) == 1 and flat.count("refused") == 1, text
        assert "are fine" not in flat and "runs in float64" not in flat and "saved for notebook 08" not in flat, text


@pytest.mark.parametrize("notebook", ["03_attention", "04_ffn_block"])
def test_every_try_this_is_a_question_with_its_outcome_behind_a_reveal(notebook):
    tries = [source(c) for c in cells(notebook) if "**Try this.**" in source(c)]
    assert tries
    for text in tries:
        after = text[text.index("**Try this.**"):]
        question, rest = after.split("\n<details><summary>What to expect</summary>", 1)
        assert question.rstrip().endswith("?") and "Expect" not in question, text


def test_03_names_no_ablation_ladder_before_04_introduces_it():
    assert "ablation" not in markdown("03_attention").lower() and "load_ablation" not in code("03_attention")
    assert "ablation ladder" in markdown("04_ffn_block")


def test_03_the_query_followed_by_hand_is_what_the_cell_prints():
    shown = printed("03_attention", "Q = torch.tensor(")
    weights = numbers(shown.splitlines()[3])[-3:]
    out = numbers(shown.splitlines()[4])[-2:]
    e = math.e
    assert weights == [round(1 / (1 + e), 4), round(e / (1 + e), 4), 0]
    assert out == weights[:2]                                    # the values are the axes: output = weights
    # "(0.2689, 0.7311, 0)" and "(0.2689, 0.7311)" in the steps written out above the cell
    assert numbers(markdown("03_attention"), after="\\approx (")[:3] == weights
    assert numbers(markdown("03_attention"), after="the values** →")[:2] == out


def test_03_identities_the_cells_print():
    assert printed("03_attention", "x = torch.rand(4, 2").splitlines()[-1] == "loop == softmax-weighted sum: True"
    fused = printed("03_attention", "q, k, v = torch.rand(3, 2, 2, 5, 4").splitlines()
    assert fused == ["minitf.attention == PyTorch's fused kernel: True"]
    assert printed("03_attention", "x = torch.arange(12)").splitlines()[-1] == "merging undoes the split: True"


def test_04_the_ffn_facts_and_the_activations_figure():
    facts = printed("04_ffn_block", "x = torch.rand(2, 5, 4)").splitlines()
    assert facts == ["whole sequence == one position at a time: True", "without φ, down(up(x)) == one 4×4 layer: True"]
    assert numbers(printed("04_ffn_block", "ffn = minitf.FeedForward(").splitlines()[-1]) == [8 * 4 + 8 + 4 * 8 + 4]
    from minitf.views.figures import plot_activations
    fig = plot_activations()
    left, right = fig.axes
    x = torch.tensor(left.lines[0].get_xdata(), dtype=torch.float64)
    curves = {line.get_label(): torch.tensor(line.get_ydata(), dtype=torch.float64) for line in left.lines}
    slopes = {line.get_label(): torch.tensor(line.get_ydata(), dtype=torch.float64) for line in right.lines}
    normal_cdf = 0.5 * (1 + torch.erf(x / math.sqrt(2)))
    # each is its formula: ReLU max(0, x), GELU x Φ(x), SiLU x σ(x)
    for name, formula in (("ReLU", x.clamp(min=0)), ("GELU", x * normal_cdf), ("SiLU", x * torch.sigmoid(x))):
        assert torch.allclose(curves[name], formula, atol=1e-6), name
    negative = x < -0.1
    assert (slopes["ReLU"][negative] == 0).all()                             # ReLU: no gradient below 0
    for name in ("GELU", "SiLU"):                                             # the smooth ones: a dip, a gradient
        assert curves[name].min() < 0 and (slopes[name][negative] != 0).all()


def test_04_the_final_norm_only_pre_norm_has():
    """'Pre-norm … with one final norm before the output head' (post-norm's last block ends in one)."""
    pre = minitf.Transformer(minitf.Config(norm_position="pre"))
    post = minitf.Transformer(minitf.Config())
    assert isinstance(pre.final_norm, minitf.LayerNorm) and post.final_norm is None


def test_04_your_pieces_in_one_call_and_one_sentence():
    cell = code_cell("04_ffn_block", containing="minitf.parts.check_yours(")
    assert source(cell).count("\n") <= 1                                      # one call
    said = cell_output(cell, results=True)
    assert said.count("\n") == 1 and said.startswith("✓ ")                    # one sentence, nothing shown
    assert "under LayerNorm, RMSNorm and Config.modern()" in said
    named = printed("04_ffn_block", "def unbiased_layer_norm(")
    assert "broken piece: layer_norm" in named and numbers(named)[0] > 0.1


def reveal_block(notebook, after):
    """The code block inside the reveal of the Markdown cell that contains `after`."""
    [text] = [source(c) for c in cells(notebook) if c["cell_type"] == "markdown" and after in source(c)]
    return re.search(r"<details><summary>The table</summary>\s*```\n(.*?)\n```", text, re.S).group(1)


def test_04_the_tables_behind_the_reveals_are_the_stored_results():
    assert reveal_block("04_ffn_block", "pre-norm was ahead") == str(load_norm_position())
    rungs = re.findall(r'"([^"]+)"', source(code_cell("04_ffn_block", "ladder = minitf.results.load_ablation()")))
    assert reveal_block("04_ffn_block", "The two studies") == minitf.results.load_ablation().only(*rungs).table()


def test_04_what_the_ladder_says_in_its_sentence():
    ladder = minitf.results.load_ablation()
    text = markdown("04_ffn_block")
    shown = ["no positions", "base", "sinusoidal", "no FFN", "no residual", "post-norm", "RMSNorm",
             "8 heads of 2", "2 heads of 8", "no causal mask"]
    for task in ladder.tasks:
        # "without the causal mask, the lowest loss (0.006)": the lowest of every variant shown
        assert min(shown, key=lambda v: ladder.row(task, v).loss) == "no causal mask"
        assert round(ladder.row(task, "no causal mask").loss, 3) == numbers(text, after="the lowest loss (")[0]
        # "without positions, a quarter to a third of the outputs come out right"
        none = ladder.row(task, "no positions")
        assert 0.25 <= none.exact_min and none.exact_max <= 1 / 3 + 0.01
        # "without residuals, 7 to 9 times the loss"
        times = ladder.row(task, "no residual").loss / ladder.row(task, "base").loss
        low, high = numbers(text, after="right; without residuals,")[:2]
        assert low <= round(times) <= high
        # "post-norm ended better": every post-norm run at least as good as the base's best
        assert ladder.row(task, "post-norm").exact_min >= ladder.row(task, "base").exact_max - 0.005
    # "a fifth of copy and none of shift written right": test_results' test_03_causal_mask


def test_04_the_two_norm_studies_reconciled():
    """'in the ladder too post-norm started behind (a higher training loss over steps 25–50, every
    seed, both tasks) and led by step 200, so section 4's 150 steps of 32 pairs saw the start, where
    post-norm lags, and the ladder's 500 steps of 128 pairs (one layer fewer, a longer warm-up) the
    end, where it is better': every number read from the sentence and held against the stored runs."""
    from minitf.experiments import ablation, norm_position
    text = markdown("04_ffn_block")
    doc = json.loads(ablation.ABLATION_JSON.read_text())
    settings, every = doc["settings"], 25  # bench/ablation.py's CURVE_EVERY: the curve's mean of 25 steps
    curves = {(r["task"], r["variant"], r["seed"]): r["train_loss_curve"] for r in doc["runs"]}
    seeds = sorted({r["seed"] for r in doc["runs"] if r["variant"] == "post-norm"})
    behind_from, behind_to = numbers(text, after="loss over steps")[:2]
    led_by = numbers(text, after="led by step")[0]
    assert (behind_from, behind_to, led_by) == (25, 50, 200) and len(seeds) == 3
    for task in ("copy", "shift"):
        post = [curves[(task, "post-norm", s)] for s in seeds]
        pre = [curves[(task, "base", s)] for s in seeds]
        window = int(behind_from) // every                                     # steps 25–49
        assert all(p[window] > b[window] for p, b in zip(post, pre))
        for window in range(int(led_by) // every - 1, settings["steps"] // every):   # from steps 175–199 on
            assert all(p[window] < b[window] for p, b in zip(post, pre)), (task, window)
    # the two set-ups as the sentence states them
    assert numbers(text, after="so section 4's")[:2] == [norm_position.STEPS, norm_position.BATCH_SIZE]
    assert numbers(text, after="and the ladder's")[:2] == [settings["steps"], settings["batch_size"]]
    base = doc["variants"]["base"]["config"]
    assert base["n_layers"] == norm_position.LAYERS - 1 and settings["warmup"] > norm_position.WARMUP
    # section 4's side: pre-norm ahead in every seed after its 150 steps
    study = norm_position.load_norm_position()
    assert study.pre_ahead() == len(study.seeds) == 5
