"""`python -m minitf doctor`: each verdict, on this machine and on faked differences, which are
reported with their explanation, never raised."""
import json
import re

import pytest
import torch

from minitf import doctor
from minitf.cli import main
from support import ROOT

ALL_WELL = """\
ok  versions: every package as pinned in pyproject.toml
ok  forward pass, float64: the book's logits to 1e-12
ok  forward pass, float32: the book's logits within float32 rounding
ok  training step, float64: the book's losses to 1e-12
ok  training step, float32: the book's losses within float32 rounding
ok  seeded tiny model, float32: the book's logits within float32 rounding
All well: this set-up computes the book's numbers."""


def finding(report, topic):
    return next(f for f in report.findings if f.topic == topic)


def altered(tmp_path, change):
    """The stored reference, changed by change(ref), in a file of its own."""
    ref = doctor.reference()
    change(ref)
    path = tmp_path / "reference.json"
    path.write_text(json.dumps(ref))
    return path


@pytest.fixture
def quick_speed(monkeypatch):
    """The command's timed workload (16 training steps) stood in for by a number: it runs for real
    once, in test_the_speed_workload_times_training_steps_on_one_thread."""
    monkeypatch.setattr(doctor, "speed_workload", lambda repeats=doctor.SPEED_REPEATS: 0.5)


def test_this_machine_computes_the_books_numbers(capsys, quick_speed):
    """Under any CPU kernels and thread count the suite runs with (CI: the default kernels too)."""
    report = doctor.check()
    assert report.ok, str(report)
    assert report.verdict() == ALL_WELL  # what notebook 00 prints: the same on every such machine
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    report_part, link = out.rstrip().rsplit("\n", 1)
    assert "CPU kernels" in out and "threads" in out and report_part.endswith(ALL_WELL.splitlines()[-1])
    assert link == doctor.TROUBLESHOOTING  # the last line sends a learner to the troubleshooting page


def test_the_stored_values_are_float64_and_float32_results():
    """float64 to 1e-12, float32 within FLOAT32_ROUNDING of the values' scale, stated directly."""
    ref = doctor.reference()["values"]
    for name, (_, compute, dtype) in doctor.CHECKS.items():
        got, stored = compute(), torch.tensor(ref[name], dtype=torch.float64)
        assert got.dtype == dtype and got.shape == stored.shape
        bound = doctor.FLOAT64_AGREEMENT if dtype == torch.float64 else doctor.FLOAT32_ROUNDING
        assert (got.double() - stored).abs().max() <= bound * stored.abs().max(), name


def test_another_torch_is_reported_with_the_command_that_fixes_it(monkeypatch, capsys, quick_speed):
    real = doctor.installed
    monkeypatch.setattr(doctor, "installed", lambda p: "2.12.1+cpu" if p == "torch" else real(p))
    report = doctor.check()  # returns: a difference is no exception
    versions = finding(report, "versions")
    assert not versions.ok and versions.summary == "torch 2.12.1+cpu (pinned 2.13.0)"
    assert "pip install torch==2.13.0" in versions.detail and "make lab" in versions.detail
    assert not report.ok and all(f.ok for f in report.findings[1:])
    assert "DIFFERS  versions: torch 2.12.1+cpu (pinned 2.13.0)\n    The book was made" in report.verdict()
    assert main(["doctor"]) == 1
    assert "1 of 6 checks differ from the book" in capsys.readouterr().out


def test_a_missing_package_differs_and_a_missing_optional_extra_does_not(monkeypatch):
    real = doctor.installed
    monkeypatch.setattr(doctor, "installed", lambda p: None if p in ("nbval", "lightning") else real(p))
    versions = finding(doctor.check(), "versions")
    assert not versions.ok and versions.summary == "nbval not installed (pinned 0.11.0)"
    monkeypatch.setattr(doctor, "installed", lambda p: None if p == "lightning" else real(p))
    versions = finding(doctor.check(), "versions")
    assert versions.ok and "lightning not installed (optional: the lightning extra)" in versions.detail


def test_minitf_not_installed_is_a_finding(monkeypatch):
    def not_installed():
        raise doctor.importlib.metadata.PackageNotFoundError("minitf")

    monkeypatch.setattr(doctor, "pins", not_installed)
    versions = finding(doctor.check(), "versions")
    assert not versions.ok and "make lab" in versions.detail


