"""A shift solver whose every weight is set by hand: no training, and it works on any input length
up to the one it was built for.

The model is one pre-norm layer with one head, no FFN, a tied head and coupled position ids
(input byte j and output byte j share id j+1, TAB has 0; `minitf.core.rope.position_ids`). Each
piece does one job, and a few named numbers (`HandSet`) set them:

- **the byte circle** (embedding): printable byte b sits at angle k·2π(b − 32)/95 in a plane (f₁, f₂),
  so "the next byte, 126 wrapping to 32" is one rotation by k·2π/95. TAB and EOS share a third
  direction t. The three directions are orthogonal to (1, 1, 1, 1), so LayerNorm only rescales.
- **the query that looks one step ahead**: the query is a constant (a bias), rotated by RoPE at
  frequency ω, so the score of a key at relative id Δ is S·cos(ω(Δ − 1)): highest at Δ = +1, the
  source byte of the next output. ω = 2π/(longest + 3) keeps every other Δ the task can meet away
  from the peak.
- **the end-of-output key**: TAB's key, on a second RoPE pair whose frequency is nearly 0 (a
  position-free channel; `Config` refuses 0), scores B = S(1 + cos ω)/2 at every position: below a
  byte at Δ = +1, above every other byte. So TAB wins exactly when no byte is left to shift.
- **the value rotation**: W_V keeps t and rotates the byte plane by k·2π/95: byte b's value is the
  code of b + 1, and TAB's value is t, which the head reads as EOS.
- **the readout**: W_O = λ·I drowns the current byte's own embedding in the residual stream, the
  final norm's gain γ sets the logits' scale, and the head's biases rule out every byte that is
  neither printable nor EOS (TAB shares EOS's direction).

`shift_by_hand()` builds it. `value_circuit(model)` reads any one-layer solver the same way: the
byte each printable byte's value turns into, through the norms, W_V, W_O and the head.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ..core.config import Config
from ..core.model import Transformer
from ..core.tokens import EOS, TAB
from .feedback import ExerciseError

PRINTABLE = range(32, 127)  # the 95 bytes shift maps among themselves


@dataclass(frozen=True)
class HandSet:
    """The named numbers of the hand-set solver.

    d_model 4 with LayerNorm (1,376 parameters), or 3 with RMSNorm (1,093): RMSNorm subtracts no
    mean, so all three directions are free for t and the byte plane.
    """
    d_model: int = 4
    longest: int = 24        # the longest input it must shift (L_max)
    k: int = 34              # the code's step: byte b at angle k·2π(b − 32)/95 (k coprime to 95)
    S: float = 1500.0        # score scale: the source byte scores S, its neighbours S·cos ω
    lam: float = 3000.0      # W_O = λ·I
    gamma: float = 6000.0    # the final norm's gain: the logits' scale
    slow: float = 1e-4       # the near-zero RoPE frequency of the end-of-output channel
    off: float = -50.0       # head bias of the bytes that are neither printable nor EOS
    max_len: int = 64        # the longest sequence it reads (input TAB output EOS: 2·length + 2)

    @property
    def omega(self) -> float:
        """The query's RoPE frequency: one turn every longest + 3 ids, so no offset the task
        meets (|Δ − 1| ≤ longest) comes back round to the peak."""
        return 2 * math.pi / (self.longest + 3)

    def config(self) -> Config:
        if self.d_model not in (3, 4):
            raise ValueError(f"the hand-set solver is written for d_model 4 (LayerNorm) or 3 "
                             f"(RMSNorm), got {self.d_model}")
        return Config(d_model=self.d_model, n_heads=1, head_dim=4, n_layers=1,
                      norm_position="pre", norm="layer" if self.d_model == 4 else "rms",
                      ffn=False, tie_embeddings=True, position_ids="coupled", dropout=0.0,
                      rope_freqs=(self.omega, self.slow), max_len=self.max_len)

    def directions(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """t (TAB and EOS), f₁ and f₂ (the byte plane): orthonormal. At d_model 4 they are
        orthogonal to (1, 1, 1, 1), the mean LayerNorm subtracts, so the norm only rescales them."""
        if self.d_model == 3:
            return tuple(torch.eye(3, dtype=torch.float64))
        rows = torch.tensor([[1.0, -1.0, 1.0, -1.0], [1.0, 1.0, -1.0, -1.0],
                             [1.0, -1.0, -1.0, 1.0]], dtype=torch.float64) / 2
        return tuple(rows)


def byte_angle(b: int, k: int) -> float:
    """Where printable byte b sits on the circle."""
    return k * 2 * math.pi * (b - 32) / 95


# the directions at d_model 4 (the notebook's): TAB and EOS on T, the byte plane (F1, F2)
T, F1, F2 = HandSet().directions()


def byte_circle(n: HandSet) -> torch.Tensor:
    """The embedding (256, d): printable bytes on a circle, TAB and EOS on t, the rest 0."""
    t, f1, f2 = n.directions()
    E = torch.zeros(256, n.d_model, dtype=torch.float64)
    for b in PRINTABLE:
        a = byte_angle(b, n.k)
        E[b] = math.cos(a) * f1 + math.sin(a) * f2
    E[TAB] = E[EOS] = t
    return E


def query(S: float, omega: float) -> torch.Tensor:
    """The query, one constant (4,) for every position: pair 1 (cos ω, sin ω)·√S is one RoPE step
    ahead of a byte key's (1, 0)·√S, so it meets the key at relative id +1 head on; pair 2 (1, 0)·√S
    reads the end-of-output channel."""
    return math.sqrt(S) * torch.tensor([math.cos(omega), math.sin(omega), 1.0, 0.0],
                                       dtype=torch.float64)


def tab_score(S: float, omega: float) -> float:
    """TAB's score B, at every position: halfway between the source byte's S and its neighbours'
    S·cos ω, so TAB loses to a byte at +1 and beats every other."""
    return S * (1 + math.cos(omega)) / 2


def value_rotation(n: HandSet) -> torch.Tensor:
    """W_V (d, d): t stays, the byte plane turns by k·2π/95 (b's code becomes b + 1's)."""
    turn = n.k * 2 * math.pi / 95
    R = torch.tensor([[math.cos(turn), -math.sin(turn)], [math.sin(turn), math.cos(turn)]],
                     dtype=torch.float64)
    A = torch.stack(n.directions(), dim=1)  # (d, 3)
    inner = torch.eye(3, dtype=torch.float64)
    inner[1:, 1:] = R
    return A @ inner @ A.T


def shift_by_hand(numbers: HandSet | None = None, pieces: dict | None = None) -> Transformer:
    """The hand-set shift solver, float32, in evaluation mode.

    pieces, {name: function}, puts a learner's pieces in place of these (d_model 4):
    byte_circle(k) → E (256, 4), query(S, ω) → (4,), tab_score(S, ω) → B, value_rotation(k) → W_V.
    """
    n = numbers or HandSet()
    pieces = pieces or {}
    if n.d_model != 4 and pieces:
        raise ValueError("your pieces are written for d_model 4")
    byte_circle_of, query_of = pieces.get("byte_circle"), pieces.get("query")
    tab_score_of, value_rotation_of = pieces.get("tab_score"), pieces.get("value_rotation")
    model = Transformer(n.config()).double()
    attn, root, d = model.blocks[0].attn, math.sqrt(n.S), n.d_model
    t = n.directions()[0]
    B = (tab_score_of or tab_score)(n.S, n.omega)
    with torch.no_grad():
        t_after_norm = float(model.blocks[0].norm1(t) @ t)  # how long t is after the first norm
    u = torch.tensor([-root, 0.0, B / root, 0.0], dtype=torch.float64)
    W_Q = torch.zeros(4, d, dtype=torch.float64)
    W_K = torch.outer(u, t) / t_after_norm  # only TAB (and EOS) have a key of their own
    W_V = torch.zeros(4, d, dtype=torch.float64)
    W_V[:d] = value_rotation_of(n.k) if value_rotation_of else value_rotation(n)
    b_q = torch.as_tensor((query_of or query)(n.S, n.omega), dtype=torch.float64)
    b_k = root * torch.tensor([1.0, 0.0, 0.0, 0.0], dtype=torch.float64)
    W_O = torch.zeros(d, 4, dtype=torch.float64)
    W_O[:, :d] = n.lam * torch.eye(d, dtype=torch.float64)
    head_bias = torch.full((256,), n.off, dtype=torch.float64)
    head_bias[list(PRINTABLE)] = 0.0
    head_bias[EOS] = 0.0
    E = byte_circle_of(n.k) if byte_circle_of else byte_circle(n)
    with torch.no_grad():
        model.embed.weight.copy_(torch.as_tensor(E, dtype=torch.float64))  # the head reads it too
        attn.qkv.weight.copy_(torch.cat([W_Q, W_K, W_V]))
        attn.qkv.bias.copy_(torch.cat([b_q, b_k, torch.zeros(4, dtype=torch.float64)]))
        attn.out.weight.copy_(W_O)
        attn.out.bias.zero_()
        model.final_norm.weight.fill_(n.gamma)
        if getattr(model.final_norm, "bias", None) is not None:
            model.final_norm.bias.zero_()
        model.head.bias.copy_(head_bias)
    return model.float().eval()


def your_shift_model(numbers: HandSet | None = None, **pieces) -> Transformer:
    """The hand-set solver built with your pieces (byte_circle=…, query=…, tab_score=…,
    value_rotation=…), each where it passes its check and the reference solution where it does not
    yet, so the notebook runs to its end before every exercise is written; one sentence says which."""
    from .exercises import EXERCISES, passes  # here, not at the top: the exercises import this module

    yours = [name for name, fn in pieces.items() if passes(name, fn)]
    stand_ins = [name for name in pieces if name not in yours]
    model = shift_by_hand(numbers, {name: fn if name in yours else EXERCISES[name].solution
                                    for name, fn in pieces.items()})
    said = [f"yours: {_listed(yours)}"] if yours else []
    if stand_ins:
        said.append(f"the reference solution for {_listed(stand_ins)} "
                    + ("(yours does not pass its check yet)" if len(stand_ins) == 1 else
                       "(yours do not pass their checks yet)"))
    count = sum(p.numel() for p in model.parameters())
    print(f"Your model: {count:,} parameters, 0 training steps; " + "; ".join(said) + ".")
    return model


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


@torch.no_grad()
def value_circuit(model) -> dict[int, int]:
    """For a one-layer model: printable byte b → the printable byte the head ranks first when
    attention copies b's value, norm(E[b])·W_V·W_O, alone into the final norm and the head
    (E·W_V·W_O·Eᵀ with the norms and biases on the way). A shift solver maps b to b + 1."""
    block = model.blocks[0]
    A = model.config.attn_dim
    printable = torch.tensor(list(PRINTABLE))
    x = block.norm1(model.embed.weight[printable])  # what attention reads of each byte
    W, b = block.attn.qkv.weight[2 * A:], block.attn.qkv.bias[2 * A:]
    out = block.attn.out(x @ W.T + b)
    h = model.final_norm(out) if model.final_norm is not None else out
    logits = model.head(h)[:, printable]
    return dict(zip(printable.tolist(), (logits.argmax(-1) + 32).tolist()))



@torch.no_grad()
def next_byte_with_value_of(model, text: bytes, position: int, byte: int) -> int:
    """An intervention on a one-layer model: the byte it writes after `text` when the value at
    `position` is the one `byte` would have there. If the value path carries the answer, the
    output follows the patched byte, not the one that is really there."""
    attn, A = model.blocks[0].attn, model.config.attn_dim
    ids = torch.tensor([list(text)])
    # the value `byte` would have at that position (values are not rotated unless rope_on_v)
    value = attn.qkv(model.blocks[0].norm1(model.embed.weight[byte]))[2 * A:]

    def patch(module, inputs, output):
        output = output.clone()
        output[0, position, 2 * A:] = value
        return output
    handle = attn.qkv.register_forward_hook(patch)
    try:
        return int(model.eval()(ids)[0, -1].argmax())
    finally:
        handle.remove()

# --- checks of a learner's pieces: by what each must do (the answer is not unique) ------------------

def _name(b: int) -> str:
    return repr(chr(b))


def _successor(b: int) -> int:
    return b + 1 if b < 126 else 32


def _angles(E: torch.Tensor) -> torch.Tensor:
    """Each printable byte's angle in the byte plane, in [0, 2π)."""
    x, y = E[list(PRINTABLE)] @ F1, E[list(PRINTABLE)] @ F2
    return torch.atan2(y, x) % (2 * math.pi)


