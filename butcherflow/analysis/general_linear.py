"""General linear methods: preconsistency, consistency, zero-stability, M(z) and order.

For a GLM (A, U, B, V) with r inputs and s stages (`methods/general_linear.py`):

- **Preconsistency**: V u = u and U u = 1 for the vector u of the inputs' y(x)-coefficients
  (the starting procedure's; Butcher's preconsistency vector). Judged like an order condition
  (scale 1): for numeric entries met, fails (the ball excludes 0) or undetermined (θ and 1 − θ
  typed separately to 4 digits); undetermined lets the order analysis proceed, and says so.
- **Zero-stability**: V is power-bounded: its eigenvalues lie in the closed unit disc and those on
  the circle are semisimple. Decided exactly for rational V (the factors of its characteristic
  polynomial, `root_condition`'s machinery, and ranks of f(V) for the factors f on the
  circle). A doubly stochastic V (mHC) is power-bounded because ‖Vⁿ‖∞ = 1 for every n.
- **Stability matrix** M(z) = V + zB(I − zA)⁻¹U; the method is stable at z when M(z) is
  power-bounded. Its real stability interval is read in float64 (eigenvalues on a grid).
- **Order** relative to the stated starting procedure ξ, by B-series over rooted trees: the stages
  have the B-series η(t) = A η′(t) + U ξ(t), with η′([t₁…t_m]) = η(t₁)⋯η(t_m), and the outputs
  B η′(t) + V ξ(t) must equal the starting procedure advanced by one step, E ξ(t), where an input
  c·y(x + θh) has the coefficients c·θ^|t|/γ(t) and c·h·f(y(x + θh)) has c·|t|θ^(|t|−1)/γ(t).
  Order p: every tree with |t| ≤ p. This is Butcher's order of a GLM relative to a starting
  method; the analysis does not search for the best starting method, and it stops at order 8
  without a claim (GLMs have no barrier as simple as Runge-Kutta's). Numeric entries get the
  verdicts of every family (met, fails, undetermined), and the report names the conditions the
  digits cannot decide, with their residuals against the rounding.
- **Measured order** beside the proof (`convergence.glm_error`, y' = −y + cos t started by the
  stated procedure). A slope above the proved order by more than `SLOPE_TOLERANCE` is said in a
  note: the proof is relative to the stated start, and a better start, or a starting error that
  V damps, can give more (a DIMSIM started by y(x) − h f(x) is order 1 and measures 2).

Learned coefficients: the proof is of the declaration (the initialisation); a trained model's
V is checked for power-boundedness separately (`power_bound`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, final

import flint
import numpy as np
import sympy
from sympy.polys.matrices import DomainMatrix

from ..methods.balls import ball
from ..methods.general_linear import GeneralLinear, StartTerm
from ..methods.precision import (
    RESOLUTION,
    Judgement,
    Verdict,
    digits_hint,
    judge_enclosure,
    working_precision,
)
from .convergence import SLOPE_TOLERANCE, Convergence, convergence
from .enclosure import BallDomain
from .report import (
    DECIDE,
    Report,
    open_text,
    precision_text,
    raised_by,
    shown_open,
    tolerance_text,
    undetermined_note,
)
from .rk_order import DEFAULT_TIME_BUDGET
from .root_condition import ZETA, place_roots, root_condition
from .search import search_order
from .trees import PLAIN, Tree
from .weights import judge_element, smallest_domain

DEFAULT_CAP = 8
Z = sympy.Symbol("z")


def _start_coefficient(terms: Sequence[StartTerm], tree: Tree | None, advance: int) -> Any:
    """The B-series coefficient of one input at `tree` (None: the empty tree), its starting
    values shifted by `advance` steps."""
    total = sympy.Integer(0)
    for c, kind, theta in terms:
        shift = theta + advance
        if tree is None:
            total += c if kind == "y" else 0
        elif kind == "y":
            total += c * shift**tree.order / tree.density
        else:
            total += c * tree.order * shift ** (tree.order - 1) / tree.density
    return total


@final
class _Series:
    """The stage and output B-series of a GLM, tree by tree (memoised): exactly, or in balls
    holding every method within the precision of numeric entries (`balls=True`)."""

    def __init__(self, method: GeneralLinear, balls: bool = False) -> None:
        self.method = method
        s, r = method.stages, method.values
        keys = [
            f"{name}[{i}][{j}]"
            for name, rows, cols in (("A", s, s), ("U", s, r), ("B", r, s), ("V", r, r))
            for i in range(rows)
            for j in range(cols)
        ]
        self.domain: Any
        if balls:
            self.domain = BallDomain()
            numbers = [method.numbers[k] for k in keys]
            conv = [ball(x.value, x.rounding) for x in numbers]
        else:
            flat = [method.numbers[k].value for k in keys]
            self.domain, conv = smallest_domain([*flat, sympy.Rational(1, 2)])
        pos = 0

        def take(rows: int, cols: int) -> list[list[Any]]:
            nonlocal pos
            out = [conv[pos + i * cols : pos + (i + 1) * cols] for i in range(rows)]
            pos += rows * cols
            return out

        self.A, self.U, self.B, self.V = take(s, s), take(s, r), take(r, s), take(r, r)
        self.family = PLAIN
        self._eta: dict[int, list[Any]] = {}
        self._deta: dict[int, list[Any]] = {}

    def convert(self, value: Any) -> Any:
        return self.domain.from_sympy(sympy.nsimplify(value) if isinstance(value, float) else value)

    def xi(self, tree: Tree | None, advance: int = 0) -> list[Any]:
        return [self.convert(_start_coefficient(t, tree, advance)) for t in self.method.start]

    def eta_prime(self, tree: Tree) -> list[Any]:
        found = self._deta.get(tree.index)
        if found is None:
            found = [self.domain.one] * self.method.stages
            for child in tree.children:
                eta = self.eta(self.family.trees[child])
                found = [x * y for x, y in zip(found, eta, strict=True)]
            self._deta[tree.index] = found
        return found

    def eta(self, tree: Tree) -> list[Any]:
        found = self._eta.get(tree.index)
        if found is None:
            found = _add(_mul(self.A, self.eta_prime(tree)), _mul(self.U, self.xi(tree)))
            self._eta[tree.index] = found
        return found

    def residuals(self, tree: Tree) -> list[Any]:
        """B η′(t) + V ξ(t) − E ξ(t), one entry per output."""
        out = _add(_mul(self.B, self.eta_prime(tree)), _mul(self.V, self.xi(tree)))
        return [x - y for x, y in zip(out, self.xi(tree, advance=1), strict=True)]


def _mul(M: list[list[Any]], v: list[Any]) -> list[Any]:
    return [sum((a * x for a, x in zip(row, v, strict=True)), v[0] * 0) for row in M]


def _add(x: list[Any], y: list[Any]) -> list[Any]:
    return [a + b for a, b in zip(x, y, strict=True)]


def _matrix(rows: Sequence[Sequence[Any]]) -> sympy.Matrix:
    return sympy.Matrix([list(r) for r in rows]) if rows else sympy.zeros(0, 0)


@final
@dataclass(frozen=True)
class Preconsistency:
    """Butcher's preconsistency of a GLM, V u = u and U u = 1, judged entry by entry as the
    order conditions are (`methods/precision.py`): exactly for exact entries; for numeric ones
    in balls holding every method within their precision (met, fails, or undetermined when the
    digits cannot tell).

    - `holds`: True (every entry met), False (one fails), None (none fails, some undetermined).
    - `u`: the inputs' y(x)-coefficients of the starting procedure (exact).
    - `why`: the verdict in words.
    - `undetermined`: `(condition, residual, bound)` for the entries the digits cannot decide.
    - `tolerance`: the largest bound used (None for exact entries).
    """

    holds: bool | None
    u: list[Any]
    why: str
    undetermined: list[tuple[str, Any, float]]
    tolerance: float | None


def preconsistency(method: GeneralLinear) -> Preconsistency:
    """Judge V u = u and U u = 1 (see `Preconsistency`)."""
    series = _Series(method)
    prec = working_precision(method.numbers.values())
    with flint.ctx.workprec(prec):
        balls = _Series(method, balls=True) if method.numeric else None
    return _preconsistency(series, balls, prec)


def _preconsistency(series: _Series, balls: _Series | None, prec: int) -> Preconsistency:
    def residuals(s: _Series) -> list[Any]:
        """V u − u (one per input), then U u − 1 (one per stage)."""
        u = s.xi(None)
        fixed = [x - y for x, y in zip(_mul(s.V, u), u, strict=True)]
        return fixed + [x - s.domain.one for x in _mul(s.U, u)]

    r = series.method.values
    labels = [f"(V u − u)[{i}]" for i in range(r)]
    labels += [f"(U u − 1)[{j}]" for j in range(series.method.stages)]
    exact = residuals(series)
    if balls is None:
        judged = [judge_element(series.domain, res) for res in exact]
    else:
        with flint.ctx.workprec(prec):
            boxes = residuals(balls)
            judged = [
                judge_enclosure(box, Fraction(1), bool(res == series.domain.zero))
                for res, box in zip(exact, boxes, strict=True)
            ]
    u = [_start_coefficient(t, None, 0) for t in series.method.start]
    fails = [j.verdict is Verdict.FAILS for j in judged]
    undetermined = [
        (label, j.residual, j.bound)
        for label, j in zip(labels, judged, strict=True)
        if j.verdict is Verdict.UNDETERMINED
    ]
    tolerance = max((j.bound for j in judged), default=0.0) if balls is not None else None
    if any(fails):
        missed = []
        if any(fails[:r]):
            missed.append("V u ≠ u (u, the starting values' coefficients of y(x), is not kept)")
        if any(fails[r:]):
            missed.append("U u ≠ 1 (a stage does not start from y(x))")
        return Preconsistency(False, u, "; ".join(missed), undetermined, tolerance)
    if undetermined:
        why = "V u = u and U u = 1 only within the rounding of the entries (undetermined)"
        return Preconsistency(None, u, why, undetermined, tolerance)
    return Preconsistency(True, u, "V u = u and U u = 1", [], tolerance)


def doubly_stochastic(V: Sequence[Sequence[sympy.Expr]]) -> bool:
    """Non-negative entries, every row and every column summing to 1 (exactly)."""
    M = _matrix(V)
    if any(x.free_symbols for x in M):
        return False
    nonnegative = all(bool(x >= 0) for x in M)
    rows = all(sympy.simplify(sum(M.row(i)) - 1) == 0 for i in range(M.rows))
    cols = all(sympy.simplify(sum(M.col(j)) - 1) == 0 for j in range(M.cols))
    return nonnegative and rows and cols


def zero_stability(V: Sequence[Sequence[sympy.Expr]], rounding: float) -> tuple[bool | None, str]:
    """Power-boundedness of V: eigenvalues in the closed unit disc, those on the circle
    semisimple. Exact for rational V; `None` for symbolic V."""
    M = _matrix(V)
    if any(x.free_symbols for x in M):
        return None, "V has symbols: power-boundedness depends on the parameters"
    if doubly_stochastic(V):
        return True, "V is doubly stochastic: ‖Vⁿ‖∞ = 1 for every n, so V is power-bounded"
    char = sympy.Poly(M.charpoly(ZETA).as_expr(), ZETA)
    inside, _roots, how, _weak = root_condition(char, rounding)
    if inside is None:
        return None, how
    # root_condition asks for simple roots on the circle (right for ρ); for a matrix, a repeated
    # eigenvalue on the circle is fine when it is semisimple: rank f(V) = n − m·deg f. The sides
    # are root_condition's own (exact for rational V), never a float tolerance.
    factors, _used = place_roots(char, rounding)
    bad = []
    for factor, placed in factors:
        sides = {side for *_, side, _eps in placed}
        if 1 in sides:
            return False, "an eigenvalue of V lies outside the unit disc; " + how
        mult = placed[0][1] if placed else 1
        if 0 in sides and mult > 1:
            fV = sympy.zeros(M.rows)
            for power, coeff in enumerate(reversed(factor.all_coeffs())):
                fV += coeff * M**power
            if fV.rank() != M.rows - mult * factor.degree():
                bad.append(str(factor.as_expr()))
    if bad:
        return False, f"eigenvalues on the unit circle are not semisimple ({', '.join(bad)})"
    return True, "eigenvalues of V in the closed unit disc, those on the circle semisimple; " + how


def stability_matrix(method: GeneralLinear) -> sympy.Matrix | None:
    """M(z) = V + zB(I − zA)⁻¹U, exactly, for rational entries (None otherwise: radicals make the
    symbolic inverse slow, and the interval is read numerically anyway)."""
    A, U, B, V = (_matrix(m) for m in (method.A, method.U, method.B, method.V))
    if not all(x.is_Rational for m in (A, U, B, V) for x in m):
        return None
    s = method.stages
    if method.is_explicit:  # A is nilpotent: (I − zA)⁻¹ = I + zA + … + (zA)^(s−1), exactly
        term, inverse = sympy.eye(s), sympy.eye(s)
        for _ in range(s - 1):
            term = term * A * Z
            inverse += term
        return (V + Z * B * inverse * U).applyfunc(sympy.expand)
    field = sympy.QQ.frac_field(Z)
    shifted = DomainMatrix.from_Matrix(sympy.eye(s) - Z * A).convert_to(field)
    inverse = shifted.inv().to_Matrix()
    return (V + Z * B * inverse * U).applyfunc(sympy.cancel)


def power_bound(V: Any, depth: int) -> tuple[float, float]:
    """(spectral radius, max_{n ≤ depth} ‖Vⁿ‖₂) of a numeric V (e.g. a trained layer's)."""
    M = np.asarray(V, dtype=float)
    radius = float(max(abs(np.linalg.eigvals(M)))) if M.size else 0.0
    power, worst = np.eye(M.shape[0]), 0.0
    for _ in range(depth):
        power = power @ M
        worst = max(worst, float(np.linalg.norm(power, 2)))
    return radius, worst


def real_stability_interval(method: GeneralLinear) -> float:
    """r of the largest [−r, 0] (up to 50) where every eigenvalue of M(x) has modulus ≤ 1, read
    in float64 on a grid of step 0.01."""
    A, U, B, V = (
        np.array([[float(x) for x in row] for row in m], dtype=float).reshape(len(m), -1)
        for m in (method.A, method.U, method.B, method.V)
    )
    eye = np.eye(method.stages)
    edge = 0.0
    for x in np.linspace(0.0, -50.0, 5001)[1:]:
        M = V + x * B @ np.linalg.solve(eye - x * A, U)
        if max(abs(np.linalg.eigvals(M))) > 1 + 1e-9:
            return edge
        edge = -x
    return math.inf


@final
class GeneralLinearReport(Report):
    """What `bf.check` proves about a `GeneralLinear` method.

    **Attributes:** `preconsistent` (with `u`; None when numeric digits cannot decide it, the
    entries they leave open in `preconsistency_undetermined` as `(condition, residual, bound)`),
    `consistent` (preconsistent and order ≥ 1; None when numeric digits cannot decide it),
    `zero_stable` (V power-bounded; None for symbolic V), `order` (relative to the starting
    procedure; generic for families), `order_upper` (a certain upper bound, None if
    no failing condition was found), `failing` (the output residuals of order p+1),
    `undetermined` (conditions of order p+1 a numeric declaration's digits cannot decide:
    `(condition, residual, bound)`), `tolerance` (the largest bound a numeric verdict used),
    `stopped` (why the search ended without a failure, or None), `stability_matrix` M(z),
    `real_interval`, `notes`.
    """

    method: GeneralLinear

    def __init__(
        self,
        method: GeneralLinear,
        max_order: int | None = None,
        time_budget: float = DEFAULT_TIME_BUDGET,
    ) -> None:
        start = time.perf_counter()
        self.method = method
        self.notes: list[str] = []
        series = _Series(method)
        prec = working_precision(method.numbers.values())
        with flint.ctx.workprec(prec):
            balls = _Series(method, balls=True) if method.numeric else None
        pre = _preconsistency(series, balls, prec)
        self.preconsistent, self.u = pre.holds, pre.u
        self.preconsistency_undetermined = pre.undetermined
        self.zero_stable, how = zero_stability(method.V, float(method.rounding))
        self.notes.append(f"zero-stability: {how}")
        self.failing: list[tuple[str, Any]] = []
        self.undetermined: list[tuple[str, Any, float]] = []
        self.tolerance: float | None = None
        self.order = 0
        self.order_upper: int | None = 0
        self.order_is_lower_bound = False
        self.stopped: str | None = None
        if pre.holds is False:
            self.notes.append(f"not preconsistent: {pre.why}; no order (order 0)")
        else:
            if pre.holds is None:
                self.notes.append(
                    "preconsistency holds only within the digits: "
                    f"{open_text(len(pre.undetermined), 'preconsistency (V u = u, U u = 1)')}: "
                    f"{DECIDE}. The order conditions are judged as for a preconsistent method."
                )
            self._order(series, balls, prec, max_order, time_budget)
        if pre.tolerance is not None:
            self.tolerance = max(self.tolerance or 0.0, pre.tolerance)
        # consistency is preconsistency and order 1: undetermined (None) when the digits cannot
        # decide either
        if self.order >= 1:
            self.consistent: bool | None = True if self.preconsistent else None
        else:
            self.consistent = None if self.undetermined else False
        self.stability_matrix = stability_matrix(method) if not method.symbols else None
        self.real_interval = real_stability_interval(method) if not method.symbols else None
        self.notes.append(
            "order relative to the starting procedure "
            + ", ".join(method.start_text())
            + " (Butcher's order of a GLM with a starting method; no other starting method is "
            "searched for)"
        )
        if method.numeric:
            self.notes.append(
                f"numeric entries ({precision_text(method.precision, method.rounding)}): each "
                "order condition was judged in ball arithmetic holding every method within that "
                "precision: met when its residual is exactly zero or its enclosure holds 0 and "
                f"is below {float(RESOLUTION):.2g}·(1/γ(t)), fails when the enclosure excludes "
                "0, undetermined otherwise (as for every family); preconsistency is judged the "
                "same way (its conditions at scale 1), zero-stability is read from the digits"
            )
        self.seconds = time.perf_counter() - start
        self.measured = self._measure()

    def _order(
        self,
        series: _Series,
        balls: _Series | None,
        prec: int,
        max_order: int | None,
        time_budget: float,
    ) -> None:
        domain = series.domain

        def judged_at(n: int) -> list[tuple[str, Judgement]]:
            out = []
            for tree in series.family.of_order(n):
                exact = series.residuals(tree)
                with flint.ctx.workprec(prec):
                    enclosed = balls.residuals(tree) if balls is not None else exact
                for i, (res, box) in enumerate(zip(exact, enclosed, strict=True)):
                    label = f"output {i}, {series.family.bracket(tree)}"
                    if balls is None:
                        judged = judge_element(domain, res)
                    else:
                        zero = bool(res == domain.zero)
                        with flint.ctx.workprec(prec):
                            judged = judge_enclosure(box, Fraction(1, tree.density), zero)
                    out.append((label, judged))
            return out

        claimed = self.method.order
        limit = max_order if max_order is not None else max(DEFAULT_CAP, (claimed or 0) + 1)
        found = search_order(
            judged_at,
            limit=limit,
            deadline=time.monotonic() + time_budget,
            capped=max_order is not None or claimed is None,
        )
        self.order = found.order
        self.order_upper = found.upper
        self.order_is_lower_bound = found.is_lower_bound
        self.stopped = found.stopped
        self.failing = [(label, j.residual) for label, j in found.failing]
        self.undetermined = [(label, j.residual, j.bound) for label, j in found.undetermined]
        judged = found.failing + found.undetermined
        self.tolerance = max((j.bound for _, j in judged), default=0.0) if balls else None
        if self.method.symbols:
            # order p for every value, but higher where the failing residuals vanish (a
            # theta-method is order 1 for every theta and 2 at theta = 1/2)
            symbols = sorted(self.method.symbols, key=str)
            raised = raised_by([r for _, r in self.failing], symbols, self.order)
            self.notes.append(
                f"parametrised family in {[str(x) for x in symbols]}: order {self.order} holds "
                "for every parameter value" + (f"; {raised}" if self.failing else "")
            )
        if self.undetermined:
            self.notes.append(
                undetermined_note(self.order, len(self.undetermined), self.order_upper)
            )
        elif found.stopped:
            self.notes.append(
                f"every condition up to order {self.order} holds; the search stopped there "
                f"({found.stopped}: order ≥ {self.order})"
            )
        hint = digits_hint(j for _, j in found.failing) if balls else None
        if hint:
            self.notes.append(hint)

    def _measure(self) -> Convergence | None:
        """The empirical order beside the proof (`convergence.glm_error`), and a note when it
        exceeds the proved order: the proof is relative to the stated start, which a better
        start (or V damping this one's error) can beat."""
        if self.method.symbols:
            return None
        curves = convergence(self.method, self)
        if not curves:
            return None
        curve = curves[0]
        if curve.slope > self.order + SLOPE_TOLERANCE:
            self.notes.append(
                f"the measured slope {curve.slope:.2f} exceeds the proved order {self.order} "
                f"(by more than the measurement's tolerance, {SLOPE_TOLERANCE}): the proved "
                "order is relative to the stated starting procedure "
                f"{', '.join(self.method.start_text())}, and the analysis does not search for a "
                "better one. The slope suggests that a better starting procedure exists, or "
                "that V damps this one's starting error."
            )
        return curve

    @property
    def measured_order(self) -> float | None:
        """The measured slope on y' = −y + cos t (None when not measured: a family, a method
        that is not zero-stable, order 0)."""
        return None if self.measured is None else self.measured.slope

    def rows(self) -> list[tuple[str, Any]]:
        m = self.method
        shown = [f"{label}: {res}" for label, res in self.failing[:4]]
        if len(self.failing) > 4:
            shown.append(f"... {len(self.failing) - 4} more")
        rows: list[tuple[str, Any]] = [
            ("order", f"{self.order}" + ("+" if self.order_is_lower_bound else "")),
            ("claimed order", m.order),
            ("stages, values", f"s = {m.stages}, r = {m.values}"),
            ("starting procedure", ", ".join(m.start_text())),
            ("preconsistent", "undetermined" if self.preconsistent is None else self.preconsistent),
            ("consistent", "undetermined" if self.consistent is None else self.consistent),
            ("zero-stable (V power-bounded)", self.zero_stable),
        ]
        if self.preconsistency_undetermined:
            rows.append(
                ("preconsistency undetermined", shown_open(self.preconsistency_undetermined))
            )
        if m.numeric:
            rows.append(("tolerance", tolerance_text(m.precision, m.rounding, self.tolerance)))
        rows.append((f"failing at order {self.order + 1}", shown))
        if self.undetermined:
            rows.append((f"undetermined at order {self.order + 1}", shown_open(self.undetermined)))
        curve = self.measured
        rows += [
            (
                "measured order (y' = −y + cos t)",
                None
                if curve is None
                else f"{curve.slope:.2f} (N = {curve.counts[-2]} → {curve.counts[-1]}, "
                f"{curve.arithmetic})",
            ),
            ("stability matrix M(z)", self.stability_matrix),
            ("real stability interval [-r, 0]: r", self.real_interval),
            ("proved in", f"{self.seconds:.3f} s"),
        ]
        return rows

    def to_dict(self) -> dict[str, Any]:
        m = self.method
        return {
            "order": self.order,
            "order_upper": self.order_upper,
            "order_is_lower_bound": self.order_is_lower_bound,
            "stopped": self.stopped,
            "tolerance": self.tolerance,
            "precision": None if m.precision is None else float(m.precision),
            "stages": m.stages,
            "values": m.values,
            "start": m.start_text(),
            "preconsistent": self.preconsistent,
            "preconsistency_vector": [str(x) for x in self.u],
            "preconsistency_undetermined": [
                {"condition": c, "residual": r, "bound": b}
                for c, r, b in self.preconsistency_undetermined
            ],
            "consistent": self.consistent,
            "zero_stable": self.zero_stable,
            "failing": [{"condition": c, "residual": r} for c, r in self.failing],
            "undetermined": [
                {"condition": c, "residual": r, "bound": b} for c, r, b in self.undetermined
            ],
            "stability_matrix": None
            if self.stability_matrix is None
            else [[str(x) for x in row] for row in self.stability_matrix.tolist()],
            "real_interval": "inf" if self.real_interval == math.inf else self.real_interval,
            "measured_order": self.measured_order,
            "seconds": self.seconds,
        }


def analyse_general_linear(
    method: GeneralLinear,
    *,
    max_order: int | None = None,
    time_budget: float = DEFAULT_TIME_BUDGET,
) -> GeneralLinearReport:
    """Preconsistency, zero-stability, M(z) and the order of a general linear method.

    **Arguments:**

    - `method`: the declaration.
    - `max_order`: stop the order search there (default: the claimed order + 1, or 8).
    - `time_budget`: seconds the order search may take.

    **Returns:** a `GeneralLinearReport`.
    """
    return GeneralLinearReport(method, max_order, time_budget)


__all__ = ["GeneralLinearReport", "analyse_general_linear", "power_bound"]
