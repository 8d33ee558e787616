"""Claims notebook 10 (the same model with PyTorch Lightning) makes, held to what its executed
cells printed: the cells print, these tests hold the sentences (the Try-this's stopping step is
held in tests/test_lightning.py, which re-trains)."""
import math

from support import code, numbers, printed

NOTEBOOK = "10_lightning"


def test_minitf_train_starts_near_a_uniform_guess_and_learns():
    """Section 1's run: an untrained model's first loss is close to ln 256 (a uniform guess over the
    bytes), and 200 steps bring the held-out loss well below it. Float32 training: ranges, measured."""
    text = printed(NOTEBOOK, "train_pairs, val_pairs = minitf.data.make_splits(")
    first, held_out, steps = numbers(text.split(":", 1)[1])
    assert "steps=200" in code(NOTEBOOK) and steps == 200
    assert abs(first - math.log(256)) < 0.3
    assert 3.0 < held_out < 3.6


def test_lightning_trains_the_same_steps_to_the_same_losses():
    """"the same loss curve" (the introduction), "the two trainers are one computation" (section 1):
    both ran every step, and every training loss and the held-out loss agree."""
    steps, *same = printed(NOTEBOOK, "workdir = Path(tempfile.mkdtemp())").splitlines()
    assert numbers(steps) == [200, 200]                     # by minitf.train, by Lightning
    assert len(same) == 2 and all(line.endswith(": True") for line in same)   # every loss, held-out


def test_the_checkpoint_converted_for_minitf_gives_the_same_model():
    """Section 3: `to_minitf_checkpoint` keeps the config and the weights `minitf.load` needs."""
    lines = printed(NOTEBOOK, "[ckpt] = Path(").splitlines()
    assert [part.split(": ")[1] for part in lines[1].split(" | ")] == ["True", "True"]   # config, logits
    assert "'steps': 200" in lines[2] and "'lightning'" in lines[2]


def test_10_states_no_time_of_its_own_but_the_course_maps():
    """The map's minutes for 10 are counted by tools/course_map.py; the notebook must not state another
    (it once said "About 10 minutes" while the map said 5): any "N minutes" in it is the map's."""
    import re

    from support import course_map, markdown

    stated = [int(m) for m in re.findall(r"(\d+) min(?:utes?)?\b", markdown(NOTEBOOK))]
    minutes, _ = course_map.stated_map()["notebooks"][NOTEBOOK]
    assert all(m == minutes for m in stated), (stated, minutes)
