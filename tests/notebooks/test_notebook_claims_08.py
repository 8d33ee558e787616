"""What notebook 08 says about the learner's model, held to its printed numbers: the rounding the
check shows in each dtype (the Answer's "a few 10⁻¹⁵ ... a few 10⁻⁶"), and the learner's file."""
import re

from support import markdown, numbers, printed

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
    shown = printed(NOTEBOOK, containing="path = minitf.parts.model_file()")
    lines = numbers(shown.splitlines()[0], after="model.py:")[0]   # "your file, my_parts/model.py: 160 lines"
    assert 100 <= lines <= 250, lines
    assert [name for name in re.findall(r"^class (\w+)\(nn\.Module\)", shown, re.M)] == \
        ["MyAttention", "MyLayerNorm", "MyFeedForward", "MyBlock", "MyTransformer"]
