"""Optimal stability polynomials (Ketcheson & Ahmadia 2012), made exact and proved.

Given s stages, linear order p and a spectrum S, find R(z) = Σ_{k≤s} a_k z^k with a_k = 1/k! for
k ≤ p that allows the largest step h: |R(hλ)| ≤ 1 for every λ in S. For a fixed h the set of such
R is convex (a second-order cone in the coefficients), so the largest h is found by bisection,
each step one convex problem (cvxpy, solved by Clarabel), as RK-Opt's `opt_poly_bisect`:
minimise t subject to |R(hλᵢ)| ≤ 1 + t·wᵢ at sample points λᵢ; h is feasible when t ≤ 0. The
weights wᵢ = min(1, |λᵢ|/ν)^(p+3) fall off near z = 0, where the order conditions fix
|R| ≈ |e^z| → 1 (ν = `Spectrum.near_zero`, below the first extremum of an optimal R): RK-Opt's
unweighted max |R| − 1 is 0 at every feasible h, a degenerate optimum that interior-point
solvers return to about 1e-7 only, while the weighted t is a margin with a sign. R is written in
a basis bounded on S (`spectra.Basis`: Chebyshev, rotated Chebyshev, centred powers), whose
values at the samples do not depend on h; the order conditions are linear equalities.
Where the optimal R exceeds 1 between samples, those points join the samples and the bisection
repeats (an exchange step, as in Remez's algorithm).

The optimiser's R touches |R| = 1 at interior points and is only checked at samples, so it is
not a proof. Three steps turn it into one:

1. **Margin**: the problem is solved again at h_d = (1 − δ)·h_opt, where t < 0 leaves room
   below 1. Coefficients a_k, k > p, that the optimum has equal to 1/k! to 6 digits (the
   optimal first-order polynomial on the imaginary axis is second order) are imposed exactly,
   since rounding them would break |R| ≤ 1 next to z = 0.
2. **Exact coefficients**: the basis coefficients of degree above the imposed order are rounded
   to 40 significant bits, and the others solved exactly from the order conditions (a
   triangular system: ψ_j has degree j), so a_k = 1/k! holds exactly.
3. **Proof**: `Spectrum.stable` decides |R| ≤ 1 on all of h·S exactly; the largest step it
   accepts is found by exact bisection (monotone for a star-shaped S), reported beside the
   optimiser's float step.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, final

import cvxpy as cp
import numpy as np
import sympy
from threadpoolctl import threadpool_limits

from ..errors import DesignError, require_counts
from .proof import dyadic, largest_verified
from .spectra import Spectrum, parse_spectrum

SNAP = 1e-6  # a_k·k! within this of 1 at the optimum: imposed exactly (docstring, step 1)
MARGIN = 1e-5  # δ: the margin step h_d = (1 − δ) h_opt
BITS = 40  # significant bits of a rounded basis coefficient
SOLVER = "CLARABEL"


@final
@dataclass(frozen=True)
class StabilityPolynomial:
    """A designed stability polynomial with its proof.

    - `stages`, `order`, `spectrum`: what was asked.
    - `coefficients`: a_0..a_s, exact rationals (a_k = 1/k! for k ≤ order).
    - `step`: the proved step H: |R(Hλ)| ≤ 1 for every λ of the spectrum, decided exactly.
    - `every_smaller`: the spectrum is star-shaped, so every step ≤ H is stable as well.
    - `float_step`: the optimiser's step (feasible at the samples: the weighted margin t ≤ 0).
    - `seconds`, `solves`: time and number of convex problems solved.
    """

    stages: int
    order: int
    spectrum: Spectrum
    coefficients: tuple[Fraction, ...]
    step: Fraction
    every_smaller: bool
    float_step: float
    seconds: float
    solves: int
    solver: str = SOLVER
    notes: tuple[str, ...] = field(default=())

    @property
    def ratio(self) -> float:
        """The proved step over the optimiser's."""
        return float(self.step) / self.float_step

    def expr(self) -> sympy.Expr:
        """R(z) as a sympy polynomial in z."""
        z = sympy.Symbol("z")
        return sum(
            (
                sympy.Rational(c.numerator, c.denominator) * z**k
                for k, c in enumerate(self.coefficients)
            ),
            sympy.Integer(0),
        )

    def __call__(self, z: complex | np.ndarray) -> Any:
        """R at z, in floating point (for plots)."""
        return np.polyval([float(c) for c in reversed(self.coefficients)], z)

    def command(self) -> str:
        return (
            f"butcherflow design polynomial --stages {self.stages} --order {self.order} "
            f"--spectrum {self.spectrum.text()}"
        )

    def __str__(self) -> str:
        claim = "every step up to it" if self.every_smaller else "this step"
        lines = [
            f"stability polynomial: s = {self.stages}, p = {self.order}, "
            f"spectrum {self.spectrum.text()}",
            f"  proved step   {float(self.step):.10g}  (|R(hλ)| ≤ 1 on the whole set, exact; "
            f"{claim})",
            f"  float step    {self.float_step:.10g}  (bisection, {self.solves} convex problems "
            f"({self.solver}), {self.seconds:.2f} s)",
            f"  proved/float  {self.ratio:.8f}",
            "  coefficients  " + ", ".join(_short(c) for c in self.coefficients),
        ]
        return "\n".join(lines + [f"note: {n}" for n in self.notes])

    def to_dict(self) -> dict[str, Any]:
        return {
            "stages": self.stages,
            "order": self.order,
            "spectrum": self.spectrum.text(),
            "coefficients": [str(c) for c in self.coefficients],
            "step": str(self.step),
            "step_float": float(self.step),
            "every_smaller": self.every_smaller,
            "float_step": self.float_step,
            "seconds": self.seconds,
            "solves": self.solves,
            "solver": self.solver,
            "command": self.command(),
        }


