"""Empirical convergence beside every proof: the global error at halving steps, and its slope.

The log-log slope of the global error against the step count must match the order `bf.check`
proves; the tests assert it for every catalog entry and the gallery plots it. Each family's
problem and its global error are in `global_error.py`.

Orders ≤ 4 run in float64; higher orders in mpmath at 60 digits, so that rounding does not flatten
the slope. The step counts keep every error far above the arithmetic's noise.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, final

import mpmath
import sympy

from ..methods import (
    AdditiveRungeKutta,
    ButcherTableau,
    ContinuousDynamics,
    GeneralLinear,
    LinearMultistep,
    Method,
    Splitting,
)
from .global_error import (
    FLOAT64,
    MP60,
    Arithmetic,
    additive_error,
    glm_error,
    lmm_error,
    rk_error,
    splitting_error,
)
from .report import Report

GENERIC = sympy.Rational(1, 3)  # the value every symbol of a parametrised family takes
# How far a measured slope may sit from the order it measures: three step counts approach the
# asymptotic slope to within a few tenths (the tests hold every catalog entry to it).
SLOPE_TOLERANCE = 0.3


def arithmetic_for(order: int) -> Arithmetic:
    """float64 up to order 4, mpmath at 60 digits beyond."""
    return FLOAT64 if order <= 4 else MP60


def steps_for(order: int) -> list[int]:
    """Three step counts N, 2N, 4N: fine enough to be asymptotic (high orders approach their
    slope slowly: Feagin 10 measures 10.4 at N = 32 → 64, 10.1 at 128 → 256), coarse enough to
    stay far above the noise of the arithmetic chosen for that order."""
    if order <= 1:
        return [64, 128, 256]
    if order == 2:
        return [32, 64, 128]
    if order <= 7:
        return [16, 32, 64]
    return [64, 128, 256]


def slopes(counts: Sequence[int], errors: Sequence[Any]) -> list[float]:
    """log(e_i / e_{i+1}) / log(N_{i+1} / N_i) for consecutive measurements."""
    return [
        math.log(float(errors[i]) / float(errors[i + 1])) / math.log(counts[i + 1] / counts[i])
        for i in range(len(errors) - 1)
    ]


# -- members of parametrised families ----------------------------------------------------------


def generic_member(method: Method) -> Method:
    """Every symbol replaced by 1/3 (methods without symbols are returned as they are)."""
    symbols = method.symbols
    return method.subs({str(s): GENERIC for s in symbols}) if symbols else method


def has_symbols(method: Method) -> bool:
    """A parametrised family (its convergence is measured on `generic_member`)."""
    return bool(method.symbols)


# -- the measurement ---------------------------------------------------------------------------


def measure(
    order: int, error: Callable[[int, Arithmetic], Any], *, coarser: int = 0, minimum: int = 2
) -> tuple[list[int], list[Any]]:
    """Errors at the step counts of `steps_for(order)`, preceded by up to `coarser` halvings of
    the first (N/2, N/4, ... down to `minimum` steps: more points for a plot, each cheaper).

    **Returns:** `(counts, errors)`, counts increasing.
    """
    ar = arithmetic_for(order)
    counts = steps_for(order)
    for _ in range(coarser):
        if counts[0] % 2 == 0 and counts[0] // 2 >= minimum:
            counts.insert(0, counts[0] // 2)
    with mpmath.workdps(ar.dps or 15):
        return counts, [error(n, ar) for n in counts]


@final
@dataclass(frozen=True)
class Convergence:
    """One measured convergence curve of a method.

    **Attributes:**

    - `label`: what was integrated (e.g. `"rk4"`, `"strang (euler sub-steps)"`).
    - `order`: the order the proof predicts for this curve.
    - `counts`: step counts N, increasing; `errors`: the global errors at t = 1 (floats).
    - `arithmetic`: `"float64"` or `"mpmath-60"`.
    """

    label: str
    order: int
    counts: tuple[int, ...]
    errors: tuple[float, ...]
    arithmetic: str

    @property
    def slope(self) -> float:
        """The measured order: the slope between the two finest step counts (nan when an
        error is zero or not finite)."""
        return self.slopes[-1]

    @property
    def slopes(self) -> list[float]:
        """The slope between each pair of consecutive step counts (nan where undefined)."""
        out = []
        for i in range(len(self.errors) - 1):
            a, b = self.errors[i], self.errors[i + 1]
            ok = a > 0 and b > 0 and math.isfinite(a) and math.isfinite(b)
            pair = slopes(self.counts[i : i + 2], (a, b))[0] if ok else math.nan
            out.append(pair)
        return out


def _curve(
    label: str,
    order: int,
    error: Callable[[int, Arithmetic], Any],
    coarser: int,
    minimum: int = 2,
) -> Convergence:
    counts, errors = measure(order, error, coarser=coarser, minimum=minimum)
    return Convergence(
        label, order, tuple(counts), tuple(float(e) for e in errors), arithmetic_for(order).name
    )


def convergence(method: Method, report: Report, *, coarser: int = 0) -> list[Convergence]:
    """The convergence curves that test a report's proved orders.

    **Arguments:**

    - `method`: a declaration without free symbols (use `generic_member` for a family).
    - `report`: `bf.check(method)`.
    - `coarser`: extra, coarser step counts before the three of `steps_for` (for plots).

    **Returns:** one curve for a Runge-Kutta method, a continuous declaration (its solver) or a
    zero-stable multistep method; none for a multistep method that is not zero-stable (it
    diverges however small h is); two for a splitting with a sub-step (exact sub-flows, then the
    sub-step), one with exact sub-flows only.
    """
    curves = CURVES.get(type(method))
    return [] if curves is None else curves(method, report, coarser)


def _rk_curves(method: ButcherTableau, report: Report, coarser: int) -> list[Convergence]:
    return [_curve(method.name, report.order, lambda n, ar: rk_error(method, n, ar), coarser)]


def _continuous_curves(
    method: ContinuousDynamics, report: Report, coarser: int
) -> list[Convergence]:
    solver = method.solver_tableau()
    label = f"{method.name} (solver {solver.name})"
    return [_curve(label, report.order, lambda n, ar: rk_error(solver, n, ar), coarser)]


def _multistep_curves(method: LinearMultistep, report: Report, coarser: int) -> list[Convergence]:
    if not report.zero_stable:
        return []
    # at least 4k steps, so that the plot does not show the exact starting values alone
    error = lambda n, ar: lmm_error(method, n, ar)  # noqa: E731
    return [_curve(method.name, report.order, error, coarser, 4 * method.steps)]


def _splitting_curves(method: Splitting, report: Report, coarser: int) -> list[Convergence]:
    curves = [
        _curve(
            f"{method.name} (exact sub-flows)",
            report.order,
            lambda n, ar: splitting_error(method, n, ar, exact_flows=True),
            coarser,
        )
    ]
    if method.substep is not None:
        effective = report.order if report.substep_order is None else report.substep_order
        curves.append(
            _curve(
                f"{method.name} ({method.substep_name} sub-steps)",
                effective,
                lambda n, ar: splitting_error(method, n, ar),
                coarser,
            )
        )
    return curves


def _general_linear_curves(
    method: GeneralLinear, report: Report, coarser: int
) -> list[Convergence]:
    # a method that is not zero-stable diverges however small h is; order 0 has no slope
    if report.zero_stable is not True or report.order < 1:
        return []
    label = f"{method.name} (exact starting values)"
    return [_curve(label, report.order, lambda n, ar: glm_error(method, n, ar), coarser)]


def _additive_curves(method: AdditiveRungeKutta, report: Report, coarser: int) -> list[Convergence]:
    error = lambda n, ar: additive_error(method, n, ar)  # noqa: E731
    return [_curve(f"{method.name} (y' = Σ L_X y)", report.order, error, coarser)]


# Each family's measurement (a family without one gets no curve). A new family adds its line.
CURVES: dict[type[Method], Callable[[Any, Report, int], list[Convergence]]] = {
    ButcherTableau: _rk_curves,
    ContinuousDynamics: _continuous_curves,
    LinearMultistep: _multistep_curves,
    Splitting: _splitting_curves,
    GeneralLinear: _general_linear_curves,
    AdditiveRungeKutta: _additive_curves,
}
