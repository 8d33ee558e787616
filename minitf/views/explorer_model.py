"""The Explorer's view model: for one traced input and one followed position, every card of numbers
the browser draws (`build_view`), with each cell's trace key and provenance, sent as JSON
(`as_json`).

Kept apart from the widget so the tests read the view without a browser, and apart from the
picture, which draws a summary of the same trace with matplotlib."""
from __future__ import annotations

from collections.abc import Mapping

from ..core.tokens import EOS, TAB, show
from .trace import Trace

WRAP = 8         # a long vector is shown in rows of this many numbers
TOP = 10         # logits and probabilities shown per position
MAX_BYTES = 32   # longer inputs would not be legible
FULL_T = 16      # up to this length every row of the (T, T) scores and weights is shown, else the
                 # followed row only (a 32 × 32 grid of numbers is not legible, and grows as T²)


def _card(tr: Trace, title: str, keys: list[list[str]], rows: list[str], cols=None, *,
          note: str = "", highlight: int | None = None, masked=None, colscale: bool = False):
    """A block of numbers: keys (ragged rows allowed) → values, row and column labels."""
    return {"title": title, "note": note, "rows": rows, "cols": cols, "keys": keys,
            "values": [[_json_number(tr.value(k)) for k in row] for row in keys],
            "highlight": highlight, "masked": masked, "colscale": colscale}


def _json_number(v):
    """JSON has no infinities: a masked score (−∞) travels as null."""
    return None if isinstance(v, float) and v == float("-inf") else v


def _vector(tr: Trace, title: str, prefix: str, n: int, row_label: str, note: str = ""):
    """A vector of n numbers (keys prefix.i): one row when short, rows of WRAP when long."""
    keys = [f"{prefix}.{i}" for i in range(n)]
    if n <= WRAP:
        return _card(tr, title, [keys], [row_label], [str(i) for i in range(n)], note=note)
    chunks = [keys[i:i + WRAP] for i in range(0, n, WRAP)]
    rows = [f"{i}–{min(i + WRAP, n) - 1}" for i in range(0, n, WRAP)]
    return _card(tr, title, chunks, rows, [f"+{i}" for i in range(WRAP)], note=note)


def _matrix(tr: Trace, title: str, prefix: str, rows: list[int], n_cols: int, labels, t: int,
            masked=None, **kw):
    """The given rows of a (T, n_cols) tensor; the followed position t is highlighted."""
    keys = [[f"{prefix}.{r}.{c}" for c in range(n_cols)] for r in rows]
    return _card(tr, title, keys, [labels[r] for r in rows], [str(c) for c in range(n_cols)],
                 highlight=rows.index(t) if t in rows else None,
                 masked=None if masked is None else [masked[r] for r in rows], **kw)


def _norm_cards(tr: Trace, name: str, prefix: str, norm, t: int, pos: str, role: str) -> list:
    stat = "var" if norm.kind == "layer" else "ms"
    stats = ["mean", stat] if norm.kind == "layer" else [stat]
    what = {"layer": "LayerNorm: (x − mean)/√(var + ε)·γ + β",
            "rms": "RMSNorm: x/√(ms + ε)·γ, ms = mean(x²)"}[norm.kind]
    return [_card(tr, f"{name} statistics at {pos}", [[f"{prefix}.{s}.{t}" for s in stats]], [pos],
                  stats, note=f"{role}; {what}"),
            _vector(tr, f"{name} output at {pos}", f"{prefix}.out.{t}", norm.output.size(-1), pos)]


