"""What notebooks 00–02 say in words, checked here where an assert in the notebook would teach
nothing: the course map's tracks, the "Common bug" call-outs, the RoPE facts the text quotes."""
import math
import re

import pytest
import torch

import minitf
from support import course_map, ROOT, executed, joined, numbers, printed
from minitf import Config, MultiHeadAttention, rope_angles, rope_frequencies
from minitf.core.train import make_optimizer
from minitf.course.exercises import EXERCISES


# --- 00: the course map -------------------------------------------------------------------------

def map_tracks(text):
    """track heading ("main path" / "extras") → {number: stated minutes, …} (the minutes are held to
    the count by tests/notebooks/test_course_budget.py): "**The extras: about 3 h** …" then rows
    "| 10 · Lightning | … | 5 min |"."""
    tracks = {}
    for block in text.split("**The ")[1:]:
        name = block.split(":")[0]
        if name in ("main path", "extras"):
            rows = [line for line in block.splitlines() if re.match(r"\| \d\d · ", line)]
            tracks[name] = {line[2:4]: int(numbers(line.split("|")[-2])[0]) for line in rows}
    return tracks


def test_the_course_map_shows_both_tracks_with_every_notebook_in_its_own():
    tracks = map_tracks(joined("00_setup_check.ipynb"))
    for path in course_map.notebooks():
        assert path.name[:2] in tracks.get(course_map.track(path.name), {}), \
            f"00's map does not list {path.name} under the {course_map.track(path.name)}"
    assert sum(len(rows) for rows in tracks.values()) == len(course_map.notebooks())


def test_the_map_names_each_notebooks_exercises():
    text = joined("00_setup_check.ipynb")
    for name, ex in EXERCISES.items():
        row = next(l for l in text.splitlines() if l.startswith(f"| {ex.notebook} ·"))
        assert f"`{name}`" in row, (name, row)


def test_00s_try_this_says_what_the_two_drawings_show():
    text = " ".join(joined("00_setup_check.ipynb").split())
    assert numbers(text, after="For the first,")[:4] == [8, 16, 4, 5552]   # widths, head dim, parameters
    assert numbers(text, after="for the second,")[0] == 2656
    assert Config(d_model=8, d_ff=16).head_dim == 4
    pre = minitf.Transformer(Config(norm_position="pre"))
    assert minitf.count_parameters(pre) == 2_656
    assert minitf.count_parameters(minitf.Transformer(Config())) + 8 == 2_656  # one final norm more


def test_unread_embedding_rows_only_feel_weight_decay():
    model = minitf.Transformer(Config())
    groups = make_optimizer(model, lr=1e-3).param_groups
    decayed = [p for g in groups if g["weight_decay"] > 0 for p in g["params"]]
    assert any(p is model.embed.weight for p in decayed)


# --- 02: RoPE -----------------------------------------------------------------------------------

@pytest.fixture
def unrendered(monkeypatch):
    """RopeExplorers that build their figures but render no PNG: these claims are about the numbers
    and the controls (tests/test_widgets.py renders the pictures)."""
    monkeypatch.setattr("minitf.views.rope_explorer.figure_png", lambda fig: b"")


