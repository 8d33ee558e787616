"""12's value-path intervention beyond its one input (`kq`): the cell after it patches 200 inputs, and
the sentence after that says the output follows the source's patched value and ignores the other
position's, input after input. Held against what the cell printed."""
from support import markdown, numbers, printed


def test_12_the_value_path_patch_holds_on_200_inputs():
    out = printed("12_weights_by_hand.ipynb", containing="follows += by_hand.next_byte_with_value_of")
    # "the output follows the patch in 200/200", "the right byte stays in 200/200"
    (follows, n), (kept, m) = numbers(out, after="follows the patch")[:2], numbers(out, after="byte stays in")[:2]
    assert n == m == 200 and follows >= 195 and kept >= 195, out  # "input after input": a rare tie may go either way
    said = markdown("12_weights_by_hand")
    assert "follows the source's patched value" in said and "Input after input" in said
