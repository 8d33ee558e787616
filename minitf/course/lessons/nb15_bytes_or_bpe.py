"""Notebook 15's exercises: byte-pair encoding written by the learner, piece by piece, each checked
against minitf.core.bpe (the fast implementation) with its typical slips named.

`count_pairs`: every adjacent pair and how often it occurs (overlaps too: `aaa` holds (a, a) twice).
`merge`: one pair replaced by its new id everywhere, left to right (`aaa` → [aa, a]).
`train_merges`: the loop that learns merges: count, take the most frequent pair (a tie: the smallest
pair), merge it, until n merges or no pair occurs twice.
`encode`: special tokens cut out first, then the merges in the order they were learned.
`decode`: ids back to bytes, exactly: bytes, not text (a token may end inside a character).
"""
from __future__ import annotations

from ...core.bpe import BPE, apply_merges, count_pairs, learn_merges, train_bpe
from ..declaration import Exercise, refused


class Ids:
    """A list of ids (or of pairs) compared as one result, not one result per entry; shown as the list."""

    def __init__(self, items):
        self.items = tuple(items)

    def __eq__(self, other) -> bool:
        return isinstance(other, Ids) and self.items == other.items

    def __hash__(self) -> int:
        return hash(self.items)

    def __repr__(self) -> str:
        return repr(list(self.items))


def as_one(result):
    """The outcome compared: a list or tuple becomes one Ids; anything else stays (and is reported)."""
    return Ids(tuple(result)) if isinstance(result, (list, tuple)) else result


def _slips(*variants) -> tuple:
    """Recognisers, one per (name, result, words) variant: yours equal to its result (an Ids, a dict
    or bytes) gets its words, under its name (the diagnosis)."""
    def one(name, result, words):
        def recognise(got, expected):
            return words if result == got and result != expected else None
        recognise.__name__ = name
        return recognise
    return tuple(one(*v) for v in variants)


# --- count_pairs ------------------------------------------------------------------------------------

COUNT_CASES = [[1, 2, 3, 1, 2], [97, 97, 97], [7], [], [104, 105, 104, 105, 104, 33, 104, 105]]


def count_pairs_reference(ids):
    return count_pairs(list(ids))


def _count_slips(ids):
    non_overlapping, i = {}, 0
    while i + 1 < len(ids):
        pair = (ids[i], ids[i + 1])
        non_overlapping[pair] = non_overlapping.get(pair, 0) + 1
        i += 2 if ids[i] == ids[i + 1] else 1
    wrapped = count_pairs_reference(list(ids) + list(ids[:1])) if len(ids) > 1 else {}
    return _slips(
        ("counted_without_overlaps", non_overlapping, "yours counts (a, a) in `aaa` once, as bytes.count or a merge would see it; "
                          "the counting step counts every adjacent pair, overlaps too: positions 0-1 and "
                          "1-2 of `aaa` are both (a, a), so its count is 2 (the merge is where they "
                          "compete)"),
        ("counted_once_each", {p: 1 for p in count_pairs_reference(ids)}, "yours gives every pair the count 1: count how "
                                                      "often each occurs (counts[pair] = counts.get(pair, 0) + 1)"),
        ("wrapped_around", wrapped, "yours also pairs the last id with the first: the sequence is a "
                                    "line, not a circle (zip(ids, ids[1:]))"))


# --- merge --------------------------------------------------------------------------------------------

MERGE_CASES = [([1, 2, 3, 1, 2], (1, 2), 256), ([97, 97, 97], (97, 97), 300), ([97, 97, 97, 97], (97, 97), 256),
               ([5, 6, 5, 6, 7], (6, 7), 256), ([1, 2], (2, 1), 256), ([], (1, 2), 256),
               ([3, 1, 2, 1, 2, 4, 1], (1, 2), 999)]


def merge_reference(ids, pair, new_id):
    return apply_merges(list(ids), {tuple(pair): new_id})


