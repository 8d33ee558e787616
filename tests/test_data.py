"""Pairs files, generated tasks and batches."""
import base64

import pytest
import torch

import minitf
from minitf import DataError, Pair, make_batch, make_pairs, read_pairs, write_pairs
from minitf.core.tokens import EOS, IGNORE, TAB


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def write(tmp_path, lines, name="pairs.txt", newline="\n"):
    path = tmp_path / name
    path.write_bytes(newline.join(lines).encode() + newline.encode())
    return path


BAD_LINES = [
    ("not base64 at all!", "not valid Base64"),
    (b64(b"no tab here"), "no TAB"),
    (b64(b"a\tb\tc"), "2 TABs"),
    (b64(b"\tout"), "empty input"),
    (b64(b"in\t"), "empty output"),
    (b64(b"in\tou\nt"), "newline (the end marker) inside the output"),
]


@pytest.mark.parametrize("line,reason", BAD_LINES)
def test_strict_read_names_file_line_and_reason(tmp_path, line, reason):
    path = write(tmp_path, [b64(b"ab\tbc"), "", line])
    with pytest.raises(DataError) as err:
        read_pairs(path)
    assert err.value.line == 3 and reason in err.value.reason
    assert str(err.value).startswith(f"{path}:3: ")


def test_too_long_for_max_len(tmp_path):
    path = write(tmp_path, [b64(b"abcdef\tbcdefg")])
    assert read_pairs(path, max_len=13)  # 6 + 1 + 6 + 1 = 14 tokens; the model reads 13
    with pytest.raises(DataError, match="too long"):
        read_pairs(path, max_len=12)


def test_lenient_read_counts_every_skipped_line_by_reason(tmp_path):
    lines = [b64(b"ab\tbc")] + [line for line, _ in BAD_LINES] + ["", b64(b"x\ty")]
    pairs = read_pairs(write(tmp_path, lines, newline="\r\n"), strict=False)
    report = pairs.report  # one return type, strict or not: a list of pairs with its report
    assert pairs == [Pair(b"ab", b"bc"), Pair(b"x", b"y")] and isinstance(pairs, list)
    assert (report.lines, report.pairs, len(report.skipped)) == (8, 2, 6)
    assert [n for n, _ in report.skipped] == [2, 3, 4, 5, 6, 7]
    assert sum(report.reasons().values()) == 6
    assert "6 skipped" in str(report)


def test_crlf_and_blank_lines_are_fine(tmp_path):
    path = write(tmp_path, [b64(b"ab\tbc"), "", "  ", b64(b"q\tr")], newline="\r\n")
    assert read_pairs(path) == [Pair(b"ab", b"bc"), Pair(b"q", b"r")]


def test_shipped_data_is_clean_and_held_out():
    train, val = read_pairs("data/train.txt"), read_pairs("data/val.txt")
    assert (len(train), len(val)) == (450, 75)
    assert all(p.output == minitf.shift_bytes(p.input) for p in train + val)
    assert not {p.input for p in train} & {p.input for p in val}
    assert train == make_pairs("shift", 450, seed=0)  # the documented command reproduces them


def test_write_round_trips_and_never_clobbers(tmp_path):
    pairs = make_pairs("reverse", 20, seed=3)
    path = write_pairs(tmp_path / "out.txt", pairs)
    assert read_pairs(path) == pairs
    with pytest.raises(FileExistsError, match="overwrite=True"):
        write_pairs(path, pairs[:1])
    assert read_pairs(path) == pairs  # untouched
    write_pairs(path, pairs[:1], overwrite=True)
    assert read_pairs(path) == pairs[:1]
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]  # no temp file left behind


def test_write_refuses_an_unwritable_pair_before_touching_disk(tmp_path):
    with pytest.raises(ValueError, match="TAB inside the input"):
        write_pairs(tmp_path / "x.txt", [Pair(b"a", b"b"), Pair(b"a\tb", b"c")])
    assert not (tmp_path / "x.txt").exists()


