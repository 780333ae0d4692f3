"""Compile options: the field sizes every family takes, and one option class per family.

`bf.compile(method, field=..., **options)` validates its keyword arguments against the option
class of the declaration's family (a frozen dataclass in the family's compiler module): an
option that does not apply gets one `DeclarationError` naming the option, the family and the
options it does take, and a value of another type than the field's annotation one naming the
option, the value and the type (`conforms`).
"""

from __future__ import annotations

import dataclasses
import numbers
import re
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

import numpy as np
from torch import nn

from ..errors import DeclarationError
from ..methods import Named
from ..methods.base import check_count
from .program import require

FieldSpec = str | nn.Module
Options = TypeVar("Options", bound="FieldSizes")
SIZES = ("d_model", "n_heads", "d_ffn", "dropout", "activation")
FIELD_OPTIONS = (*SIZES, "stage")  # what every family passes to `make_field`
# The most iterations a block runs at every forward (fixed-point sweeps of an implicit tableau,
# Sinkhorn's): 20 to 100 converge in float32; a count far beyond is a typo that would hang.
MAX_ITERATIONS = 1000


@dataclass(frozen=True)
class FieldSizes:
    """The sizes every named field is built with; every family's options start with them.

    - `d_model`, `n_heads`, `d_ffn`: widths, integers >= 1 (None: read from a module field,
      or not needed).
    - `dropout`: the named fields' dropout probability, in [0, 1).
    - `activation`: the feed-forward's, `"relu"` or `"gelu"`.
    - `stage`: what a named field returns at each stage, `"branch"` F(y) (default) or
      `"layer"` y + F(y) (the ODE Transformer's released code; `nn.fields.STAGES`).
    """

    d_model: int | None = None
    n_heads: int | None = None
    d_ffn: int | None = None
    dropout: float = 0.0
    activation: str = "relu"
    stage: str = "branch"

    spans_layers: ClassVar[bool] = False  # compiles to a stack (`bf.compile_stack`), not a block

    def __post_init__(self) -> None:
        for key in ("d_model", "n_heads", "d_ffn"):
            check_count(getattr(self, key), key, None)
        check_dropout(self.dropout, "dropout", None)

    @property
    def sizes(self) -> dict[str, Any]:
        """The keyword arguments of `make_field`: the sizes and the `stage`."""
        return {key: getattr(self, key) for key in FIELD_OPTIONS}

    @classmethod
    def names(cls) -> list[str]:
        """The options of this family, the field's options (sizes and stage) last."""
        own = [f.name for f in dataclasses.fields(cls) if f.name not in FIELD_OPTIONS]
        return own + list(FIELD_OPTIONS)

    @classmethod
    def parse(cls: type[Options], method: Named, given: Mapping[str, Any]) -> Options:
        """The options of one `bf.compile` call, each checked to apply to the family.

        **Arguments:**

        - `method`: the declaration, for the error message.
        - `given`: the keyword arguments of the call.
        """
        family = method.family
        allowed = cls.names()
        for key, value in given.items():
            if key not in allowed:
                own = [name for name in allowed if name not in FIELD_OPTIONS]
                raise DeclarationError(
                    f"{key} does not apply to a {family} declaration",
                    key=key,
                    value=type(value).__name__ if isinstance(value, nn.Module) else value,
                    valid=f"a {family} declaration takes {', '.join(own)} and the field's "
                    "options " + ", ".join(FIELD_OPTIONS),
                )
        hints = typing.get_type_hints(cls)
        for key, value in given.items():
            if not conforms(value, hints[key]):
                raise DeclarationError(
                    f"{key} must be {described(hints[key])}",
                    key=key,
                    value=value,
                    valid=option_help(cls, key),
                )
        return cls(**given)

    @classmethod
    def example(cls, method: Any, field: Any, layers: int) -> dict[str, Any]:
        """The field arguments `butcherflow show` and the gallery compile `method` with:
        `field` (a name) or `"san+ffn"`, for every one of `layers` layers of a stack."""
        if cls.spans_layers:
            return {"fields": [field or "san+ffn"] * layers}
        return {"field": field or "san+ffn"}


