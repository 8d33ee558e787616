"""Claims notebook 15 ("bytes or BPE?") makes in words, held to what its cells printed, to minitf's
BPE and to the stored comparison (minitf/experiments/stored/bpe.json, read by load_bpe)."""
import statistics as st

import pytest

from support import ROOT, markdown, numbers, printed
from minitf.core.bpe import train_bpe
from minitf.core.recipes import RECIPES
from minitf.course.lessons.nb15_bytes_or_bpe import count_pairs_reference
from minitf.experiments.results import load_bpe

NB = "15_bytes_or_bpe"


@pytest.fixture(scope="module")
def bpe():
    return load_bpe()


def said(stated, value, places):
    """A number a sentence states is `value` written to `places` decimals."""
    return abs(stated - value) <= 0.5 * 10 ** -places + 1e-9


def test_the_worked_example():
    out = printed(NB, 'data = b"aaabdaaabac"')
    data = b"aaabdaaabac"
    merges = train_bpe(data, 259).merges
    last = out.splitlines()[3]   # "3 merges:  5 tokens  aaab | d | aaab | a | c"
    assert numbers(last)[:2] == [3, 5] and [t.strip() for t in last.split("tokens")[1].split("|")] == \
        ["aaab", "d", "aaab", "a", "c"]
    assert numbers(out, after="merges learned:") == [n for pair in merges for n in pair] == [97, 97, 97, 98, 256, 257]
    assert len(data) == 11 and "eleven bytes `aaabdaaabac`" in markdown(NB)
    counts = count_pairs_reference(list(data))
    assert counts[(97, 97)] == 4 == max(counts.values()) and "`aa` (four times" in markdown(NB)
    # "Token 256 is `aa` = (97, 97); token 257 is `ab`; token 258 is (256, 257), `aaab`"
    assert numbers(markdown(NB), after="Token 256 is")[:6] == [*merges[0], 257, 258, *merges[2]]
    assert train_bpe(b"aaa", 257).encode(b"aaa") == [256, 97]  # "`aaa` becomes `aa` `a`"


def test_a_line_of_shakespeare_becomes_fewer_tokens_as_the_vocabulary_grows():
    out = printed(NB, "raw = open(")
    # "  512 tokens: 58 bytes -> 33 tokens  R|O|…": vocabulary, bytes, tokens
    rows = [numbers(line.split("tokens  ")[0]) for line in out.splitlines() if "->" in line]
    assert [r[0] for r in rows] == [512, 1024, 2048] and {r[1] for r in rows} == {58}
    assert rows[0][2] > rows[1][2] > rows[2][2] and "fewer tokens" in markdown(NB)


def test_the_answer_sentence(bpe):
    t, by = bpe.best("time"), bpe.row("time", "bytes")
    f = bpe.best("flops")
    # "BPE wins: … the best (`bpe-2048`) at 2.411 bits per byte (2.388–2.414) against 2.649 (2.620–2.672) for
    # bytes, and at equal FLOPs the best (`bpe-2048`) at 2.437 (2.431–2.444)."
    stated = numbers(markdown(NB), after="BPE wins:")[:11]
    stored = [float(t.arm[4:]), t.median, min(t.bits), max(t.bits), by.median, min(by.bits), max(by.bits),
              float(f.arm[4:]), f.median, min(f.bits), max(f.bits)]
    assert all(said(a, b, 3) for a, b in zip(stated, stored, strict=True)), (stated, stored)
    # "every BPE model ends below every byte-level seed", at both budgets
    for budget in ("time", "flops"):
        bpe_rows = [r for r in bpe.rows if r.budget == budget and r.arm != "bytes"]
        assert max(max(r.bits) for r in bpe_rows) < min(bpe.row(budget, "bytes").bits)
    # the margin is far wider than the seeds' spread: no last-bit difference moves the verdict
    assert min(by.bits) - max(t.bits) > 3 * (max(by.bits) - min(by.bits))
    line = printed(NB, "bpe = load_bpe()").splitlines()[0]   # "equal time: best bpe-2048 at 2.411 …; bytes at 2.649"
    assert t.arm in line and all(said(a, b, 3) for a, b in zip(numbers(line, after=" at "), [t.median, by.median], strict=True))


def test_the_table_behind_the_reveal_is_the_stored_one(bpe):
    raw = "\n".join("".join(c["source"]) for c in __import__("support").cells(NB) if c["cell_type"] == "markdown")
    assert "<summary>The table:" in raw
    assert bpe.table() in raw


