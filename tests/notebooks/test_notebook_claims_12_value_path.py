"""12's value-path intervention beyond its one input (`kq`): the cell after it patches 200 inputs, and
the sentence after that says the output follows the source's patched value and ignores the other
position's, input after input. Held against what the cell printed."""
import re

from support import markdown, printed


def test_12_the_value_path_patch_holds_on_200_inputs():
    out = printed("12_weights_by_hand.ipynb", containing="follows += by_hand.next_byte_with_value_of")
    follows = re.search(r"the output follows the patch in (\d+)/(\d+)", out)
    kept = re.search(r"the right byte stays in (\d+)/(\d+)", out)
    assert follows and kept and follows[2] == kept[2] == "200", out
    assert int(follows[1]) >= 195 and int(kept[1]) >= 195, out  # "input after input": a rare tie may go either way
    assert "Input after input, the output follows the source's patched value" in markdown("12_weights_by_hand")
