"""How each family's declaration runs on a module's own fields: the one table `verify` and
`rewire` read instead of asking for the declaration's type (`WIRINGS`; a new family adds its
line here).

- `operators(method)`: the declaration's fields, in order of first use (`"F"`: the one field of
  a Runge-Kutta or general linear method).
- `calls(method)`: how often each is called per step.
- `build(method, on)`: a module called on the state alone that computes one step of the method
  on `on.fields` (or None: the family does not run on one layer, with `refusal` saying why).
- `spans(method, on)`: for a family that spans layers, the stack over `on.stage_fields` (what
  `verify` compiles back for a stack read as a multistep method).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, final

import numpy as np
import torch
from torch import Tensor, nn

from ..compiler import compile as compile_method
from ..compiler import compile_stack
from ..errors import ExtractionError
from ..methods import (
    AdditiveRungeKutta,
    ButcherTableau,
    ContinuousDynamics,
    GeneralLinear,
    LinearMultistep,
    Method,
    Splitting,
)
from ..nn import Field
from .evaluate import evaluate_glm
from .streams import Streams, stage_shape


@final
@dataclass(frozen=True)
class On:
    """What a step runs on: the declaration's fields by name, the field of each stage (a
    multistep stack's layers), the state's width, and where the state keeps its streams."""

    fields: Mapping[str, Field]
    stage_fields: Sequence[str]
    width: int
    streams: Streams = None
    values: int = 1


@final
class Step(nn.Module):
    """A compiled block called on the state alone (no finiteness check: the layer's job)."""

    def __init__(self, block: nn.Module) -> None:
        super().__init__()
        self.block = block

    def forward(self, state: Tensor) -> Tensor:
        out: Tensor = self.block(state, check=False)
        return out


@final
class GeneralLinearStep(nn.Module):
    """A general linear method's fixed coefficients on one field, over the state's streams."""

    def __init__(self, method: GeneralLinear, field: Field, streams: Streams) -> None:
        super().__init__()
        self.field, self.streams = field, streams
        for key in ("U", "A", "B", "V"):
            rows = getattr(method, key)
            self.register_buffer(key, torch.tensor(np.array(rows, dtype=float)), persistent=False)

    def forward(self, state: Tensor) -> Tensor:
        coefficients = [getattr(self, k) for k in ("U", "A", "B", "V")]
        stages = [self.field] * coefficients[1].shape[0]
        shapes = [stage_shape(state, self.streams)] * len(stages)
        return evaluate_glm(coefficients, stages, shapes, state, self.streams)


@final
@dataclass(frozen=True)
class Wiring:
    """A family's entry: see the module's docstring."""

    operators: Callable[[Any], tuple[str, ...]]
    calls: Callable[[Any], dict[str, int]]
    build: Callable[[Any, On], nn.Module] | None
    refusal: str = ""
    spans: Callable[[Any, On], nn.Module] | None = None  # a stack over `on.stage_fields`

    def run(self, method: Method, on: On) -> nn.Module | None:
        """What `verify` runs: the step on one layer, or the stack the declaration spans."""
        make = self.spans or self.build
        return None if make is None else make(method, on)


def _splitting_calls(method: Splitting) -> dict[str, int]:
    stages = method.substep.stages if method.substep is not None else 1
    counts: dict[str, int] = {}
    for op, _ in method.steps:
        counts[op] = counts.get(op, 0) + stages
    return counts


def _additive_calls(method: AdditiveRungeKutta) -> dict[str, int]:
    counts: dict[str, int] = {}
    for op in method.fields:
        counts[op] = counts.get(op, 0) + 1
    return counts


def _one_stream(method: Method, on: On) -> None:
    if on.values != 1:
        raise ExtractionError(
            f"rewire: '{method.name}' is a {method.family} method of one state, and the layer's "
            f"state carries {on.values} streams (hyper-connections); valid: a general linear "
            f"method with {on.values} values"
        )


def _tableau(method: ButcherTableau, on: On) -> nn.Module:
    _one_stream(method, on)
    return Step(compile_method(method, field=on.fields["F"], d_model=on.width))


def _by_operators(method: Splitting | AdditiveRungeKutta, on: On) -> nn.Module:
    _one_stream(method, on)
    fields = {op: on.fields[op] for op in method.operators}
    return Step(compile_method(method, fields=fields, share=True, d_model=on.width))


def _general_linear(method: GeneralLinear, on: On) -> nn.Module:
    if method.values != on.values:
        raise ExtractionError(
            f"rewire: '{method.name}' carries {method.values} values but the layer's state has "
            f"{on.values} stream(s); valid: a general linear method with as many values as the "
            "layer's streams"
        )
    return GeneralLinearStep(method, on.fields["F"], on.streams)


def _stack(method: LinearMultistep, on: On) -> nn.Module:
    layers = [on.fields[g] for g in on.stage_fields]
    return Step(compile_stack(method, fields=layers, d_model=on.width))


WIRINGS: dict[type[Method], Wiring] = {
    ButcherTableau: Wiring(
        lambda m: ("F",),
        lambda m: {"F": m.stages},
        _tableau,
    ),
    Splitting: Wiring(lambda m: tuple(m.operators), _splitting_calls, _by_operators),
    AdditiveRungeKutta: Wiring(lambda m: tuple(m.operators), _additive_calls, _by_operators),
    GeneralLinear: Wiring(lambda m: ("F",), lambda m: {"F": m.stages}, _general_linear),
    LinearMultistep: Wiring(
        lambda m: (),
        lambda m: {},
        None,
        "a linear multistep method spans layers: it reads a stack (bf.extract on the model), "
        "and one layer computes one step of a one-step method",
        _stack,
    ),
    ContinuousDynamics: Wiring(
        lambda m: (),
        lambda m: {},
        None,
        "continuous dynamics is solved by an ODE solver, not a fixed combination of fields",
    ),
}


def wiring(method: Method) -> Wiring:
    """The family entry of a declaration."""
    return WIRINGS[type(method)]