def judge_byte_circle(E) -> str:
    """byte_circle(k) → E (256, 4): printable bytes on the unit circle of the plane (F1, F2), one
    fixed turn from each byte to its successor (126 → 32 included), TAB and EOS on T."""
    k = HandSet().k
    if isinstance(E, torch.Tensor) and E.is_floating_point() and E.dtype != torch.float64:
        raise ExerciseError(
            f"your table is {str(E.dtype).removeprefix('torch.')}: the hand-set weights are checked to "
            f"1e-9, and {str(E.dtype).removeprefix('torch.')} keeps about "
            f"{round(-math.log10(torch.finfo(E.dtype).eps))} digits, so a byte's distance from the centre comes out "
            f"{float((E[list(PRINTABLE)].double().norm(dim=-1) - 1).abs().max()):.1g} away from 1. Build "
            "it in float64: torch.zeros(256, 4, dtype=torch.float64) (torch.zeros alone is float32)",
            ("_table_dtype",))
    E = _returned(E, "the (256, 4) table")
    if E.shape != (256, 4):
        return _fail(f"your byte_circle({k}) has shape {tuple(E.shape)}; the table is (256, 4): one row per byte")
    for b in (TAB, EOS):
        if not torch.allclose(E[b], T, atol=1e-9):
            return _fail(f"row {b} ({'TAB' if b == TAB else 'EOS'}) is not T: TAB and EOS share the "
                         "third direction, the one the byte plane leaves free")
    rows = E[list(PRINTABLE)]
    off_plane = (rows @ T).abs().max()
    if off_plane > 1e-9 or (rows.sum(-1).abs().max() > 1e-9):
        return _fail("some printable bytes leave the plane (F1, F2): write each as cos(a)·F1 + sin(a)·F2")
    lengths = rows.norm(dim=-1)
    if (lengths - 1).abs().max() > 1e-9:
        b = int((lengths - 1).abs().argmax()) + 32
        return _fail(f"byte {_name(b)} is {float(lengths[b - 32]):.10g} from the centre; every byte sits on "
                     "the unit circle (cos a, sin a), so none outweighs another")
    angles = _angles(E)
    for i in range(95):
        for j in range(i + 1, 95):
            if abs(math.remainder(float(angles[i] - angles[j]), 2 * math.pi)) < 1e-6:
                return _fail(f"bytes {_name(i + 32)} and {_name(j + 32)} share a point: with k = {k} "
                             "every byte needs its own, so k must share no factor with 95 = 5·19 "
                             "(did you use b instead of b − 32, or another step?)")
    steps = [math.remainder(float(angles[_successor(b) - 32] - angles[b - 32]), 2 * math.pi)
             for b in PRINTABLE]
    worst = max(range(95), key=lambda i: abs(steps[i] - steps[0]))
    if abs(steps[worst] - steps[0]) > 1e-6:
        b = worst + 32
        return _fail(f"from {_name(32)} to {_name(33)} the circle turns by {steps[0]:.4f} rad, but from "
                     f"{_name(b)} to {_name(_successor(b))} by {steps[worst]:.4f}: the step must be one "
                     "fixed turn for every byte, 126 → 32 included, so that one rotation shifts them all "
                     "(angle k·2π(b − 32)/95)")
    return f"95 bytes on the circle, one turn of {steps[0]:.4f} rad from each to the next"


