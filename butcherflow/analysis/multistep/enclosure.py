"""The real stability interval of a numeric linear multistep method, enclosed over every method
within the precision of its coefficients.

`multistep/boundary_locus.py` reads the interval [−r, 0] of the method the digits spell.
Neighbouring methods, as close to the digits as their rounding allows, may end elsewhere:
Adams-Bashforth 3 typed to three digits reads r = 0.545405, and moving β₁ by 4·10⁻³ (inside the
rounding of "-1.33") gives 0.544811. Here every αⱼ, βⱼ is an arb ball (the digits ± their rounding;
exact entries exact), and the end r is *enclosed* as in `runge_kutta/stability_enclosure.py`: every
such method is stable on [−r(1 − δ), 0) and has a root strictly outside the unit disc at −r(1 + δ),
for the smallest δ tried from 10⁻¹² up to 10⁻¹, each side then moved in by bisection. An unbounded r
is certified on [−1, 0) and, as σ + tρ with t = −1/z, on t in [0, 1] (z → −∞ included).
Where strict certificates fail, roots within 2⁻²⁶ (1.5·10⁻⁸) of the circle may count as on
it, as |R|² − 1 ≤ 1.5·10⁻⁸ does for RK: the same tests on π(Rζ), R = 1 + 2⁻²⁶ (the float
trapezoid's σ has its root at −1, and a neighbour with β₀ = ½ + 2⁻⁴⁵ ends near z = −10¹³).
A(α) is not enclosed here.

The Schur-Cohn steps in balls, the δ ladder and the Rouché argument next to z = 0 are
`enclosure/schur.py`'s, on π = ρ + xσ at z = −x (the coefficients αⱼ + xβⱼ): next to z = 0 it
covers every method with ρ(1) = 0 (C₀, which the digits meet; RK enclosures likewise keep the
conditions the digits meet), π being affine in x (f = (ζ − 1 + xc)ρ̃, c = σ(1)/ρ̃(1)).
"""

from __future__ import annotations

import flint

from ...methods import LinearMultistep
from ...methods.entries.precision import working_precision
from ..enclosure.common import Enclosure
from ..enclosure.schur import enclose_axis, unstable_at


def enclose_real_interval(
    method: LinearMultistep, end: float, rooted: bool
) -> tuple[Enclosure | None, bool, str]:
    """Enclose the end of the real stability interval over the methods within the precision.

    **Arguments:**

    - `method`: a numeric linear multistep method (no symbols).
    - `end`: the digits' r (0 < r ≤ inf).
    - `rooted`: the digits meet C₀ (ρ(1) = 0 within their precision): the methods enclosed
      are then those with ρ(1) = 0, as the module docstring says. Otherwise only a box whose
      every ρ has all roots strictly inside the disc (stable at z = 0 itself) is enclosed.

    **Returns:** `(enclosure, widened, why)`: (lo, hi) holding every method's end ((inf, inf):
    stable on the whole negative axis), or None and `why` it could not be certified;
    `widened`: roots less than 1.5e-8 outside |ζ| = 1 had to count as stable (strict failed).
    """
    with flint.ctx.workprec(working_precision(method.numbers.flat)):
        alpha, beta = method.numbers.alpha.balls(), method.numbers.beta.balls()
        family = [flint.arb_poly([a, b]) for a, b in zip(alpha, beta, strict=True)]
        unrooted = (
            None
            if rooted
            else "the digits do not meet C_0 = ρ(1) = 0 within their precision, and z = 0 is "
            "not certainly stable"
        )
        return enclose_axis(family, end, unrooted)


def unstable_below(method: LinearMultistep) -> float | None:
    """Where every method within the precision of a numeric declaration whose digits read no
    real stability interval is certainly unstable: the least x on a ladder from 10⁻¹² to 1 at
    which every π = ρ + xσ in the balls has a root strictly outside the disc (`schur` False),
    so that each one's interval ends in [0, x); None when none is certified. The digits' "none"
    is no verdict on its neighbours: Milne-Simpson-like ρ = (ζ − 1)(ζ² + 1) in floats reads 0,
    while moving α₀, α₁ by 2⁻⁴⁵ puts the roots ±i inside and that neighbour ends at 1.7e-13.
    An exact method's balls are points: the same ladder bounds its own end."""
    with flint.ctx.workprec(working_precision(method.numbers.flat)):
        alpha, beta = method.numbers.alpha.balls(), method.numbers.beta.balls()
        family = [flint.arb_poly([a, b]) for a, b in zip(alpha, beta, strict=True)]
        for m in range(24, -1, -1):
            if unstable_at(family, 10.0 ** (-m / 2)):
                return 10.0 ** (-m / 2)
    return None
