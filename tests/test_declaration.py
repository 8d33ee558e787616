"""One declaration per exercise: a throw-away exercise added through `Exercise` alone is checked
(a slip named, a library call refused, a right answer passed), saved to my_parts and used by
parts.assemble; the registries derive from the declarations, each in its notebook's lesson module."""
import pytest
import torch
import torch.nn.functional as F

import minitf
from minitf.course import lessons, my_parts, parts
from minitf.course.cases import first_slip, random_case
from minitf.course.declaration import Exercise, Piece, refused


def _lookup_cases():
    table = random_case(256, 4, seed=7)
    return [(torch.tensor([[72, 105, 9]]), table), (torch.tensor([[0, 255], [32, 10]]), table)]


def _lookup_slips(ids, table):
    return (first_slip([(F.embedding((ids + 1) % 256, table), "yours reads the row after each id")]),)


def my_throw_away_lookup(ids, table):
    return table[ids]  # the reference solution, beside its declaration


THROW_AWAY = Exercise(
    name="throw_away_lookup", notebook="01", teaches="a throw-away copy of the embedding lookup",
    difficulty=1, minutes=1, solution=my_throw_away_lookup,
    reference=lambda ids, table: F.embedding(ids, table), cases=_lookup_cases,
    hint="row b of the table is byte b's vector",
    options={"diagnoses": _lookup_slips}, library={F.embedding: "F.embedding"},
    own_work="indexing the table is fine: F.embedding is the lookup itself",
    piece=Piece(fills="model", order=99, call="throw_away_lookup(ids, table) → (B, T, C)"))


@pytest.fixture
def declared(tmp_path, monkeypatch):
    monkeypatch.setenv("MINITF_MY_PARTS", str(tmp_path))
    lessons.register(THROW_AWAY)
    yield THROW_AWAY
    lessons.unregister(THROW_AWAY.name)


def off_by_one(ids, table):
    return table[(ids + 1) % 256]


def through_the_library(ids, table):
    return F.embedding(ids, table)


def lookup(ids, table):
    return table[ids]


def test_a_throw_away_exercise_is_checked_saved_and_used_through_its_declaration(declared, tmp_path, capsys):
    assert lessons.pieces("model")["throw_away_lookup"] == (declared.call, "01")  # derived, not listed

    minitf.exercise("throw_away_lookup", off_by_one)
    wrong = capsys.readouterr().out
    assert "  Yours reads the row after each id\nHint: row b of the table" in wrong and "off_by_one on case 0" in wrong
    assert not (tmp_path / "throw_away_lookup.py").exists()

    minitf.exercise("throw_away_lookup", through_the_library)
    refused = capsys.readouterr().out
    assert "uses F.embedding" in refused and refused.endswith(f"Hint: {declared.own_work}\n")

    minitf.exercise("throw_away_lookup", lookup)
    right = capsys.readouterr().out
    assert right.startswith("✓ lookup agrees with minitf on 2 cases")
    assert "saved to " in right and "notebook 08 builds your model from it" in right

    found, origin = my_parts.load_saved(["throw_away_lookup"])
    assert "yours" in origin["throw_away_lookup"]
    torch.manual_seed(0)
    reference = minitf.Transformer(minitf.Config())
    torch.manual_seed(0)
    yours = parts.assemble(minitf.Config(), embed=found["throw_away_lookup"])
    ids = torch.tensor([[72, 105, 9, 33]])
    assert yours.embed.fn is found["throw_away_lookup"]  # the saved source, loaded back, is the lookup
    assert torch.equal(yours.eval()(ids), reference.eval()(ids))


def test_a_name_declared_twice_is_refused_naming_where(declared):
    with pytest.raises(ValueError, match="tests' copy: an exercise named 'throw_away_lookup' is declared already"):
        lessons.register(THROW_AWAY, "tests' copy")


REFUSED = [  # (what differs from THROW_AWAY, what the refusal at declaration says)
    (dict(name="bad_kind", piece=Piece(fills="optimizer", order=99, call=THROW_AWAY.call)),
     "fills='optimizer'"),
    (dict(name="no_call", piece=Piece(fills="model", order=99, call="")), "needs `call`"),
    (dict(options={"hints_by_diagnosis": {"permutaton": "…"}}),
     "a hint for diagnosis 'permutaton', which the checks never report"),
    (dict(name="misnamed"), "so it is named my_misnamed"),
]


@pytest.mark.parametrize("changes, says", REFUSED, ids=["kind", "call", "hint", "name"])
def test_a_wrong_declaration_is_refused_and_not_registered(changes, says):
    import dataclasses
    with pytest.raises(ValueError, match=says):
        lessons.register(dataclasses.replace(THROW_AWAY, **changes))
    assert changes.get("name", THROW_AWAY.name) not in lessons.EXERCISES


