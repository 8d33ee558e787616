"""The model's hyper-parameters in one place.

`Config()` with no arguments is the seed model of the course: 256 byte tokens, d_model 4, two heads
of dimension 2, two post-norm layers, FFN 4→8→4, RoPE on Q and K, causal attention, 2,648
parameters. Its top level holds the sizes and the block's layout; the variants a notebook or a
study switches on sit in three groups, each checking its own values: `Positions` (how a token's
place reaches attention), `Ablations` (parts switched off to measure what they buy) and
`ModernBlock` (the LLaMA-era switches).

Each group's field is also a keyword of `Config` itself: `Config(causal=False)` is
`Config(ablations=Ablations(causal=False))`, so every call and saved dict written before the groups
still builds the same model. `to_dict()` and the repr write that flat form, each option that
differs from its default included.
"""
from __future__ import annotations

import math
from dataclasses import MISSING, asdict, dataclass, field, fields, replace

NORM_POSITIONS = ("post", "pre")
NORMS = ("layer", "rms")
ACTIVATIONS = ("relu", "gelu", "silu", "relu2")  # relu2: ReLU(u)² (So et al. 2021, Primer)
POSITIONALS = ("rope", "sinusoidal", "none")
POSITION_IDS = ("sequence", "coupled")


def seed_dropout(d_model: int) -> float:
    """The seed's rule: dropout = min(0.1, 0.5 · d_model / 256).

    Tiny models keep almost all information (d_model 4 → 0.0078); grown models get more
    regularisation, up to 0.1 from d_model 52 on.
    """
    return min(0.1, 0.5 * d_model / 256)


def check(ok: bool, what: str):
    if not ok:
        raise ValueError(f"Config: {what}")


@dataclass(frozen=True)
class Positions:
    """How a token's position reaches attention: RoPE (the seed), an added sinusoidal table, or none."""

    positional: str = "rope"
    rope_base: float = 10000.0
    rope_on_v: bool = False  # rotate the values too, not only queries and keys
    # RoPE angles are position · θ_i. rope_scale multiplies every θ_i (positions × s); rope_freqs
    # gives the θ_i outright, in rad/position: head_dim/2 numbers (every head the same) or
    # n_heads·head_dim/2 (head by head), instead of base^(−2i/head_dim)·rope_scale
    rope_scale: float = 1.0
    rope_freqs: tuple[float, ...] | None = None
    # sequence: position t is t. coupled: input byte j and output byte j share an id (rope.position_ids)
    position_ids: str = "sequence"
    # training only (model.training, no KV cache): each row's coupled ids, all but TAB's 0, are
    # shifted by a random integer in [0, position_offset], drawn per row at every forward pass
    # (Ruoss et al. 2023, randomised positions), so a model trained on inputs of 1-12 bytes sees
    # the ids and TAB distances of longer ones. 0 (the default) changes nothing
    position_offset: int = 0

    @property
    def uses_rope(self) -> bool:
        """Whether any head rotates: RoPE on Q and K, or on V."""
        return self.positional == "rope" or self.rope_on_v

    def __post_init__(self):
        check(self.positional in POSITIONALS,
              f"positional must be one of {POSITIONALS}, got {self.positional!r}")
        check(self.rope_base > 1, f"rope_base must be > 1, got {self.rope_base}")
        check(math.isfinite(self.rope_scale) and self.rope_scale > 0,
              f"rope_scale must be a positive number, got {self.rope_scale}")
        if self.rope_freqs is not None:
            try:
                freqs = tuple(float(f) for f in self.rope_freqs)
            except (TypeError, ValueError):
                freqs = None
            check(freqs is not None and all(math.isfinite(f) and f > 0 for f in freqs),
                  f"rope_freqs must be positive numbers (rad/position), got {self.rope_freqs!r}")
            check(self.rope_scale == 1.0, "give rope_freqs or rope_scale, not both: "
                  "rope_freqs are the frequencies themselves")
            object.__setattr__(self, "rope_freqs", freqs)
        check(self.uses_rope or (self.rope_freqs is None and self.rope_scale == 1.0),
              "rope_freqs and rope_scale set RoPE's frequencies; this config has no RoPE "
              f"(positional={self.positional!r}, rope_on_v=False)")
        check(self.position_ids in POSITION_IDS,
              f"position_ids must be one of {POSITION_IDS}, got {self.position_ids!r}")
        check(self.position_ids == "sequence" or self.positional != "none" or self.rope_on_v,
              "position_ids='coupled' numbers the positions that RoPE or the sinusoidal table "
              "encode; positional='none' uses no positions")
        check(isinstance(self.position_offset, int) and self.position_offset >= 0,
              f"position_offset must be an integer >= 0, got {self.position_offset!r}")
        check(self.position_offset == 0 or (self.position_ids == "coupled"
                                            and self.positional == "rope"),
              "position_offset shifts coupled position ids under RoPE: it needs "
              "position_ids='coupled' and positional='rope'")