def test_equal_time_and_equal_flops_held(bpe):
    """The stored runs trained what the budgets say: equal-time runs used about the byte run's CPU
    seconds (the load was shared: within 20 %), equal-FLOPs runs the same FLOPs to 1 %."""
    import json
    doc = json.loads((ROOT / "minitf" / "experiments" / "stored" / "bpe.json").read_text())
    cpu = lambda budget, arm: st.median(r["train_cpu_s"] for k, r in doc["runs"].items()
                                        if k.startswith(f"{budget}/{arm}/"))
    for arm in ("bpe-512", "bpe-1024", "bpe-2048"):
        assert abs(cpu("time", arm) / cpu("time", "bytes") - 1) < 0.2, arm
        a, b = bpe.arms[arm], bpe.arms["bytes"]
        assert abs(bpe.row("flops", arm).steps * a.flops_per_token / (340 * b.flops_per_token) - 1) < 0.01
        assert len(bpe.row("time", arm).bits) == len(bpe.row("flops", arm).bits) == 3


def test_why(bpe):
    a = bpe.arms
    b, k1, k2 = a["bytes"], a["bpe-1024"], a["bpe-2048"]
    by = bpe.row("time", "bytes")
    others = [r.bytes_trained for r in bpe.rows if r.arm != "bytes"]
    # "264,192 of the 364,352 parameters at 2,048 tokens, against 33,024 of 133,184 for bytes. A step costs more
    # (52 ms of CPU at 2,048 tokens, 31 ms for bytes) … occurs 67 times in the training split at 2,048 tokens,
    # 4,561 times for a byte. … a token holds 2.26 bytes on average at 1,024 tokens, so a 64-token window reads
    # about 144 bytes instead of 64, … The byte model reads 0.52 million bytes of text in its 340 steps, about half
    # of the 1.0-million-byte training split; the BPE models read 0.78 to 1.00 million"
    stated = numbers(markdown(NB), after="Its embedding table")[:21]
    stored = [k2.embed_head_params, k2.params, 2048, b.embed_head_params, b.params, 1000 * k2.s_per_step, 2048,
              1000 * b.s_per_step, k2.median_count, 2048, b.median_count, k1.bytes_per_token, 1024, 64,
              k1.context_bytes, 64, by.bytes_trained / 1e6, by.steps, b.train_tokens / 1e6, min(others) / 1e6,
              max(others) / 1e6]
    places = [0] * 11 + [2, 0, 0, 0, 0, 2, 0, 1, 2, 2]
    assert all(said(x, y, p) for x, y, p in zip(stated, stored, places, strict=True)), (stated, stored)
    assert k2.s_per_step > k1.s_per_step > b.s_per_step
    assert 0.45 < by.bytes_trained / b.train_tokens < 0.55   # "about half"
    assert min(others) > by.bytes_trained


def test_the_recipe_is_the_measured_arm(bpe):
    recipe = RECIPES["lm-fast-bpe"].values
    assert recipe["tokenizer"] == "bpe:1024" and recipe["steps"] == bpe.row("time", "bpe-1024").steps
    bits = bpe.row("time", "bpe-1024").bits
    fast = bpe.row("time", "bytes").bits
    assert f"{min(bits):.2f}-{max(bits):.2f} bits per byte" in RECIPES["lm-fast-bpe"].description
    assert f"{min(fast):.2f}-{max(fast):.2f} over 3 seeds" in RECIPES["lm-fast-bpe"].description
    assert numbers(markdown(NB), after="is `lm-fast` on")[0] == 1024   # "`--recipe lm-fast-bpe` is `lm-fast` on 1,024 BPE tokens"


def test_the_tokenizer_is_fast_enough(bpe):
    """1,024 tokens on the training split within 10 s (the issue's bar), on this machine's record."""
    sp = bpe.tokenizer_speed
    assert sp["fast_gpt2_merges"] == sp["fast_none_merges"] == 768
    assert sp["fast_gpt2_s"] + sp["gpt2_pattern_build_s"] < 10 and sp["fast_none_s"] < 10
    assert sp["plain_projected_cpu_s"] > 10 * sp["fast_none_cpu_s"]
    t = markdown(NB)
    # "training split (1,003,855 bytes, no pre-tokenizer), 768 merges took it 2.7 s of CPU on a 2-core AMD EPYC;
    # the plain loop, timed on a slice there and scaled up, would take about 140 s"
    stated = numbers(markdown(NB), after="training split (")[:5]
    assert all(said(x, y, p) for x, y, p in zip(stated, [sp["train_bytes"], 768, sp["fast_none_cpu_s"], 2,
                                                         sp["plain_projected_cpu_s"]], [0, 0, 1, 0, 0], strict=True))
    assert "AMD EPYC" in bpe.cpu


