"""minitf.core.bpe: the same merges as the plain loop, an exact round trip on every byte string,
special tokens never split, ties broken one way, and a saved tokenizer read back (or refused with
the file and line named)."""
import random

import pytest

from minitf.core.bpe import BPE, BPEError, apply_merges, pre_tokenize, train_bpe
from minitf.course.solutions import my_count_pairs, my_merge  # notebook 15's plain loop

SHAKESPEARE = "data/text/tinyshakespeare.txt"


def plain_merges(data: bytes, vocab_size: int, pattern: str = "none") -> list:
    """The reference: recount every pair after every merge; highest count, then smallest pair."""
    chunks = [list(c) for c in pre_tokenize(data, pattern)]
    merges = []
    for n in range(vocab_size - 256):
        counts = {}
        for c in chunks:
            for pair, k in my_count_pairs(c).items():
                counts[pair] = counts.get(pair, 0) + k
        if not counts:
            break
        pair = min(counts, key=lambda p: (-counts[p], p))
        if counts[pair] < 2:
            break
        merges.append(pair)
        chunks = [my_merge(c, pair, 256 + n) for c in chunks]
    return merges


def plain_encode(data: bytes, merges) -> list:
    """Encode by the lowest-ranked pair present, merged everywhere, until none is left."""
    ids, ranks = list(data), {p: 256 + i for i, p in enumerate(merges)}
    while len(ids) > 1:
        pair = min(set(zip(ids, ids[1:])), key=lambda p: ranks.get(p, float("inf")))
        if pair not in ranks:
            break
        ids = my_merge(ids, pair, ranks[pair])
    return ids


def corpora():
    raw = open(SHAKESPEARE, "rb").read()
    rng = random.Random(0)
    for trial in range(12):
        if trial % 3 == 0:  # few letters: many ties and overlapping runs
            yield bytes(rng.choice(b"ab ") for _ in range(rng.randrange(2, 300)))
        else:
            start = rng.randrange(len(raw) - 4000)
            yield raw[start:start + rng.randrange(20, 4000)]


@pytest.mark.parametrize("pattern", ["none", "gpt2"])
def test_the_same_merges_as_the_plain_loop_on_small_corpora(pattern):
    for data in corpora():
        tokenizer = train_bpe(data, 256 + 60, pattern)
        assert tokenizer.merges == plain_merges(data, 256 + 60, pattern)
        if pattern == "none":
            assert tokenizer.encode(data) == plain_encode(data, tokenizer.merges)


def random_bytes(rng: random.Random) -> bytes:
    """Random byte strings: any bytes (mostly not UTF-8), runs, UTF-8 text cut anywhere."""
    kind = rng.randrange(4)
    n = rng.randrange(0, 200)
    if kind == 0:
        return bytes(rng.randrange(256) for _ in range(n))
    if kind == 1:
        return bytes(rng.choice(b"aab\x80\xff ") for _ in range(n))
    text = "".join(rng.choice("the cat é ü 日本 42 ,.\n\t's😀") for _ in range(n)).encode()
    return text[rng.randrange(len(text) + 1):] if kind == 2 else text[:rng.randrange(len(text) + 1)]


