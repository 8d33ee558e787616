"""The benchmark's reference implementations compute minitf's function (no timing here).

`make bench` compares the speed of minitf with a re-creation of the seed's formulation, a compact
expert formulation and a fast-path prototype; the comparison only means something if all of them
compute the same logits and gradients from the same weights.
"""
import copy

import pytest
import torch

import minitf
from minitf import Config
from support import ROOT, script, trained_like



ref = script("bench/reference_models.py", "bench_reference_models")

CONFIGS = {
    "seed": Config(),
    "wide": Config(d_model=16, n_heads=4, d_ff=24, activation="gelu"),
    "pre-norm": Config(d_model=16, n_heads=2, d_ff=32, norm_position="pre"),
}


def ids_for(seed=1, shape=(3, 13)):
    return torch.randint(0, 256, shape, generator=torch.Generator().manual_seed(seed))


def grads(model, ids):
    model.zero_grad()
    logits = model(ids)
    (logits.square().mean() + logits[:, -1].logsumexp(-1).mean()).backward()
    return logits.detach()


@pytest.mark.parametrize("name", CONFIGS)
def test_expert_formulation_equals_minitf(name):
    model = trained_like(CONFIGS[name])
    expert = ref.ExpertTransformer.from_minitf(model).eval()
    ids = ids_for()
    assert torch.allclose(expert(ids), model(ids), atol=1e-5)
    assert sum(p.numel() for p in expert.parameters()) == minitf.count_parameters(model)


@pytest.mark.parametrize("name", ["seed", "wide"])
def test_seed_formulation_without_its_quirks_equals_minitf(name):
    model = trained_like(CONFIGS[name])
    seed_style = ref.SeedStyleTransformer.from_minitf(model, seed_quirks=False).eval()
    ids = ids_for()
    assert torch.allclose(seed_style(ids), model(ids), atol=1e-5)


def test_seed_quirks_change_the_function_the_benchmark_times():
    """With the double LayerNorm and d_model-based RoPE on, the seed formulation is another model."""
    model = trained_like(CONFIGS["seed"])
    ids = ids_for()
    quirky = ref.SeedStyleTransformer.from_minitf(model, seed_quirks=True).eval()
    assert not torch.allclose(quirky(ids), model(ids), atol=1e-3)
    assert [layer.rope_dim for layer in quirky.layers] == [4, 4]  # d_model, where minitf uses head_dim 2


def test_seed_formulation_is_post_norm_only():
    with pytest.raises(ValueError, match="post-norm"):
        ref.SeedStyleTransformer(CONFIGS["pre-norm"])


@pytest.mark.parametrize("name", CONFIGS)
def test_fast_path_exact_is_bit_identical_to_minitf(name):
    model = trained_like(CONFIGS[name])
    fast = ref.minitf_fast_path(copy.deepcopy(model), fused_norm=False, rope="contiguous")
    ids = ids_for()
    logits, weights = model(ids, return_attention=True)
    fast_logits, fast_weights = fast(ids, return_attention=True)
    assert torch.equal(fast_logits, logits)
    assert all(torch.equal(a, b) for a, b in zip(fast_weights, weights))
    assert torch.equal(fast(ids[:, :7]), model(ids[:, :7]))  # a second length: the cache is per length


@pytest.mark.parametrize("name", CONFIGS)
def test_fast_path_gives_minitf_logits_and_gradients(name):
    model = trained_like(CONFIGS[name])
    fast = ref.minitf_fast_path(copy.deepcopy(model), fused_norm=True, rope="complex")
    ids = ids_for()
    assert torch.allclose(grads(fast, ids), grads(model, ids), atol=1e-5)
    for (n, p), q in zip(model.named_parameters(), fast.parameters()):
        assert torch.allclose(q.grad, p.grad, atol=1e-5, rtol=1e-4), n


def test_fast_path_sees_changed_rope_frequencies():
    """The cache is keyed by the frequency tensor's version: an in-place change is not missed."""
    model = trained_like(CONFIGS["seed"])
    fast = ref.minitf_fast_path(copy.deepcopy(model), rope="contiguous", fused_norm=False)
    ids = ids_for()
    fast(ids)
    for m in (model, fast):
        for block in m.blocks:
            block.attn.inv_freq.mul_(0.5)
    assert torch.equal(fast(ids), model(ids))