def _short(c: Fraction) -> str:
    text = str(c)
    return text if len(text) <= 24 else f"{float(c):.12g}"


@final
class _Problem:
    """The convex problem for one spectrum, (s, p) and set of samples, compiled once (cvxpy
    parameters for what changes with h: the order conditions' right-hand side, the weights)."""

    def __init__(self, spectrum: Spectrum, s: int, p: int, lam: np.ndarray) -> None:
        lam = lam[np.abs(lam) > 0]  # R(0) = 1 by the order conditions
        self.s, self.p, self.lam = s, p, lam
        self.basis = spectrum.basis()
        self.exact = self.basis.exact(s)  # m[j][k]
        self.L = float(spectrum.scale)
        self.near = float(spectrum.near_zero(s))
        values = self.basis.values(lam, s)
        # the order conditions in units of the spectrum: Σ_j x_j m[j][k] L^k = (hL)^k/k!
        M = np.array(
            [[float(self.exact[j][k]) * self.L**k for j in range(s + 1)] for k in range(p + 1)]
        )
        self.x, self.t = cp.Variable(s + 1), cp.Variable()
        self.rhs = cp.Parameter(p + 1)
        self.tangency = spectrum.tangency(p)  # Σ c_j (a_j − 1/j!) ≤ 0, a_j = 0 for j > s
        weights = np.maximum(np.minimum(1.0, np.abs(lam) / self.near) ** (p + 3), 1e-12)
        stacked = cp.vstack([values.real @ self.x, values.imag @ self.x])  # (2, n)
        constraints = [
            M @ self.x == self.rhs,
            cp.norm(stacked, 2, axis=0) <= 1 + self.t * weights,
        ]
        if self.tangency:
            self.row, self.bound = cp.Parameter(s + 1), cp.Parameter()
            constraints.append(self.row @ self.x <= self.bound)
        self.problem = cp.Problem(cp.Minimize(self.t), constraints)
        self.solves = 0

    def solve(self, h: float) -> tuple[float, np.ndarray | None]:
        """(t, x) at step h (t = inf when the solver failed)."""
        hL = h * self.L
        self.rhs.value = np.array([hL**k / math.factorial(k) for k in range(self.p + 1)])
        if self.tangency:  # in units of (hL)^n0 so that the row is of order 1
            n0 = self.tangency[-1][0]
            row, bound = np.zeros(self.s + 1), 0.0
            for j, c in self.tangency:
                scale = float(c) * hL ** (n0 - j)
                bound += scale * hL**j / math.factorial(j)
                if j <= self.s:
                    row += scale * np.array(
                        [float(self.exact[i][j]) * self.L**j for i in range(self.s + 1)]
                    )
            self.row.value, self.bound.value = row, bound
        self.solves += 1
        try:
            with warnings.catch_warnings():  # "may be inaccurate": the status says so too
                warnings.simplefilter("ignore", UserWarning)
                self.problem.solve(solver=SOLVER)
        except cp.error.SolverError:
            return math.inf, None
        if self.problem.status not in ("optimal", "optimal_inaccurate") or self.x.value is None:
            return math.inf, None
        return float(self.t.value), np.array(self.x.value)  # type: ignore[arg-type]


