"""Optional exercises (`Exercise.optional`, issue 30): a learner who skips one loses nothing.

Where notebook 08 builds the model and its training from the saved pieces, an optional piece that
is not written is the library's own (its declaration's `reference`) and the table says "library —
optional, not written"; an unwritten required piece stays the reference solution, as before. A
required exercise whose function calls an optional one by name (train_step → my_clip_gradients) is
checked with the library's in its place while that one is not written. The minutes are held by
tests/notebooks/test_course_budget.py.
"""
import inspect
import re

import pytest
import torch

import minitf
from minitf import parts, solutions
from minitf.course import my_parts
from minitf.course import training_parts as tp
from minitf.course.exercises import EXERCISES
from minitf.experiments import train_seeds
from support import course_map, run_with_saved_pieces


OPTIONAL = sorted(name for name, ex in EXERCISES.items() if ex.optional)
PIECES = {**parts.PIECES, **tp.TRAINING_PIECES}  # every piece notebook 08 builds from
REQUIRED_PIECES = [name for name in PIECES if not EXERCISES[name].optional]
OPTIONAL_PIECES = [name for name in PIECES if EXERCISES[name].optional]
FROM_AN_EXTRA = {"position_ids"}  # issue 42: coupled ids went to extra 11; a coupled model still takes yours


def test_each_optional_exercise_has_a_library_stand_in_and_is_on_the_main_path_or_extra_11():
    """Derived from the declarations (`optional=True`), not retyped: adding one breaks nothing here.
    Each names a library version with its own signature to stand in for it."""
    assert OPTIONAL and OPTIONAL_PIECES
    for name in OPTIONAL:
        ex = EXERCISES[name]
        on = "extras" if name in FROM_AN_EXTRA else "main path"
        assert course_map.track(ex.notebook) == on, name
        assert len(inspect.signature(ex.reference).parameters) == len(inspect.signature(ex.solution).parameters), name


def save_required_pieces(folder, monkeypatch):
    """Every required piece saved (the reference solutions, as a learner's passed answers are saved),
    no optional one."""
    monkeypatch.setenv("MINITF_MY_PARTS", str(folder))
    for name in REQUIRED_PIECES:
        assert my_parts.save(name, getattr(solutions, f"my_{name}")) is not None, name


def test_with_no_piece_saved_required_ones_are_the_reference_and_optional_ones_the_librarys(tmp_path, monkeypatch):
    monkeypatch.setenv("MINITF_MY_PARTS", str(tmp_path / "empty"))
    for loaded in (parts.yours(), tp.mine()):
        for name in loaded.given():
            expected = my_parts.OPTIONAL_NOT_WRITTEN if EXERCISES[name].optional else my_parts.NOT_SAVED_YET
            assert loaded.origin[name] == expected, name
            assert re.search(rf"^{name} +{re.escape(expected)}$", repr(loaded), re.M), name
    assert my_parts.NOT_SAVED_YET == "reference solution (you have not saved one yet)"  # as before issue 30
    assert parts.yours().embed is solutions.my_embed and tp.mine().adamw is EXERCISES["adamw"].reference


