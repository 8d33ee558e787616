"""The course's exercises: every reference solution passes its own check, the notebooks show exactly
those solutions, and a learner's answer is saved only when it passes."""

import pytest
import torch
import torch.nn.functional as F

import minitf
from support import exercise_checks
from test_bpe import SLIPS as BPE_SLIPS
from test_by_hand import SLIPS as BY_HAND_SLIPS
from test_training_parts import SLIPS
from support import cells as notebook_cells
from minitf import exercises as workbook
from minitf import parts, solutions
from minitf.course import by_hand, declaration, training_checks

NAMES = list(workbook.EXERCISES)


@pytest.mark.parametrize("name", NAMES)
def test_every_reference_solution_passes_its_check(name):
    message = workbook.run_check(name, workbook.EXERCISES[name].solution)
    assert message.startswith("✓"), message


@pytest.mark.parametrize("name", NAMES)
def test_a_stub_is_reported_as_not_written(name, capsys):
    def stub(*args):
        raise NotImplementedError

    minitf.exercise(name, stub)
    assert "not written yet" in capsys.readouterr().out


def test_every_exercise_says_what_it_teaches_how_hard_how_long_and_which_calls_are_fine():
    for ex in workbook.EXERCISES.values():
        assert 1 <= ex.difficulty <= 5 and 1 <= ex.minutes <= 60 and ex.teaches and ex.hint
        assert ex.header.startswith("difficulty ") and f"about {ex.minutes} min" in ex.header
        assert ex.library and " fine" in ex.own_work, ex.name


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


def my_causal_mask(T):
    return torch.ones(T, T, dtype=torch.bool).tril()  # inverted meaning


def my_layer_norm(x, weight, bias, eps):
    return F.layer_norm(x, weight.shape, weight, bias, eps)


NOT_SAVED = [  # (exercise, piece, what the learner is told): failing, a lambda, a library call
    ("causal_mask", my_causal_mask, "Hint:"),
    ("causal_mask", lambda T: torch.ones(T, T, dtype=torch.bool).triu(1), "write it with `def`"),
    ("layer_norm", my_layer_norm, "my_layer_norm uses F.layer_norm"),
]


@pytest.mark.parametrize("name, piece, says", NOT_SAVED, ids=["failing", "lambda", "refused"])
def test_a_failing_refused_or_lambda_piece_is_not_saved(name, piece, says, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINITF_MY_PARTS", str(tmp_path))
    minitf.exercise(name, piece)
    out = capsys.readouterr().out
    assert says in out and "saved" not in out
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


def attention_softmax_dim(q, k, v, mask):
    scores = (q @ k.transpose(-2, -1) / q.size(-1) ** 0.5)
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    w = torch.nan_to_num(scores.softmax(-2))
    return w @ v, w


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


def layer_norm_unbiased(x, w, b, eps):
    return (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True) + eps) * w + b


def block_without_the_ffn_residual(blk, h, cos, sin):
    a, w = blk.attn(blk.norm1(h) if blk.pre_norm else h, cos, sin, need_weights=True)
    if blk.pre_norm:
        h = h + a
        return blk.ffn(blk.norm2(h)), w
    h = blk.norm1(h + a)
    return blk.norm2(blk.ffn(h)), w


def batch_with_targets(late=False, on_input=False, float_ids=False):
    def my_make_batch(pairs):
        ids, targets = solutions.my_make_batch(pairs)
        for row, pair in enumerate(pairs):
            if late:
                targets[row, len(pair.input)] = minitf.IGNORE
            if on_input:
                targets[row, :len(pair.input)] = ids[row, 1:len(pair.input) + 1]
        return (ids.float() if float_ids else ids), targets
    return my_make_batch


def position_ids_restarting_at_every_tab(ids):
    out = torch.zeros_like(ids)
    for b in range(ids.size(0)):
        last = None
        for i in range(ids.size(1)):
            last = i if int(ids[b, i]) == minitf.TAB else last
            out[b, i] = i + 1 if last is None else i - last
    return out


def position_ids_from_zero(ids):
    after_tab = (ids == minitf.TAB).long().cumsum(1) > 0
    return torch.where(after_tab, solutions.my_position_ids(ids), torch.arange(ids.size(1)).expand_as(ids))


