"""bench/store.py, the one resumable store of the bench studies: a done run is skipped, a changed
spec runs again, a write never leaves half a file, and runs stored before the hash are recognised."""
import importlib
import json
import sys

import pytest

from support import ROOT, script

store_module = script("bench/store.py")
Store, spec_hash = store_module.Store, store_module.spec_hash


class Trainer:
    """Counts the runs it is asked for."""

    def __init__(self):
        self.calls = []

    def __call__(self, name):
        def compute():
            self.calls.append(name)
            return {"loss": float(len(self.calls))}
        return compute


def test_resume_skips_done_runs_and_a_changed_spec_runs_again(tmp_path):
    train = Trainer()
    first = Store(tmp_path, "study")
    first.doc["runs"] = {}
    for seed in (0, 1):
        first.run(first.doc["runs"], {"d": 8, "seed": seed}, train(f"d8/{seed}"), key=f"d8/seed{seed}")
    assert train.calls == ["d8/0", "d8/1"]
    again = Store(tmp_path, "study")  # a new process resumes from the file
    record, new = again.run(again.doc["runs"], {"d": 8, "seed": 0}, train("again"), key="d8/seed0")
    assert not new and record["loss"] == 1.0 and train.calls == ["d8/0", "d8/1"]
    record, new = again.run(again.doc["runs"], {"d": 8, "seed": 0, "steps": 600}, train("changed"),
                            key="d8/seed0")
    assert new and train.calls[-1] == "changed"
    assert json.loads((tmp_path / "study.json").read_text())["runs"]["d8/seed0"]["spec_sha"] == \
        spec_hash({"d": 8, "seed": 0, "steps": 600})


def test_the_hash_ignores_dict_order_and_tuples():
    assert spec_hash({"a": 1, "b": (2, 3)}) == spec_hash({"b": [2, 3], "a": 1})
    assert spec_hash({"a": 1}) != spec_hash({"a": 1.5})


def test_a_list_table_replaces_the_slot_of_a_changed_run(tmp_path):
    train, store = Trainer(), Store(tmp_path, "ladder")
    runs = store.doc.setdefault("runs", [])
    slot = lambda seed: lambda r: r["seed"] == seed  # noqa: E731
    for seed in (0, 1):
        store.run(runs, {"lr": 1e-2, "seed": seed}, lambda s=seed: {"seed": s, **train("x")()}, replaces=slot(seed))
    store.run(runs, {"lr": 3e-3, "seed": 0}, lambda: {"seed": 0, **train("y")()}, replaces=slot(0))
    assert [(r["seed"], r["spec_sha"]) for r in runs] == [(1, spec_hash({"lr": 1e-2, "seed": 1})),
                                                         (0, spec_hash({"lr": 3e-3, "seed": 0}))]


def test_a_run_stored_before_the_hash_is_recognised_by_its_fields(tmp_path):
    (tmp_path / "old.json").write_text(json.dumps({"runs": {"d8/seed0": {"config": {"d": 8}, "seed": 0, "loss": 0.5}}}))
    train, store = Trainer(), Store(tmp_path, "old")
    legacy = lambda r: {"config": r["config"], "seed": r["seed"]}  # noqa: E731
    record, new = store.run(store.doc["runs"], {"config": {"d": 8}, "seed": 0}, train("a"), key="d8/seed0",
                            legacy=legacy)
    assert not new and record["loss"] == 0.5 and train.calls == []
    _, new = store.run(store.doc["runs"], {"config": {"d": 6}, "seed": 0}, train("b"), key="d8/seed0",
                       legacy=legacy)
    assert new and train.calls == ["b"]


def test_an_interrupted_write_leaves_the_old_file(tmp_path, monkeypatch):
    store = Store(tmp_path, "study")
    store.doc["runs"] = {"a": {"loss": 1.0}}
    store.save("# report\n")
    before = (tmp_path / "study.json").read_text()

    def crash(self, text, encoding=None):  # the write dies part-way, after some bytes
        with open(self, "w") as f:
            f.write(text[:5])
        raise KeyboardInterrupt

    monkeypatch.setattr(store_module.Path, "write_text", crash)
    store.doc["runs"]["b"] = {"loss": 2.0}
    with pytest.raises(KeyboardInterrupt):
        store.save("# new report\n")
    monkeypatch.undo()
    assert (tmp_path / "study.json").read_text() == before
    assert (tmp_path / "study.md").read_text() == "# report\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["study.json", "study.md"]  # no temporary left


