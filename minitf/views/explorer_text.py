"""The Explorer's text box: bytes as text and back. Printable ASCII stands for itself; `\\t` is TAB,
`\\n` the end-of-output byte, `\\\\` a backslash and `\\xNN` any other byte, so every byte sequence
has one spelling the learner can type (the steps write the same escapes)."""
from __future__ import annotations


def to_text(ids) -> str:
    """Bytes as the text box shows them: printable ASCII as is, \\t, \\n, \\\\ and \\xNN else."""
    out = []
    for b in ids:
        b = int(b)
        out.append({9: "\\t", 10: "\\n", 92: "\\\\"}.get(b, chr(b) if 32 <= b < 127 else f"\\x{b:02x}"))
    return "".join(out)


def from_text(text: str) -> list[int]:
    """The inverse of to_text; other characters are UTF-8 encoded, a lone backslash kept."""
    ids, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt in "tn\\":
                ids.append({"t": 9, "n": 10, "\\": 92}[nxt])
                i += 2
                continue
            hex_digits = text[i + 2:i + 4]
            if nxt == "x" and len(hex_digits) == 2 and all(c in "0123456789abcdefABCDEF"
                                                           for c in hex_digits):
                ids.append(int(hex_digits, 16))
                i += 4
                continue
        ids.extend(ch.encode("utf-8"))
        i += 1
    return ids
