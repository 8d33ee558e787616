"""Byte-pair encoding: tokens learned from bytes, so a common run of bytes becomes one token.

BPE starts from the 256 byte values and repeats one rule: count every adjacent pair of tokens in
the training text, and make the most frequent pair a new token (ids 256, 257, … in that order).
Encoding applies the learned merges in the order they were learned; decoding joins each token's
bytes. Any byte string round-trips exactly, UTF-8 or not: every byte is a token to begin with.

Choices, each because it is what the learner checks by hand:
- ties: among pairs of equal count, the smallest (left id, right id) wins, so training is the same
  on every run and machine (a dict's or a heap's order would otherwise decide);
- overlaps: a pair is merged left to right, so `aaa` with (a, a) becomes [aa, a];
- pre-tokenizer (optional, `pattern="gpt2"`): the text is cut into chunks first (words with their
  leading space, numbers, punctuation, whitespace; GPT-2's pattern) and no token crosses a chunk;
- special tokens: byte strings that always encode to their own id (after the merges' ids), never
  split by merges and never part of training.

Training is fast because it never recounts: each position of the text sits in a linked list, each
pair knows where it occurs, and a merge updates only the counts of the pairs around the positions it
touches (a heap finds the most frequent pair). The plain loop recounts every pair after every merge.
"""
from __future__ import annotations

import heapq
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from .files import atomic_write

FORMAT = "minitf-bpe 1"
PATTERNS = ("none", "gpt2")

# GPT-2's pre-tokenizer (OpenAI's encoder.py), with \p{L} and \p{N} written out below
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


class BPEError(ValueError):
    """A tokenizer file or argument that cannot be used: the message says which file, which line
    and what is wrong."""


def _category_class(prefix: str) -> str:
    """A regex character class of every code point whose Unicode category starts with `prefix`
    (Python's `re` has no \\p{…}; the `regex` package would, as one more dependency)."""
    ranges, start, last = [], None, None
    for cp in range(0x110000):
        if unicodedata.category(chr(cp)).startswith(prefix):
            if start is None:
                start = cp
            last = cp
        elif start is not None:
            ranges.append((start, last))
            start = None
    if start is not None:
        ranges.append((start, last))
    return "".join(re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}"
                   for a, b in ranges)


_COMPILED: dict[str, re.Pattern] = {}


def gpt2_pattern() -> re.Pattern:
    """GPT-2's pattern compiled for Python's `re` (built once: about a second)."""
    if "gpt2" not in _COMPILED:
        letters, numbers = _category_class("L"), _category_class("N")
        source = (GPT2_PATTERN.replace(r"[^\s\p{L}\p{N}]", rf"[^\s{letters}{numbers}]")
                  .replace(r"\p{L}", f"[{letters}]").replace(r"\p{N}", f"[{numbers}]"))
        _COMPILED["gpt2"] = re.compile(source)
    return _COMPILED["gpt2"]


def pre_tokenize(data: bytes, pattern: str = "gpt2") -> list[bytes]:
    """Cut bytes into the chunks no token crosses; the chunks joined are `data` again.

    Bytes that are not valid UTF-8 pass through as lone surrogates (Python's "surrogateescape"),
    which the pattern treats as punctuation, so every byte string is cut and nothing is lost."""
    if pattern == "none":
        return [data] if data else []
    if pattern != "gpt2":
        raise BPEError(f"unknown pre-tokenizer {pattern!r}; choose from {', '.join(PATTERNS)}")
    text = data.decode("utf-8", errors="surrogateescape")
    return [m.encode("utf-8", errors="surrogateescape") for m in gpt2_pattern().findall(text)]


