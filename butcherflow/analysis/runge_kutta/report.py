"""The report of a Runge-Kutta method: order, stage order, error constant and stability.

The order comes from `runge_kutta/order.py` (exact proofs for exact tableaux; ball-arithmetic
verdicts met / fails / undetermined for numeric ones, `precision.py`). Every other row is computed
from the entries themselves, with the same verdicts where a numeric declaration is judged.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Sequence
from typing import Any, final

import sympy

from ...methods import ButcherTableau
from ...methods.entries.precision import RESOLUTION, digits_hint
from ...methods.parameters import initial_numbers, initial_values, relations
from ..bseries.verdicts import Geometry, tableau_geometry
from ..budget import DEFAULT_TIME_BUDGET, Deadline
from ..exact.trees import Tree
from ..report import (
    Report,
    precision_text,
    raised_by,
    shown_open,
    tolerance_text,
    trained_order_text,
    undetermined_note,
)
from ..search import Search
from .order import (
    Conditions,
    FailingConditions,
    order_bound,
    tree_family,
)
from .stability import StabilityFunction, algebraically_stable, stability_function
from .stage_order import stage_order

# Failing conditions that all miss by less than this look like the rounding of a published
# method (fractions or floats that approximate its printed digits), not like a wrong method.
NEAR_MISS = float(RESOLUTION)


@final
class RungeKuttaReport(Report):
    """What `bf.check` proves about a `ButcherTableau`.

    **Attributes:**

    - `order`: the largest p with every condition of order ≤ p met (generic order for families).
    - `order_upper`: a certain upper bound (a condition of order `order_upper + 1` fails);
      `None` when the search found no failing condition. Equal to `order` when decided.
    - `undetermined`: conditions of order p+1 that the precision of a numeric tableau cannot
      decide: `(tree, residual, bound)`.
    - `exact`: the proof used exact arithmetic (False: a numeric tableau, judged at the precision
      of its entries; `tolerance` is the largest bound used).
    - `domain`: the sympy domain of the coefficients (QQ, QQ<sqrt(6)>, ZZ(g), ...), or the ball
      arithmetic of a numeric tableau.
    - `failing`: the trees of order p+1 whose condition fails, with residuals Φ(t) − 1/γ(t).
    - `principal_error_norm`: ‖τ‖₂ over trees of order p+1, τ(t) = (Φ(t) − 1/γ(t))/σ(t).
    - `stage_order`, `embedded_order`: see the docs; `None` when not applicable.
    - `stability`: the `StabilityFunction` R(z) with its intervals and A-/L-stability.
    - `algebraically_stable`: Burrage-Butcher algebraic stability (None for families).
    - `stopped`: why the search ended without a failing condition (`"max_order"`,
      `"time budget"`), or None.
    - `initial_order`: for a declaration whose symbols are all declared parameters, the order
      of the layer when training starts (its parameters at their initial values, a decimal init
      with its rounding); else None. `initial_is_lower_bound`: its digits leave the next
      conditions undetermined.
    - `proved`: the tableau the conditions were judged on: the declaration, with the identities
      its parameters satisfy substituted (softmax weights sum to 1).
    """

    method: ButcherTableau

    def __init__(
        self,
        method: ButcherTableau,
        max_order: int | None = None,
        time_budget: float = DEFAULT_TIME_BUDGET,
    ) -> None:
        start = time.perf_counter()
        method.refuse_numeric_family()
        self.method = method
        self.notes: list[str] = []
        deadline = Deadline.after(time_budget)
        identities = relations(method.parameters)
        self.proved = method.subs(identities) if identities else method
        method = self.proved
        self.order_bound = order_bound(method)
        self._conditions = Conditions(method)
        found = self._conditions.search(self.order_bound, deadline, max_order)
        self._set_order(found)
        self.zero_stable = True  # a one-step method
        self.domain = self._conditions.domain
        self.tolerance = (
            max((j.bound for _, j in found.failing + found.undetermined), default=0.0)
            if method.numeric
            else None
        )
        self.principal_error_norm = self._error_norm(found)
        self.stage_order, stage_decided = (
            stage_order(method, min(self.order, method.stages) + 1) if self.order > 0 else (0, True)
        )
        self.embedded_order: int | None = None
        self.embedded_undetermined = False
        if method.b_hat is not None:
            embedded = Conditions(method, "b_hat", self._conditions).search(
                self.order_bound, deadline, max_order
            )
            self.embedded_order = embedded.order
            self.embedded_undetermined = bool(embedded.undetermined)
        self.stability: StabilityFunction = stability_function(
            method, self.order, self._open_up_to() if self.undetermined else None, deadline
        )
        self.algebraically_stable = algebraically_stable(method)
        self.initial_is_lower_bound = False
        self.initial_order, self.initial_values = self._initial(deadline, max_order)
        self._explain(stage_decided)
        if self.stability.out_of_time and not method.numeric:  # numeric: said with its notes
            self.notes.append(deadline.note)
        for symbol, value in identities.items():
            self.notes.append(
                f"softmax weights sum to 1 for every token: proved with {symbol} = {value}."
            )
        # the geometric rows, computed when first read, get what is left of the budget
        self._geometry_budget = deadline.left()
        self.seconds = time.perf_counter() - start

    def _open_up_to(self) -> int:
        """The highest order the digits leave open: below the first failing condition, or
        what the stage count allows."""
        return self.order_bound if self.order_upper is None else self.order_upper

    def _set_order(self, found: Search[Tree]) -> None:
        family = self._conditions.family
        self.order = found.order
        self.order_upper = found.upper
        self.stopped = found.stopped
        self.order_is_lower_bound = found.upper != found.order
        self._failing: Sequence[tuple[str, Any]] = FailingConditions(family, found.failing)
        self.undetermined = [
            (family.bracket(t), j.residual, j.bound) for t, j in found.undetermined
        ]
        self._search = found

    def _initial(
        self, deadline: Deadline, max_order: int | None
    ) -> tuple[int | None, dict[str, Any]]:
        """The order when training starts: every parameter at its initial value."""
        declared = self.method.parameters
        if not declared or self.method.symbols - set(declared):
            return None, {}
        numbers = initial_numbers(declared)  # a decimal init keeps its rounding in the member
        member = self.proved.subs({s: n for s, n in numbers.items() if s in self.proved.symbols})
        found = Conditions(member).search(order_bound(member), deadline, max_order)
        self.initial_is_lower_bound = bool(found.undetermined)
        return found.order, {str(s): n.raw for s, n in numbers.items()}

    @property
    def exact(self) -> bool:
        return not self.proved.numeric

    @property
    def failing(self) -> Sequence[tuple[str, Any]]:
        return self._failing

    @property
    def real_stability_interval(self) -> float | None:
        return self.stability.real_interval

    @property
    def block_order_text(self) -> str:
        """The order of the layer as it trains: for declared parameters, the order for every
        value they take, and the order at their initial values."""
        if self.initial_order is None:
            return super().block_order_text
        return trained_order_text(
            self.order,
            self.proved.symbols,
            self.initial_order,
            self.initial_values,
            self.initial_is_lower_bound,
        )

    def _error_norm(self, found: Search[Tree]) -> float | None:
        if self.method.symbols or not found.decided:
            return None
        trees = self._conditions.family.of_order(self.order + 1)
        residuals = self._conditions.residual_floats(trees)
        # hypot: residuals of entries near 1e300 would overflow their squares (inf is the answer)
        return math.hypot(*(r / t.symmetry for r, t in zip(residuals, trees, strict=True)))

    def _explain(self, stage_decided: bool) -> None:
        m = self.proved
        total = sympy.nsimplify(sympy.Add(*m.b))
        if self.order == 0 and not m.symbols and not m.numeric and sympy.simplify(total - 1) != 0:
            self.notes.append(
                f"Σb = {total} ≠ 1: inconsistent as an integrator of f (order 0); it is a "
                f"consistent step for the rescaled field {total}·f (step {total}·h)."
            )
        if self.stopped == "max_order":
            self.notes.append(
                f"every condition up to order {self.order} holds; the search "
                f"stopped there as asked (order ≥ {self.order})."
            )
        if self.stopped == "time budget":
            self.notes.append(
                f"established to order {self.order}; the search stopped at the time budget "
                "before finding a failing condition (order ≥ "
                f"{self.order}; `time_budget=` or --time-budget gives it longer)."
            )
        if m.numeric:
            self._explain_numeric(stage_decided)
        if not m.symbols:
            self._explain_near_misses()
        if m.symbols:
            self.notes.append(
                f"parametrised family in {sorted(map(str, m.symbols))}: order {self.order} holds "
                "for every parameter value; " + self._raised_by()
            )
        if tree_family(m)[1]:
            self.notes.append(
                "c differs from the row sums of A (row_sum_c = false): the order is for "
                "non-autonomous problems, with the time variable as a leaf-only tree colour."
            )
        if m.is_implicit:
            self.notes.append(
                f"{m.kind} method: compiled layers solve the stages by "
                f"{m.iterations or 'a declared number of'} fixed-point iteration(s)."
            )

    def _explain_numeric(self, stage_decided: bool) -> None:
        m = self.method
        precision = precision_text(m.precision, m.rounding)
        self.notes.append(
            f"numeric tableau ({precision}): each condition was evaluated in ball arithmetic "
            "holding every method within that precision; a condition counts as met when its "
            f"residual is exactly zero or its enclosure holds 0 and is below "
            f"{float(RESOLUTION):.2g}·(1/γ(t)), fails when the enclosure excludes 0, and is "
            "undetermined otherwise."
        )
        if self.undetermined:
            self.notes.append(
                undetermined_note(self.order, len(self.undetermined), self.order_upper)
            )
            if self.order + 1 > self.order_bound:
                self.notes.append(
                    f"order {self.order + 1} exceeds what {m.stages} stages allow "
                    f"({'Butcher barrier' if m.is_explicit else '2s'}: {self.order_bound}): at "
                    "least one of its conditions fails, the precision cannot show which."
                )
        hint = digits_hint(j for _, j in self._search.failing)
        if hint:
            self.notes.append(hint)
        if not stage_decided:
            self.notes.append(
                f"stage order {self.stage_order} established; the next is undetermined at "
                "this precision."
            )
        self.notes.extend(self.stability.notes)  # what the stability rows assumed or left open
        for key in m.undetermined_nodes:
            self.notes.append(
                f"{key} equals the row sum of A only to within the precision of the entries "
                "(undetermined): the analysis uses the row sums."
            )

    def _explain_near_misses(self) -> None:
        """Entries that miss order p + 1 only by less than `NEAR_MISS` are usually rounded values
        of a published method (Kennedy and Carpenter's additive pairs are printed as fractions
        that approximate their digits, NodePy keeps 8-digit SSP tables as floats): say so, and
        how to judge them at their rounding."""
        if self.stopped or self.order >= self.order_bound:
            return
        if self.method.numeric and digits_hint(j for _, j in self._search.failing):
            return  # said already, at the level of the entries' own digits
        worst = 0.0
        for _, residual in self.failing:  # converted one by one: the first is usually large
            worst = max(worst, abs(float(residual)))
            if worst >= NEAR_MISS:
                return
        if not worst:
            return
        exponent = math.floor(math.log10(worst))
        self.notes.append(
            f"the {len(self.failing)} failing condition(s) of order {self.order + 1} miss by "
            f"at most {worst:.2g}: if the entries are rounded values of a published method, "
            f"declare the precision of that rounding (precision = 1e{exponent} or coarser) to "
            "judge the order at it."
        )

    def _raised_by(self) -> str:
        residuals = [r for _, r in self.failing]
        return raised_by(residuals, list(self.proved.symbols), self.order)

    def conditions(self, order: int) -> list[sympy.Expr]:
        """The order conditions up to `order` that do not hold identically, as residuals
        Φ(t) − 1/γ(t) (polynomials or rational functions in the family's symbols)."""
        table = self._conditions.table
        out = []
        for tree in self._conditions.family.up_to(order):
            res = table.residual(tree)
            if res != table.domain.zero:
                out.append(sympy.factor(table.to_sympy(res)))
        return out

    @functools.cached_property
    def geometry(self) -> Geometry:
        """Symplecticity, symmetry, energy preservation, SSP coefficient and internal stability
        (`bseries.verdicts`), computed when first read (the order proof does not wait for them)
        within what the rest of the report left of its time budget."""
        deadline = Deadline.after(self._geometry_budget)
        return tableau_geometry(self.proved, self.order, self.stability.real_interval, deadline)

    def geometry_rows(self) -> list[tuple[str, Any]]:
        return self.geometry.rows()

    @property
    def claims(self) -> dict[str, tuple[Any, Any]]:
        claims = super().claims
        claims["embedded_order"] = (self.method.embedded_order, self.embedded_order)
        return claims

    def rows(self) -> list[tuple[str, Any]]:
        m = self.method
        order = f"{self.order}" + ("+" if self.order_is_lower_bound else "")
        stab = self.stability
        shown_failing = [f"{tree}: {_show_residual(res)}" for tree, res in self.failing[:4]]
        if len(self.failing) > 4:
            shown_failing.append(f"... {len(self.failing) - 4} more")
        rows: list[tuple[str, Any]] = [
            ("order", order),
            ("claimed order", m.order),
            ("exact", self.exact),
            ("kind", f"{m.kind}, {m.stages} stage(s)"),
            ("domain", self.domain),
        ]
        if m.parameters:
            start = initial_values(m.parameters)
            rows.append(
                (
                    "parameters",
                    [f"{s}: {p.describe(start[s])}" for s, p in m.parameters.items()],
                )
            )
            initial = f"{self.initial_order}{'+' if self.initial_is_lower_bound else ''}"
            rows.append(("order at initialisation", initial))
        if m.numeric:
            rows.append(("tolerance", tolerance_text(m.precision, m.rounding, self.tolerance)))
        rows += [
            (f"failing at order {self.order + 1}", shown_failing),
        ]
        if self.undetermined:
            rows.append((f"undetermined at order {self.order + 1}", shown_open(self.undetermined)))
        rows += [
            ("principal error norm", self.principal_error_norm),
            ("stage order", self.stage_order),
            ("embedded order", self.embedded_order),
            ("stability function R(z)", stab.expression),
            ("real stability interval", stab.real_interval_text),
            ("imaginary stability interval", stab.imaginary_interval_text),
            ("A-stable", stab.shown(stab.a_stable)),
            ("L-stable", stab.shown(stab.l_stable)),
            ("algebraically stable", self.algebraically_stable),
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
            "exact": self.exact,
            "tolerance": self.tolerance,
            "precision": None if m.precision is None else float(m.precision),
            "resolution": float(RESOLUTION) if m.numeric else None,
            "kind": m.kind,
            "stages": m.stages,
            "parameters": {str(s): p.kind for s, p in m.parameters.items()},
            "initial_order": self.initial_order,
            "initial_order_is_lower_bound": self.initial_is_lower_bound,
            "domain": self.domain,
            "failing_trees": [{"tree": t, "residual": r} for t, r in self.failing],
            "undetermined_trees": [
                {"tree": t, "residual": r, "bound": b} for t, r, b in self.undetermined
            ],
            "principal_error_norm": self.principal_error_norm,
            "stage_order": self.stage_order,
            "embedded_order": self.embedded_order,
            "stability_function": self.stability.expression,
            "real_stability_interval": self.stability.real_interval,
            "imaginary_stability_interval": self.stability.imaginary_interval,
            "a_stable": self.stability.a_stable,
            "l_stable": self.stability.l_stable,
            "algebraically_stable": self.algebraically_stable,
            "geometry": self.geometry.to_dict(),
            "seconds": self.seconds,
        }

    @property
    def stability_function(self) -> sympy.Expr:
        """R(z) as a sympy rational function of the symbol z."""
        return self.stability.expression


def _show_residual(residual: Any) -> str:
    return f"{residual:.3g}" if isinstance(residual, float) else str(residual)


def analyse_tableau(
    tableau: ButcherTableau,
    *,
    max_order: int | None = None,
    time_budget: float = DEFAULT_TIME_BUDGET,
) -> RungeKuttaReport:
    """Prove the order of a tableau and describe its stability.

    **Arguments:**

    - `tableau`: the method.
    - `max_order`: stop the search there (default: what the stage count allows, Butcher's
      barrier for explicit methods and 2s for implicit ones, plus the order that must fail).
    - `time_budget`: seconds the order search may take; past it the report says what was
      established and that the search stopped at the budget.

    **Returns:** a `RungeKuttaReport`.
    """
    return RungeKuttaReport(tableau, max_order, time_budget)
