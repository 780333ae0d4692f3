"""The global error at t = 1 of each family's integrator on its test problem, in float64 or
mpmath (`convergence.py` measures its slope).

- Runge-Kutta (and continuous declarations, through their solver tableau): the non-autonomous
  y' = −y + cos t on [0, 1], y(0) = 1, exact y = (cos t + sin t)/2 + e^{−t}/2 (the nodes c matter).
  f is affine in y, so implicit stages are solved exactly by one linear solve per step size.
- Multistep: the same problem, started from exact values.
- General linear methods: the same problem as the autonomous system (y, t)' = (−y + cos t, 1)
  (the method advances t too, so no stage abscissae are assumed); the r inputs start from the
  exact solution by the declared starting procedure (y(x + θh) and h·f(x + θh) taken exactly),
  and the error at t = 1 is the largest difference between an output and the starting procedure
  applied to the exact solution there.
- Splittings: y' = (L_A + L_B [+ L_C ...]) y with non-commuting 3×3 matrices; sub-flows exact
  (matrix exponentials by mpmath, no scipy) or advanced by the declared Runge-Kutta sub-step.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, final

import mpmath
import sympy

from ..methods import AdditiveRungeKutta, ButcherTableau, GeneralLinear, LinearMultistep, Splitting

Matrix = list[list[Any]]


# -- arithmetic ---------------------------------------------------------------------------------


@final
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

    def expm(self, M: Matrix) -> Matrix:
        with mpmath.workdps((self.dps or 15) + 20):
            E = mpmath.expm(mpmath.matrix(M))
            return [[self._round(E[i, j]) for j in range(E.cols)] for i in range(E.rows)]

    def _round(self, x: Any) -> Any:
        return float(x) if self.dps is None else +x


FLOAT64 = Arithmetic(None)
MP60 = Arithmetic(60)


# -- linear algebra on lists (works for floats and mpmath numbers) ------------------------------


def inverse(M: Matrix, one: Any) -> Matrix:
    """Gauss-Jordan inverse with partial pivoting."""
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


def matmul(X: Matrix, Y: Matrix) -> Matrix:
    cols = list(zip(*Y, strict=True))
    return [[sum(a * b for a, b in zip(row, col, strict=True)) for col in cols] for row in X]


def matvec(X: Matrix, v: list[Any]) -> list[Any]:
    return [sum(a * b for a, b in zip(row, v, strict=True)) for row in X]


def identity(n: int, one: Any) -> Matrix:
    return [[one if i == j else one * 0 for j in range(n)] for i in range(n)]


def plus_scaled(X: Matrix, c: Any, Y: Matrix) -> Matrix:
    """X + c·Y, entry by entry."""
    return [[x + c * y for x, y in zip(r1, r2, strict=True)] for r1, r2 in zip(X, Y, strict=True)]


# -- Runge-Kutta on y' = −y + cos t ------------------------------------------------------------


def exact_solution(t: Any, ar: Arithmetic) -> Any:
    """y(t) of y' = −y + cos t, y(0) = 1."""
    return (ar.cos(t) + ar.sin(t)) / 2 + ar.exp(-t) / 2


def rk_error(tableau: ButcherTableau, n: int, ar: Arithmetic) -> Any:
    """|y_N − y(1)| after N steps of the tableau on y' = −y + cos t (stages solved exactly)."""
    one = ar.num(1)
    h = one / n
    s = tableau.stages
    A = [[ar.num(x) for x in row] for row in tableau.A]
    b = [ar.num(x) for x in tableau.b]
    c = [ar.num(x) for x in tableau.c]
    # K = f(t + c h, y + h A K) = −y 1 − h A K + cos(t + c h)  ⇔  (I + hA) K = −y 1 + cos(t + c h)
    M = inverse(plus_scaled(identity(s, one), h, A), one)
    u = [sum(row) for row in M]
    y = one
    for step in range(n):
        t = step * h
        forcing = [ar.cos(t + ci * h) for ci in c]
        K = [-y * ui + mf for ui, mf in zip(u, matvec(M, forcing), strict=True)]
        y = y + h * sum(bi * ki for bi, ki in zip(b, K, strict=True))
    return abs(y - exact_solution(one, ar))


# -- multistep on the same problem -------------------------------------------------------------


def lmm_error(method: LinearMultistep, n: int, ar: Arithmetic) -> Any:
    """|y_N − y(1)| of the multistep method on y' = −y + cos t, started from exact values."""
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


# -- general linear methods on the same problem ------------------------------------------------


def glm_start(method: GeneralLinear, x: Any, h: Any, ar: Arithmetic) -> list[list[Any]]:
    """The r inputs (y, t) at x by the starting procedure, from the exact solution: each term
    c·y(x + θh) contributes c·(y, t) there, c·h·f(x + θh) contributes c·h·(−y + cos t, 1)."""
    out = []
    for terms in method.start:
        y = t = 0 * h
        for c, kind, theta in terms:
            at = x + ar.num(theta) * h
            value = exact_solution(at, ar)
            if kind == "y":
                y, t = y + ar.num(c) * value, t + ar.num(c) * at
            else:
                y += ar.num(c) * h * (-value + ar.cos(at))
                t += ar.num(c) * h
        out.append([y, t])
    return out


