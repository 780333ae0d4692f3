"""The geometric rows of a Runge-Kutta report: symplecticity, symmetry, energy preservation,
SSP coefficient and internal stability, each with the proof beside it."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, final

import flint

from ...errors import AnalysisError
from ...methods import ButcherTableau, GeneralLinear, LinearMultistep, Method, Splitting, catalog
from ...methods.entries.precision import Verdict
from ..budget import DEFAULT_TIME_BUDGET, NOT_DECIDED, Deadline, OutOfTime
from ..exact.weights import entries_in_field
from ..general_linear.symplectic import g_symplectic
from ..multistep.symplectic import multistep_symplectic
from ..runge_kutta.internal_stability import InternalStability, internal_stability
from ..runge_kutta.monotonicity import ssp_coefficient, threshold_factor
from ..runge_kutta.order import Conditions, order_bound
from .properties import (
    OrderVerdict,
    energy_order,
    reversal_certificate,
    symmetry_order,
    symplecticity_order,
)
from .series import BSeries, tableau_ball_series, tableau_series
from .splitting_geometry import splitting_symplectic
from .symplectic_matrix import symplectic_matrix

# The highest tree order the report examines B-series conditions to (order 8 keeps every
# catalog tableau's rows within a second or two; `bf.bseries` goes further on request).
EXAMINED = 8
# A symmetric method has R(z)·R(−z) = 1, which no polynomial R of degree ≥ 1 satisfies
EXPLICIT_NOT_SYMMETRIC = "an explicit method never is: its R(z) is a polynomial, R(z)R(−z) ≠ 1"
REVERSAL = "a_{s+1−i,s+1−j} + a_ij = b_j and b_{s+1−i} = b_i"


@final
@dataclass
class Geometry:
    """What a report says about a tableau's geometric properties (see the docs' concepts).

    - `symplectic`: True / False / None (undetermined or not examined), with `symplectic_why`.
    - `symplectic_order`: the order of symplecticity (None: ∞ or not examined), in `_text`.
    - `symmetric`: True / False / None, with `symmetric_why`.
    - `energy_text`: the order of energy preservation for Hamiltonian problems, in words.
    - `ssp`: the SSP coefficient in words (None for families).
    - `threshold`: the threshold factor (absolute monotonicity of R(z) alone) in words.
    - `internal`: internal stability (None for families).
    """

    symplectic: bool | None = None
    symplectic_why: str = "not examined"
    symplectic_order_text: str = "—"
    symmetric: bool | None = None
    symmetric_why: str = "not examined"
    energy_text: str = "—"
    ssp: str | None = None
    ssp_value: float | None = None
    threshold: str | None = None
    threshold_value: float | None = None
    internal: InternalStability | None = None
    notes: list[str] = field(default_factory=list)

    def rows(self) -> list[tuple[str, Any]]:
        amplification = None if self.internal is None else self.internal.text()
        return [
            ("symplectic", f"{_yes(self.symplectic)} ({self.symplectic_why})"),
            ("order of symplecticity", self.symplectic_order_text),
            ("symmetric", f"{_yes(self.symmetric)} ({self.symmetric_why})"),
            ("energy preservation order", self.energy_text),
            ("SSP coefficient", self.ssp),
            ("threshold factor (R(z) alone)", self.threshold),
            ("internal amplification", amplification),
        ]

    def to_dict(self) -> dict[str, Any]:
        internal = self.internal
        return {
            "symplectic": self.symplectic,
            "symplectic_why": self.symplectic_why,
            "symplecticity_order": self.symplectic_order_text,
            "symmetric": self.symmetric,
            "symmetric_why": self.symmetric_why,
            "energy_preservation_order": self.energy_text,
            "ssp_coefficient": self.ssp_value,
            "threshold_factor": self.threshold_value,
            "internal_amplification": None if internal is None else internal.amplification,
            "internal_amplification_text": None if internal is None else internal.text(),
            "internal_stability_polynomials": [] if internal is None else internal.polynomials,
        }


def _yes(value: bool | None) -> str:
    return "undetermined" if value is None else "yes" if value else "no"


def _order_text(found: OrderVerdict, order: int) -> str:
    if found.holds:
        return f"≥ {max(found.examined, order)} (every condition examined holds)"
    if found.undetermined:
        return (
            f"{found.order}+ (undetermined at {found.order + 1} at this precision: {found.failing})"
        )
    return f"{found.order} (fails at {found.order + 1}: {found.failing})"


def tableau_geometry(
    tableau: ButcherTableau, order: int, real_interval: float | None, deadline: Deadline
) -> Geometry:
    """The geometric rows of a tableau whose order is `order` (see `Geometry`), within the
    report's time budget: rows not reached before `deadline` say `NOT_DECIDED`.

    **Arguments:** `tableau`: the method; `order`: its proved order; `real_interval`: R with
    [−R, 0] its real stability interval (None when unknown); `deadline`: the report's.

    **Returns:** a `Geometry`.
    """
    out = Geometry()
    try:
        _decide_geometry(out, tableau, order, real_interval, deadline)
    except OutOfTime:
        _not_decided(out)
        out.notes.append(deadline.note)
    return out


def _not_decided(out: Geometry) -> None:
    """The rows still at their defaults (`Geometry`'s) say that the budget ran out before them."""
    rows = ("symplectic_why", "symplectic_order_text", "symmetric_why", "energy_text")
    for row in (*rows, "ssp", "threshold"):
        if getattr(out, row) == getattr(Geometry, row):
            setattr(out, row, NOT_DECIDED)


def _decide_geometry(
    out: Geometry,
    tableau: ButcherTableau,
    order: int,
    real_interval: float | None,
    deadline: Deadline,
) -> None:
    """Fill `out` row by row, checking `deadline` between rows (see `tableau_geometry`)."""
    if tableau.symbols:
        out.symplectic_why = out.symmetric_why = "not examined for parametrised families"
        return
    _matrix_rows(out, tableau)
    deadline.check()
    ssp = ssp_coefficient(tableau, deadline)
    out.ssp, out.ssp_value = ssp.text(), ssp.value
    deadline.check()
    threshold = threshold_factor(tableau, deadline)
    if threshold is None:
        out.threshold = "not examined for implicit methods (R(z) is rational)"
    else:
        out.threshold, out.threshold_value = threshold.text(), threshold.value
    deadline.check()
    out.internal = internal_stability(tableau, real_interval, deadline)
    deadline.check()
    examined = _examined(tableau, order, out)
    if examined is None:
        _certified_symmetry(out, tableau, order)
        return
    series, digits = examined
    with flint.ctx.workprec(series.domain.prec if digits is not None else flint.ctx.prec):
        _series_symplecticity(out, tableau, order, series, digits)
        deadline.check()
        _series_symmetry(out, tableau, series, digits)
        deadline.check()
        out.energy_text = _order_text(energy_order(series, digits), order)
    if digits is None and out.ssp_value == math.inf:
        out.notes.append("absolutely monotonic for every step size (SSP coefficient ∞).")


def _matrix_rows(out: Geometry, tableau: ButcherTableau) -> None:
    """The verdict of M = BA + AᵀB − bbᵀ = 0 (exact, or within the precision of the entries)."""
    matrix = symplectic_matrix(tableau)
    if matrix.verdict is Verdict.MET:
        out.symplectic = True
        out.symplectic_why = "M = BA + AᵀB − bbᵀ = 0" + (
            f" within the precision of the entries (±{matrix.bound:.2g})" if tableau.numeric else ""
        )
        out.symplectic_order_text = "∞ (M = 0)"
    elif matrix.verdict is Verdict.UNDETERMINED:
        out.symplectic_why = f"M = 0 is undetermined at this precision ({matrix.entry})"
    else:
        out.symplectic = False
        out.symplectic_why = f"M ≠ 0: {matrix.entry}"
        if tableau.is_explicit:
            out.symplectic_why += "; an explicit method never is (Mᵢᵢ = −bᵢ²)"


def _examined(
    tableau: ButcherTableau, order: int, out: Geometry
) -> tuple[BSeries, BSeries | None] | None:
    """The B-series the rows examine, to two orders beyond `order` (at least 4, at most
    `EXAMINED`): exact, or for a numeric tableau in balls with its digits' own series beside
    it (a zero residual of the digits is met). None when that limit is not above `order`:
    every condition up to the order holds for any method of that order, and the rows say so."""
    limit = min(max(order + 2, 4), EXAMINED)
    if limit <= order:
        beyond = f"≥ {order} (its order; conditions beyond order {EXAMINED} are not examined)"
        out.energy_text = beyond
        if out.symplectic is not True:
            out.symplectic_order_text = beyond
        return None
    if tableau.numeric:
        return tableau_ball_series(tableau, limit), tableau_series(tableau, limit)
    return tableau_series(tableau, limit), None


def _series_symplecticity(
    out: Geometry, tableau: ButcherTableau, order: int, series: BSeries, digits: BSeries | None
) -> None:
    """The order of symplecticity from the series; it decides the verdict that M leaves open
    (a failing condition), never gaining the property where balls cannot decide it."""
    if out.symplectic is True:
        return
    found = symplecticity_order(series, digits)
    out.symplectic_order_text = _order_text(found, order)
    if digits is not None:
        if found.fails:
            out.symplectic = False
        return
    if not found.holds:
        out.symplectic = False
        out.symplectic_why += f"; its B-series fails at order {found.order + 1}"
    elif out.symplectic is False and not tableau.is_explicit:
        out.symplectic = None  # M ≠ 0 proves it only for an irreducible method
        out.symplectic_why += f"; its B-series conditions hold to order {found.examined}"


def _certified_symmetry(out: Geometry, tableau: ButcherTableau, order: int) -> None:
    """Symmetry beyond the examined orders: explicit methods never are; the certificate."""
    _, A, b = entries_in_field(tableau)
    if tableau.is_explicit and order >= 1:
        out.symmetric, out.symmetric_why = False, EXPLICIT_NOT_SYMMETRIC
    elif not tableau.numeric and reversal_certificate(A, b):
        out.symmetric = True
        out.symmetric_why = REVERSAL
    else:
        out.symmetric_why = f"a* = a to order ≥ {order}; no certificate for all orders"


def _series_symmetry(
    out: Geometry, tableau: ButcherTableau, series: BSeries, digits: BSeries | None
) -> None:
    """Symmetry: the certificate (exact tableaux), else a* = a on the series."""
    if digits is None:
        _, A, b = entries_in_field(tableau)
        if reversal_certificate(A, b):
            out.symmetric, out.symmetric_why = True, REVERSAL
            return
    found = symmetry_order(series, digits)
    if digits is not None:
        out.symmetric = False if found.fails else None
        out.symmetric_why = (
            found.text("a* = a")
            if not found.holds
            else f"a* = a to order {found.examined} within the precision; no certificate"
        )
        return
    out.symmetric = False if not found.holds else None
    out.symmetric_why = (
        f"a* ≠ a at order {found.order + 1}: {found.failing}"
        if not found.holds
        else f"a* = a to order {found.examined}; no certificate for all orders"
    )


def tableau_symplectic(tableau: ButcherTableau, deadline: Deadline) -> tuple[bool | None, str]:
    """The symplectic row of the tableau's report (`bf.check`), computed alone: the M = 0 test,
    then its B-series conditions to two orders beyond its proved order.

    **Arguments:** `tableau`: the method; `deadline`: past it the verdict says so.

    **Returns:** `(True / False / None, why)`.
    """
    out = Geometry()
    if tableau.symbols:
        return None, "not examined for parametrised families"
    try:
        found = Conditions(tableau).search(order_bound(tableau), deadline)
        if found.stopped == "time budget":
            return None, f"{NOT_DECIDED} (the order proof it examines beyond)"
        _matrix_rows(out, tableau)
        deadline.check()
        examined = _examined(tableau, found.order, out)
        if examined is not None:
            series, digits = examined
            with flint.ctx.workprec(series.domain.prec if digits is not None else flint.ctx.prec):
                _series_symplecticity(out, tableau, found.order, series, digits)
    except OutOfTime:
        return None, NOT_DECIDED
    return out.symplectic, out.symplectic_why


def partitioned_symplectic(first: ButcherTableau, second: ButcherTableau) -> tuple[bool, str]:
    """Whether the partitioned Runge-Kutta method with tableau `first` (a, b) for one part and
    `second` (â, b̂) for the other is symplectic: b = b̂ and b_i â_ij + b̂_j a_ji = b_i b̂_j
    (Sun 1993, Suris; Hairer, Lubich and Wanner, Theorem VI.4.6), decided exactly.

    **Arguments:** `first`, `second`: exact tableaux with the same number of stages.

    **Returns:** `(symplectic, why)`.
    """
    if first.stages != second.stages:
        raise AnalysisError(
            f"partitioned pair: {first.name} has {first.stages} stages and {second.name} "
            f"{second.stages}; the pair shares its stages"
        )
    if first.numeric or second.numeric or first.symbols or second.symbols:
        raise AnalysisError("partitioned pair: exact tableaux without symbols are decided here")
    K1, A, b = entries_in_field(first)
    K2, A2, b2 = entries_in_field(second)
    K = K1.unify(K2)
    A = [[K.convert_from(x, K1) for x in row] for row in A]
    b = [K.convert_from(x, K1) for x in b]
    A2 = [[K.convert_from(x, K2) for x in row] for row in A2]
    b2 = [K.convert_from(x, K2) for x in b2]
    s = first.stages
    for i in range(s):
        if b[i] != b2[i]:
            return False, f"b[{i}] = {K.to_sympy(b[i])} ≠ b̂[{i}] = {K.to_sympy(b2[i])}"
    for i in range(s):
        for j in range(s):
            m = b[i] * A2[i][j] + b2[j] * A[j][i] - b[i] * b2[j]
            if m != K.zero:
                return False, f"b_{i} â_{i}{j} + b̂_{j} a_{j}{i} − b_{i} b̂_{j} = {K.to_sympy(m)}"
    return True, "b = b̂ and b_i â_ij + b̂_j a_ji = b_i b̂_j for every i, j"


def _general_linear(method: GeneralLinear, deadline: Deadline) -> tuple[bool | None, str]:
    try:
        verdict = g_symplectic(method, deadline)
    except OutOfTime:
        return None, f"G-symplecticity {NOT_DECIDED}"
    return verdict.holds, f"G-symplectic: {verdict.why}"


# Each family's symplecticity verdict, called as verdict(method, deadline) -> (True / False /
# None, why). A family without one is answered by `symplectic` with what to ask instead.
SYMPLECTIC: dict[type[Method], Callable[[Any, Deadline], tuple[bool | None, str]]] = {
    ButcherTableau: tableau_symplectic,
    Splitting: lambda method, deadline: splitting_symplectic(method, deadline=deadline),
    GeneralLinear: _general_linear,
    LinearMultistep: multistep_symplectic,
}


def symplectic(
    method: Method | str, time_budget: float = DEFAULT_TIME_BUDGET
) -> tuple[bool | None, str]:
    """Whether a declaration is symplectic, with the proof in words.

    **Arguments:** `method`: a declaration or catalog name: a Runge-Kutta tableau (the M = 0
    test and its B-series conditions beyond its proved order: the row `bf.check` reports), a
    splitting (a composition of sub-steps), a general linear method (its G-symplecticity: a
    symmetric nonsingular G and a diagonal D with G = VᵀGV, DU = BᵀGV and DA + AᵀD = BᵀGB,
    `general_linear/symplectic.py`) or a linear multistep method (G-symplecticity on its k
    values, and its one-leg counterpart's, `multistep/symplectic.py`); `time_budget`: seconds
    it may take (past it, the verdict says it was not decided).

    **Returns:** `(True / False / None for undetermined, why)`; a family for which symplecticity
    is not decided here raises `AnalysisError` saying so.
    """
    resolved = catalog.resolve(method)
    verdict = SYMPLECTIC.get(type(resolved))
    if verdict is None:
        raise AnalysisError(
            f"{resolved.name}: symplecticity is decided here for Runge-Kutta tableaux, "
            "partitioned pairs, splittings, linear multistep and general linear methods "
            f"(G-symplecticity), not for a {resolved.family} declaration"
        )
    return verdict(resolved, Deadline.after(time_budget))
