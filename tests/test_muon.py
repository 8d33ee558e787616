"""minitf's Muon (minitf/core/muon.py): torch.optim.Muon's update bit for bit when it orthogonalises
in bfloat16, close to the exact arithmetic in float32, the precision picked from the CPU's bf16,
and torch.optim.Muon's state dicts."""
import copy

import pytest
import torch

from minitf.core import muon as minitf_muon
from minitf.core.muon import Muon, orthogonal_dtype, orthogonalise

pytestmark = pytest.mark.usefixtures("one_thread")

SHAPES = [(48, 16), (16, 48), (32, 32)]  # tall, wide (transposed inside), square


def params_and_grads(seed=0):
    g = torch.Generator().manual_seed(seed)
    params = [torch.nn.Parameter(torch.randn(s, generator=g)) for s in SHAPES]
    grads = [[torch.randn(s, generator=g) for s in SHAPES] for _ in range(4)]
    return params, grads


def run(make, steps_grads, params):
    opt = make(params)
    for grads in steps_grads:
        for p, gr in zip(params, grads):
            p.grad = gr.clone()
        opt.step()
    return opt


@pytest.mark.parametrize("options", [
    dict(lr=0.02, weight_decay=0.1, adjust_lr_fn="match_rms_adamw"),
    dict(lr=0.05, weight_decay=0.0, nesterov=False),
    dict(lr=0.01, momentum=0.9, adjust_lr_fn="original", ns_steps=3),
])
def test_in_bfloat16_it_is_torchs_muon_bit_for_bit(options):
    ref_params, steps = params_and_grads()
    ours_params = [torch.nn.Parameter(p.detach().clone()) for p in ref_params]
    ref = run(lambda ps: torch.optim.Muon(ps, **options), steps, ref_params)
    ours = run(lambda ps: Muon(ps, dtype=torch.bfloat16, **options), steps, ours_params)
    for a, b in zip(ref_params, ours_params):
        assert torch.equal(a, b)
    for a, b in zip(ref_params, ours_params):
        assert torch.equal(ref.state[a]["momentum_buffer"], ours.state[b]["momentum_buffer"])


def test_in_float32_it_is_close_to_the_exact_iteration():
    """float32 is float64's iteration to float32's rounding; bfloat16 only to about 1e-2."""
    g = torch.Generator().manual_seed(1)
    coefficients = (3.4445, -4.7750, 2.0315)
    for shape in SHAPES:
        update = torch.randn(shape, generator=g)
        exact = orthogonalise(update.double(), coefficients, 5, 1e-7, torch.float64)
        in32 = orthogonalise(update, coefficients, 5, 1e-7, torch.float32)
        in16 = orthogonalise(update, coefficients, 5, 1e-7, torch.bfloat16)
        assert in32.dtype == torch.float32 and in32.shape == shape
        assert (in32.double() - exact).abs().max() < 1e-5
        assert 1e-4 < (in16.double() - exact).abs().max() < 0.1  # bf16 is coarse, but the same map


def test_a_float32_step_is_close_to_torchs():
    ref_params, steps = params_and_grads(2)
    ours_params = [torch.nn.Parameter(p.detach().clone()) for p in ref_params]
    run(lambda ps: torch.optim.Muon(ps, lr=0.02, adjust_lr_fn="match_rms_adamw"), steps, ref_params)
    run(lambda ps: Muon(ps, lr=0.02, adjust_lr_fn="match_rms_adamw", dtype=torch.float32), steps, ours_params)
    for a, b in zip(ref_params, ours_params):
        moved = (a.detach() - b.detach()).abs().max()
        assert 0 < moved < 2e-3  # 4 steps of lr 0.02·0.2·√48 ≈ 0.028 each; bf16 rounds at ~1 %


