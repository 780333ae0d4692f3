"""Linear stability of Runge-Kutta methods, decided exactly (algebraic stability:
`algebraic_stability.py`, re-exported here).

R(z) = det(I − zA + z·1bᵀ) / det(I − zA) is computed in the smallest exact domain of the
entries (QQ, or an algebraic field such as QQ<√5>): for explicit methods as
1 + Σₖ zᵏ bᵀAᵏ⁻¹1, otherwise from the characteristic polynomials of A and A − 1bᵀ.

The stability intervals are the ends of {x ≤ 0 : |R(x)| ≤ 1} and {y ≥ 0 : |R(iy)| ≤ 1}
containing 0, i.e. of where P(u) = N(−u)² − D(−u)² ≤ 0 and F(w) = |N(i√w)|² − |D(i√w)|² ≤ 0
(w = y²). The real roots of P and F are isolated by flint with certified enclosures (over QQ,
factor by factor; over QQ<θ>, from arb balls of their coefficients, or from their norm over QQ
where those do not separate them); the sign of P or F between two of them is the sign of an
algebraic number, decided with rational interval arithmetic on an isolating interval of the
field's generator (`exact/real_roots.py`). Every step checks the report's `Deadline`: a row it stops
says "not decided within the time budget".
A-stability adds a Routh-Hurwitz test of the poles in the same field, and algebraic stability is
an LDLᵀ elimination with exact signs. Nothing is approximated except the printed interval ends.

A numeric tableau (floats, decimals) is analysed from its digits, exactly, with two exceptions
stated in the report. For the intervals, the terms of degree ≤ p of P and F are those order p
forces, since rounding would otherwise decide the sign of |R(iy)|² − 1 near 0; where the digits
leave the order between p and q (undetermined conditions), the intervals and A-stability are
worked out for every order in that range and are undetermined (None) unless all agree. And
L-stability's R(∞) = 0 is a condition like any order condition: its value is enclosed in ball
arithmetic over every method within the entries' precision and judged by the same rule
(`methods/entries/precision.py`), so the rounding of a published γ neither makes nor unmakes it.
Finally the intervals and A-stability decided from the digits are kept only where every method
within the precision shares them (`runge_kutta/stability_enclosure.py`); the others are
undetermined, and an end wider than the six digits printed says where it lies.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, final

import flint
import numpy as np
import sympy
from sympy.polys.densearith import dup_add, dup_exquo, dup_mul, dup_quo_ground, dup_sub
from sympy.polys.densebasic import dup_strip
from sympy.polys.domains import QQ
from sympy.polys.euclidtools import dup_gcd
from sympy.polys.matrices import DomainMatrix

from ...methods import ButcherTableau
from ...methods.entries.precision import Judgement, Verdict, judge_enclosure, working_precision
from ..budget import NOT_DECIDED, Deadline, OutOfTime
from ..enclosure.common import Enclosure, same_ends, spread_text
from ..exact.number_field import NumberField, to_sympy
from ..exact.rational_roots import Dense
from ..exact.real_roots import RealField, first_exit, hurwitz, is_rational, rational_part
from ..exact.weights import entries_in_field, smallest_domain
from .algebraic_stability import algebraically_stable as algebraically_stable
from .stability_enclosure import enclose_stability

z = sympy.Symbol("z")
_SHOWN_DIGITS = 17  # significant digits of R(z) printed for a numeric tableau


def _constant_field(N: Dense, D: Dense, K: Any) -> tuple[Any, Dense, Dense]:
    """N and D, free of symbols but over a domain with symbols, moved to their own field."""
    values = [to_sympy(K, c) for c in [*N, *D]]
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
    K, A, b = entries_in_field(tableau)
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


def _value_at_infinity(tableau: ButcherTableau, K: Any, N: Dense, D: Dense) -> Judgement:
    """R(∞) = 0 judged over every method within the precision of a numeric tableau's entries.

    R(∞) is the ratio of the z^k coefficients of det(I − z(A − 1bᵀ)) and det(I − zA), k the
    degree of the latter for the digits (exact zeros, such as an explicit first stage, are exact,
    so they keep it), both enclosed in arb balls from the entries' roundings.
    """
    s, n = tableau.stages, tableau.numbers
    k = len(_reversed_charpoly(entries_in_field(tableau)[1], K)) - 1
    with flint.ctx.workprec(working_precision([*n.A.flat, *n.b])):
        a, w = n.A.balls(), n.b.balls()
        shifted = [[a[i][j] - w[j] for j in range(s)] for i in range(s)]
        top_n = flint.arb_mat(shifted).charpoly().coeffs()[s - k]  # det(xI − M) read backwards
        top_d = flint.arb_mat(a).charpoly().coeffs()[s - k]
        return judge_enclosure(top_n / top_d, Fraction(1), len(N) < len(D))


def _centre(enclosure: Enclosure) -> float:
    return enclosure[0] if enclosure[0] == enclosure[1] else (enclosure[0] + enclosure[1]) / 2


def _end_text(end: float) -> str:
    return "none" if end == 0 else "unbounded" if end == math.inf else f"{end:.6g}"


def _to_expr(p: Dense, K: Any, numeric: bool) -> sympy.Expr:
    terms = []
    for k, c in enumerate(p[::-1]):
        if K.is_AlgebraicField and is_rational(c):  # K.to_sympy would expand powers of θ
            value = QQ.to_sympy(rational_part(c))
        else:
            value = sympy.expand(to_sympy(K, c))
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
    - `a_stable`, `l_stable`: `None` for parametrised families, and for a numeric tableau whose
      digits cannot decide them (`undetermined`).
    - `undetermined`: a numeric tableau's intervals, A- or L-stability are undetermined (None)
      at the precision of its entries; `notes` says which and why.
    - `assumed_order`: 0, or p when the intervals of a numeric tableau took the terms of degree
      ≤ p of |R|² − 1 from its order p rather than from its digits (see `notes`).
    - `notes`: sentences the report prints about how the rows were obtained.
    - `out_of_time`: the report's time budget ran out before every row was decided; the rows
      still None say `budget.NOT_DECIDED`.
    """

    def __init__(
        self,
        tableau: ButcherTableau,
        order: int | None = None,
        upper: int | None = None,
        deadline: Deadline | None = None,
    ) -> None:
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
        self.undetermined = False
        self.real_enclosure: Enclosure | None = None
        self.imaginary_enclosure: Enclosure | None = None
        self._open: set[str] = set()  # the intervals left undetermined
        self.assumed_order = 0
        self.notes: list[str] = []
        self.out_of_time = False  # the budget ran out before every row was decided
        if self.symbolic:
            return
        try:
            self._decide_rows(tableau, order, upper, (K, N, D), deadline or Deadline.never())
        except OutOfTime:
            self._stopped(tableau.numeric and order is not None, deadline)

    def _stopped(self, numeric: bool, deadline: Deadline | None) -> None:
        """The budget ran out: keep what an exact tableau's rows established (the real interval
        is decided before the imaginary one); a numeric tableau's rows, read for several
        orders and then enclosed, are not decided unless all of that was done."""
        self.out_of_time = True
        if numeric:
            self.real_interval = self.imaginary_interval = None
            self.real_enclosure = self.imaginary_enclosure = None
        self.a_stable = self.l_stable = None
        if deadline is not None:
            self.notes.append(deadline.note)

    def _decide_rows(
        self,
        tableau: ButcherTableau,
        order: int | None,
        upper: int | None,
        function: tuple[Any, Dense, Dense],
        deadline: Deadline,
    ) -> None:
        """The intervals, A- and L-stability; `OutOfTime` past `deadline`."""
        K, N, D = function
        deadline.check()
        if RealField.of(K) is None:  # a family whose R(z) is free of its parameters
            K, N, D = _constant_field(N, D, K)
        field = RealField.of(K)
        if field is None:
            self.notes.append(f"stability intervals not decided: {K} is not a real number field")
            return
        axes = _axis_polynomials(N, D, K)
        poles_right = len(D) == 1 or hurwitz(_at_minus(D), field)  # D(−z) is Hurwitz
        if not tableau.numeric or order is None:
            self._decide(*axes, field, poles_right, deadline)
            self.l_stable = self.a_stable and len(N) < len(D)
            if tableau.numeric:
                self._judge_infinity(tableau, K, N, D)
            return
        self.assumed_order = order
        top = order if upper is None else max(order, upper)
        outcomes = {
            q: self._decide(*_as_order_requires(*axes, D, q, K), field, poles_right, deadline)
            for q in range(order, top + 1)
        }
        self.real_interval, self.imaginary_interval, self.a_stable = outcomes[order]
        if order:
            self.notes.append(
                f"numeric tableau: R(z) is computed from the digits given, but for the stability "
                f"intervals and A-stability the terms of degree ≤ {order} of |R|² − 1 on both "
                f"axes are taken as order {order} makes them (those of |e^z|² − 1): rounding "
                "would otherwise decide the sign of |R(iy)|² − 1 near 0."
            )
        real_ends, imaginary_ends, verdicts = zip(*outcomes.values(), strict=True)
        open_rows = []
        if not same_ends(list(real_ends)):
            self.real_interval = None
            self._open.add("real")
            open_rows.append("the real stability interval")
        if not same_ends(list(imaginary_ends)):
            self.imaginary_interval = None
            self._open.add("imaginary")
            open_rows.append("the imaginary stability interval")
        if len(set(verdicts)) > 1:
            self.a_stable = None
            open_rows.append("A-stability")
        if open_rows:
            self.undetermined = True
            self.notes.append(
                f"{', '.join(open_rows)} undetermined: they differ between orders {order} "
                f"and {top}, which the undetermined conditions leave open (computed with the "
                "terms that each order fixes)."
            )
        deadline.check()
        self._enclose(tableau, order)
        self._judge_infinity(tableau, K, N, D)

    def _enclose(self, tableau: ButcherTableau, order: int) -> None:
        """Keep a numeric tableau's decided rows only where every method within the precision
        of its entries shares them (`runge_kutta/stability_enclosure.py`); the others are
        undetermined, and an end that the digits' own method misses is replaced by the one they all
        share."""
        found = enclose_stability(tableau, order, self.real_interval, self.imaginary_interval)
        real = (math.inf, math.inf) if found.a_stable else found.real  # the half-plane's axis
        lost, moved = [], []
        for row, digits, enclosure in (
            ("real", self.real_interval, real),
            ("imaginary", self.imaginary_interval, found.imaginary),
        ):
            shared = None if enclosure is None else _centre(enclosure)
            if digits is not None and shared is None:
                lost.append(f"the {row} stability interval")
                self._open.add(row)
            elif digits is not None and shared is not None and not same_ends([digits, shared]):
                moved.append(f"the {row} stability interval ({_end_text(digits)} for the digits)")
            if digits is not None:
                setattr(self, f"{row}_interval", shared)
                setattr(self, f"{row}_enclosure", enclosure)
        if self.a_stable is not None and found.a_stable != self.a_stable:
            if found.a_stable is None:
                lost.append("A-stability")
            else:
                moved.append(f"A-stability ({'yes' if self.a_stable else 'no'} for the digits)")
            self.a_stable = found.a_stable
        if lost:
            self.undetermined = True
            self.notes.append(
                f"{', '.join(lost)} undetermined: decided for the method the digits spell, but "
                "not for every method within the precision of the entries (|R|² − 1, enclosed "
                "in balls, may turn positive before the end or just right of 0, or its end "
                "moves by more than 10%)."
            )
        if moved:
            within = " counting |R|² − 1 ≤ 1.5e-8 as stable," if found.resolution_used else ""
            self.notes.append(
                f"{', '.join(moved)}: every method within the precision of the entries that "
                f"meets the conditions the digits meet shares the value shown,{within} and the "
                "digits' own method differs only by terms within that precision."
            )
        if found.resolution_used:
            self.notes.append(
                "a stability interval counts |R|² − 1 ≤ 1.5e-8 as stable: |R| touches 1 inside "
                "it, which rounding within the precision of the entries could lift."
            )

    def _decide(
        self, real: Dense, imaginary: Dense, field: RealField, poles_right: bool, deadline: Deadline
    ) -> tuple[float, float, bool]:
        """The intervals and A-stability from P and F, set on self and returned."""
        self.real_interval = first_exit(real, field, deadline)
        self.imaginary_interval = math.sqrt(first_exit(imaginary, field, deadline))
        self.a_stable = self.imaginary_interval == math.inf and poles_right
        if self.a_stable:  # exact already; for a numeric tableau, its consequence
            self.real_interval = math.inf
        return self.real_interval, self.imaginary_interval, self.a_stable

    def _judge_infinity(self, tableau: ButcherTableau, K: Any, N: Dense, D: Dense) -> None:
        """L-stability of a numeric tableau: A-stable and R(∞) = 0 within the precision."""
        if self.a_stable is False:
            self.l_stable = False
            return
        judged = _value_at_infinity(tableau, K, N, D)
        if judged.verdict is Verdict.FAILS:
            self.l_stable = False
        elif judged.verdict is Verdict.UNDETERMINED:
            self.l_stable = None
            self.undetermined = True
            spread = (
                f"R(∞) = {judged.residual:.3g} ± {judged.bound:.3g}"
                if math.isfinite(judged.bound)
                else "R(∞) is not bounded"
            )
            self.notes.append(
                f"L-stability is undetermined: {spread} over the methods within the precision of "
                "the entries."
            )
        else:
            self.l_stable = self.a_stable
            if len(N) >= len(D) and self.a_stable:
                self.notes.append(
                    f"R(∞) = {float(K.to_sympy(N[0]) / K.to_sympy(D[0])):.3g} for the digits "
                    f"as given, zero within the precision of the entries (±{judged.bound:.3g}): "
                    "counted as L-stable."
                )

    def shown(self, verdict: bool | None) -> bool | str | None:
        """A verdict as the report prints it: None is 'undetermined' where the digits left it."""
        if verdict is None and self.out_of_time:
            return NOT_DECIDED
        return "undetermined" if verdict is None and self.undetermined else verdict

    @property
    def real_interval_text(self) -> str | None:
        r = self.real_interval
        if r is None and self.out_of_time:
            return NOT_DECIDED
        if r is None:
            return "undetermined" if "real" in self._open else None
        if r == math.inf:
            return "(-∞, 0]"
        return "none (only z = 0)" if r == 0 else f"[{-r:.6g}, 0]{spread_text(self.real_enclosure)}"

    @property
    def imaginary_interval_text(self) -> str | None:
        y = self.imaginary_interval
        if y is None and self.out_of_time:
            return NOT_DECIDED
        if y is None:
            return "undetermined" if "imaginary" in self._open else None
        if y == math.inf:
            return "the whole imaginary axis"
        if y == 0:
            return "none (only z = 0)"
        return f"[-{y:.6g}i, {y:.6g}i]{spread_text(self.imaginary_enclosure)}"

    def rows(self) -> list[tuple[str, Any]]:
        """The report rows: R(z), the intervals, A- and L-stability."""
        return [
            ("stability function R(z)", self.expression),
            ("real stability interval", self.real_interval_text),
            ("imaginary stability interval", self.imaginary_interval_text),
            ("A-stable", self.shown(self.a_stable)),
            ("L-stable", self.shown(self.l_stable)),
        ]

    def evaluate(self, values: np.ndarray) -> np.ndarray:
        """R at complex points (numpy), e.g. to draw the stability region |R(z)| ≤ 1."""
        if self.symbolic:
            raise ValueError("substitute the family's parameters before evaluating R(z)")
        function = sympy.lambdify(z, self.expression, "numpy")
        return np.asarray(function(values), dtype=complex) * np.ones_like(values)


def stability_function(
    tableau: ButcherTableau,
    order: int | None = None,
    upper: int | None = None,
    deadline: Deadline | None = None,
) -> StabilityFunction:
    """R(z) and the linear stability properties of `tableau`.

    **Arguments:**

    - `tableau`: the method.
    - `order`: the order whose conditions the tableau meets; used only for a numeric tableau,
      whose intervals then take the low-degree terms of |R|² − 1 from that order.
    - `upper`: for a numeric tableau whose digits leave the order between `order` and `upper`
      (undetermined conditions): the intervals and A-stability are undetermined unless every
      order in that range gives the same.
    - `deadline`: the report's `Deadline` (None: no bound); rows not decided by then say
      `budget.NOT_DECIDED`, and those decided keep their values.

    **Returns:** a `StabilityFunction`.
    """
    return StabilityFunction(tableau, order, upper, deadline)
