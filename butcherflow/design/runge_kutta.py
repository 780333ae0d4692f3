"""Runge-Kutta tableaux by optimisation (RK-Opt's formulations, scipy's SLSQP from many starts),
made exact and proved.

- `ssp_tableau(s, p)`: the largest SSP coefficient (Ketcheson 2008): maximise r subject to the
  order conditions and Kraaijevanger's conditions K(I + rK)⁻¹ ≥ 0, (I + rK)⁻¹e ≥ 0 for
  K = [[A, 0], [bᵀ, 0]], entrywise; explicit or diagonally implicit.
- `low_error_tableau(s, p)`: the smallest principal error norm ‖τ_{p+1}‖₂,
  τ(t) = (b·g(t) − 1/γ(t))/σ(t) over the trees of order p + 1 (RK-Opt's `errcoeff`), within
  RK-Opt's bounds |a_ij|, |b_i| ≤ 50.
- `realise(polynomial, q)`: an explicit tableau with the given stability polynomial (bᵀAᵏ⁻¹e =
  a_k) and nonlinear order q, of the smallest error norm at order q + 1.

Each returns a `DesignedMethod`: the exact tableau (`exact.py`), `bf.check`'s proof of its
order and, for SSP designs, its SSP coefficient computed exactly by the analysis stage
(`ssp_coefficient`), beside the optimiser's float value.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, final

import numpy as np
import scipy.optimize
from threadpoolctl import threadpool_limits

from ..errors import DesignError, require_counts
from .conditions import Condition, Trees, residuals, with_jacobian
from .exact import Matrix
from .polish import polish
from .polynomial import StabilityPolynomial
from .result import DesignedMethod, Point, Search, finish

# the fewest explicit stages for each order (Butcher's barriers; order 8 needs 11)
MIN_STAGES = {1: 1, 2: 2, 3: 3, 4: 4, 5: 6, 6: 7, 7: 9, 8: 11}
BOUND = 50.0  # RK-Opt's bounds on explicit entries (linear_constraints.m)
FEASIBLE = 1e-10  # an optimiser's point meets its constraints to this


@final
@dataclass(frozen=True)
class Shape:
    """Where the free entries of A sit: below the diagonal (explicit), or on it too (DIRK)."""

    stages: int
    implicit: bool = False

    @property
    def positions(self) -> list[tuple[int, int]]:
        s = self.stages
        return [(i, j) for i in range(s) for j in range(i + 1 if self.implicit else i)]

    @property
    def size(self) -> int:
        return len(self.positions) + self.stages

    def unpack(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(A, b) from x[..., :size], batched."""
        s, pos = self.stages, self.positions
        A = np.zeros((*x.shape[:-1], s, s), dtype=x.dtype)
        rows = np.array([i for i, _ in pos], dtype=int)
        cols = np.array([j for _, j in pos], dtype=int)
        A[..., rows, cols] = x[..., : len(pos)]
        return A, x[..., len(pos) : len(pos) + s]


def _checked(stages: Any, order: Any, implicit: bool, starts: Any = 1) -> tuple[int, int]:
    require_counts(stages=stages, order=order, starts=starts)
    if order > 8:
        raise DesignError(
            "designs above order 8 are not supported (719 trees at order 9)",
            key="order",
            value=order,
            valid="order <= 8",
        )
    if implicit:
        if order > stages + 1:
            raise DesignError(
                f"a diagonally implicit method of {stages} stages has order {stages + 1} at most",
                key="order",
                value=order,
                valid=f"order <= {stages + 1}",
            )
    elif stages < MIN_STAGES[order]:
        raise DesignError(
            f"an explicit method of order {order} needs at least {MIN_STAGES[order]} stages "
            "(Butcher's barriers)",
            key="order",
            value=order,
            valid=f"order <= {max(p for p, n in MIN_STAGES.items() if n <= stages)} for "
            f"{stages} stages",
        )
    return stages, order


@final
@dataclass(frozen=True)
class Problem:
    """One nonlinear program: minimise `objective(x)` subject to `equal(x) = 0`, `above(x) ≥ 0`
    and `bounds`, each function vectorised over leading batch dimensions."""

    objective: Callable[[np.ndarray], np.ndarray]
    equal: Callable[[np.ndarray], np.ndarray]
    above: Callable[[np.ndarray], np.ndarray] | None
    bounds: list[tuple[float, float]]


AGREE = 2  # the multistart stops once this many starts reach the best value (to 1e-9)


