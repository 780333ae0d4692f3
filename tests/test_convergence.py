"""Empirical convergence beside every proof: the log-log slope of the global error at halving steps
must match the order `bf.check` proves (within 0.3). A disagreement is a bug in one of the two.

- Runge-Kutta (and continuous declarations, through their solver tableau): the non-autonomous
  y' = −y + cos t on [0, 1], y(0) = 1, exact y = (cos t + sin t)/2 + e^{−t}/2 (the nodes c matter).
  f is affine in y, so implicit stages are solved exactly by one linear solve per step size.
- Multistep: the same problem, started from exact values.
- Splittings: y' = (L_A + L_B [+ L_C]) y with non-commuting 3×3 matrices; sub-flows exact
  (matrix exponentials by mpmath, no scipy) or advanced by the declared Runge-Kutta sub-step.

Orders ≤ 4 run in float64; higher orders in mpmath at 60 digits, so that rounding does not flatten
the slope. The step counts keep every error far above the arithmetic's noise.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import mpmath
import numpy as np
import pytest
import sympy

import butcherflow as bf

TOLERANCE = 0.3
GENERIC = sympy.Rational(1, 3)  # the value every symbol of a parametrised family takes
SLOW: set[str] = set()  # catalog entries whose check + integration take more than 5 s


# -- arithmetic ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Arithmetic:
    """float64, or mpmath at `dps` digits: scalars, cos/exp, and matrix exponentials."""

    dps: int | None  # None: float64

    @property
    def name(self) -> str:
        return "float64" if self.dps is None else f"mpmath-{self.dps}"

    def num(self, value: Any) -> Any:
        if self.dps is None:
            return float(sympy.N(value, 30))
        return mpmath.mpf(sympy.N(value, self.dps + 10))

    def cos(self, x: Any) -> Any:
        return math.cos(x) if self.dps is None else mpmath.cos(x)

    def exp(self, x: Any) -> Any:
        return math.exp(x) if self.dps is None else mpmath.exp(x)

    def sin(self, x: Any) -> Any:
        return math.sin(x) if self.dps is None else mpmath.sin(x)

    def expm(self, M: list[list[Any]]) -> list[list[Any]]:
        with mpmath.workdps((self.dps or 15) + 20):
            E = mpmath.expm(mpmath.matrix(M))
            return [[self._round(E[i, j]) for j in range(E.cols)] for i in range(E.rows)]

    def _round(self, x: Any) -> Any:
        return float(x) if self.dps is None else +x


FLOAT64 = Arithmetic(None)
MP60 = Arithmetic(60)


def arithmetic_for(order: int) -> Arithmetic:
    return FLOAT64 if order <= 4 else MP60


def steps_for(order: int) -> list[int]:
    """Three step counts N, 2N, 4N: fine enough to be asymptotic (high orders approach their
    slope slowly: Feagin 10 measures 10.4 at N = 32 → 64, 10.1 at 128 → 256), coarse enough to
    stay far above the noise of the arithmetic chosen for that order."""
    if order <= 1:
        return [64, 128, 256]
    if order == 2:
        return [32, 64, 128]
    if order <= 7:
        return [16, 32, 64]
    return [64, 128, 256]


def slopes(counts: Sequence[int], errors: Sequence[Any]) -> list[float]:
    return [
        math.log(float(errors[i]) / float(errors[i + 1])) / math.log(counts[i + 1] / counts[i])
        for i in range(len(errors) - 1)
    ]


# -- linear algebra on lists (works for floats and mpmath numbers) ------------------------------


def inverse(M: list[list[Any]], one: Any) -> list[list[Any]]:
    n = len(M)
    aug = [list(row) + [one if i == j else one * 0 for j in range(n)] for i, row in enumerate(M)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(aug[r][col]))
        aug[col], aug[pivot] = aug[pivot], aug[col]
        p = aug[col][col]
        aug[col] = [x / p for x in aug[col]]
        for r in range(n):
            if r != col and aug[r][col] != 0:
                f = aug[r][col]
                aug[r] = [x - f * y for x, y in zip(aug[r], aug[col], strict=True)]
    return [row[n:] for row in aug]


def matmul(X: list[list[Any]], Y: list[list[Any]]) -> list[list[Any]]:
    cols = list(zip(*Y, strict=True))
    return [[sum(a * b for a, b in zip(row, col, strict=True)) for col in cols] for row in X]


def matvec(X: list[list[Any]], v: list[Any]) -> list[Any]:
    return [sum(a * b for a, b in zip(row, v, strict=True)) for row in X]


def identity(n: int, one: Any) -> list[list[Any]]:
    return [[one if i == j else one * 0 for j in range(n)] for i in range(n)]


# -- Runge-Kutta on y' = −y + cos t ------------------------------------------------------------


def exact_solution(t: Any, ar: Arithmetic) -> Any:
    return (ar.cos(t) + ar.sin(t)) / 2 + ar.exp(-t) / 2


def rk_error(tableau: bf.ButcherTableau, n: int, ar: Arithmetic) -> Any:
    """|y_N − y(1)| after N steps of the tableau on y' = −y + cos t (stages solved exactly)."""
    one = ar.num(1)
    h = one / n
    s = tableau.stages
    A = [[ar.num(x) for x in row] for row in tableau.A]
    b = [ar.num(x) for x in tableau.b]
    c = [ar.num(x) for x in tableau.c]
    # K = f(t + c h, y + h A K) = −y 1 − h A K + cos(t + c h)  ⇔  (I + hA) K = −y 1 + cos(t + c h)
    M = inverse(
        [[(one if i == j else 0 * one) + h * A[i][j] for j in range(s)] for i in range(s)], one
    )
    u = [sum(row) for row in M]
    y = one
    for step in range(n):
        t = step * h
        forcing = [ar.cos(t + ci * h) for ci in c]
        K = [-y * ui + mf for ui, mf in zip(u, matvec(M, forcing), strict=True)]
        y = y + h * sum(bi * ki for bi, ki in zip(b, K, strict=True))
    return abs(y - exact_solution(one, ar))


