"""The geometric rows of a Runge-Kutta report: symplecticity, symmetry, energy preservation,
SSP coefficient and internal stability, each with the proof beside it."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, final

from ...methods import ButcherTableau
from ...methods.precision import Verdict
from ..weights import entries_in_field
from .properties import (
    OrderVerdict,
    energy_order,
    reversal_certificate,
    symmetry_order,
    symplecticity_order,
)
from .series import tableau_series
from .tableau import InternalStability, internal_stability, ssp_coefficient, symplectic_matrix

# The highest tree order the report examines B-series conditions to (order 8 keeps every
# catalog tableau's rows within a second or two; `bf.bseries` goes further on request).
EXAMINED = 8


@final
@dataclass
class Geometry:
    """What a report says about a tableau's geometric properties (see the docs' concepts).

    - `symplectic`: True / False / None (undetermined or not examined), with `symplectic_why`.
    - `symplectic_order`: the order of symplecticity (None: ∞ or not examined), in `_text`.
    - `symmetric`: True / False / None, with `symmetric_why`.
    - `energy_text`: the order of energy preservation for Hamiltonian problems, in words.
    - `ssp`: the SSP coefficient in words (None for families).
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
    internal: InternalStability | None = None
    notes: list[str] = field(default_factory=list)

    def rows(self) -> list[tuple[str, Any]]:
        internal = self.internal
        amplification: Any = None
        if internal is not None:
            amplification = (
                internal.how
                if internal.amplification is None
                else f"{internal.amplification:.6g} over [−{internal.interval:.6g}, 0]"
            )
        return [
            ("symplectic", f"{_yes(self.symplectic)} ({self.symplectic_why})"),
            ("order of symplecticity", self.symplectic_order_text),
            ("symmetric", f"{_yes(self.symmetric)} ({self.symmetric_why})"),
            ("energy preservation order", self.energy_text),
            ("SSP coefficient", self.ssp),
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
            "internal_amplification": None if internal is None else internal.amplification,
            "internal_stability_polynomials": [] if internal is None else internal.polynomials,
        }


def _yes(value: bool | None) -> str:
    return "undetermined" if value is None else "yes" if value else "no"


def _order_text(found: OrderVerdict, order: int) -> str:
    if found.holds:
        return f"≥ {max(found.examined, order)} (every condition examined holds)"
    return f"{found.order} (fails at {found.order + 1}: {found.failing})"


def tableau_geometry(tableau: ButcherTableau, order: int, real_interval: float | None) -> Geometry:
    """The geometric rows of a tableau whose order is `order` (see `Geometry`).

    **Arguments:** `tableau`: the method; `order`: its proved order; `real_interval`: R with
    [−R, 0] its real stability interval (None when unknown).

    **Returns:** a `Geometry`.
    """
    out = Geometry()
    if tableau.symbols:
        out.symplectic_why = out.symmetric_why = "not examined for parametrised families"
        return out
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
    ssp = ssp_coefficient(tableau)
    out.ssp, out.ssp_value = ssp.text(), ssp.value
    out.internal = internal_stability(tableau, real_interval)
    if tableau.numeric:
        why = "a numeric tableau's B-series conditions are not judged in balls: give exact entries"
        out.symplectic_order_text = out.energy_text = f"not examined ({why})"
        out.symmetric_why = f"not examined ({why})"
        return out
    limit = min(max(order + 2, 4), EXAMINED)
    series = tableau_series(tableau, limit)
    if out.symplectic is not True:
        found = symplecticity_order(series)
        out.symplectic_order_text = _order_text(found, order)
        if not found.holds:
            out.symplectic = False
            out.symplectic_why += f"; its B-series fails at order {found.order + 1}"
        elif out.symplectic is False and not tableau.is_explicit:
            out.symplectic = None  # M ≠ 0 proves it only for an irreducible method
            out.symplectic_why += f"; its B-series conditions hold to order {found.examined}"
    _, A, b = entries_in_field(tableau)
    if reversal_certificate(A, b):
        out.symmetric = True
        out.symmetric_why = "a_{s+1−i,s+1−j} + a_ij = b_j and b_{s+1−i} = b_i"
    else:
        found = symmetry_order(series)
        out.symmetric = False if not found.holds else None
        out.symmetric_why = (
            f"a* ≠ a at order {found.order + 1}: {found.failing}"
            if not found.holds
            else f"a* = a to order {found.examined}; no certificate for all orders"
        )
    found = energy_order(series)
    out.energy_text = _order_text(found, order)
    if out.ssp_value == math.inf:
        out.notes.append("absolutely monotonic for every step size (SSP coefficient ∞).")
    return out
