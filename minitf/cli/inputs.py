"""What the commands read from their arguments' files: a pairs file named on the command line
(strict, or its good lines only), a --text file that looks like a pairs file, and what kind of
model a checkpoint holds."""
from __future__ import annotations

import shlex

from ..core.data import parse_line, read_pairs
from ..core.words import plural
from .messages import warn


def warn_if_pairs_file(path) -> None:
    """--text given a pairs file (Base64 lines of `input TAB output`) is allowed, but is most
    likely a mistake: say so on stderr. Judged on its first 20 non-blank lines."""
    try:
        with open(path, encoding="ascii", errors="strict") as f:
            lines = [line.strip() for _, line in zip(range(200), f) if line.strip()][:20]
        for line in lines:
            parse_line(line)
    except (OSError, UnicodeDecodeError, ValueError):
        return
    if lines:
        warn(f"{path} looks like a pairs file (Base64 lines of input TAB output): --text reads "
             "it as plain bytes, Base64 and all; a pairs file goes without --text")


def read_pairs_arg(path, args, max_len: int | None = None, flag: str | None = None):
    """A pairs file named on the command line: strictly (a bad line is an error, and main points
    to `data check`), or with --skip-bad-lines only its good pairs, saying how many were skipped.
    Pairs longer than max_len (the model's) are bad lines. A file without a pair is refused."""
    named = f"{flag} {path}" if flag else str(path)
    if not getattr(args, "skip_bad_lines", False):
        pairs = read_pairs(path, max_len=max_len)
        if not pairs:
            raise ValueError(f"{named} holds no pairs (the file is empty or blank)")
        return pairs
    pairs = read_pairs(path, strict=False, max_len=max_len)
    report = pairs.report
    check = f"python -m minitf data check {shlex.quote(str(path))}"
    if not pairs:
        lines = "its one line is not" if report.lines == 1 else f"none of its {report.lines} lines is"
        raise ValueError(f"{named}: {lines} a pair (`{check}` says why)")
    if report.skipped:
        warn(f"{path}: skipped {plural(len(report.skipped), 'bad line')} of {report.lines} and "
             f"read {plural(report.pairs, 'pair')} (--skip-bad-lines; `{check}` lists them)")
    return pairs


def model_kind(model) -> str | None:
    """"text" for a language model (`train --text` records the text and context in the
    checkpoint), "pairs" for a model `train` trained on pairs (its metadata has an exact match),
    None when the metadata does not say (e.g. a model saved from Python)."""
    meta = model.metadata
    if "text" in meta:
        return "text"
    if isinstance(meta.get("val"), dict) and "exact_match" in meta["val"]:
        return "pairs"
    return None