def test_a_float64_difference_is_not_rounding(tmp_path):
    def nudge(ref):
        ref["values"]["forward pass, float64"][0] += 1e-9  # 1e-9 of logits near 1: far beyond 1e-12

    f = finding(doctor.check(altered(tmp_path, nudge)), "forward pass, float64")
    assert not f.ok and f.summary.endswith("more than rounding")
    assert "this is not rounding" in f.detail and "git status" in f.detail  # torch is the book's

    def other_torch(ref):
        nudge(ref)
        ref["made_with"]["torch"] = "2.12.1+cpu"

    f = finding(doctor.check(altered(tmp_path, other_torch)), "forward pass, float64")
    assert not f.ok and "is not the book's (2.12.1+cpu)" in f.detail and "make lab" in f.detail


def test_float32_last_digits_are_rounding_and_explained(tmp_path):
    """One float32 step away from every stored value, on 'another machine': still ok, explained."""
    def one_step_off(ref):
        stored = torch.tensor(ref["values"]["forward pass, float32"], dtype=torch.float32)
        ref["values"]["forward pass, float32"] = torch.nextafter(stored, stored + 1).tolist()
        ref["made_with"]["cpu_capability"] = "NEON"

    report = doctor.check(altered(tmp_path, one_step_off))
    f = finding(report, "forward pass, float32")
    assert f.ok and f.detail.endswith(": rounding") and "largest difference" in f.detail
    here = doctor.conditions()["cpu_capability"]
    assert any(f"this CPU's kernels ({here}; the book's: NEON)" in note for note in report.notes)
    assert report.verdict() == ALL_WELL  # rounding changes nothing a notebook shows


def test_float32_beyond_rounding_differs(tmp_path):
    def coarse(ref):
        ref["values"]["training step, float32"][0] *= 1.001

    f = finding(doctor.check(altered(tmp_path, coarse)), "training step, float32")
    assert not f.ok and f.summary.endswith("more than float32 rounding")
    assert "float64 checks agree" in f.detail and "get_float32_matmul_precision" in f.detail


def test_other_random_draws_are_explained(tmp_path):
    def other_draws(ref):
        ref["made_with"]["seeded_weights_sha256"] = "0" * 64

    report = doctor.check(altered(tmp_path, other_draws))
    assert report.ok and any("torch.randn draws normal numbers" in note for note in report.notes)
    # with the stored fingerprint: the note where the draws differ (the default kernels), only there
    same = doctor.seeded_weights_hash() == doctor.reference()["made_with"]["seeded_weights_sha256"]
    assert any("torch.randn" in note for note in doctor.check().notes) == (not same)


def test_record_writes_what_check_reads(tmp_path):
    path = doctor.record(tmp_path / "reference.json")
    assert doctor.check(path).ok
    assert json.loads(path.read_text())["made_with"]["threads"] == 1  # as the notebooks run


def test_a_gpu_is_measured_against_the_cpu_and_a_broken_one_reported():
    """No GPU here: the CPU stands in for one (bit for bit), the meta device for a broken one."""
    lines = doctor.device_report([("cpu", "stand-in", (torch.float64, torch.float32))])
    assert "stand-in), the forward pass against this CPU's: float64 bit for bit, float32 bit for bit." in lines[0]
    assert "Why: a GPU's kernels" in lines[0]
    broken = doctor.device_report([("meta", "broken", (torch.float32,))])
    assert "float32 could not be computed" in broken[0]
    assert doctor.device_report([])[0].startswith("GPU: none here")


def test_the_doctor_leaves_the_callers_random_state_alone():
    torch.manual_seed(3)
    expected = torch.rand(4)
    torch.manual_seed(3)
    doctor.check()
    assert torch.equal(torch.rand(4), expected)


@pytest.mark.parametrize("name", list(doctor.CHECKS))
def test_every_check_is_in_the_stored_file(name):
    ref = doctor.reference()
    assert len(ref["values"][name]) == (2 if name.startswith("training") else 256)


def test_the_troubleshooting_page_doctor_names_exists():
    name = re.search(r"\b([\w/]+\.md)\b", doctor.TROUBLESHOOTING)[1]
    assert (ROOT / name).is_file()


# --- how fast this machine is against the documented times' ------------------------------------

def test_the_stored_speed_names_its_cpu_and_instruction_set():
    speed = doctor.reference()["speed"]
    assert speed["seconds"] > 0 and speed["workload"] == doctor.SPEED_WORKLOAD
    assert "family" in speed["cpu"] and re.search(r"AVX2|AVX-512", speed["instructions"])