def stability_polynomial(
    stages: int,
    order: int,
    spectrum: Spectrum | str,
    *,
    tolerance: float = 1e-7,
    samples: int | None = None,
) -> StabilityPolynomial:
    """The stability polynomial of `stages` stages and linear order `order` with the largest
    step on `spectrum`, with exact coefficients and the step proved.

    **Arguments:**

    - `stages`: s ≥ 1, the degree of R.
    - `order`: 1 ≤ p ≤ s, the linear order (a_k = 1/k! for k ≤ p).
    - `spectrum`: a `Spectrum` or its text (`"real:-1,0"`, `"imag:1"`, `"disk:-1,1"`,
      `"eigenvalues:-1,-2+3j"`).
    - `tolerance`: relative width at which the bisection stops.
    - `samples`: points of the spectrum the optimiser starts from (default max(200, 40 s));
      points where the optimiser's R exceeds 1 between them are added (`_refine`).

    **Returns:** a `StabilityPolynomial`. Raises `DesignError` for an order above the stages,
    a bad spectrum, or when no step h > 0 is stable.
    """
    started = time.perf_counter()
    s, p = _stages_order(stages, order)
    spec = parse_spectrum(spectrum) if isinstance(spectrum, str) else spectrum
    with threadpool_limits(1):  # small dense solves: a BLAS thread pool only adds waiting
        return _design(spec, s, p, samples or max(200, 40 * s), tolerance, started)


def _design(
    spec: Spectrum, s: int, p: int, samples: int, tolerance: float, started: float
) -> StabilityPolynomial:
    """`stability_polynomial` after its arguments are checked."""
    problem, h_float, x = _refine(spec, s, p, samples, tolerance)
    q = _attained_order(problem, x, h_float)
    notes = [f"the optimum has linear order {q}, imposed exactly"] if q > p else []
    solves = problem.solves
    if q > p:
        problem = _Problem(spec, s, q, problem.lam)
    for tries in range(5):  # the margin step, lowered while the proof refuses it
        h = dyadic(h_float * (1 - MARGIN * 10**tries), 24)
        t, margin = problem.solve(float(h)) if s > q else (math.inf, None)
        if margin is None or t >= 0:  # no room below 1, or nothing free: the optimum itself
            h, margin = dyadic(h_float, 52), x
        a = exact_coefficients(problem.exact, margin, h, q)
        step = _proved_step(spec, a, h, h_float, last=tries == 4 or s == q)
        if step is not None:
            break
        notes.append(
            f"the polynomial designed at h = {float(h):.8g} is not stable on the whole "
            "set there; designed again lower"
        )
    assert step is not None
    return StabilityPolynomial(
        s,
        p,
        spec,
        tuple(a),
        step,
        spec.star_shaped,
        h_float,
        time.perf_counter() - started,
        solves + problem.solves,
        notes=tuple(notes),
    )


def _attained_order(problem: _Problem, x: np.ndarray, h: float) -> int:
    """The linear order of the optimiser's polynomial: p, raised while a_k·k! = 1 to `SNAP`."""
    m, q = problem.exact, problem.p
    while q < problem.s:
        k = q + 1
        a_k = sum(x[j] * float(m[j][k]) for j in range(problem.s + 1)) / h**k
        if abs(a_k * math.factorial(k) - 1) > SNAP:
            break
        q = k
    return q


def _refine(
    spec: Spectrum, s: int, p: int, n: int, tolerance: float
) -> tuple[_Problem, float, np.ndarray]:
    """Bisection on the samples, then on the samples plus every point of a 16× finer grid where
    the polynomial found exceeds |R| = 1 + 1e-7 (an exchange step), until the finer grid finds
    none (at most 6 rounds); later rounds start from a bracket around the last step."""
    lam = spec.samples(n)
    dense = spec.samples(16 * n)
    dense_values = spec.basis().values(dense, s)
    lo, hi = 0.0, 2.01 * s * s / float(spec.scale)
    solves = 0
    for _ in range(6):
        problem = _Problem(spec, s, p, lam)
        problem.solves = solves
        h, x = _bisect(problem, spec, tolerance, lo, hi)
        solves = problem.solves
        over = np.abs(dense_values @ x) > 1 + 1e-7
        if not over.any():
            break
        lam, lo, hi = np.concatenate([lam, dense[over]]), h * 0.999, h * (1 + 1e-3)
    return problem, h, x