def test_the_precision_follows_the_cpus_bf16(monkeypatch):
    monkeypatch.setattr(minitf_muon, "cpu_has_fast_bf16", lambda: False)
    assert orthogonal_dtype(torch.device("cpu")) == torch.float32
    assert orthogonal_dtype(torch.device("cuda")) == torch.bfloat16
    monkeypatch.setattr(minitf_muon, "cpu_has_fast_bf16", lambda: True)
    assert orthogonal_dtype(torch.device("cpu")) == torch.bfloat16


@pytest.mark.parametrize("avx512_bf16, cap, fast", [
    (True, "AVX2", False), (True, "AVX512_CORE", False), (True, "AVX512_CORE_BF16", True),
    (True, "avx512_core_amx", True), (False, None, False)])
def test_a_onednn_isa_cap_below_bf16_or_a_cpu_without_it_means_float32(monkeypatch, avx512_bf16, cap, fast):
    """ONEDNN_MAX_CPU_ISA=AVX2 (or AVX512_CORE) makes oneDNN emulate bf16: slow, so float32."""
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: avx512_bf16)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False)
    monkeypatch.setattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", lambda: True, raising=False)
    if cap is None:
        monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    else:
        monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", cap)
    minitf_muon.cpu_has_fast_bf16.cache_clear()
    try:
        assert minitf_muon.cpu_has_fast_bf16() is fast
    finally:
        monkeypatch.undo()
        minitf_muon.cpu_has_fast_bf16.cache_clear()


def test_torchs_state_dict_loads_and_resumes_the_same():
    """A run saved with torch.optim.Muon (the checkpoints before minitf's own) goes on in minitf's."""
    ref_params, steps = params_and_grads(3)
    ours_params = [torch.nn.Parameter(p.detach().clone()) for p in ref_params]
    ref = run(lambda ps: torch.optim.Muon(ps, lr=0.02), steps[:2], ref_params)
    ours = Muon(ours_params, lr=0.02, dtype=torch.bfloat16)
    for a, b in zip(ref_params, ours_params):
        b.data.copy_(a.data)
    ours.load_state_dict(copy.deepcopy(ref.state_dict()))  # a saved one: not the live buffers
    assert ours.state_dict().keys() == ref.state_dict().keys()
    run(lambda ps: ref, steps[2:], ref_params)
    run(lambda ps: ours, steps[2:], ours_params)
    for a, b in zip(ref_params, ours_params):
        assert torch.equal(a, b)


def test_the_bench_shows_a_muon_step_within_1_3_adamw_steps_without_bf16():
    """bench/results/muon_step.json (`make bench`, section muon_step): with the CPU's bf16 switched
    off (really off: a bf16 product many times a float32 one) minitf's Muon step costs <= 1.3 AdamW
    steps where torch.optim.Muon's costs more; with it on, Muon keeps bf16. docs/recipes.md says so."""
    import json
    import re

    from support import ROOT
    result = json.loads((ROOT / "bench" / "results" / "muon_step.json").read_text())
    on, off = result["settings"]["as it is"], result["settings"]["bf16 off"]
    assert off["fast_bf16"] is False and off["minitf_muon_dtype"] == "float32"
    assert off["matmul_pair_ms"]["bfloat16"] > 5 * off["matmul_pair_ms"]["float32"]
    assert off["ratio_to_adamw"]["muon (minitf)"] <= 1.3 < off["ratio_to_adamw"]["muon (torch, bf16)"]
    assert on["fast_bf16"] is True and on["minitf_muon_dtype"] == "bfloat16"
    text = " ".join((ROOT / "docs" / "recipes.md").read_text().split())
    for ratio in (on["ratio_to_adamw"]["muon (minitf)"], off["ratio_to_adamw"]["muon (minitf)"],
                  off["ratio_to_adamw"]["muon (torch, bf16)"]):
        assert f"{ratio:.2f}×" in text
    pair = off["matmul_pair_ms"]["bfloat16"] / off["matmul_pair_ms"]["float32"]
    assert re.search(rf"bf16 matrix product took {pair:.1f}× a float32 one", text)
