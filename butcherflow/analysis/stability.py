"""Linear and algebraic stability of Runge-Kutta methods, decided exactly.

R(z) = det(I − zA + z·1bᵀ) / det(I − zA) is computed in the smallest exact domain of the
entries (QQ, or an algebraic field such as QQ<√5>): for explicit methods as
1 + Σₖ zᵏ bᵀAᵏ⁻¹1, otherwise from the characteristic polynomials of A and A − 1bᵀ.

The stability intervals are the ends of {x ≤ 0 : |R(x)| ≤ 1} and {y ≥ 0 : |R(iy)| ≤ 1}
containing 0, i.e. of where P(u) = N(−u)² − D(−u)² ≤ 0 and F(w) = |N(i√w)|² − |D(i√w)|² ≤ 0
(w = y²). Every root of P or F is a root of its norm, a polynomial over QQ, whose real roots are
isolated exactly; the sign of P or F between two of them is the sign of an algebraic number,
decided with rational interval arithmetic on an isolating interval of the field's generator.
A-stability adds a Routh-Hurwitz test of the poles in the same field, and algebraic stability is
an LDLᵀ elimination with exact signs. Nothing is approximated except the printed interval ends.

A numeric tableau (floats, decimals) is analysed from its digits, exactly, with one exception
stated in the report: for the intervals, the terms of degree ≤ p of P and F are those order p
forces, since rounding would otherwise decide the sign of |R(iy)|² − 1 near 0.
"""

from __future__ import annotations

import math
from typing import Any, final

import flint
import numpy as np
import sympy
from sympy.polys.densearith import dup_add, dup_exquo, dup_mul, dup_quo_ground, dup_sub
from sympy.polys.densebasic import dup_reverse, dup_strip
from sympy.polys.densetools import dup_clear_denoms, dup_eval, dup_scale, dup_shift
from sympy.polys.domains import QQ, ZZ
from sympy.polys.euclidtools import dup_gcd
from sympy.polys.matrices import DomainMatrix
from sympy.polys.rootisolation import (
    dup_isolate_real_roots_sqf,
    dup_refine_real_root,
    dup_root_upper_bound,
)
from sympy.polys.sqfreetools import dmp_norm, dup_sqf_part

from ..methods import ButcherTableau
from .number_field import NumberField
from .weights import smallest_domain, tableau_field

z = sympy.Symbol("z")
Dense = list[Any]  # a dense polynomial over a domain, highest degree first (sympy's dup)
_SHOWN_DIGITS = 17  # significant digits of R(z) printed for a numeric tableau


def _is_rational(c: Any) -> bool:
    """An element of an algebraic field that lies in QQ."""
    return len(c.to_list()) <= 1


def _rational_part(c: Any) -> Any:
    """The QQ value of a rational element of an algebraic field."""
    return c.to_list()[0] if c else QQ.zero


class _RealField:
    """A real number field K (QQ or QQ<θ>) with exact signs of its elements.

    θ is pinned down by an isolating interval of its minimal polynomial; an element h(θ) ≠ 0
    gets its sign from h evaluated in exact rational interval arithmetic on that interval,
    narrowed until the result excludes 0 (which always happens, since h(θ) ≠ 0).
    """

    def __init__(self, domain: Any) -> None:
        self.domain = domain
        self.algebraic = bool(domain.is_AlgebraicField)
        self._theta: tuple[Any, Any] | None = None
        if self.algebraic and sympy.N(domain.ext.as_expr(), 20).as_real_imag()[1] != 0:
            raise ValueError(f"{domain} is not a real field")

    def _isolate_theta(self) -> tuple[Any, Any]:
        """A rational interval holding θ and no other root of its minimal polynomial."""
        minpoly = self.domain.mod.to_list()
        approx = QQ.from_sympy(sympy.Rational(sympy.N(self.domain.ext.as_expr(), 50)))
        intervals = dup_isolate_real_roots_sqf(minpoly, QQ)
        while True:
            margin = QQ(1, 10**40)  # far above the error of a 50-digit evalf
            holding = [(a, b) for a, b in intervals if a + margin < approx < b - margin]
            if holding:
                return holding[0]
            # θ's 50-digit value sits on an end: narrow every interval and look again
            intervals = [dup_refine_real_root(minpoly, a, b, QQ, steps=8) for a, b in intervals]

    @classmethod
    def of(cls, domain: Any) -> _RealField | None:
        """The field, or None when `domain` is not QQ or a real algebraic field."""
        if domain.is_ZZ or domain.is_QQ or domain.is_AlgebraicField:
            try:
                return cls(domain)
            except ValueError:
                return None
        return None

    def sign(self, value: Any) -> int:
        """-1, 0 or 1: the exact sign of an element of the field."""
        if not value:
            return 0
        if not self.algebraic:
            return 1 if value > 0 else -1
        h = value.to_list()
        if len(h) == 1:  # a rational element
            return 1 if h[0] > 0 else -1
        if self._theta is None:
            self._theta = self._isolate_theta()
        lo, hi = self._theta
        while True:
            low = high = h[0]
            for coeff in h[1:]:
                ends = (low * lo, low * hi, high * lo, high * hi)
                low, high = min(ends) + coeff, max(ends) + coeff
            if low > 0 or high < 0:
                return 1 if low > 0 else -1
            minpoly = self.domain.mod.to_list()
            lo, hi = dup_refine_real_root(minpoly, lo, hi, QQ, eps=(hi - lo) / 2**40)
            self._theta = (lo, hi)

    def rational_polynomial(self, f: Dense) -> Dense:
        """A polynomial over QQ whose roots include every root of f (its norm when needed)."""
        if not self.algebraic:
            return [QQ.convert(c) for c in f]
        if all(_is_rational(c) for c in f):
            return [_rational_part(c) for c in f]
        return dmp_norm(f, 0, self.domain)


