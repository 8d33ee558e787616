"""Claims notebook 15 ("bytes or BPE?") makes in words, held to what its cells printed, to minitf's
BPE and to the stored comparison (minitf/experiments/stored/bpe.json, read by load_bpe)."""
import re
import statistics as st

import pytest

from support import ROOT, markdown, printed
from minitf.core.bpe import train_bpe
from minitf.core.recipes import RECIPES
from minitf.course.lessons.nb15_bytes_or_bpe import count_pairs_reference
from minitf.experiments.results import load_bpe

NB = "15_bytes_or_bpe"


@pytest.fixture(scope="module")
def bpe():
    return load_bpe()


def text():
    return markdown(NB)


def test_the_worked_example():
    out = printed(NB, 'data = b"aaabdaaabac"')
    assert "3 merges:  5 tokens  aaab | d | aaab | a | c" in out
    assert "merges learned: [(97, 97), (97, 98), (256, 257)]" in out
    data = b"aaabdaaabac"
    assert len(data) == 11 and "Take the eleven bytes `aaabdaaabac`" in text()
    counts = count_pairs_reference(list(data))
    assert counts[(97, 97)] == 4 == max(counts.values()) and "`aa` (four times" in text()
    assert "Token 256 is `aa` = (97, 97); token 257 is `ab`; token 258 is (256, 257), `aaab`" in text()
    assert train_bpe(b"aaa", 257).encode(b"aaa") == [256, 97]  # "`aaa` becomes `aa` `a`"


def test_a_line_of_shakespeare_becomes_fewer_tokens_as_the_vocabulary_grows():
    out = printed(NB, "raw = open(")
    counts = [int(n) for n in re.findall(r"58 bytes -> +(\d+) tokens", out)]
    assert len(counts) == 3 and counts[0] > counts[1] > counts[2]
    assert "The bigger the vocabulary, the fewer tokens a line becomes" in text()


def test_the_answer_sentence(bpe):
    t, by = bpe.best("time"), bpe.row("time", "bytes")
    f = bpe.best("flops")
    rng = lambda r: f"{min(r.bits):.3f}–{max(r.bits):.3f}"
    sentence = (f"**At this size, BPE wins:** at equal time every BPE run ends below every byte-level run, "
                f"the best (`{t.arm}`) at **{t.median:.3f}** bits per byte ({rng(t)}) against "
                f"**{by.median:.3f}** ({rng(by)}) for bytes, and at equal FLOPs the best (`{f.arm}`) at "
                f"**{f.median:.3f}** ({rng(f)}).")
    assert sentence in text()
    # "every BPE model ends below every byte-level seed", at both budgets
    for budget in ("time", "flops"):
        bpe_rows = [r for r in bpe.rows if r.budget == budget and r.arm != "bytes"]
        assert max(max(r.bits) for r in bpe_rows) < min(bpe.row(budget, "bytes").bits)
    # the margin is far wider than the seeds' spread: no last-bit difference moves the verdict
    assert min(by.bits) - max(t.bits) > 3 * (max(by.bits) - min(by.bits))
    printed_lines = printed(NB, "bpe = load_bpe()")
    assert f"equal time: best {t.arm} at {t.median:.3f} bits per byte; bytes at {by.median:.3f}" in printed_lines


def test_the_table_behind_the_reveal_is_the_stored_one(bpe):
    raw = "\n".join("".join(c["source"]) for c in __import__("support").cells(NB) if c["cell_type"] == "markdown")
    assert "<details><summary>The table: steps, bytes of text trained on, bits per byte</summary>" in raw
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
    t = text()
    assert f"{k2.embed_head_params:,} of the {k2.params:,} parameters at 2,048 tokens, against " \
           f"{b.embed_head_params:,} of {b.params:,} for bytes" in t
    assert f"({1000 * k2.s_per_step:.0f} ms of CPU at 2,048 tokens, {1000 * b.s_per_step:.0f} ms for bytes)" in t
    assert k2.s_per_step > k1.s_per_step > b.s_per_step
    assert f"occurs {k2.median_count:,} times in the training split at 2,048 tokens, {b.median_count:,} times" in t
    assert f"a token holds {k1.bytes_per_token:.2f} bytes on average at 1,024 tokens" in t
    assert f"reads about {k1.context_bytes:.0f} bytes instead of 64" in t
    by = bpe.row("time", "bytes")
    assert f"The byte model reads {by.bytes_trained / 1e6:.2f} million bytes of text in its {by.steps} steps, " \
           f"about half of the {b.train_tokens / 1e6:.1f}-million-byte training split" in t
    assert 0.45 < by.bytes_trained / b.train_tokens < 0.55
    others = [r.bytes_trained for r in bpe.rows if r.arm != "bytes"]
    assert f"the BPE models read {min(others) / 1e6:.2f} to {max(others) / 1e6:.2f} million in the same time or FLOPs" in t
    assert min(others) > by.bytes_trained