def _merge_slips(ids, pair, new_id):
    a, b = pair
    overlapping = []  # every position that starts the pair becomes the new id, shared halves too
    for i, x in enumerate(ids):
        starts = i + 1 < len(ids) and (x, ids[i + 1]) == (a, b)
        ended = i > 0 and (ids[i - 1], x) == (a, b)
        if starts:
            overlapping.append(new_id)
        elif not ended:
            overlapping.append(x)
    from_right = merge_reference(list(ids)[::-1], (b, a), new_id)[::-1]
    right = merge_reference(ids, pair, new_id)
    first_only, i = list(ids), 0
    while i + 1 < len(first_only):
        if (first_only[i], first_only[i + 1]) == (a, b):
            first_only[i:i + 2] = [new_id]
            break
        i += 1
    kept_second = []
    for i, x in enumerate(ids):
        kept_second.append(new_id if i + 1 < len(ids) and (x, ids[i + 1]) == (a, b) else x)
    return _slips(
        ("merged_overlaps", as_one(overlapping), "yours merges overlapping pairs: in `aaa`, (a, a) starts at 0 and at 1, "
                              "but they share the middle a, and once 0-1 is merged that a is used up. "
                              "Go left to right and skip past both halves of a merged pair (i += 2)"),
        ("merged_from_the_right", as_one(from_right), "yours merges from the right: `aaa` becomes [a, aa]; training and "
                             "encoding go left to right, so it must be [aa, a]"),
        ("merged_once", as_one(first_only), "yours merges only the first occurrence: replace the pair everywhere"),
        ("kept_the_second_half", as_one(kept_second), "yours keeps the pair's second half after the new id: the pair becomes "
                              "one token, both halves are used up (skip ahead by 2)"),
        ("dropped_the_last_id", as_one(right[:-1]) if right and right[-1] == ids[-1] else None,
         "yours drops the last id: the loop must also copy the last id when it does not start a pair "
         "(`while i < len(ids)`, checking `i + 1 < len(ids)` before reading ids[i + 1])"))


# --- train_merges ----------------------------------------------------------------------------------------

TRAIN_CASES = [(b"aaabdaaabac", 3), (b"cdcdabab", 1), (b"cdcdabab", 4), (b"aaaa", 3),
               (b"the cat sat on the mat; the hat", 8), (b"x", 2)]


def train_merges_reference(data, n_merges):
    return train_bpe(bytes(data), 256 + n_merges).merges


def _plain_train(data, n_merges, *, choose=None, stop=True, new_id=None, recount=True):
    """The training loop with one slip switched on (none: the right loop)."""
    ids, merges = list(data), []
    counts = count_pairs_reference(ids)
    for n in range(n_merges):
        if recount:
            counts = count_pairs_reference(ids)
        if not counts:
            break
        pair = choose(counts) if choose else min(counts, key=lambda p: (-counts[p], p))
        if stop and counts[pair] < 2:
            break
        merges.append(pair)
        ids = merge_reference(ids, pair, 256 + n if new_id is None else new_id)
        if not recount:
            counts.pop(pair, None)
    return merges


def _train_slips(data, n_merges):
    first_seen = lambda counts: max(counts, key=counts.get)  # the first of equal counts, in text order
    largest = lambda counts: max(counts, key=lambda p: (counts[p], p))
    return _slips(
        ("tie_broken_by_order", as_one(_plain_train(data, n_merges, choose=first_seen)),
         "yours breaks a tie by which pair came first in the text (max over a dict keeps the first "
         "of equal counts): that depends on the text's order and on how the counts were stored, so "
         "two programs learn different merges from the same text. Break ties by the pair itself: "
         "the smallest, min(counts, key=lambda p: (-counts[p], p))"),
        ("tie_to_the_largest", as_one(_plain_train(data, n_merges, choose=largest)),
         "yours breaks a tie by the largest pair: minitf takes the smallest among the most frequent, "
         "min(counts, key=lambda p: (-counts[p], p))"),
        ("merged_single_pairs", as_one(_plain_train(data, n_merges, stop=False)),
         "yours goes on merging pairs that occur only once: stop when the most frequent pair occurs "
         "fewer than 2 times (a token for one occurrence saves nothing)"),
        ("one_new_id", as_one(_plain_train(data, n_merges, new_id=256)),
         "yours gives every merge the id 256: merge n makes id 256 + n, a new token each time"),
        ("counted_once", as_one(_plain_train(data, n_merges, recount=False)),
         "yours counts the pairs once, before the loop: a merge changes the pairs around it (in "
         "`abab`, merging (a, b) makes (256, 256) and removes (b, a)), so count again after each merge"))