def seed_frequencies(d_model, head_dim, base=10000.0):
    """The seed documents' formula: the exponent over d_model instead of head_dim (a Common bug)."""
    return base ** (-2 * torch.arange(head_dim // 2, dtype=torch.float64) / d_model)


def test_the_d_model_exponent_bug_as_the_call_out_states_it():
    standard = rope_frequencies(4, dtype=torch.float64)[0]
    assert torch.allclose(standard, torch.tensor([1.0, 0.01], dtype=torch.float64))
    assert torch.allclose(seed_frequencies(8, 4), torch.tensor([1.0, 0.1], dtype=torch.float64))
    assert round(seed_frequencies(16, 4)[1].item(), 3) == 0.316
    assert torch.equal(seed_frequencies(4, 2), rope_frequencies(2, dtype=torch.float64)[0])  # tiny model


def test_rotating_v_makes_attention_depend_on_absolute_positions():
    x = torch.rand(1, 6, 4, generator=torch.Generator().manual_seed(6), dtype=torch.float64)
    for rope_on_v in (False, True):
        torch.manual_seed(0)
        attn = MultiHeadAttention(Config(rope_on_v=rope_on_v)).double()
        outs = []
        for start in (0, 7):
            cos, sin = rope_angles(attn.inv_freq, 6, offset=start)
            outs.append(attn(x, cos, sin)[0])
        change = (outs[0] - outs[1]).abs().max().item()
        assert (change < 1e-12) if not rope_on_v else (change > 1e-2)


def test_the_numbers_quoted_in_02(unrendered):
    assert round(2 * math.pi / 0.001) == 6283                       # pair 3's period at base 10,000
    assert abs(44 - 7 * 2 * math.pi - 0.018) < 0.001                # Δ + 44 = 7·2π + 0.018
    assert round(2 * math.pi - 6, 2) == 0.28                        # Δ + 6: 0.28 rad apart
    assert round(math.acos(0.6), 3) == 0.927 and round(math.cos(2 - math.acos(0.6)), 3) == 0.478
    assert round(math.cos(2 + math.acos(0.6)), 3) == -0.977
    # "at what base does pair 3 repeat within 32 positions?" has an answer the slider reaches
    base = (2 * math.pi / 32) ** (-8 / 6)
    explorer = minitf.RopeExplorer(head_dim=8)
    assert explorer.base.min < math.log10(base) < math.log10(10)
    pe = minitf.sinusoidal_table(16, 4).double()
    assert torch.allclose(pe.norm(dim=-1), torch.full((16,), math.sqrt(2), dtype=torch.float64), atol=1e-6)


def test_the_explorer_draws_the_angle_whose_cosine_gives_the_pairs_score(unrendered):
    q = torch.tensor([1.0, 0.0, 0.5, -0.5], dtype=torch.float64)
    k = torch.tensor([0.6, 0.8, 0.1, 0.9], dtype=torch.float64)
    e = minitf.RopeExplorer(q, k, head_dim=4, m=3, n=1)
    for pair in (0, 1):
        e.pair.value = pair
        s = e.state
        assert -math.pi < s["angle"] <= math.pi
        assert s["pair_score"] == pytest.approx(
            float(s["q_rot"].norm() * s["k_rot"].norm()) * math.cos(s["angle"]), abs=1e-12)
        assert torch.allclose(s["q_rot"].norm(), s["q_pair"].norm(), atol=1e-12)  # turning keeps length
    e.pair.value = 0
    assert e.state["angle"] == pytest.approx(2 - math.acos(0.6), abs=1e-12)  # the worked example


def test_the_explorer_figure_keeps_its_legends_off_the_data_and_shades_negative_offsets(unrendered):
    e = minitf.RopeExplorer(head_dim=8)
    fig = e.figure(e.state)
    plane, curve = fig.axes
    for ax in (plane, curve):
        legend = ax.get_legend()
        assert legend is not None and legend.get_bbox_to_anchor().y0 < ax.get_window_extent().y0
        assert min(t.get_fontsize() for t in legend.get_texts()) >= 9
    assert any(p.get_x() < 0 for p in curve.patches)  # the shaded span of negative offsets
    assert any(type(p).__name__ == "Arc" for p in plane.patches)


def offset_drift():
    """Notebook 02, section 6: the largest change of the normalised score between offset Δ and Δ + 6
    or Δ + 44 (Δ = 1 … 40), for head_dim 2 and 8, with the notebook's random q and k."""
    def scores_by_offset(q, k, T):
        cos, sin = rope_angles(rope_frequencies(q.numel(), dtype=torch.float64), T)
        return minitf.apply_rope(q.expand(1, 1, T, q.numel()), cos, sin)[0, 0] @ k / (q.norm() * k.norm())

    D = torch.arange(1, 41)
    drift = {}
    for hd in (2, 8):
        q, k = torch.rand(2, hd, generator=torch.Generator().manual_seed(3), dtype=torch.float64) * 2 - 1
        curve = scores_by_offset(q, k, 90)
        drift[hd] = [(curve[D + later] - curve[D]).abs().max().item() for later in (6, 44)]
    return drift


def test_02_head_dim_claims_say_what_the_numbers_show():
    text = " ".join(joined("02_rope.ipynb").split())
    drift = {hd: [round(x, 3) for x in d] for hd, d in offset_drift().items()}
    # "+44: … (the largest difference is 0.018) … With head_dim 8 it does not (0.369)": far apart the head size shows
    assert numbers(text, after="offsets 44 apart score")[0] == drift[2][1]
    assert numbers(text, after="With head_dim 8")[0] == drift[8][1]
    assert drift[2][1] < 0.02 < 0.3 < drift[8][1]
    # "At +6 … (0.282 with head_dim 2, 0.201 with 8)": not better with the bigger head
    assert numbers(text, after="At +6")[:4] == [drift[2][0], 2, drift[8][0], 8] and drift[8][0] < drift[2][0]
    # "with head_dim 2 no q and k do better: … at most 2 sin 3 ≈ 0.282"
    bound = 2 * math.sin(3)
    assert numbers(text, after="2 sin 3 ≈")[0] == round(bound, 3) and abs(drift[2][0] - bound) < 5e-4
    g = torch.Generator().manual_seed(11)
    for _ in range(200):
        q, k = torch.rand(2, 2, generator=g, dtype=torch.float64) * 2 - 1
        cos, sin = rope_angles(rope_frequencies(2, dtype=torch.float64), 60)
        s = minitf.apply_rope(q.expand(1, 1, 60, 2), cos, sin)[0, 0] @ k / (q.norm() * k.norm())
        assert (s[6:] - s[:-6]).abs().max() <= bound + 1e-12
    # "in 6 positions the slow pairs turn by 0.6, 0.06 and 0.006 rad"
    theta = rope_frequencies(8, dtype=torch.float64)[0]
    turns = [round(6 * t, 3) for t in theta[1:].tolist()]
    assert turns == [0.6, 0.06, 0.006]
    assert numbers(text, after="pairs barely turn")[:6] == [1, turns[0], 2, 3, *turns[1:]]
    # the ladder's positions rung moved to notebook 04, section 6: 02 only points there
    assert "ablation ladder" in text and "load_ablation" not in joined("02_rope.ipynb")
    assert 'only("positions"' in " ".join(joined("04_ffn_block.ipynb").split()).replace("\n", "")


# ---- 01's tied ends and its "Try this"

def test_01_tying_costs_the_smallest_solver_nothing_and_saves_1536_parameters():
    """What 01's pointer to extra 11 rests on: tied, the smallest solver solves shift as well as
    untied (100 % exact match on fresh pairs either way) with 1,536 fewer parameters."""
    from minitf.experiments.smallest import load_tiny_sweep
    sweep = load_tiny_sweep()
    tied, untied = sweep["solver"], sweep["− tied head"]
    assert round(tied.exact_median, 3) == round(untied.exact_median, 3) == 1.0
    assert untied.params - tied.params == 1536 == 256 * 6


def test_01_try_this_parameter_counts():
    count = lambda **kw: minitf.count_parameters(minitf.Transformer(minitf.Config(**kw)))
    ends = lambda d: 2 * 256 * d + 256
    assert (count(d_model=8, d_ff=16), ends(8)) == (5552, 4352)
    assert (count(d_model=32, d_ff=128), count(d_model=32, d_ff=128) - ends(32)) == (42048, 25408)
    assert count(d_model=20, d_ff=80) - ends(20) < ends(20)          # "between d_model 20 and 24"
    assert count(d_model=24, d_ff=96) - ends(24) > ends(24)


def test_02_the_base_slider_is_logarithmic_as_the_text_says(unrendered):
    """"The base slider is logarithmic: from about 3 to 100,000, each step multiplies the base by 1.12"."""
    slider = minitf.RopeExplorer(head_dim=8).base
    low, high, step = numbers(" ".join(joined("02_rope.ipynb").split()), after="slider is logarithmic:")[:3]
    assert type(slider).__name__ == "FloatLogSlider" and slider.base == 10
    assert (round(10 ** slider.min), 10 ** slider.max, round(10 ** slider.step, 2)) == (low, high, step)


def test_links_to_01s_checks_section_land_on_its_heading():
    """Every notebook's link to a section of 01 (`01_embeddings.ipynb#How-the-checks-work`) names a
    heading 01 has, as JupyterLab and nbconvert make its anchor (spaces → -)."""
    headings = {line.lstrip("#").strip().replace(" ", "-")
                for line in joined("01_embeddings.ipynb", "markdown").splitlines() if line.startswith("#")}
    assert "How-the-checks-work" in headings
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        for anchor in re.findall(r"01_embeddings\.ipynb#([\w-]+)", joined(path.name, "markdown")):
            assert anchor in headings, f"{path.name} links to 01_embeddings.ipynb#{anchor}, which 01 does not have"


def test_02_try_this_pair_3s_period_by_base():
    """"from 6,283 positions at base 10,000 to about 35 at base 10 … repeats within them from a base
    of about 8 down" (head_dim 8: pair 3 turns by base^(-6/8) per position)."""
    period = lambda base: 2 * math.pi / rope_frequencies(8, base, dtype=torch.float64)[0, 3].item()
    assert round(period(10000.0)) == 6283 and round(period(10.0)) == 35
    assert period(10 ** 0.95) > 32 > period(10 ** 0.90)          # the slider's steps around 8
    assert 7.9 < 10 ** 0.90 < 8.0


# ---- what the cells of 01 and 02 print, held here instead of by asserts in front of the learner

def test_01_utf8_lengths_as_printed():
    out = printed("01_embeddings.ipynb", containing="\"é\", \"€\"")
    assert "[72, 105]" in out and "[195, 169]" in out and "[226, 130, 172]" in out
    assert minitf.encode("Hi") == [72, 105] and len(minitf.encode("é")) == 2 and len(minitf.encode("€")) == 3


def test_01_the_shift_rule_keeps_the_95_printable_bytes_printable():
    from minitf.core.data import PRINTABLE
    line = printed("01_embeddings.ipynb", containing="print(pair_problem(").splitlines()[-1]
    assert numbers(line) == [95] and line.endswith("True")      # the 95 printable bytes onto themselves
    assert set(minitf.shift_bytes(PRINTABLE)) == set(PRINTABLE) and len(PRINTABLE) == 95


def test_01_only_read_rows_learn_and_every_head_row_does():
    embedding, head, read = printed("01_embeddings.ipynb", containing="embed_rows = (model.embed").splitlines()
    assert numbers(embedding) == [96, 256] and numbers(head) == [256, 256]   # 95 printable + TAB; every one
    assert read.endswith("TAB only: True")


@pytest.mark.slow
def test_01_neighbouring_bytes_are_less_alike_than_any_two_and_two_directions_show_a_sixth():
    """The predict cell is stored without output: what it prints is read from a run of the notebook."""
    out = printed(executed("01_embeddings"), containing='trained = minitf.load("../data/checkpoints/shift.pt")')
    neighbours, any_two = numbers(out, after="c + 1")[:2]   # "bytes c and c + 1 -0.11; any two bytes 0.04"
    assert neighbours < any_two, out
    rows = minitf.load(ROOT / "data/checkpoints/shift.pt").embed.weight.detach().double()[32:127]
    S = torch.linalg.svdvals(rows - rows.mean(0))
    share = ((S[:2] ** 2).sum() / (S ** 2).sum()).item()
    assert 0.15 < share < 0.2  # "about a sixth of the spread" (the figure's title prints it)
    text = " ".join(joined("01_embeddings.ipynb").split())
    assert numbers(text, after="their average cosine similarity")[:2] == [neighbours, any_two]


def test_02_offset_drift_as_printed():
    """The table below the two scatter plots: 44 apart, alike with one speed, apart with four."""
    out = printed("02_rope.ipynb", containing="rope_scores.plot_offset_drift(")
    rows = {int(m[1]): (float(m[2]), float(m[3])) for m in re.finditer(r"head_dim (\d): +(\d\.\d+) +(\d\.\d+)", out)}
    drift = offset_drift()
    assert rows == {hd: tuple(round(x, 3) for x in drift[hd]) for hd in (2, 8)}


def test_02_try_this_states_the_base_where_pair_3_repeats_within_32():
    base = (32 / (2 * math.pi)) ** (4 / 3)   # period 2π·base^(3/4) = 32
    text = " ".join(joined("02_rope.ipynb").split())
    assert numbers(text, after="for a base of")[:2] == [round(base, 2), round(10 ** 0.90, 2)]
