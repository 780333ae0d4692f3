"""Linear multistep methods: order, error constant, root condition, A(α) and boundary locus.

The method Σⱼ αⱼ y_{n+j} = h Σⱼ βⱼ f_{n+j} (j = 0..k) has order p when the conditions
C_q = Σⱼ (j^q αⱼ − q j^{q−1} βⱼ) / q! vanish for q = 0..p. Consistency (C_0 = ρ(1) = 0 and
C_1 = ρ'(1) − σ(1) = 0) is part of the definition: a method that fails it has order 0, however
many later conditions it meets. Zero-stability is the root condition on ρ(ζ) = Σⱼ αⱼ ζ^j,
decided exactly for rational coefficients. A(α) and the real stability interval are read, in
float64, from the boundary locus z(θ) = ρ(e^{iθ}) / σ(e^{iθ}).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations
from typing import Any, final

import flint
import mpmath
import numpy as np
import sympy

from ..errors import AnalysisError
from ..methods import LinearMultistep
from ..methods.numbers import ball
from ..methods.parameters import initial_values
from ..methods.precision import (
    RESOLUTION,
    Judgement,
    judge_enclosure,
    judge_exact,
    working_precision,
)
from .report import Report, trained_order_text
from .search import search_order

ZETA = sympy.Symbol("zeta")
DIGITS = 50  # working precision of the root moduli that exact factoring leaves to numerics
Root = tuple[Any, int, Any]  # (value, multiplicity, |value|)


def condition(alpha: Sequence[sympy.Expr], beta: Sequence[sympy.Expr], q: int) -> sympy.Expr:
    """The order condition C_q = Σⱼ (j^q αⱼ − q j^{q−1} βⱼ) / q!, exactly (C_0 = Σⱼ αⱼ)."""
    total = sympy.Integer(0)
    for j, (a, b) in enumerate(zip(alpha, beta, strict=True)):
        total += sympy.Integer(j) ** q * a
        if q > 0:
            total -= q * sympy.Integer(j) ** (q - 1) * b
    return sympy.expand(total / sympy.factorial(q))


def _scale(steps: int, q: int, alpha: Sequence[Any], beta: Sequence[Any]) -> Fraction:
    """The size of C_q's terms, Σⱼ (j^q |αⱼ| + q j^(q−1) |βⱼ|) / q!: the resolution's scale."""
    total = Fraction(0)
    for j in range(steps + 1):
        a, b = _magnitude(alpha[j]), _magnitude(beta[j])
        total += j**q * a + (q * j ** (q - 1) * b if q else 0)
    return max(total / math.factorial(q), Fraction(1, math.factorial(q)))


def _magnitude(x: sympy.Expr) -> Fraction:
    if x.is_Rational:
        return abs(Fraction(int(x.p), int(x.q)))
    return Fraction(abs(float(x)))


def _bound(method: LinearMultistep, q: int) -> Fraction:
    """How far C_q can move when every αⱼ, βⱼ moves within its precision (C_q is linear)."""
    total = Fraction(0)
    for j in range(method.steps + 1):
        total += j**q * method.alpha_numbers[j].rounding
        if q:
            total += q * j ** (q - 1) * method.beta_numbers[j].rounding
    return total / math.factorial(q)


def judge_condition(method: LinearMultistep, q: int, value: sympy.Expr) -> Judgement:
    """The verdict on C_q = `value` (computed exactly from the digits)."""
    if value.free_symbols:  # a family: only an identity counts
        return judge_exact(value, bool(sympy.simplify(value) == 0))
    zero = _vanishes(value)
    if not method.numeric:
        return judge_exact(value, zero)
    bound = _bound(method, q)
    with flint.ctx.workprec(working_precision([*method.alpha_numbers, *method.beta_numbers])):
        enclosure = ball(value, bound)
        scale = _scale(method.steps, q, method.alpha, method.beta)
        return judge_enclosure(enclosure, scale, lambda: zero)


def _vanishes(value: sympy.Expr) -> bool:
    if value == 0:
        return True
    if value.is_Rational:
        return False
    try:  # radicals: exactly zero iff the minimal polynomial is ζ itself
        return bool(sympy.minimal_polynomial(value, ZETA) == ZETA)
    except (NotImplementedError, sympy.polys.polyerrors.NotAlgebraic):
        return bool(value.equals(0))


def dahlquist_barrier(steps: int, explicit: bool) -> int:
    """The highest order of a zero-stable k-step method: k + 2 for even k, k + 1 for odd k
    (Dahlquist's first barrier), k when explicit."""
    if explicit:
        return steps
    return steps + 2 if steps % 2 == 0 else steps + 1


@dataclass(frozen=True)
class _Order:
    order: int
    upper: int | None
    consistent: bool
    conditions: list[sympy.Expr]
    failing: list[tuple[int, Judgement]]  # the conditions of order + 1 that fail
    undetermined: list[tuple[int, Judgement]]
    stopped: str | None


def _search(method: LinearMultistep, limit: int, bound: int | None, capped: bool) -> _Order:
    """Judge C_0, C_1, ... (consistency, C_0 = C_1 = 0, is part of the definition of order 1)."""
    conditions: list[sympy.Expr] = []

    def judged_at(n: int) -> list[tuple[int, Judgement]]:
        while len(conditions) <= n:
            conditions.append(condition(method.alpha, method.beta, len(conditions)))
        qs = (0, 1) if n == 1 else (n,)
        return [(q, judge_condition(method, q, conditions[q])) for q in qs]

    found = search_order(judged_at, limit=limit, deadline=math.inf, bound=bound, capped=capped)
    consistent = found.order >= 1
    return _Order(
        found.order,
        found.upper,
        consistent,
        conditions,
        found.failing,
        found.undetermined,
        found.stopped,
    )


def _raising(method: LinearMultistep, found: _Order, limit: int) -> list[str]:
    """Which parameter values of a family meet the conditions that fail generically."""
    symbols = sorted(method.symbols, key=str)
    names = ", ".join(map(str, symbols))
    equations = [j.residual for _, j in found.failing]
    try:
        solutions = sympy.solve(equations, symbols, dict=True)
    except NotImplementedError:
        return [f"sympy could not solve the next order condition for {names}"]
    notes = []
    for solution in solutions[:8]:
        alpha, beta = (
            [sympy.expand(x.subs(solution)) for x in v] for v in (method.alpha, method.beta)
        )
        if not _vanishes(alpha[-1]):  # else it is no longer a k-step method
            member = LinearMultistep(alpha, beta, name=method.name)
            order = _search(member, limit, None, False).order
            where = ", ".join(f"{s} = {v}" for s, v in solution.items())
            notes.append(f"{where} raises the order from {found.order} to {order}")
    return notes or [f"no value of {names} raises the order above {found.order}"]


def _mp(value: Any) -> Any:
    if isinstance(value, (mpmath.mpf, mpmath.mpc)):
        return value
    return mpmath.mpmathify(str(sympy.N(value, DIGITS + 10)))


def _on_circle_reciprocal(f: sympy.Poly) -> bool:
    """Whether every root of a palindromic f (degree 2m) lies on |ζ| = 1, exactly.

    f(ζ) = ζ^m g(ζ + 1/ζ), and |ζ| = 1 iff w = ζ + 1/ζ is real in [−2, 2]: Sturm counting decides.
    """
    w, a = sympy.Symbol("w"), f.all_coeffs()[::-1]
    m, t = len(a) // 2, [sympy.Integer(2), w]  # t[i] = ζ^i + ζ^(−i) as a polynomial in w
    while len(t) <= m:
        t.append(sympy.expand(w * t[-1] - t[-2]))
    g = sympy.Poly(a[m] + sum(a[m + i] * t[i] for i in range(1, m + 1)), w)
    return bool(g.count_roots(-2, 2) == g.degree())


def _place(modulus: Any, eps: float = 0.0) -> int:  # -1 inside, 0 on, 1 outside |ζ| = 1
    return 0 if abs(modulus - 1) <= eps else (-1 if modulus < 1 else 1)


def _root_condition(rho: sympy.Poly, rounding: float) -> tuple[bool | None, list[Root], str, bool]:
    """(zero-stable, roots, how it was decided, weakly: roots on the circle other than 1).
    Zero-stable is None when a numeric declaration leaves a root other than 1 within its
    precision of the unit circle (on it, or just outside: the digits cannot tell)."""
    exact = bool(rho.domain.is_QQ or rho.domain.is_ZZ) and rounding == 0
    k, used = rho.degree(), set()
    found: list[tuple[Any, int, Any, int, float]] = []  # value, mult, modulus, place, eps
    for f, mult in rho.factor_list()[1] if exact else rho.sqf_list()[1]:
        with mpmath.workdps(DIGITS):
            values = (
                [-f.nth(0) / f.nth(1)]
                if f.degree() == 1
                else mpmath.polyroots([_mp(c) for c in f.all_coeffs()], 400, 4 * DIGITS)
            )
        place: int | None = None
        if exact and f.degree() == 1:
            used.add("linear factors give exact rational roots")
            place = _place(abs(values[0]))
        elif exact and f.is_cyclotomic:
            used.add("cyclotomic factors have every root on the unit circle")
            place = 0
        elif exact and f.all_coeffs() == f.all_coeffs()[::-1]:
            used.add(
                "palindromic factors were decided by w = ζ + 1/ζ and Sturm counting on [-2, 2]"
            )
            place = 0 if _on_circle_reciprocal(f) else None  # else: some root lies outside
        elif exact:
            used.add(
                "the other factors have no root on the circle (a factor with one is palindromic); "
                f"each root's side was read from {DIGITS}-digit mpmath roots"
            )
        for value in values:
            modulus = abs(_mp(value))
            side = _place(modulus, 0.0 if exact else 1e-40) if place is None else place
            eps = 0.0
            if rounding > 0:
                # How far the root can move when ρ moves by (k+1)·rounding on the circle:
                # |δζ|^m |ρ^(m)(ζ)| / m! = |δρ| for a root of multiplicity m.
                taylor = [_mp(c) for c in rho.diff((ZETA, mult)).all_coeffs()]
                with mpmath.workdps(DIGITS):
                    size = abs(mpmath.polyval(taylor, _mp(value))) / math.factorial(mult)
                eps = float(((k + 1) * rounding / size) ** (1.0 / mult)) if size else math.inf
                side = 0 if abs(modulus - 1) <= eps else side
            found.append((value, mult, modulus, side, eps))
    circle = [r for r in found if r[3] == 0]
    clustered = any(abs(_mp(a[0]) - _mp(b[0])) <= a[4] + b[4] for a, b in combinations(circle, 2))
    stable: bool | None = (
        all(r[3] < 1 for r in found) and all(r[1] == 1 for r in circle) and not clustered
    )
    parasitic = [r for r in circle if abs(_mp(r[0]) - 1) > max(r[4], 1e-30)]
    weakly = bool(stable and parasitic)
    if stable and parasitic and rounding > 0:
        stable, weakly = None, False  # on the circle only to within the precision
    how = (
        "zero-stability decided exactly: ρ factored over QQ; " + "; ".join(sorted(used))
        if exact
        else f"ρ is over {rho.domain}: multiplicities exact (square-free factorisation), sides "
        f"from {DIGITS}-digit mpmath roots (within 1e-40 of |ζ| = 1 counts as on it)"
    )
    if rounding > 0:
        how += "; numeric declaration: a root within the first-order effect of the rounding of "
        how += "|ζ| = 1 counts as on it (two such roots that close together as a double one)"
    found.sort(key=lambda r: (-float(r[2]), float(mpmath.arg(_mp(r[0])))))
    roots = [
        (v if isinstance(v, sympy.Basic) else complex(v), m, float(a)) for v, m, a, *_ in found
    ]
    if stable is None:
        how += "; a root other than 1 lies within the precision of |ζ| = 1: undetermined"
    return stable, roots, how, weakly


def _locus(rho_c: np.ndarray, sigma_c: np.ndarray, theta: np.ndarray) -> np.ndarray:
    w = np.exp(1j * theta)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(np.polyval(rho_c, w) / np.polyval(sigma_c, w))


def _stable(rho_c: np.ndarray, sigma_c: np.ndarray, z: complex) -> bool:
    """Every root of ρ(ζ) − zσ(ζ) in the closed unit disc, those on the circle simple."""
    coeffs = rho_c - z * sigma_c
    if abs(coeffs[0]) <= 1e-12 * np.abs(coeffs).max():
        return False  # the degree drops: a root has gone to infinity
    roots = np.roots(coeffs)
    if np.any(np.abs(roots) > 1 + 1e-9):
        return False
    edge = roots[np.abs(roots) > 1 - 1e-9]
    return all(abs(a - b) > 1e-6 for a, b in combinations(edge, 2))


def _angle(z: np.ndarray, tiny: float) -> np.ndarray:
    """|arg(−z)| in degrees; 180 at infinity and near 0, where cancellation in ρ(e^{iθ}) makes
    the angle noise (by the order conditions it tends to 90° at z = 0 anyway)."""
    angle = np.degrees(np.arctan2(np.abs(z.imag), -z.real))
    return np.where(np.isfinite(z) & (np.abs(z) > tiny), angle, 180.0)


def _zoom(g: Callable[[np.ndarray], np.ndarray], lo: float, hi: float) -> float:
    """Where g is least on [lo, hi] (unimodal there), by nested grids: 32^6 times finer."""
    for _ in range(6):
        ts = np.linspace(lo, hi, 65)
        i = int(np.argmin(g(ts)))
        lo, hi = ts[max(i - 1, 0)], ts[min(i + 1, 64)]
    return 0.5 * (lo + hi)


def _a_alpha(
    rho_c: np.ndarray, sigma_c: np.ndarray, tiny: float, snap: bool = True
) -> float | None:
    def angle(ts: np.ndarray) -> np.ndarray:
        return _angle(_locus(rho_c, sigma_c, ts), tiny)

    theta = np.linspace(0.0, np.pi, 4097)  # real coefficients: the locus is symmetric
    ang = angle(theta)
    best = min(90.0, float(ang.min()))  # the ends θ = 0, π are real points of the locus
    interior = np.flatnonzero((ang[1:-1] <= ang[:-2]) & (ang[1:-1] <= ang[2:])) + 1
    for i in sorted(interior, key=lambda i: ang[i])[:8]:
        best = min(best, float(angle(np.array([_zoom(angle, theta[i - 1], theta[i + 1])]))[0]))
    if snap and best > 90.0 - 1e-7:
        best = 90.0  # float64 noise on A-stable loci
    # Off the locus the sector is all stable or all not: test points in it decide which.
    probes = [-1e-3, -1.0, -1e3, -1e6] if best > 1e-6 else list(-np.logspace(-3, 6, 64))
    if not all(_stable(rho_c, sigma_c, z) for z in probes if -z > 2 * tiny):
        return None
    return best if best > 1e-6 else 0.0


def _real_interval(rho_c: np.ndarray, sigma_c: np.ndarray, tiny: float) -> float:
    def height(ts: np.ndarray) -> np.ndarray:
        return np.abs(_locus(rho_c, sigma_c, ts).imag)

    theta = np.linspace(0.0, np.pi, 4097)
    z = _locus(rho_c, sigma_c, theta)
    crossings = [z[0].real, z[-1].real, *z[1:-1][z[1:-1].imag == 0].real]
    for i in np.flatnonzero(z.imag[:-1] * z.imag[1:] < 0):
        point = complex(
            _locus(rho_c, sigma_c, np.array([_zoom(height, theta[i], theta[i + 1])]))[0]
        )
        if np.isfinite(point) and abs(point.imag) <= 1e-9 * (1 + abs(point.real)):
            crossings.append(point.real)  # a sign change through infinity is no crossing
    first = min((-x for x in crossings if np.isfinite(x) and x < -tiny), default=math.inf)
    return first if _stable(rho_c, sigma_c, -min(first / 2, 1.0)) else 0.0


@final
@dataclass(eq=False, repr=False)
class MultistepReport(Report):
    """What `analyse_multistep` proves about a linear multistep method.

    **Attributes:**

    - `method`: the `LinearMultistep` declaration.
    - `order`: the largest p with C_0 = … = C_p = 0; 0 when the method is inconsistent. For a
      family with symbols, the generic order (conditions that vanish identically).
    - `consistent`: C_0 = C_1 = 0.
    - `error_constant`: the normalised error constant C_{p+1}/σ(1) (Hairer-Nørsett-Wanner's C,
      invariant when α and β are scaled together: Adams-Bashforth 2 gives 5/12, the trapezoid
      −1/12, BDFk −1/(k+1)); `None` when inconsistent, when σ(1) = 0 or when the search capped.
    - `zero_stable`: the root condition on ρ; `None` when ρ has symbols, or when a numeric
      declaration's precision cannot place a root on or off the unit circle.
    - `weakly_stable`: zero-stable with roots on the unit circle other than ζ = 1 (Milne-Simpson,
      leapfrog): their error components are never damped.
    - `order_upper`: a certain upper bound on the order (None when no condition was seen to
      fail); `undetermined`: conditions a numeric declaration's digits cannot decide.
    - `rho`, `sigma`: ρ(ζ) = Σ αⱼ ζ^j and σ(ζ) = Σ βⱼ ζ^j as `sympy.Poly` in `ZETA`.
    - `roots`: the roots of ρ as (value, multiplicity, |value|), largest modulus first; rational
      roots exact (sympy), others `complex`; symbolic when ρ has symbols and sympy finds them all.
    - `a_alpha`: the A(α) angle in degrees (90 for A-stable methods); `None` when the negative
      real axis is not in the stability region, or for families.
    - `real_interval`: the largest r with [−r, 0] in the stability region (`math.inf` when
      unbounded, `None` for families).
    - `explicit` (property): βₖ = 0.
    - `notes`: how each verdict was reached (tolerances, exactness), in words.
    """

    method: LinearMultistep
    order: int
    order_upper: int | None
    consistent: bool
    error_constant: sympy.Expr | None
    zero_stable: bool | None
    weakly_stable: bool
    rho: sympy.Poly
    sigma: sympy.Poly
    roots: list[Root]
    a_alpha: float | None
    real_interval: float | None
    undetermined: list[tuple[str, Any, float]]
    notes: list[str]

    @property
    def order_is_lower_bound(self) -> bool:
        return self.order_upper != self.order

    @property
    def explicit(self) -> bool:
        return self.method.is_explicit

    @property
    def claims(self) -> dict[str, tuple[Any, Any]]:
        claims = super().claims
        if self.method.zero_stable is not None:
            claims["zero_stable"] = (self.method.zero_stable, self.zero_stable)
        return claims

    def conditions(self, order: int) -> list[sympy.Expr]:
        """The exact conditions C_0..C_order (polynomials in the family's symbols, if any)."""
        return [condition(self.method.alpha, self.method.beta, q) for q in range(order + 1)]

    def boundary_locus(self, n: int = 512) -> np.ndarray:
        """z(θ) = ρ(e^{iθ})/σ(e^{iθ}) at θ = 2πi/n, i = 0..n−1.

        **Returns:** a complex array of shape `(n,)` (`inf`/`nan` where σ(e^{iθ}) = 0).
        """
        if self.method.symbols:
            names = ", ".join(sorted(map(str, self.method.symbols)))
            raise AnalysisError(f"{self.method.name}: no boundary locus for a family ({names})")
        rho_c, sigma_c = _float_coeffs(self.method)
        return _locus(rho_c, sigma_c, 2 * np.pi * np.arange(n) / n)

    @property
    def block_order_text(self) -> str:
        """For declared parameters: the order for every value, and at their initial values."""
        declared = self.method.parameters
        if not declared or self.method.symbols - set(declared):
            return str(self.order)
        start = initial_values(declared)
        member = analyse_multistep(self.method.subs({str(s): v for s, v in start.items()}))
        return trained_order_text(
            self.order, self.method.symbols, member.order, {str(s): v for s, v in start.items()}
        )

    def rows(self) -> list[tuple[str, Any]]:
        return [
            ("steps", self.method.steps),
            ("explicit", self.explicit),
            ("order", f"{self.order}" + ("+" if self.order_is_lower_bound else "")),
            ("undetermined", [f"{c}: {r:.3g} ± {b:.3g}" for c, r, b in self.undetermined] or None),
            ("consistent", self.consistent),
            ("error constant C_{p+1}/σ(1)", self.error_constant),
            ("zero-stable", self._zero_stability_text()),
            ("ρ(ζ)", self.rho.as_expr()),
            ("σ(ζ)", self.sigma.as_expr()),
            ("roots of ρ", [_show_root(*root) for root in self.roots]),
            ("A(α) angle (degrees)", self.a_alpha),
            ("real stability interval [-r, 0]: r", self.real_interval),
        ]

    def _zero_stability_text(self) -> Any:
        if self.zero_stable and self.weakly_stable:
            return "yes, weakly (roots on |ζ| = 1 other than 1)"
        return self.zero_stable

    def to_dict(self) -> dict[str, Any]:
        roots = [{"value": str(v), "multiplicity": m, "modulus": a} for v, m, a in self.roots]
        return {
            "steps": self.method.steps,
            "explicit": self.explicit,
            "numeric": self.method.numeric,
            "order": self.order,
            "consistent": self.consistent,
            "error_constant": self.error_constant,
            "zero_stable": self.zero_stable,
            "weakly_stable": self.weakly_stable,
            "order_upper": self.order_upper,
            "undetermined": [
                {"condition": c, "residual": r, "bound": b} for c, r, b in self.undetermined
            ],
            "rho": self.rho.as_expr(),
            "sigma": self.sigma.as_expr(),
            "roots": roots,
            "a_alpha": self.a_alpha,
            "real_interval": "inf" if self.real_interval == math.inf else self.real_interval,
            "conditions": self.conditions(self.order + 1),
        }


def _show_root(value: Any, multiplicity: int, modulus: Any) -> str:
    if isinstance(value, complex):
        value = f"{value.real:.6g}{f'{value.imag:+.6g}i' if value.imag else ''}"
    times = f"×{multiplicity}, " if multiplicity > 1 else ""
    return f"{value} ({times}|ζ| = {modulus:.6g})" if isinstance(modulus, float) else f"{value}"


def _float_coeffs(method: LinearMultistep) -> tuple[np.ndarray, np.ndarray]:
    """float64 coefficients of ρ and σ, highest power first (numpy's convention)."""
    rho, sigma = ([float(x) for x in v[::-1]] for v in (method.alpha, method.beta))
    return np.array(rho), np.array(sigma)


def _poly(coeffs: Sequence[sympy.Expr]) -> sympy.Poly:
    expr = sum((c * ZETA**j for j, c in enumerate(coeffs)), sympy.Integer(0))
    try:  # radicals get their algebraic field (QQ<√2>) rather than EX
        return sympy.Poly(expr, ZETA, extension=True)
    except (sympy.PolynomialError, NotImplementedError):
        return sympy.Poly(expr, ZETA)


def analyse_multistep(
    method: LinearMultistep, *, max_order: int | None = None, time_budget: float | None = None
) -> MultistepReport:
    """Prove the order, error constant and stability of a linear multistep method.

    **Arguments:**

    - `method`: the declaration.
    - `max_order`: stop the order search there (default 2k + 1: no k-step method has order above
      2k, so C_{2k+1} must fail).
    - `time_budget`: accepted like every family's analysis; the k + 2 linear conditions of a
      k-step method need no budget.

    **Returns:** a `MultistepReport`.
    """
    k = method.steps
    limit = 2 * k + 1 if max_order is None else max_order
    if limit < 1:
        raise AnalysisError(f"max_order must be at least 1 (got {limit})")
    notes: list[str] = []
    rho, sigma = _poly(method.alpha), _poly(method.beta)
    zero_stable: bool | None = None
    weakly = False
    roots: list[Root] = []
    if rho.free_symbols - {ZETA}:
        factored = sympy.factor(rho.as_expr())
        notes.append(f"zero-stability depends on the parameters: ρ = {factored}")
        solved = sympy.roots(rho)
        if sum(solved.values()) == rho.degree():
            roots = [(v, m, sympy.Abs(v)) for v, m in solved.items()]
    else:
        zero_stable, roots, how, weakly = _root_condition(rho, float(method.rounding))
        notes.append(how)
    barrier = dahlquist_barrier(k, method.is_explicit) if zero_stable else 2 * k
    found = _search(method, limit, barrier, max_order is not None)
    if method.numeric:
        notes.append(
            "numeric declaration: C_q is computed exactly from the digits and judged against "
            "the most the entries' precision can move it (C_q is linear in them): met when "
            f"that is below {float(RESOLUTION):.2g} of the size of C_q's terms, fails when "
            "|C_q| exceeds it, undetermined otherwise"
        )
    if found.undetermined:
        notes.append(
            f"order {found.order} established; C_{found.order + 1} is undetermined at the "
            "precision of the entries"
            + (
                f" (Dahlquist's first barrier: a zero-stable {k}-step method has order ≤ {barrier})"
                if found.order + 1 > barrier
                else ""
            )
        )
    if weakly:
        notes.append(
            "zero-stable, but only weakly: ρ has roots on the unit circle other than ζ = 1, "
            "whose (parasitic) error components are never damped"
        )
    if method.symbols:
        notes.append("the order is the family's generic order (conditions that vanish identically)")
        notes += _raising(method, found, limit)
    if found.stopped == "max_order":
        notes.append(f"C_0..C_{limit} all vanish: the order is at least {limit} (search stopped)")
    error_constant = None
    if found.consistent and found.upper == found.order:
        sigma_1 = sympy.expand(sum(method.beta, sympy.Integer(0)))
        if _vanishes(sigma_1):
            notes.append("σ(1) = 0, so the normalised error constant C_{p+1}/σ(1) is undefined")
        else:
            error_constant = found.conditions[found.order + 1] / sigma_1
            if not error_constant.is_Rational:
                error_constant = sympy.simplify(error_constant)
    a_alpha: float | None = None
    interval: float | None = None
    if method.symbols:
        notes.append("A(α) and the stability interval need numeric coefficients")
    else:
        rho_c, sigma_c = _float_coeffs(method)
        # Near z = 0 the locus's angle is noise: float64 cancellation, or the rounding of a
        # numeric declaration, which moves z(θ) by δ ≈ (k+1)·rounding/|σ(1)| there; beyond 1000δ
        # that tilts the angle by under 0.06°.
        tiny, sigma_1 = 1e-6, abs(float(sum(method.beta, sympy.Integer(0))))
        if method.numeric and sigma_1:
            tiny = max(tiny, 1000 * (k + 1) * float(method.rounding) / sigma_1)
        # Dahlquist's second barrier: an A-stable multistep method has order ≤ 2, so above
        # order 2 a reading within float noise of 90° is not rounded up to A-stability.
        a_alpha = _a_alpha(rho_c, sigma_c, tiny, snap=found.order <= 2)
        interval = _real_interval(rho_c, sigma_c, tiny)
        notes.append(
            "A(α) and the real stability interval are float64 readings of the boundary locus "
            f"(4097 angles on [0, π], refined; points within {tiny:.3g} of 0 ignored), checked by "
            "root tests in the region"
        )
    return MultistepReport(
        method=method,
        order=found.order,
        order_upper=found.upper,
        consistent=found.consistent,
        error_constant=error_constant,
        zero_stable=zero_stable,
        weakly_stable=weakly,
        rho=rho,
        sigma=sigma,
        roots=roots,
        a_alpha=a_alpha,
        real_interval=interval,
        undetermined=[(f"C_{q}", j.residual, j.bound) for q, j in found.undetermined],
        notes=notes,
    )
