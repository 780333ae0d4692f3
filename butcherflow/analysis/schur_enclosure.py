"""The end of the real stability interval of every method in a box, for methods whose stability
is that of a polynomial Π(w, x) = Σⱼ Pⱼ(x) wʲ at z = −x: all roots w strictly inside the unit
disc. A linear multistep method's π = ρ + xσ (`multistep_enclosure`), a general linear method's
det(I − zA)·det(wI − M(z)) (`glm_enclosure`). Each Pⱼ is a polynomial in x with arb-ball
coefficients holding every method of the box.

The end r is *enclosed* as in `stability_enclosure.py`: every such method is stable on
[−r(1 − δ), 0) and has a root strictly outside the unit disc at −r(1 + δ), for the smallest δ
tried from 10⁻¹² up to 10⁻¹, each side then moved in by bisection. An unbounded r is certified
on [−1, 0) and, as tⁿΠ(w, 1/t), on t in [0, 1] (z → −∞ included). Where strict certificates
fail, roots within 2⁻²⁶ (1.5·10⁻⁸) of the circle may count as on it, as |R|² − 1 ≤ 1.5·10⁻⁸
does for RK: the same tests on Π(Rw), R = 1 + 2⁻²⁶ (the float trapezoid's σ has its root at −1,
and a neighbour with β₀ = ½ + 2⁻⁴⁵ ends near z = −10¹³).

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
first step, a leading coefficient 0: a root at infinity, or no method there), unstable whatever
the circle holds. Each coefficient's ball is taken independently (a superset of the box). On a
piece of the axis the chain runs in mean-value form (`_schur`): at the piece's midpoint, plus
its derivative in x over the piece times the half-width (leads certified nonzero on the piece
keep each step's coefficients smooth there), which narrows as the piece's square, not its width;
the ratio k = p₀/pₙ is enclosed the same way (its derivative (p₀′ − k pₙ′)/pₙ on the piece), and
|k| < 1 on the piece is |p₀| < |pₙ| for every polynomial there (|k| > 1: |p₀| > |pₙ|).

**Near z = 0** (`near_zero`) the root w = 1 of P₀ sits on the circle and no ball test can
decide. Write Π = P₀ + xP₁ + x²Q(w, x), Q = Σ_{m≥2} x^(m−2)P_m. For every method with P₀(1) = 0
(ρ(1) = 0, or V with the eigenvalue 1: preconsistency, which the digits meet), P₀ = (w − 1)ρ̃
with ρ̃ⱼ = Σ_{i>j} P₀ᵢ, and with c = P₁(1)/ρ̃(1) (the principal root moves as w ≈ 1 − cx),
cρ̃ − P₁ vanishes at 1: cρ̃ − P₁ = (w − 1)h. Compare Π with f = (w − 1 + xc)ρ̃:
Π − f = −x(w − 1)h + x²Q, and Q = Q(1, x) + (w − 1)Q̃ (Q̃ the tail sums of Q's coefficients in
w). On |w| = 1, with d = |w − 1| (so Re(w − 1) = −d²/2), |w − 1 + xc|² = d²(1 − xc) + x²c²
≥ d²/2 + x²c² when 0 < xc ≤ 1/2, so for λ² + μ² ≤ 1, |f| ≥ m(λd/√2 + μxc) with m = min |ρ̃| on
the circle (Cauchy-Schwarz), while |Π − f| ≤ x·d·(H + xQ̃ₘ) + x²q with H = Σ|hⱼ|, Q̃ₘ and q
bounds of |Q̃| and |Q(1, ·)| for x up to the reach. Where x(H + xQ̃ₘ) < λm/√2 and xq < μmc
(each strict, or its term zero), |Π − f| < |f| on the circle for 0 < x (at w = 1, f = xcρ̃(1)
≠ 0), and Rouché gives Π as many roots inside as f, all of them: 1 − xc ∈ [½, 1) and ρ̃'s,
certified strictly inside by (i) (Π then has full degree). Without Q (a multistep method)
λ = 1, μ = 0; otherwise λ = μ = 1/√2. The bounds grow with the reach, so the reach is found in
one step down from 1/(2c): the bounds at 1/(2c) hold at any smaller reach.
"""

from __future__ import annotations

import math

import flint