@dataclass
class BPE:
    """A trained tokenizer: ids 0–255 are bytes, 256 + i is merges[i], then the special tokens."""
    merges: list[tuple[int, int]] = field(default_factory=list)
    pattern: str = "none"
    special: list[bytes] = field(default_factory=list)

    def __post_init__(self):
        if self.pattern not in PATTERNS:
            raise BPEError(f"unknown pre-tokenizer {self.pattern!r}; choose from {', '.join(PATTERNS)}")
        self.merges = [(int(a), int(b)) for a, b in self.merges]
        self.special = [bytes(s) for s in self.special]
        vocab = [bytes([i]) for i in range(256)]
        for i, (a, b) in enumerate(self.merges):
            if not (0 <= a < 256 + i and 0 <= b < 256 + i):
                raise BPEError(f"merge {i} ({a}, {b}) names a token not made before it")
            vocab.append(vocab[a] + vocab[b])
        if len(set(self.special)) != len(self.special) or b"" in self.special:
            raise BPEError("special tokens must be distinct and non-empty")
        self.vocab = vocab + list(self.special)                       # id -> its bytes
        self.ranks = {pair: 256 + i for i, pair in enumerate(self.merges)}  # pair -> the id it makes
        self.special_ids = {s: len(vocab) + j for j, s in enumerate(self.special)}
        self._split = (re.compile(b"(" + b"|".join(re.escape(s) for s in
                                                  sorted(self.special, key=len, reverse=True)) + b")")
                       if self.special else None)
        self._cache: dict[bytes, list[int]] = {}

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def token_lengths(self) -> list[int]:
        """How many bytes each id stands for: what turns nats per token into nats per byte."""
        return [len(v) for v in self.vocab]

    # --- encode and decode -----------------------------------------------------------------------

    def encode(self, data: bytes | str) -> list[int]:
        """Bytes (a str is UTF-8 encoded) to ids: special tokens first, then each chunk's merges."""
        data = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        pieces = self._split.split(data) if self._split else [data]
        ids: list[int] = []
        for k, piece in enumerate(pieces):
            if k % 2:  # re.split with a group: the odd pieces are the special tokens matched
                ids.append(self.special_ids[piece])
                continue
            for chunk in pre_tokenize(piece, self.pattern):
                ids.extend(self._encode_chunk(chunk))
        return ids

    def _encode_chunk(self, chunk: bytes) -> list[int]:
        if self.pattern != "none" and chunk in self._cache:
            return self._cache[chunk]
        ids = apply_merges(list(chunk), self.ranks)
        if self.pattern != "none" and len(self._cache) < 1_000_000:
            self._cache[chunk] = ids
        return ids

    def decode(self, ids) -> bytes:
        """Ids to bytes, exactly (the bytes need not be valid UTF-8: decode them to str yourself,
        e.g. with errors="replace", where a token ends inside a character)."""
        try:
            return b"".join(self.vocab[int(i)] for i in ids)
        except IndexError:
            bad = next(int(i) for i in ids if not 0 <= int(i) < len(self.vocab))
            raise BPEError(f"id {bad} is not in this tokenizer's vocabulary of {len(self.vocab)}") from None

    # --- save and load ---------------------------------------------------------------------------

    def to_dict(self) -> dict:
        """Plain data (for a checkpoint's metadata): the pattern, the special tokens in hex, the merges."""
        return {"format": FORMAT, "pattern": self.pattern, "special": [s.hex() for s in self.special],
                "merges": [list(m) for m in self.merges]}

    @classmethod
    def from_dict(cls, d: dict) -> "BPE":
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise BPEError(f"not a minitf BPE tokenizer (no format {FORMAT!r})")
        return cls([tuple(m) for m in d["merges"]], d["pattern"], [bytes.fromhex(s) for s in d["special"]])

    def save(self, path, overwrite: bool = False) -> Path:
        """A text file: a header, the special tokens, then one line per merge with the token it
        makes (id, left id, right id, the token's bytes in hex), so the vocabulary is readable."""
        lines = [FORMAT, f"pattern {self.pattern}"]
        lines += [f"special {s.hex()}" for s in self.special]
        lines += [f"merge {256 + i} {a} {b} {self.vocab[256 + i].hex()}"
                  for i, (a, b) in enumerate(self.merges)]
        return atomic_write(path, lambda tmp: Path(tmp).write_text("\n".join(lines) + "\n"),
                            overwrite=overwrite)

    @classmethod
    def load(cls, path) -> "BPE":
        """Read `save`'s file back; a bad line raises BPEError naming the file, the line and why."""
        path = Path(path)
        if not path.is_file():
            raise BPEError(f"{path}: no such file")
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        if not lines or lines[0].strip() != FORMAT:
            raise BPEError(f"{path}:1: not a minitf BPE file (its first line must be {FORMAT!r})")
        pattern, special, merges, vocab = "none", [], [], [bytes([i]) for i in range(256)]
        for number, line in enumerate(lines[1:], start=2):
            words = line.split()
            if not words or line.startswith("#"):
                continue
            where = f"{path}:{number}"
            if words[0] == "pattern" and len(words) == 2:
                if words[1] not in PATTERNS:
                    raise BPEError(f"{where}: unknown pre-tokenizer {words[1]!r}; "
                                   f"choose from {', '.join(PATTERNS)}")
                pattern = words[1]
            elif words[0] == "special" and len(words) == 2:
                try:
                    special.append(bytes.fromhex(words[1]))
                except ValueError:
                    raise BPEError(f"{where}: special token {words[1]!r} is not hex bytes") from None
            elif words[0] == "merge" and len(words) == 5:
                try:
                    new, a, b, token = int(words[1]), int(words[2]), int(words[3]), bytes.fromhex(words[4])
                except ValueError:
                    raise BPEError(f"{where}: a merge line is `merge ID LEFT RIGHT HEX`, got {line!r}") from None
                if new != len(vocab):
                    raise BPEError(f"{where}: merge makes id {new}, but the next id is {len(vocab)}")
                if not (0 <= a < new and 0 <= b < new):
                    raise BPEError(f"{where}: merge {new} joins ids {a} and {b}, not all made before it")
                if vocab[a] + vocab[b] != token:
                    raise BPEError(f"{where}: token {new} is {token.hex()}, but ids {a} and {b} "
                                   f"join to {(vocab[a] + vocab[b]).hex()}")
                vocab.append(token)
                merges.append((a, b))
            else:
                raise BPEError(f"{where}: expected `pattern NAME`, `special HEX` or "
                               f"`merge ID LEFT RIGHT HEX`, got {line!r}")
        try:
            return cls(merges, pattern, special)
        except BPEError as e:
            raise BPEError(f"{path}: {e}") from None

    def __repr__(self) -> str:
        return (f"BPE({self.vocab_size:,} tokens: 256 bytes, {len(self.merges):,} merges, "
                f"{len(self.special)} special; pre-tokenizer {self.pattern})")