def _proved_step(
    spec: Spectrum, a: list[Fraction], h: Fraction, h_float: float, last: bool
) -> Fraction | None:
    """The largest step the exact proof accepts from h up (exact bisection), or None when it
    refuses h itself; on the `last` try, the largest below h for a star-shaped set."""
    ceiling = dyadic(h_float * (1 + 1e-4), 24)
    step = largest_verified(lambda H: spec.stable(a, H), h, ceiling)
    if step is not None or not last:
        return step
    if not spec.star_shaped:
        raise DesignError(
            f"the polynomial found for step {h_float:.8g} is not stable on the whole set at "
            "that step, and the set is not star-shaped (smaller steps need not be stable)",
            key="spectrum",
            value=spec.text(),
            valid="more samples (--samples), or a star-shaped set",
        )
    lo, hi = Fraction(0), h  # monotone: bisect down from h
    while hi - lo > h / 2**30:
        mid = dyadic(float((lo + hi) / 2), 24)
        if not lo < mid < hi:
            break
        lo, hi = (mid, hi) if spec.stable(a, mid) else (lo, mid)
    return lo


def _stages_order(stages: Any, order: Any) -> tuple[int, int]:
    require_counts(stages=stages, order=order)
    if order > stages:
        raise DesignError(
            f"a polynomial of degree {stages} matches e^z to order {stages} at most",
            key="order",
            value=order,
            valid=f"order <= stages ({stages}), or more stages",
        )
    return stages, order


def _bisect(
    problem: _Problem, spec: Spectrum, tolerance: float, lo: float, hi: float
) -> tuple[float, np.ndarray]:
    """The largest feasible h in [lo, hi] (to `tolerance`, relative) and the coefficients there;
    from 0 when lo itself is not feasible."""
    best, tried, failed = None, 0, 0
    if lo > 0:
        t, best = problem.solve(lo)
        best, lo = (best, lo) if best is not None and t <= 0 else (None, 0.0)
    while tried < 200:
        if best is not None and hi - lo <= tolerance * lo:
            break
        if best is None and hi < 1e-8 / problem.L:
            break
        h = (lo + hi) / 2
        t, x = problem.solve(h)
        tried, failed = tried + 1, failed + math.isinf(t)
        if x is not None and t <= 0:
            lo, best = h, x
        else:
            hi = h
    if best is None:
        why = (
            "the solver failed at every step tried"
            if failed == tried
            else f"no polynomial of degree {problem.s} and order {problem.p} is stable on h·S "
            f"for any h > {hi:.3g} tried"
        )
        raise DesignError(
            f"no stable step: {why}",
            key="spectrum",
            value=spec.text(),
            valid="more stages, a lower order, or a set that meets the left half-plane "
            "(forward Euler, s = p = 1, is stable nowhere on the imaginary axis)",
        )
    return lo, best


def exact_coefficients(
    m: list[list[Fraction]], x: np.ndarray, h: Fraction, p: int
) -> list[Fraction]:
    """The monomial coefficients a_0..a_s of Σ_j x_j ψ_j(z/h), exact: x_j for j > p rounded to
    `BITS` significant bits, x_0..x_p solved exactly from a_k = 1/k! (k ≤ p) by back
    substitution (ψ_j has degree j, so the system is triangular)."""
    s = len(m) - 1
    xs: list[Fraction] = [Fraction(0)] * (s + 1)
    for j in range(p + 1, s + 1):
        xs[j] = dyadic(float(x[j]), BITS)
    # Σ_j x_j m[j][k] / h^k = 1/k!  ⇔  Σ_j x_j m[j][k] = h^k / k!
    for k in range(p, -1, -1):
        rest = sum((xs[j] * m[j][k] for j in range(k + 1, s + 1)), Fraction(0))
        xs[k] = (h**k / math.factorial(k) - rest) / m[k][k]
    return [sum((xs[j] * m[j][k] for j in range(s + 1)), Fraction(0)) / h**k for k in range(s + 1)]