# --- encode and decode -------------------------------------------------------------------------------------

# merges learned on a line of Shakespeare, and one special token after them (id 256 + len(merges))
_LINE = b"To be, or not to be, that is the question: whether 'tis nobler in the mind to suffer"


def _coding_setup():
    merges = train_bpe(_LINE, 256 + 12).merges
    special = {b"<|end|>": 256 + len(merges)}
    return merges, special


def encode_cases():
    merges, special = _coding_setup()
    return [(b"to be", merges, special), (b"To be, or not to be", merges, special),
            (b"the end<|end|>to be<|end|>", merges, special), (b"", merges, special),
            ("né à".encode(), merges, special), (b"aaa", [(97, 97)], {b"<s>": 257})]


def encode_reference(data, merges, special):
    tokenizer = BPE(list(merges), "none", list(special))
    if any(tokenizer.special_ids[s] != i for s, i in special.items()):
        raise ValueError("special ids must follow the merges' ids, in order")
    return tokenizer.encode(bytes(data))


def _encode_slips(data, merges, special):
    ranks = {tuple(p): 256 + n for n, p in enumerate(merges)}
    reversed_order = list(data)
    for n in reversed(range(len(merges))):
        reversed_order = merge_reference(reversed_order, tuple(merges[n]), 256 + n)
    return _slips(
        ("special_split", as_one(apply_merges(list(data), ranks)),
         "yours runs the merges over the special token's bytes, so `<|end|>` comes out as pieces "
         "(and a merge may join its < to the byte before it): cut each special token out first "
         "(data.split(token, 1)), encode the pieces around it, and put its id between them"),
        ("merges_out_of_order", as_one(reversed_order),
         "yours applies the merges in the wrong order: apply them in the order they were learned "
         "(merge n may join tokens that earlier merges made)"))


def decode_cases():
    merges, special = _coding_setup()
    encoded = encode_reference(b"To be<|end|>", merges, special)
    e_acute = [(0xC3, 0xA9)]  # é is two bytes; a token may hold the first alone
    return [(encoded, merges, special), ([], merges, special),
            ([110, 0xC3], e_acute, {}), ([256, 0xC3], e_acute, {b"<s>": 257}),
            ([0xFF, 0xFE, 257], e_acute, {b"<s>": 257})]


def decode_reference(ids, merges, special):
    return BPE(list(merges), "none", list(special)).decode(ids)


def _decode_slips(ids, merges, special):
    right = decode_reference(ids, merges, special)
    vocab = [bytes([i]) for i in range(256)]
    for a, b in merges:
        vocab.append(vocab[b] + vocab[a])
    swapped = b"".join((vocab + list(special))[i] for i in ids) if all(i < len(vocab) + len(special) for i in ids) else None

    def as_text(got, expected):
        if isinstance(got, str):
            return ("yours returns text (str); decode returns bytes: a token may end inside a character "
                    "(é is the two bytes C3 A9, and a token may hold C3 alone), and bytes need not be "
                    "UTF-8 at all. Join the tokens' bytes; turn the whole into text only at the end, "
                    "with .decode('utf-8', errors='replace')")
        return None
    as_text.__name__ = "decoded_to_text"
    return (as_text, *_slips(
        ("halves_swapped", swapped if swapped != right else None,
         "yours joins a merged token's halves the wrong way round: token 256 + n is "
         "vocab[a] + vocab[b] for merges[n] = (a, b)")))


# --- the Solutions, as the notebook's Solution blocks print them ------------------------------------

def my_count_pairs(ids):
    counts = {}
    for pair in zip(ids, ids[1:]):          # every adjacent pair: `aaa` holds (a, a) twice
        counts[pair] = counts.get(pair, 0) + 1
    return counts


def my_merge(ids, pair, new_id):
    out, i = [], 0
    while i < len(ids):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
            out.append(new_id)              # the pair becomes one token …
            i += 2                          # … and both its halves are used up
        else:
            out.append(ids[i])
            i += 1
    return out


