"""`found.rewire(method)`: another integrator on the same sub-modules, usable in place.

The rewired module holds the original module's children (the same objects, so the parameters
are shared and its state dict keys are the original's) and is called like the original: every
argument a field's members received from the layer call at extraction (an attention mask,
position embeddings, a cache) is bound to the same argument of each new call, matched by
identity (`bind`). The integrator itself is the declaration compiled with `bf.compile` on the
fields (a tableau or a splitting), or evaluated by `evaluate.evaluate_glm` (a general linear
method over the layer's streams).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, final

import numpy as np
import torch
from torch import Tensor, nn

from ..compiler import compile as compile_method
from ..errors import ExtractionError
from ..methods import AdditiveRungeKutta, ButcherTableau, GeneralLinear, Method, Splitting
from ..nn import Context, Field
from .evaluate import evaluate_glm
from .fields import ChainField, SumField
from .probe import (
    CACHE_KEYWORDS,
    Call,
    Where,
    first_output,
    read,
    replace_input,
    tensor_input,
    with_output,
)
from .streams import Streams, stage_shape, stream_count

if TYPE_CHECKING:
    from .result import Extracted

_PLAIN = (type(None), bool, int, float, str)
# Where a member's argument comes from: ("arg", i) / ("kw", name) of the layer call, or a
# constant ("const", value).
Source = tuple[str, Any]


def _locate(value: Any, name: str | None, args: tuple, kwargs: Mapping[str, Any]) -> Source:
    """Where a member's argument came from in the layer call (identity for objects; plain
    constants pass through by keyword name when the layer got the same keyword)."""
    if isinstance(value, _PLAIN):
        if name is not None and name in kwargs and kwargs[name] == value:
            return ("kw", name)
        return ("const", value)
    for i, given in enumerate(args):
        if given is value:
            return ("arg", i)
    for key, given in kwargs.items():
        if given is value:
            return ("kw", key)
    return ("stale", value)


@final
class Binding:
    """A member's call template with each argument bound to the layer call it came from."""

    def __init__(self, call: Call, args: tuple, kwargs: Mapping[str, Any], who: str) -> None:
        self.where: Where = call.where
        self.args = [
            None if ("arg", i) == call.where else _locate(a, None, args, kwargs)
            for i, a in enumerate(call.args)
        ]
        self.kwargs = {
            k: _locate(v, k, args, kwargs)
            for k, v in call.kwargs.items()
            if ("kw", k) != call.where
        }
        for key, source in [*enumerate(self.args), *self.kwargs.items()]:
            if source is not None and source[0] == "stale":
                raise ExtractionError(
                    f"{who} receives argument {key!r} computed inside the layer, not passed to "
                    "it; rewire rebinds only the layer's own arguments"
                )

    def call(self, args: tuple, kwargs: Mapping[str, Any]) -> Call:
        def value(source: Source) -> Any:
            kind, key = source
            if kind == "arg":
                return args[key] if key < len(args) else None
            if kind == "kw":
                return kwargs.get(key)
            return key

        bound_args = tuple(None if s is None else value(s) for s in self.args)
        bound_kwargs = {k: value(s) for k, s in self.kwargs.items()}
        if self.where[0] == "kw":
            bound_kwargs[self.where[1]] = None
        return Call(bound_args, bound_kwargs, self.where)

    def cache(self, args: tuple, kwargs: Mapping[str, Any]) -> str | None:
        """The keyword of a non-empty cache this member gets in the call, if any."""
        bound = self.call(args, kwargs).kwargs
        return next((k for k in CACHE_KEYWORDS if bound.get(k) is not None), None)


class LayerField(Field):
    """The whole original layer as one field, F(y) = layer(y) − y, called like the layer."""

    def __init__(self, rewired: Rewired) -> None:
        super().__init__()
        self.name, self.needs_memory, self.has_self_attention = "layer", False, False
        self.rewired = [rewired]  # held, not registered (it owns this field)

    def forward(self, y: Tensor, ctx: Context | None = None, slot: int = 0) -> Tensor:
        owner = self.rewired[0]
        args, kwargs = owner.current()
        args, kwargs = replace_input(args, kwargs, owner.where, y)
        value = first_output(owner.original_forward(*args, **kwargs), owner.module_name)
        return value - y


