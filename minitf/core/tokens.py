"""Bytes are the tokens: id = byte value, so the vocabulary is exactly 256 and nothing is unknown.

A pair is one sequence `input TAB output EOS`. TAB (9) separates the parts; EOS is the newline
byte (10), which can never occur inside a field because the pairs files are line based.
"""
from __future__ import annotations

VOCAB = 256  # every byte value is a token
TAB = 9
EOS = 10  # b"\n": the end-of-output marker generation stops at
PAD = 0   # fills short rows of a batch; its targets are ignored, so its value never matters
IGNORE = -100  # target value F.cross_entropy skips (its default ignore_index)


def to_bytes(text: bytes | str) -> bytes:
    """Text as bytes: str is UTF-8 encoded, bytes pass through."""
    return text.encode("utf-8") if isinstance(text, str) else bytes(text)


def encode(text: bytes | str) -> list[int]:
    return list(to_bytes(text))


def decode(ids) -> bytes:
    return bytes(int(i) for i in ids)


def show(ids_or_bytes) -> str:
    """A printable view of bytes: TAB as ⇥, EOS as ⏎, other non-printables as \\xNN."""
    out = []
    for b in (ids_or_bytes if not isinstance(ids_or_bytes, str) else to_bytes(ids_or_bytes)):
        b = int(b)
        if b == TAB:
            out.append("⇥")
        elif b == EOS:
            out.append("⏎")
        elif 32 <= b < 127:
            out.append(chr(b))
        else:
            out.append(f"\\x{b:02x}")
    return "".join(out)


def byte_label(b) -> str:
    """One byte as a label on its own (an axis tick, a table row): like `show`, and a space as ␣."""
    return "␣" if int(b) == 32 else show([int(b)])
