"""How minitf writes a count in a message: "1 step", "2 steps" (one helper, so that no message
says "1 validations")."""
from __future__ import annotations


def plural(n: int, word: str, words: str | None = None, *, sep: bool = False) -> str:
    """`n` and the noun it counts, singular for exactly one: plural(1, "step") → "1 step",
    plural(3, "step") → "3 steps". `words` is the plural where it is not word + "s"
    (plural(2, "is", "are") → "2 are"); sep=True writes 1200 as "1,200"."""
    number = f"{n:,}" if sep else str(n)
    return f"{number} {word if n == 1 else (words or word + 's')}"
