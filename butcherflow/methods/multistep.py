"""Linear multistep methods Σⱼ αⱼ y_{n+j} = h Σⱼ βⱼ f_{n+j}, j = 0..k, oldest first."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any, final

import sympy

from .base import Method
from .numbers import Number, is_zero, parse_vector, raw_list


@final
class LinearMultistep(Method):
    """A k-step linear multistep method.

    **Arguments:**

    - `alpha`: α₀..α_k (oldest first); α_k ≠ 0 (it need not be 1).
    - `beta`: β₀..β_k; β_k = 0 makes the method explicit.
    - `zero_stable`: optional claim, checked by `bf.check` like `order`.

    Entries follow the tableau rules (exact by default, symbols for families such as the
    ODE Transformer paper's learnable-k "Multistep" block).
    """

    family = "multistep"
    alpha: tuple[sympy.Expr, ...]
    beta: tuple[sympy.Expr, ...]
    zero_stable: bool | None
    rounding: Fraction
    alpha_numbers: tuple[Number, ...]  # the entries as parsed, with their precision
    beta_numbers: tuple[Number, ...]

    def __init__(
        self,
        alpha: Sequence[Any],
        beta: Sequence[Any],
        *,
        name: str | None = None,
        order: int | None = None,
        zero_stable: bool | None = None,
        title: str | None = None,
        reference: str | None = None,
        source: str | Path | None = None,
    ) -> None:
        self._set_common(name, order, title, reference, source)
        a = parse_vector(alpha, "alpha", self.source)
        b = parse_vector(beta, "beta", self.source)
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
                valid="the newest value y_{n+k} must appear: drop trailing "
                "zeros from alpha and beta or give a non-zero alpha_k",
            )
        if zero_stable is not None and not isinstance(zero_stable, bool):
            raise self.error(
                "zero_stable must be true or false", key="zero_stable", value=zero_stable
            )
        self._set(
            alpha=tuple(x.value for x in a),
            beta=tuple(x.value for x in b),
            zero_stable=zero_stable,
            rounding=max(x.rounding for x in (*a, *b)),
            alpha_numbers=a,
            beta_numbers=b,
        )
        self._set(_table={"alpha": raw_list(a), "beta": raw_list(b), "zero_stable": zero_stable})
        self._set(_beta_k_zero=is_zero(b[-1]))

    _beta_k_zero: bool

    @property
    def steps(self) -> int:
        """k, the number of previous values the method combines."""
        return len(self.alpha) - 1

    @property
    def is_explicit(self) -> bool:
        return self._beta_k_zero

    @property
    def numeric(self) -> bool:
        return self.rounding > 0

    @property
    def symbols(self) -> set[sympy.Symbol]:
        found: set[sympy.Symbol] = set()
        for x in (*self.alpha, *self.beta):
            found |= x.free_symbols
        return found
