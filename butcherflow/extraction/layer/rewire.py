"""A layer rewired: another integrator on the same sub-modules, usable in place.

The rewired module holds the original layer's children (the same objects, so the parameters
are shared and its state dict keys are the original's) and is called like the original: each
call is bound by the layer's forward signature and every argument a field member received when
the layer's call was read (an attention mask, position embeddings, a KV cache) comes from the
same parameter of the new call (`binding.Binding`). The integrator is the family's step on the
fields (`families.WIRINGS`).

A KV cache holds one entry per layer and step: a field called once per step with it updates it
as the original layer did; a field called more often would append twice, so a method that
calls a cached field more than once per step refuses the cache before any field runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, final

from torch import Tensor, nn

from ...errors import ExtractionError
from ...methods import Method, catalog
from ...nn import Field
from ..binding import CACHE_NAMES, Binding, Signature, cache_kind, caches, is_cache_object
from ..families import On, wiring
from ..fields import ChainField, SumField
from ..probe import Call, Where, read, replace_input, tensor_input
from .choice import FieldChoice, LayerField, LayerRecord, choose_fields, field_parts


@final
class _Arguments:
    """A chain's member calls for the layer call in progress (an object, not a closure, so that
    a deep copy of the rewired module binds to the copy)."""

    def __init__(self, owner: Rewired, name: str) -> None:
        self.owner, self.name = [owner], name

    def __call__(self, index: int) -> Call:
        owner = self.owner[0]
        return owner.bindings[self.name][index].call(owner.named())


class Rewired(nn.Module):
    """A module computing `method` on the sub-modules of a layer; call it as the original
    (`forward(*args, **kwargs)`); it returns the new state in the structure the original
    returned (a tuple's other entries: a member's output the layer passed on, such as a legacy
    cache's present, else None). Build it with `rewire_layer` (or `found.rewire(method)`).

    **Attributes:** `method` (the declaration computed), `fields` (operator -> field),
    `calls` (module field -> calls per step), `cached` (the fields that read a KV cache).
    """

    def __init__(
        self,
        record: LayerRecord,
        method: Method,
        field: str | None = None,
        fields: Mapping[str, FieldChoice] | None = None,
    ) -> None:
        super().__init__()
        original = record.module
        for name, child in original.named_children():
            self.add_module(name, child)
        for name, p in original.named_parameters(recurse=False):
            self.register_parameter(name, p)
        self._original = [original]
        self.method, self.module_name = method, record.name
        self.signature = Signature(original, record.name)
        captured = self.signature.named(record.args, record.kwargs)
        self.where: Where = tensor_input(record.args, record.kwargs, record.name)
        self.state = _state_parameter(captured, record, self.where)
        self._call: tuple[tuple, dict] | None = None
        self._named: dict[str, Any] | None = None
        self.layer_output: Any = None
        self.shell = Shell.of(record.returned)
        self.bindings = {
            chain.name: [
                Binding(call, self.get_submodule(path), captured, f"{record.name}.{path}")
                for call, path in zip(record.templates[chain.name], chain.paths, strict=True)
            ]
            for chain in record.chains
        }
        self.passed = _passed_outputs(record)
        chains = {
            chain.name: ChainField(
                chain.name,
                [self.get_submodule(p) for p in chain.paths],
                _Arguments(self, chain.name),
            )
            for chain in record.chains
        }
        self.fields = choose_fields(record, chains, method, field, fields, self)
        self.calls = _calls(method, self.fields, record)
        self.cached = _cached(self.bindings, captured, self.fields)
        entry = wiring(method)
        if entry.build is None:
            raise ExtractionError(
                f"rewire: '{method.name}' does not rewire one layer: {entry.refusal}"
            )
        on = On(self.fields, (), record.width, record.streams, record.values)
        self.integrator = entry.build(method, on)
        self.whole = any(isinstance(f, LayerField) for f in self.fields.values())
        if not self.whole:  # the whole layer returns its own other outputs
            _refuse_inner_outputs(record, self.passed)
        read = set().union(*(b.reads() for bs in self.bindings.values() for b in bs))
        self.unread = tuple(
            k for k, v in captured.items() if v is None and k not in read and k != self.state
        )
        self.train(original.training)

    def current(self) -> tuple[tuple, dict]:
        if self._call is None:
            raise ExtractionError(
                f"a field of rewired {self.module_name} was called outside the rewired "
                "module's forward; call the rewired module (its fields read its arguments)"
            )
        return self._call

    def named(self) -> dict[str, Any]:
        assert self._named is not None, "named() outside forward"
        return self._named

    def original_forward(self, *args: Any, **kwargs: Any) -> Any:
        return self._original[0](*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            if name == "_original":
                raise
            return getattr(self._original[0], name)  # attributes a parent model reads

    def with_state(self, args: tuple, kwargs: dict, y: Tensor) -> tuple[tuple, dict]:
        """The call in progress with `y` as its state, wherever this call passes it."""
        if self.state in kwargs or self.where[0] == "kw":
            return args, {**kwargs, self.state: y}
        return replace_input(args, kwargs, self.where, y)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        named = self.signature.named(args, kwargs)
        self.refuse(named)
        state = named.get(self.state)
        if not isinstance(state, Tensor):
            raise ExtractionError(
                f"rewired {self.module_name} is called without its state '{self.state}' as a "
                "tensor; valid: the call of the original layer"
            )
        self._call, self._named = (args, kwargs), named
        self.layer_output = None
        seen: dict[tuple[str, int], Any] = {}
        for chain in self.chain_fields():
            chain.seen = seen
        try:
            out: Tensor = self.integrator(state)
        finally:
            self._call, self._named = None, None
            for chain in self.chain_fields():
                chain.seen = None
        extras = {i: _item(seen.get(source[:2]), source[2]) for i, source in self.passed.items()}
        if self.whole and isinstance(self.layer_output, (tuple, list)):
            extras = dict(enumerate(self.layer_output))  # the whole layer's last call's
        self.layer_output = None
        return self.shell.fill(out, extras)

    def chain_fields(self) -> list[ChainField]:
        found = []
        for f in self.fields.values():
            parts = f.parts if isinstance(f, SumField) else [f]
            found += [p for p in parts if isinstance(p, ChainField)]
        return found

    def refuse(self, named: Mapping[str, Any]) -> None:
        """Refuse, before any field runs, a call this rewiring would get wrong: a cache of a
        kind it does not know, a cache for a method that calls a cached field twice, an
        argument that was None when the layer was read and reaches no field."""
        for key, value in caches(named).items():
            kind = cache_kind(value)
            if kind == "unknown":
                raise ExtractionError(
                    f"rewired {self.module_name} gets {key}={type(value).__name__}, a cache "
                    "bf.rewire does not know; valid: a transformers Cache, a legacy tuple of "
                    "tensors, or None (use_cache=False)"
                )
            twice = {n: c for n, c in self.calls.items() if c > 1 and n in self.cached}
            if twice:
                name, count = next(iter(twice.items()))
                raise ExtractionError(
                    f"rewired {self.module_name} ({self.method.name}) calls field '{name}' "
                    f"{count} times per step, but gets a cache ({key}={type(value).__name__}) "
                    "that holds one entry per layer and step; call the model with "
                    "use_cache=False"
                )
        for key in () if self.whole else self.unread:
            value = named.get(key)
            if value is not None:
                raise ExtractionError(
                    f"rewired {self.module_name} gets {key}={type(value).__name__}, which was "
                    "None when the layer's call was read and reaches none of its fields; read "
                    f"the model with {key} given (valid: the arguments of the call read)"
                )


def _state_parameter(captured: Mapping[str, Any], record: LayerRecord, where: Where) -> str:
    """The name of the layer's parameter that holds the state (found by identity in the call
    read), so that either way of passing it is read."""
    state = read(record.args, record.kwargs, where)
    return next((k for k, v in captured.items() if v is state), str(where[1]))


def _passed_outputs(record: LayerRecord) -> dict[int, tuple[str, int, int]]:
    """Entries of the layer's output tuple that are, by identity, an entry of a member's output
    passed on (a legacy cache's `present`): entry index -> (chain, member index, entry index
    in the member's output)."""
    returned = record.returned
    if not isinstance(returned, (tuple, list)):
        return {}
    passed = {}
    for index, value in enumerate(returned[1:], start=1):
        if value is None or isinstance(value, (bool, int, float, str)):
            continue
        for chain in record.chains:
            for i, out in enumerate(record.outputs.get(chain.name, ())):
                items = out if isinstance(out, (tuple, list)) else (out,)
                for j, item in enumerate(items):
                    if j > 0 and item is value:
                        passed[index] = (chain.name, i, j)
    return passed


def _refuse_inner_outputs(record: LayerRecord, passed: Mapping[int, Any]) -> None:
    """Refuse a layer that returns, beside its state, a tensor it computes itself (XLNet's
    query stream): a rewired layer computes only the state, and would return stale values."""
    returned = record.returned
    if not isinstance(returned, (tuple, list)):
        return
    given = {id(a) for a in (*record.args, *record.kwargs.values())}  # returned as it came
    for index, value in enumerate(returned[1:], start=1):
        if isinstance(value, Tensor) and index not in passed and id(value) not in given:
            raise ExtractionError(
                f"rewire: {record.name} returns a tensor of shape {tuple(value.shape)} beside "
                f"its state (output {index}) that it computes itself, not a field's output "
                "passed on (a second stream); a rewired layer computes its state only: valid: "
                "a layer whose other outputs are None, caches or its fields' outputs"
            )


@final
@dataclass(frozen=True)
class Shell:
    """The structure of a layer's output, without its values: a tensor, a tuple (or list) of
    `size` entries, or a mapping (a transformers ModelOutput) whose first key is `key`."""

    kind: type
    size: int = 1
    key: str = ""

    @classmethod
    def of(cls, returned: Any) -> Shell:
        if isinstance(returned, Mapping):
            return cls(type(returned), len(returned), str(next(iter(returned))))
        if isinstance(returned, (tuple, list)):
            return cls(type(returned), len(returned))
        return cls(Tensor)

    def fill(self, value: Tensor, extras: Mapping[int, Any]) -> Any:
        """`value` in this structure; entry i of a tuple `extras[i]` (a member's output the
        layer passes on, such as a legacy cache's present) or None."""
        if self.kind is Tensor:
            return value
        if self.key:
            return self.kind(**{self.key: value})
        rest = [extras.get(i) for i in range(1, self.size)]
        if hasattr(self.kind, "_fields"):  # a named tuple
            return self.kind(value, *rest)
        return self.kind((value, *rest))


def _item(out: Any, index: int) -> Any:
    """Entry `index` of a member's output (None when the member did not run)."""
    return None if out is None else out[index]


def resolve_method(method: Method | str) -> Method:
    """A declaration, a catalog name or a declaration file, as a declaration."""
    if isinstance(method, Method):
        return method
    return catalog.resolve(method)


def _calls(method: Method, fields: dict[str, Field], record: LayerRecord) -> dict[str, int]:
    """How often each of the layer's fields is called per step of the new declaration."""
    counts: dict[str, int] = {}
    for op, n in wiring(method).calls(method).items():
        for part in field_parts(fields[op], record):
            counts[part] = counts.get(part, 0) + n
    return counts


def _cached(
    bindings: Mapping[str, Sequence[Binding]],
    captured: Mapping[str, Any],
    fields: Mapping[str, Field],
) -> set[str]:
    """The layer's fields whose members read a cache parameter (by name, or a Cache object at
    the read); every field when the whole layer is one (it passes the layer's cache on)."""
    cached = {
        name
        for name, bs in bindings.items()
        if any(k in CACHE_NAMES or is_cache_object(captured.get(k)) for b in bs for k in b.reads())
    }
    if any(isinstance(f, LayerField) for f in fields.values()):
        cached |= set(bindings)
    return cached


def rewire_layer(
    record: LayerRecord,
    method: Method | str,
    field: str | None = None,
    fields: Mapping[str, FieldChoice] | None = None,
) -> Rewired:
    """A module computing `method` on a layer's own sub-modules.

    **Arguments:**

    - `record`: the layer, its fields and one call of it (`found.record()`).
    - `method`: a declaration, catalog name or declaration file: a `ButcherTableau` (one
      field), a `Splitting` or `AdditiveRungeKutta` (an operator per field), a
      `GeneralLinear` with as many values as the layer's streams.
    - `field`: a one-field method's field: a field name, a declaration field (`"F"`), or
      `"layer"` (F(y) = layer(y) − y, the default when the layer has several fields).
    - `fields`: operator -> field name or chain of paths (`{"A": "mlp", "B": "attn"}`);
      default: the operators by name when they are the layer's fields, else in order of first
      use onto the layer's fields in call order.

    **Returns:** a `Rewired` module, a drop-in replacement of the layer in its parent (same call,
    same parameters, same state dict keys, same train/eval mode).
    """
    return Rewired(record, resolve_method(method), field, fields)