def test_expert_refuses_per_head_frequencies_it_cannot_hold():
    model = trained_like(CONFIGS["wide"])
    model.blocks[0].attn.inv_freq[1] *= 2
    with pytest.raises(ValueError, match="same frequencies"):
        ref.ExpertTransformer.from_minitf(model)


def test_runner_reads_the_recipe_command(tmp_path, monkeypatch):
    run = script("bench/run.py", "bench_run")
    monkeypatch.setattr(run, "ROOT", tmp_path)
    assert run.read_recipe()[1].startswith("placeholder")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "recipes.md").write_text("Train:\n\n```\npython -m minitf train --d-model 32 \\\n"
                                        "  --steps 10 --out m.pt\n```\n")
    cmd, source = run.read_recipe()
    assert source == "docs/recipes.md"
    assert cmd.split() == ["python", "-m", "minitf", "train", "--d-model", "32", "--steps", "10",
                           "--out", "m.pt"]


def test_the_suite_section_reads_pytests_own_time_and_holds_it_to_the_goals(tmp_path, monkeypatch):
    run = script("bench/run.py", "bench_run")
    said = {"test-unit": "== 1904 passed, 2 skipped in 24.10s ==", "test": "== 2172 passed in 51.30s =="}
    real = run.subprocess.run
    monkeypatch.setattr(run.subprocess, "run", lambda cmd, **kw: type("Done", (), {
        "returncode": 0, "stdout": f"...\n{said[cmd[-1]]}\n"})() if cmd[0] == "make" else real(cmd, **kw))
    data = run.bench_suite(type("Args", (), {"quick": False, "suite_repeats": 2})())
    assert [r["pytest_seconds"] for r in data["runs"]["test-unit"]] == [24.1, 24.1]
    run.save_result("suite", data, tmp_path)
    run.render(tmp_path, tmp_path / "REPORT.md", [])
    report = (tmp_path / "REPORT.md").read_text()
    assert "| `make test-unit` | 24.1 (24.1–24.1) | 2 of 2 |" in report
    assert "| pytest of `make test-unit` ≤ 25 s | yes |" in report
    assert "| pytest of `make test` ≤ 50 s | **no** | 51.3 (51.3–51.3) s |" in report


# --- every script in bench/ earns its place: `make bench` reaches it -------------------------------

import ast  # noqa: E402

BENCH = ROOT / "bench"


def scripts_named(source: str) -> set[str]:
    """The bench scripts a source runs by name: string literals 'x.py' or 'bench/x.py' (f-strings'
    parts included) that name a file of bench/."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            name = node.value.removeprefix("bench/")
            if name.endswith(".py") and "/" not in name and (BENCH / name).is_file():
                found.add(name[:-3])
    return found


def bench_imports(source: str) -> set[str]:
    """The bench modules a source imports (`import lm`, `from store import …`)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else []
        found |= {n.split(".")[0] for n in names if (BENCH / f"{n.split('.')[0]}.py").is_file()}
    return found


def reachable_from_make_bench() -> set[str]:
    """bench/run.py (what `make bench` runs), every script it runs by name, and every bench module
    any of them imports, followed to the end."""
    seen, todo = set(), ["run"]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        source = (BENCH / f"{name}.py").read_text()
        todo += sorted((scripts_named(source) if name == "run" else set()) | bench_imports(source))
    return seen


def test_every_bench_script_is_reachable_from_make_bench():
    scripts = {p.stem for p in BENCH.glob("*.py")}
    assert not scripts - reachable_from_make_bench(), \
        "bench scripts no `make bench` section runs or imports: add a section to bench/run.py or delete them"


def test_every_section_of_make_bench_is_one_it_can_run():
    run = script("bench/run.py", "bench_run")
    source = (BENCH / "run.py").read_text()
    for name in run.SECTIONS:
        assert f'"{name}": lambda' in source, f"section {name} has no entry in bench/run.py's main"
    assert {"norm_position", "train_seeds", "lm_best_profile", "lm_best_sweep"} <= set(run.SECTIONS)


def test_the_reachability_check_sees_a_script_nothing_runs():
    assert scripts_named('cmd = [sys.executable, "bench/lm.py"]\nbench_script("tiny_sweep.py", args)\n') == \
        {"lm", "tiny_sweep"}
    assert scripts_named('f"bench/{script}"\n"nowhere.py"\n') == set()
    assert bench_imports("from store import Store\nimport lm, torch\nfrom .x import y\n") == {"store", "lm"}
    assert "lm_best" in reachable_from_make_bench() and "store" in reachable_from_make_bench()
