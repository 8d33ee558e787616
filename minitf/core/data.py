"""The pairs data: Base64 lines in files, generated tasks, and batches with an output-only loss.

A pairs file has one Base64 line per pair; decoded, a line is `input TAB output`. Base64 keeps
every byte (TAB and newline included) safe inside a line-based text file.
"""
from __future__ import annotations

import base64
import binascii
import functools
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, NamedTuple

import torch

from .files import atomic_write
from .tokens import EOS, IGNORE, PAD, TAB, show, to_bytes
from .words import plural


class DataError(ValueError):
    """A pairs file line that is not a valid pair: says which file, which line and why, and (when
    the whole file was read) how many of its lines are bad."""

    def __init__(self, path, line: int, reason: str, bad: int | None = None,
                 lines: int | None = None, max_len: int | None = None):
        self.path, self.line, self.reason = str(path), line, reason
        self.bad, self.lines = bad, lines  # bad lines, non-blank lines
        self.max_len = max_len  # the longest sequence the read allowed (None: any length)
        counted = ""
        if bad is not None and lines is not None:
            counted = (" (its one line is bad)" if lines == 1 else
                       f" ({bad} of its {lines} lines {'is' if bad == 1 else 'are'} bad"
                       f"{'' if bad == 1 else '; this is the first'})")
        super().__init__(f"{self.path}:{line}: {reason}{counted}")


class Pair(NamedTuple):
    input: bytes
    output: bytes

    def __repr__(self):
        return f"Pair({show(self.input)!r} → {show(self.output)!r})"


def sequence(pair: Pair) -> list[int]:
    """The token ids the model sees: input TAB output EOS."""
    return [*pair.input, TAB, *pair.output, EOS]


def pair_problem(pair: Pair, max_len: int | None = None) -> str | None:
    """Why `pair` cannot be trained on, or None if it can."""
    for name, part in (("input", pair.input), ("output", pair.output)):
        if not part:
            return f"empty {name}"
        if TAB in part:
            return f"TAB inside the {name}"
        if EOS in part:
            return f"newline (the end marker) inside the {name}"
    n = len(pair.input) + len(pair.output) + 2
    if max_len is not None and n - 1 > max_len:  # the model reads all but the last token
        return f"too long: {n} tokens with TAB and end marker, max_len {max_len} allows {max_len + 1}"
    return None


def parse_line(text: str, max_len: int | None = None) -> Pair:
    """One Base64 line → Pair, or ValueError saying what is wrong with it."""
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as e:
        raise ValueError(f"not valid Base64 ({e})") from None
    tabs = raw.count(TAB)
    if tabs != 1:
        raise ValueError("decodes to no TAB: not an input<TAB>output pair" if tabs == 0
                         else f"decodes to {tabs} TABs: a pair has exactly one")
    pair = Pair(*raw.split(bytes([TAB])))
    problem = pair_problem(pair, max_len)
    if problem:
        raise ValueError(problem)
    return pair


@dataclass
class ReadReport:
    """What a lenient read kept and skipped, with every skipped line's number and reason."""
    path: str
    lines: int = 0  # non-blank lines read
    pairs: int = 0
    skipped: list[tuple[int, str]] = field(default_factory=list)

    def reasons(self) -> Counter:
        """Skipped lines counted by reason (the Base64 detail is folded into one reason)."""
        return Counter(r.split(" (")[0] for _, r in self.skipped)

    def __str__(self):
        lines = [f"{self.path}: {plural(self.lines, 'line')}, {plural(self.pairs, 'pair')}, "
                 f"{len(self.skipped)} skipped"]
        lines += [f"  {n:4d} × {reason}" for reason, n in self.reasons().most_common()]
        return "\n".join(lines)


class PairsRead(list):
    """What read_pairs returns, however it read: a list of Pair (used as any list) whose `report`
    (a ReadReport) says how many lines were read and which were skipped, and why."""

    def __init__(self, pairs, report: ReadReport):
        super().__init__(pairs)
        self.report = report


