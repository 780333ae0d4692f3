"""A layer's call bound by its forward's signature, and each field member's arguments bound to it.

A rewired layer calls its field members itself, so every argument a member received from the
layer when its call was read (an attention mask, position embeddings, a KV cache) must come
from the same parameter of each later call of the layer. `inspect.signature(layer.forward)`
names every argument of a call, whether it came positionally or by keyword (GPT-2 passes its
cache positionally, Llama by keyword), so a member's argument is bound to a parameter name:

- an object (a tensor, a tuple of position embeddings, a cache) by identity with the value of
  a parameter (or an item of one) in the call read;
- a plain value (None, a bool, a number, a string) by the member's own name for it when the
  layer has a parameter of that name with the same value (`cache=None` follows `cache`);
- any other plain value is a constant; any other object was computed inside the layer, which
  a rewired layer cannot recompute: refused, naming it.

Caches: a parameter named as a cache (`CACHE_NAMES`) or holding a transformers `Cache`
(recognised by its class's name in the MRO, without importing transformers) is a cache; its
kind is `cache_kind`.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any, final

from torch import Tensor, nn

from ..errors import ExtractionError
from .probe import Call, Where, read

# Names under which a layer or its attention gets a KV cache (transformers, nanoGPT variants,
# Mamba's state): it grows with every call, so a field called twice per step with it breaks.
CACHE_NAMES = (
    "cache",
    "past_key_value",
    "past_key_values",
    "layer_past",
    "past",
    "kv_cache",
    "cache_params",
)
PLAIN = (type(None), bool, int, float, str)
# Where a member's argument comes from: ("param", name) or ("item", name, index) of the layer
# call, or ("const", value).
Source = tuple[Any, ...]


def is_cache_object(value: Any) -> bool:
    """A transformers `Cache` (any subclass), known by its class hierarchy's names."""
    return any(
        k.__name__ == "Cache" and k.__module__.startswith("transformers")
        for k in type(value).__mro__
    )


def cache_kind(value: Any) -> str | None:
    """None (no cache), `"Cache"` (a transformers cache object), `"legacy"` (a tuple or list of
    tensors or of tuples of tensors, the pre-Cache transformers format) or `"unknown"`."""
    if value is None:
        return None
    if is_cache_object(value):
        return "Cache"
    if isinstance(value, (tuple, list)) and all(
        isinstance(v, Tensor)
        or (isinstance(v, (tuple, list)) and all(isinstance(t, Tensor) for t in v))
        for v in value
    ):
        return "legacy"
    return "unknown"


def caches(named: Mapping[str, Any]) -> dict[str, Any]:
    """The non-empty caches of a bound call: parameter name -> value."""
    return {
        k: v for k, v in named.items() if v is not None and (k in CACHE_NAMES or is_cache_object(v))
    }