def glm_error(method: GeneralLinear, n: int, ar: Arithmetic) -> Any:
    """max over the outputs of |y[N] − S(1)| after N steps on y' = −y + cos t, S the starting
    procedure on the exact solution. Stage times are explicit (t' = 1); the y-stages then solve
    (I + hA) Y = h A cos T + U y exactly (f is affine in y)."""
    one = ar.num(1)
    h = one / n
    s = method.stages
    A, U, B, V = (
        [[ar.num(x) for x in row] for row in m] for m in (method.A, method.U, method.B, method.V)
    )
    M = inverse(plus_scaled(identity(s, one), h, A), one)
    ones = [one] * s
    state = glm_start(method, 0 * one, h, ar)
    for _ in range(n):
        y, t = [v[0] for v in state], [v[1] for v in state]
        T = [a + b for a, b in zip(matvec(A, [h * o for o in ones]), matvec(U, t), strict=True)]
        Yy = matvec(
            M,
            [
                h * a + b
                for a, b in zip(matvec(A, [ar.cos(x) for x in T]), matvec(U, y), strict=True)
            ],
        )
        Fy = [-a + ar.cos(x) for a, x in zip(Yy, T, strict=True)]
        new_y = [a + h * b for a, b in zip(matvec(V, y), matvec(B, Fy), strict=True)]
        new_t = [a + h * b for a, b in zip(matvec(V, t), matvec(B, ones), strict=True)]
        state = [[a, b] for a, b in zip(new_y, new_t, strict=True)]
    exact = glm_start(method, one, h, ar)
    return max(abs(a[0] - e[0]) for a, e in zip(state, exact, strict=True))


# -- splittings of y' = Σ L_X y ----------------------------------------------------------------

OPERATORS: list[list[list[Any]]] = [
    [[0, 1, 0], [-1, 0, "1/2"], [0, 0, "-1/4"]],
    [["-1/2", 0, 0], ["1/3", "-1", 1], [0, "-1/2", 0]],
    [[0, 0, "1/2"], [0, "-1/3", 0], ["-1", "1/5", 0]],
    [["1/4", 0, 0], [0, 0, "1/3"], ["1/2", 0, "-1/2"]],
]
Y0: list[Any] = [1, "1/2", "-1/3"]


def operator_matrices(ops: Sequence[str], ar: Arithmetic) -> dict[str, Matrix]:
    """The test matrices L_X, one per operator (at most four operators)."""
    if len(ops) > len(OPERATORS):
        raise ValueError(
            f"the convergence problem has test matrices for {len(OPERATORS)} "
            f"operators, not {len(ops)}"
        )
    return {
        op: [[ar.num(sympy.Rational(x)) for x in row] for row in OPERATORS[i]]
        for i, op in enumerate(ops)
    }


def rk_substep_matrix(L: Matrix, scale: Any, tableau: ButcherTableau, ar: Arithmetic) -> Matrix:
    """One explicit RK step of size `scale` on y' = L y, as the matrix that maps y to y_new."""
    one = ar.num(1)
    n = len(L)
    A = [[ar.num(x) for x in row] for row in tableau.A]
    b = [ar.num(x) for x in tableau.b]
    stages: list[Matrix] = []  # K_i as matrices: K_i = L (I + scale Σ_j a_ij K_j)
    for i in range(tableau.stages):
        arg = identity(n, one)
        for j in range(i):
            if A[i][j] != 0:
                arg = plus_scaled(arg, scale * A[i][j], stages[j])
        stages.append(matmul(L, arg))
    step = identity(n, one)
    for bi, K in zip(b, stages, strict=True):
        step = plus_scaled(step, scale * bi, K)
    return step


def splitting_error(method: Splitting, n: int, ar: Arithmetic, *, exact_flows: bool = False) -> Any:
    """max-norm error at t = 1 of N splitting steps on y' = Σ L_X y."""
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
    return _error_at_one(step, n, mats, ar)


def _error_at_one(step: Matrix, n: int, mats: dict[str, Matrix], ar: Arithmetic) -> Any:
    """max-norm error at t = 1 of N steps of the matrix `step` on y' = Σ L_X y, y(0) = Y0."""
    y = [ar.num(sympy.Rational(x)) for x in Y0]
    for _ in range(n):
        y = matvec(step, y)
    size = len(step)
    total = [[sum(mats[op][i][j] for op in mats) for j in range(size)] for i in range(size)]
    exact = matvec(ar.expm(total), [ar.num(sympy.Rational(x)) for x in Y0])
    return max(abs(a - e) for a, e in zip(y, exact, strict=True))


def additive_error(method: AdditiveRungeKutta, n: int, ar: Arithmetic) -> Any:
    """max-norm error at t = 1 of N additive steps on y' = Σ L_X y (the stages solved exactly:
    the block system (I − h [aᵢⱼ L_{Xⱼ}]) Y = [I; …; I] of every call's stage matrix)."""
    one = ar.num(1)
    h = one / n
    mats = operator_matrices(method.operators, ar)
    size, s = len(OPERATORS[0]), method.stages
    system = identity(s * size, one)
    for i in range(s):
        for j in range(s):
            if method.A[i][j] != 0:
                L, a = mats[method.fields[j]], ar.num(method.A[i][j])
                for r in range(size):
                    for col in range(size):
                        system[i * size + r][j * size + col] -= h * a * L[r][col]
    stages = matmul(inverse(system, one), [row for _ in range(s) for row in identity(size, one)])
    step = identity(size, one)
    for i in range(s):
        if method.b[i] != 0:
            KY = matmul(mats[method.fields[i]], stages[i * size : (i + 1) * size])
            step = plus_scaled(step, h * ar.num(method.b[i]), KY)
    return _error_at_one(step, n, mats, ar)
