"""Where each number of a trace comes from: `locate(tr, key)` finds the recorded number under a key
(see minitf.trace's docstring for the key names) and `explain(tr, key)` writes the formula that
made it, with the values that went into it ("L0.h1.weights[3,1] = exp(s[3,1] − m)/Σ_j …").

Apart from the pass itself (trace.py) because it only reads a finished trace: `tr` is a
minitf.Trace throughout, not imported here so that trace.py can import this module."""
from __future__ import annotations

import math

import torch

from ..core.tokens import show

STREAM = {"input", "attn_in", "concat", "attn_out", "resid1", "after_attn", "ffn_in", "ffn_pre",
          "ffn_hidden", "ffn_out", "resid2", "output"}
HEAD = {"q", "k", "v", "q_rot", "k_rot", "v_rot", "scores", "weights", "out", "rowsum"}


def _norm_at(tr, parts: list[str]):
    if parts[0] == "final_norm":
        return tr.final_norm, parts[1:]
    return getattr(tr.layers[int(parts[0][1:])], parts[1]), parts[2:]


def locate(tr, key: str):
    """(tensor, index, kind) for a key; kind names the formula that made the number."""
    try:
        tensor, index, kind = _find(tr, key.split("."))
        tensor[index]  # noqa: B018 (an index out of range is a bad key too)
    except (AttributeError, IndexError, KeyError, TypeError, ValueError):
        raise KeyError(f"no such trace key: {key!r} (see minitf.trace's docstring)") from None
    return tensor, index, kind


def _find(tr, p: list[str]):
    idx = lambda rest: tuple(int(i) for i in rest)  # noqa: E731
    if p[0] in ("embed", "pos", "x0", "final", "logits", "probs"):
        tensor = {"embed": tr.embedding, "pos": tr.positional, "x0": tr.x0, "final": tr.final,
                  "logits": tr.logits, "probs": tr.probs}[p[0]]
        return tensor, idx(p[1:]), p[0]
    if p[0] == "final_norm" or (len(p) > 1 and p[1] in ("norm1", "norm2")):
        norm, rest = _norm_at(tr, p)
        tensor = {"mean": norm.mean, "var": norm.var, "ms": norm.var, "out": norm.output}[rest[0]]
        return tensor, idx(rest[1:]), "norm." + rest[0]
    layer = tr.layers[int(p[0][1:])]
    if p[1] in STREAM:
        return getattr(layer, p[1]), idx(p[2:]), p[1]
    head = int(p[1][1:])
    name = p[2]
    if name == "out":
        return layer.head_out[head], idx(p[3:]), "head_out"
    if name == "rowsum":
        return layer.weights[head].sum(-1), idx(p[3:]), "rowsum"
    if name == "scores":  # as softmax reads them: −∞ where masked
        return layer.masked_scores[head], idx(p[3:]), name
    return getattr(layer, name)[head], idx(p[3:]), name


def fmt(x: float | int) -> str:
    """A number as the explorer shows it: 3 decimals, no negative zero (ints as they are)."""
    if isinstance(x, int):
        return str(x)
    if math.isinf(x):
        return "−∞" if x < 0 else "∞"
    s = f"{x:.3f}"
    return "0.000" if s == "-0.000" else s


def _p(x: float) -> str:
    """A factor in a product: negatives in brackets, so 0.5·(-0.2) reads unambiguously."""
    s = fmt(x)
    return f"({s})" if s.startswith("-") else s