def _fail(message: str):
    raise ExerciseError(message, ("wrong_job",))


def _returned(value, what: str):
    """A piece's result, refused in words when it is not a number or a tensor (a missing `return`)."""
    if value is None:
        raise ExerciseError(f"your function returned None: it must return {what} (is a `return` missing?)",
                            ("returned_none",))
    try:
        return torch.as_tensor(value, dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError):
        raise ExerciseError(f"your function returned a {type(value).__name__}: it must return {what}",
                            ("wrong_type",)) from None


def _scores(b_q: torch.Tensor, n: HandSet, offsets) -> torch.Tensor:
    """A byte key's score against the query, for each relative id Δ (key's id − query's id)."""
    m = 30  # any query id: only Δ matters
    q = _rotate(b_q, m, n)
    k = math.sqrt(n.S) * torch.tensor([1.0, 0.0, 0.0, 0.0], dtype=torch.float64)
    return torch.stack([q @ _rotate(k, m + d, n) for d in offsets])


def _rotate(x: torch.Tensor, position: int, n: HandSet) -> torch.Tensor:
    """RoPE on one (4,) vector: pair 1 by position·ω, pair 2 by position·slow."""
    out = x.clone()
    for pair, freq in ((0, n.omega), (1, n.slow)):
        a, b = x[2 * pair], x[2 * pair + 1]
        c, s_ = math.cos(position * freq), math.sin(position * freq)
        out[2 * pair], out[2 * pair + 1] = a * c - b * s_, a * s_ + b * c
    return out


