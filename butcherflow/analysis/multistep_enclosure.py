"""The real stability interval of a numeric linear multistep method, enclosed over every method
within the precision of its coefficients.

`boundary_locus.py` reads the interval [−r, 0] of the method the digits spell. Neighbouring
methods, as close to the digits as their rounding allows, may end elsewhere: Adams-Bashforth 3
typed to three digits reads r = 0.545405, and moving β₁ by 4·10⁻³ (inside the rounding of
"-1.33") gives 0.544811. Here every αⱼ, βⱼ is an arb ball (the digits ± their rounding; exact
entries exact), and the end r is *enclosed* as in `stability_enclosure.py`: every such method is
stable on [−r(1 − δ), 0) and has a root strictly outside the unit disc at −r(1 + δ), for the
smallest δ tried from 10⁻¹² up to 10⁻¹, each side then moved in by bisection. An unbounded r
is certified on [−1, 0) and, as σ + tρ with t = −1/z, on t in [0, 1] (z → −∞ included).
Where strict certificates fail, roots within 2⁻²⁶ (1.5·10⁻⁸) of the circle may count as on
it, as |R|² − 1 ≤ 1.5·10⁻⁸ does for RK: the same tests on π(Rζ), R = 1 + 2⁻²⁶ (the float
trapezoid's σ has its root at −1, and a neighbour with β₀ = ½ + 2⁻⁴⁵ ends near z = −10¹³).
A(α) is not enclosed here.

**Stability at a point, for every method in a box** (`schur`). The Schur transform of p of
degree n, Tp(x) = (p(x) − k p*(x))/x with p*(x) = xⁿp(1/x) and k = p₀/pₙ, has degree n − 1.
(i) If |p₀| < |pₙ|, p has all its roots in the open disc iff Tp has: on |x| = 1, |k p*| =
|k||p| < |p| wherever p ≠ 0, so by Rouché x·Tp has as many roots inside as p, and a root of p on
the circle is one of Tp. Every step certifying |p₀| < |pₙ| (the balls' bounds) down to a
constant therefore proves all roots strictly inside. (ii) If p has every root in the *closed*
disc (and degree n), then p(sx), s > 1, has every root in the open one, so each step of its
fraction-free chain (pₙp − p₀p*)/x has |lead| > |constant|; these are polynomials in the
coefficients, and s → 1 gives |lead| ≥ |constant| for p itself. The normalised chain is the
fraction-free one times nonzero factors while the steps are certified as in (i), so a step
certifying |p₀| > |pₙ| after such steps proves a root strictly *outside* the disc (or, at the
first step, αₖ − zβₖ = 0: a root at infinity), unstable whatever the circle holds. The ball of
each coefficient αⱼ − zβⱼ is taken independently (a superset of the box). On a piece of the
axis the chain runs in mean-value form (`_schur`): at the piece's midpoint, plus its derivative
in z over the piece times the half-width (leads certified nonzero on the piece keep each
step's coefficients smooth there), which narrows as the piece's square, not its width.

**Near z = 0** the root ζ = 1 of ρ sits on the circle and no ball test can decide. For every
method with ρ(1) = 0 (C₀, which the digits meet; RK enclosures likewise keep the conditions the
digits meet), ρ = (ζ − 1)ρ̃ with ρ̃ⱼ = Σ_{i>j} αᵢ, and with c = σ(1)/ρ̃(1), cρ̃ − σ vanishes at 1:
cρ̃ − σ = (ζ − 1)h. Compare π = ρ − zσ with f = (ζ − 1 − zc)ρ̃: π − f = z(ζ − 1)h. On |ζ| = 1,
with d = |ζ − 1|, |ζ − 1 − zc|² = d²(1 − |z|c) + z²c² > d²/2 when 0 < |z|c ≤ 1/2, so
|f| > d·m/√2 with m = min |ρ̃| on the circle, while |π − f| ≤ |z|·d·H with H = Σ|hⱼ| (at ζ = 1,
π − f = 0 < |f|). For z < 0 with |z| ≤ min(1/(2c), m/(√2H)), Rouché gives π as many roots
inside as f: k, all of them (1 + zc ∈ [½, 1), and ρ̃'s, certified strictly inside by (i)).
"""

from __future__ import annotations

import math

import flint

from ..methods import LinearMultistep
from ..methods.balls import ball
from ..methods.precision import RESOLUTION, working_precision
from .stability_enclosure import DELTAS, PIECES, Enclosure

Balls = list[flint.arb]  # coefficients, lowest power first
_ARCS = 64  # arcs of [0, π] on which min |ρ̃| is bounded first (split where they do not do)
# A root within the resolution of the circle counts as on it where strict certificates fail
# (the trapezoid's σ has its root at −1: neighbours within 2⁻⁴⁴ end near z = −10¹³).
_WIDENED = flint.fmpq(RESOLUTION.numerator + RESOLUTION.denominator, RESOLUTION.denominator)