def test_each_lesson_module_declares_the_exercises_of_its_notebook():
    for lesson in lessons.LESSONS:
        number = lesson.__name__.rsplit(".", 1)[1][2:4]
        for ex in lesson.EXERCISES:
            assert ex.notebook == number, f"{lesson.__name__} declares {ex.name} for notebook {ex.notebook}"


def test_the_registries_are_the_declarations_that_fill_a_piece():
    model = [ex.name for ex in lessons.EXERCISES.values() if ex.fills == "model"]
    training = [ex.name for ex in lessons.EXERCISES.values() if ex.fills == "training"]
    assert sorted(parts.PIECES) == sorted(model) and list(parts.Parts.__dataclass_fields__)[:-1] == list(parts.PIECES)
    assert sorted(minitf.training_parts.TRAINING_PIECES) == sorted(training)
    assert list(minitf.training_parts.TrainingParts.__dataclass_fields__)[:-1] == \
        list(minitf.training_parts.TRAINING_PIECES)


def test_refused_derives_the_name_a_learner_types_and_asks_for_one_it_cannot():
    from torch import nn

    from minitf.core.generate import next_token
    derived = refused(F.softmax, torch.softmax, torch.Tensor.softmax, nn.Softmax.forward,
                      next_token, minitf.LayerNorm.formula, (minitf.attention, "minitf.attention"))
    assert list(derived.values()) == ["F.softmax", "torch.softmax", ".softmax()", "nn.Softmax",
                                      "minitf.core.generate.next_token",
                                      "minitf.core.norms.LayerNorm.formula", "minitf.attention"]
    with pytest.raises(ValueError, match=r"refused\(torch\._C\._special\.special_softmax\).*\(function, "):
        refused(torch.special.softmax)


# a refusal's name from before the face names were checked: next_token is minitf.core.generate's,
# not the face's; the name stays as learners have seen it
NOT_ON_THE_FACE = {"minitf.next_token"}


def test_a_face_name_in_a_refusal_is_on_the_face():
    """`on_face(fn)` names fn minitf.<its qualified name>: the face must have it there."""
    from minitf.course.declaration import on_face
    checked = 0
    for ex in lessons.EXERCISES.values():
        for fn, name in ex.library.items():
            if (fn, name) != on_face(fn) or name in NOT_ON_THE_FACE:
                continue
            found = minitf
            for part in name.removeprefix("minitf.").split("."):
                found = getattr(found, part)
            assert (found.forward if isinstance(found, type) else found) is fn, (ex.name, name)
            checked += 1
    assert checked >= 15


def test_the_maps_you_write_column_gains_a_new_exercise_from_its_declaration(declared):
    """`make map-minutes` writes the course maps' "you write" names: a declared exercise is added."""
    import sys

    from support import ROOT
    sys.path.insert(0, str(ROOT / "tools"))
    import map_minutes
    text = map_minutes.map_text(ROOT / "README.md")
    row = next(m for m in map_minutes.ROW.finditer(text) if (m["stem"] or m["number"]) == "01")
    assert "`throw_away_lookup`" not in row["write"]
    written = map_minutes.you_write(row["write"], "01")
    assert written.rstrip().endswith(", `throw_away_lookup`") and "`embed`" in written


def _strings_said_outside_dict_keys() -> set[str]:
    """Every string literal of the course wing that is not a dict's key: where a driver, a judge or a
    check reports a slip by its name (ExerciseError(…, ["_not_a_class"]), named_slip("_x", …))."""
    import ast
    from pathlib import Path
    said = set()
    for path in Path(minitf.course.__file__).parent.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        keys = {id(k) for node in ast.walk(tree) if isinstance(node, ast.Dict) for k in node.keys}
        said |= {node.value for node in ast.walk(tree)
                 if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in keys}
    return said


def test_every_slip_a_hint_is_for_is_one_a_check_reports():
    """A hint's key is a DIAGNOSES name (checked at declaration) or an exercise's own slip "_name":
    the name of a recogniser its diagnoses return, or one a driver or judge reports. A misspelt slip
    name would leave its hint unshown."""
    said = _strings_said_outside_dict_keys()
    checked = 0
    for ex in lessons.EXERCISES.values():
        slips = [k for k in (ex.options.get("hints_by_diagnosis") or {}) if k.startswith("_")]
        if not slips:
            continue
        diagnoses = ex.options.get("diagnoses")
        named = {getattr(r, "__name__", "") for r in diagnoses(*ex.cases()[0])} if diagnoses else set()
        for slip in slips:
            assert slip in named or slip in said, f"{ex.name}: a hint for {slip!r}, which no check reports"
            checked += 1
    assert checked >= 40