def test_the_recipe_is_the_measured_arm(bpe):
    recipe = RECIPES["lm-fast-bpe"].values
    assert recipe["tokenizer"] == "bpe:1024" and recipe["steps"] == bpe.row("time", "bpe-1024").steps
    bits = bpe.row("time", "bpe-1024").bits
    fast = bpe.row("time", "bytes").bits
    assert f"{min(bits):.2f}-{max(bits):.2f} bits per byte" in RECIPES["lm-fast-bpe"].description
    assert f"{min(fast):.2f}-{max(fast):.2f} over 3 seeds" in RECIPES["lm-fast-bpe"].description
    assert "`--recipe lm-fast-bpe` is `lm-fast` on 1,024 BPE tokens" in text()


def test_the_tokenizer_is_fast_enough(bpe):
    """1,024 tokens on the training split within 10 s (the issue's bar), on this machine's record."""
    sp = bpe.tokenizer_speed
    assert sp["fast_gpt2_merges"] == sp["fast_none_merges"] == 768
    assert sp["fast_gpt2_s"] + sp["gpt2_pattern_build_s"] < 10 and sp["fast_none_s"] < 10
    assert sp["plain_projected_cpu_s"] > 10 * sp["fast_none_cpu_s"]
    t = text()
    assert (f"On tiny Shakespeare's training split ({sp['train_bytes']:,} bytes, no pre-tokenizer), 768 merges "
            f"took it {sp['fast_none_cpu_s']:.1f} s of CPU on a 2-core AMD EPYC; the plain loop, timed on a "
            f"slice there and scaled up, would take about {sp['plain_projected_cpu_s']:,.0f} s") in t
    assert "AMD EPYC" in bpe.cpu


def test_attention_over_tokens(bpe):
    out = printed(NB, 'words = b"what light through yonder window"')
    assert "bytes: 32 bytes are 32 positions; layer 1 looks 1.7 bytes back on average" in out
    assert "BPE: 32 bytes are 13 positions; layer 1 looks 5.8 bytes back on average" in out
    t = text()
    assert ("On these words the byte model's last layer looks 1.7 bytes back on average, mostly inside the "
            "word it is writing. The BPE model reads the same 32 bytes as 13 positions") in t
    assert "and looks 5.8 bytes back" in t
    assert f"its window covers about {bpe.arms['bpe-1024'].context_bytes:.0f} bytes of text" in t


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
    section = " ".join(doc[doc.index("## Bytes or BPE: `--recipe lm-fast-bpe`"):].split())
    rng = lambda r: f"{r.median:.3f} ({min(r.bits):.3f}–{max(r.bits):.3f})"
    for name, a in bpe.arms.items():
        t, f = bpe.row("time", name), bpe.row("flops", name)
        row = (f"| {name} | {a.params:,} | {a.embed_head_params:,} | {a.bytes_per_token:.2f} | "
               f"{a.context_bytes:.0f} | {1000 * a.s_per_step:.1f} | {t.steps} | {rng(t)} | {f.steps} | {rng(f)} |")
        assert row in section, row
    by, t1, t2 = bpe.row("time", "bytes"), bpe.row("time", "bpe-1024"), bpe.row("time", "bpe-2048")
    k1, b = bpe.arms["bpe-1024"], bpe.arms["bytes"]
    assert f"by about {by.median - t1.median:.2f} bits per byte at 1,024 tokens" in section
    spread = max(by.bits) - min(by.bits)
    assert 3.5 * spread < min(by.bits) - max(t1.bits) < 4.5 * spread  # "about four times the spread"
    assert abs(t1.median - t2.median) < 0.01 and "end within 0.01 of each other" in section
    assert f"1,024 has {bpe.arms['bpe-2048'].params - k1.params:,} fewer parameters" in section
    assert f"steps {k1.s_per_step / b.s_per_step:.2f}x as costly" in section
    assert f"reads {t1.bytes_trained / 1e6:.2f} million in the same CPU time" in section
    assert f"ended at {t1.bits[0]:.4f} bits per byte, as the bench's seed 0 did" in section
    sp = bpe.tokenizer_speed
    assert f"took {sp['fast_gpt2_cpu_s']:.2f} s of CPU with GPT-2's pre-tokenizer and {sp['fast_none_cpu_s']:.2f} s without" in section
    assert f"about {sp['plain_projected_cpu_s']:,.0f} s of CPU" in section
    assert "python -m minitf train --recipe lm-fast-bpe --out lm_fast_bpe.pt" in section