def test_every_required_piece_saved_and_no_optional_one_builds_minitfs_model_and_trains_it(tmp_path, monkeypatch):
    """The assembly of notebook 08 with every optional piece missing: the model computes minitf's
    logits under configs that use each optional model piece (RMSNorm, SwiGLU, coupled position
    ids), and the training, run in float64 with the library's clipping, schedule and AdamW, takes
    the same steps as with the reference solutions in their place."""
    save_required_pieces(tmp_path, monkeypatch)
    model_parts, training = parts.yours(), tp.mine()
    for loaded in (model_parts, training):
        for name in loaded.given():
            if EXERCISES[name].optional:
                assert getattr(loaded, name) is EXERCISES[name].reference, name
                assert re.search(rf"^{name} +library — optional, not written$", repr(loaded), re.M), name
            else:
                assert loaded.origin[name] == f"yours ({tmp_path.name}/{name}.py)", name
    for config in (minitf.Config(d_model=8, n_heads=2, norm="rms", norm_position="pre", position_ids="coupled"),
                   minitf.Config.modern(d_model=8, n_heads=2, n_layers=2, d_ff=12)):
        check = parts.check(model_parts, config)
        assert check.ok, (config, str(check))

    def train(training_parts):
        torch.manual_seed(0)
        config = minitf.Config(**train_seeds.RECIPE["config"])  # 08's model
        model = parts.assemble(config, model_parts).double()
        optimizer = tp.make_optimizer(model, training_parts.adamw, lr=4e-2, weight_decay=0.01)
        pairs = minitf.make_pairs("shift", 32, seed=0)
        next_batch = tp.batches(pairs, 8, seed=1, make_batch=model_parts.make_batch)

        def one_step(model, optimizer, ids, targets):
            return training_parts.train_step(model, optimizer, ids, targets, training_parts.output_loss, 0.5)

        history = training_parts.train_loop(model, optimizer, next_batch, one_step,
                                            lambda step: training_parts.lr_at(step, 6, 4e-2, 2, 0.1), 6, 3,
                                            lambda model: {"loss": 0.0})
        return history["loss"], torch.cat([p.detach().flatten() for p in model.parameters()])

    library_losses, library_weights = train(training)
    references = tp.TrainingParts(**{name: getattr(solutions, f"my_{name}") for name in tp.TRAINING_PIECES})
    reference_losses, reference_weights = train(references)
    assert library_losses[-1] < library_losses[0]
    torch.testing.assert_close(torch.tensor(library_losses), torch.tensor(reference_losses), rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(library_weights, reference_weights, rtol=1e-9, atol=1e-12)


def test_a_saved_optional_piece_is_the_learners_and_a_broken_one_gives_way_to_the_reference(tmp_path, monkeypatch):
    """Writing an optional piece still counts: a saved one is used, and a wrong one is named and replaced,
    exactly as a required one."""
    save_required_pieces(tmp_path, monkeypatch)
    source = tmp_path / "clip.py"
    source.write_text("import torch\n\ndef clip_each_tensor_alone(parameters, max_norm):\n"
                      "    for p in parameters:\n        if p.grad is not None:\n"
                      "            torch.nn.utils.clip_grad_norm_([p], max_norm)\n")
    namespace = {}
    exec(compile(source.read_text(), str(source), "exec"), namespace)
    assert my_parts.save("clip_gradients", namespace["clip_each_tensor_alone"]) is not None
    assert my_parts.save("lr_at", solutions.my_lr_at) is not None
    training = tp.mine()
    assert training.origin["lr_at"] == f"yours ({tmp_path.name}/lr_at.py)"
    check = tp.check(training)
    assert list(check.broken) == ["clip_gradients"]
    fixed = tp.usable(training, check.broken)
    assert fixed.clip_gradients is solutions.my_clip_gradients
    assert fixed.origin["clip_gradients"].startswith("reference solution (yours is broken")
    assert fixed.origin["adamw"] == my_parts.OPTIONAL_NOT_WRITTEN


STUB_CLIP = '''
def my_clip_gradients(parameters, max_norm):
    """Scale all the gradients by one factor so that their joint norm is at most max_norm."""
    raise NotImplementedError("your clipping here")
'''


def test_a_right_train_step_passes_while_the_optional_clipping_it_calls_is_not_written(tmp_path, monkeypatch, capsys):
    """08's Solution for train_step calls my_clip_gradients; with 08's unwritten stub under that
    name the step used to be reported "not written yet". Now the check runs it with the library's
    clipping and says so; a wrong step is still named by its slip."""
    monkeypatch.setenv("MINITF_MY_PARTS", str(tmp_path / "my_parts"))
    source = tmp_path / "cells.py"
    source.write_text("import torch\n" + STUB_CLIP + "\n" + inspect.getsource(solutions.my_train_step) + '''
def my_train_step_without_zero_grad(model, optimizer, ids, targets, loss_fn, clip=1.0):
    loss = loss_fn(model(ids), targets)
    loss.backward()
    my_clip_gradients(model.parameters(), clip)
    optimizer.step()
    return loss
''')
    namespace = {}
    exec(compile(source.read_text(), str(source), "exec"), namespace)
    minitf.exercise("train_step", namespace["my_train_step"])
    said = capsys.readouterr().out
    assert said.startswith("✓ my_train_step agrees with minitf"), said
    assert ("my_clip_gradients is optional and yours does not pass its check yet: this check ran yours "
            "with the library's clip_gradients in its place") in said
    assert "saved to my_parts/train_step.py" in said
    loaded = tp.mine()
    assert loaded.origin["train_step"] == "yours (my_parts/train_step.py)"
    # loaded back, the saved step calls the library's clipping (the stub was never saved)
    assert loaded.train_step.__globals__["my_clip_gradients"] is EXERCISES["clip_gradients"].reference
    minitf.exercise("train_step", namespace["my_train_step_without_zero_grad"])
    said = capsys.readouterr().out
    assert "Yours never clears the gradients" in said and "not written yet" not in said
    namespace["my_clip_gradients"] = solutions.my_clip_gradients  # written: no stand-in, no line
    minitf.exercise("train_step", namespace["my_train_step"])
    assert "optional" not in capsys.readouterr().out


@pytest.mark.slow  # notebook 08 in a kernel: about 25 s
def test_notebook_08_with_every_required_piece_saved_and_no_optional_one_says_so_and_trains(tmp_path, monkeypatch):
    from test_training_parts import assert_08s_run_holds_its_sentences
    source = "import math\n\nimport torch\nimport torch.nn.functional as F\n\nimport minitf\n" + \
             "".join("\n\n" + inspect.getsource(getattr(solutions, f"my_{name}")) for name in REQUIRED_PIECES)
    text, cells = run_with_saved_pieces("08_assemble_your_model.ipynb",
                                        {name: f"my_{name}" for name in REQUIRED_PIECES}, source,
                                        tmp_path, monkeypatch)
    assert "ERROR" not in text, text
    for name in REQUIRED_PIECES:
        assert re.search(rf"^{name} +yours \(my_parts/{name}\.py\)$", text, re.M), name
    for name in OPTIONAL_PIECES:
        assert re.search(rf"^{name} +library — optional, not written$", text, re.M), name
    assert "✓ your training pieces compute what minitf's do" in text
    assert_08s_run_holds_its_sentences(cells)