def ablate_rows(model, layer, head):
    import copy
    model, hd = copy.deepcopy(model), model.config.head_dim
    with torch.no_grad():
        model.blocks[layer].attn.out.weight[head * hd:(head + 1) * hd, :] = 0  # rows: the stream's dims
    return model


def my_embed(ids, table):  # returns float64 for a float32 table
    return F.one_hot(ids, 256).double() @ table.double()


def train_step_returning_a_float(model, optimizer, ids, targets, loss_fn, clip=1.0):
    optimizer.zero_grad()
    loss = loss_fn(model(ids), targets)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()
    return loss.item()


MISTAKES = [  # (exercise, wrong answer, diagnosis, words the feedback must contain)
    ("layer_norm", layer_norm_unbiased, "_unbiased_variance", "divides the squared deviations by C − 1"),
    ("embed", my_embed, "dtype_changed", "my_embed on case 0, in float32 (ids=tensor("
     "[[72, 105, 9]]), table=tensor (256, 4) float32): dtype torch.float64, expected torch.float32\n  Your embed "
     "returns float64 for a float32 table: keep the table's dtype"),
    ("block", block_without_the_ffn_residual, "_block_no_residual", "adds attention to the stream but not the FFN"),
    ("make_batch", batch_with_targets(late=True), "_targets_late", "starts the targets one position late"),
    ("make_batch", batch_with_targets(on_input=True), "_targets_on_input", "scores the input part too"),
    ("make_batch", batch_with_targets(float_ids=True), "dtype", "torch.zeros(B, T) is float"),
    ("position_ids", position_ids_from_zero, "_input_from_zero", "numbers the input bytes 0, 1, 2"),
    ("position_ids", position_ids_restarting_at_every_tab, "_every_tab_restarts", "restarts the count at every TAB"),
    ("ablate_head", ablate_rows, "_rows_not_columns", "zeroes rows of W_O"),
    ("train_step", train_step_returning_a_float, "_step_returns_a_number", "has no .item()"),
    ("byte_circle", lambda k: solutions.my_byte_circle(k).float(), "_table_dtype", "your table is float32"),
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
    ("swiglu", lambda x, w_up, w_gate, w_down: F.silu(x @ w_up.T) @ w_down.T,
     "_swiglu_no_gate", "leaves out the gate"),
    ("swiglu", lambda x, w_up, w_gate, w_down: (torch.relu(x @ w_up.T) * (x @ w_gate.T)) @ w_down.T,
     "_swiglu_activation", "ReLU where SwiGLU uses SiLU"),
    ("count_parameters", lambda c: solutions.my_count_parameters(c) - c.vocab_size, "count_difference",
     "output head"),
    ("apply_rope", rope_cat, "permutation", "wrong slots"),
    ("causal_mask", lambda T: torch.ones(T, T, dtype=torch.bool).triu(0), "mask_diagonal", "position i may look at itself"),
    ("causal_mask", lambda T: torch.ones(T, T, dtype=torch.bool).tril(), "mask_inverted", "NOT look"),
    ("attention", lambda q, k, v, mask: solutions.my_attention(q * q.size(-1) ** 0.5, k, v, mask),
     "scores_scaled", "√head_dim"),
    ("attention", attention_softmax_dim, "softmax_over_wrong_dim", "dim=-1"),
    ("layer_norm", lambda x, w, b, eps: (x - x.mean(-1)) / torch.sqrt(x.var(-1, unbiased=False) + eps) * w + b,
     "raised", "keepdim=True"),
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
    ("feed_forward", lambda x, w_up, b_up, w_down, b_down: torch.relu(x @ w_up.T + b_up) @ w_down.T,
     "_ffn_bias", "leaves out b_down"),
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


# --- the notebooks show these exercises, with their solutions, and no answer before them ----------

def test_every_exercise_appears_in_its_notebook():
    used = {name: nb for nb, name, _ in exercise_checks()}
    for name, ex in workbook.EXERCISES.items():
        assert name in used, f"exercise {name} is not used in any notebook"
        assert used[name].startswith(ex.notebook), (name, used[name], ex.notebook)


@pytest.mark.parametrize("notebook, name, index", exercise_checks())
def test_each_exercise_has_hints_and_its_solution_after_it_and_no_answer_before(notebook, name, index):
    cells = notebook_cells(notebook)
    for cell in cells[:index]:
        src = "".join(cell["source"])
        assert not ("getsource" in src and name in src), \
            f"{notebook}: minitf's {name} is printed before the exercise that asks for it"
        assert "minitf.solutions" not in src, f"{notebook}: a solution is used before exercise {name}"
    # the cell contract is written once, in minitf.course.declaration.Exercise's docstring
    after = "\n".join("".join(c["source"]) for c in cells[index + 1:index + 1 + declaration.SOLUTION_WITHIN]
                      if c["cell_type"] == "markdown")
    assert after.count("<details>") >= declaration.HINTS_AFTER and "Hint" in after, \
        f"{notebook}: {name} has no hints after it (the cell contract: minitf.course.declaration.Exercise)"
    assert workbook.solution_markdown(name) in after, \
        f"{notebook}: the solution block of {name} differs from its declaration's solution in " \
        f"{workbook.EXERCISES[name].solution.__module__} (paste minitf.exercises.solution_markdown(name); " \
        "the cell contract: minitf.course.declaration.Exercise)"


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


BY_HAND = ("byte_circle", "query", "tab_score", "value_rotation")  # notebook 12: numbers in, not tensors
NUMBERS_OUT = ("lr_at", "train_loop")  # notebook 08: a rate, a history of numbers (not tensors)
IN_PLACE = ("clip_gradients",)  # notebook 08: changes the gradients in place, returns nothing
CLASSES = ("MyAttention", "MyBlock", "MyTransformer")  # notebook 08: classes, built and loaded by the check
BPE = ("count_pairs", "merge", "train_merges", "encode", "decode")  # notebook 15: ids and bytes, no floats


@pytest.mark.parametrize("name", [n for n in NAMES if n not in ("causal_mask", "count_parameters",
                                                                "make_batch", "position_ids", *BY_HAND,
                                                                *NUMBERS_OUT, *IN_PLACE, *CLASSES, *BPE)])
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


def count_by_building_layers(config):  # no Transformer, but still a model: its layers' parameters
    C, V = config.d_model, config.vocab_size
    return solutions.my_count_parameters(config) + 0 * sum(p.numel() for p in torch.nn.Linear(C, V).parameters())


LIBRARY_CALLS = [  # (exercise, a piece that calls the library, what the refusal names)
    ("embed", lambda ids, table: F.embedding(ids, table), "F.embedding"),
    ("embed", lambda ids, table: torch.embedding(table, ids), "torch.embedding"),
    ("embed", embed_with_module, "nn.Embedding"),
    ("count_parameters", lambda config: minitf.count_parameters(minitf.Transformer(config)),
     "minitf.Transformer(config)"),
    ("count_parameters", lambda config: sum(p.numel() for p in minitf.Transformer(config).parameters()),
     "minitf.Transformer(config)"),
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
    ("query", lambda S, omega: by_hand.query(S, omega), "minitf.course.by_hand.query"),  # notebook 12's construction
    # notebook 08's training pieces
    ("output_loss", lambda logits, targets: F.cross_entropy(logits.flatten(0, 1), targets.flatten()),
     "F.cross_entropy"),
    ("output_loss", lambda logits, targets: minitf.masked_loss(logits, targets), "minitf.masked_loss"),
    ("lr_at", lambda step, steps, lr, warmup, r=0.1: minitf.core.train.lr_at(step, steps, lr, warmup, r),
     "minitf.core.train.lr_at"),
    ("adamw", lambda *args: training_checks.torch_adamw_step(*args),
     "minitf.course.training_checks.torch_adamw_step"),
    ("clip_gradients", lambda parameters, max_norm: torch.nn.utils.clip_grad_norm_(parameters, max_norm),
     "torch.nn.utils.clip_grad_norm_"),
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
    ("softmax", lambda x: (x - torch.logsumexp(x, -1, keepdim=True)).exp()),  # any correct formulation
]


@pytest.mark.parametrize("name, fn", ALLOWED, ids=[f"{a[0]}-{i}" for i, a in enumerate(ALLOWED)])
def test_the_calls_an_exercise_allows_pass(name, fn):
    assert workbook.run_check(name, fn).startswith("✓")


# --- the model as the learner's own modules (notebook 08): built, loaded by name, run ---------------

def _subclass(name, **methods):
    """The reference class with some methods replaced: a learner's class with one slip."""
    return type(name, (getattr(solutions, name),), methods)


def _attention_forward(merge_transpose=True, out=True):
    def forward(self, x, cos, sin, need_weights=False):
        B, T, C = x.shape
        H, hd = self.n_heads, self.head_dim
        q, k, v = self.qkv(x).split(H * hd, dim=-1)
        q, k, v = (t.view(B, T, H, hd).transpose(1, 2) for t in (q, k, v))
        q, k = self.rotate(q, cos, sin), self.rotate(k, cos, sin)
        y, w = solutions.my_attention(q, k, v, minitf.causal_mask(T))
        y = (y.transpose(1, 2) if merge_transpose else y).reshape(B, T, H * hd)
        return (self.out(y) if out else y), w
    return forward


def _attention_init(frequencies_as="buffer", qkv_name="qkv", out_in_forward=False, linear_turned=False):
    def __init__(self, config):
        torch.nn.Module.__init__(self)
        self.config, self.n_heads, self.head_dim = config, config.n_heads, config.head_dim
        inner = config.n_heads * config.head_dim
        qkv = torch.nn.Linear(3 * inner, config.d_model) if linear_turned else torch.nn.Linear(config.d_model, 3 * inner)
        setattr(self, qkv_name, qkv)
        if not out_in_forward:
            self.out = torch.nn.Linear(inner, config.d_model)
        theta = minitf.core.rope.config_frequencies(config)
        if frequencies_as == "buffer":
            self.register_buffer("inv_freq", theta)
        else:
            self.inv_freq = theta
    return __init__


def _forward_making_out(self, x, cos, sin, need_weights=False):
    self.out = torch.nn.Linear(self.n_heads * self.head_dim, self.config.d_model)
    return solutions.MyAttention.forward(self, x, cos, sin, need_weights)


def _block_forward(residual=True, pre_always=False):
    def forward(self, h, cos, sin, need_weights=False):
        if self.pre_norm or pre_always:
            a, w = self.attn(self.norm1(h), cos, sin, need_weights=True)
            h = h + a if residual else a
            f = self.ffn(self.norm2(h))
            return (h + f if residual else f), w
        a, w = self.attn(h, cos, sin, need_weights=True)
        h = self.norm1(h + a if residual else a)
        return self.norm2(h + self.ffn(h) if residual else self.ffn(h)), w
    return forward


def _untied_init(self, config):
    solutions.MyTransformer.__init__(self, config)
    if config.tie_embeddings:
        self.head.weight = torch.nn.Parameter(self.embed.weight.detach().clone())


def _forward_without_final_norm(self, ids):
    h = self.embed(ids)
    cos, sin = minitf.rope_angles(self.blocks[0].attn.inv_freq, ids.size(1))
    for block in self.blocks:
        h, _ = block(h, cos, sin)
    return self.head(h)


CLASS_MISTAKES = [  # (exercise, the learner's class, diagnosis, words its feedback must say)
    ("MyAttention", _subclass("MyAttention", __init__=_attention_init(frequencies_as="attribute")),
     "_plain_tensor", "self.inv_freq is a plain tensor attribute"),
    ("MyAttention", _subclass("MyAttention", __init__=_attention_init(qkv_name="W_qkv")),
     "_state_dict_names", "minitf's state dict has qkv.weight (24, 8)"),
    ("MyAttention", _subclass("MyAttention", __init__=_attention_init(out_in_forward=True),
                              forward=_forward_making_out),
     "_made_in_forward", "yours creates out.bias, out.weight in forward"),
    ("MyAttention", _subclass("MyAttention", __init__=_attention_init(linear_turned=True)),
     "_state_dict_shapes", "stores its weight as (out, in)"),
    ("MyAttention", _subclass("MyAttention", forward=_attention_forward(merge_transpose=False)),
     "_mha_merge", "without moving the head dimension back"),
    ("MyAttention", _subclass("MyAttention", forward=_attention_forward(out=False)),
     "_mha_no_out", "leaves out the output projection"),
    ("MyBlock", _subclass("MyBlock", forward=_block_forward(residual=False)),
     "_block_no_residual", "no residual connection"),
    ("MyBlock", _subclass("MyBlock", forward=_block_forward(pre_always=True)),
     "_block_norm_side", "where the other layout has them"),
    ("MyTransformer", _subclass("MyTransformer", __init__=_untied_init), "_head_not_tied",
     "this config ties them"),
    ("MyTransformer", _subclass("MyTransformer", forward=_forward_without_final_norm),
     "_forward_no_final_norm", "leaves out the final norm"),
    ("MyTransformer", lambda config: solutions.MyTransformer(config), "_not_a_class", "not a class"),
    ("MyTransformer", _subclass("MyTransformer", forward=lambda self, ids: solutions.MyTransformer.forward(
        self, ids).double()), "dtype_changed", ", in float32 ("),
]


ALL_MISTAKES = MISTAKES + CLASS_MISTAKES + SLIPS + BPE_SLIPS + BY_HAND_SLIPS


@pytest.mark.parametrize("name, wrong, diagnosis, words", ALL_MISTAKES, ids=[f"{m[0]}-{m[2]}" for m in ALL_MISTAKES])
def test_a_typical_mistake_gets_its_own_diagnosis_first_and_its_own_hint(name, wrong, diagnosis, words):
    """A function's slip (MISTAKES), a class's (CLASS_MISTAKES), a training piece's (SLIPS: 08), BPE's (15),
    a hand-set piece's (12)."""
    with pytest.raises(minitf.ExerciseError) as info:
        workbook.run_check(name, wrong)
    message = str(info.value)
    assert info.value.diagnoses[0] == diagnosis and words in message, message
    hint = workbook.EXERCISES[name].options.get("hints_by_diagnosis", {}).get(diagnosis)
    assert hint is None or message.endswith(f"\nHint: {hint}"), message


def test_a_passed_class_is_saved_with_its_helpers_and_the_learners_file_builds_minitfs_model(
        tmp_path, monkeypatch, capsys):
    """The classes join my_parts/; model_file() writes the learner's file, whose MyTransformer, on
    the same random state, starts with minitf's weights and computes its logits (08's config)."""
    from minitf.course import learner_file
    monkeypatch.setenv("MINITF_MY_PARTS", str(tmp_path))
    monkeypatch.delenv("MINITF_PERTURB", raising=False)  # minitf's model as made, not nudged one ulp
    for name in CLASSES:
        minitf.exercise(name, getattr(solutions, name))
    assert capsys.readouterr().out.count("minitf.parts.model_file() puts it in your file") == 3
    assert "class MyLayerNorm" in (tmp_path / "MyBlock.py").read_text()
    text = minitf.parts.model_file().read_text()
    assert text.index("def my_attention(") < text.index("class MyAttention") < text.index("class MyTransformer") \
        < text.index("def my_train_step(")
    config = minitf.Config(d_model=8, n_heads=2, n_layers=1, d_ff=16, norm_position="pre", dropout=0.0,
                           rope_base=20.0, tie_embeddings=True)
    torch.manual_seed(1)
    yours = learner_file.my_model(config)
    torch.manual_seed(1)
    reference = minitf.Transformer(config)
    assert [n for n, _ in yours.named_parameters()] == [n for n, _ in reference.named_parameters()]
    assert all(torch.equal(a, b) for a, b in zip(yours.state_dict().values(), reference.state_dict().values()))
    ids = torch.tensor([list(b"hello\tifmmp")])
    with torch.no_grad():
        assert torch.allclose(yours(ids), reference(ids), atol=1e-5)


def test_a_class_written_in_a_cell_has_its_source_found():
    """Jupyter's cells have no file inspect.getsource can read for a class: its methods' cell can."""
    import linecache
    from minitf.course.learner_file import class_source
    cell = "<ipython-input-7>"
    text = "x = 1\nclass MyLayerNorm(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
    linecache.cache[cell] = (len(text), None, text.splitlines(True), cell)
    namespace = {"torch": torch, "__name__": "__main__"}
    exec(compile(text, cell, "exec"), namespace)
    assert class_source(namespace["MyLayerNorm"]).startswith("class MyLayerNorm(torch.nn.Module):")