def read_pairs(path, *, strict: bool = True, max_len: int | None = None) -> PairsRead:
    """Read a Base64 pairs file: a list of Pair (a PairsRead, whose .report counts what was read).

    strict (default): every non-blank line must be a pair, else DataError naming the first bad
    line and its reason, and how many of the file's lines are bad (the rest of the file is read to
    count them). strict=False: the good pairs only; `.report.skipped` lists every skipped line
    with its reason. max_len: a pair longer than a model of that max_len reads is a bad line.
    Blank lines and CRLF line endings are allowed.
    """
    path = Path(path)
    report = ReadReport(str(path))
    pairs = []
    with open(path, encoding="ascii", errors="replace", newline="") as f:
        for number, line in enumerate(f, start=1):
            text = line.rstrip("\r\n")
            if not text.strip():
                continue
            report.lines += 1
            try:
                pairs.append(parse_line(text.strip(), max_len))
            except ValueError as e:
                report.skipped.append((number, str(e)))
    report.pairs = len(pairs)
    if strict and report.skipped:
        line, reason = report.skipped[0]
        raise DataError(path, line, reason, bad=len(report.skipped), lines=report.lines,
                        max_len=max_len)
    return PairsRead(pairs, report)


def encode_line(pair: Pair) -> str:
    problem = pair_problem(pair)
    if problem:
        raise ValueError(f"cannot write {pair!r}: {problem}")
    return base64.b64encode(pair.input + bytes([TAB]) + pair.output).decode("ascii")


def write_pairs(path, pairs: Iterable[Pair], *, overwrite: bool = False) -> Path:
    """Write pairs as Base64 lines, atomically; an existing file is kept unless overwrite=True.

    The pairs stream into a temporary file that takes the name only once all are written, so
    `pairs` may be an iterator of any length (memory stays flat), and a pair that cannot be
    written (ValueError) leaves no file behind.
    """
    def write(tmp):
        with open(tmp, "w", encoding="ascii", newline="\n") as f:
            for pair in pairs:
                f.write(encode_line(pair) + "\n")

    return atomic_write(path, write, overwrite=overwrite)


# --- generated tasks -----------------------------------------------------------------------------

PRINTABLE = bytes(range(32, 127))  # space … ~


def shift_bytes(b: bytes) -> bytes:
    """Each printable byte + 1, with ~ (126) wrapping to space (32): the rule of the seed's pairs."""
    return bytes(32 if c == 126 else c + 1 for c in b)


TASKS = {
    "shift": shift_bytes,
    "copy": bytes,
    "reverse": lambda b: b[::-1],
    "sort": lambda b: bytes(sorted(b)),
}


def make_pairs(task: str, n: int, seed: int = 0, *, min_len: int = 1, max_len: int = 12,
               alphabet: bytes = PRINTABLE, exclude: Iterable[bytes] = (),
               repeats: float = 0.0) -> list[Pair]:
    """n distinct pairs of a generated task, inputs of random length in [min_len, max_len]: the
    list of iter_pairs' pairs (its docstring has the details)."""
    return list(iter_pairs(task, n, seed, min_len=min_len, max_len=max_len, alphabet=alphabet,
                           exclude=exclude, repeats=repeats))


def iter_pairs(task: str, n: int, seed: int = 0, *, min_len: int = 1, max_len: int = 12,
               alphabet: bytes = PRINTABLE, exclude: Iterable[bytes] = (),
               repeats: float = 0.0) -> Iterator[Pair]:
    """make_pairs' n distinct pairs one at a time (the same pairs for the same arguments), for
    writing a large file without holding its pairs: memory holds only the inputs drawn so far (to
    keep them distinct). The arguments are checked now, the pairs drawn as they are asked for.

    Inputs in `exclude` (e.g. the training inputs) are never produced, so a validation set made
    with it is truly held out. `repeats` is the fraction of inputs drawn from a random 2–6 byte
    sub-alphabet (and at least 3 long), so that bytes repeat: in uniform random text they rarely
    do, and a model can then find "which input byte comes next" by its content instead of its
    position — and fails on "aab" (notebook 05 measures it).
    """
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; choose from {sorted(TASKS)}")
    if not 1 <= min_len <= max_len:
        raise ValueError(f"need 1 <= min_len <= max_len, got {min_len}, {max_len}")
    if not 0 <= repeats <= 1:
        raise ValueError(f"repeats is a fraction in [0, 1], got {repeats}")
    bad = set(alphabet) & {TAB, EOS}
    if bad:
        raise ValueError(f"alphabet may not contain TAB or newline, got {sorted(bad)}")
    rule, rng = TASKS[task], random.Random(seed)
    seen = {to_bytes(x) for x in exclude}
    letters = set(alphabet)
    capacity = sum(len(letters) ** k for k in range(min_len, max_len + 1))
    reachable = sum(min_len <= len(x) <= max_len and set(x) <= letters for x in seen)
    if n > capacity - reachable:
        raise ValueError(f"cannot make {n} distinct inputs of length {min_len}–{max_len}: there "
                         f"are {capacity - reachable} (not counting the excluded ones)")
    pool = sorted(letters)
    getrandbits = rng.getrandbits

    def choices(chars, length: int) -> bytes:
        """`length` bytes of rng.choice(chars), the same draws: CPython's choice takes
        getrandbits(k.bit_length()) until it is below k = len(chars) (the stream the stored
        checkpoints were made with), here without two calls per byte."""
        k, x = len(chars), bytearray()
        while len(x) < length:
            r = getrandbits(k.bit_length())
            if r < k:
                x.append(chars[r])
        return bytes(x)

    def draw():
        made = 0
        while made < n:
            if repeats and rng.random() < repeats:
                few = rng.sample(pool, min(len(pool), rng.randint(2, 6)))
                x = choices(few, rng.randint(max(min_len, min(3, max_len)), max_len))
            else:
                x = choices(alphabet, rng.randint(min_len, max_len))
            if x not in seen:
                seen.add(x)
                made += 1
                yield Pair(x, rule(x))

    return draw()