@dataclass(frozen=True)
class Ablations:
    """Parts of the seed that can be switched off, to measure what each buys (bench/ablation.py)."""

    causal: bool = True  # False reproduces seed 002's bug: each position sees the byte it must predict
    residual: bool = True  # False: h = f(h) instead of h + f(h), in either layout
    ffn: bool = True  # False: blocks of attention only, no FFN sub-layer and no norm2

    def __post_init__(self):
        for name in ("causal", "residual", "ffn"):
            check(isinstance(getattr(self, name), bool),
                  f"{name} must be True or False, got {getattr(self, name)!r}")


@dataclass(frozen=True)
class ModernBlock:
    """The LLaMA-era block's switches, each on its own, all off by default (`Config.modern()` sets
    the LLaMA ones together)."""

    bias: bool = True  # False: no biases in any linear layer (Q/K/V, W_O, the FFN's, the head's)
    ffn_gate: bool = False  # a gated FFN, down(act(up x) ⊙ gate x) (SwiGLU with activation="silu")
    qk_norm: bool = False  # an RMSNorm (gain per head dimension) on each head's q and k before RoPE
    logit_softcap: float | None = None  # c: logits = c·tanh(logits/c), none past ±c (Gemma 2)
    zero_init: bool = False  # W_O and the FFN's down start at 0: every block starts as the identity

    def __post_init__(self):
        for name in ("bias", "ffn_gate", "qk_norm", "zero_init"):
            check(isinstance(getattr(self, name), bool),
                  f"{name} must be True or False, got {getattr(self, name)!r}")
        check(self.logit_softcap is None or (isinstance(self.logit_softcap, (int, float))
                                              and math.isfinite(self.logit_softcap)
                                              and self.logit_softcap > 0),
              f"logit_softcap must be a positive number or None, got {self.logit_softcap!r}")


GROUPS = {"positions": Positions, "ablations": Ablations, "modern_block": ModernBlock}
# which group holds each variant, by the variant's own name: Config's flat keywords
GROUP_OF = {f.name: group for group, cls in GROUPS.items() for f in fields(cls)}
# what to_dict and the repr leave out at these values (and only there): options added after configs
# were saved, so every config saved before them reads and prints as it did, while a config that
# sets one (bias=False, qk_norm=True, …) prints it
LEFT_OUT_AT = {"position_offset": 0, **asdict(ModernBlock())}