def judge_query(b_q) -> str:
    """query(S, ω) → (4,): a byte key at relative id Δ scores S·cos(ω(Δ − 1)), highest at Δ = +1,
    and pair 2 reads the end-of-output channel as (√S, 0)."""
    n = HandSet()
    b_q = _returned(b_q, "the (4,) query")
    if b_q.shape != (4,):
        return _fail(f"your query has shape {tuple(b_q.shape)}; it is one vector of head_dim 4")
    offsets = list(range(-n.longest, n.longest + 1))
    scores = _scores(b_q, n, offsets)
    peak = offsets[int(scores.argmax())]
    if peak != 1:
        turn = "turn it one step of ω further" if peak < 1 else "it turns too far"
        where = "0" if peak == 0 else f"{peak:+d}"
        return _fail(f"your query peaks at relative id {where}, not +1: the output byte with id i "
                     f"must read the input byte with id i + 1 ({turn}: pair 1 is √S·(cos ω, sin ω))")
    if abs(float(scores.max()) - n.S) > 1e-6 * n.S:
        return _fail(f"the source byte scores {float(scores.max()):.4g}, not S = {n.S:g}: pair 1 is "
                     "√S·(cos ω, sin ω), so that √S·√S = S (the key brings the other √S)")
    tab = b_q[2:] @ torch.tensor([1.0, 0.0], dtype=torch.float64)
    if abs(float(tab) - math.sqrt(n.S)) > 1e-6 * math.sqrt(n.S) or abs(float(b_q[3])) > 1e-9:
        return _fail("pair 2 must be √S·(1, 0): TAB's key is (B/√S, 0) on that pair, and the product "
                     "must be B whatever the position (its frequency is nearly 0)")
    return (f"a byte key scores S = {n.S:,.0f} at relative id +1 and "
            f"{float(scores[offsets.index(0)]):,.0f} at 0 and +2; TAB's channel reads √S")


