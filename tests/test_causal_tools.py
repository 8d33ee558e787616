"""The course's causal tools (minitf.core.heads): a head's output recorded, replaced by its mean
(mean-ablation), or taken from another run (activation patching)."""
import pytest
import torch

import minitf
from minitf.core.heads import head_outputs, mean_ablate_heads, patch_heads


def model_of(n_layers=2, **changes):
    torch.manual_seed(0)
    config = minitf.Config(d_model=8, n_heads=2, n_layers=n_layers, norm_position="pre", dropout=0.0, **changes)
    return minitf.Transformer(config).double().eval()


def ids_of(*texts):
    return torch.tensor([list(t) for t in texts])


def test_head_outputs_are_each_heads_weighted_values():
    model = model_of(n_layers=1)
    ids = ids_of(b"hello\tifm", b"abcde\tbcd")
    [y] = head_outputs(model, ids)                                     # (B, T, H, hd)
    with torch.no_grad():
        _, [weights] = model(ids, return_attention=True)              # (B, H, T, T)
        x = model.blocks[0].norm1(model.embed(ids))
        v = model.blocks[0].attn.qkv(x).split(8, -1)[2].view(2, 9, 2, 4).transpose(1, 2)
    torch.testing.assert_close(y, (weights @ v).transpose(1, 2))
    assert y.shape == (2, 9, 2, 4)


def test_a_head_with_a_constant_output_survives_mean_ablation_but_not_zero_ablation():
    model = model_of()
    with torch.no_grad():  # head 1 of layer 0 reads nothing: its values are one constant vector
        qkv = model.blocks[0].attn.qkv
        qkv.weight[16 + 4:16 + 8] = 0
        qkv.bias[16 + 4:16 + 8] = torch.tensor([1.0, -2.0, 0.5, 3.0], dtype=torch.float64)
    ids = ids_of(b"hello\tifm", b"abcde\tbcd")
    before = model(ids)
    torch.testing.assert_close(mean_ablate_heads(model, [(0, 1)], ids)(ids), before)
    assert (minitf.ablate_heads(model, [(0, 1)])(ids) - before).abs().max() > 1e-3
    torch.testing.assert_close(model(ids), before)  # the model itself keeps its head


def test_mean_ablation_uses_only_the_positions_kept():
    model = model_of()
    ids = ids_of(b"hello\tifm", b"abcde\tbcd")
    keep = torch.zeros(ids.shape, dtype=torch.bool)
    keep[1, 4] = True            # the mean over one position is that position's output
    ablated = mean_ablate_heads(model, [(1, 0)], ids, keep)
    y = head_outputs(model, ids)[1][1, 4, 0]                          # head 1.0's output there
    out = model.blocks[1].attn.out
    torch.testing.assert_close(ablated.blocks[1].attn.out.bias, out.bias + out.weight[:, :4] @ y)
    assert (ablated.blocks[1].attn.out.weight[:, :4] == 0).all()
    torch.testing.assert_close(ablated.blocks[1].attn.out.weight[:, 4:], out.weight[:, 4:])


def test_patching_one_row_of_a_one_layer_model_gives_that_row_the_clean_logits():
    # in the last layer a head's output at row t reaches only row t's logits; the residual stream at
    # t is the same in both runs when they differ at another position, so the row becomes clean
    model = model_of(n_layers=1)
    clean, corrupted = ids_of(b"hello\tifm"), ids_of(b"hexlo\tifm")
    heads = [(0, 0), (0, 1)]
    patched = patch_heads(model, heads, clean, corrupted, positions=[7])
    with torch.no_grad():
        torch.testing.assert_close(patched[0, 7], model(clean)[0, 7])
        torch.testing.assert_close(patched[0, [6, 8]], model(corrupted)[0, [6, 8]])
        assert (model(clean)[0, 7] - model(corrupted)[0, 7]).abs().max() > 1e-6


def test_patching_a_run_into_itself_changes_nothing_and_the_model_keeps_no_hooks():
    model = model_of()
    ids = ids_of(b"hello\tifm")
    torch.testing.assert_close(patch_heads(model, [(0, 1), (1, 0)], ids, ids), model(ids).detach())
    assert all(not block.attn.out._forward_pre_hooks for block in model.blocks)


def test_the_tools_refuse_what_they_cannot_do():
    model = model_of()
    ids = ids_of(b"hello\tifm")
    with pytest.raises(ValueError, match="no head"):
        mean_ablate_heads(model, [(2, 0)], ids)
    with pytest.raises(ValueError, match="no head"):
        patch_heads(model, [(0, 5)], ids, ids)
    with pytest.raises(ValueError, match="one shape"):
        patch_heads(model, [(0, 0)], ids, ids[:, :5])