def count_pairs(ids) -> dict[tuple[int, int], int]:
    """{(a, b): how often b follows a} over every adjacent pair, overlaps included (`aaa` holds
    (a, a) twice): the counting step of the plain training loop, which `learn_merges` keeps up to
    date instead of recounting."""
    counts: dict[tuple[int, int], int] = {}
    for pair in zip(ids, ids[1:]):
        counts[pair] = counts.get(pair, 0) + 1
    return counts


def apply_merges(ids: list[int], ranks: dict[tuple[int, int], int]) -> list[int]:
    """Merge a sequence as training did: the earliest-learned pair first, each left to right.

    A heap of (rank, position) does it in O(n log n): a merge can only create pairs learned after
    it, so popping the lowest rank applies the merges in their order, each left to right."""
    n = len(ids)
    if n < 2:
        return list(ids)
    ids = list(ids)
    nxt = list(range(1, n + 1))
    prv = list(range(-1, n - 1))
    heap = [(ranks[(ids[i], ids[i + 1])], i) for i in range(n - 1) if (ids[i], ids[i + 1]) in ranks]
    heapq.heapify(heap)
    alive = [True] * n
    while heap:
        rank, i = heapq.heappop(heap)
        j = nxt[i]
        if not alive[i] or j >= n or ranks.get((ids[i], ids[j])) != rank:
            continue  # stale: this position was merged away or its pair changed
        ids[i], alive[j] = rank, False
        k = nxt[j]
        nxt[i] = k
        if k < n:
            prv[k] = i
            r = ranks.get((rank, ids[k]))
            if r is not None:
                heapq.heappush(heap, (r, i))
        h = prv[i]
        if h >= 0:
            r = ranks.get((ids[h], rank))
            if r is not None:
                heapq.heappush(heap, (r, h))
    return [ids[i] for i in range(n) if alive[i]]


