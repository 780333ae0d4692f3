"""The stability rows of a linear multistep method's report: zero-stability from the roots of ρ,
A(α) and the real stability interval from the boundary locus, enclosed for numeric declarations."""

from __future__ import annotations

import math

import sympy

from ...methods import LinearMultistep
from ..budget import Deadline
from ..enclosure.common import Enclosure
from ..exact.root_condition import ZETA, Root, root_condition
from ..report import digits_reading
from .boundary_locus import a_alpha_angle, float_coefficients, real_interval
from .enclosure import enclose_real_interval, unstable_below
from .order import MultistepOrder, condition, judge_condition


def zero_stability(
    method: LinearMultistep, rho: sympy.Poly, notes: list[str]
) -> tuple[bool | None, list[Root], bool]:
    """The root condition on ρ (None for a family: it depends on the parameters), ρ's roots,
    and whether the method is only weakly stable; the note saying how it was decided."""
    if rho.free_symbols - {ZETA}:
        factored = sympy.factor(rho.as_expr())
        notes.append(f"zero-stability depends on the parameters: ρ = {factored}")
        solved = sympy.roots(rho)
        if sum(solved.values()) == rho.degree():
            return None, [(v, m, sympy.Abs(v)) for v, m in solved.items()], False
        return None, [], False
    # ρ is α's alone: exact α decide the root condition exactly, whatever digits β carries
    zero_stable, roots, how, weakly = root_condition(rho, float(method.numbers.alpha.rounding))
    notes.append(how)
    return zero_stable, roots, weakly


def stability(
    method: LinearMultistep,
    found: MultistepOrder,
    out_of_time: bool,
    deadline: Deadline,
    notes: list[str],
) -> tuple[float | None, float | None, Enclosure | None, bool]:
    """A(α), the real stability interval, its enclosure for a numeric declaration and whether
    it was widened: float64 readings of the boundary locus, checked by root tests."""
    if method.symbols or out_of_time:
        symbols = "A(α) and the stability interval need numeric coefficients"
        notes.append(symbols if method.symbols else deadline.note)
        return None, None, None, False
    enclosure: Enclosure | None = None
    widened = False
    rho_c, sigma_c = float_coefficients(method)
    # Near z = 0 the locus is noise: float64 cancellation, or the rounding of a numeric
    # declaration, which moves z(θ) by δ ≈ (k+1)·rounding/|σ(1)| there. A crossing of the
    # real axis moves by about δ, so the interval ignores crossings within 10δ; the angle
    # ignores points within 1000δ, where that tilts it by under 0.06°.
    tiny, sigma_1 = 1e-6, abs(float(sum(method.beta, sympy.Integer(0))))
    noise = (
        (method.steps + 1) * float(method.rounding) / sigma_1 if method.numeric and sigma_1 else 0.0
    )
    # Dahlquist's second barrier: an A-stable multistep method has order ≤ 2, so above
    # order 2 a reading within float noise of 90° is not rounded up to A-stability.
    angle = max(tiny, 1000 * noise)
    a_alpha: float | None = a_alpha_angle(rho_c, sigma_c, angle, snap=found.order <= 2)
    reach = max(tiny, 10 * noise)
    interval: float | None
    interval, skipped = real_interval(rho_c, sigma_c, reach)
    if method.numeric:
        # An end that the digits' own method reads is judged by its enclosure over the
        # methods within the precision (`_enclosed`), not by the reach of the rounding.
        read, _ = real_interval(rho_c, sigma_c, tiny)
        if read > 0:
            interval, skipped, reach = read, False, tiny
    if interval != math.inf:
        a_alpha = None  # A(α) for any α needs the whole negative real axis in the region
    if skipped or (interval == 0.0 and 10 * noise > tiny):
        # "none", or an end beyond a crossing the rounding may move, claims what the digits
        # cannot tell
        interval, a_alpha = None, None
        notes.append(
            "real stability interval undetermined: the boundary locus "
            + ("crosses the real axis" if skipped else "finds no interval beyond")
            + f" within {reach:.3g} of z = 0, the reach of the digits' rounding there, so "
            "they cannot tell where the interval ends"
        )
    notes.append(
        "A(α) and the real stability interval are float64 readings of the boundary locus "
        f"(4097 angles on [0, π], refined; points within {max(tiny, 1000 * noise):.3g} of 0 "
        f"ignored for the angle, {reach:.3g} for the interval), checked by "
        "root tests in the region"
    )
    if method.numeric:
        interval, a_alpha, enclosure, widened = _enclosed(method, interval, a_alpha, notes)
    elif interval == 0.0:
        enclosure = _exact_none(method, tiny, notes)
    return a_alpha, interval, enclosure, widened