def build_view(tr: Trace, position: int) -> dict:
    """Everything the widget draws for one followed position (JSON-ready but for `prov`: as_json).

    Every card lists its cells' trace keys; `prov` maps each key to Trace.explain(key), written
    when first read (`Provenance`).
    """
    c, T, t = tr.config, len(tr.ids), position
    labels = tr.labels
    pos_labels = [f"{j} {lab}" for j, lab in enumerate(labels)]
    pos = f"t={t} '{labels[t]}'"
    pre = c.norm_position == "pre"
    hd, H, C = c.head_dim, c.n_heads, c.d_model
    sections = []

    every = list(range(T))
    cards = [_card(tr, "byte ids", [[f"ids.{j}" for j in every]], ["id"], pos_labels,
                   note="a token is a byte: its id is the byte's value"),
             _matrix(tr, "embedding rows E[id]", "embed", every, C, pos_labels, t,
                     note="row id of the embedding table, for every position")]
    if tr.positional is not None:
        cards.append(_matrix(tr, "sinusoidal positions", "pos", every, C, pos_labels, t))
        cards.append(_matrix(tr, "x0 = embedding + position", "x0", every, C, pos_labels, t))
    sections.append({"title": "Bytes → vectors", "note": "the input, one row per position",
                     "cards": cards, "heads": []})

    rows = every if T <= FULL_T else [t]  # of the (T, T) scores and weights
    for l, layer in enumerate(tr.layers):
        L = f"L{l}"
        cards = []
        if pre:
            cards += _norm_cards(tr, "norm1", f"{L}.norm1", layer.norm1, t, pos,
                                 "pre-norm: attention reads norm1(x)")
        else:
            cards.append(_vector(tr, f"input x at {pos}", f"{L}.input.{t}", C, pos,
                                 note="post-norm: attention reads the stream itself"))
        heads = []
        rope_q = c.positions.positional == "rope"
        mask = layer.mask.tolist() if layer.mask is not None else None
        for h in range(H):
            P = f"{L}.h{h}"
            hcards = [_card(tr, f"q at {pos}" + (" before / after RoPE" if rope_q else ""),
                            [[f"{P}.q.{t}.{d}" for d in range(hd)]]
                            + ([[f"{P}.q_rot.{t}.{d}" for d in range(hd)]] if rope_q else []),
                            ["q", "q rot"] if rope_q else ["q"], [str(d) for d in range(hd)]),
                      _matrix(tr, "k, every position", f"{P}.k", every, hd, pos_labels, t)]
            if rope_q:
                hcards.append(_matrix(tr, "k after RoPE", f"{P}.k_rot", every, hd, pos_labels, t))
            hcards.append(_matrix(tr, "v, every position", f"{P}.v", every, hd, pos_labels, t))
            if c.positions.rope_on_v:
                hcards.append(_matrix(tr, "v after RoPE", f"{P}.v_rot", every, hd, pos_labels, t))
            hcards.append(_matrix(tr, f"scores q·k/√{hd}" + (" (masked: −∞)" if mask else ""),
                                  f"{P}.scores", rows, T, pos_labels, t, masked=mask,
                                  note="row = the attending position, column = the attended"))
            w = _matrix(tr, "weights = softmax of each row", f"{P}.weights", rows, T, pos_labels, t,
                        masked=mask)
            for i, j in enumerate(rows):  # each row's sum, as a last column
                w["keys"][i].append(f"{P}.rowsum.{j}")
                w["values"][i].append(tr.value(f"{P}.rowsum.{j}"))
            w["cols"].append("Σ")
            hcards.append(w)
            hcards.append(_vector(tr, f"output at {pos} = Σ_j w·v", f"{P}.out.{t}", hd, pos))
            heads.append({"title": f"layer {l} · head {h}", "cards": hcards})
        after = [_vector(tr, f"heads concatenated at {pos}", f"{L}.concat.{t}", H * hd, pos),
                 _vector(tr, f"W_O · concat at {pos}", f"{L}.attn_out.{t}", C, pos),
                 _vector(tr, f"residual sum at {pos}", f"{L}.resid1.{t}", C, pos,
                         note="x + attention" if c.ablations.residual else
                         "no residual: attention alone")]
        if not pre:
            after += _norm_cards(tr, "norm1", f"{L}.norm1", layer.norm1, t, pos,
                                 "post-norm: the sum is normalised")
        sections.append({"title": f"Layer {l} · attention", "note": _layer_note(c),
                         "cards": cards, "heads": heads, "after": after})
        if layer.norm2 is None:
            continue
        cards = []
        if pre:
            cards += _norm_cards(tr, "norm2", f"{L}.norm2", layer.norm2, t, pos,
                                 "pre-norm: the FFN reads norm2(x)")
        F = layer.ffn_pre.size(-1)
        cards += [_vector(tr, f"FFN hidden before {c.activation} at {pos}", f"{L}.ffn_pre.{t}", F, pos),
                  _vector(tr, f"FFN hidden after {c.activation} at {pos}", f"{L}.ffn_hidden.{t}", F,
                          pos),
                  _vector(tr, f"FFN output at {pos}", f"{L}.ffn_out.{t}", C, pos),
                  _vector(tr, f"residual sum at {pos}", f"{L}.resid2.{t}", C, pos)]
        if not pre:
            cards += _norm_cards(tr, "norm2", f"{L}.norm2", layer.norm2, t, pos,
                                 "post-norm: the sum is normalised")
        sections.append({"title": f"Layer {l} · feed-forward", "note": f"{C} → {F} → {C}, "
                         f"each position on its own", "cards": cards, "heads": []})

    cards = []
    if tr.final_norm is not None:
        cards += _norm_cards(tr, "final norm", "final_norm", tr.final_norm, t, pos,
                             "pre-norm models normalise once more before the head")
    top = tr.probs[t].topk(TOP).indices.tolist()
    cards.append(_card(tr, f"top {TOP} next bytes after {pos}",
                       [[f"logits.{t}.{b}", f"probs.{t}.{b}"] for b in top],
                       [f"{b} '{show([b])}'" for b in top], ["logit", "p"], colscale=True,
                       note="logit = final · W_head + b; p = softmax over all 256 bytes"))
    sections.append({"title": "Output head", "note": "", "cards": cards, "heads": []})

    keys = [k for s in sections for card in _all_cards(s) for row in card["keys"] for k in row]
    nxt = tr.next_byte(t)
    return {"meta": {"ids": tr.ids, "labels": labels, "position": t, "T": T,
                     "summary": model_summary(c), "max_bytes": min(MAX_BYTES, c.max_len),
                     "prediction": {"byte": nxt, "label": show([nxt]), "name": BYTE_NAMES.get(nxt, ""),
                                    "p": float(tr.probs[t, nxt])},
                     "ended": output_ended(tr.ids)},
            "sections": sections, "prov": Provenance(tr, keys)}