# -- multistep on the same problem -------------------------------------------------------------


def lmm_error(method: bf.LinearMultistep, n: int, ar: Arithmetic) -> Any:
    one = ar.num(1)
    h = one / n
    alpha = [ar.num(x) for x in method.alpha]
    beta = [ar.num(x) for x in method.beta]
    k = method.steps
    ys = [exact_solution(j * h, ar) for j in range(k)]
    for m in range(n - k + 1):
        # Σ αⱼ y_{m+j} = h Σ βⱼ (−y_{m+j} + cos t_{m+j}), solved for y_{m+k}
        rhs = sum(h * beta[j] * ar.cos((m + j) * h) for j in range(k + 1))
        rhs -= sum((alpha[j] + h * beta[j]) * ys[m + j] for j in range(k))
        ys.append(rhs / (alpha[k] + h * beta[k]))
    return abs(ys[n] - exact_solution(one, ar))


def root_condition_numerically(method: bf.LinearMultistep) -> bool:
    """Zero stability checked with numpy: roots of ρ in the closed unit disc, simple on the
    circle (independent of the exact analysis)."""
    rho = [float(x) for x in reversed(method.alpha)]  # highest degree first
    roots = np.roots(rho)
    if np.any(np.abs(roots) > 1 + 1e-9):
        return False
    on_circle = roots[np.abs(np.abs(roots) - 1) <= 1e-9]
    return all(
        np.sum(np.abs(on_circle - r) < 1e-6) == 1 for r in on_circle
    )  # no repeated root on |ζ| = 1


# -- splittings of y' = Σ L_X y ----------------------------------------------------------------

