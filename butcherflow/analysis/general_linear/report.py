"""General linear methods: preconsistency, consistency, zero-stability, M(z) and order.

For a GLM (A, U, B, V) with r inputs and s stages (`methods/general_linear.py`):

- **Preconsistency**: V u = u and U u = 1 for the vector u of the inputs' y(x)-coefficients
  (the starting procedure's; Butcher's preconsistency vector). Judged like an order condition
  (scale 1): for numeric entries met, fails (the ball excludes 0) or undetermined (θ and 1 − θ
  typed separately to 4 digits); undetermined, its conditions count among those of order 1 (the
  order established stays 0: every order needs them), and the search goes on for an upper bound.
- **Zero-stability**: V is power-bounded: its eigenvalues lie in the closed unit disc and those on
  the circle are semisimple. Decided exactly for rational V (the factors of its characteristic
  polynomial, `root_condition`'s machinery, and ranks of f(V) for the factors f on the
  circle). A doubly stochastic V (mHC) is power-bounded because ‖Vⁿ‖∞ = 1 for every n.
- **Stability matrix** M(z) = V + zB(I − zA)⁻¹U; the method is stable at z when M(z) is
  power-bounded. Its real stability interval ends at a real root of polynomials found exactly
  (`general_linear/stability.py: real_stability_interval`), each piece between them decided
  exactly; a numeric declaration's end is then enclosed over every method within the precision
  (`general_linear/enclosure.py`).
- **Order** relative to the stated starting procedure ξ, by B-series over rooted trees: the stages
  have the B-series η(t) = A η′(t) + U ξ(t), with η′([t₁…t_m]) = η(t₁)⋯η(t_m), and the outputs
  B η′(t) + V ξ(t) must equal the starting procedure advanced by one step, E ξ(t), where an input
  c·y(x + θh) has the coefficients c·θ^|t|/γ(t) and c·h·f(y(x + θh)) has c·|t|θ^(|t|−1)/γ(t).
  Order p: every tree with |t| ≤ p. This is Butcher's order of a GLM relative to a starting
  method; the analysis does not search for the best starting method, and it stops at order 8
  without a claim (GLMs have no barrier as simple as Runge-Kutta's). Numeric entries get the
  verdicts of every family (met, fails, undetermined), and the report names the conditions the
  digits cannot decide, with their residuals against the rounding.
- **Measured order** beside the proof (`global_error.glm_error`, y' = −y + cos t started by the
  stated procedure). A slope above the proved order by more than `SLOPE_TOLERANCE` is said in a
  note: the proof is relative to the stated start, and a better start, or a starting error that
  V damps, can give more (a DIMSIM started by y(x) − h f(x) is order 1 and measures 2).

Learned coefficients: the proof is of the declaration (the initialisation); a trained model's
V is checked for power-boundedness separately (`power_bound`).

Homes: the B-series and preconsistency are `general_linear/series.py`; zero-stability, M(z), the
real interval and `power_bound` are `general_linear/stability.py`; this module is the order search
and the report.
"""

from __future__ import annotations

import functools
import math
import time
from fractions import Fraction
from typing import Any, final

import flint

from ...methods.entries.precision import (
    RESOLUTION,
    Judgement,
    Verdict,
    digits_hint,
    judge_enclosure,
)
from ...methods.general_linear import GeneralLinear
from ..budget import DEFAULT_TIME_BUDGET, NOT_DECIDED, Deadline, OutOfTime
from ..convergence import SLOPE_TOLERANCE, Convergence, convergence
from ..enclosure.common import Enclosure, spread_text
from ..exact.weights import judge_element
from ..report import (
    DECIDE,
    OPEN_ROW,
    Report,
    digits_reading,
    open_text,
    precision_text,
    raised_by,
    shown_open,
    tolerance_text,
    undetermined_note,
)
from ..search import search_order
from .enclosure import candidates_after_none, enclose_real_interval
from .series import StageSeries, judge_preconsistency, series_of
from .stability import (
    power_bound,
    real_stability_interval,
    spectral_rounding,
    stability_matrix,
    unpinned_copies,
    zero_stability,
)
from .symplectic import GSymplectic, g_symplectic