@dataclass(frozen=True, init=False)
class Config:
    """The sizes and the block's layout, then the variants by group; `Config()` is the seed model.
    The model reads a variant through its group: `config.positions.rope_base`."""

    # the fields in this order, each group where its variants sat when they were flat: to_dict and
    # the repr list the flat keywords in the order every saved config has them
    vocab_size: int = 256
    d_model: int = 4
    n_heads: int = 2
    head_dim: int | None = None  # None: d_model // n_heads, resolved on creation
    n_layers: int = 2
    d_ff: int = 8
    activation: str = "relu"
    norm: str = "layer"
    norm_position: str = "post"  # post: h = LN(h + f(h)) (the seed); pre: h = h + f(LN(h))
    norm_eps: float = 1e-5
    positions: Positions = field(default_factory=Positions)
    tie_embeddings: bool = False  # True: the head's weight is the embedding table (its 256 biases stay)
    ablations: Ablations = field(default_factory=Ablations)
    dropout: float | None = None  # None: seed_dropout(d_model)
    max_len: int = 128
    modern_block: ModernBlock = field(default_factory=ModernBlock)

    def __init__(self, **given):
        """Config(field=…, group=Group(…), variant=…): the top-level fields and the groups by name,
        and any group's variant by its own name, which then overrides that group's value."""
        variants = {name: given.pop(name) for name in list(given) if name in GROUP_OF}
        unknown = sorted(set(given) - {f.name for f in fields(self)})
        if unknown:
            raise TypeError(f"Config got unknown fields {unknown}")
        for f in fields(self):
            value = given.get(f.name, f.default if f.default_factory is MISSING else MISSING)
            if f.name in GROUPS:
                group = GROUPS[f.name]
                if value is not MISSING and not isinstance(value, group):
                    raise TypeError(f"Config: {f.name} must be a {group.__name__}, got {value!r}")
                mine = {k: v for k, v in variants.items() if GROUP_OF[k] == f.name}
                value = group(**mine) if value is MISSING else replace(value, **mine)
            object.__setattr__(self, f.name, value)
        self.__post_init__()

    def __post_init__(self):
        for name in ("vocab_size", "d_model", "n_heads", "n_layers", "d_ff", "max_len"):
            check(isinstance(getattr(self, name), int) and getattr(self, name) > 0,
                  f"{name} must be a positive integer, got {getattr(self, name)!r}")
        check(self.norm_position in NORM_POSITIONS,
              f"norm_position must be one of {NORM_POSITIONS}, got {self.norm_position!r}")
        check(self.norm in NORMS, f"norm must be one of {NORMS}, got {self.norm!r}")
        check(self.activation in ACTIVATIONS,
              f"activation must be one of {ACTIVATIONS}, got {self.activation!r}")
        if self.head_dim is None:
            check(self.d_model % self.n_heads == 0,
                  f"d_model {self.d_model} is not divisible by n_heads {self.n_heads}; "
                  "give head_dim explicitly")
            object.__setattr__(self, "head_dim", self.d_model // self.n_heads)
        check(isinstance(self.head_dim, int) and self.head_dim > 0,
              f"head_dim must be a positive integer, got {self.head_dim!r}")
        check(self.dropout is None or 0 <= self.dropout < 1,
              f"dropout must be in [0, 1), got {self.dropout}")
        # what a group asks of the sizes, and of another group
        p = self.positions
        if p.uses_rope:
            check(self.head_dim % 2 == 0,
                  f"RoPE rotates pairs of dimensions: head_dim must be even, got {self.head_dim}")
        if p.positional == "sinusoidal":
            check(self.d_model % 2 == 0, "sinusoidal positions need an even d_model")
        if p.rope_freqs is not None:
            pairs = self.head_dim // 2
            check(len(p.rope_freqs) in (pairs, self.n_heads * pairs),
                  f"rope_freqs needs head_dim/2 = {pairs} numbers (every head the same) or "
                  f"n_heads·head_dim/2 = {self.n_heads * pairs} (head by head), "
                  f"got {len(p.rope_freqs)}")
        check(not self.modern_block.ffn_gate or self.ablations.ffn,
              "ffn_gate gates the FFN; this config has none (ffn=False)")

    @property
    def attn_dim(self) -> int:
        """Width of the concatenated heads: n_heads · head_dim (equals d_model unless grown)."""
        return self.n_heads * self.head_dim

    @property
    def dropout_p(self) -> float:
        """The resolved dropout probability."""
        return seed_dropout(self.d_model) if self.dropout is None else self.dropout

    def __getattr__(self, name):  # only reached when no field or method has the name
        if name in GROUP_OF:
            raise AttributeError(f"Config has no top-level {name!r}: it is "
                                 f"config.{GROUP_OF[name]}.{name}")
        raise AttributeError(f"'Config' object has no attribute {name!r}")

    def replace(self, **changes) -> "Config":
        """A copy with `changes` (flat variants too); head_dim is derived anew when d_model or
        n_heads change, unless it is given too."""
        if ("d_model" in changes or "n_heads" in changes) and "head_dim" not in changes:
            changes["head_dim"] = None
        return replace(self, **changes)

    @classmethod
    def modern(cls, **changes) -> "Config":
        """The modern (LLaMA-style) block: RMSNorm pre-norm, no biases, a SwiGLU FFN and QK-norm
        (MODERN); `changes` set the sizes and anything else."""
        return cls(**{**MODERN, **changes})

    def flat(self) -> dict:
        """Every field and variant by its own name, the groups opened in place."""
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out.update(asdict(value) if f.name in GROUPS else {f.name: value})
        return out

    def to_dict(self) -> dict:
        """The flat form saved in checkpoints and stored results; options at the value they had
        before they existed are left out (LEFT_OUT_AT), so older readers read it too."""
        return {k: v for k, v in self.flat().items()
                if not (k in LEFT_OUT_AT and v == LEFT_OUT_AT[k])}

    @classmethod
    def from_dict(cls, d: dict) -> "Config":
        """A config from to_dict's flat form, or a grouped one ({"positions": {...}, …})."""
        known = {f.name for f in fields(cls)} | set(GROUP_OF)
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"Config: unknown fields {unknown}")
        d = dict(d)
        for name, group in GROUPS.items():
            if isinstance(d.get(name), dict):
                bad = sorted(set(d[name]) - {f.name for f in fields(group)})
                if bad:
                    raise ValueError(f"Config: unknown fields {bad} in {name}")
                d[name] = group(**d[name])
        return cls(**d)

    def __repr__(self) -> str:
        """The call that rebuilds this config, in to_dict's flat form: two configs that differ print
        differently, and one without the later options prints as it always did."""
        return f"Config({', '.join(f'{k}={v!r}' for k, v in self.to_dict().items())})"


# The "modern" preset (Config.modern, `train --preset modern`): the LLaMA block with QK-norm.
MODERN = {"norm": "rms", "norm_position": "pre", "bias": False, "ffn_gate": True,
          "activation": "silu", "qk_norm": True}
PRESETS = {"modern": MODERN}