def _dot(a, b, bias=None, limit: int = 8) -> str:
    """Σ a_i·b_i (+ bias) written out; past `limit` terms only the largest are listed."""
    a, b = _floats(a), _floats(b)
    products = [x * y for x, y in zip(a, b)]
    shown = range(len(products))
    if len(products) > limit:
        shown = sorted(sorted(shown, key=lambda i: -abs(products[i]))[:limit // 2])
    text = " + ".join(f"{_p(a[i])}·{_p(b[i])}" for i in shown)
    if len(shown) < len(products):
        rest = sum(products) - sum(products[i] for i in shown)
        text += f" + ({len(products) - len(shown)} smaller terms: {fmt(rest)})"
    if bias is not None:
        text += f" + {_p(float(bias))}"
    return text


def _floats(x) -> list[float]:
    return x.tolist() if isinstance(x, torch.Tensor) else [float(v) for v in x]


def _byte(b: int) -> str:
    return f"byte {b} '{show([b])}'"


def explain(tr, key: str) -> str:
    if key.startswith("ids."):
        t = int(key.split(".")[1])
        return f"ids[{t}] = {tr.ids[t]}   ('{show([tr.ids[t]])}': a token is a byte, its id the " \
               f"byte's value)"
    tensor, index, kind = locate(tr, key)
    value = float(tensor[index])
    p = key.split(".")
    c = tr.config
    end = f" = {fmt(value)}"
    if kind == "embed":
        t, ch = index
        return f"embed[{t},{ch}] = E[{tr.ids[t]},{ch}]{end}   (row {tr.ids[t]} of the embedding " \
               f"table, for {_byte(tr.ids[t])})"
    if kind == "pos":
        t, ch = index
        f = "sin" if ch % 2 == 0 else "cos"
        m = _position(tr, t)
        return f"pos[{t},{ch}] = {f}({m} / {c.positions.rope_base:g}^({ch - ch % 2}/{c.d_model})){end}"
    if kind == "x0":
        t, ch = index
        if tr.positional is None:
            pos = "no added positions: RoPE rotates q and k inside attention" \
                if c.positions.positional == "rope" else "no positions at all"
            return f"x0[{t},{ch}] = embed[{t},{ch}]{end}   ({pos})"
        return f"x0[{t},{ch}] = embed[{t},{ch}] + pos[{t},{ch}] = " \
               f"{fmt(float(tr.embedding[t, ch]))} + {_p(float(tr.positional[t, ch]))}{end}"
    if kind.startswith("norm."):
        return _explain_norm(tr, p, index, kind[5:], end)
    if kind in ("final", "logits", "probs"):
        return _explain_head(tr, index, kind, end)
    return _explain_layer(tr, int(p[0][1:]), p, index, kind, value, end)


def _position(tr, t: int) -> str:
    """Position t's id, with where it comes from when it is not t itself."""
    m = tr.positions[t] if tr.positions is not None else t
    return str(m) if m == t else f"{m} (the coupled id of position {t})"


def _explain_norm(tr, p, index, what: str, end: str) -> str:
    norm, _ = _norm_at(tr, p)
    name = ".".join(p[:-len(index) - 1])
    t = index[0]
    x = norm.input[t]
    n = x.numel()
    if what == "mean":
        body = " + ".join(_p(float(v)) for v in x) if n <= 8 else f"{n} terms"
        return f"{name}: mean[{t}] = (1/{n}) Σ_c x_c = ({body})/{n}{end}"
    if what in ("var", "ms"):
        if norm.kind == "layer":
            m = float(norm.mean[t])
            d = [float(v) - m for v in x]
            body = " + ".join(f"{_p(v)}²" for v in d) if n <= 8 else f"{n} terms"
            return f"{name}: var[{t}] = (1/{n}) Σ_c (x_c − mean)² = ({body})/{n}{end}"
        body = " + ".join(f"{_p(float(v))}²" for v in x) if n <= 8 else f"{n} terms"
        return f"{name}: ms[{t}] = (1/{n}) Σ_c x_c² = ({body})/{n}{end}"
    ch = index[1]
    xv, g, var = float(x[ch]), float(norm.weight[ch]), float(norm.var[t])
    if norm.kind == "layer":
        m, b = float(norm.mean[t]), float(norm.bias[ch])
        return f"{name}: y[{t},{ch}] = (x − mean)/√(var + ε)·γ + β = ({fmt(xv)} − {_p(m)})" \
               f"/√({fmt(var)} + {norm.eps:g})·{_p(g)} + {_p(b)}{end}"
    return f"{name}: y[{t},{ch}] = x/√(ms + ε)·γ = {fmt(xv)}/√({fmt(var)} + {norm.eps:g})·" \
           f"{_p(g)}{end}"


def _explain_head(tr, index, kind: str, end: str) -> str:
    t = index[0]
    if kind == "final":
        src = "final_norm.out" if tr.final_norm is not None else f"L{len(tr.layers) - 1}.output"
        return f"final[{t},{index[1]}] = {src}[{t},{index[1]}]{end}   (what the output head reads)"
    b = index[1]
    if kind == "logits":
        W, bias = tr.params["head.weight"], tr.params["head.bias"]
        if tr.config.tie_embeddings:  # the head reads the embedding table
            return f"logits[{t},{b}] = Σ_c final[{t},c]·E[{b},c] + b = " \
                   f"{_dot(tr.final[t], W[b], bias[b])}{end}   ({_byte(b)}; the head is tied: " \
                   f"its weights are the embedding table E)"
        return f"logits[{t},{b}] = Σ_c final[{t},c]·W_head[{b},c] + b = " \
               f"{_dot(tr.final[t], W[b], bias[b])}{end}   ({_byte(b)})"
    logit = float(tr.logits[t, b])
    total = float(torch.exp(tr.logits[t] - tr.logits[t].max()).sum())
    top = float(tr.logits[t].max())
    return f"probs[{t},{b}] = exp(logit_{b} − m)/Σ_b' exp(logit_b' − m), m = max logit = " \
           f"{fmt(top)}: exp({fmt(logit)} − {_p(top)})/{fmt(total)} (the sum runs over all " \
           f"{tr.logits.size(-1)} bytes){end}   (the chance that {_byte(b)} comes next)"


def _explain_layer(tr, l: int, p, index, kind: str, value: float, end: str) -> str:
    layer, c = tr.layers[l], tr.config
    L = f"L{l}"
    pre = c.norm_position == "pre"
    residual = c.ablations.residual
    if kind == "input":
        src = "x0" if l == 0 else f"L{l - 1}.output"
        return f"{L}.input[{index[0]},{index[1]}] = {src}[{index[0]},{index[1]}]{end}   (the " \
               f"stream entering layer {l})"
    if kind == "attn_in":
        src = f"{L}.norm1.out" if pre else f"{L}.input"
        return f"{L}.attn_in[{index[0]},{index[1]}] = {src}[{index[0]},{index[1]}]{end}   (what " \
               f"attention reads)"
    if kind in ("q", "k", "v"):
        h, t, d = int(p[1][1:]), *index
        A = c.n_heads * c.head_dim
        row = "QKV".index(kind.upper()) * A + h * c.head_dim + d
        W, b = tr.params[f"blocks.{l}.attn.qkv.weight"], tr.params[f"blocks.{l}.attn.qkv.bias"]
        if c.modern_block.qk_norm and kind in ("q", "k"):  # the projection, then its RMSNorm
            first = row - d
            raw = layer.attn_in[t] @ W[first:first + c.head_dim].T + b[first:first + c.head_dim]
            gain = float(tr.params[f"blocks.{l}.attn.{kind}_norm.weight"][d])
            return f"{L}.h{h}.{kind}[{t},{d}] = u_{d}/√(mean_d' u_d'² + ε)·γ_{d}, u = attn_in[{t}]·" \
                   f"W_{kind.upper()} + b over head {h}'s {c.head_dim} dimensions (QK-norm): " \
                   f"{fmt(float(raw[d]))}/√({fmt(float(raw.pow(2).mean()))} + ε)·{_p(gain)}{end}"
        return f"{L}.h{h}.{kind}[{t},{d}] = Σ_c attn_in[{t},c]·W_{kind.upper()}[{row % A},c]" \
               f" + b = {_dot(layer.attn_in[t], W[row], b[row])}{end}"
    if kind in ("q_rot", "k_rot", "v_rot"):
        h, t, d = int(p[1][1:]), *index
        src = getattr(layer, kind[0])[h, t]
        name = kind[0]
        rotated = c.positions.rope_on_v if kind == "v_rot" else c.positions.positional == "rope"
        if not rotated:
            return f"{L}.h{h}.{kind}[{t},{d}] = {name}[{t},{d}]{end}   (no RoPE on {name})"
        i = d // 2
        cos, sin = float(layer.rope_cos[h, t, i]), float(layer.rope_sin[h, t, i])
        a, b = float(src[2 * i]), float(src[2 * i + 1])
        if d % 2 == 0:
            formula = f"{name}_{2 * i}·cos − {name}_{2 * i + 1}·sin = " \
                      f"{_p(a)}·{_p(cos)} − {_p(b)}·{_p(sin)}"
        else:
            formula = f"{name}_{2 * i}·sin + {name}_{2 * i + 1}·cos = " \
                      f"{_p(a)}·{_p(sin)} + {_p(b)}·{_p(cos)}"
        theta = float(layer.rope_theta[h, i])
        return f"{L}.h{h}.{kind}[{t},{d}] = {formula}{end}   (pair {i} turned by m·θ_{i} = " \
               f"{_position(tr, t)}·{theta:.4g} rad)"
    if kind in ("scores", "weights") and layer.mask is not None and layer.mask[index]:
        h, t, j = int(p[1][1:]), *index
        if kind == "scores":
            return f"{L}.h{h}.scores[{t},{j}] = masked{end}   (position {t} may not look at " \
                   f"{j}, the future; q·k/√hd would be {fmt(float(layer.scores[h, t, j]))})"
        return f"{L}.h{h}.weights[{t},{j}] = exp(−∞)/…{end}   (masked: position {t} may " \
               f"not look at {j}, the future)"
    if kind == "scores":
        h, t, j = int(p[1][1:]), *index
        return f"{L}.h{h}.scores[{t},{j}] = q_rot[{t}]·k_rot[{j}]/√{c.head_dim} = " \
               f"({_dot(layer.q_rot[h, t], layer.k_rot[h, j])})/{fmt(math.sqrt(c.head_dim))}{end}"
    if kind == "weights":
        h, t, j = int(p[1][1:]), *index
        row = layer.masked_scores[h, t].tolist()
        top = max(row)  # subtracted first, so no exp overflows
        exps = [math.exp(x - top) for x in row if x != -math.inf]
        listed = " + ".join(fmt(e) for e in exps) if len(exps) <= 6 else f"{len(exps)} terms"
        return f"{L}.h{h}.weights[{t},{j}] = exp(s[{t},{j}] − m)/Σ_j exp(s[{t},j] − m), " \
               f"m = max_j s[{t},j] = {fmt(top)}: exp({fmt(row[j])} − {_p(top)})/({listed}) " \
               f"= {fmt(math.exp(row[j] - top))}/{fmt(sum(exps))}{end}"
    if kind == "rowsum":
        h, t = int(p[1][1:]), index[0]
        w = layer.weights[h, t]
        body = " + ".join(fmt(float(x)) for x in w) if w.numel() <= 8 else f"{w.numel()} weights"
        return f"{L}.h{h}: Σ_j weights[{t},j] = {body}{end}   (every softmax row sums to 1)"
    if kind == "head_out":
        h, t, d = int(p[1][1:]), *index
        v = "v_rot" if c.positions.rope_on_v else "v"
        return f"{L}.h{h}.out[{t},{d}] = Σ_j weights[{t},j]·{v}[j,{d}] = " \
               f"{_dot(layer.weights[h, t], layer.v_rot[h, :, d], limit=12)}{end}"
    if kind == "concat":
        t, i = index
        return f"{L}.concat[{t},{i}] = {L}.h{i // c.head_dim}.out[{t},{i % c.head_dim}]{end}   " \
               f"(the heads side by side: {i} = {i // c.head_dim}·{c.head_dim} + {i % c.head_dim})"
    if kind in LINEARS:
        return _explain_linear(tr, l, index, kind, end)
    if kind in ("resid1", "resid2"):
        t, ch = index
        base, f = ("input", "attn_out") if kind == "resid1" else ("after_attn", "ffn_out")
        base_v, f_v = float(getattr(layer, base)[t, ch]), float(getattr(layer, f)[t, ch])
        if not residual:
            return f"{L}.{kind}[{t},{ch}] = {f}[{t},{ch}]{end}   (no residual connection)"
        base_name = {"input": "input", "after_attn": "stream after attention"}[base]
        return f"{L}.{kind}[{t},{ch}] = {base_name} + {f} = {fmt(base_v)} + {_p(f_v)}{end}"
    if kind == "after_attn":
        t, ch = index
        src = f"{L}.resid1" if pre else f"{L}.norm1.out"
        return f"{L}.after_attn[{t},{ch}] = {src}[{t},{ch}]{end}"
    if kind == "ffn_in":
        t, ch = index
        src = f"{L}.norm2.out" if pre else f"{L}.after_attn"
        return f"{L}.ffn_in[{t},{ch}] = {src}[{t},{ch}]{end}   (what the FFN reads)"
    if kind == "ffn_hidden":
        t, u = index
        x = fmt(float(layer.ffn_pre[t, u]))
        formula = {"relu": f"max(0, {x})", "gelu": f"{x}·Φ({x})",
                   "silu": f"{x}·σ({x})", "relu2": f"max(0, {x})²"}[c.activation]
        return f"{L}.ffn_hidden[{t},{u}] = {c.activation}(ffn_pre) = {formula}{end}"
    if kind == "output":
        t, ch = index
        if layer.resid2 is None:
            src = "after_attn"
        else:
            src = "resid2" if pre else "norm2.out"
        return f"{L}.output[{t},{ch}] = {L}.{src}[{t},{ch}]{end}   (the stream leaving layer {l})"
    raise KeyError(f"no such trace key: {'.'.join(p)}")


# a layer's Linear maps: kind → (the module, the input it reads, the summed index, the weight's name)
LINEARS = {"attn_out": ("attn.out", "concat", "i", "W_O"),
           "ffn_pre": ("ffn.up", "ffn_in", "c", "W_up"),
           "ffn_out": ("ffn.down", "ffn_hidden", "u", "W_down")}


def _explain_linear(tr, l: int, index, kind: str, end: str) -> str:
    """One output of a Linear map in layer l: Σ input·W + b, written out."""
    module, source, i, weight = LINEARS[kind]
    t, row = index
    W, b = tr.params[f"blocks.{l}.{module}.weight"], tr.params[f"blocks.{l}.{module}.bias"]
    inputs = getattr(tr.layers[l], source)[t]
    return (f"L{l}.{kind}[{t},{row}] = Σ_{i} {source}[{t},{i}]·{weight}[{row},{i}] + b = "
            f"{_dot(inputs, W[row], b[row])}{end}")