OPERATORS = [
    [[0, 1, 0], [-1, 0, "1/2"], [0, 0, "-1/4"]],
    [["-1/2", 0, 0], ["1/3", "-1", 1], [0, "-1/2", 0]],
    [[0, 0, "1/2"], [0, "-1/3", 0], ["-1", "1/5", 0]],
    [["1/4", 0, 0], [0, 0, "1/3"], ["1/2", 0, "-1/2"]],
]
Y0 = [1, "1/2", "-1/3"]


def operator_matrices(ops: Sequence[str], ar: Arithmetic) -> dict[str, list[list[Any]]]:
    if len(ops) > len(OPERATORS):
        raise AssertionError(f"add test matrices for {len(ops)} operators")
    return {
        op: [[ar.num(sympy.Rational(x)) for x in row] for row in OPERATORS[i]]
        for i, op in enumerate(ops)
    }


def rk_substep_matrix(
    L: list[list[Any]], scale: Any, tableau: bf.ButcherTableau, ar: Arithmetic
) -> list[list[Any]]:
    """One explicit RK step of size `scale` on y' = L y, as the matrix that maps y to y_new."""
    one = ar.num(1)
    n = len(L)
    A = [[ar.num(x) for x in row] for row in tableau.A]
    b = [ar.num(x) for x in tableau.b]
    stages: list[list[list[Any]]] = []  # K_i as matrices: K_i = L (I + scale Σ_j a_ij K_j)
    for i in range(tableau.stages):
        arg = identity(n, one)
        for j in range(i):
            if A[i][j] != 0:
                arg = [
                    [x + scale * A[i][j] * y for x, y in zip(r1, r2, strict=True)]
                    for r1, r2 in zip(arg, stages[j], strict=True)
                ]
        stages.append(matmul(L, arg))
    step = identity(n, one)
    for bi, K in zip(b, stages, strict=True):
        step = [
            [x + scale * bi * y for x, y in zip(r1, r2, strict=True)]
            for r1, r2 in zip(step, K, strict=True)
        ]
    return step


def splitting_error(
    method: bf.Splitting, n: int, ar: Arithmetic, *, exact_flows: bool = False
) -> Any:
    one = ar.num(1)
    h = one / n
    mats = operator_matrices(method.operators, ar)
    size = len(OPERATORS[0])
    step = identity(size, one)
    for op, coefficient in method.steps:  # the first step acts first
        scale = ar.num(coefficient) * h
        L = mats[op]
        if exact_flows or method.substep is None:
            flow = ar.expm([[scale * x for x in row] for row in L])
        else:
            flow = rk_substep_matrix(L, scale, method.substep, ar)
        step = matmul(flow, step)
    y = [ar.num(sympy.Rational(x)) for x in Y0]
    for _ in range(n):
        y = matvec(step, y)
    total = [[sum(mats[op][i][j] for op in mats) for j in range(size)] for i in range(size)]
    exact = matvec(ar.expm(total), [ar.num(sympy.Rational(x)) for x in Y0])
    return max(abs(a - e) for a, e in zip(y, exact, strict=True))


# -- members of parametrised families ----------------------------------------------------------


def generic_member(method: bf.Method) -> bf.Method:
    """Every symbol replaced by 1/3 (methods without symbols are returned as they are)."""
    if isinstance(method, bf.ButcherTableau):
        return method.subs({str(s): GENERIC for s in method.symbols}) if method.symbols else method
    if isinstance(method, bf.LinearMultistep) and method.symbols:
        values = {s: GENERIC for s in method.symbols}
        return bf.LinearMultistep(
            [x.subs(values) for x in method.alpha],
            [x.subs(values) for x in method.beta],
            name=method.name,
        )
    if isinstance(method, bf.Splitting):
        symbols = {s for _, c in method.steps for s in c.free_symbols}
        if symbols:
            values = {s: GENERIC for s in symbols}
            return bf.Splitting(
                [(op, c.subs(values)) for op, c in method.steps],
                substep=method.substep if method.substep is not None else "exact",
                name=method.name,
            )
    return method


# -- the measurement ---------------------------------------------------------------------------


