"""Linear multistep methods Σⱼ αⱼ y_{n+j} = h Σⱼ βⱼ f_{n+j}, j = 0..k, oldest first."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any, final

import sympy

from .base import CoefficientMethod, Layer
from .entries.numbers import (
    Number,
    is_zero,
    judged,
    parse_precision,
    parse_vector,
    raw_list,
    substitute,
)
from .parameters import Parameter, parse_parameters, raw_parameters


@final
class LinearMultistep(CoefficientMethod):
    """A k-step linear multistep method.

    **Arguments:**

    - `alpha`: α₀..α_k (oldest first); α_k ≠ 0 (it need not be 1).
    - `beta`: β₀..β_k; β_k = 0 makes the method explicit.
    - `zero_stable`: optional claim, checked by `bf.check` like `order`.
    - `parameters`: how a family's symbols train: `{"k": {"kind": "learned", "init": 1}}`
      makes each symbol a learned scalar of every layer of the stack.
    - `precision`: judge every non-zero αⱼ, βⱼ as known to ±precision at least (a positive
      number below 1, e.g. `1e-25`), as `ButcherTableau` does: the way in for coefficients
      printed to more digits than were computed.

    Entries follow the tableau rules (exact by default, symbols for families such as the
    ODE Transformer paper's learnable-k "Multistep" block).
    """

    family = "multistep"
    keys = ("alpha", "beta", "zero_stable", "parameters", "precision")
    required = ("alpha", "beta")
    alpha: tuple[sympy.Expr, ...]
    beta: tuple[sympy.Expr, ...]
    zero_stable: bool | None
    precision: Fraction | None  # the declared precision, if any

    def __init__(
        self,
        alpha: Sequence[Any],
        beta: Sequence[Any],
        *,
        name: str | None = None,
        order: int | None = None,
        zero_stable: bool | None = None,
        parameters: Any = None,
        precision: Any = None,
        title: str | None = None,
        reference: str | None = None,
        source: str | Path | None = None,
    ) -> None:
        self._set_common(name, order, title, reference, source)
        declared = parse_precision(precision, self.source)
        a = judged(parse_vector(alpha, "alpha", self.source), declared)
        b = judged(parse_vector(beta, "beta", self.source), declared)
        if len(a) < 2:
            raise self.error(
                "alpha needs at least two entries (k >= 1)",
                key="alpha",
                value=list(alpha),
                valid="e.g. alpha = [-1, 1] for a one-step method",
            )
        if len(b) != len(a):
            raise self.error(
                f"beta has {len(b)} entries but alpha has {len(a)}",
                key="beta",
                value=list(beta),
                valid=f"give exactly {len(a)} entries (j = 0..{len(a) - 1})",
            )
        if is_zero(a[-1]):
            raise self.error(
                "alpha_k (the last entry of alpha) must not be 0",
                key=f"alpha[{len(a) - 1}]",
                value=alpha[-1],
                valid="alpha and beta are listed oldest first (alpha_0 .. alpha_k), and the "
                "newest value y_{n+k} must appear: reverse lists printed newest first, drop "
                "trailing zeros from alpha and beta, or give a non-zero alpha_k",
            )
        if zero_stable is not None and not isinstance(zero_stable, bool):
            raise self.error(
                "zero_stable must be true or false", key="zero_stable", value=zero_stable
            )
        self._set(
            alpha=tuple(x.value for x in a),
            beta=tuple(x.value for x in b),
            zero_stable=zero_stable,
            precision=declared,
            rounding=max(x.rounding for x in (*a, *b)),
            entries={
                **{f"alpha[{j}]": x for j, x in enumerate(a)},
                **{f"beta[{j}]": x for j, x in enumerate(b)},
            },
        )
        declared_parameters = parse_parameters(
            parameters, self.symbols, kinds=("learned",), source=self.source
        )
        self._set(
            _table={
                "alpha": raw_list(a),
                "beta": raw_list(b),
                "zero_stable": zero_stable,
                "parameters": raw_parameters(declared_parameters),
                "precision": precision if declared is not None else None,
            },
            _parameters=declared_parameters,
            _beta_k_zero=is_zero(b[-1]),
        )

    _beta_k_zero: bool
    _parameters: dict[sympy.Symbol, Parameter]

    @property
    def steps(self) -> int:
        """k, the number of previous values the method combines."""
        return len(self.alpha) - 1

    @property
    def is_explicit(self) -> bool:
        return self._beta_k_zero

    @property
    def coefficient_values(self) -> tuple[sympy.Expr, ...]:
        return (*self.alpha, *self.beta)

    @property
    def parameters(self) -> dict[sympy.Symbol, Parameter]:
        return dict(self._parameters)

    def subs(self, values: Mapping[Any, Any]) -> LinearMultistep:
        """A member of a parametrised family: substitute values for the symbols (entries as in
        `ButcherTableau.subs`; the member keeps the name and the parameters of the symbols
        left, and a declared precision)."""
        mapping = self.member_values(values)

        def put(key: str) -> list[Number]:
            return [
                substitute(x, mapping, f"{key}[{j}]", self.source)
                for j, x in enumerate(self.entries_under(key))
            ]

        return LinearMultistep(
            put("alpha"),
            put("beta"),
            name=self.name,
            parameters=raw_parameters(
                {s: p for s, p in self._parameters.items() if s not in mapping}
            ),
            precision=self._table["precision"],
        )

    @property
    def layer(self) -> Layer:
        if not self.is_explicit:
            return Layer(
                False,
                "not compiled: implicit (beta_k != 0): f at the new state belongs to the next "
                "layer's field",
                key="beta",
                valid="an explicit multistep method (beta_k = 0)",
            )
        undeclared = sorted(str(s) for s in self.symbols - set(self._parameters))
        if undeclared:
            return Layer(
                True,
                "bf.compile_stack with coefficients='learned' and init={...}: the symbols "
                f"{undeclared} become per-layer parameters",
            )
        learned = (
            f"; {', '.join(map(str, self._parameters))} learned per layer" if self.symbols else ""
        )
        return Layer(
            True, "bf.compile_stack: a stack reusing every earlier state and field output" + learned
        )
