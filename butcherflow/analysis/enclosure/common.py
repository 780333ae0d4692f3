"""What every family's enclosure of a stability interval shares: the half-widths it tries, its
bisection budget, the `Enclosure` of an end, and how a report prints one."""

from __future__ import annotations

import math

import flint

DELTAS = tuple(10.0 ** (-k / 2) for k in range(24, 1, -1))  # relative half-widths, finest first
PIECES = 4000  # bisection budget for one certificate
Enclosure = tuple[float, float]  # (lo, hi) of an interval end r; (inf, inf): unbounded


def spread_text(enclosure: Enclosure | None, numeric: bool = True) -> str:
    """Where the end lies for every method within a numeric declaration's precision (for an
    exact one, `numeric=False`: where its own end lies), when that is wider than the six digits
    printed."""
    within = " within the precision" if numeric else ""
    if enclosure is None or enclosure[0] == enclosure[1] or same_ends(list(enclosure)):
        return ""
    return f" (end between {enclosure[0]:.6g} and {enclosure[1]:.6g}{within})"


def same_ends(ends: list[float]) -> bool:
    """Interval ends that agree to the six digits the report prints (inf and 0 exactly)."""
    return all(math.isclose(x, ends[0], rel_tol=1e-6) for x in ends)


def padded(coefficients: list[flint.arb], length: int) -> list[flint.arb]:
    """`coefficients` (lowest degree first) with zeros up to `length`."""
    return list(coefficients) + [flint.arb(0)] * (length - len(coefficients))