def measure(order: int, error: Callable[[int, Arithmetic], Any]) -> tuple[list[int], list[Any]]:
    ar = arithmetic_for(order)
    counts = steps_for(order)
    with mpmath.workdps(ar.dps or 15):
        return counts, [error(n, ar) for n in counts]


def assert_slope(label: str, order: int, counts: list[int], errors: list[Any]) -> None:
    measured = slopes(counts, errors)
    shown = ", ".join(f"N={n}: {float(e):.3e}" for n, e in zip(counts, errors, strict=True))
    if order == 0:
        # inconsistent: the error settles at a non-zero value instead of going to 0
        assert float(errors[-1]) > 1e-3, f"{label}: order 0 but the error vanishes ({shown})"
        assert abs(measured[-1]) <= TOLERANCE, f"{label}: order 0, slopes {measured} ({shown})"
        return
    floor = 1e-13 if arithmetic_for(order) is FLOAT64 else 1e-50
    assert float(errors[-1]) > floor, f"{label}: errors reach the rounding floor ({shown})"
    assert abs(measured[-1] - order) <= TOLERANCE, (
        f"{label}: proved order {order}, measured slopes {[round(x, 3) for x in measured]} "
        f"({shown})"
    )


def catalog_params() -> list[Any]:
    return [
        pytest.param(name, marks=pytest.mark.slow) if name in SLOW else name
        for name in sorted(bf.catalog)
    ]


@cache
def proof(name: str) -> tuple[bf.Method, bf.Report]:
    """The catalog entry (a generic member for families) and its report, once per module."""
    method = generic_member(bf.catalog[name])
    return method, bf.check(method)


@pytest.mark.parametrize("name", catalog_params())
def test_empirical_order_matches_the_proof(name: str) -> None:
    method, report = proof(name)
    if isinstance(method, bf.ButcherTableau):
        tableau = method
        counts, errors = measure(report.order, lambda n, ar: rk_error(tableau, n, ar))
        assert_slope(name, report.order, counts, errors)
    elif isinstance(method, bf.ContinuousDynamics):
        solver = method.solver_tableau()
        assert report.order == bf.check(solver).order
        counts, errors = measure(report.order, lambda n, ar: rk_error(solver, n, ar))
        assert_slope(f"{name} (solver {solver.name})", report.order, counts, errors)
    elif isinstance(method, bf.LinearMultistep):
        zero_stable = report.zero_stable  # type: ignore[attr-defined]
        assert zero_stable == root_condition_numerically(method), (
            f"{name}: the proof says zero_stable={zero_stable}, numpy's roots of ρ disagree"
        )
        if not zero_stable:
            return  # divergent however small h is: no slope to measure
        lmm = method
        counts, errors = measure(report.order, lambda n, ar: lmm_error(lmm, n, ar))
        assert_slope(name, report.order, counts, errors)
    elif isinstance(method, bf.Splitting):
        split = method
        exact = report.order
        counts, errors = measure(
            exact, lambda n, ar: splitting_error(split, n, ar, exact_flows=True)
        )
        assert_slope(f"{name} (exact sub-flows)", exact, counts, errors)
        if method.substep is not None:
            effective = report.effective_order  # type: ignore[attr-defined]
            counts, errors = measure(effective, lambda n, ar: splitting_error(split, n, ar))
            assert_slope(f"{name} ({method.substep_name} sub-steps)", effective, counts, errors)
    else:  # pragma: no cover - a new family needs its own measurement
        raise AssertionError(f"no convergence measurement for {type(method).__name__}")


# -- a few inline methods, so the measurement itself is tested without the catalog -------------


