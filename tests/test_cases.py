"""The one random-case helper and the one slip comparison every exercise uses."""
import torch

from minitf.course.cases import random_case, same


def test_a_case_is_the_same_numbers_for_the_same_seed_and_a_generator_draws_on():
    assert torch.equal(random_case(3, 4, seed=5), random_case(3, 4, seed=5))
    x = random_case(2, 6, seed=1, low=-3, high=3)
    assert x.dtype == torch.float64 and x.min() >= -3 and x.max() < 3
    g = torch.Generator().manual_seed(100)
    first, second = random_case(2, 3, seed=g), random_case(2, 3, seed=g)
    both = random_case(4, 3, seed=torch.Generator().manual_seed(100))
    assert torch.equal(torch.cat([first, second]), both)


def test_same_is_the_checks_tolerance_looser_in_float32_and_only_for_float_tensors_of_one_shape():
    x = random_case(4, 4, seed=0)
    assert same(x + 5e-6, x) and not same(x + 5e-5, x)
    assert same((x + 5e-5).float(), x)  # float32 results are compared ten times more loosely
    assert not same(x, x[:2]) and not same(x.tolist(), x) and not same(x, None)
    assert not same(torch.arange(3), torch.arange(3))  # a whole-number result is not a slip's
    nan = torch.tensor([float("nan"), 1.0], dtype=torch.float64)
    assert same(nan, nan.clone())  # a slip that gives NaN where yours does is yours