def schur(p: Balls) -> bool | None:
    """Whether every polynomial in the balls `p` (ascending) has all its roots strictly inside
    the unit disc (True), certainly one strictly outside (False), or either (None)."""
    zero = flint.arb(0)
    return _schur(p, [zero] * len(p), zero)


def _schur(p: Balls, slope: Balls, half: flint.arb) -> bool | None:
    """`schur` for every polynomial p + (x − m)·slope, |x − m| ≤ `half`, in mean-value form:
    the chain is run at the midpoint m (`p`) and, for its derivative in x, on the whole piece
    (`value`, `der`); each step's coefficients are enclosed by both (their intersection)."""
    spread = flint.arb(0, half.upper())
    p, der = list(p), list(slope)
    value = [a + b * spread for a, b in zip(p, der, strict=True)]
    while len(p) > 1:
        n = len(p) - 1
        constant = value[0].intersection(p[0] + der[0] * spread)
        lead = value[n].intersection(p[n] + der[n] * spread)
        if constant.abs_lower() > lead.abs_upper():
            return False
        if not constant.abs_upper() < lead.abs_lower():
            return None
        k, ratio = p[0] / p[n], constant / lead  # at m; on the piece
        slope_k = (der[0] - ratio * der[n]) / lead
        p = [p[j + 1] - k * p[n - 1 - j] for j in range(n)]
        der = [der[j + 1] - slope_k * value[n - 1 - j] - ratio * der[n - 1 - j] for j in range(n)]
        value = [
            (value[j + 1] - ratio * value[n - 1 - j]).intersection(p[j] + der[j] * spread)
            for j in range(n)
        ]
    return True


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
    numbers = [*method.alpha_numbers, *method.beta_numbers]
    with flint.ctx.workprec(working_precision(numbers)):
        alpha = [ball(x.value, x.rounding) for x in method.alpha_numbers]
        beta = [ball(x.value, x.rounding) for x in method.beta_numbers]
        reach, why = (0.0, "") if schur(alpha) else _near_zero(alpha, beta, rooted)
        if reach is None:
            return None, False, why
        for radius in (flint.arb(1), flint.arb(_WIDENED)):
            u, v = _scaled(alpha, radius), _scaled(beta, radius)  # roots within `radius`
            found, why = _end(u, v, reach, end)
            if found is not None:
                return found, radius != 1, ""
        return None, False, why


def unstable_below(method: LinearMultistep) -> float | None:
    """Where every method within the precision of a numeric declaration whose digits read no
    real stability interval is certainly unstable: the least x on a ladder from 10⁻¹² to 1 at
    which every π = ρ + xσ in the balls has a root strictly outside the disc (`schur` False),
    so that each one's interval ends in [0, x); None when none is certified. The digits' "none"
    is no verdict on its neighbours: Milne-Simpson-like ρ = (ζ − 1)(ζ² + 1) in floats reads 0,
    while moving α₀, α₁ by 2⁻⁴⁵ puts the roots ±i inside and that neighbour ends at 1.7e-13."""
    numbers = [*method.alpha_numbers, *method.beta_numbers]
    with flint.ctx.workprec(working_precision(numbers)):
        alpha = [ball(x.value, x.rounding) for x in method.alpha_numbers]
        beta = [ball(x.value, x.rounding) for x in method.beta_numbers]
        for m in range(24, -1, -1):
            if _unstable_at(alpha, beta, 10.0 ** (-m / 2)):
                return 10.0 ** (-m / 2)
    return None


def _scaled(p: Balls, radius: flint.arb) -> Balls:
    """p(radius·ζ): its roots are p's divided by `radius`."""
    return [c * radius**j for j, c in enumerate(p)]


def _end(u: Balls, v: Balls, reach: float, end: float) -> tuple[Enclosure | None, str]:
    """The end for π = u + x·v at z = −x (u = ρ, v = σ, scaled), as `enclose_real_interval`."""
    if end == math.inf:
        if not _certified(u, v, reach, 1.0):
            return None, "the balls cannot certify every method stable on [−1, 0)"
        if not _certified(v, u, 0.0, 1.0):  # z = −1/t: σ + tρ, t in [0, 1] (z → −∞ included)
            return None, (
                "the balls cannot certify every method stable on (−∞, −1]: neighbours within "
                "the precision may end far out"
            )
        return (math.inf, math.inf), ""
    for delta in DELTAS:
        lo, hi = float(end * (1 - delta)), float(end * (1 + delta))
        finest = end * delta / 64
        if _unstable_at(u, v, hi) and _certified(u, v, reach, lo, finest):
            return _narrowed(u, v, (lo, hi), end, finest), ""
    return None, (
        "no δ up to 10% certifies every method stable on [−r(1 − δ), 0) and unstable at −r(1 + δ)"
    )


