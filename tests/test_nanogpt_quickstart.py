"""bench/nanogpt.py: `--recipe lm-fast` beside nanoGPT's own CPU quick-start. nanoGPT's
code is never in this repository, so these tests give the bench a stand-in clone; the stored result
(minitf/experiments/stored/nanogpt_quickstart.json) holds what docs/recipes.md and notebook 14 say."""
import json
import math
import pickle
import statistics
import sys

import pytest
import torch

from support import ROOT, joined

sys.path.insert(0, str(ROOT / "bench"))
import nanogpt  # noqa: E402

STORED = ROOT / "minitf" / "experiments" / "stored" / "nanogpt_quickstart.json"

# nanoGPT's model.py as far as the bench uses it: GPTConfig(**model_args), GPT(config), and
# forward(idx, targets) -> (logits (B, T, vocab), loss); this one scores every character alike
STAND_IN_MODEL = '''
from dataclasses import dataclass
import torch

@dataclass
class GPTConfig:
    block_size: int = 64
    vocab_size: int = 65

class GPT(torch.nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.bias = torch.nn.Parameter(torch.zeros(config.vocab_size))

    def forward(self, idx, targets=None):
        logits = self.bias.expand(*idx.shape, -1)
        return (logits, None) if targets is not None else (logits[:, [-1], :], None)
'''


def stand_in_clone(tmp_path, chars):
    for need in ("train.py", "config/train_shakespeare_char.py", "data/shakespeare_char/prepare.py"):
        (tmp_path / need).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / need).write_text("")
    (tmp_path / "model.py").write_text(STAND_IN_MODEL)
    meta = {"vocab_size": len(chars), "stoi": {c: i for i, c in enumerate(chars)}}
    (tmp_path / "data/shakespeare_char/meta.pkl").write_bytes(pickle.dumps(meta))
    ckpt = tmp_path / "ckpt.pt"
    torch.save({"model_args": {"block_size": 64, "vocab_size": len(chars)},
                "model": {"_orig_mod.bias": torch.zeros(len(chars))}}, ckpt)  # as torch.compile saves
    return tmp_path, ckpt


def test_a_checkpoint_is_scored_per_byte_through_its_own_vocabulary(tmp_path):
    """Uniform scores over nanoGPT's 65 characters: ln 65 nats for every byte of the last 10 %."""
    chars = sorted(set(nanogpt.TEXT.read_text()))
    assert len(chars) == 65
    clone, ckpt = stand_in_clone(tmp_path, chars)
    assert nanogpt.score_nanogpt(clone, ckpt) == pytest.approx(math.log(65), rel=1e-6)


def test_a_byte_outside_its_vocabulary_is_named(tmp_path):
    clone, ckpt = stand_in_clone(tmp_path, sorted(set(nanogpt.TEXT.read_text()) - {"e"}))
    with pytest.raises(SystemExit, match="tinyshakespeare.txt: a byte of the last 10 % is not in"):
        nanogpt.score_nanogpt(clone, ckpt)


def test_a_folder_that_is_not_a_clone_is_refused_by_name(tmp_path, monkeypatch):
    monkeypatch.delenv("NANOGPT_DIR", raising=False)
    with pytest.raises(SystemExit, match="--nanogpt PATH or NANOGPT_DIR=PATH"):
        nanogpt.nanogpt_dir(None)
    with pytest.raises(SystemExit, match=f"{tmp_path}: not a nanoGPT clone, train.py is missing"):
        nanogpt.nanogpt_dir(str(tmp_path))
    clone, _ = stand_in_clone(tmp_path, ["a"])
    monkeypatch.setenv("NANOGPT_DIR", str(clone))
    assert nanogpt.nanogpt_dir(None) == clone


def test_the_command_is_nanogpts_readme_cpu_command():
    assert " ".join(nanogpt.NANOGPT_ARGS) == (
        "train.py config/train_shakespeare_char.py --device=cpu --compile=False --eval_iters=20 "
        "--log_interval=1 --block_size=64 --batch_size=12 --n_layer=4 --n_head=4 --n_embd=128 "
        "--max_iters=2000 --lr_decay_iters=2000 --dropout=0.0")


@pytest.fixture(scope="module")
def stored():
    return json.loads(STORED.read_text())


def ratios(result, key):
    return [r["lm_fast"][key] / r["nanogpt"][key] for r in result["rounds"]]


@pytest.mark.parametrize("name", ["nanogpt_quickstart", "nanogpt_quickstart_default_threads"])
def test_each_stored_result_names_its_cpu_and_pairs_every_run(name):
    path = STORED.with_name(f"{name}.json")
    result = json.loads(path.read_text())
    assert result["cpu"] and result["rounds"]
    for r in result["rounds"]:
        assert r["lm_fast"]["wall_s"] > 0 and r["nanogpt"]["wall_s"] > 0
        assert r["lm_fast"]["val_loss"] <= 1.89  # lm-fast reaches nanoGPT's CPU mark in every round
    assert path.with_suffix(".md").read_text() == nanogpt.report(result)


def test_recipe_and_notebook_14_quote_the_stored_ratio_and_the_reporters(stored):
    """The CPU-time ratio measured here (one thread each), and the reporter's 0.26× (Intel Xeon,
    wall time, nanoGPT on its default threads); docs/recipes.md also gives the range of wall ratios."""
    ratio = f"{statistics.median(ratios(stored, 'cpu_s')):.2f}×"
    wall = ratios(stored, "wall_s")
    notebook = joined("14_faster_language_model", "markdown")
    recipe = (ROOT / "docs" / "recipes.md").read_text()
    cpu = stored["cpu"].split(",")[0]
    for text in (recipe, notebook):
        assert ratio in text and "0.26×" in text and cpu in text and "Intel Xeon" in text
    assert "NANOGPT_DIR" in recipe and "bench/nanogpt.py" in recipe
    assert f"{min(wall):.2f}–{max(wall):.2f}×" in recipe and len(stored["rounds"]) >= 3
    default = json.loads(STORED.with_name("nanogpt_quickstart_default_threads.json").read_text())
    assert not default["nanogpt_threads_given"] and stored["nanogpt_threads_given"]
    assert f"{statistics.median(ratios(default, 'wall_s')):.3f}× of the wall time" in recipe


@pytest.mark.slow  # starts a subprocess
def test_a_failed_command_names_itself_and_the_end_of_its_log(tmp_path):
    with pytest.raises(SystemExit, match=r"failed with exit 3; the end of .*run\.log:\nno data here"):
        nanogpt.timed([sys.executable, "-c", "print('no data here'); raise SystemExit(3)"], tmp_path,
                      tmp_path / "run.log")