def test_attention_over_tokens(bpe):
    out = printed(NB, 'words = b"what light')
    # "bytes: 32 bytes are 32 positions; layer 1 looks 1.7 bytes back on average", then "BPE: …"
    (_, byte_positions, _, byte_back), (_, bpe_positions, _, bpe_back) = (numbers(line) for line in out.splitlines())
    assert byte_positions == 32 > bpe_positions and bpe_back > 3 * byte_back
    # "On these words the byte model's last layer looks 1.7 bytes back on average, … The BPE model reads the
    # same 32 bytes as 13 positions, …, and looks 5.8 bytes back: with 64 positions its window covers about 144"
    assert numbers(markdown(NB), after="On these words")[:6] == [byte_back, 32, bpe_positions, bpe_back, 64,
                                                          round(bpe.arms["bpe-1024"].context_bytes)]


def test_the_stored_bpe_model_is_the_recipe_s_seed_0_run(bpe):
    from minitf.experiments.results import load_bpe_model
    model, tokenizer = load_bpe_model()
    meta = model.metadata
    assert meta["recipe"] == "lm-fast-bpe" and meta["seed"] == 0 and tokenizer.vocab_size == 1024
    assert "--tokenizer bpe:1024" in meta["command"] and "--steps 267" in meta["command"]
    # the command line reproduces the bench's seed-0 run of that arm
    assert abs(meta["val"]["bits_per_byte"] - bpe.row("time", "bpe-1024").bits[0]) < 1e-3


def test_docs_recipes_states_the_stored_comparison(bpe):
    """docs/recipes.md's "Bytes or BPE" section: its table and its numbers are the stored ones."""
    doc = (ROOT / "docs" / "recipes.md").read_text()
    section = " ".join(doc[doc.index("## Bytes or BPE"):].split())
    rng = lambda r: f"{r.median:.3f} ({min(r.bits):.3f}–{max(r.bits):.3f})"
    for name, a in bpe.arms.items():
        t, f = bpe.row("time", name), bpe.row("flops", name)
        row = (f"| {name} | {a.params:,} | {a.embed_head_params:,} | {a.bytes_per_token:.2f} | "
               f"{a.context_bytes:.0f} | {1000 * a.s_per_step:.1f} | {t.steps} | {rng(t)} | {f.steps} | {rng(f)} |")
        assert row in section, row
    by, t1, t2 = bpe.row("time", "bytes"), bpe.row("time", "bpe-1024"), bpe.row("time", "bpe-2048")
    k1, b = bpe.arms["bpe-1024"], bpe.arms["bytes"]
    before = lambda anchor: numbers(section.split(anchor)[0])[-1]   # the number just before the anchor
    # "by about 0.23 bits per byte at 1,024 tokens: a margin about four times the spread of the byte model's seeds"
    assert numbers(section, after="budgets**, by about")[:2] == [round(by.median - t1.median, 2), 1024]
    spread = max(by.bits) - min(by.bits)
    assert 3.5 * spread < min(by.bits) - max(t1.bits) < 4.5 * spread  # "about four times the spread"
    assert abs(t1.median - t2.median) < 0.01 == numbers(section, after="tokens end within")[0]
    # "1,024 has 132,096 fewer parameters", "steps 1.27x as costly", "BPE reads 1.00 million in the same CPU time"
    assert numbers(section, after="1,024 has")[0] == bpe.arms["bpe-2048"].params - k1.params
    assert said(before("x as costly"), k1.s_per_step / b.s_per_step, 2)
    assert said(before(" million in the same"), t1.bytes_trained / 1e6, 2)
    # "ended at 2.4107 bits per byte, as the bench's seed 0 did"
    assert said(numbers(section, after="ended at")[0], t1.bits[0], 4)
    sp = bpe.tokenizer_speed
    # "took 0.35 s of CPU with GPT-2's pre-tokenizer and 2.66 s without …; the plain loop … about 140 s of CPU"
    assert said(before(" s of CPU with"), sp["fast_gpt2_cpu_s"], 2)
    assert said(numbers(section, after="GPT-2's pre-tokenizer and")[0], sp["fast_none_cpu_s"], 2)
    assert said(numbers(section, after="plain loop")[0], sp["plain_projected_cpu_s"], 0)
    assert "minitf train --recipe lm-fast-bpe" in section
