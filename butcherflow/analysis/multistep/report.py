"""Linear multistep methods: the report on order, error constant, root condition and A(α).

The method Σⱼ αⱼ y_{n+j} = h Σⱼ βⱼ f_{n+j} (j = 0..k) is analysed in three parts, each in its
own module: the order conditions C_q (`multistep/order.py`), zero-stability as the root condition
on ρ(ζ) = Σⱼ αⱼ ζ^j (`root_condition`, exact for rational coefficients), and A(α) and the real
stability interval read in float64 from the boundary locus z(θ) = ρ(e^{iθ}) / σ(e^{iθ})
(`boundary_locus`); for a numeric declaration the interval's end is then enclosed over every
method within the precision of its coefficients (`multistep/enclosure.py`), while A(α) stays the
reading of the method its digits spell. This module assembles them into a `MultistepReport` (the
stability rows through `multistep/stability.py`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, final

import numpy as np
import sympy

from ...errors import AnalysisError
from ...methods import LinearMultistep
from ...methods.entries.precision import RESOLUTION
from ...methods.parameters import initial_numbers
from ..budget import DEFAULT_TIME_BUDGET, NOT_DECIDED, Deadline
from ..enclosure.common import Enclosure, spread_text
from ..exact.root_condition import ZETA, Root
from ..report import (
    OPEN_ROW,
    Report,
    ball_text,
    precision_text,
    shown_open,
    tolerance_text,
    trained_order_text,
    undetermined_note,
)
from .boundary_locus import float_coefficients, locus
from .order import (
    MultistepOrder,
    condition,
    dahlquist_barrier,
    error_constant_radius,
    raising_notes,
    reversed_reading,
    search_multistep_order,
    vanishes,
)
from .stability import stability, zero_stability

SCALE = "(size of C_q's terms)"  # what a condition's resolution is relative to


@final
@dataclass(eq=False, repr=False)
class MultistepReport(Report):
    """What `analyse_multistep` proves about a linear multistep method.

    **Attributes:**

    - `method`: the `LinearMultistep` declaration.
    - `order`: the largest p with C_0 = … = C_p = 0; 0 when the method is inconsistent. For a
      family with symbols, the generic order (conditions that vanish identically).
    - `consistent`: C_0 = C_1 = 0; None when a numeric declaration's digits cannot decide it.
    - `error_constant`: the normalised error constant C_{p+1}/σ(1) (Hairer-Nørsett-Wanner's C,
      invariant when α and β are scaled together: Adams-Bashforth 2 gives 5/12, the trapezoid
      −1/12, BDFk −1/(k+1)); `None` when inconsistent, when σ(1) = 0 or when the search capped.
      For a numeric declaration it is the digits' own, and `error_constant_radius` bounds how
      far it lies from that of any method within the precision (None for exact declarations).
    - `zero_stable`: the root condition on ρ; `None` when ρ has symbols, or when a numeric
      declaration's precision cannot place a root on or off the unit circle.
    - `weakly_stable`: zero-stable with roots on the unit circle other than ζ = 1 (Milne-Simpson,
      leapfrog): their error components are never damped.
    - `order_upper`: a certain upper bound on the order (None when no condition was seen to
      fail); `undetermined`: conditions a numeric declaration's digits cannot decide;
      `stopped`: why the search ended without a failing condition ("max_order"), or None.
    - `rho`, `sigma`: ρ(ζ) = Σ αⱼ ζ^j and σ(ζ) = Σ βⱼ ζ^j as `sympy.Poly` in `ZETA`.
    - `roots`: the roots of ρ as (value, multiplicity, |value|), largest modulus first; rational
      roots exact (sympy), others `complex`; symbolic when ρ has symbols and sympy finds them all.
    - `a_alpha`: the A(α) angle in degrees (90 for A-stable methods); `None` when the negative
      real axis is not in the stability region (or, for a numeric declaration, not certainly
      for every method within the precision), or for families. A numeric declaration's angle
      is that of the method its digits spell (a note says so).
    - `real_interval`: the largest r with [−r, 0] in the stability region (`math.inf` when
      unbounded, `None` for families, and when a numeric declaration finds none beyond the
      reach of its rounding: the digits cannot tell a shorter one from none, or when its end
      cannot be enclosed over the methods within the precision).
    - `real_enclosure`: for a numeric declaration, (lo, hi) holding the end of every method
      within the precision with ρ(1) = 0 (`multistep/enclosure.py`; (inf, inf): unbounded for
      all; (0, x) where the digits read none: every method has a root outside the circle at
      z = −x; for an exact method that reads none, (0, x) likewise for the method itself);
      None when not enclosed (other exact declarations, undetermined, a "none" no ball
      certifies).
    - `explicit` (property): βₖ = 0.
    - `notes`: how each verdict was reached (tolerances, exactness), in words.
    - `out_of_time`: the time budget was spent before A(α) and the interval were read; those
      rows say `budget.NOT_DECIDED`.
    """

    method: LinearMultistep
    order: int
    order_upper: int | None
    consistent: bool | None
    error_constant: sympy.Expr | None
    error_constant_radius: float | None
    zero_stable: bool | None
    weakly_stable: bool
    rho: sympy.Poly
    sigma: sympy.Poly
    roots: list[Root]
    a_alpha: float | None
    real_interval: float | None
    undetermined: list[tuple[str, Any, float]]
    notes: list[str]
    stopped: str | None = None
    real_enclosure: Enclosure | None = None
    real_widened: bool = False
    out_of_time: bool = False

    @property
    def exact(self) -> bool:
        return not self.method.numeric

    @property
    def real_stability_interval(self) -> float | None:
        return self.real_interval

    @property
    def order_is_lower_bound(self) -> bool:
        return self.order_upper != self.order

    @property
    def explicit(self) -> bool:
        return self.method.is_explicit

    @property
    def claims(self) -> dict[str, tuple[Any, Any]]:
        claims = super().claims
        if self.method.zero_stable is not None:
            claims["zero_stable"] = (self.method.zero_stable, self.zero_stable)
        return claims

    def conditions(self, order: int) -> list[sympy.Expr]:
        """The exact conditions C_0..C_order (polynomials in the family's symbols, if any)."""
        return [condition(self.method.alpha, self.method.beta, q) for q in range(order + 1)]

    def boundary_locus(self, n: int = 512) -> np.ndarray:
        """z(θ) = ρ(e^{iθ})/σ(e^{iθ}) at θ = 2πi/n, i = 0..n−1.

        **Returns:** a complex array of shape `(n,)` (`inf`/`nan` where σ(e^{iθ}) = 0).
        """
        if self.method.symbols:
            names = ", ".join(sorted(map(str, self.method.symbols)))
            raise AnalysisError(f"{self.method.name}: no boundary locus for a family ({names})")
        rho_c, sigma_c = float_coefficients(self.method)
        return locus(rho_c, sigma_c, 2 * np.pi * np.arange(n) / n)

    @property
    def block_order_text(self) -> str:
        """For declared parameters: the order for every value, and at their initial values."""
        declared = self.method.parameters
        if not declared or self.method.symbols - set(declared):
            return str(self.order)
        numbers = initial_numbers(declared)  # a decimal init keeps its rounding in the member
        member = analyse_multistep(self.method.subs({str(s): n for s, n in numbers.items()}))
        return trained_order_text(
            self.order,
            self.method.symbols,
            member.order,
            {str(s): n.raw for s, n in numbers.items()},
            bool(member.undetermined),
        )

    def rows(self) -> list[tuple[str, Any]]:
        m = self.method
        return [
            ("steps", m.steps),
            ("explicit", self.explicit),
            ("order", f"{self.order}" + ("+" if self.order_is_lower_bound else "")),
            (
                "tolerance",
                tolerance_text(m.precision, m.rounding, None, SCALE) if m.numeric else None,
            ),
            ("undetermined", shown_open(self.undetermined) or None),
            ("consistent", "undetermined" if self.consistent is None else self.consistent),
            ("error constant C_{p+1}/σ(1)", self._error_constant_text()),
            ("zero-stable", self._zero_stability_text()),
            ("ρ(ζ)", self.rho.as_expr()),
            ("σ(ζ)", self.sigma.as_expr()),
            ("roots of ρ", [_show_root(*root) for root in self.roots]),
            ("A(α) angle (degrees)", NOT_DECIDED if self.out_of_time else self.a_alpha),
            ("real stability interval [-r, 0]: r", self._interval_text()),
        ]

    def _error_constant_text(self) -> Any:
        if self.error_constant is None or self.error_constant_radius is None:
            return self.error_constant
        return (
            f"{ball_text(self.error_constant, self.error_constant_radius)} (the digits' own; "
            "every method within the precision has it in that ball)"
        )

    def _interval_text(self) -> Any:
        if self.out_of_time:
            return NOT_DECIDED
        if self.real_interval is None and self.method.numeric and not self.method.symbols:
            return OPEN_ROW
        spread = spread_text(self.real_enclosure, self.method.numeric)
        if self.real_widened:  # the row itself says what the enclosure counted as stable
            spread += " (counting a root less than 1.5e-8 outside |ζ| = 1 as stable)"
        return f"{self.real_interval:.6g}{spread}" if spread else self.real_interval

    def _zero_stability_text(self) -> Any:
        if self.zero_stable and self.weakly_stable:
            return "yes, weakly (roots on |ζ| = 1 other than 1)"
        if self.zero_stable is None and not self.method.symbols:
            return OPEN_ROW  # the digits cannot place a root (a family's depends on it)
        return self.zero_stable

    def to_dict(self) -> dict[str, Any]:
        roots = [{"value": str(v), "multiplicity": m, "modulus": a} for v, m, a in self.roots]
        return {
            "steps": self.method.steps,
            "explicit": self.explicit,
            "numeric": self.method.numeric,
            "precision": None if self.method.precision is None else float(self.method.precision),
            "order": self.order,
            "consistent": self.consistent,
            "error_constant": self.error_constant,
            "error_constant_radius": self.error_constant_radius,
            "zero_stable": self.zero_stable,
            "weakly_stable": self.weakly_stable,
            "order_upper": self.order_upper,
            "undetermined": [
                {"condition": c, "residual": r, "bound": b} for c, r, b in self.undetermined
            ],
            "rho": self.rho.as_expr(),
            "sigma": self.sigma.as_expr(),
            "roots": roots,
            "a_alpha": self.a_alpha,
            "real_interval": "inf" if self.real_interval == math.inf else self.real_interval,
            "real_interval_enclosure": None
            if self.real_enclosure is None
            else ["inf" if x == math.inf else x for x in self.real_enclosure],
            "conditions": self.conditions(self.order + 1),
        }


def _show_root(value: Any, multiplicity: int, modulus: Any) -> str:
    if isinstance(value, complex):
        value = f"{value.real:.6g}{f'{value.imag:+.6g}i' if value.imag else ''}"
    times = f"×{multiplicity}, " if multiplicity > 1 else ""
    return f"{value} ({times}|ζ| = {modulus:.6g})" if isinstance(modulus, float) else f"{value}"


def _poly(coeffs: Sequence[sympy.Expr]) -> sympy.Poly:
    expr = sum((c * ZETA**j for j, c in enumerate(coeffs)), sympy.Integer(0))
    try:  # radicals get their algebraic field (QQ<√2>) rather than EX
        return sympy.Poly(expr, ZETA, extension=True)
    except (sympy.PolynomialError, NotImplementedError):
        return sympy.Poly(expr, ZETA)


def analyse_multistep(
    method: LinearMultistep, *, max_order: int | None = None, time_budget: float | None = None
) -> MultistepReport:
    """Prove the order, error constant and stability of a linear multistep method.

    **Arguments:**

    - `method`: the declaration.
    - `max_order`: stop the order search there (default 2k + 1: no k-step method has order above
      2k, so C_{2k+1} must fail).
    - `time_budget`: seconds the report may take (default `DEFAULT_TIME_BUDGET`): the k + 2
      linear conditions of a k-step method need none, and A(α) and the real interval (a float
      locus of 4097 angles and enclosures with a bisection budget of their own) are read only
      if it is not spent by then; otherwise they say `budget.NOT_DECIDED`.

    **Returns:** a `MultistepReport`.
    """
    deadline = Deadline.after(DEFAULT_TIME_BUDGET if time_budget is None else time_budget)
    k = method.steps
    limit = 2 * k + 1 if max_order is None else max_order
    if limit < 1:
        raise AnalysisError(f"max_order must be at least 1 (got {limit})")
    notes: list[str] = []
    rho, sigma = _poly(method.alpha), _poly(method.beta)
    zero_stable, roots, weakly = zero_stability(method, rho, notes)
    barrier = dahlquist_barrier(k, method.is_explicit) if zero_stable else 2 * k
    found = search_multistep_order(method, limit, barrier, max_order is not None)
    if method.numeric:
        notes.append(
            f"numeric declaration ({precision_text(method.precision, method.rounding)}): C_q "
            "is computed exactly from the digits and judged against the most the entries' "
            "precision can move it (C_q is linear in them): met when "
            f"that is below {float(RESOLUTION):.2g} of the size of C_q's terms, fails when "
            "|C_q| exceeds it, undetermined otherwise"
        )
    if found.undetermined:
        notes.append(
            undetermined_note(found.order, len(found.undetermined), found.upper).removesuffix(".")
            + (
                f" (Dahlquist's first barrier: a zero-stable {k}-step method has order ≤ {barrier})"
                if found.order + 1 > barrier
                else ""
            )
        )
    if weakly:
        notes.append(
            "zero-stable, but only weakly: ρ has roots on the unit circle other than ζ = 1, "
            "whose (parasitic) error components are never damped"
        )
    if flipped := reversed_reading(method, found, limit):
        notes.append(flipped)
    if method.symbols:
        notes.append("the order is the family's generic order (conditions that vanish identically)")
        notes += raising_notes(method, found, limit)
    if found.stopped == "max_order":
        notes.append(f"C_0..C_{limit} all vanish: the order is at least {limit} (search stopped)")
    error_constant, radius = _error_constant(method, found, notes)
    out_of_time = deadline.passed()
    a_alpha, interval, enclosure, widened = stability(method, found, out_of_time, deadline, notes)
    return MultistepReport(
        method=method,
        order=found.order,
        order_upper=found.upper,
        consistent=found.consistent,
        error_constant=error_constant,
        error_constant_radius=radius,
        zero_stable=zero_stable,
        weakly_stable=weakly,
        rho=rho,
        sigma=sigma,
        roots=roots,
        a_alpha=a_alpha,
        real_interval=interval,
        undetermined=[(f"C_{q}", j.residual, j.bound) for q, j in found.undetermined],
        notes=notes,
        stopped=found.stopped,
        real_enclosure=enclosure,
        real_widened=widened,
        out_of_time=out_of_time,
    )


def _error_constant(
    method: LinearMultistep, found: MultistepOrder, notes: list[str]
) -> tuple[sympy.Expr | None, float | None]:
    """The normalised error constant C_{p+1}/σ(1) (None where undefined or undetermined), and
    the radius of its ball for a numeric declaration."""
    error_constant, radius = None, None
    if found.consistent and found.upper == found.order:
        sigma_1 = sympy.expand(sum(method.beta, sympy.Integer(0)))
        if vanishes(sigma_1):
            notes.append("σ(1) = 0, so the normalised error constant C_{p+1}/σ(1) is undefined")
        else:
            error_constant = found.conditions[found.order + 1] / sigma_1
            if not error_constant.is_Rational:
                error_constant = sympy.simplify(error_constant)
            if method.numeric and not method.symbols:
                radius = error_constant_radius(method, found.order + 1, error_constant)
                if radius is None:
                    error_constant = None
                    notes.append(
                        "σ(1) is 0 within the precision: the normalised error constant "
                        "C_{p+1}/σ(1) is undetermined"
                    )
    return error_constant, radius