def _integer_poly(gz: Dense) -> flint.fmpz_poly:
    """A dense polynomial with integer coefficients as a flint polynomial (its signs at
    rational points are then evaluated in C, `_integer_sign`)."""
    return flint.fmpz_poly([int(c) for c in reversed(gz)])


def _integer_sign(g: flint.fmpz_poly, u: Any) -> int:
    """The sign of g(u) for g with integer coefficients and u = p/q rational, exactly (flint
    evaluates q^n·g(p/q) in integers; rational Horner in Python reduced a fraction per step)."""
    value = g(flint.fmpq(int(QQ.numer(u)), int(QQ.denom(u))))
    return (value > 0) - (value < 0)


def _roots_between(gz: Dense, lo: Any, hi: Any) -> list[tuple[Any, Any]]:
    """Isolating intervals, sorted, of the roots of the squarefree gz (integer coefficients) in
    (lo, hi), neither of which may be a root.

    (1 + x)ⁿ·g(lo + (hi − lo)/(1 + x)) has exactly these roots as its positive roots, so roots
    beyond hi (close pairs included, which are costly to separate) are never isolated. With
    lo = a/d and hi − lo = b/d, everything stays in integers: dⁿ·g((a + b·t)/d).
    """
    d = ZZ.lcm(QQ.denom(lo), QQ.denom(hi))
    a, b = QQ.numer(lo * d), QQ.numer((hi - lo) * d)
    n = len(gz) - 1
    G = [c * d ** (n - k) for k, c in zip(range(n, -1, -1), gz, strict=True)]  # dⁿ·g(x/d)
    moved = dup_shift(dup_reverse(dup_scale(dup_shift(G, a, ZZ), b, ZZ)), ZZ.one, ZZ)
    out = []
    for x0, x1 in dup_isolate_real_roots_sqf(moved, ZZ, inf=QQ.zero):
        out.append((lo + (hi - lo) / (1 + x1), lo + (hi - lo) / (1 + x0)))
    return sorted(out)