from ..methods.precision import RESOLUTION
from .stability_enclosure import DELTAS, PIECES, Enclosure

Balls = list[flint.arb]  # coefficients, lowest power first
Family = list[flint.arb_poly]  # Π's coefficient of wʲ as a polynomial in x = −z, j ascending
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
        if not lead.abs_lower() > 0:
            return None
        k, ratio = p[0] / p[n], constant / lead  # at m; on the piece
        slope_k = (der[0] - ratio * der[n]) / lead
        # k on the piece in mean-value form too: at a double root near the circle |p₀| and
        # |pₙ| differ by far less than either moves, while their ratio moves little
        ratio = ratio.intersection(k + slope_k * spread)
        if ratio.abs_lower() > 1:
            return False
        if not ratio.abs_upper() < 1:
            return None
        p = [p[j + 1] - k * p[n - 1 - j] for j in range(n)]
        der = [der[j + 1] - slope_k * value[n - 1 - j] - ratio * der[n - 1 - j] for j in range(n)]
        value = [
            (value[j + 1] - ratio * value[n - 1 - j]).intersection(p[j] + der[j] * spread)
            for j in range(n)
        ]
    return True


def enclose_axis(
    family: Family, end: float, unrooted: str | None
) -> tuple[Enclosure | None, bool, str]:
    """Enclose the end of the real stability interval over every method in the balls.

    **Arguments:**

    - `family`: Π's coefficients of w⁰ … wⁿ, each a polynomial in x = −z (arb balls).
    - `end`: the digits' r (0 < r ≤ inf).
    - `unrooted`: None when the methods enclosed are those with P₀(1) = 0 (the digits meet
      it), for which `near_zero` applies; otherwise why they are not, and only a box whose every
      P₀ has all roots strictly inside the disc (stable at z = 0 itself) is enclosed.

    **Returns:** `(enclosure, widened, why)`: (lo, hi) holding every method's end ((inf, inf):
    stable on the whole negative axis), or None and `why` it could not be certified;
    `widened`: roots less than 1.5e-8 outside |w| = 1 had to count as stable (strict failed).
    """
    at_zero = [P(flint.arb(0)) for P in family]
    if schur(at_zero):
        reach: float | None = 0.0
        why = ""
    elif unrooted is not None:
        return None, False, unrooted
    else:
        reach, why = near_zero(family)
    if reach is None:
        return None, False, why
    for radius in (flint.arb(1), flint.arb(_WIDENED)):
        scaled = [P * radius**j for j, P in enumerate(family)]  # roots within `radius`
        found, why = _end(scaled, reach, end)
        if found is not None:
            return found, radius != 1, ""
    return None, False, why


def _end(family: Family, reach: float, end: float) -> tuple[Enclosure | None, str]:
    """The end for Π as `enclose_axis`, certified from `reach` on (`near_zero` below it)."""
    if end == math.inf:
        if not _certified(family, reach, 1.0):
            return None, "the balls cannot certify every method stable on [−1, 0)"
        n = max(P.degree() for P in family)
        turned = [flint.arb_poly(_padded(P.coeffs(), n + 1)[::-1]) for P in family]
        if not _certified(turned, 0.0, 1.0):  # z = −1/t: tⁿΠ(w, 1/t), t in [0, 1]
            return None, (
                "the balls cannot certify every method stable on (−∞, −1]: neighbours within "
                "the precision may end far out"
            )
        return (math.inf, math.inf), ""
    for delta in DELTAS:
        lo, hi = float(end * (1 - delta)), float(end * (1 + delta))
        finest = end * delta / 64
        if unstable_at(family, hi) and _certified(family, reach, lo, finest):
            return _narrowed(family, (lo, hi), end, finest), ""
    return None, (
        "no δ up to 10% certifies every method stable on [−r(1 − δ), 0) and unstable at −r(1 + δ)"
    )


def _padded(coefficients: list[flint.arb], length: int) -> list[flint.arb]:
    return list(coefficients) + [flint.arb(0)] * (length - len(coefficients))


def unstable_at(family: Family, x: float) -> bool:
    """Every Π in the balls has a root strictly outside |w| = 1 at z = −x (`schur` False)."""
    return schur([P(flint.arb(x)) for P in family]) is False