def train_bpe(data: bytes | str, vocab_size: int, pattern: str = "none",
              special: list[bytes] | tuple = ()) -> BPE:
    """Learn vocab_size − 256 − len(special) merges from `data` (see the module's docstring).

    Stops early if no pair occurs twice (the text is all merged). The special tokens are cut out
    of the text first: no merge learns from them or across them."""
    data = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    special = [s.encode("utf-8") if isinstance(s, str) else bytes(s) for s in special]
    n_merges = vocab_size - 256 - len(special)
    if n_merges < 0:
        raise BPEError(f"vocab_size {vocab_size} is less than the 256 bytes and "
                       f"{len(special)} special tokens it must hold")
    BPE([], pattern, special)  # checks the pattern and the special tokens
    pieces = [data]
    if special:
        splitter = re.compile(b"|".join(re.escape(s) for s in sorted(special, key=len, reverse=True)))
        pieces = splitter.split(data)
    counts: dict[bytes, int] = {}  # each distinct chunk once, with how often it occurs
    for piece in pieces:
        for chunk in pre_tokenize(piece, pattern):
            counts[chunk] = counts.get(chunk, 0) + 1
    return BPE(learn_merges(counts, n_merges), pattern, special)


def learn_merges(chunks: dict[bytes, int], n_merges: int) -> list[tuple[int, int]]:
    """The merges of `chunks` ({chunk: how often it occurs}), with counts kept up to date.

    Every position of every chunk is one node of a linked list (ids, next, previous); `where`
    lists each pair's positions (a position that no longer holds the pair is skipped when the pair
    is merged) and `count` its weighted count. Merging a pair visits only its own
    positions and fixes the counts of the pairs just left and right of each."""
    ids, nxt, prv, weight = [], [], [], []
    for chunk, w in chunks.items():
        start = len(ids)
        for k, b in enumerate(chunk):
            ids.append(b)
            weight.append(w)
            prv.append(start + k - 1 if k else -1)
            nxt.append(start + k + 1 if k + 1 < len(chunk) else -1)
    count: dict[tuple[int, int], int] = {}
    where: dict[tuple[int, int], list[int]] = {}  # may hold stale positions: checked when used
    for i, j in enumerate(nxt):
        if j >= 0:
            pair = (ids[i], ids[j])
            count[pair] = count.get(pair, 0) + weight[i]
            where.setdefault(pair, []).append(i)
    heap = [(-c, pair) for pair, c in count.items()]
    heapq.heapify(heap)
    changed: set[tuple[int, int]] = set()

    def add(pair, i, w):
        count[pair] = count.get(pair, 0) + w
        where.setdefault(pair, []).append(i)
        changed.add(pair)

    def remove(pair, i, w):
        if pair == merging:
            return  # the pair being merged: its every occurrence goes
        count[pair] -= w  # its position stays listed in `where`, and is skipped when it no longer holds it
        changed.add(pair)

    merges, merging = [], None
    while len(merges) < n_merges and heap:
        negative, pair = heapq.heappop(heap)
        if count.get(pair, 0) != -negative:
            continue  # stale entry: the pair's count has changed since it was pushed
        if -negative < 2:
            break  # no pair occurs twice: nothing left worth a token
        new = 256 + len(merges)
        merges.append(pair)
        merging = a, b = pair
        for i in sorted(set(where.pop(pair))):  # left to right: in `aaa`, (a, a) merges once
            j = nxt[i]
            if ids[i] != a or j < 0 or ids[j] != b:
                continue  # used up by the occurrence just before it, or no longer this pair
            w = weight[i]
            h, k = prv[i], nxt[j]
            if h >= 0:
                remove((ids[h], a), h, w)
            if k >= 0:
                remove((b, ids[k]), j, w)
            ids[i], nxt[i], ids[j], nxt[j], prv[j] = new, k, -1, -1, -1
            if k >= 0:
                prv[k] = i
                add((new, ids[k]), i, w)
            if h >= 0:
                add((ids[h], new), h, w)
        del count[pair]
        for p in changed:
            c = count.get(p, 0)
            if c > 0:
                heapq.heappush(heap, (-c, p))
            else:
                count.pop(p, None)
                where.pop(p, None)
        changed.clear()
    return merges
