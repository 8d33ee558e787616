"""The small views notebooks 12-14 use to keep long tables out of the way: a table behind a click,
and a model's parameters counted by kind."""
from minitf import Config, Transformer, count_parameters
from minitf.views.parameter_kinds import format_parameter_kinds, parameters_by_kind
from minitf.views.reveal import table_reveal


def test_a_table_behind_a_click_is_collapsed_html_and_plain_text_for_a_terminal():
    shown = table_reveal("a  <b>\n1  2", "The table")
    assert shown._repr_html_() == "<details><summary>The table</summary><pre>a  &lt;b&gt;\n1  2</pre></details>"
    assert repr(shown) == "a  <b>\n1  2"


def test_parameters_by_kind_add_up_and_the_modern_block_has_no_bias():
    classic = Transformer(Config(d_model=16, n_heads=2, n_layers=2, d_ff=32, norm_position="pre"))
    modern = Transformer(Config.modern(d_model=16, n_heads=2, n_layers=2, d_ff=24))
    for model in (classic, modern):
        assert sum(parameters_by_kind(model).values()) == count_parameters(model)
    assert parameters_by_kind(modern)["biases"] == 0 < parameters_by_kind(classic)["biases"]
    assert parameters_by_kind(modern)["FFN matrices"] == 2 * 3 * 16 * 24   # up, gate, down in each layer
    lines = format_parameter_kinds({"classic": classic, "modern": modern}).splitlines()
    assert lines[-1].split()[1:] == [f"{count_parameters(classic):,}", f"{count_parameters(modern):,}"]