def _first_exit(f: Dense, field: _RealField) -> float:
    """Largest r ≥ 0 with f(u) ≤ 0 for u in [0, r] (math.inf when unbounded), exactly.

    Between consecutive positive real roots of f's rational norm g, f keeps one sign (its roots
    are among g's); that sign is read at a rational point in the gap. The answer is the first
    root after which f is positive; roots where f touches 0 without turning positive are passed.
    Roots are isolated window by window ((0, 1], (1, 2], (2, 4], ...) up to the first exit.
    """
    K = field.domain
    f = dup_strip(f)
    if not f:
        return math.inf
    while not f[-1]:
        f = f[:-1]  # u^k > 0 for u > 0: the factor does not change the sign there
    g = dup_sqf_part(field.rational_polynomial(f), QQ)
    gz = dup_clear_denoms(g, QQ, convert=True)[1]
    gp = _integer_poly(gz)
    if field.algebraic:

        def positive_at(u: Any) -> bool:
            return field.sign(dup_eval(f, K.convert_from(u, QQ), K)) > 0

    else:
        fz = _integer_poly(dup_clear_denoms(f, QQ, convert=True)[1])

        def positive_at(u: Any) -> bool:
            return _integer_sign(fz, u) > 0

    if positive_at(QQ.zero):
        return 0.0
    bound = dup_root_upper_bound(gz, ZZ)  # every positive root lies below it; None: none
    lo, hi = QQ.zero, QQ.one
    while bound is not None and lo < bound:
        while not _integer_sign(gp, hi):
            hi += hi / 2**30  # a window must not end on a root
        roots = _roots_between(gz, lo, hi)
        for i in range(len(roots)):
            while True:  # a rational point strictly between root i and root i + 1 (or hi)
                a, b = roots[i]
                point = (b + (roots[i + 1][0] if i + 1 < len(roots) else hi)) / 2
                if _integer_sign(gp, point):
                    break
                roots[i] = dup_refine_real_root(g, a, b, QQ, steps=1)
                roots[i + 1] = dup_refine_real_root(g, *roots[i + 1], QQ, steps=1)
            if positive_at(point):
                return _bisect(gp, a, b)
        lo, hi = hi, 2 * hi
    return math.inf


def _bisect(g: flint.fmpz_poly, lo: Any, hi: Any) -> float:
    """The root of g in its isolating interval [lo, hi], to double precision, by exact bisection
    (cheaper than sympy's continued-fraction refinement for a printed value)."""
    low_sign = _integer_sign(g, lo)
    while hi - lo > max(abs(hi), 1) * QQ(1, 2**56):
        mid = (lo + hi) / 2
        sign = _integer_sign(g, mid)
        if not sign:
            return float(mid)
        if sign == low_sign:
            lo = mid
        else:
            hi = mid
    return float((lo + hi) / 2)


def _hurwitz(q: Dense, field: _RealField) -> bool:
    """Every root of q has a negative real part (Routh's array: no zero, no sign change)."""
    K = field.domain
    first = field.sign(q[0])
    upper, lower = q[0::2], q[1::2]
    while lower:
        if field.sign(lower[0]) != first:
            return False
        ratio = upper[0] / lower[0]
        padded = [*lower[1:], K.zero]
        upper, lower = lower, [upper[j + 1] - ratio * padded[j] for j in range(len(upper) - 1)]
    return True


def _in_domain(tableau: ButcherTableau) -> tuple[Any, list[list[Any]], list[Any]]:
    """The field of the entries (`weights.tableau_field`), with A and b converted into it."""
    domain, values = tableau_field(tableau)
    s = tableau.stages
    A = [[values[f"A[{i}][{j}]"] for j in range(s)] for i in range(s)]
    b = [values[f"b[{i}]"] for i in range(s)]
    field = domain.get_field()
    if field != domain:  # ZZ -> QQ, a polynomial ring -> its fraction field
        A = [[field.convert_from(x, domain) for x in row] for row in A]
        b = [field.convert_from(x, domain) for x in b]
    return field, A, b


def _constant_field(N: Dense, D: Dense, K: Any) -> tuple[Any, Dense, Dense]:
    """N and D, free of symbols but over a domain with symbols, moved to their own field."""
    values = [K.to_sympy(c) for c in [*N, *D]]
    domain, converted = smallest_domain(values)
    field = domain.get_field()
    if field != domain:
        converted = [field.convert_from(v, domain) for v in converted]
    return field, converted[: len(N)], converted[len(N) :]


def _reversed_charpoly(matrix: list[list[Any]], K: Any) -> Dense:
    """det(I − zM) as a dense polynomial in z: the characteristic polynomial read backwards."""
    s = len(matrix)
    return dup_strip(DomainMatrix(matrix, (s, s), K).charpoly()[::-1])