DEFAULT_CAP = 8


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
    `real_interval` (the digits' method's end; None where a numeric declaration's cannot be
    enclosed), `real_enclosure` (for a numeric declaration, (lo, hi) holding the end of every
    method within the precision whose V has the eigenvalue 1, `general_linear/enclosure.py`),
    `notes`.
    """

    method: GeneralLinear

    def __init__(
        self,
        method: GeneralLinear,
        max_order: int | None = None,
        time_budget: float = DEFAULT_TIME_BUDGET,
    ) -> None:
        start = time.perf_counter()
        deadline = Deadline.after(time_budget)
        self.method = method
        self.notes: list[str] = []
        series, balls, prec = series_of(method)
        pre = judge_preconsistency(series, balls, prec)
        self.preconsistent, self.u = pre.holds, pre.u
        self.preconsistency_undetermined = pre.undetermined
        # power-boundedness is V's alone, and only entries within its diagonal blocks move it:
        # they decide it exactly when exact, whatever A, U, B and the other entries carry
        self.zero_stable, how = zero_stability(
            method.V, float(spectral_rounding(method)), unpinned_copies(method, pre.u)
        )
        self.notes.append(f"zero-stability: {how}")
        self._failing: list[tuple[str, Any]] = []
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
                    f"{DECIDE}. Every order needs them: they count among the conditions of order 1."
                )
            self._order(series, balls, prec, max_order, deadline, pre.undetermined)
        if pre.tolerance is not None:
            self.tolerance = max(self.tolerance or 0.0, pre.tolerance)
        # consistency is preconsistency and order 1: undetermined (None) when the digits cannot
        # decide either
        if self.order >= 1:
            self.consistent: bool | None = True if self.preconsistent else None
        else:
            self.consistent = None if self.undetermined else False
        self.stability_matrix = stability_matrix(method) if not method.symbols else None
        self.real_interval: float | None = None
        self.real_enclosure: Enclosure | None = None
        self.out_of_time = False  # the budget ran out before the interval was decided
        if not method.symbols:
            try:
                deadline.check()
                self.real_interval, interval_how = real_stability_interval(method, deadline)
                self.notes.append(interval_how)
                if method.numeric:
                    deadline.check()
                    self._enclose()
            except OutOfTime:
                self.real_interval, self.real_enclosure, self.out_of_time = None, None, True
                self.notes.append(deadline.note)
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
        # the geometric row, computed when first read, gets what is left of the budget
        self._geometry_budget = deadline.left()

    @functools.cached_property
    def g_symplectic(self) -> GSymplectic | None:
        """G-symplecticity with its proof (`general_linear/symplectic.py`), computed when first
        read within what the rest of the report left of its time budget (None: not decided
        within it)."""
        try:
            return g_symplectic(self.method, Deadline.after(self._geometry_budget))
        except OutOfTime:
            return None

    def geometry_rows(self) -> list[tuple[str, Any]]:
        found = self.g_symplectic
        return [("G-symplectic", NOT_DECIDED if found is None else found.text())]

    def _enclose(self) -> None:
        """A numeric declaration's interval end enclosed over the methods within its precision
        (`general_linear/enclosure.py`), or undetermined where that fails; "none" stays the digits'
        reading."""
        method, end = self.method, self.real_interval
        rounding = float(method.rounding)
        if end == 0 and self.preconsistent:
            for candidate in candidates_after_none(method):
                found, widened, _why = enclose_real_interval(method, candidate, True)
                if found is not None:
                    self.real_interval = candidate
                    self.notes.append(
                        "real stability interval: the digits' own method reads none (its "
                        "eigenvalue 1 leaves the unit disc by their rounding next to z = 0); "
                        "the methods within the precision with V u = u share the end below"
                    )
                    self._enclosed(found, widened)
                    return
        if end == 0:
            # Near x = 0 the principal eigenvalue is about 1 + x, and the rounding moves the
            # eigenvalues by about (s + r)·rounding: "none" within ten times that is the digits'
            # doing as much as the method's, as in the multistep analysis.
            reach = 10 * (method.stages + len(method.V)) * rounding
            if reach > 1e-6:
                self.real_interval = None
                self.notes.append(
                    f"real stability interval undetermined: the digits' method ends it within "
                    f"{reach:.3g} of x = 0, the reach of their rounding there, so they cannot tell "
                    "where it ends"
                )
            else:
                self.notes.append(f"real stability interval: {digits_reading(rounding)}")
            return
        assert end is not None
        found, widened, why = enclose_real_interval(method, float(end), self.preconsistent is True)
        if found is None:
            self.real_interval = None
            self.notes.append(
                f"real stability interval undetermined: {why} (the digits' method reads "
                f"{end:.6g}; arb balls of the entries, `general_linear/enclosure.py`)"
            )
            return
        self._enclosed(found, widened)

    def _enclosed(self, found: Enclosure, widened: bool) -> None:
        self.real_enclosure = found
        shown = (
            "the whole negative axis"
            if found[1] == math.inf
            else f"an end in [{found[0]:.6g}, {found[1]:.6g}]"
        )
        self.notes.append(
            "real stability interval enclosed over every method within the precision of the "
            "entries"
            + (
                " whose V has the eigenvalue 1 (among them those with V u = u, U u = 1: "
                "preconsistency, which the digits meet)"
                if self.preconsistent
                else ""
            )
            + f": {shown} for each"
            + (
                ", counting an eigenvalue less than 1.5e-8 outside |w| = 1 as stable"
                if widened
                else ""
            )
            + " (the eigenvalues of M(z) as roots of det(I − zA)·det(wI − M(z)), Schur-Cohn steps "
            "in arb balls on pieces of the axis, Rouché's theorem next to z = 0; "
            "`general_linear/enclosure.py`)"
        )

    def _order(
        self,
        series: StageSeries,
        balls: StageSeries | None,
        prec: int,
        max_order: int | None,
        deadline: Deadline,
        preconsistency_open: list[tuple[str, Any, float]],
    ) -> None:
        domain = series.domain

        def judged_at(n: int) -> list[tuple[str, Judgement]]:
            # preconsistency (the empty tree's conditions) is part of every order: open, it
            # keeps the order established at 0, as an open condition of order 1 would
            out = [
                (label, Judgement(Verdict.UNDETERMINED, residual, bound))
                for label, residual, bound in (preconsistency_open if n == 1 else [])
            ]
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
            deadline=deadline,
            capped=max_order is not None or claimed is None,
        )
        self.order = found.order
        self.order_upper = found.upper
        self.order_is_lower_bound = found.is_lower_bound
        self.stopped = found.stopped
        self._failing = [(label, j.residual) for label, j in found.failing]
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
        """The empirical order beside the proof (`global_error.glm_error`), and a note when it
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
    def exact(self) -> bool:
        return not self.method.numeric

    @property
    def failing(self) -> list[tuple[str, Any]]:
        return self._failing

    @property
    def real_stability_interval(self) -> float | None:
        return self.real_interval

    @property
    def measured_order(self) -> float | None:
        """The measured slope on y' = −y + cos t (None when not measured: a family, a method
        that is not zero-stable, order 0)."""
        return None if self.measured is None else self.measured.slope

    def _zero_stability_text(self) -> Any:
        if self.zero_stable is None and not any(
            x.free_symbols for row in self.method.V for x in row
        ):
            return OPEN_ROW  # the digits cannot decide it (a family's depends on its symbols)
        return self.zero_stable

    def _interval_text(self) -> Any:
        if self.real_interval is None and self.out_of_time:
            return NOT_DECIDED
        if self.real_interval is None and not self.method.symbols:
            return OPEN_ROW
        spread = spread_text(self.real_enclosure)
        return f"{self.real_interval:.6g}{spread}" if spread else self.real_interval

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
            ("zero-stable (V power-bounded)", self._zero_stability_text()),
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
            ("real stability interval [-r, 0]: r", self._interval_text()),
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
            "real_interval_enclosure": None
            if self.real_enclosure is None
            else ["inf" if x == math.inf else x for x in self.real_enclosure],
            "measured_order": self.measured_order,
            "seconds": self.seconds,
            "g_symplectic": None if self.g_symplectic is None else self.g_symplectic.to_dict(),
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