def check_dropout(value: Any, key: str, source: str | None) -> float:
    """A dropout probability: a number in [0, 1)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= float(value) < 1:
        raise DeclarationError("dropout must be in [0, 1)", key=key, value=value, source=source)
    return float(value)


def conforms(value: Any, hint: Any) -> bool:
    """Whether `value` is of the annotated type `hint` (unions, None, bool, int and float as
    numbers but never a bool, str, classes, `Mapping[K, V]` and `Sequence[T]` item by item)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(conforms(value, arg) for arg in args)
    if hint is Any:
        return True
    if hint is bool or isinstance(value, (bool, np.bool_)):
        return hint is bool and isinstance(value, (bool, np.bool_))
    if hint in (int, float):
        return isinstance(value, numbers.Integral if hint is int else numbers.Real)
    if origin is Mapping:
        return isinstance(value, Mapping) and all(
            conforms(k, args[0]) and conforms(v, args[1]) for k, v in value.items()
        )
    if origin is Sequence:
        return not isinstance(value, (str, bytes)) and (
            isinstance(value, Sequence) and all(conforms(x, args[0]) for x in value)
        )
    return isinstance(value, hint)


def described(hint: Any) -> str:
    """The annotated type `hint` in words, for an error: "an integer, or None"."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        text = " or ".join(described(arg) for arg in args if arg is not type(None))
        return f"{text}, or None" if type(None) in args else text
    if origin is Mapping:
        return f"a mapping from {described(args[0])} to {described(args[1])}"
    if origin is Sequence:
        return f"a list, each item {described(args[0])}"
    words = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}
    return words.get(hint) or ("an nn.Module" if hint is nn.Module else f"a {hint.__name__}")


def option_help(cls: type, key: str) -> str | None:
    """What an option class's docstring (or a base class's) says of `key`, from its bullet."""
    names = r"(?:`\w+`, )*" + f"`{key}`" + r"(?:, `\w+`)*"
    bullet = re.compile(rf"^\s*- {names}: (.*?)(?=^\s*- `|^\s*$|\Z)", re.M | re.S)
    for klass in cls.__mro__:
        found = bullet.search(klass.__doc__ or "")
        if found:
            return f"{key}: " + " ".join(found.group(1).split())
    return None


def require_fields_list(fields: Any) -> Sequence[FieldSpec]:
    """A stack's `fields`: one spec per layer, at least one."""
    if isinstance(fields, (str, bytes)) or not isinstance(fields, Sequence):
        raise DeclarationError(
            "fields must be a list with one field per layer",
            key="fields",
            value=fields,
            valid="e.g. fields=['san+ffn'] * 6",
        )
    require(
        len(fields) >= 1,
        "a stack needs at least one layer",
        key="fields",
        value=list(fields),
        valid="a list of L >= 1 fields",
    )
    return fields


def require_operator_fields(
    family: str, name: str, operators: Sequence[str], fields: Any
) -> Mapping[str, FieldSpec]:
    """`fields` of a declaration with named operators (a splitting, an additive method): a
    mapping with exactly one field per operator."""
    valid = f"one field per operator: {list(operators)}"
    require(
        fields is not None,
        f"a {family} declaration needs a field per operator: pass fields={{...}}",
        key="fields",
        value=fields,
        valid=valid,
    )
    require(
        isinstance(fields, Mapping),
        "fields must map operators to fields",
        key="fields",
        value=fields,
        valid=valid,
    )
    for op in operators:
        require(
            op in fields,
            f"no field for operator '{op}'",
            key=f"fields.{op}",
            value=None,
            valid=valid,
        )
    for op in fields:
        require(
            op in operators,
            f"'{name}' has no operator '{op}'",
            key=f"fields.{op}",
            value=fields[op],
            valid=valid,
        )
    return fields