@final
class Signature:
    """The parameters of a module's forward, to name the arguments of its calls.

    **Arguments:** `module`: the layer; `who`: its name in messages.
    """

    def __init__(self, module: nn.Module, who: str) -> None:
        self.who = who
        try:
            self.signature: inspect.Signature | None = inspect.signature(module.forward)
        except (TypeError, ValueError):  # a builtin or C forward: positions only
            self.signature = None

    def named(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """Parameter name -> value for one call (`**kwargs` entries by their own names,
        `*args` entries as `*NAME[i]`); raises `ExtractionError` for a call the signature
        does not accept."""
        if self.signature is None:
            return {**{f"*[{i}]": a for i, a in enumerate(args)}, **kwargs}
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as error:
            raise ExtractionError(
                f"{self.who} is called with arguments its forward{self.signature} does not "
                f"take ({error}); valid: a call the layer's forward accepts"
            ) from None
        named: dict[str, Any] = {}
        for name, value in bound.arguments.items():
            kind = self.signature.parameters[name].kind
            if kind is inspect.Parameter.VAR_KEYWORD:
                named.update(value)
            elif kind is inspect.Parameter.VAR_POSITIONAL:
                named.update({f"*{name}[{i}]": v for i, v in enumerate(value)})
            else:
                named[name] = value
        return named


def _member_names(member: nn.Module, call: Call) -> dict[Any, str]:
    """Position or keyword of each of a member call's arguments -> the member's name for it."""
    names: dict[Any, str] = {k: k for k in call.kwargs}
    try:
        parameters = list(inspect.signature(member.forward).parameters.values())
    except (TypeError, ValueError):
        return names
    for i, p in enumerate(parameters[: len(call.args)]):
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names[i] = p.name
    return names


def locate(value: Any, name: str | None, named: Mapping[str, Any]) -> Source | None:
    """Where `value` (a member's argument the member calls `name`) came from in the layer call
    `named`, or None when it was computed inside the layer."""
    if isinstance(value, PLAIN):
        if name is not None and name in named and _same_plain(named[name], value):
            return ("param", name)
        return ("const", value)
    found = [k for k, v in named.items() if v is value]
    if found:
        return ("param", name if name in found else found[0])
    for key, given in named.items():
        if isinstance(given, (tuple, list)):
            for i, item in enumerate(given):
                if item is value and not isinstance(item, PLAIN):
                    return ("item", key, i)
    return None


def _same_plain(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


@final
class Binding:
    """A member's recorded call with each argument bound to the layer call it came from.

    **Arguments:**

    - `call`: the member's call as recorded (its stage value at `call.where`).
    - `member`: the member (its signature names positional arguments).
    - `named`: the layer call the member's call was recorded in, by parameter name.
    - `who`: the member's path, for messages.
    """

    def __init__(self, call: Call, member: nn.Module, named: Mapping[str, Any], who: str) -> None:
        self.where: Where = call.where
        stage = read(call.args, call.kwargs, call.where)
        names = _member_names(member, call)
        self.also: tuple[Where, ...] = tuple(
            [("arg", i) for i, a in enumerate(call.args) if a is stage and ("arg", i) != call.where]
            + [("kw", k) for k, v in call.kwargs.items() if v is stage and ("kw", k) != call.where]
        )
        skip = {call.where, *self.also}
        self.args: list[Source | None] = []
        for i, a in enumerate(call.args):
            self.args.append(None if ("arg", i) in skip else self._source(a, names, i, named, who))
        self.kwargs = {
            k: None if ("kw", k) in skip else self._source(v, names, k, named, who)
            for k, v in call.kwargs.items()
        }

    @staticmethod
    def _source(
        value: Any, names: dict[Any, str], key: Any, named: Mapping[str, Any], who: str
    ) -> Source:
        source = locate(value, names.get(key), named)
        if source is None:
            what = f"argument {key!r}" if isinstance(key, str) else f"positional argument {key}"
            raise ExtractionError(
                f"{who} receives {what} ({type(value).__name__}) computed inside the layer, not "
                "passed to it; a rewired layer passes its fields only the layer's own arguments "
                "(valid: a layer whose branches get their masks, positions and caches from the "
                "layer call)"
            )
        return source

    def reads(self) -> set[str]:
        """The layer parameters this member's call reads."""
        sources = [*self.args, *self.kwargs.values()]
        return {s[1] for s in sources if s is not None and s[0] != "const"}

    def call(self, named: Mapping[str, Any]) -> Call:
        """The member's call for the layer call `named` (its stage value left as None)."""
        args = tuple(None if s is None else _value(s, named) for s in self.args)
        kwargs = {k: None if s is None else _value(s, named) for k, s in self.kwargs.items()}
        return Call(args, kwargs, self.where, self.also)


def _value(source: Source, named: Mapping[str, Any]) -> Any:
    kind = source[0]
    if kind == "const":
        return source[1]
    value = named.get(source[1])
    if kind == "item":
        return None if value is None else value[source[2]]
    return value
