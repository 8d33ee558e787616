"""The course's exercises: every reference solution passes its own check, the notebooks show exactly
those solutions, and a learner's answer is saved only when it passes."""

import pytest
import torch
import torch.nn.functional as F

import minitf
from support import exercise_checks
from support import cells as notebook_cells
from minitf import exercises as workbook
from minitf import parts, solutions
from minitf.course import declaration

NAMES = list(workbook.EXERCISES)


@pytest.mark.parametrize("name", NAMES)
def test_every_reference_solution_passes_its_check(name):
    message = workbook.run_check(name, getattr(solutions, f"my_{name}"))
    assert message.startswith("✓"), message


@pytest.mark.parametrize("name", NAMES)
def test_a_stub_is_reported_as_not_written(name, capsys):
    def stub(*args):
        raise NotImplementedError

    minitf.exercise(name, stub)
    assert "not written yet" in capsys.readouterr().out


def test_every_exercise_says_what_it_teaches_how_hard_and_how_long():
    for ex in workbook.EXERCISES.values():
        assert 1 <= ex.difficulty <= 5 and 1 <= ex.minutes <= 60 and ex.teaches and ex.hint
        assert ex.header.startswith("difficulty ") and f"about {ex.minutes} min" in ex.header


def test_an_unknown_exercise_names_the_known_ones():
    with pytest.raises(KeyError, match="apply_rope"):
        minitf.exercise("rope", solutions.my_apply_rope)