class Provenance(Mapping):
    """Trace.explain(key) for each key a view shows, each written when first read.

    A view of the language model shows ~8,600 numbers, and writing every explanation costs more
    than the trace itself; Python needs them only when one is read, and the widget writes them all
    (`as_json`) when it sends the view to a browser, whose tooltips must answer without a kernel."""

    def __init__(self, tr: Trace, keys):
        self._trace = tr
        self._keys = dict.fromkeys(keys)  # the shown keys, in order; None: not yet written

    def __getitem__(self, key: str) -> str:
        if self._keys.get(key) is None:
            if key not in self._keys:
                raise KeyError(f"{key!r} is not shown in this view")
            self._keys[key] = self._trace.explain(key)
        return self._keys[key]

    def __iter__(self):
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __repr__(self) -> str:
        return f"Provenance({len(self)} keys)"


def as_json(view: dict, widget=None) -> dict:
    """The view as the browser receives it: plain JSON, every explanation written out (the
    widget's `view` trait serialises through this)."""
    prov = view.get("prov")
    return view if prov is None else {**view, "prov": {k: prov[k] for k in prov}}


BYTE_NAMES = {TAB: "TAB: the input ends", EOS: "EOS: the output ends"}


def output_ended(ids) -> bool:
    """A pair's output has ended: the bytes hold a TAB and end with EOS. Generation stops there (a
    language model's text has no TAB, and its newline is only a byte)."""
    ids = list(ids)
    return len(ids) > 0 and ids[-1] == EOS and TAB in ids


def _all_cards(section: dict):
    yield from section["cards"]
    for head in section["heads"]:
        yield from head["cards"]
    yield from section.get("after", [])


def model_summary(c) -> str:
    norm = {"layer": "LayerNorm", "rms": "RMSNorm"}[c.norm]
    positions = {"rope": "RoPE on q, k", "sinusoidal": "sinusoidal positions",
                 "none": "no positions"}[c.positions.positional] + (" and v" if c.positions.rope_on_v else "")
    if c.positions.position_ids == "coupled":
        positions += " (coupled ids)"
    heads = f"{c.n_heads} head{'s' if c.n_heads > 1 else ''} × {c.head_dim}"
    ffn = f"FFN {c.d_ff} ({c.activation})" if c.ablations.ffn else "no FFN"
    return (f"d_model {c.d_model} · {heads} · {c.n_layers} layer{'s' if c.n_layers > 1 else ''} · "
            f"{ffn} · {c.norm_position}-norm {norm} · {positions}"
            + (" · head tied to the embedding" if c.tie_embeddings else "")
            + ("" if c.ablations.causal else " · NO causal mask")
            + ("" if c.ablations.residual else " · no residual"))


def _layer_note(c) -> str:
    if c.norm_position == "pre":
        return "pre-norm: x + attention(norm1(x)); every head reads the same input"
    return "post-norm: norm1(x + attention(x)); every head reads the same input"