def multistart(
    problem: Problem, starts: Sequence[np.ndarray], maxiter: int = 400
) -> tuple[np.ndarray | None, int, int]:
    """SLSQP from each start (RK-Opt runs fmincon from many starts the same way): the best
    point meeting the constraints to `FEASIBLE`, how many starts reached a feasible point, and
    how many were tried (fewer than given once `AGREE` of them reach the best value)."""
    constraints = [
        {"type": "eq", "fun": problem.equal, "jac": with_jacobian(problem.equal)},
    ]
    if problem.above is not None:
        above = problem.above
        constraints.append({"type": "ineq", "fun": above, "jac": with_jacobian(above)})
    best, best_value, good, agree, tried = None, math.inf, 0, 0, 0
    for x0 in starts:
        tried += 1
        if problem.above is None:  # start on the order conditions (RK-Opt's solveorderconditions)
            projected = _on_conditions(problem, x0)
            if projected is None:
                continue
            x0 = projected
        with threadpool_limits(1):  # a BLAS thread pool makes SLSQP's small solves 100× slower
            result = scipy.optimize.minimize(
                problem.objective,
                x0,
                jac=with_jacobian(problem.objective),
                method="SLSQP",
                bounds=problem.bounds,
                constraints=constraints,
                options={"maxiter": maxiter, "ftol": 1e-10},
            )
        x = result.x
        ok = np.abs(problem.equal(x)).max(initial=0) < FEASIBLE and (
            problem.above is None or problem.above(x).min(initial=0) > -FEASIBLE
        )
        if ok:
            good += 1
            value = float(problem.objective(x))
            close = 1e-9 * max(1.0, abs(value))
            if best is None or value < best_value - close:
                best, best_value, agree = x, value, 1
            elif value <= best_value + close:
                agree += 1
            if agree >= AGREE:
                break
    return best, good, tried


def _on_conditions(problem: Problem, x0: np.ndarray) -> np.ndarray | None:
    """A point near x0 that meets the equality constraints (least squares, within the bounds),
    or None when none is found from there."""
    low, high = (np.array(v) for v in zip(*problem.bounds, strict=True))
    with threadpool_limits(1):
        result = scipy.optimize.least_squares(
            problem.equal,
            np.clip(x0, low, high),
            jac=with_jacobian(problem.equal),
            bounds=(low, high),
            xtol=1e-15,
            ftol=1e-15,
            gtol=1e-15,
            max_nfev=200,
        )
    return result.x if np.abs(result.fun).max(initial=0) < 1e-8 else None


# --- SSP -----------------------------------------------------------------------------------