@pytest.mark.parametrize("task,rule", [("shift", minitf.shift_bytes), ("copy", bytes),
                                       ("reverse", lambda b: b[::-1]), ("sort", lambda b: bytes(sorted(b)))])
def test_tasks(task, rule):
    pairs = make_pairs(task, 200, seed=1, min_len=2, max_len=5)
    assert len({p.input for p in pairs}) == 200
    assert all(2 <= len(p.input) <= 5 and p.output == rule(p.input) for p in pairs)
    assert make_pairs(task, 200, seed=1, min_len=2, max_len=5) == pairs


def test_repeats_make_inputs_with_repeated_bytes():
    def repeated(pairs):
        return sum(len(set(p.input)) < len(p.input) for p in pairs) / len(pairs)

    plain = make_pairs("shift", 1000, seed=4)
    mixed = make_pairs("shift", 1000, seed=4, repeats=0.5)
    assert repeated(plain) < 0.3 < 0.5 < repeated(mixed)
    assert all(p.output == minitf.shift_bytes(p.input) for p in mixed)
    with pytest.raises(ValueError, match="fraction"):
        make_pairs("shift", 10, repeats=1.5)


@pytest.mark.parametrize("task, n, seed, settings, digest", [
    ("shift", 500, 7, {"repeats": 0.33}, "ffde801611e71ec2"),
    ("reverse", 300, 11, {"min_len": 3, "max_len": 20, "repeats": 1.0}, "2162cc1552655902"),
    ("sort", 200, 2, {"alphabet": b"abcde", "max_len": 6, "exclude": True}, "c2b2cd3ad1f04496"),
    ("copy", 400, 0, {"min_len": 13, "max_len": 24, "repeats": 0.5}, "e20ce4a298c222d0"),
    ("shift", 20, 3, {"max_len": 2, "repeats": 0.9}, "5c61a5a92280c680"),
])
def test_the_pairs_drawn_are_those_the_stored_checkpoints_and_notebooks_were_made_with(
        task, n, seed, settings, digest):
    """The random stream is part of every stored result: these digests were taken from make_pairs
    as it drew them (one rng.choice per byte), so a faster draw must give the very same pairs."""
    import hashlib
    if settings.get("exclude"):
        settings = {**settings, "exclude": [p.input for p in make_pairs("sort", 50, 1, alphabet=b"abcde", max_len=6)]}
    lines = "\n".join(map(minitf.core.data.encode_line, make_pairs(task, n, seed, **settings)))
    assert hashlib.sha256(lines.encode()).hexdigest()[:16] == digest


def test_shift_wraps_tilde_to_space():
    assert minitf.shift_bytes(b"az~ ") == b"b{ !"


def test_exclude_and_impossible_requests():
    first = make_pairs("copy", 90, seed=0, min_len=1, max_len=1, alphabet=bytes(range(32, 127)))
    with pytest.raises(ValueError, match="distinct"):
        make_pairs("copy", 10, seed=1, min_len=1, max_len=1, exclude=[p.input for p in first])
    # excluded inputs that this alphabet and length range can never produce do not count
    assert len(make_pairs("copy", 5, seed=0, max_len=1, alphabet=b"abcde", exclude=[b"zz", b"q"])) == 5
    with pytest.raises(ValueError, match="unknown task"):
        make_pairs("add", 1)


def test_batch_masks_everything_but_output_and_eos():
    ids, targets = make_batch([Pair(b"ab", b"bc"), Pair(b"abcd", b"b")])
    # row 0: sequence a b TAB b c EOS; the model reads a b TAB b c and predicts b TAB b c EOS
    assert ids[0].tolist() == [97, 98, TAB, 98, 99, 0]
    assert targets[0].tolist() == [IGNORE, IGNORE, 98, 99, EOS, IGNORE]
    assert ids[1].tolist() == [97, 98, 99, 100, TAB, 98]
    assert targets[1].tolist() == [IGNORE, IGNORE, IGNORE, IGNORE, 98, EOS]
    assert ids.dtype == targets.dtype == torch.long