def test_a_quick_run_starts_afresh_and_out_is_a_folder(tmp_path):
    (tmp_path / "study.json").write_text('{"runs": {"a": 1}}')
    assert Store(tmp_path, "study", fresh=True).doc == {}
    assert store_module.out_folder("study", tmp_path / "new", quick=True) == tmp_path / "new"
    assert (tmp_path / "new").is_dir()
    assert store_module.out_folder("study", None, quick=False) == ROOT / "minitf" / "experiments" / "stored"


STUDIES = {"ablation": ["run_one"], "length_study": ["run_one"], "tiny_sweep": ["run_one"],
           "lm_fast": ["run_arm", "reference"], "lm_growth": ["run"], "lm_envelope": [],
           "bpe": ["run", "probe", "tokenizer_speed"]}


@pytest.mark.slow
@pytest.mark.parametrize("study", list(STUDIES))
def test_resuming_a_stored_study_trains_nothing_again(study, tmp_path, monkeypatch):
    """Every stored run is recognised as done by the study's current arms (the specs match): a
    study whose arms drifted from its stored result would re-train here instead."""
    import shutil
    for f in (ROOT / "minitf" / "experiments" / "stored").glob("*.json"):
        shutil.copy(f, tmp_path / f.name)
    module = importlib.import_module(study)

    def trained(*args, **kwargs):
        raise AssertionError(f"{study}: a stored run would be trained again")
    for name in STUDIES[study]:
        monkeypatch.setattr(module, name, trained)
    if study == "lm_envelope":
        monkeypatch.setattr(module.G, "run", trained)
    before = json.loads((tmp_path / f"{study}.json").read_text())["runs"]
    assert module.main(["--out", str(tmp_path)]) == 0
    assert len(json.loads((tmp_path / f"{study}.json").read_text())["runs"]) == len(before)


# --- every stored report is what its study renders from its stored JSON ----------------------------

STORED = ROOT / "minitf" / "experiments" / "stored"
# a stored report → the bench script and its function that render it from the stored JSON
REPORTS = {"lm": ("lm", "report"), "lm_best": ("lm_best", "report"),
           "lm_best_ablation": ("lm_best_ablation", "report"), "lm_fast": ("lm_fast", "report"),
           "nanogpt_quickstart": ("nanogpt", "report"), "nanogpt_quickstart_default_threads": ("nanogpt", "report"),
           "lm_envelope": ("lm_envelope", "report"), "lm_growth": ("lm_growth", "report"),
           "length_study": ("length_study", "render"), "tiny_sweep": ("tiny_sweep", "render"),
           "fast_recipe": ("fast_recipe", "render"), "origami_growth": ("origami_growth", "markdown"),
           "origami_recipe_growth": ("origami_recipe_growth", "markdown"),
           "norm_position": ("norm_position", "report"), "train_seeds": ("train_seeds", "report"),
           "lm_best_profile": ("lm_best_profile", "report"), "lm_best_sweep": ("lm_best_sweep", "report"),
           "bpe": ("bpe", "report")}


def rendered(study: str) -> str:
    doc = json.loads((STORED / f"{study}.json").read_text())
    if study == "ablation":  # the ladder renders itself (minitf.experiments.ablation)
        from minitf.experiments.ablation import Ablation
        return Ablation.from_dict(doc).markdown(command="python bench/ablation.py")
    script, function = REPORTS[study]
    return getattr(importlib.import_module(script), function)(doc)


def test_every_stored_report_has_its_renderer():
    assert {p.stem for p in STORED.glob("*.md")} == set(REPORTS) | {"ablation"}


@pytest.mark.parametrize("study", [*REPORTS, "ablation"])
def test_each_stored_report_is_what_its_study_renders_from_its_json(study):
    """The reports share their helpers (bench/reporting.py); a change to one that changed what a
    stored report says, or a report edited by hand, fails here."""
    assert rendered(study).rstrip("\n") == (STORED / f"{study}.md").read_text().rstrip("\n")


# the cheap studies' smoke runs (a few seconds of CPU each): `--quick` works, and writes to --out its
# result and the report rendered from it
QUICK = ["norm_position", "train_seeds", "ablation", "length_study", "tiny_sweep", "lm_growth",
         "origami_growth", "origami_recipe_growth"]


@pytest.mark.slow
@pytest.mark.parametrize("study", QUICK)
def test_a_cheap_study_runs_quick(study, tmp_path, monkeypatch):
    import subprocess
    done = subprocess.run([sys.executable, f"bench/{study}.py", "--quick", "--out", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    monkeypatch.setattr(sys.modules[__name__], "STORED", tmp_path)  # render the smoke run's JSON
    assert json.loads((tmp_path / f"{study}.json").read_text())["runs"]
    assert rendered(study).rstrip("\n") == (tmp_path / f"{study}.md").read_text().rstrip("\n")
