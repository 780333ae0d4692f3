"""Fields: the right-hand sides F(y) that a compiled integrator evaluates at every stage.

A named field is the residual-free branch of a pre-norm Transformer layer (the ODE Transformer's
F(y) = G(LN(y))). A composite such as `"san+ffn"` is L(y) − y for the pre-norm layer L that runs
its parts in order, each on the running sum `y + a₁ + ... + aₖ₋₁`; it is computed as the sum
`a₁ + ... + aₙ` of the branches, never as a difference, so nothing cancels. Hence "euler" with
`"san+ffn"` is exactly a pre-norm encoder layer and with `"san+ca+ffn"` a pre-norm decoder layer.

A named field's `stage` says what each stage of a block stores: `"branch"` (the default), F(y),
as the papers write their blocks; or `"layer"`, the whole layer L(y) = y + F(y), as the ODE
Transformer's released code stores its stages (the gallery's "What the reference code
computes"): Heun on `"layer"` is that code's RK2 block y + ½(L(y) + L(y + L(y))).
"""

from __future__ import annotations

import abc
from typing import final

from torch import Tensor, nn

from ..errors import DeclarationError
from .attention import MultiheadAttention
from .context import Context
from .feedforward import FeedForward

FIELD_NAMES = ("san", "ffn", "ca", "san+ffn", "san+ca", "san+ca+ffn")
STAGES = ("branch", "layer")  # what a named field returns: F(y), or the whole layer y + F(y)


class Field(nn.Module, abc.ABC):
    """Abstract base of fields: `forward(y, ctx, slot)` returns dy, the same shape as `y`.

    **Attributes:**

    - `name`: the field's name (`"san+ffn"`, or the class name of a wrapped module).
    - `needs_memory`: it cross-attends to `ctx.memory` (decoders).
    - `has_self_attention`: it keeps a self-attention cache per `slot` when decoding.
    """

    name: str
    needs_memory: bool
    has_self_attention: bool

    @abc.abstractmethod
    def forward(self, y: Tensor, ctx: Context, slot: int) -> Tensor:
        """Evaluate the field.

        **Arguments:**

        - `y`: `(batch, length, d_model)`; during incremental decoding, the new tokens only.
        - `ctx`: masks, memory, cache and position biases of this forward.
        - `slot`: which call of the field inside the block (one per stage): distinct calls of
          the same field in one block must use distinct slots.

        **Returns:** dy, `(batch, length, d_model)`.
        """


class Sublayer(nn.Module, abc.ABC):
    """One branch `dropout(G(LN(x)))` of a pre-norm layer; `G` is given by `branch`."""

    def __init__(self, d_model: int, dropout: float) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor, ctx: Context, slot: int) -> Tensor:
        """**Arguments:** `x`: `(batch, length, d_model)`. **Returns:** the same shape."""
        return self.dropout(self.branch(self.norm(x), ctx, slot))

    @abc.abstractmethod
    def branch(self, h: Tensor, ctx: Context, slot: int) -> Tensor:
        """G applied to the normalised input `h`: `(batch, length, d_model)`."""


@final
class SelfAttentionSublayer(Sublayer):
    """`dropout(SAN(LN(x)))`, causal when `ctx.causal`."""

    def __init__(self, d_model: int, n_heads: int, dropout: float) -> None:
        super().__init__(d_model, dropout)
        self.attention = MultiheadAttention(d_model, n_heads, dropout)

    def branch(self, h: Tensor, ctx: Context, slot: int) -> Tensor:
        return self.attention(h, h, ctx, slot, self_attention=True)


@final
class CrossAttentionSublayer(Sublayer):
    """`dropout(CA(LN(x), memory))`: attention over the encoder output `ctx.memory`."""

    def __init__(self, d_model: int, n_heads: int, dropout: float) -> None:
        super().__init__(d_model, dropout)
        self.attention = MultiheadAttention(d_model, n_heads, dropout)

    def branch(self, h: Tensor, ctx: Context, slot: int) -> Tensor:
        if ctx.memory is None:
            raise ValueError("cross-attention ('ca') needs ctx.memory, the encoder output")
        return self.attention(h, ctx.memory, ctx, slot, self_attention=False)


@final
class FeedForwardSublayer(Sublayer):
    """`dropout(FFN(LN(x)))`."""

    def __init__(self, d_model: int, d_ffn: int, dropout: float, activation: str) -> None:
        super().__init__(d_model, dropout)
        self.ffn = FeedForward(d_model, d_ffn, dropout, activation)

    def branch(self, h: Tensor, ctx: Context, slot: int) -> Tensor:
        return self.ffn(h)