def _exact_none(method: LinearMultistep, tiny: float, notes: list[str]) -> Enclosure | None:
    """An exact method whose float64 locus reads no interval: the locus ignores crossings within
    `tiny` of 0, so an end below it is not seen; bounded above where Schur steps in arb certify a
    root strictly outside the circle (`unstable_below`). Returns `(0, x)` or None."""
    above = unstable_below(method)
    if above is None:  # e.g. leapfrog: |π(0)| = |lead| for every z, Schur cannot decide
        notes.append(
            f"real stability interval: the float64 locus reads none, but it ignores crossings "
            f"within {tiny:.2g} of z = 0 and Schur steps cannot certify instability there, so "
            f"an end below {tiny:.2g} would not be seen"
        )
        return None
    notes.append(
        f"real stability interval: the float64 locus reads none (it ignores crossings within "
        f"{tiny:.2g} of z = 0); Schur steps in arb balls find a root strictly outside |ζ| = 1 at "
        f"z = -{above:.2g}, so the interval ends in [0, {above:.2g}) (`multistep/enclosure.py`)"
    )
    return (0.0, above)


def _enclosed(
    method: LinearMultistep, interval: float | None, a_alpha: float | None, notes: list[str]
) -> tuple[float | None, float | None, Enclosure | None, bool]:
    """A numeric declaration's interval end enclosed over the methods within its precision
    (`multistep/enclosure.py`), or undetermined where that fails; a "none" is bounded above by a
    point where every method is certainly unstable (`unstable_below`), else it stays, with
    A(α), a reading of the digits' method (notes say so).

    **Returns:** `(interval, a_alpha, enclosure, widened)`, the first two None when
    undetermined; `widened`: the enclosure counted roots less than 1.5e-8 outside the circle.
    """
    rounding = float(method.rounding)
    found: Enclosure | None = None
    widened = False
    if interval == 0:
        above = unstable_below(method)
        if above is None:  # e.g. leapfrog: |π(0)| = |lead| for every z, Schur cannot decide
            notes.append(f"real stability interval: {digits_reading(rounding)}")
        else:
            found = (0.0, above)
            notes.append(
                "real stability interval: the digits' method reads none; every method within "
                f"the precision has a root strictly outside |ζ| = 1 at z = -{above:.2g}, so each "
                f"one's ends in [0, {above:.2g}) (arb balls of the coefficients, "
                "`multistep/enclosure.py`)"
            )
    elif interval is not None:
        met = judge_condition(method, 0, condition(method.alpha, method.beta, 0)).met
        found, widened, why = enclose_real_interval(method, float(interval), met)
        if found is None:
            notes.append(
                f"real stability interval undetermined: {why} (the digits' method reads "
                f"{interval:.6g}; arb balls of the coefficients, `multistep/enclosure.py`)"
            )
            interval, a_alpha = None, None
        else:
            rooted = met and method.numbers.alpha.rounding > 0
            shown = (
                "the whole negative axis"
                if found[1] == math.inf
                else f"an end in [{found[0]:.6g}, {found[1]:.6g}]"
            )
            notes.append(
                "real stability interval enclosed over every method within the precision of "
                "the coefficients"
                + (" with ρ(1) = 0 (C_0, which the digits meet)" if rooted else "")
                + f": {shown} for each"
                + (
                    ", counting a root less than 1.5e-8 outside |ζ| = 1 as stable"
                    if widened
                    else ""
                )
                + " (Schur-Cohn steps in arb balls on pieces of the axis, Rouché's theorem next "
                "to z = 0; `multistep/enclosure.py`)"
            )
    if a_alpha is not None:
        notes.append(f"A(α): {digits_reading(rounding, 'A(α) angle', 'it')}")
    return interval, a_alpha, found, widened