def _unstable_at(u: Balls, v: Balls, x: float) -> bool:
    return schur([a + flint.arb(x) * b for a, b in zip(u, v, strict=True)]) is False


def _narrowed(u: Balls, v: Balls, found: Enclosure, end: float, finest: float) -> Enclosure:
    """Each side of a certified (lo, hi) moved towards the digits' `end` by bisection (twelve
    halvings each): stability certified on [lo, m] raises lo to m, instability at m lowers hi.
    The δ ladder's steps of √10 would otherwise leave a band up to three times too wide."""
    lo, hi = found
    below, above = lo, end
    for _ in range(12):
        middle = (below + above) / 2
        if _certified(u, v, below, middle, finest):
            below = middle
        else:
            above = middle
    low, high = end, hi
    for _ in range(12):
        middle = (low + high) / 2
        if _unstable_at(u, v, middle):
            high = middle
        else:
            low = middle
    return below, high


def _certified(u: Balls, v: Balls, lo: float, hi: float, finest: float = 0.0) -> bool:
    """Every polynomial u + x·v in the balls has all roots strictly inside the disc at every
    x in [lo, hi] (bisection; False when a piece is certainly unstable, narrower than `finest`
    and undecided, or the budget runs out). An empty range is certified."""
    pieces, spent = [(lo, hi)] if lo < hi else [], 0
    while pieces:
        a, b = pieces.pop()
        spent += 1
        middle = (flint.arb(a) + flint.arb(b)) / 2  # exact: a and b are doubles
        at = [c + middle * d for c, d in zip(u, v, strict=True)]
        verdict = _schur(at, v, (flint.arb(b) - flint.arb(a)) / 2)
        if verdict:
            continue
        middle_f = (a + b) / 2
        if verdict is False or spent > PIECES or b - a < finest or not a < middle_f < b:
            return False
        pieces += [(a, middle_f), (middle_f, b)]
    return True


def _near_zero(alpha: Balls, beta: Balls, rooted: bool) -> tuple[float | None, str]:
    """How far left of 0 the Rouché argument (module docstring) proves every method with
    ρ(1) = 0 stable, or None and why not."""
    if not rooted:
        return None, (
            "the digits do not meet C_0 = ρ(1) = 0 within their precision, and z = 0 is not "
            "certainly stable"
        )
    k = len(alpha) - 1
    reduced = [sum(alpha[j + 1 :], flint.arb(0)) for j in range(k)]  # ρ̃, ascending
    if schur(reduced) is not True:
        return None, "the balls cannot certify ρ's roots other than 1 strictly inside |ζ| = 1"
    c = sum(beta, flint.arb(0)) / sum(reduced, flint.arb(0))
    if not c > 0:
        return None, "σ(1)/ρ'(1) is not certainly positive"
    d = [c * r - b for r, b in zip([*reduced, flint.arb(0)], beta, strict=True)]
    h = [sum(d[j + 1 :], flint.arb(0)) for j in range(k)]
    size = sum((abs(x) for x in h), flint.arb(0)).upper()
    least = _least_modulus(reduced)
    if not least > 0:
        return None, "the balls cannot bound |ρ̃| away from 0 on |ζ| = 1"
    reach = 1 / (2 * c.upper())
    if size > 0:
        reach = min(reach, least / (flint.arb(2).sqrt() * size))
    return float(reach.lower()) * (1 - 2.0**-40), ""


def _least_modulus(p: Balls) -> flint.arb:
    """A lower bound on |p(e^{iθ})| over θ (real coefficients: θ in [0, π] suffices), from
    arc boxes split where they hold 0; 0 when that fails."""
    poly = flint.acb_poly([flint.acb(x) for x in p])
    pieces = [(j / _ARCS, (j + 1) / _ARCS) for j in range(_ARCS)]
    least: flint.arb | None = None
    spent = 0
    while pieces:
        a, b = pieces.pop()
        spent += 1
        centre = flint.arb.pi() * flint.arb((a + b) / 2)
        half = flint.arb(0, (flint.arb.pi() * flint.arb((b - a) / 2)).upper())
        zeta = flint.acb(centre.cos() + half, centre.sin() + half)  # |Δζ| ≤ |Δθ|
        value = abs(poly(zeta)).lower()
        if value > 0:
            least = value if least is None or value < least else least
        elif spent > PIECES:
            return flint.arb(0)
        else:
            pieces += [(a, (a + b) / 2), ((a + b) / 2, b)]
    return flint.arb(0) if least is None else least
