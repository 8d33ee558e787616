"""The language model: sampling controls, the KV cache, the CLI on text, the shipped lm.pt."""
import json
import math
import shlex

import pytest
import torch

import minitf
from support import ROOT, script
from minitf import Config, Transformer, generate_text
from minitf.cli import main, parser
from minitf.core.generate import continue_ids
from minitf.core.kv_cache import KVCache

SHAKESPEARE = "data/text/tinyshakespeare.txt"
LM = ROOT / "data" / "checkpoints" / "lm.pt"



def model_of(dtype=torch.float32, **changes):
    torch.manual_seed(0)
    config = Config(d_model=16, n_heads=4, n_layers=2, d_ff=32, dropout=0.0, max_len=24).replace(**changes)
    return Transformer(config).to(dtype).eval()


# --- the KV cache ---------------------------------------------------------------------------------

CONFIGS = [{}, {"norm_position": "pre"}, {"positional": "sinusoidal"}, {"rope_on_v": True},
           {"norm": "rms", "activation": "gelu"}, {"ffn": False}]


@pytest.mark.parametrize("dtype, tolerance", [(torch.float32, 1e-5), (torch.float64, 1e-10)])
@pytest.mark.parametrize("changes", CONFIGS, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()) or "default")
def test_cached_logits_equal_the_full_forward_pass_over_a_whole_generated_sequence(dtype, tolerance, changes):
    model = model_of(dtype, **changes)
    prompt = list(b"Hi, ")
    gen = torch.Generator().manual_seed(1)
    new, cached = continue_ids(model, prompt, 20, lambda l: torch.multinomial(l.softmax(-1), 1, generator=gen))
    seq = torch.tensor([prompt + new])                        # 24 bytes = max_len: one window
    full = model(seq)[0, len(prompt) - 1:-1]                  # (20, V): the rows that picked each byte
    assert (cached - full).abs().max() <= tolerance


@pytest.mark.parametrize("dtype, tolerance", [(torch.float32, 1e-5), (torch.float64, 1e-10)])
def test_cached_and_uncached_generation_agree_past_the_window(dtype, tolerance):
    """60 new bytes through a 24-byte window: the window refills twice, the same way in both."""
    model = model_of(dtype)
    runs = []
    for cache in (True, False):
        gen = torch.Generator().manual_seed(2)
        runs.append(continue_ids(model, list(b"abc"), 60, lambda l: torch.multinomial(l.softmax(-1), 1, generator=gen), cache))
    assert runs[0][0] == runs[1][0]
    assert (runs[0][1] - runs[1][1]).abs().max() <= tolerance


def test_the_cache_feeds_one_byte_per_step_at_the_right_rope_position():
    model = model_of(torch.float64)
    seq = torch.tensor([list(b"positions")])
    cache = KVCache(len(model.blocks))
    model(seq[:, :4], cache=cache)
    assert len(cache) == 4
    step = model(seq[:, 4:5], cache=cache)  # position 4: rotated by 4·θ
    assert step.shape == (1, 1, 256) and len(cache) == 5
    torch.testing.assert_close(step[0, 0], model(seq[:, :5])[0, 4], rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="causal"):
        model_of(causal=False)(seq, cache=KVCache(2))


# --- sampling -------------------------------------------------------------------------------------

def test_generate_text_is_seeded_and_greedy_is_the_argmax():
    model = model_of()
    a = generate_text(model, "To be", 30, temperature=0.8, top_k=20, top_p=0.9, seed=3)
    assert len(a) == 30 and a == generate_text(model, "To be", 30, temperature=0.8, top_k=20, top_p=0.9, seed=3)
    assert a != generate_text(model, "To be", 30, temperature=0.8, top_k=20, top_p=0.9, seed=4)
    greedy = generate_text(model, "To be", 10, greedy=True)
    first = int(model(torch.tensor([list(b"To be")]))[0, -1].argmax())
    assert greedy[0] == first  # top-1 and T = 0 are greedy: test_cli_inputs' test_valid_settings_…