def test_a_passing_piece_is_saved_and_loads_back(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINITF_MY_PARTS", str(tmp_path))
    minitf.exercise("attention", solutions.my_attention)
    assert "saved to" in capsys.readouterr().out
    assert (tmp_path / "attention.py").is_file()
    mine = parts.mine()
    assert mine.given() == ["attention"] and "yours" in mine.origin["attention"]
    q, k, v = torch.rand(3, 1, 2, 4, 2, dtype=torch.float64).unbind(0)
    out, w = mine.attention(q, k, v, minitf.causal_mask(4))
    assert torch.allclose(out, minitf.attention(q, k, v, minitf.causal_mask(4))[0])


def test_a_failing_piece_is_not_saved(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINITF_MY_PARTS", str(tmp_path))

    def my_causal_mask(T):
        return torch.ones(T, T, dtype=torch.bool).tril()  # inverted meaning

    minitf.exercise("causal_mask", my_causal_mask)
    assert "Hint:" in capsys.readouterr().out
    assert not list(tmp_path.iterdir())


def test_a_lambda_passes_but_is_not_saved(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINITF_MY_PARTS", str(tmp_path))
    minitf.exercise("causal_mask", lambda T: torch.ones(T, T, dtype=torch.bool).triu(1))
    assert "write it with `def`" in capsys.readouterr().out
    assert not list(tmp_path.iterdir())


def test_ablate_head_that_changes_the_given_model_is_refused():
    def in_place(model, layer, head):
        hd = model.config.head_dim
        with torch.no_grad():
            model.blocks[layer].attn.out.weight[:, head * hd:(head + 1) * hd] = 0
        return model

    with pytest.raises(minitf.ExerciseError, match="changed its argument `model` in place"):
        workbook.run_check("ablate_head", in_place)


# --- typical wrong answers get the diagnosis (and the hint) written for that mistake ------------

def rope_cat(x, cos, sin):
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)


def attention_unscaled(q, k, v, mask):
    return solutions.my_attention(q * q.size(-1) ** 0.5, k, v, mask)


def attention_softmax_dim(q, k, v, mask):
    scores = (q @ k.transpose(-2, -1) / q.size(-1) ** 0.5)
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    w = torch.nan_to_num(scores.softmax(-2))
    return w @ v, w


def layer_norm_no_keepdim(x, weight, bias, eps):
    return (x - x.mean(-1)) / torch.sqrt(x.var(-1, unbiased=False) + eps) * weight + bias


def batch_padded_with_ignore(pairs):
    ids, targets = solutions.my_make_batch(pairs)
    ids[targets == minitf.IGNORE] = torch.where(ids == minitf.PAD, minitf.IGNORE, ids)[targets == minitf.IGNORE]
    return ids, targets


def layer_norm_without(gamma=True, beta=True):
    def my_layer_norm(x, weight, bias, eps):
        mean = x.mean(-1, keepdim=True)
        x_hat = (x - mean) / torch.sqrt(((x - mean) ** 2).mean(-1, keepdim=True) + eps)
        return x_hat * (weight if gamma else 1) + (bias if beta else 0)
    return my_layer_norm


def rope_backwards(x, cos, sin):  # the rotation by −angle: the signs of the two sin terms swapped
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack((a * cos + b * sin, -a * sin + b * cos), dim=-1).flatten(-2)


def rope_halves(x, cos, sin):  # the pairs (x_i, x_i+hd/2): right for head_dim 2 only
    a, b = x.chunk(2, dim=-1)
    return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)


def ffn_without_b_up(x, w_up, b_up, w_down, b_down):
    return torch.relu(x @ w_up.T) @ w_down.T + b_down


def ffn_without_b_down(x, w_up, b_up, w_down, b_down):
    return torch.relu(x @ w_up.T + b_up) @ w_down.T


def softmax_without_the_maximum(x):  # overflows: e^1000 is inf in float64 too
    e = x.exp()
    return e / e.sum(-1, keepdim=True)


def softmax_minus_one_maximum(x):  # the whole tensor's maximum: a row far below it becomes 0/0
    e = (x - x.max()).exp()
    return e / e.sum(-1, keepdim=True)


def softmax_max_tuple(x):  # x.max(dim) returns (values, indices)
    e = (x - x.max(-1, keepdim=True)).exp()
    return e / e.sum(-1, keepdim=True)


def swiglu_activating_the_gate(x, w_up, w_gate, w_down):
    return (F.silu(x @ w_gate.T) * (x @ w_up.T)) @ w_down.T


def swiglu_without_the_gate(x, w_up, w_gate, w_down):
    return F.silu(x @ w_up.T) @ w_down.T


def swiglu_with_relu(x, w_up, w_gate, w_down):
    return (torch.relu(x @ w_up.T) * (x @ w_gate.T)) @ w_down.T


def multi_head_attention(merge_transpose=True, out=True, mask=True, order="qkv", split_transpose=True):
    """The learner's forward with one switch wrong, written as a learner would."""
    def my_multi_head_attention(attn, x, cos, sin):
        B, T, C = x.shape
        H, hd = attn.n_heads, attn.head_dim
        parts = dict(zip(order, attn.qkv(x).split(H * hd, dim=-1)))
        heads = lambda t: t.view(B, T, H, hd).transpose(1, 2) if split_transpose else t.reshape(B, H, T, hd)
        q, k, v = heads(parts["q"]), heads(parts["k"]), heads(parts["v"])
        q, k = attn.rotate(q, cos, sin), attn.rotate(k, cos, sin)
        y, w = solutions.my_attention(q, k, v, solutions.my_causal_mask(T) if mask else None)
        y = (y.transpose(1, 2) if merge_transpose else y).reshape(B, T, H * hd)
        return (attn.out(y) if out else y), w
    return my_multi_head_attention


def block(residual=True, second_norm="norm2", ffn_reads_input=False, layout=None):
    """The learner's block with one slip, written as a learner would."""
    def my_block(blk, h, cos, sin):
        norm2 = getattr(blk, second_norm)
        if blk.pre_norm if layout is None else layout == "pre":
            a, w = blk.attn(blk.norm1(h), cos, sin, need_weights=True)
            h1 = h + a if residual else a
            f = blk.ffn(norm2(h if ffn_reads_input else h1))
            return (h1 + f if residual else f), w
        a, w = blk.attn(h, cos, sin, need_weights=True)
        h1 = blk.norm1(h + a if residual else a)
        f = blk.ffn(h if ffn_reads_input else h1)
        return norm2(h1 + f if residual else f), w
    return my_block


def block_with_the_seed_documents_double_norm(blk, h, cos, sin):
    a, w = blk.attn(blk.norm1(h), cos, sin, need_weights=True)
    h = blk.norm1(h + a)
    return blk.norm2(h + blk.ffn(h)), w


def model_forward(final_norm=True, positions=True, tied=False):
    """The learner's forward pass with one slip."""
    def my_model_forward(model, ids):
        h = model.embed(ids)
        pos = model.positions(ids) if positions else None
        cos, sin = minitf.rope_angles(model.blocks[0].attn.inv_freq, ids.size(1), positions=pos)
        for blk in model.blocks:
            h, _ = blk(h, cos, sin)
        if final_norm and model.final_norm is not None:
            h = model.final_norm(h)
        return h @ model.embed.weight.T + model.head.bias if tied else model.head(h)
    return my_model_forward


MISTAKES = [  # (exercise, wrong answer, diagnosis, words the feedback must contain)
    ("model_forward", model_forward(final_norm=False), "_forward_no_final_norm", "leaves out the final norm"),
    ("model_forward", model_forward(positions=False), "_forward_positions", "pass positions=model.positions(ids)"),
    ("model_forward", model_forward(tied=True), "_forward_tied", "does not tie them"),
    ("block", block(residual=False), "_block_no_residual", "no residual connection"),
    ("block", block(layout="pre"), "_block_norm_side", "where the other layout has them"),
    ("block", block(second_norm="norm1"), "_block_shared_norm", "uses norm1 for both sub-layers"),
    ("block", block(ffn_reads_input=True), "_block_ffn_input", "feeds the FFN the block's input"),
    ("block", block_with_the_seed_documents_double_norm, "_block_double_norm", "neither layout"),
    ("multi_head_attention", multi_head_attention(merge_transpose=False), "_mha_merge",
     "without moving the head dimension back"),
    ("multi_head_attention", multi_head_attention(split_transpose=False), "_mha_split", "cuts the positions"),
    ("multi_head_attention", multi_head_attention(out=False), "_mha_no_out", "leaves out the output projection"),
    ("multi_head_attention", multi_head_attention(mask=False), "_mha_no_mask", "without the causal mask"),
    ("multi_head_attention", multi_head_attention(order="qvk"), "_mha_kv_swapped", "swaps K and V"),
    ("softmax", softmax_without_the_maximum, "_softmax_overflow", "subtract the row's maximum first"),
    ("softmax", softmax_minus_one_maximum, "_softmax_overflow", "one maximum for the whole tensor"),
    ("softmax", softmax_max_tuple, "raised", "take .values"),
    ("swiglu", swiglu_activating_the_gate, "_swiglu_swapped", "SiLU on the gate branch"),
    ("swiglu", swiglu_without_the_gate, "_swiglu_no_gate", "leaves out the gate"),
    ("swiglu", swiglu_with_relu, "_swiglu_activation", "ReLU where SwiGLU uses SiLU"),
    ("count_parameters", lambda c: solutions.my_count_parameters(c) - c.vocab_size, "count_difference",
     "output head"),
    ("apply_rope", rope_cat, "permutation", "wrong slots"),
    ("causal_mask", lambda T: torch.ones(T, T, dtype=torch.bool).triu(0), "mask_diagonal", "position i may look at itself"),
    ("causal_mask", lambda T: torch.ones(T, T, dtype=torch.bool).tril(), "mask_inverted", "NOT look"),
    ("attention", attention_unscaled, "scores_scaled", "√head_dim"),
    ("attention", attention_softmax_dim, "softmax_over_wrong_dim", "dim=-1"),
    ("layer_norm", layer_norm_no_keepdim, "raised", "keepdim=True"),
    ("make_batch", batch_padded_with_ignore, "padding", "PAD = 0"),
    ("position_ids", lambda ids: solutions.my_position_ids(ids) + 1, "offset", "the TAB 0"),
    ("position_ids", lambda ids: solutions.my_position_ids(ids).float(), "dtype", "torch.arange"),
    ("widen_weight", lambda W, k: torch.block_diag(*[W / k] * k), "_zeros_where_copies_should_be", "off the diagonal too"),
    ("widen_weight", lambda W, k: torch.cat([torch.cat([W] * k, 1)] * k, 0), "factor", "(= k)"),
    ("layer_norm", layer_norm_without(gamma=False, beta=False), "_gamma_beta", "without γ and β"),
    ("layer_norm", layer_norm_without(beta=False), "_gamma_beta", "leaves β (bias) out"),
    ("layer_norm", layer_norm_without(gamma=False), "_gamma_beta", "leaves γ (weight) out"),
    ("rms_norm", lambda x, w, eps: x / torch.sqrt((x ** 2).mean(-1, keepdim=True) + eps), "_gamma_beta",
     "without γ"),
    ("apply_rope", rope_backwards, "_turned_backwards", "the wrong way, by −angle"),
    ("apply_rope", lambda x, cos, sin: solutions.my_apply_rope(x, sin, cos), "_cos_sin_swapped",
     "uses sin where cos goes"),
    ("apply_rope", rope_halves, "_halves_paired", "the two halves of the vector"),
    ("feed_forward", ffn_without_b_up, "_ffn_bias", "leaves out b_up"),
    ("feed_forward", ffn_without_b_down, "_ffn_bias", "leaves out b_down"),
    ("feed_forward", lambda x, wu, bu, wd, bd: torch.relu((x @ wu.T + bu) @ wd.T + bd), "_relu_placement",
     "ReLU after the second map"),
    # eps after the square root once passed: with eps = 1e-5 it moved no entry past the tolerance
    ("rms_norm", lambda x, w, eps: x / (torch.sqrt((x ** 2).mean(-1, keepdim=True)) + eps) * w,
     "_eps_outside_sqrt", "sqrt(mean(x²)) + eps"),
    ("layer_norm", lambda x, w, b, eps: (x - x.mean(-1, keepdim=True))
     / (x.std(-1, unbiased=False, keepdim=True) + eps) * w + b, "_eps_outside_sqrt", "sqrt(var) + eps"),
    # a schedule of float64 tensors once passed: the comparison stacks the rates into one tensor
    ("lr_at", lambda *a: torch.tensor(solutions.my_lr_at(*a), dtype=torch.float64), "_rate_is_a_tensor",
     "the rate is a Python float"),
]


@pytest.mark.parametrize("name, wrong, diagnosis, words", MISTAKES,
                         ids=[f"{m[0]}-{m[2]}" for m in MISTAKES])
def test_a_typical_mistake_gets_its_own_diagnosis(name, wrong, diagnosis, words):
    with pytest.raises(minitf.ExerciseError) as info:
        workbook.run_check(name, wrong)
    assert diagnosis in info.value.diagnoses, str(info.value)
    assert words in str(info.value), str(info.value)


# --- the notebooks show these exercises, with their solutions, and no answer before them ----------

def test_every_exercise_appears_in_its_notebook():
    used = {name: nb for nb, name, _ in exercise_checks()}
    for name, ex in workbook.EXERCISES.items():
        assert name in used, f"exercise {name} is not used in any notebook"
        assert used[name].startswith(ex.notebook), (name, used[name], ex.notebook)


@pytest.mark.parametrize("notebook, name, index", exercise_checks())
def test_each_exercise_has_hints_and_the_reference_solution_after_it(notebook, name, index):
    cells = notebook_cells(notebook)
    # the cell contract is written once, in minitf.course.declaration.Exercise's docstring
    after = "\n".join("".join(c["source"]) for c in cells[index + 1:index + 1 + declaration.SOLUTION_WITHIN]
                      if c["cell_type"] == "markdown")
    assert after.count("<details>") >= declaration.HINTS_AFTER and "Hint" in after, \
        f"{notebook}: {name} has no hints after it (the cell contract: minitf.course.declaration.Exercise)"
    assert workbook.solution_markdown(name) in after, \
        f"{notebook}: the solution block of {name} differs from minitf/course/solutions.py " \
        "(paste minitf.exercises.solution_markdown(name); the cell contract: minitf.course.declaration.Exercise)"


@pytest.mark.parametrize("notebook, name, index", exercise_checks())
def test_no_reference_source_is_shown_before_its_exercise(notebook, name, index):
    cells = notebook_cells(notebook)
    for cell in cells[:index]:
        src = "".join(cell["source"])
        assert not ("getsource" in src and name in src), \
            f"{notebook}: minitf's {name} is printed before the exercise that asks for it"
        assert "minitf.solutions" not in src, f"{notebook}: a solution is used before exercise {name}"


def test_passes_is_quiet_and_says_whether_a_function_passes(capsys):
    assert workbook.passes("rms_norm", solutions.my_rms_norm)
    assert not workbook.passes("rms_norm", solutions.my_layer_norm)
    assert capsys.readouterr().out == ""


def test_the_hint_for_a_new_diagnosis_is_about_that_mistake():
    hints = {  # the general hints of these exercises talk about eps, halves and (out, in) instead
        "layer_norm": (layer_norm_without(gamma=False, beta=False),
                       "Hint: γ and β come last, in this order: (x − mean) / sqrt(var + eps) * weight + bias"),
        "apply_rope": (rope_backwards, "Hint: the minus sign goes with b·sin in the even slot"),
        "feed_forward": (ffn_without_b_up, "Hint: each map has its own bias: x @ w_up.T + b_up before the ReLU"),
    }
    for name, (wrong, hint) in hints.items():
        with pytest.raises(minitf.ExerciseError) as info:
            workbook.run_check(name, wrong)
        assert hint in str(info.value), str(info.value)


# --- every exercise runs in float32 too: a piece must keep its inputs' dtype ------------------------

def test_a_float64_one_hot_embed_is_refused_with_the_dtype_named():
    def my_embed(ids, table):  # right in float64; in float32 the product mixes dtypes
        return F.one_hot(ids, 256).double() @ table

    with pytest.raises(minitf.ExerciseError) as info:
        workbook.run_check("embed", my_embed)
    msg = str(info.value)
    assert msg.startswith("my_embed on case 0, in float32 (ids=tensor([[72, 105, 9]]), table=tensor (256, 4) "
                          "float32) raised RuntimeError: expected m1 and m2 to have the same dtype")
    assert ("\n  Your embed passes this case in float64 and raises in float32: something in it is fixed to "
            "one dtype (a .double(), .float() or dtype=… inside); keep the table's dtype") in msg
    assert msg.endswith("\nHint: keep the table's dtype: table[ids] does; a one-hot product needs "
                        "F.one_hot(ids, 256).to(table.dtype), not .double() or .float()")
    assert info.value.diagnoses == ("dtype_changed", "raised")


def test_an_embed_that_returns_float64_for_a_float32_table_is_refused():
    def my_embed(ids, table):
        return F.one_hot(ids, 256).double() @ table.double()

    with pytest.raises(minitf.ExerciseError) as info:
        workbook.run_check("embed", my_embed)
    assert ("my_embed on case 0, in float32 (ids=tensor([[72, 105, 9]]), table=tensor (256, 4) float32): "
            "dtype torch.float64, expected torch.float32\n  Your embed returns float64 for a float32 table: "
            "keep the table's dtype") in str(info.value)
    assert info.value.diagnoses == ("dtype_changed",)


BY_HAND = ("byte_circle", "query", "tab_score", "value_rotation")  # notebook 12: numbers in, not tensors
NUMBERS_OUT = ("lr_at", "train_loop")  # notebook 08: a rate, a history of numbers (not tensors)
IN_PLACE = ("clip_gradients",)  # notebook 08: changes the gradients in place, returns nothing
BPE = ("count_pairs", "merge", "train_merges", "encode", "decode")  # notebook 15: ids and bytes, no floats


@pytest.mark.parametrize("name", [n for n in NAMES if n not in ("causal_mask", "count_parameters",
                                                                "make_batch", "position_ids", *BY_HAND,
                                                                *NUMBERS_OUT, *IN_PLACE, *BPE)])
def test_every_exercise_with_float_inputs_refuses_a_float64_result(name):
    def in_float64(*args):
        out = getattr(solutions, f"my_{name}")(*args)
        return out.double() if isinstance(out, torch.Tensor) else \
            out.double() if isinstance(out, torch.nn.Module) else tuple(t.double() for t in out)

    with pytest.raises(minitf.ExerciseError) as info:
        workbook.run_check(name, in_float64)
    assert ", in float32 (" in str(info.value) and "dtype_changed" in info.value.diagnoses, str(info.value)


# --- a piece that only calls the library it re-creates is refused, with what is fine instead -------

def embed_with_module(ids, table):
    lookup = torch.nn.Embedding(*table.shape).to(table.dtype)
    lookup.weight.data = table
    return lookup(ids)


def layer_norm_with_module(x, weight, bias, eps):
    norm = torch.nn.LayerNorm(x.size(-1), eps=eps).to(x.dtype)
    norm.weight.data, norm.bias.data = weight, bias
    return norm(x)


def attention_with_sdpa(q, k, v, mask):  # the weights by hand, the output from PyTorch's kernel
    weights = solutions.my_attention(q, k, v, mask)[1]
    return F.scaled_dot_product_attention(q, k, v, attn_mask=None if mask is None else ~mask), weights


def ffn_with_module(x, w_up, b_up, w_down, b_down):
    ffn = minitf.FeedForward(minitf.Config(d_model=x.size(-1), n_heads=1, d_ff=w_up.size(0),
                                           positional="none")).to(x.dtype)
    ffn.load_state_dict({"up.weight": w_up, "up.bias": b_up, "down.weight": w_down, "down.bias": b_down})
    return ffn(x)


def count_by_building(config):
    return sum(p.numel() for p in minitf.Transformer(config).parameters())


def count_by_building_layers(config):  # no Transformer, but still a model: its layers' parameters
    C, V = config.d_model, config.vocab_size
    return solutions.my_count_parameters(config) + 0 * sum(p.numel() for p in torch.nn.Linear(C, V).parameters())


LIBRARY_CALLS = [  # (exercise, a piece that calls the library, what the refusal names)
    ("embed", lambda ids, table: F.embedding(ids, table), "F.embedding"),
    ("embed", lambda ids, table: torch.embedding(table, ids), "torch.embedding"),
    ("embed", embed_with_module, "nn.Embedding"),
    ("count_parameters", lambda config: minitf.count_parameters(minitf.Transformer(config)),
     "minitf.Transformer(config)"),
    ("count_parameters", count_by_building, "minitf.Transformer(config)"),
    ("count_parameters", count_by_building_layers, "a torch.nn module"),
    ("apply_rope", lambda x, cos, sin: minitf.apply_rope(x, cos, sin), "minitf.apply_rope"),
    ("causal_mask", lambda T: minitf.causal_mask(T), "minitf.causal_mask"),
    ("attention", lambda q, k, v, mask: minitf.attention(q, k, v, mask), "minitf.attention"),
    ("attention", attention_with_sdpa, "F.scaled_dot_product_attention"),
    ("layer_norm", lambda x, w, b, eps: F.layer_norm(x, w.shape, w, b, eps), "F.layer_norm"),
    ("layer_norm", layer_norm_with_module, "nn.LayerNorm"),
    ("rms_norm", lambda x, w, eps: torch.nn.functional.rms_norm(x, w.shape, w, eps), "F.rms_norm"),
    ("feed_forward", ffn_with_module, "minitf.FeedForward"),
    ("multi_head_attention", lambda attn, x, cos, sin: attn(x, cos, sin, need_weights=True),
     "minitf.MultiHeadAttention (its forward)"),
    ("block", lambda blk, h, cos, sin: blk(h, cos, sin, need_weights=True), "minitf.Block (its forward)"),
    ("model_forward", lambda model, ids: model(ids), "minitf.Transformer (its forward)"),
    ("softmax", lambda x: torch.softmax(x, dim=-1), "torch.softmax"),
    ("softmax", lambda x: F.softmax(x, dim=-1), "F.softmax"),
    ("softmax", lambda x: x.softmax(-1), ".softmax()"),
    ("softmax", lambda x: torch.nn.Softmax(dim=-1)(x), "nn.Softmax"),
    ("make_batch", lambda pairs: minitf.make_batch(pairs), "minitf.make_batch"),
    ("ablate_head", lambda model, layer, head: minitf.ablate_heads(model, [(layer, head)]), "minitf.ablate_heads"),
    ("position_ids", lambda ids: minitf.rope.position_ids(ids, "coupled"), "minitf.rope.position_ids"),
    ("widen_weight", lambda W, k: minitf.origami.widen_weight(W, k), "minitf.origami.widen_weight"),
]


@pytest.mark.parametrize("name, call, named", LIBRARY_CALLS,
                         ids=[f"{c[0]}-{c[2].split()[0]}" for c in LIBRARY_CALLS])
def test_a_piece_that_calls_the_library_it_recreates_is_refused(name, call, named):
    assert workbook.run_check(name, call, own_work=False).startswith("✓")  # right, so a real loophole
    with pytest.raises(minitf.ExerciseError) as info:
        workbook.run_check(name, call)
    msg = str(info.value)
    assert msg.startswith(f"<lambda> uses {named}" if call.__name__ == "<lambda>" else f"{call.__name__} uses {named}")
    assert "which this exercise asks you to do without" in msg and "\n  in the line: " in msg
    assert msg.endswith(f"\nHint: {workbook.EXERCISES[name].own_work}")
    assert info.value.diagnoses == ("library_call",)


@pytest.mark.parametrize("name", [n for n in NAMES if n != "feed_forward"])
def test_the_reference_itself_is_refused_as_an_answer(name):
    # each reference is the library function (or calls it): handing it in is the loophole
    assert not workbook.passes(name, workbook.EXERCISES[name].reference)


def test_every_exercise_says_which_calls_are_fine():
    for ex in workbook.EXERCISES.values():
        assert ex.library and " fine" in ex.own_work, ex.name


def layer_norm_with_var(x, weight, bias, eps):
    mean, var = x.mean(-1, keepdim=True), x.var(-1, unbiased=False, keepdim=True)
    return (x - mean) * torch.rsqrt(var + eps) * weight + bias


def make_batch_with_sequence(pairs):
    seqs = [minitf.sequence(p) for p in pairs]
    T = max(map(len, seqs)) - 1
    ids, targets = torch.full((len(seqs), T), minitf.PAD), torch.full((len(seqs), T), minitf.IGNORE)
    for row, (p, seq) in enumerate(zip(pairs, seqs)):
        ids[row, :len(seq) - 1] = torch.tensor(seq[:-1])
        targets[row, len(p.input):len(seq) - 1] = torch.tensor(seq[len(p.input) + 1:])
    return ids, targets


def attention_with_f_softmax(q, k, v, mask):
    scores = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = F.softmax(scores, dim=-1)
    return weights @ v, weights


ALLOWED = [  # the calls each exercise's text says are fine
    ("embed", lambda ids, table: F.one_hot(ids, 256).to(table.dtype) @ table),
    ("causal_mask", lambda T: torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)),
    ("causal_mask", lambda T: ~torch.ones(T, T, dtype=torch.bool).tril()),
    ("attention", attention_with_f_softmax),
    ("layer_norm", layer_norm_with_var),
    ("feed_forward", lambda x, wu, bu, wd, bd: F.linear(F.relu(F.linear(x, wu, bu)), wd, bd)),
    ("make_batch", make_batch_with_sequence),
]


@pytest.mark.parametrize("name, fn", ALLOWED, ids=[f"{a[0]}-{i}" for i, a in enumerate(ALLOWED)])
def test_the_calls_an_exercise_allows_pass(name, fn):
    assert workbook.run_check(name, fn).startswith("✓")


def test_a_refused_piece_is_not_saved(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINITF_MY_PARTS", str(tmp_path))

    def my_layer_norm(x, weight, bias, eps):
        return F.layer_norm(x, weight.shape, weight, bias, eps)

    minitf.exercise("layer_norm", my_layer_norm)
    out = capsys.readouterr().out
    assert out.startswith("my_layer_norm uses F.layer_norm") and "saved" not in out
    assert not list(tmp_path.iterdir())
