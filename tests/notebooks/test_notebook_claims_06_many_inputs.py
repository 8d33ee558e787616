"""06's shortcut story tested beyond its one input: the sentence after the `Hello Hello` cell says that
over 200 fresh inputs with a doubled byte, replacing heads 1.0 and 1.1 (or head 1.2) by their mean
makes the shortcut model get fewer outputs right, not more. Held here against what the cell printed."""
from support import markdown, numbers, printed


def exact_by_heads():
    """{"all heads": 54, …}, from rows "without 1.2          exact match on 200 inputs with a doubled byte: 7%"."""
    out = printed("06_attention_heatmaps.ipynb", containing="doubled = [p for")
    rows = [line.split("  ", 1) for line in out.splitlines() if "exact match" in line]
    assert all(numbers(rest, after="exact match on")[0] == 200 for _, rest in rows), out
    return {what: numbers(rest, after="doubled byte:")[0] for what, rest in rows}


def test_06_switching_off_heads_1_0_and_1_1_fixes_hello_but_not_doubled_bytes_in_general():
    shares = exact_by_heads()
    assert set(shares) == {"all heads", "without 1.0 and 1.1", "without 1.2"}, shares
    # "fewer doubled bytes right, not more": by a wide margin, not a last-bit difference
    assert shares["without 1.0 and 1.1"] + 20 < shares["all heads"], shares
    assert shares["without 1.2"] + 20 < shares["all heads"], shares
    text = " ".join(markdown("06_attention_heatmaps").split())
    assert "not in two heads" in text and "lives mostly in heads" not in text
