"""The end of the real stability interval of every method in a box, for methods whose stability
is that of a polynomial Π(w, x) = Σⱼ Pⱼ(x) wʲ at z = −x: all roots w strictly inside the unit
disc. A linear multistep method's π = ρ + xσ (`multistep/enclosure.py`), a general linear method's
det(I − zA)·det(wI − M(z)) (`general_linear/enclosure.py`). Each Pⱼ is a polynomial in x with
arb-ball coefficients holding every method of the box.

The end r is enclosed (stable on [−r(1 − δ), 0), a root strictly outside the disc at
−r(1 + δ)) with Schur-Cohn steps in arb balls (`schur`) and a Rouché argument next to z = 0
(`near_zero`); the proofs are in docs/concepts.md, "Schur-Cohn enclosures of a real stability
interval".
"""

from __future__ import annotations

import math

import flint

from ...methods.entries.precision import RESOLUTION
from .common import DELTAS, PIECES, Enclosure, padded

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
        turned = [flint.arb_poly(padded(P.coeffs(), n + 1)[::-1]) for P in family]
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