def test_greedy_needs_no_temperature_but_takes_zero():
    model = model_of()
    assert generate_text(model, "a", 5, greedy=True, temperature=0) == generate_text(model, "a", 5, greedy=True)


def test_pairs_generation_keeps_its_behaviour_with_top_p():
    model = minitf.load("data/checkpoints/shift.pt")
    assert minitf.generate(model, "hello world") == b"ifmmp!xpsme"
    assert minitf.generate(model, "hello", temperature=1.0, top_p=0.5, seed=0) == b"ifmmp"


# --- reliability: a checkpoint that holds code ------------------------------------------------------

class Payload:
    """Unpickling this would run a command that leaves a file behind."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        import os
        return (os.system, (f"touch {shlex.quote(self.marker)}",))


def test_a_checkpoint_holding_code_is_refused_and_nothing_runs(tmp_path):
    marker = tmp_path / "ran"
    path = tmp_path / "hostile.pt"
    torch.save({"format": "minitf-checkpoint-1", "config": {}, "state_dict": {},
                "metadata": {"x": Payload(marker)}}, path)
    with pytest.raises(minitf.CheckpointError) as refused:
        minitf.load(path)
    message = str(refused.value)
    assert "hostile.pt: refused" in message and "can run any code" in message
    assert "weights_only" not in message and "trusted source" not in message
    assert not marker.exists()
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a checkpoint")
    with pytest.raises(minitf.CheckpointError) as unreadable:
        minitf.load(junk)
    assert "not a readable checkpoint" in str(unreadable.value)
    assert "weights_only" not in str(unreadable.value)


# --- the command line -----------------------------------------------------------------------------

def test_cli_trains_evaluates_and_samples_a_language_model(tmp_path, capsys):
    text = tmp_path / "t.txt"
    text.write_bytes(b"to be or not to be, that is the question. " * 30)
    ckpt = tmp_path / "lm.pt"
    assert main(["train", "--text", str(text), "--context", "16", "--d-model", "16", "--steps", "4",
                 "--batch-size", "8", "--out", str(ckpt), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "windows of 16" in out and "bits/byte" in out
    model = minitf.load(ckpt)
    assert model.config.max_len == 16 and model.metadata["text"] == str(text)
    assert model.metadata["context"] == 16 and "bits_per_byte" in model.metadata["val"]
    assert main(["eval", str(ckpt), "--text", str(text)]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["bits_per_byte"] == pytest.approx(model.metadata["val"]["bits_per_byte"], abs=1e-4)
    assert set(got["baselines_bits_per_byte"]) == {"uniform", "unigram", "bigram"}
    assert main(["generate", str(ckpt), "to be", "--max-new", "12", "--temperature", "0.8",
                 "--top-k", "5", "--top-p", "0.9", "--seed", "1"]) == 0
    first = capsys.readouterr().out
    assert first.startswith("to be") and len(first.rstrip("\n").encode()) >= len("to be")
    assert main(["generate", str(ckpt), "to be", "--max-new", "12", "--temperature", "0.8",
                 "--top-k", "5", "--top-p", "0.9", "--seed", "1"]) == 0
    assert capsys.readouterr().out == first
    assert main(["generate", str(ckpt), "to be", "--temperature", "0", "--max-new", "3"]) == 0
    assert main(["generate", str(ckpt), "to be", "--greedy", "--max-new", "3"]) == 0
    out = capsys.readouterr().out  # temperature 0 is greedy decoding: the same text
    assert out.splitlines()[0] == out.splitlines()[1]  # bad sampling flags: test_cli_inputs' CASES and BAD


def test_cli_names_the_problem_with_a_bad_text(tmp_path, capsys):
    short = tmp_path / "short.txt"
    short.write_bytes(b"tiny")
    out = str(tmp_path / "m.pt")
    assert main(["train", "--text", str(short), "--out", out]) == 2
    assert "short.txt: too short for a window" in capsys.readouterr().err
    assert main(["train", "--text", str(tmp_path), "--out", out]) == 2
    assert "is a directory" in capsys.readouterr().err
    assert main(["train", "--text", SHAKESPEARE, "--context", "256", "--max-len", "128", "--out", out]) == 2
    assert "context 256 is longer than the model's max_len 128" in capsys.readouterr().err


# --- the shipped language model -------------------------------------------------------------------

@pytest.mark.slow
def test_the_shipped_lm_is_documented_and_reaches_its_stated_metrics():
    assert LM.stat().st_size < 1_000_000
    model = minitf.load(LM)
    meta = model.metadata
    recipe = script("data/checkpoints/make.py", "make_checkpoints").RECIPES["lm"]
    assert meta["command"] == f"python -m minitf train {recipe} --out data/checkpoints/lm.pt"
    args = parser().parse_args(shlex.split(meta["command"])[3:])
    assert model.config == minitf.cli.config_from_args(args)
    readme = (ROOT / "data" / "checkpoints" / "README.md").read_text()
    assert meta["command"] in readme
    assert f"{meta['val']['bits_per_byte']:.3f} bits per byte" in readme
    text = minitf.read_text(args.text, args.context)
    got = minitf.evaluate_text(model, text.val)
    assert got["loss"] == pytest.approx(meta["val"]["loss"], abs=0.01)
    bigram = minitf.text_baselines(text).bigram / math.log(2)
    assert got["bits_per_byte"] < bigram - 0.8  # beats counting pairs of bytes by a clear margin


def test_the_sampling_view_continues_a_prompt_and_samples_again(monkeypatch):
    from minitf.views.lm_view import TextSampler
    monkeypatch.setattr("minitf.views.sampling_view.figure_png", lambda fig: b"")  # numbers first
    model = model_of(torch.float64)
    view = TextSampler(model, "ab", length=12, temperature=0.8)
    assert view.state["steps"] == 12 and len(view.state["output"]) == 12
    assert view.state["output"] == generate_text(model, "ab", 12, temperature=0.8, seed=0)
    first = view.state["output"]
    view.button.click()  # "sample": the next random seed
    assert "random seed 1" in repr(view) and view.state["output"] != first
    view.top_k.value = 1
    assert int((view.state["probs"] > 0).sum()) == 1
    monkeypatch.undo()  # drawn: the picture below is of this redraw
    view.step.value = 5
    assert view.state["prefix"][-1] == view.state["output"][4]
    labels = [t.get_text() for t in view.figure(view.state).axes[0].get_xticklabels()]
    assert len(labels) == 13
    bundle = view._repr_mimebundle_()
    assert bundle["text/plain"].startswith("TextSampler(prompt='ab', 12 new bytes") and bundle["image/png"]


def test_the_lm_benchmark_reads_its_recipe_and_its_reference_runs():
    import sys
    sys.path.insert(0, str(ROOT / "bench"))
    import lm as bench_lm
    import nanogpt_reference as ref
    recipe = bench_lm.lm_recipe()
    words = shlex.split(recipe)
    args = parser().parse_args(words[words.index("train"):])
    assert args.text == SHAKESPEARE and args.context == 64
    torch.manual_seed(0)
    gpt = ref.GPT(ref.GPTConfig())
    assert sum(p.numel() for p in gpt.parameters()) == 828_544  # 4 layers, 128 wide, tied head
    x = torch.randint(0, 256, (2, 64))
    assert gpt(x).shape == (2, 64, 256)
    opt = gpt.configure_optimizers(0.1, 1e-3, (0.9, 0.99))
    tc = ref.TrainConfig()
    before = ref.train_step(gpt, opt, x, x, 0, tc)
    assert math.isfinite(before) and ref.get_lr(tc.max_iters, tc) == pytest.approx(tc.min_lr)
