"""How a declaration's free symbols become parameters of the compiled layer.

A parametrised family (`b = ["g", "1 - g"]`) is a set of methods; declaring its parameters makes
it one trainable layer, and the proof `bf.check` gives is about that very layer:

```toml
[parameters]
g = { kind = "gate", init = "1/2" }     # or simply: g = "gate"
```

Kinds (`KINDS`):

- `"learned"`: one trained scalar shared by every token, starting at `init` (required).
- `"gate"`: a per-token sigmoid gate g = σ([K₁;…;Kₛ]W + β) computed from the weighted stages,
  W = 0 and β = logit(init) at the start (init in (0, 1), default 1/2): the ODE Transformer's
  RK2-gated block is b = (g, 1 − g) with a gate g.
- `"tanh"`: a per-token tanh([K₁;…;Kₛ]W + β) (init in (−1, 1), default 0).
- `"softmax"`: the softmax symbols of a declaration are one per-token softmax over them (inits
  positive and summing to 1, default uniform); they sum to 1, and the proof uses that.

Gates are computed from the stages, so their symbols may appear only in the weights b; one
declaration has one kind of gate (one gate module).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, final

import sympy

from ..errors import DeclarationError
from .entries.numbers import Number, parse_number

KINDS = {
    "learned": "a learned scalar",
    "gate": "a per-token sigmoid gate",
    "tanh": "a per-token tanh weight",
    "softmax": "a per-token softmax weight",
}
GATES = ("gate", "tanh", "softmax")
VALID = (
    "a parameter is a kind, or a table with a kind and an initial value: "
    "g = 'gate' or g = { kind = 'gate', init = '1/2' }; kinds: " + ", ".join(KINDS)
)


@final
@dataclass(frozen=True)
class Parameter:
    """How one symbol becomes a parameter: its `kind` (a key of `KINDS`) and its initial value
    (`init`, None for a gate's default)."""

    kind: str
    init: Number | None

    @property
    def start(self) -> sympy.Expr | None:
        """The declared initial value (None: the kind's default)."""
        return None if self.init is None else self.init.value

    @property
    def is_gate(self) -> bool:
        """Computed per token from the stages (not a stored scalar)."""
        return self.kind in GATES

    def describe(self, initial: sympy.Expr) -> str:
        return f"{KINDS[self.kind]}, starting at {initial}"


def _one(name: str, raw: Any, symbols: Mapping[str, sympy.Symbol], source: str | None) -> Parameter:
    key = f"parameters.{name}"
    if name not in symbols:
        raise DeclarationError(
            "no such symbol in the declaration",
            key=key,
            value=name,
            valid=f"its symbols are {sorted(symbols) or 'none'}",
            source=source,
        )
    table = {"kind": raw} if isinstance(raw, str) else raw
    if not isinstance(table, Mapping) or set(table) - {"kind", "init"} or "kind" not in table:
        raise DeclarationError(
            "malformed parameter", key=key, value=raw, valid=VALID, source=source
        )
    kind = table["kind"]
    if kind not in KINDS:
        raise DeclarationError(
            "unknown kind of parameter",
            key=f"{key}.kind",
            value=kind,
            valid=f"one of {', '.join(KINDS)}",
            source=source,
        )
    init = None if table.get("init") is None else parse_number(table["init"], f"{key}.init", source)
    if init is not None and init.value.free_symbols:
        raise DeclarationError(
            "an initial value is a number", key=f"{key}.init", value=table["init"], source=source
        )
    value = None if init is None else init.value
    bad = {
        "learned": value is None,
        "gate": value is not None and not bool(0 < value < 1),
        "tanh": value is not None and not bool(-1 < value < 1),
        "softmax": value is not None and not bool(value > 0),
    }[kind]
    if bad:
        ranges = {
            "learned": "a learned scalar needs its initial value, e.g. init = 1",
            "gate": "a sigmoid gate starts strictly between 0 and 1",
            "tanh": "a tanh weight starts strictly between -1 and 1",
            "softmax": "a softmax weight starts above 0",
        }
        raise DeclarationError(
            "bad initial value",
            key=f"{key}.init",
            value=table.get("init"),
            valid=ranges[kind],
            source=source,
        )
    return Parameter(kind, init)


def parse_parameters(
    raw: Any,
    symbols: Iterable[sympy.Symbol],
    *,
    outside_weights: Iterable[sympy.Symbol] = (),
    kinds: tuple[str, ...] = tuple(KINDS),
    source: str | None = None,
) -> dict[sympy.Symbol, Parameter]:
    """Validate a declaration's `parameters` table.

    **Arguments:**

    - `raw`: symbol name -> kind, or -> `{kind, init}` (None: no parameters).
    - `symbols`: the declaration's free symbols.
    - `outside_weights`: symbols that appear outside the weights b (no gate may).
    - `kinds`: the kinds this family can compile.
    - `source`: the declaration's file, for errors.

    **Returns:** symbol -> `Parameter`, in the order declared.
    """
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise DeclarationError(
            "parameters must be a table of symbols",
            key="parameters",
            value=raw,
            valid=VALID,
            source=source,
        )
    by_name = {str(s): s for s in symbols}
    parsed: dict[sympy.Symbol, Parameter] = {}
    for name, value in raw.items():
        parameter = _one(str(name), value, by_name, source)
        parsed[by_name[str(name)]] = parameter
    outside = set(outside_weights)
    for symbol, parameter in parsed.items():
        if parameter.kind not in kinds:
            raise DeclarationError(
                f"a {parameter.kind} parameter cannot be compiled in this family",
                key=f"parameters.{symbol}.kind",
                value=parameter.kind,
                valid=f"one of {', '.join(kinds)}",
                source=source,
            )
        if parameter.is_gate and symbol in outside:
            raise DeclarationError(
                "a gate is computed from the stages, so it may appear only in the weights b",
                key=f"parameters.{symbol}",
                value=parameter.kind,
                valid="kind = 'learned' for a symbol of A or c",
                source=source,
            )
    gate_kinds = {p.kind for p in parsed.values() if p.is_gate}
    if len(gate_kinds) > 1:
        raise DeclarationError(
            "one declaration has one kind of gate (one gate module)",
            key="parameters",
            value=sorted(gate_kinds),
            valid="make every gate of the declaration the same kind",
            source=source,
        )
    softmax = [p for p in parsed.values() if p.kind == "softmax"]
    if softmax:
        _check_softmax(softmax, source)
    return parsed


def _check_softmax(softmax: list[Parameter], source: str | None) -> None:
    given = [p.init for p in softmax if p.init is not None]
    if len(softmax) < 2 or (given and len(given) != len(softmax)):
        raise DeclarationError(
            "a softmax needs at least two symbols, with every initial value or none",
            key="parameters",
            value=len(softmax),
            valid="declare two or more softmax symbols; give all their inits or none",
            source=source,
        )
    if given:
        total = sympy.Add(*(x.value for x in given))
        slack = sum((x.rounding for x in given), Fraction(0))
        if abs(float(total - 1)) > max(float(slack), 1e-12):  # as weights start: to float
            raise DeclarationError(
                "softmax weights start summing to 1",
                key="parameters",
                value=str(total),
                valid="initial values of the softmax symbols that sum to 1",
                source=source,
            )


def initial_numbers(parameters: Mapping[sympy.Symbol, Parameter]) -> dict[sympy.Symbol, Number]:
    """The entry every declared symbol holds when training starts (a gate at its W = 0): the
    declared `init` as parsed (a decimal keeps its rounding), else the kind's exact default.
    This is what the order at initialisation substitutes."""
    softmax = [s for s, p in parameters.items() if p.kind == "softmax"]
    defaults = {
        "gate": sympy.Rational(1, 2),
        "tanh": sympy.Integer(0),
        "softmax": sympy.Rational(1, max(len(softmax), 1)),
    }
    return {
        s: p.init if p.init is not None else Number(defaults[p.kind], raw=str(defaults[p.kind]))
        for s, p in parameters.items()
    }


def initial_values(parameters: Mapping[sympy.Symbol, Parameter]) -> dict[sympy.Symbol, Any]:
    """The value of every declared symbol when training starts (`initial_numbers`' values)."""
    return {s: number.value for s, number in initial_numbers(parameters).items()}


def relations(parameters: Mapping[sympy.Symbol, Parameter]) -> dict[sympy.Symbol, sympy.Expr]:
    """Identities the parameters satisfy for every input: softmax weights sum to 1 (the last
    one is 1 minus the others). The proof substitutes them."""
    softmax = [s for s, p in parameters.items() if p.kind == "softmax"]
    if not softmax:
        return {}
    return {softmax[-1]: 1 - sympy.Add(*softmax[:-1])}


def raw_parameters(parameters: Mapping[sympy.Symbol, Parameter]) -> dict[str, Any] | None:
    """The table a declaration file holds (None when there are no parameters)."""
    if not parameters:
        return None
    out: dict[str, Any] = {}
    for symbol, p in parameters.items():
        out[str(symbol)] = p.kind if p.init is None else {"kind": p.kind, "init": p.init.raw}
    return out