def _explicit_numerator(A: list[list[Any]], b: list[Any], K: Any) -> Dense:
    """1 + Σₖ zᵏ bᵀAᵏ⁻¹1 (k = 1..s), highest degree first; over QQ in flint matrices (one C
    product a term instead of s² Python products of large fractions), over an algebraic field
    in flint polynomials (`NumberField`), otherwise in K."""
    s = len(b)
    coeffs = [K.one]
    if K == QQ and K.dtype is flint.fmpq:
        M, weights = flint.fmpq_mat(s, s, [x for row in A for x in row]), flint.fmpq_mat(1, s, b)
        column = flint.fmpq_mat(s, 1, [1] * s)
        for _ in range(s):
            coeffs.append((weights * column)[0, 0])
            column = M * column
        return dup_strip(coeffs[::-1])
    field = NumberField.of(K)  # an algebraic field: flint polynomials in its generator
    if field is not None:
        A = [[field.convert(x) for x in row] for row in A]
        b = [field.convert(x) for x in b]
    one, zero = (field.one, field.zero) if field else (K.one, K.zero)
    vec = [one] * s
    for _ in range(s):
        term = sum((x * y for x, y in zip(b, vec, strict=True)), zero)
        coeffs.append(field.element(field.reduce(term)) if field else term)
        vec = [sum((x * y for x, y in zip(row, vec, strict=True)), zero) for row in A]
        vec = [field.reduce(x) for x in vec] if field else vec
    return dup_strip(coeffs[::-1])


def _rational_function(tableau: ButcherTableau) -> tuple[Any, Dense, Dense]:
    """(K, N, D) with R = N/D in lowest terms over the field K of the entries, D(0) = 1."""
    K, A, b = _in_domain(tableau)
    s = tableau.stages
    if tableau.is_explicit:
        return K, _explicit_numerator(A, b, K), [K.one]
    minus_rank_one = [[A[i][j] - b[j] for j in range(s)] for i in range(s)]
    N, D = _reversed_charpoly(minus_rank_one, K), _reversed_charpoly(A, K)
    common = dup_gcd(N, D, K)
    if len(common) > 1:  # e.g. a stage that no other stage and no weight uses
        N, D = dup_exquo(N, common, K), dup_exquo(D, common, K)
    scale = D[-1]  # D(0) = 1 again after the division
    return K, dup_quo_ground(N, scale, K), dup_quo_ground(D, scale, K)


def _at_minus(p: Dense) -> Dense:
    """p(−u)."""
    n = len(p) - 1
    return [-c if (n - i) % 2 else c for i, c in enumerate(p)]


def _axis_polynomials(N: Dense, D: Dense, K: Any) -> tuple[Dense, Dense]:
    """P(u) = N(−u)² − D(−u)² and F(w) = |N(i√w)|² − |D(i√w)|², over K."""

    def square_on_axis(p: Dense) -> Dense:  # |p(iy)|² as a polynomial in w = y²
        low = p[::-1]  # ascending
        even = [c if j % 2 == 0 else -c for j, c in enumerate(low[0::2])]
        odd = [c if j % 2 == 0 else -c for j, c in enumerate(low[1::2])]
        e, o = dup_strip(even[::-1]), dup_strip(odd[::-1])
        return dup_add(dup_mul(e, e, K), dup_mul([*dup_mul(o, o, K), K.zero], [K.one], K), K)

    Nm, Dm = _at_minus(N), _at_minus(D)
    real = dup_sub(dup_mul(Nm, Nm, K), dup_mul(Dm, Dm, K), K)
    imaginary = dup_sub(square_on_axis(N), square_on_axis(D), K)
    return real, imaginary


