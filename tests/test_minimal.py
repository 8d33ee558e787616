"""minitf/core/minimal.py, the seed model to read, computes what `Transformer(Config())` computes."""
import pytest
import torch

from minitf import Config, Transformer, count_parameters
from minitf.core.minimal import MinimalTransformer
from support import assert_close_float32


def pair(seed: int, dtype=torch.float32):
    """The library's seed model with random weights (every γ and β too) and the minimal model
    holding the same weights, both in eval mode (the library's dropout off)."""
    torch.manual_seed(seed)
    library = Transformer(Config()).to(dtype).eval()
    with torch.no_grad():
        for p in library.parameters():
            p.uniform_(-1, 1)
    minimal = MinimalTransformer().to(dtype).eval()
    minimal.load_state_dict(library.state_dict())  # strict: every name and shape is the library's
    return library, minimal


def random_bytes(seed: int, batch: int = 3, length: int = 40):
    return torch.randint(0, 256, (batch, length), generator=torch.Generator().manual_seed(seed))


def test_minimal_model_has_the_seed_models_parameters():
    library, minimal = Transformer(Config()), MinimalTransformer()
    assert count_parameters(minimal) == count_parameters(library) == 2648
    assert [(n, p.shape) for n, p in minimal.named_parameters()] == \
        [(n, p.shape) for n, p in library.named_parameters()]
    assert minimal.state_dict().keys() == library.state_dict().keys()  # the RoPE frequencies too
    for name, buffer in minimal.named_buffers():
        torch.testing.assert_close(buffer, dict(library.named_buffers())[name], rtol=0, atol=0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_minimal_model_computes_the_librarys_logits_in_float64(seed):
    library, minimal = pair(seed, torch.float64)
    ids = random_bytes(seed)
    with torch.no_grad():
        expected, got = library(ids), minimal(ids)
    assert expected.dtype == got.dtype == torch.float64
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("seed", [0, 1])
def test_minimal_model_computes_the_librarys_logits_in_float32(seed):
    library, minimal = pair(seed)
    ids = random_bytes(seed + 10, batch=2, length=128)
    with torch.no_grad():
        reference = library.double()(ids)  # float64: the two float32 runs sum in different orders
        got = minimal(ids)
    assert got.dtype == torch.float32
    assert_close_float32(got, reference)


def test_minimal_model_is_causal_and_refuses_a_window_it_cannot_read():
    _, minimal = pair(0, torch.float64)
    ids = random_bytes(5, batch=1, length=12)
    changed = ids.clone()
    changed[0, 7:] = (changed[0, 7:] + 1) % 256
    with torch.no_grad():
        torch.testing.assert_close(minimal(changed)[:, :7], minimal(ids)[:, :7], rtol=0, atol=0)
    with pytest.raises(ValueError, match="length ≤ 128"):
        minimal(torch.zeros(1, 129, dtype=torch.long))