@final
class PreNormField(Field):
    """A named field: the residual-free pre-norm layer built from its parts, in order.

    F(y) = a₁ + ... + aₙ with aₖ = partₖ(y + a₁ + ... + aₖ₋₁); `"san+ffn"` has parts `san`,
    `ffn`. Build it with `make_field`.

    **Arguments:**

    - `name`: one of `FIELD_NAMES`; the parts are its `+`-separated words.
    - `parts`: the sublayers, keyed by those words (`"san"`, `"ca"`, `"ffn"`).
    - `stage`: one of `STAGES`: return F(y) (`"branch"`) or the layer's output y + F(y)
      (`"layer"`, summed in the layer's own order (y + a₁) + a₂ + ...).
    """

    def __init__(self, name: str, parts: dict[str, Sublayer], stage: str = "branch") -> None:
        super().__init__()
        self.name = name
        self.parts = nn.ModuleDict(parts)
        self.stage = stage
        self.needs_memory = "ca" in parts
        self.has_self_attention = "san" in parts

    def forward(self, y: Tensor, ctx: Context, slot: int) -> Tensor:
        total: Tensor | None = None
        x = y
        last = len(self.parts) - 1 if self.stage == "branch" else len(self.parts)
        for i, part in enumerate(self.parts.values()):
            a = part(x, ctx, slot)
            total = a if total is None else total + a
            if i < last:
                x = x + a  # the layer's running state, summed in the layer's own order
        assert total is not None
        return x if self.stage == "layer" else total

    def extra_repr(self) -> str:
        return f"name={self.name!r}" + (f", stage={self.stage!r}" if self.stage != "branch" else "")


@final
class ModuleField(Field):
    """Any module mapping y to dy, `(batch, length, d_model)` to the same shape, as a field.

    It ignores `ctx` and `slot` (no masks, no memory, nothing to cache).

    **Arguments:**

    - `module`: the module; called as `module(y)`.
    """

    def __init__(self, module: nn.Module) -> None:
        super().__init__()
        self.module = module
        self.name = type(module).__name__
        self.needs_memory = False
        self.has_self_attention = False

    def forward(self, y: Tensor, ctx: Context, slot: int) -> Tensor:
        dy = self.module(y)
        if not isinstance(dy, Tensor) or dy.shape != y.shape:
            shape = getattr(dy, "shape", type(dy).__name__)
            raise ValueError(
                f"field module {self.name} returned {shape} for an input of shape "
                f"{tuple(y.shape)}; a field must map y to dy of the same shape"
            )
        return dy


def check_stage(stage: object, key: str = "stage", source: str | None = None) -> None:
    """Refuse a `stage` outside `STAGES` with one line naming the key, the value and what is
    valid.

    **Arguments:**

    - `stage`: the value to check (`"branch"` or `"layer"` pass).
    - `key`: the key it was given under, for the message.
    - `source`: the file it came from, for the message (None: not from a file).

    **Returns:** nothing; raises `DeclarationError` for any other value.
    """
    if stage not in STAGES:
        raise DeclarationError(
            "unknown stage",
            key=key,
            value=stage,
            valid="'branch' (each stage stores F(y), the default) or 'layer' (the whole layer "
            "y + F(y), as the ODE Transformer's released code)",
            source=source,
        )


def make_field(
    name: str | nn.Module,
    *,
    d_model: int | None = None,
    n_heads: int | None = None,
    d_ffn: int | None = None,
    dropout: float = 0.0,
    activation: str = "relu",
    stage: str = "branch",
) -> Field:
    """Build a field from its name (a fresh module with its own parameters) or wrap a module.

    **Arguments:**

    - `name`: one of `FIELD_NAMES`, a `Field` (returned as is) or any `nn.Module` y -> dy
      (wrapped in a `ModuleField`).
    - `d_model`: model width (named fields).
    - `n_heads`: attention heads (fields with `san` or `ca`).
    - `d_ffn`: feed-forward hidden width (fields with `ffn`).
    - `dropout`: on each branch output, the attention weights and the FFN activation.
    - `activation`: `"relu"` or `"gelu"`.
    - `stage`: `"branch"` (F(y)) or `"layer"` (y + F(y), named fields only); see `STAGES`.

    **Returns:** a `Field`.
    """
    check_stage(stage)
    if stage != "branch" and not isinstance(name, str):
        raise DeclarationError(
            "stage = 'layer' applies to a named field only",
            key="stage",
            value=stage,
            valid="a named field (e.g. 'san+ffn'), or add y inside your module",
        )
    if isinstance(name, Field):
        return name
    if isinstance(name, nn.Module):
        return ModuleField(name)
    if name not in FIELD_NAMES:
        raise DeclarationError(
            "unknown field",
            key="field",
            value=name,
            valid=f"a field is one of {', '.join(FIELD_NAMES)}, or an nn.Module mapping y to dy",
        )
    words = name.split("+")
    sizes = {"d_model": d_model}
    if "san" in words or "ca" in words:
        sizes["n_heads"] = n_heads
    if "ffn" in words:
        sizes["d_ffn"] = d_ffn
    for key, size in sizes.items():
        if size is None:
            raise DeclarationError(f"field {name!r} needs {key}", key=key)
    assert d_model is not None
    parts: dict[str, Sublayer] = {}
    for word in words:
        if word == "ffn":
            assert d_ffn is not None
            parts[word] = FeedForwardSublayer(d_model, d_ffn, dropout, activation)
        else:
            assert n_heads is not None
            kind = SelfAttentionSublayer if word == "san" else CrossAttentionSublayer
            parts[word] = kind(d_model, n_heads, dropout)
    return PreNormField(name, parts, stage)