def _ssp_problem(shape: Shape, trees: Trees, conditions: list[Condition]) -> Problem:
    s = shape.stages
    n = s + 1
    lower = np.tril(np.ones((n, n), dtype=bool), 0 if shape.implicit else -1)

    def split(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        A, b = shape.unpack(x)
        return A, b, x[..., -1]

    def equal(x: np.ndarray) -> np.ndarray:
        A, b, _ = split(x)
        return residuals(trees, conditions, A, b)

    def above(x: np.ndarray) -> np.ndarray:
        A, b, r = split(x)
        K = np.zeros((*x.shape[:-1], n, n), dtype=x.dtype)
        K[..., :s, :s], K[..., s, :s] = A, b
        inverse = np.linalg.inv(np.eye(n) + r[..., None, None] * K)
        P = r[..., None, None] * (K @ inverse)
        return np.concatenate([P[..., lower], inverse.sum(axis=-1)], axis=-1)

    bounds = [(0.0, 2.0)] * (shape.size - s) + [(0.0, 1.0)] * s + [(0.0, 2.0 * s)]
    return Problem(lambda x: -x[..., -1], equal, above, bounds)


def _ssp_starts(shape: Shape, p: int, count: int, rng: np.random.Generator) -> list[np.ndarray]:
    """RK-Opt's 'smart' start (every entry 1/r, r about s − (p − 3) − √(s − (p − 3))) and
    random ones."""
    s, m = shape.stages, shape.size - shape.stages
    r = max(s - (p - 3) - math.sqrt(max(s - (p - 3), 0)), 0.5)
    starts = [np.concatenate([np.full(m, 1 / r), np.full(s, 1 / s), [r]])]
    for _ in range(count - 1):
        b = rng.random(s)
        starts.append(np.concatenate([rng.random(m) / s, b / b.sum(), [0.01]]))
    return starts


def ssp_tableau(
    stages: int, order: int, *, implicit: bool = False, starts: int = 20, seed: int = 0
) -> DesignedMethod:
    """The Runge-Kutta tableau of `stages` stages and order `order` with the largest SSP
    coefficient found from `starts` starting points, exact and proved.

    **Arguments:**

    - `stages`, `order`: s and p (explicit SSP methods have p ≤ 4, and s ≥ 5 at p = 4).
    - `implicit`: diagonally implicit (DIRK) instead of explicit.
    - `starts`, `seed`: the multistart (RK-Opt's smart start first, then random ones).

    **Returns:** a `DesignedMethod` whose `proved` is the exact SSP coefficient.
    """
    started = time.perf_counter()
    s, p = _checked(stages, order, implicit, starts)
    _ssp_possible(s, p, implicit)
    shape, trees = Shape(s, implicit), Trees(p + 1)
    conditions = trees.order_conditions(p)
    rng = np.random.default_rng(seed)
    x, good, tried = multistart(
        _ssp_problem(shape, trees, conditions), _ssp_starts(shape, p, starts, rng)
    )
    if x is None:
        raise DesignError(
            f"the optimiser met the constraints from none of {starts} starts",
            key="starts",
            value=starts,
            valid="more starts (--starts), or another seed",
        )
    above = _ssp_problem(shape, trees, conditions).above
    assert above is not None
    lower = np.tril(np.ones((s + 1, s + 1), dtype=bool), 0 if implicit else -1)
    point = _point(shape, trees, conditions, x, (above(x), lower))
    kind = "dirk" if implicit else "explicit"
    search = Search("ssp", kind, s, p, trees, conditions, starts, seed, started)
    return finish(search, point, float(x[-1]), good, tried)


def _ssp_possible(s: int, p: int, implicit: bool) -> None:
    if implicit and p > 6:
        raise DesignError(
            "implicit Runge-Kutta methods with a positive SSP coefficient have order 6 at most",
            key="order",
            value=p,
            valid="order <= 6",
        )
    if not implicit and p > 4:
        raise DesignError(
            "explicit Runge-Kutta methods with a positive SSP coefficient have order 4 at most "
            "(Kraaijevanger 1991)",
            key="order",
            value=p,
            valid="order <= 4, or implicit",
        )
    if not implicit and p == 4 and s == 4:
        raise DesignError(
            "no four-stage fourth-order explicit method has a positive SSP coefficient "
            "(Kraaijevanger 1991)",
            key="stages",
            value=s,
            valid="at least 5 stages for order 4 (SSP(5,4): C ≈ 1.508)",
        )


# --- low error and realisations ------------------------------------------------------------


def _error_problem(shape: Shape, trees: Trees, conditions: list[Condition], q: int) -> Problem:
    error = [t for t in trees.of_order(q + 1)]
    targets = [Condition(t, Fraction(1, t.density)) for t in error]
    sigma = np.array([float(t.symmetry) for t in error])

    def objective(x: np.ndarray) -> np.ndarray:
        A, b = shape.unpack(x)
        tau = residuals(trees, targets, A, b) / sigma
        return (tau**2).sum(axis=-1)

    def equal(x: np.ndarray) -> np.ndarray:
        A, b = shape.unpack(x)
        return residuals(trees, conditions, A, b)

    return Problem(objective, equal, None, [(-BOUND, BOUND)] * shape.size)


def _random_starts(shape: Shape, count: int, rng: np.random.Generator) -> list[np.ndarray]:
    out = []
    for _ in range(count):
        b = rng.random(shape.stages)
        out.append(np.concatenate([rng.random(shape.size - shape.stages) - 0.5, b / b.sum()]))
    return out


def low_error_tableau(
    stages: int, order: int, *, implicit: bool = False, starts: int = 10, seed: int = 0
) -> DesignedMethod:
    """The tableau of `stages` stages and order `order` with the smallest principal error norm
    found from `starts` random starts, exact and proved.

    **Arguments:** as `ssp_tableau`; the stages must not allow order p + 1 (the smallest
    error norm would be 0: ask for order p + 1 instead).

    **Returns:** a `DesignedMethod` whose `proved` is the exact error norm.
    """
    started = time.perf_counter()
    s, p = _checked(stages, order, implicit, starts)
    allows_more = (p + 1 <= s + 1) if implicit else (p + 1 <= 8 and MIN_STAGES[p + 1] <= s)
    if allows_more:
        raise DesignError(
            f"{s} stages allow order {p + 1}, whose principal error at order {p + 1} is 0: "
            f"the smallest error norm of order-{p} methods is 0",
            key="order",
            value=p,
            valid=f"order {p + 1} (or fewer stages)",
        )
    shape, trees = Shape(s, implicit), Trees(p + 1)
    failed = DesignError(
        f"the optimiser met the order conditions from none of {starts} starts",
        key="starts",
        value=starts,
        valid="more starts (--starts), or another seed",
    )
    kind = "dirk" if implicit else "explicit"
    conditions = trees.order_conditions(p)
    search = Search("low-error", kind, s, p, trees, conditions, starts, seed, started)
    return _least_error(search, shape, failed)


def realise(
    polynomial: StabilityPolynomial | Sequence[Any],
    order: int,
    *,
    starts: int = 10,
    seed: int = 0,
) -> DesignedMethod:
    """An explicit tableau whose stability polynomial is `polynomial` and whose nonlinear order
    is `order`, of the smallest error norm at order + 1 found from `starts` starts.

    **Arguments:**

    - `polynomial`: a designed `StabilityPolynomial`, or coefficients a_0..a_s (exact
      rationals or their text).
    - `order`: q, at most the polynomial's linear order (a_k = 1/k! for k ≤ q).

    **Returns:** a `DesignedMethod` (s = deg R stages) whose conditions include bᵀAᵏ⁻¹e = a_k.
    """
    started = time.perf_counter()
    a = _coefficients(polynomial)
    s = len(a) - 1
    _, q = _checked(s, order, False, starts)
    linear = next((k - 1 for k in range(len(a)) if a[k] != Fraction(1, math.factorial(k))), s)
    if q > linear:
        raise DesignError(
            f"the polynomial has linear order {linear} (a_{linear + 1} ≠ 1/{linear + 1}!), and "
            "a method's nonlinear order never exceeds its linear order",
            key="order",
            value=q,
            valid=f"order <= {linear}",
        )
    shape, trees = Shape(s), Trees(max(q + 1, s))
    conditions = trees.order_conditions(q) + [
        Condition(trees.tall(k), a[k]) for k in range(q + 1, s + 1)
    ]
    failed = DesignError(
        f"no explicit {s}-stage method of order {q} with this stability polynomial was "
        f"found from {starts} starts",
        key="polynomial",
        value=[str(c) for c in a],
        valid="more starts (--starts), or a lower order",
    )
    search = Search("realise", "explicit", s, q, trees, conditions, starts, seed, started)
    found = _least_error(search, shape, failed, tuple(a))
    if isinstance(polynomial, StabilityPolynomial):
        found = dataclasses.replace(found, designed_from=polynomial.command())
    return found


def _least_error(
    search: Search,
    shape: Shape,
    failed: DesignError,
    polynomial: tuple[Fraction, ...] | None = None,
) -> DesignedMethod:
    """The tableau of `shape` meeting the search's conditions with the smallest principal error
    norm at order p + 1 found from its random starts (`low_error_tableau`, `realise`),
    finished (`finish`); raises `failed` when no start meets them."""
    trees, conditions, p = search.trees, search.conditions, search.order
    problem = _error_problem(shape, trees, conditions, p)
    rng = np.random.default_rng(search.seed)
    x, good, tried = multistart(problem, _random_starts(shape, search.starts, rng))
    if x is None:
        raise failed
    point = _point(shape, trees, conditions, x, None)
    return finish(search, point, math.sqrt(float(problem.objective(x))), good, tried, polynomial)


def _point(
    shape: Shape,
    trees: Trees,
    conditions: list[Condition],
    x: np.ndarray,
    ssp: tuple[np.ndarray, np.ndarray] | None,
) -> Point:
    """The optimiser's tableau, with its polish at 256 bits (`polish.py`) to run on demand."""
    s, m = shape.stages, len(shape.positions)

    def polished() -> tuple[Matrix, list[Fraction]] | None:
        refined = polish(shape.positions, s, trees, conditions, x, ssp)
        if refined is None:
            return None
        A = [[Fraction(0)] * s for _ in range(s)]
        for (i, j), v in zip(shape.positions, refined, strict=False):
            A[i][j] = v
        return A, refined[m : m + s]

    return Point.of_floats(*shape.unpack(x), polish=polished)


def _coefficients(polynomial: StabilityPolynomial | Sequence[Any]) -> list[Fraction]:
    if isinstance(polynomial, StabilityPolynomial):
        return list(polynomial.coefficients)
    out = []
    for k, value in enumerate(polynomial):
        try:
            out.append(Fraction(str(value)))
            float(out[-1])  # the optimiser's residuals are floats
        except (ValueError, ZeroDivisionError, OverflowError):
            raise DesignError(
                "not an exact rational a float can hold",
                key=f"polynomial[{k}]",
                value=value,
                valid="e.g. '1/6'",
            ) from None
    if len(out) < 2 or out[0] != 1 or out[-1] == 0:
        raise DesignError(
            "a stability polynomial starts with a_0 = 1 and ends with a nonzero a_s",
            key="polynomial",
            value=[str(c) for c in out],
            valid="e.g. 1, 1, 1/2, 1/8",
        )
    return out
