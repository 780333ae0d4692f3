"""Linear multistep methods Σⱼ αⱼ y_{n+j} = h Σⱼ βⱼ f_{n+j}, j = 0..k, oldest first."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from functools import cached_property
from pathlib import Path
from typing import Any, final

import sympy

from ..errors import DeclarationError
from .base import CoefficientMethod, Layer, check_flag
from .entries.arrays import Coefficients, NumberArray, vector
from .entries.numbers import is_zero
from .parameters import parse_parameters, raw_parameters


def _alpha(raw: Any, source: str | None, precision: Fraction | None) -> NumberArray:
    """α₀..α_k: at least two, α_k ≠ 0."""
    alpha = vector(raw, "alpha", source, precision=precision)
    if len(alpha) < 2:
        raise DeclarationError(
            "alpha needs at least two entries (k >= 1)",
            key="alpha",
            value=alpha.raw,
            valid="e.g. alpha = [-1, 1] for a one-step method",
            source=source,
        )
    if is_zero(alpha[-1]):
        raise DeclarationError(
            "alpha_k (the last entry of alpha) must not be 0",
            key=f"alpha[{len(alpha) - 1}]",
            value=raw[-1],
            valid="alpha and beta are listed oldest first (alpha_0 .. alpha_k), and the "
            "newest value y_{n+k} must appear: reverse lists printed newest first, drop "
            "trailing zeros from alpha and beta, or give a non-zero alpha_k",
            source=source,
        )
    return alpha


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
    numbers: Coefficients  # alpha, beta
    zero_stable: bool | None

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
        src, declared = self.source, self._set_precision(precision)
        a = _alpha(alpha, src, declared)
        k = len(a) - 1
        b = vector(
            beta, "beta", src, length=k + 1, precision=declared, what=f"entries (j = 0..{k})"
        )
        zero_stable = check_flag(zero_stable, "zero_stable", src, optional=True)
        self._set(numbers=Coefficients({"alpha": a, "beta": b}), zero_stable=zero_stable)
        kinds = ("learned",)
        self._set(_parameters=parse_parameters(parameters, self.symbols, kinds=kinds, source=src))

    def _declared(self) -> dict[str, Any]:
        return {
            **self.numbers.raw,
            "zero_stable": self.zero_stable,
            "parameters": raw_parameters(self._parameters),
            "precision": self._precision_raw,
        }

    @cached_property
    def alpha(self) -> tuple[sympy.Expr, ...]:
        return self.numbers.alpha.values

    @cached_property
    def beta(self) -> tuple[sympy.Expr, ...]:
        return self.numbers.beta.values

    @property
    def steps(self) -> int:
        """k, the number of previous values the method combines."""
        return len(self.numbers.alpha) - 1

    @cached_property
    def is_explicit(self) -> bool:
        return is_zero(self.numbers.beta[-1])

    def subs(self, values: Mapping[Any, Any]) -> LinearMultistep:
        """A member of a parametrised family: substitute values for the symbols (entries as in
        `ButcherTableau.subs`; the member keeps the name and the parameters of the symbols
        left, and a declared precision)."""
        mapping = self.member_values(values)
        member = self._member(mapping)
        return LinearMultistep(
            member.alpha,
            member.beta,
            name=self.name,
            parameters=raw_parameters(
                {s: p for s, p in self._parameters.items() if s not in mapping}
            ),
            precision=self._precision_raw,
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
