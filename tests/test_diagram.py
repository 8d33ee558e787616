"""The architecture diagram shows the model it was drawn from: every parameter count it prints is
the count of the module it labels, and the counts add up to the model's total."""
import re

import pytest

import minitf
from minitf.views.diagram import components, draw_architecture

CONFIGS = [minitf.Config(), minitf.Config(norm_position="pre"),
           minitf.Config(d_model=32, n_heads=4, d_ff=128, norm_position="pre", norm="rms"),
           minitf.Config(n_layers=3, positional="sinusoidal")]


def shown(fig):
    """Every text drawn on the figure."""
    return [t.get_text() for ax in fig.axes for t in ax.texts] + [ax.get_title() for ax in fig.axes]


def modules(model):
    block = model.blocks[0]
    return {"embed": model.embed, "attn": block.attn, "norm1": block.norm1, "ffn": block.ffn,
            "norm2": block.norm2, "final_norm": model.final_norm, "head": model.head}


@pytest.mark.parametrize("config", CONFIGS)
def test_each_count_shown_is_the_count_of_its_module(config):
    model = minitf.Transformer(config)
    boxes = components(model)
    for box in boxes:
        assert box.params == minitf.count_parameters(modules(model)[box.key]), box
    per_layer = sum(b.params for b in boxes if b.in_block)
    assert sum(b.params for b in boxes if not b.in_block) + config.n_layers * per_layer \
        == minitf.count_parameters(model)
    texts = shown(draw_architecture(model))
    counts = [int(m.replace(",", "")) for t in texts for m in re.findall(r"^([\d,]+) params$", t)]
    assert counts == [b.params for b in boxes]  # drawn in order, one per box
    assert any(f"× {config.n_layers} layers  ({per_layer:,} params each)" == t for t in texts)
    assert any(f"{minitf.count_parameters(model):,} parameters" in t for t in texts)


def test_the_tiny_model_reads_as_the_course_describes_it():
    texts = shown(draw_architecture(minitf.Config()))
    for expected in ("1,024 params", "80 params", "76 params", "8 params", "1,280 params",
                     "× 2 layers  (172 params each)", "256 × 4 table", "4 → 8 → 4, relu",
                     "2 heads × head_dim 2, RoPE on q and k", "4 → 256, weight and bias",
                     "byte ids  (B, T)", "scores for the next byte  (B, T, 256)"):
        assert expected in texts, expected
    assert "2,648 parameters" in texts[-1]


@pytest.mark.parametrize("position, order", [
    ("post", ["embed", "attn", "norm1", "ffn", "norm2", "head"]),
    ("pre", ["embed", "norm1", "attn", "norm2", "ffn", "final_norm", "head"])])
def test_post_and_pre_norm_are_drawn_in_their_own_order(position, order):
    boxes = components(minitf.Transformer(minitf.Config(norm_position=position)))
    assert [b.key for b in boxes] == order
    titles = {b.key: b.title for b in boxes}
    assert titles["norm1"] == ("add & norm" if position == "post" else "norm")


def test_a_config_is_accepted_in_place_of_a_model_and_every_label_is_legible():
    fig = draw_architecture(minitf.Config())
    sizes = [t.get_fontsize() for ax in fig.axes for t in ax.texts]
    assert min(sizes) >= 9


@pytest.mark.parametrize("config", CONFIGS[:2])
def test_each_arrow_names_the_shape_that_flows_there(config):
    """Between the boxes flows the stream (B, T, d_model); out of the head, a score per byte value
    (B, T, vocab_size). The old figure wrote (B, T, d_model) on the head's output too."""
    fig = draw_architecture(config)
    head_y = next(t.get_position()[1] for ax in fig.axes for t in ax.texts
                  if t.get_text() == next(b.title for b in components(minitf.Transformer(config))
                                          if b.key == "head"))
    shapes = [(t.get_position()[1], t.get_text()) for ax in fig.axes for t in ax.texts
              if re.fullmatch(r"\(B, T, \d+\)", t.get_text())]
    below = [text for y, text in shapes if y < head_y]
    above = [text for y, text in shapes if y > head_y]
    assert below == [f"(B, T, {config.vocab_size})"]
    assert above and set(above) == {f"(B, T, {config.d_model})"}