def judge_tab_score(B) -> str:
    """tab_score(S, ω) → B: below the source byte's S, above every other byte's S·cos ω, with room
    on both sides (the softmax must pick one clearly)."""
    n = HandSet()
    B, S, neighbour = float(_returned(B, "the number B")), n.S, n.S * math.cos(n.omega)
    gap = S - neighbour
    if B >= S:
        return _fail(f"B = {B:,.1f} is at least the source byte's score S = {S:,.0f}: TAB would win "
                     "while a byte is still left to shift, and the model would stop at once")
    if B <= neighbour:
        return _fail(f"B = {B:,.1f} is at most S·cos ω = {neighbour:,.1f}, a neighbour's score: once "
                     "every byte is written a neighbour outscores TAB, and the model never writes EOS")
    if min(S - B, B - neighbour) < 0.25 * gap:
        return _fail(f"B = {B:,.1f} sits too close to one side (S = {S:,.0f}, S·cos ω = "
                     f"{neighbour:,.1f}): the softmax then gives the loser real weight; take the middle")
    return f"B = {B:,.1f}, between S·cos ω = {neighbour:,.1f} and S = {S:,.0f}"


def judge_value_rotation(W) -> str:
    """value_rotation(k) → W_V (4, 4): byte b's code becomes b + 1's, T stays."""
    n = HandSet()
    W = _returned(W, "W_V, a (4, 4) tensor")
    if W.shape != (4, 4):
        return _fail(f"your W_V has shape {tuple(W.shape)}; it maps a (4,) code to a (4,) code")
    E = byte_circle(n)
    codes = E[list(PRINTABLE)]
    lands = ((codes @ W.T) @ codes.T).argmax(-1) + 32  # the printable byte each value is nearest
    wrong = [b for b in PRINTABLE if int(lands[b - 32]) != _successor(b)]
    if wrong:
        b = ord("a") if ord("a") in wrong else wrong[0]
        got = int(lands[b - 32])
        shift = (got - b) % 95
        why = {0: "it leaves the byte where it is: turn by one step, k·2π/95",
               94: "it turns the wrong way: the step is +k·2π/95",
               2: "two steps: the turn is k·2π/95, not 2k·2π/95"}.get(
            shift, "the turn from one byte to the next is k·2π/95 in the plane (F1, F2)")
        return _fail(f"your value path maps {_name(b)} to {_name(got)}, not {_name(_successor(b))} "
                     f"({len(wrong)} of 95 bytes land wrong): {why}")
    if not torch.allclose(W @ T, T, atol=1e-9):
        return _fail("your W_V moves T: TAB's value must stay T, which the head reads as EOS "
                     "(write W_V = A·diag(1, R)·Aᵀ with A = [T, F1, F2])")
    return "every printable byte's code becomes its successor's, T stays"
