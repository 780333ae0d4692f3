"""A module's own sub-modules as butcherflow fields, so the compiler can evaluate a declaration
on them: a chain of members called as the module called them, and a sum of parallel chains."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, final

from torch import Tensor, nn

from ..nn import Context, Field
from .probe import Call, first_output, replace_input

# Member i's call (arguments with the stage value's place) for the call in progress.
Arguments = Callable[[int], Call]


@final
class ChainField(Field):
    """A field chain: the stage value enters the first member, the last member's output is the
    field value; every member gets the other arguments `arguments(i)` gives (the call recorded
    at extraction, or one bound to the layer call in progress by `rewire`).

    **Arguments:**

    - `name`: the field's name.
    - `members`: the sub-modules, in call order (held, not registered: they belong to the
      module they were read from).
    - `arguments`: member index -> its `Call`.
    """

    def __init__(self, name: str, members: Sequence[nn.Module], arguments: Arguments) -> None:
        super().__init__()
        self.name, self.needs_memory, self.has_self_attention = name, False, False
        self.members = tuple(members)
        self.arguments = arguments

    def forward(self, y: Tensor, ctx: Context | None = None, slot: int = 0) -> Tensor:
        value = y
        for index, member in enumerate(self.members):
            call = self.arguments(index)
            args, kwargs = replace_input(call.args, call.kwargs, call.where, value)
            value = first_output(member(*args, **kwargs), self.name)
        return value


@final
class SumField(Field):
    """Parallel chains read the same stage value; the field is the sum of their values."""

    def __init__(self, parts: Sequence[ChainField]) -> None:
        super().__init__()
        self.parts = nn.ModuleList(parts)
        self.name = " + ".join(p.name for p in parts)
        self.needs_memory, self.has_self_attention = False, False

    def forward(self, y: Tensor, ctx: Context | None = None, slot: int = 0) -> Tensor:
        total: Any = None
        for part in self.parts:
            value = part(y, ctx, slot)
            total = value if total is None else total + value
        assert isinstance(total, Tensor)
        return total