@pytest.mark.parametrize("pattern", ["none", "gpt2"])
def test_every_byte_string_round_trips_exactly(pattern):
    rng = random.Random(1)
    training = b"".join(random_bytes(rng) for _ in range(200)) + open(SHAKESPEARE, "rb").read()[:20000]
    tokenizer = train_bpe(training, 512, pattern, special=[b"<|end|>"])
    invalid = 0
    for _ in range(1500):
        data = random_bytes(rng)
        if rng.random() < 0.2:
            data = data[:len(data) // 2] + b"<|end|>" + data[len(data) // 2:]
        ids = tokenizer.encode(data)
        assert tokenizer.decode(ids) == data
        assert all(0 <= i < tokenizer.vocab_size for i in ids)
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            invalid += 1
    assert invalid > 300  # the property was tried on many strings that are not UTF-8


def test_overlapping_pairs_merge_left_to_right():
    tokenizer = BPE([(97, 97)])
    assert tokenizer.encode(b"aaa") == [256, 97]
    assert tokenizer.encode(b"aaaa") == [256, 256]
    # (a, a) is counted twice in `aaa` (as the plain loop counts) but merges once there
    assert train_bpe(b"aaa", 257).merges == plain_merges(b"aaa", 257) == [(97, 97)]
    assert train_bpe(b"aaa", 257).encode(b"aaa") == [256, 97]
    assert train_bpe(b"aaaa.aaaa", 258).merges == plain_merges(b"aaaa.aaaa", 258) == [(97, 97), (256, 256)]
    # counts stay right through overlaps: "aaaaa" -> aa aa a, then (aa, aa) once, (aa, a) once
    assert train_bpe(b"aaaaa", 300).merges == [(97, 97)]
    assert plain_merges(b"aaaaa", 300) == [(97, 97)]


def test_ties_go_to_the_smallest_pair_whatever_the_order_of_the_text():
    # (a, b) and (c, d) both occur twice: (97, 98) < (99, 100) wins, in either order of the text
    assert train_bpe(b"cd1cd2ab3ab", 257).merges == [(97, 98)]
    assert train_bpe(b"ab1ab2cd3cd", 257).merges == [(97, 98)]
    tokenizers = {tuple(train_bpe(b"xy zw " * 3 + b"zw xy " * 3, 270, "gpt2").merges) for _ in range(3)}
    assert len(tokenizers) == 1


def test_special_tokens_are_never_split_or_learned_from():
    end = b"<|endoftext|>"
    data = (b"to be or not" + end) * 50
    tokenizer = train_bpe(data, 300, special=[end])  # stops early: the text is all merged
    special = tokenizer.special_ids[end]
    assert special == tokenizer.vocab_size - 1 == 256 + len(tokenizer.merges)
    assert tokenizer.vocab[-2] == b"to be or not"  # learned up to the special token, not across it
    assert all(b"<" not in token and b">" not in token for token in tokenizer.vocab[256:special])
    ids = tokenizer.encode(b"not" + end + end + b"<|end")
    assert ids.count(special) == 2 and tokenizer.decode(ids) == b"not" + end + end + b"<|end"
    with pytest.raises(BPEError, match="less than the 256 bytes and 1 special"):
        train_bpe(data, 256, special=[end])


def test_gpt2_pre_tokenizer_cuts_words_with_their_space():
    assert pre_tokenize(b"Hello, world! It's 2024  ok", "gpt2") == \
        [b"Hello", b",", b" world", b"!", b" It", b"'s", b" 2024", b" ", b" ok"]
    assert b"".join(pre_tokenize(b"caf\xc3\xa9 \xff\xfe x", "gpt2")) == b"caf\xc3\xa9 \xff\xfe x"
    assert pre_tokenize(b"caf\xc3\xa9 na\xc3\xafve", "gpt2") == [b"caf\xc3\xa9", b" na\xc3\xafve"]
    tokenizer = train_bpe(b"the cat the hat the bat " * 10, 290, "gpt2")
    assert all(b" " not in t[1:] for t in tokenizer.vocab)  # no token crosses a word's start


def test_apply_merges_is_the_plain_encoding_on_shakespeare():
    raw = open(SHAKESPEARE, "rb").read()[:30000]
    tokenizer = train_bpe(raw, 400)
    for start in range(0, 30000, 3000):
        piece = raw[start:start + 700]
        assert apply_merges(list(piece), tokenizer.ranks) == plain_encode(piece, tokenizer.merges)


def test_save_and_load_give_the_same_tokenizer(tmp_path):
    tokenizer = train_bpe(open(SHAKESPEARE, "rb").read()[:50000], 400, "gpt2", special=[b"<|end|>"])
    path = tokenizer.save(tmp_path / "t.bpe")
    loaded = BPE.load(path)
    assert loaded.merges == tokenizer.merges and loaded.special == tokenizer.special
    assert loaded.pattern == "gpt2" and loaded.vocab == tokenizer.vocab
    assert BPE.from_dict(tokenizer.to_dict()).vocab == tokenizer.vocab
    line = path.read_text().splitlines()[4]
    assert line.startswith("merge 257 ")  # one merge a line: its id, its pair, its bytes in hex
    with pytest.raises(FileExistsError):
        tokenizer.save(path)


@pytest.mark.parametrize("lines, message", [
    (["hello"], ":1: not a minitf BPE file"),
    (["minitf-bpe 1", "pattern gpt3"], ":2: unknown pre-tokenizer 'gpt3'"),
    (["minitf-bpe 1", "special zz"], ":2: special token 'zz' is not hex"),
    (["minitf-bpe 1", "merge 256 97 97 6161", "merge 258 97 97 6161"], ":3: merge makes id 258, but the next id is 257"),
    (["minitf-bpe 1", "merge 256 97 300 6161"], ":2: merge 256 joins ids 97 and 300"),
    (["minitf-bpe 1", "", "merge 256 97 98 6161"], ":3: token 256 is 6161, but ids 97 and 98 join to 6162"),
    (["minitf-bpe 1", "merge 256 97 x 6161"], ":2: a merge line is"),
    (["minitf-bpe 1", "vocab 5"], ":2: expected `pattern NAME`"),
])
def test_a_bad_file_is_refused_naming_the_file_and_line(tmp_path, lines, message):
    path = tmp_path / "bad.bpe"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(BPEError, match="bad.bpe" + message.replace("(", r"\(").replace(")", r"\)")):
        BPE.load(path)


def test_decode_refuses_an_id_outside_the_vocabulary():
    with pytest.raises(BPEError, match="id 300 is not in this tokenizer's vocabulary of 257"):
        BPE([(97, 98)]).decode([97, 300])


# --- the language model on BPE tokens: the text hook and the command line ---------------------------

def test_a_tokenized_text_scores_bits_per_byte_of_the_original_text(tmp_path):
    import math

    import torch

    from minitf import Config, Transformer
    from minitf.core.text import evaluate_text, read_text, train_tokenizer
    path = tmp_path / "s.txt"
    raw = open(SHAKESPEARE, "rb").read()[:60000]
    path.write_bytes(raw)
    tokenizer = train_tokenizer(path, "bpe:300")
    assert tokenizer.merges == train_bpe(raw[:54000], 300, "gpt2").merges  # the training split only
    text = read_text(path, 16, tokenizer=tokenizer)
    assert text.train.n_bytes == 54000 and text.val.n_bytes == 6000
    assert tokenizer.decode(text.val.data.tolist()) == raw[54000:]
    torch.manual_seed(0)
    model = Transformer(Config(vocab_size=300, d_model=8, n_heads=2, n_layers=1, max_len=16))
    metrics = evaluate_text(model, text.val)
    ids = text.val.data[:(len(text.val) - 1) // 16 * 16 + 1]
    scored = tokenizer.decode(ids[1:].tolist())  # the bytes of the target tokens
    assert metrics["bytes"] == len(scored) and metrics["tokens"] == len(ids) - 1
    assert math.isclose(metrics["loss"] * metrics["bytes"], metrics["nats_per_token"] * metrics["tokens"])
    assert math.isclose(metrics["bits_per_byte"], metrics["loss"] / math.log(2))


@pytest.mark.parametrize("spec", ["bpe", "bpe:abc", "bpe:256", "wordpiece:500", "bpe:300:gpt4"])
def test_a_bad_tokenizer_spec_is_refused(spec):
    from minitf.core.text import TextError, train_tokenizer
    with pytest.raises(TextError, match="tokenizer"):
        train_tokenizer(SHAKESPEARE, spec)


def test_train_eval_and_generate_on_bpe_tokens(tmp_path, capsys):
    import json

    from minitf import load
    from minitf.cli import main
    path = tmp_path / "s.txt"
    path.write_bytes(open(SHAKESPEARE, "rb").read()[:40000])
    out = tmp_path / "m.pt"
    assert main(["train", "--text", str(path), "--tokenizer", "bpe:320", "--context", "16",
                 "--d-model", "16", "--n-heads", "2", "--n-layers", "1", "--steps", "4",
                 "--no-progress", "--out", str(out)]) == 0
    model = load(out)
    assert model.config.vocab_size == 320 and model.metadata["tokenizer"]["pattern"] == "gpt2"
    capsys.readouterr()
    assert main(["eval", str(out), "--text", str(path)]) == 0
    scores = json.loads(capsys.readouterr().out)
    assert scores["bits_per_byte"] == model.metadata["val"]["bits_per_byte"] or \
        abs(scores["bits_per_byte"] - model.metadata["val"]["bits_per_byte"]) < 1e-3
    assert scores["bytes_per_token"] > 1.5 and "bigram" in scores["baselines_bits_per_byte"]
    assert main(["generate", str(out), "ROMEO:", "--max-new", "5", "--seed", "0"]) == 0
    assert capsys.readouterr().out.startswith("ROMEO:")
    assert main(["info", str(out)]) == 0
    assert "BPE(320 tokens: 256 bytes, 64 merges" in capsys.readouterr().out
    assert main(["train", "--tokenizer", "bpe:300", "--steps", "1", "--out", str(tmp_path / "p.pt")]) == 2
    assert "--tokenizer is for --text" in capsys.readouterr().err


# --- notebook 15's exercises: the slips their feedback names --------------------------------------------

def _count_without_overlaps(ids):
    counts, i = {}, 0
    while i + 1 < len(ids):
        pair = (ids[i], ids[i + 1])
        counts[pair] = counts.get(pair, 0) + 1
        i += 2 if ids[i] == ids[i + 1] else 1
    return counts


def _merge_overlapping(ids, pair, new_id):
    out = []
    for i, x in enumerate(ids):
        if i + 1 < len(ids) and (x, ids[i + 1]) == pair:
            out.append(new_id)
        elif not (i > 0 and (ids[i - 1], x) == pair):
            out.append(x)
    return out


def _merge_dropping_the_last(ids, pair, new_id):
    out, i = [], 0
    while i < len(ids) - 1:
        if (ids[i], ids[i + 1]) == pair:
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


def _train(tie_by_order=False, stop_at_one=True):
    """A learner's train_merges with one slip: ties broken by the text's order, or no stop at count 1."""
    def my_train_merges(data, n_merges):
        ids, merges = list(data), []
        for n in range(n_merges):
            counts = my_count_pairs(ids)
            if not counts:
                break
            pair = max(counts, key=counts.get) if tie_by_order else min(counts, key=lambda p: (-counts[p], p))
            if stop_at_one and counts[pair] < 2:
                break
            merges.append(pair)
            ids = my_merge(ids, pair, 256 + n)
        return merges
    return my_train_merges


def _encode_splitting_special(data, merges, special):
    ids = list(data)
    for n, pair in enumerate(merges):
        ids = my_merge(ids, pair, 256 + n)
    return ids


def _decode_to_text(ids, merges, special):
    from minitf.course.solutions import my_decode
    return my_decode(ids, merges, special).decode("utf-8", errors="replace")


def _decode_each_token(ids, merges, special):
    vocab = {i: bytes([i]) for i in range(256)}
    for n, (a, b) in enumerate(merges):
        vocab[256 + n] = vocab[a] + vocab[b]
    for token, i in special.items():
        vocab[i] = token
    return b"".join(vocab[i].decode("utf-8").encode("utf-8") for i in ids)


SLIPS = [  # notebook 15's slips: test_workbook's mistakes test runs them
    ("count_pairs", _count_without_overlaps, "counted_without_overlaps", "so its count is 2"),
    ("merge", _merge_overlapping, "merged_overlaps", "merges overlapping pairs"),
    ("merge", _merge_dropping_the_last, "dropped_the_last_id", "drops the last id"),
    ("train_merges", _train(tie_by_order=True), "tie_broken_by_order", "which pair came first in the text"),
    ("train_merges", _train(stop_at_one=False), "merged_single_pairs", "pairs that occur only once"),
    ("encode", _encode_splitting_special, "special_split", "cut each special token out first"),
    ("decode", _decode_to_text, "decoded_to_text", "decode returns bytes"),
    ("decode", _decode_each_token, "raised", "UnicodeDecodeError"),
]