def _as_order_requires(
    real: Dense, imaginary: Dense, D: Dense, p: int, K: Any
) -> tuple[Dense, Dense]:
    """P and F with their terms of degree ≤ p in z replaced by what order p makes them.

    R(z) = e^z + O(z^(p+1)) gives N(x)² − D(x)² = D(x)²(e^(2x) − 1) + O(x^(p+1)) and
    |N(iy)|² − |D(iy)|² = O(y^(p+1)): for a numeric tableau whose order-p conditions hold at the
    entries' precision, these are the terms that rounding would otherwise decide near 0.
    """
    d2 = dup_mul(D, D, K)[::-1]  # D(x)², ascending
    exp2 = [K.zero] + [K.convert(sympy.Rational(2**k, math.factorial(k))) for k in range(1, p + 1)]
    low = real[::-1]
    for k in range(1, min(p, len(low) - 1) + 1):
        term = sum((d2[j] * exp2[k - j] for j in range(min(k, len(d2) - 1) + 1)), K.zero)
        low[k] = -term if k % 2 else term  # P(u) is N(x)² − D(x)² at x = −u
    lowi = imaginary[::-1]
    for j in range(1, min(p // 2, len(lowi) - 1) + 1):
        lowi[j] = K.zero
    return dup_strip(low[::-1]), dup_strip(lowi[::-1])


def _to_expr(p: Dense, K: Any, numeric: bool) -> sympy.Expr:
    terms = []
    for k, c in enumerate(p[::-1]):
        if K.is_AlgebraicField and _is_rational(c):  # K.to_sympy would expand powers of θ
            value = QQ.to_sympy(_rational_part(c))
        else:
            value = sympy.expand(K.to_sympy(c))
        if numeric and value.is_Rational:
            value = sympy.Float(value, _SHOWN_DIGITS)
        terms.append(value * z**k)
    return sympy.Add(*terms)


@final
class StabilityFunction:
    """R(z) of a Runge-Kutta method with its linear stability properties.

    **Attributes:**

    - `expression`: R(z), a sympy rational function of `z`, computed from the entries (an
      explicit s-stage method gives a polynomial of degree ≤ s); a numeric tableau's is shown
      with 17-digit coefficients, `numerator`/`denominator` keep the exact values.
    - `numerator`, `denominator`: N and D (sympy Polys in `z`, D(0) = 1, no common factor).
    - `real_interval`: r ≥ 0 such that [−r, 0] is the real stability interval (inf: unbounded).
    - `imaginary_interval`: y ≥ 0 such that [−iy, iy] is the imaginary stability interval.
    - `a_stable`, `l_stable`: `None` for parametrised families.
    - `assumed_order`: 0, or p when the intervals of a numeric tableau took the terms of degree
      ≤ p of |R|² − 1 from its order p rather than from its digits (see `notes`).
    - `notes`: sentences the report prints about how the rows were obtained.
    """

    def __init__(self, tableau: ButcherTableau, order: int | None = None) -> None:
        K, N, D = _rational_function(tableau)
        self.expression: sympy.Expr = _to_expr(N, K, tableau.numeric) / _to_expr(
            D, K, tableau.numeric
        )
        self.numerator = sympy.Poly.from_list(N, z, domain=K)
        self.denominator = sympy.Poly.from_list(D, z, domain=K)
        self.symbolic = bool(self.expression.free_symbols - {z})
        self.real_interval: float | None = None
        self.imaginary_interval: float | None = None
        self.a_stable: bool | None = None
        self.l_stable: bool | None = None
        self.assumed_order = 0
        self.notes: list[str] = []
        if self.symbolic:
            return
        if _RealField.of(K) is None:  # a family whose R(z) is free of its parameters
            K, N, D = _constant_field(N, D, K)
        field = _RealField.of(K)
        if field is None:
            self.notes.append(f"stability intervals not decided: {K} is not a real number field")
            return
        real, imaginary = _axis_polynomials(N, D, K)
        if tableau.numeric and order:
            real, imaginary = _as_order_requires(real, imaginary, D, order, K)
            self.assumed_order = order
            self.notes.append(
                f"numeric tableau: R(z) is computed from the digits given, but for the stability "
                f"intervals and A-stability the terms of degree ≤ {order} of |R|² − 1 on both "
                f"axes are taken as order {order} makes them (those of |e^z|² − 1): rounding "
                "would otherwise decide the sign of |R(iy)|² − 1 near 0."
            )
        self.real_interval = _first_exit(real, field)
        self.imaginary_interval = math.sqrt(_first_exit(imaginary, field))
        poles_right = len(D) == 1 or _hurwitz(_at_minus(D), field)  # D(−z) is Hurwitz
        self.a_stable = self.imaginary_interval == math.inf and poles_right
        self.l_stable = self.a_stable and len(N) < len(D)
        if self.a_stable:  # exact already; for a numeric tableau, its consequence
            self.real_interval = math.inf

    @property
    def real_interval_text(self) -> str | None:
        r = self.real_interval
        if r is None:
            return None
        if r == math.inf:
            return "(-∞, 0]"
        return "none (only z = 0)" if r == 0 else f"[{-r:.6g}, 0]"

    @property
    def imaginary_interval_text(self) -> str | None:
        y = self.imaginary_interval
        if y is None:
            return None
        if y == math.inf:
            return "the whole imaginary axis"
        return "none (only z = 0)" if y == 0 else f"[-{y:.6g}i, {y:.6g}i]"

    def rows(self) -> list[tuple[str, Any]]:
        """The report rows: R(z), the intervals, A- and L-stability."""
        return [
            ("stability function R(z)", self.expression),
            ("real stability interval", self.real_interval_text),
            ("imaginary stability interval", self.imaginary_interval_text),
            ("A-stable", self.a_stable),
            ("L-stable", self.l_stable),
        ]

    def evaluate(self, values: np.ndarray) -> np.ndarray:
        """R at complex points (numpy), e.g. to draw the stability region |R(z)| ≤ 1."""
        if self.symbolic:
            raise ValueError("substitute the family's parameters before evaluating R(z)")
        function = sympy.lambdify(z, self.expression, "numpy")
        return np.asarray(function(values), dtype=complex) * np.ones_like(values)


def stability_function(tableau: ButcherTableau, order: int | None = None) -> StabilityFunction:
    """R(z) and the linear stability properties of `tableau`.

    **Arguments:**

    - `tableau`: the method.
    - `order`: the order whose conditions the tableau meets; used only for a numeric tableau,
      whose intervals then take the low-degree terms of |R|² − 1 from that order.

    **Returns:** a `StabilityFunction`.
    """
    return StabilityFunction(tableau, order)


def _positive_semidefinite(M: list[list[Any]], field: _RealField) -> bool:
    """Exactly, by symmetric elimination (O(s³) operations): a positive diagonal pivot d leaves
    M PSD iff its Schur complement is; when no diagonal entry is positive, M is PSD iff what
    remains is zero."""
    M = [list(row) for row in M]
    left = list(range(len(M)))
    while left:
        signs = {i: field.sign(M[i][i]) for i in left}
        if any(v < 0 for v in signs.values()):
            return False
        pivot = next((i for i in left if signs[i] > 0), None)
        if pivot is None:
            return all(not M[i][j] for i in left for j in left)
        left.remove(pivot)
        for i in left:
            factor = M[i][pivot] / M[pivot][pivot]
            for j in left:
                M[i][j] -= factor * M[pivot][j]
    return True


def _rounding_bound(
    tableau: ButcherTableau, A: list[list[Any]], b: list[Any], field: _RealField
) -> tuple[list[Any], Any]:
    """For a numeric tableau: each weight's rounding, and β ≥ ‖δM‖₂ for every method whose
    entries lie within their rounding of the digits (β = s·max |δMᵢⱼ|, bounded term by term)."""
    K, s = field.domain, tableau.stages

    def eps(key: str) -> Any:
        return K.convert(sympy.Rational(tableau.entries[key].rounding))

    def size(x: Any) -> Any:
        return -x if field.sign(x) < 0 else x

    def product(x: Any, ex: Any, y: Any, ey: Any) -> Any:  # max |δ(xy)| over the box
        return size(x) * ey + ex * size(y) + ex * ey

    eb = [eps(f"b[{i}]") for i in range(s)]
    ea = [[eps(f"A[{i}][{j}]") for j in range(s)] for i in range(s)]
    worst = K.zero
    for i in range(s):
        for j in range(s):
            bound = product(b[i], eb[i], A[i][j], ea[i][j]) + product(
                b[j], eb[j], A[j][i], ea[j][i]
            )
            bound += product(b[i], eb[i], b[j], eb[j])
            if field.sign(bound - worst) > 0:
                worst = bound
    return eb, worst * s


def algebraically_stable(tableau: ButcherTableau) -> bool | None:
    """Burrage-Butcher algebraic stability: bᵢ ≥ 0 and M = BA + AᵀB − bbᵀ positive semidefinite.

    Decided exactly in the field of the entries. For a numeric tableau the answer must hold for
    every method within the entries' rounding: `True` when bᵢ ≥ its rounding and M − βI is PSD,
    `False` when some bᵢ + rounding < 0 or M + βI is not PSD (β bounds ‖δM‖₂), `None`
    (undetermined) otherwise, e.g. Gauss-Legendre in floats, whose exact M is 0. `None` for
    families.
    """
    if tableau.symbols:
        return None
    K, A, b = _in_domain(tableau)
    field = _RealField.of(K)
    if field is None:
        return None
    s = tableau.stages
    M = [[b[i] * A[i][j] + b[j] * A[j][i] - b[i] * b[j] for j in range(s)] for i in range(s)]
    if not tableau.numeric:
        return all(field.sign(x) >= 0 for x in b) and _positive_semidefinite(M, field)
    eb, beta = _rounding_bound(tableau, A, b, field)

    def shifted(shift: Any) -> list[list[Any]]:
        return [[M[i][j] + (shift if i == j else K.zero) for j in range(s)] for i in range(s)]

    if any(field.sign(x + e) < 0 for x, e in zip(b, eb, strict=True)):
        return False
    if not _positive_semidefinite(shifted(beta), field):
        return False
    robust = all(field.sign(x - e) >= 0 for x, e in zip(b, eb, strict=True))
    return True if robust and _positive_semidefinite(shifted(-beta), field) else None