def _narrowed(family: Family, found: Enclosure, end: float, finest: float) -> Enclosure:
    """Each side of a certified (lo, hi) moved towards the digits' `end` by bisection (twelve
    halvings each): stability certified on [lo, m] raises lo to m, instability at m lowers hi.
    The δ ladder's steps of √10 would otherwise leave a band up to three times too wide."""
    lo, hi = found
    below, above = lo, end
    for _ in range(12):
        middle = (below + above) / 2
        if _certified(family, below, middle, finest):
            below = middle
        else:
            above = middle
    low, high = end, hi
    for _ in range(12):
        middle = (low + high) / 2
        if unstable_at(family, middle):
            high = middle
        else:
            low = middle
    return below, high


def _certified(family: Family, lo: float, hi: float, finest: float = 0.0) -> bool:
    """Every Π in the balls has all roots strictly inside the disc at every x in [lo, hi]
    (bisection; False when a piece is certainly unstable, narrower than `finest` and
    undecided, or the budget runs out). An empty range is certified."""
    slopes = [P.derivative() for P in family]
    pieces, spent = [(lo, hi)] if lo < hi else [], 0
    while pieces:
        a, b = pieces.pop()
        spent += 1
        middle = (flint.arb(a) + flint.arb(b)) / 2  # exact: a and b are doubles
        half = (flint.arb(b) - flint.arb(a)) / 2
        piece = middle + flint.arb(0, half.upper())
        at = [P(middle) for P in family]
        verdict = _schur(at, [S(piece) for S in slopes], half)
        if verdict:
            continue
        middle_f = (a + b) / 2
        if verdict is False or spent > PIECES or b - a < finest or not a < middle_f < b:
            return False
        pieces += [(a, middle_f), (middle_f, b)]
    return True


def near_zero(family: Family) -> tuple[float | None, str]:
    """How far right of x = 0 the Rouché argument (module docstring) proves every method with
    P₀(1) = 0 stable, or None and why not."""
    zero = flint.arb(0)
    powers = [P.coeffs() for P in family]
    terms = max(len(c) for c in powers)
    # by_x[m][j]: the coefficient of x^m wʲ
    by_x = [[c[m] if m < len(c) else zero for c in powers] for m in range(max(terms, 2))]
    reduced = _tail_sums(by_x[0])  # ρ̃, ascending
    if schur(reduced) is not True:
        return None, "the balls cannot certify the roots other than w = 1 strictly inside |w| = 1"
    c = sum(by_x[1], zero) / sum(reduced, zero)
    if not c > 0:
        return None, "the principal root's speed P₁(1)/ρ̃(1) is not certainly positive"
    d = [c * x - b for x, b in zip([*reduced, zero], by_x[1], strict=True)]
    size = sum((abs(x) for x in _tail_sums(d)), zero)
    least = _least_modulus(reduced)
    if not least > 0:
        return None, "the balls cannot bound |ρ̃| away from 0 on |w| = 1"
    first = 1 / (2 * c.upper())
    higher = by_x[2:]  # Q's coefficients of x⁰, x¹, …
    bounds = [first]
    if all(x.is_zero() for row in higher for x in row):  # Π affine in x: λ = 1, μ = 0
        if size.upper() > 0:
            bounds.append(least / (flint.arb(2).sqrt() * size.upper()))
    else:  # λ = μ = 1/√2, the bounds of Q taken at the largest reach, 1/(2c)
        span = flint.arb(first.upper())
        norms = [sum((abs(x) for x in _tail_sums(row)), zero) for row in higher]
        tilde = sum((span**i * q for i, q in enumerate(norms)), zero)
        at_one = sum((span**i * abs(sum(row, zero)) for i, row in enumerate(higher)), zero)
        grown = (size + span * tilde).upper()
        if grown > 0:
            bounds.append(least / (2 * grown))
        if at_one.upper() > 0:
            bounds.append(least * c.lower() / (flint.arb(2).sqrt() * at_one.upper()))
    reach = min(float(flint.arb(b).lower()) for b in bounds)
    return reach * (1 - 2.0**-40), ""


def _tail_sums(p: Balls) -> Balls:
    """The quotient of p by (w − 1), ascending (its remainder p(1) dropped): qⱼ = Σ_{i>j} pᵢ."""
    return [sum(p[j + 1 :], flint.arb(0)) for j in range(len(p) - 1)]


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