def make_splits(task: str, n_train: int, n_val: int, seed: int = 0, *, min_len: int = 1,
                max_len: int = 12, repeats: float = 0.0,
                val_repeats: float = 0.0) -> tuple[list[Pair], list[Pair]]:
    """Training pairs (data seed seed+1000) and held-out pairs (seed+2000) none of whose inputs
    occur in training: the data `python -m minitf train --task … --seed S` trains and validates on.

    `repeats` is the fraction of training inputs with repeated bytes, `val_repeats` that of the
    held-out inputs (default 0: uniform random text). A pairs file of one's own holds out part of
    itself instead (`train --train FILE` without `--val`: minitf.cli.settings.hold_out).
    min_len = max_len gives inputs of one length: the byte to copy then sits a fixed distance back.
    The same arguments give the same pairs, so the last few splits are kept: a checkpoint's pairs
    asked for again (checkpoint_pairs, in a notebook's next cell) come back at once, as new lists,
    and so do its training pairs when other held-out pairs are asked for (another n_val).
    """
    train, val = _splits(task, n_train, n_val, seed, min_len, max_len, repeats, val_repeats)
    return list(train), list(val)


@functools.lru_cache(maxsize=4)
def _splits(task, n_train, n_val, seed, min_len, max_len, repeats, val_repeats):
    train = _training_pairs(task, n_train, seed, min_len, max_len, repeats)
    val = make_pairs(task, n_val, seed + 2000, min_len=min_len, max_len=max_len,
                     exclude=[p.input for p in train], repeats=val_repeats)
    return train, tuple(val)


@functools.lru_cache(maxsize=4)
def _training_pairs(task, n_train, seed, min_len, max_len, repeats):
    return tuple(make_pairs(task, n_train, seed + 1000, min_len=min_len, max_len=max_len,
                            repeats=repeats))


# --- batches -------------------------------------------------------------------------------------

class Batch(NamedTuple):
    ids: torch.Tensor      # (B, T) model input: the sequence without its last token
    targets: torch.Tensor  # (B, T) next token, IGNORE on the input part and on padding


def make_batch(pairs: list[Pair]) -> Batch:
    """Pad the `input TAB output EOS` sequences into one batch with an output-only loss.

    targets[t] = seq[t+1]. Position t predicts an output byte (or EOS) exactly when
    t >= len(input): earlier targets are input bytes or the TAB, which the model is given, not
    asked for, so they are IGNORE. Padding on the right is IGNORE too; under a causal mask it cannot
    influence the real positions before it.
    """
    if not pairs:
        raise ValueError("make_batch needs at least one pair")
    seqs = [sequence(p) for p in pairs]
    T = max(len(s) for s in seqs) - 1
    ids, targets = [], []  # row by row as lists, one tensor each at the end (fast for 10,000 rows)
    for pair, seq in zip(pairs, seqs):
        pad = T - (len(seq) - 1)
        start = len(pair.input)  # first position whose target is an output byte
        ids.append(seq[:-1] + [PAD] * pad)
        targets.append([IGNORE] * start + seq[start + 1:] + [IGNORE] * pad)
    ids, targets = torch.tensor(ids, dtype=torch.long), torch.tensor(targets, dtype=torch.long)
    return Batch(ids, targets)