class Rewired(nn.Module):
    """A module computing `method` on the sub-modules of an extracted module; call it as the
    original (`forward(*args, **kwargs)`), it returns the new state in the structure the
    original returned (a tensor; a tuple's other entries, such as attention weights, None).
    Build it with
    `found.rewire(method)`.

    **Attributes:** `method` (the declaration computed), `integrator` (the compiled block or
    the general-linear evaluator), `calls` (field -> calls per forward).
    """

    def __init__(self, found: Extracted, method: Method, field: str | None) -> None:
        super().__init__()
        session = found.session
        original = session.original
        for name, child in original.named_children():
            self.add_module(name, child)
        for name, p in original.named_parameters(recurse=False):
            self.register_parameter(name, p)
        self._original = [original]
        self.method, self.streams, self.module_name = method, found.streams, found.module
        self.where = tensor_input(session.args, session.kwargs, found.module)
        self._call: tuple[tuple, dict] | None = None
        self.returned = [session.returned]
        self.bindings = {
            chain.name: [
                Binding(call, session.args, session.kwargs, f"{found.module}.{path}")
                for call, path in zip(session.templates[chain.name], chain.paths, strict=True)
            ]
            for chain in session.chains
        }
        chains = {
            chain.name: ChainField(
                chain.name,
                [self.get_submodule(p) for p in chain.paths],
                self._arguments(chain.name),
            )
            for chain in session.chains
        }
        self.fields = _fields(found, chains, method, field, self)
        self.calls = _calls(method, self.fields, found)
        self.integrator = _integrator(method, self.fields, found, int(session.state.shape[-1]))

    def _arguments(self, name: str) -> Any:
        def arguments(index: int) -> Call:
            args, kwargs = self.current()
            return self.bindings[name][index].call(args, kwargs)

        return arguments

    def current(self) -> tuple[tuple, dict]:
        if self._call is None:
            raise RuntimeError("a rewired field runs only inside the rewired module's forward")
        return self._call

    def original_forward(self, *args: Any, **kwargs: Any) -> Any:
        return self._original[0](*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            if name == "_original":
                raise
            return getattr(self._original[0], name)  # attributes a parent model reads

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        self._refuse_cache(args, kwargs)
        state = read(args, kwargs, self.where)
        self._call = (args, kwargs)
        try:
            out: Tensor = self.integrator(state)
        finally:
            self._call = None
        return with_output(self.returned[0], out)

    def _refuse_cache(self, args: tuple, kwargs: Mapping[str, Any]) -> None:
        for name, bindings in self.bindings.items():
            if self.calls.get(name, 0) <= 1:
                continue
            for binding in bindings:
                key = binding.cache(args, kwargs)
                if key is not None:
                    raise ExtractionError(
                        f"rewired {self.module_name} ({self.method.name}) calls field '{name}' "
                        f"{self.calls[name]} times per step, but gets a cache ({key}=...) that "
                        "holds one entry per layer; call it with use_cache=False"
                    )


def _fields(
    found: Extracted, chains: dict[str, ChainField], method: Method, field: str | None, owner: Any
) -> dict[str, Field]:
    """The new declaration's fields: operators by name, a tableau's field by `field`."""
    groups = found.declared_fields(chains)
    known = {**chains, **groups}
    valid = ", ".join([*known, "layer"])
    if isinstance(method, (Splitting, AdditiveRungeKutta)):
        missing = [op for op in method.operators if op not in known]
        if missing:
            raise ExtractionError(
                f"rewire: operator(s) {', '.join(missing)} of '{method.name}' name no field of "
                f"{found.module}; valid: {valid}"
            )
        return {op: known[op] for op in method.operators}
    if field is None:
        field = next(iter(groups)) if len(groups) == 1 else "layer"
    if field == "layer":
        return {"F": LayerField(owner)}
    if field not in known:
        raise ExtractionError(
            f"rewire: field {field!r} is no field of {found.module}; valid: {valid}"
        )
    return {"F": known[field]}


def _calls(method: Method, fields: dict[str, Field], found: Extracted) -> dict[str, int]:
    """How often each of the module's fields is called per forward of the new declaration."""
    per_operator: dict[str, int] = {}
    if isinstance(method, Splitting):
        stages = method.substep.stages if method.substep is not None else 1
        for op, _ in method.steps:
            per_operator[op] = per_operator.get(op, 0) + stages
    elif isinstance(method, AdditiveRungeKutta):
        for op in method.fields:
            per_operator[op] = per_operator.get(op, 0) + 1
    elif isinstance(method, (ButcherTableau, GeneralLinear)):
        per_operator["F"] = method.stages
    counts: dict[str, int] = {}
    for op, n in per_operator.items():
        field = fields[op]
        parts = (
            [str(p.name) for p in field.parts]
            if isinstance(field, SumField)
            else list(found.fields)
            if not isinstance(field, ChainField)
            else [field.name]
        )
        for part in parts:
            counts[part] = counts.get(part, 0) + n
    return counts


def _integrator(
    method: Method, fields: dict[str, Field], found: Extracted, width: int
) -> nn.Module:
    if isinstance(method, ButcherTableau):
        return _Block(compile_method(method, field=fields["F"], d_model=width))
    if isinstance(method, (Splitting, AdditiveRungeKutta)):
        return _Block(compile_method(method, fields=fields, share=True, d_model=width))
    if isinstance(method, GeneralLinear):
        r = stream_count(found.session.state, found.streams)
        if method.values != r:
            raise ExtractionError(
                f"rewire: '{method.name}' carries {method.values} values but "
                f"{found.module}'s state has {r} stream(s); a general linear method rewires a "
                "layer with as many streams"
            )
        return _GeneralLinear(method, fields["F"], found.streams)
    raise ExtractionError(
        f"rewire: a {method.family} declaration does not rewire one layer; valid: a Butcher "
        "tableau, a splitting, an additive method, or a general linear method with the "
        "layer's streams"
    )


@final
class _Block(nn.Module):
    """A compiled block called on the state alone (no finiteness check: the layer's job)."""

    def __init__(self, block: nn.Module) -> None:
        super().__init__()
        self.block = block

    def forward(self, state: Tensor) -> Tensor:
        out: Tensor = self.block(state, check=False)
        return out


@final
class _GeneralLinear(nn.Module):
    """A general linear method's fixed coefficients on one field, over the layer's streams."""

    def __init__(self, method: GeneralLinear, field: Field, streams: Streams) -> None:
        super().__init__()
        self.field, self.streams = field, streams
        for key in ("U", "A", "B", "V"):
            rows = getattr(method, key)
            self.register_buffer(key, torch.tensor(np.array(rows, dtype=float)))

    def forward(self, state: Tensor) -> Tensor:
        coefficients = [getattr(self, k) for k in ("U", "A", "B", "V")]
        stages = [self.field] * coefficients[1].shape[0]
        shapes = [stage_shape(state, self.streams)] * len(stages)
        return evaluate_glm(coefficients, stages, shapes, state, self.streams)


def rewire(found: Extracted, method: Method, field: str | None = None) -> Rewired:
    """A module computing `method` on `found`'s module's own sub-modules.

    **Arguments:**

    - `found`: an extraction.
    - `method`: a `ButcherTableau` (on one field), a `Splitting` or an `AdditiveRungeKutta`
      (its operators named as the module's fields, e.g. `("mlp", "1/2"), ("attn", 1),
      ("mlp", "1/2")`), or a
      `GeneralLinear` with as many values as the layer's streams.
    - `field`: a tableau's field: a field name, the extraction's declaration field (`"F"`), or
      `"layer"`: F(y) = layer(y) − y, the whole original layer as one field (the default when
      the module has several fields).

    **Returns:** a `Rewired` module, a drop-in replacement of the original in its parent
    (same call, same parameters, same state dict keys for the original's children).
    """
    return Rewired(found, method, field)
