"""Which of a layer's fields each operator of a new method calls (`choose_fields`): by
`fields=`, by name, or in order of first use; the record a rewiring is built from
(`LayerRecord`) and the whole layer as one field (`LayerField`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, final

from torch import Tensor, nn

from ...errors import ExtractionError
from ...methods import Method
from ...nn import Context, Field
from ..families import wiring
from ..fields import ChainField, SumField
from ..probe import Call, Chain, first_output
from ..streams import Streams

if TYPE_CHECKING:  # the module that owns a LayerField (rewire.py imports this module)
    from .rewire import Rewired

FieldChoice = str | Sequence[str]


@final
@dataclass(frozen=True)
class LayerRecord:
    """What a rewired layer is built from: a layer, its fields, and one call of it as read.

    - `module`, `name`: the layer and its class name.
    - `chains`: its fields; `templates`, `outputs`: each member's first call and output.
    - `args`, `kwargs`: the layer's call; `returned`: its output (for the structure).
    - `width`, `streams`, `values`: the state's channels, stream axis and stream count.
    - `groups`: each field of the layer's own declaration -> the module's fields summed in it
      (GPT-J's `F = attn + mlp`); every chain on its own when no declaration was read.
    """

    module: nn.Module
    name: str
    chains: tuple[Chain, ...]
    templates: Mapping[str, Sequence[Call]]
    outputs: Mapping[str, Sequence[Any]]
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]
    returned: Any
    width: int
    streams: Streams = None
    values: int = 1
    groups: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


class LayerField(Field):
    """The whole original layer as one field, F(y) = layer(y) − y, called like the layer."""

    def __init__(self, owner: Rewired) -> None:
        super().__init__()
        self.name, self.needs_memory, self.has_self_attention = "layer", False, False
        self.owner = [owner]  # held, not registered (it owns this field)

    def forward(self, y: Tensor, ctx: Context | None = None, slot: int = 0) -> Tensor:
        owner = self.owner[0]
        args, kwargs = owner.with_state(*owner.current(), y)
        out = owner.original_forward(*args, **kwargs)
        owner.layer_output = out  # what the last call returned beside the state (a cache)
        return first_output(out, owner.module_name) - y


def choose_fields(
    record: LayerRecord,
    chains: dict[str, ChainField],
    method: Method,
    field: str | None,
    fields: Mapping[str, FieldChoice] | None,
    owner: Rewired,
) -> dict[str, Field]:
    """The declaration's fields on the layer's: by `fields=` (operator -> a field name, a
    declaration field or a chain of sub-module paths, as `bf.compile(fields=...)`), by name
    where the operators are the layer's fields, else in order of first use; a one-field
    method's field by `field=` (a field name, a declaration field, or `"layer"`: the whole
    layer, F(y) = layer(y) − y, the default for a layer of several fields)."""
    groups = {g: parts for g, parts in record.groups.items()} or {c: (c,) for c in chains}
    known: dict[str, Field] = {**chains}
    for group, parts in groups.items():
        if group not in known:
            known[group] = SumField([chains[p] for p in parts])
    valid = ", ".join([*known, "layer"])
    operators = wiring(method).operators(method)
    if fields is not None:
        return _mapped(record, chains, known, operators, fields, method, owner, valid)
    if operators == ("F",):
        return {"F": _one_field(record, known, chains, groups, method, field, owner, valid)}
    if all(op in known for op in operators):
        return {op: known[op] for op in operators}
    return _in_order(record, known, groups, operators, method)


def _one_field(
    record: LayerRecord,
    known: dict[str, Field],
    chains: dict[str, ChainField],
    groups: Mapping[str, tuple[str, ...]],
    method: Method,
    field: str | None,
    owner: Rewired,
    valid: str,
) -> Field:
    if field is None:
        field = next(iter(groups)) if len(groups) == 1 else "layer"
    if field == "layer" and record.values > 1:  # the layer takes all streams, a stage one
        raise ExtractionError(
            f"rewire: '{method.name}' would call the whole of {record.name} as its field F, "
            f"on one stream of its {record.values}; valid: a general linear method over its "
            f"fields ({', '.join(chains)}), as its own reading is"
        )
    if field == "layer":
        return LayerField(owner)
    if field not in known:
        raise ExtractionError(
            f"rewire: field={field!r} is no field of {record.name}; valid: {valid}"
        )
    covered = set(groups.get(field, (field,)))
    left = [c for c in chains if c not in covered]
    if left:
        raise ExtractionError(
            f"rewire: field={field!r} leaves {', '.join(repr(c) for c in left)} of "
            f"{record.name} out of '{method.name}' (the rewired layer would drop it); valid: "
            f"field='layer' (the whole layer as one field), a field that sums all, or a "
            f"splitting over {', '.join(chains)}"
        )
    return known[field]


def _mapped(
    record: LayerRecord,
    chains: dict[str, ChainField],
    known: dict[str, Field],
    operators: tuple[str, ...],
    fields: Mapping[str, FieldChoice],
    method: Method,
    owner: Rewired,
    valid: str,
) -> dict[str, Field]:
    missing = [op for op in operators if op not in fields]
    extra = [op for op in fields if op not in operators]
    if missing or extra:
        bad = (
            f"no field for {', '.join(missing)}" if missing else f"{', '.join(extra)} not operators"
        )
        raise ExtractionError(
            f"rewire: fields={dict(fields)!r} maps the operators of '{method.name}' "
            f"({', '.join(operators)}) wrongly: {bad}; valid: one field of {record.name} per "
            f"operator, from {valid}"
        )
    chosen: dict[str, Field] = {}
    for op in operators:
        spec = fields[op]
        if isinstance(spec, str) and spec == "layer":
            chosen[op] = LayerField(owner)
        elif isinstance(spec, str) and spec in known:
            chosen[op] = known[spec]
        else:
            paths = (spec,) if isinstance(spec, str) else tuple(spec)
            match = [c for c in record.chains if c.paths == paths]
            if not match:
                raise ExtractionError(
                    f"rewire: fields['{op}'] = {spec!r} names no field of {record.name}; valid: "
                    f"{valid}, or the sub-module paths of one: "
                    + "; ".join(f"{c.name} = {' -> '.join(c.paths)}" for c in record.chains)
                )
            chosen[op] = chains[match[0].name]
    covered = {n for f in chosen.values() for n in field_parts(f, record)}
    left = [c for c in chains if c not in covered]
    if left:
        raise ExtractionError(
            f"rewire: fields={dict(fields)!r} leaves {', '.join(repr(c) for c in left)} of "
            f"{record.name} out of '{method.name}'; valid: a mapping that uses every field"
        )
    return chosen


def _in_order(
    record: LayerRecord,
    known: dict[str, Field],
    groups: Mapping[str, tuple[str, ...]],
    operators: tuple[str, ...],
    method: Method,
) -> dict[str, Field]:
    """Operators in order of first use onto the layer's declaration fields in call order (or,
    where parallel branches are summed into fewer, its fields)."""
    order = list(groups)
    if len(order) != len(operators):
        order = [c.name for c in record.chains]
    if len(order) != len(operators):
        raise ExtractionError(
            f"rewire: '{method.name}' has {len(operators)} operator(s) ({', '.join(operators)}) "
            f"and {record.name} {len(order)} field(s) ({', '.join(order)}); valid: a method "
            "with one operator per field, or fields={operator: field} naming which"
        )
    return {op: known[g] for op, g in zip(operators, order, strict=True)}


def field_parts(field: Field, record: LayerRecord) -> list[str]:
    if isinstance(field, SumField):
        return [str(p.name) for p in field.parts]
    if isinstance(field, ChainField):
        return [field.name]
    return [c.name for c in record.chains]  # the whole layer