def my_train_merges(data, n_merges):
    ids, merges = list(data), []
    for n in range(n_merges):
        counts = my_count_pairs(ids)        # counted again after every merge
        if not counts:
            break
        pair = min(counts, key=lambda p: (-counts[p], p))   # most frequent; a tie: the smallest pair
        if counts[pair] < 2:
            break                           # no pair repeats: a token would save nothing
        merges.append(pair)
        ids = my_merge(ids, pair, 256 + n)
    return merges


def my_encode(data, merges, special):
    for token, token_id in special.items():     # a special token is cut out first, never merged
        if token in data:
            before, after = data.split(token, 1)
            return my_encode(before, merges, special) + [token_id] + my_encode(after, merges, special)
    ids = list(data)
    for n, pair in enumerate(merges):           # in the order they were learned
        ids = my_merge(ids, pair, 256 + n)
    return ids


def my_decode(ids, merges, special):
    vocab = {i: bytes([i]) for i in range(256)}
    for n, (a, b) in enumerate(merges):
        vocab[256 + n] = vocab[a] + vocab[b]    # a merged token is its halves' bytes
    for token, token_id in special.items():
        vocab[token_id] = token
    return b"".join(vocab[i] for i in ids)      # bytes: a token may end inside a character


_OWN = ("dicts, lists, zip, min and max, slicing and bytes' own methods (split, join, startswith) are "
        "fine: minitf.core.bpe is the answer itself")

EXERCISES = [
    Exercise(name="count_pairs", notebook="15",
             teaches="BPE's counting step: every adjacent pair and how often it occurs",
             difficulty=1, minutes=5, solution=my_count_pairs, reference=count_pairs_reference,
             cases=lambda: [(list(c),) for c in COUNT_CASES],
             hint="a dict {(a, b): count} over zip(ids, ids[1:]): every adjacent pair, overlapping ones too",
             options={"diagnoses": _count_slips},
             library=refused(count_pairs, learn_merges, train_bpe), own_work=_OWN),
    Exercise(name="merge", notebook="15",
             teaches="one merge: a pair becomes its new id everywhere, left to right",
             difficulty=2, minutes=10, solution=my_merge, reference=merge_reference,
             cases=lambda: [(list(i), p, n) for i, p, n in MERGE_CASES],
             hint="walk left to right; where ids[i], ids[i + 1] is the pair, append new_id and skip both "
             "(i += 2), else append ids[i] (i += 1); `aaa` with (a, a) becomes [new_id, a]",
             outcome=as_one, options={"diagnoses": _merge_slips},
             library=refused(apply_merges, learn_merges, train_bpe), own_work=_OWN),
    Exercise(name="train_merges", notebook="15",
             teaches="the training loop: count, merge the most frequent pair, repeat",
             difficulty=3, minutes=15, solution=my_train_merges, reference=train_merges_reference,
             cases=lambda: list(TRAIN_CASES),
             hint="ids = list(data); n_merges times: counts = my_count_pairs(ids); the pair with the "
             "highest count, the smallest pair among equal counts; stop if it occurs fewer than 2 "
             "times; else record it and ids = my_merge(ids, pair, 256 + n)",
             outcome=as_one, options={"diagnoses": _train_slips},
             library=refused(train_bpe, learn_merges, apply_merges, count_pairs), own_work=_OWN),
    Exercise(name="encode", notebook="15",
             teaches="encoding: special tokens first, then the merges in the order learned",
             difficulty=2, minutes=10, solution=my_encode, reference=encode_reference,
             cases=encode_cases,
             hint="if a special token is in data: encode what is before it and after it, with its id "
             "between; else start from list(data) and apply merges[0], merges[1], … with my_merge "
             "(merge n makes 256 + n)",
             outcome=as_one, options={"diagnoses": _encode_slips},
             library=refused(apply_merges, BPE.encode), own_work=_OWN),
    Exercise(name="decode", notebook="15",
             teaches="decoding: ids back to the exact bytes, text or not",
             difficulty=1, minutes=5, solution=my_decode, reference=decode_reference,
             cases=decode_cases,
             hint="a table id → bytes: the 256 bytes, then vocab[256 + n] = vocab[a] + vocab[b] for each "
             "merge (a, b), then the special tokens at their ids; b''.join the ids' bytes (bytes, not "
             "str)",
             options={"diagnoses": _decode_slips},
             library=refused(BPE.decode), own_work=_OWN),
]