def test_the_speed_workload_times_training_steps_on_one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        seconds = doctor.speed_workload(repeats=1)  # the command takes the best of 3
        assert 0 < seconds < 60 and torch.get_num_threads() == 2  # the caller's threads come back
    finally:
        torch.set_num_threads(threads)


def test_the_factor_is_this_machines_time_over_the_stored_one(monkeypatch):
    stored = doctor.reference()["speed"]["seconds"]
    monkeypatch.setattr(doctor, "speed_workload", lambda: 2.5 * stored)
    monkeypatch.setattr(doctor, "cpu_has_fast_bf16", lambda: False)
    lines = doctor.speed_report(doctor.reference())
    assert lines[0].startswith("this CPU: ") and doctor.instruction_set() in lines[0]
    assert "expect about 2.5× the documented times here" in lines[1]
    assert "orthogonalises its updates in float32" in lines[2]


def test_muon_on_a_slow_bf16_is_warned_of(monkeypatch):
    monkeypatch.setattr(doctor, "speed_workload", lambda: 1.0)
    monkeypatch.setattr(doctor, "cpu_has_fast_bf16", lambda: True)
    monkeypatch.setattr(doctor, "matmul_pair_seconds", lambda dtype: 3.0 if dtype == torch.bfloat16 else 1.0)
    assert doctor.speed_report(doctor.reference())[-1].startswith("WARNING: Muon")
    monkeypatch.setattr(doctor, "matmul_pair_seconds", lambda dtype: 0.4 if dtype == torch.bfloat16 else 1.0)
    assert "in bf16 here, as torch.optim.Muon does" in doctor.speed_report(doctor.reference())[-1]


@pytest.mark.parametrize("flags, named", [
    ({"_is_avx512_supported": True, "_is_avx512_bf16_supported": True}, "AVX-512 with bf16"),
    ({"_is_avx512_supported": True}, "AVX-512"),
    ({"_is_avx2_supported": True}, "AVX2"),
    ({"_is_avx2_supported": True, "_is_amx_tile_supported": True}, "AVX2 with bf16"),
])
def test_the_instruction_set_is_named_as_the_docs_name_it(monkeypatch, flags, named):
    for name in ("_is_avx512_supported", "_is_avx2_supported", "_is_avx512_bf16_supported",
                 "_is_amx_tile_supported"):
        monkeypatch.setattr(torch.cpu, name, lambda v=flags.get(name, False): v)
    assert doctor.instruction_set() == named


def test_record_speed_stores_what_record_keeps(tmp_path, monkeypatch):
    path = doctor.record(tmp_path / "reference.json")
    monkeypatch.setattr(doctor, "speed_workload", lambda repeats: 0.75)
    assert doctor.record_speed(path)["seconds"] == 0.75
    doctor.record(path)  # the numbers again: the speed stays
    assert doctor.reference(path)["speed"]["seconds"] == 0.75 and doctor.check(path).ok


def test_the_command_prints_the_factor_but_notebook_00s_verdict_has_no_timing(monkeypatch, capsys):
    monkeypatch.setattr(doctor, "speed_workload", lambda: 1.0)
    assert doctor.check().speed == []  # the notebook's check times nothing
    doctor.main()
    out = " ".join(capsys.readouterr().out.split())  # the report wraps its lines
    assert "expect about" in out and "the documented times here" in out and "this CPU:" in out


def test_notebook_00s_check_prints_one_sentence_when_all_is_well_and_each_verdict_when_not(capsys, monkeypatch):
    """check_setup keeps the harness out of notebook 00: one sentence on a set-up that computes the
    book's numbers, every check's line and what to do as soon as one differs."""
    from minitf.notebook import check_setup

    check_setup()
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith("All well") and "6 checks" in out
    bad = doctor.Report(facts=[], findings=[doctor.Finding("versions", True, "as pinned"),
                                            doctor.Finding("forward pass", False, "off by 3e-5", "Reinstall torch.")])
    monkeypatch.setattr(doctor, "check", lambda: bad)
    check_setup()
    out = capsys.readouterr().out
    assert "ok  versions" in out and "DIFFERS  forward pass" in out and "Reinstall torch." in out
    assert out.rstrip().endswith("1 of 2 checks differ from the book: the reasons are above.")