def test_measurement_of_known_orders() -> None:
    rk4 = bf.ButcherTableau(
        [[0, 0, 0, 0], ["1/2", 0, 0, 0], [0, "1/2", 0, 0], [0, 0, 1, 0]],
        ["1/6", "1/3", "1/3", "1/6"],
    )
    counts, errors = measure(4, lambda n, ar: rk_error(rk4, n, ar))
    assert abs(slopes(counts, errors)[-1] - 4) <= TOLERANCE
    # c matters: midpoint with c = (0, 1) is first order on this non-autonomous problem
    shifted = bf.ButcherTableau([[0, 0], ["1/2", 0]], [0, 1], c=[0, 1], row_sum_c=False)
    assert bf.check(shifted).order == 1
    counts, errors = measure(1, lambda n, ar: rk_error(shifted, n, ar))
    assert abs(slopes(counts, errors)[-1] - 1) <= TOLERANCE
    gauss = bf.ButcherTableau(
        [["1/4", "1/4 - sqrt(3)/6"], ["1/4 + sqrt(3)/6", "1/4"]], ["1/2", "1/2"]
    )
    counts, errors = measure(4, lambda n, ar: rk_error(gauss, n, ar))
    assert abs(slopes(counts, errors)[-1] - 4) <= TOLERANCE


def test_measurement_of_splittings() -> None:
    lie = bf.Splitting([("A", 1), ("B", 1)], substep="exact")
    strang = bf.Splitting([("A", "1/2"), ("B", 1), ("A", "1/2")], substep="exact")
    for method, order in ((lie, 1), (strang, 2)):
        counts, errors = measure(order, lambda n, ar, m=method: splitting_error(m, n, ar))
        assert abs(slopes(counts, errors)[-1] - order) <= TOLERANCE
    macaron = bf.Splitting([("A", "1/2"), ("B", 1), ("A", "1/2")], substep="euler")
    counts, errors = measure(1, lambda n, ar: splitting_error(macaron, n, ar))
    assert abs(slopes(counts, errors)[-1] - 1) <= TOLERANCE


def test_order_zero_multistep_does_not_converge() -> None:
    """y_{n+1} = h f_n is inconsistent (order 0): its error stays away from 0."""
    method = bf.LinearMultistep([0, 1], [1, 0])
    assert bf.check(method).order == 0
    counts, errors = measure(0, lambda n, ar: lmm_error(method, n, ar))
    assert float(errors[-1]) > 0.1
    assert abs(slopes(counts, errors)[-1]) <= TOLERANCE


# -- stability intervals beside sampling -------------------------------------------------------

z = sympy.Symbol("z")


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n
        for n in sorted(bf.catalog)
        if bf.catalog[n].family == "runge-kutta"
    ],
)
def test_stability_intervals_match_sampling(name: str) -> None:
    """|R| ≤ 1 at 20001 points of each proved interval (float64), and |R| > 1 somewhere in the
    0.05 beyond a finite end (mpmath, 50 digits: tangencies such as 1 + c·y¹⁰ are resolved)."""
    _, report = proof(name)
    stability = report.stability  # type: ignore[attr-defined]
    in_numpy = sympy.lambdify(z, stability.expression, "numpy")
    in_mpmath = sympy.lambdify(z, stability.expression, "mpmath")
    for end, direction in ((stability.real_interval, -1), (stability.imaginary_interval, 1j)):
        reach = 1000.0 if end == math.inf else end
        points = (direction * np.linspace(0.0, reach, 20001)).astype(complex)
        inside = np.abs(np.asarray(in_numpy(points), dtype=complex) * np.ones_like(points))
        assert inside.max() <= 1 + 1e-9, (
            f"{name}: |R| = {inside.max()} inside {direction}·[0, {end}]"
        )
        if end == math.inf:
            continue
        with mpmath.workdps(50):
            beyond = [
                abs(in_mpmath(mpmath.mpc(direction) * (mpmath.mpf(end) + mpmath.mpf(k) / 800)))
                for k in range(1, 41)
            ]
        assert max(beyond) > 1, (
            f"{name}: |R| ≤ 1 on {direction}·(0, {end} + 0.05] too: the interval is longer than "
            f"{end} (max |R| − 1 there: {mpmath.nstr(max(beyond) - 1, 5)})"
        )
    if stability.a_stable:
        assert stability.real_interval == stability.imaginary_interval == math.inf
