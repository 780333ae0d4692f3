"""`bf.check` on an additive Runge-Kutta method: its order over trees coloured by field, and its
stability function in one variable per field.

On the linear test problem y' = Σ_X λ_X y a step multiplies y by
R(z_X, ...) = 1 + Σᵢ bᵢ z_{Xᵢ} Yᵢ with Yᵢ = 1 + Σⱼ aᵢⱼ z_{Xⱼ} Yⱼ (z_X = hλ_X): a rational function
of one variable per field, as IMEX analyses state it (Ascher, Ruuth and Spiteri 1997, §2). No
single-variable R(z) or real interval describes the method unless the fields are equal, which
an additive declaration does not assume.
"""

from __future__ import annotations

import time
from typing import Any, final

import flint
import sympy
from sympy.polys.polyerrors import CoercionFailed

from ...methods import AdditiveRungeKutta
from ...methods.additive import split_by_field
from ...methods.entries.precision import working_precision
from ..budget import DEFAULT_TIME_BUDGET, Deadline
from ..enclosure.weights import WeightEnclosures
from ..exact.trees import TreeFamily
from ..report import Report, shown_open, tolerance_text, undetermined_note
from .order import search_coloured_order

DEFAULT_CAP = 6  # without a claim: coloured trees grow as (fields)^order, order 6 is thousands


@final
class AdditiveReport(Report):
    """What `bf.check` proves about an `AdditiveRungeKutta`.

    **Arguments:**

    - `method`: the declaration.
    - `max_order`: where the coloured search stops (default: the claimed order + 1, or
      `DEFAULT_CAP`).
    - `time_budget`: seconds for the coloured search.

    Attributes: `order` (coloured trees), `failing` / `undetermined` (at `order` + 1, in
    Butcher's bracket notation with the field as colour), `stability_function` (R in the
    variables `z_X`, exact entries only), `tolerance` (numeric declarations), `notes`.
    """

    method: AdditiveRungeKutta

    def __init__(
        self,
        method: AdditiveRungeKutta,
        max_order: int | None = None,
        time_budget: float = DEFAULT_TIME_BUDGET,
    ) -> None:
        began = time.perf_counter()
        deadline = Deadline.after(time_budget)
        self.method = method
        self.notes: list[str] = []
        self.zero_stable = True  # a one-step method
        family = TreeFamily(colours=method.operators)
        big_A, big_b = method.by_field()
        limit = max_order if max_order is not None else max(DEFAULT_CAP, (method.order or 0) + 1)
        found = search_coloured_order(
            family,
            big_A,
            big_b,
            self._balls(family) if method.numeric else None,
            limit=limit,
            deadline=deadline,
            capped=max_order is not None,
        )
        self.order: int = found.order
        self.order_is_lower_bound = found.is_lower_bound
        self.stopped = found.stopped
        self._failing = [(family.bracket(t), j.residual) for t, j in found.failing]
        self.undetermined = [
            (family.bracket(t), j.residual, j.bound) for t, j in found.undetermined
        ]
        bounds = [j.bound for _, j in found.failing + found.undetermined]
        self.tolerance = max(bounds, default=0.0) if method.numeric else None
        self.stability_function = None if method.numeric else stability_function(method)
        self._explain(found.upper)
        self.seconds = time.perf_counter() - began

    def _balls(self, family: TreeFamily) -> WeightEnclosures:
        """The per-field weights in balls holding every method within the entries' precision."""
        m = self.method
        prec = working_precision(m.numbers.flat)
        with flint.ctx.workprec(prec):
            A, b = m.numbers.A.balls(), m.numbers.b.balls()
            big_A, big_b = split_by_field(m.fields, A, b, flint.arb(0))
        return WeightEnclosures(family, big_A, big_b, prec=prec)

    def _explain(self, upper: int | None) -> None:
        m = self.method
        if len(m.operators) == 1:
            self.notes.append(
                f"every call evaluates {m.operators[0]}: the method is the tableau (A, b) itself"
            )
        if self.undetermined:
            self.notes.append(undetermined_note(self.order, len(self.undetermined), upper))
        elif self.order_is_lower_bound and self.stopped is not None:
            self.notes.append(
                f"every coloured condition up to order {self.order} holds; the search stopped "
                f"there ({self.stopped})"
            )
        if m.numeric:
            self.notes.append(
                f"numeric entries (±{float(m.rounding):.2g}): the stability function is "
                "given for exact declarations only"
            )

    @property
    def exact(self) -> bool:
        return not self.method.numeric

    @property
    def failing(self) -> list[tuple[str, Any]]:
        return self._failing

    @property
    def failing_what(self) -> str:
        return f"coloured trees at order {self.order + 1}"

    def rows(self) -> list[tuple[str, Any]]:
        m = self.method
        order = f"{self.order}" + ("+" if self.order_is_lower_bound else "")
        kind = "explicit" if m.is_explicit else "implicit"
        rows: list[tuple[str, Any]] = [
            ("order (coloured trees)", order),
            ("claimed order", m.order),
            ("exact", self.exact),
            ("kind", f"{kind}, {m.stages} call(s) of {len(m.operators)} field(s)"),
            ("fields, call by call", list(m.fields)),
        ]
        if m.numeric:
            rows.append(("tolerance", tolerance_text(m.precision, m.rounding, self.tolerance)))
        shown = [f"{tree}: {residual}" for tree, residual in self._failing[:4]]
        rows.append((f"failing at order {self.order + 1}", shown))
        if self.undetermined:
            rows.append((f"undetermined at order {self.order + 1}", shown_open(self.undetermined)))
        variables = ", ".join(f"z_{X}" for X in m.operators)
        rows.append((f"stability function R({variables})", self.stability_function))
        return rows

    def to_dict(self) -> dict[str, Any]:
        return {
            "order": self.order,
            "order_is_lower_bound": self.order_is_lower_bound,
            "exact": self.exact,
            "fields": list(self.method.fields),
            "failing": [[t, r] for t, r in self._failing],
            "undetermined": [[t, r, bound] for t, r, bound in self.undetermined],
            "tolerance": self.tolerance,
            "stability_function": self.stability_function,
            "seconds": self.seconds,
        }


def stability_function(method: AdditiveRungeKutta) -> sympy.Expr:
    """R(z_X, ...) on y' = Σ_X λ_X y, z_X = hλ_X (module docstring), exact and simplified.

    **Arguments:** `method`: an exact declaration.

    **Returns:** the rational function in the symbols `z_<field>`.
    """
    z = {X: sympy.Symbol(f"z_{X}") for X in method.operators}
    s = method.stages
    scaled = sympy.Matrix(s, s, lambda i, j: method.A[i][j] * z[method.fields[j]])
    stages = (sympy.eye(s) - scaled).LUsolve(sympy.ones(s, 1))
    step = 1 + sum(method.b[i] * z[method.fields[i]] * stages[i] for i in range(s))
    num, den = sympy.fraction(sympy.cancel(sympy.together(step)))
    scale = den.subs({x: 0 for x in z.values()})  # R = P/Q with Q(0) = 1
    algebraic = sorted(
        {a for a in step.atoms(sympy.Pow) if a.exp.is_Rational and not a.exp.is_Integer}, key=str
    )
    num, den = (sympy.expand(sympy.radsimp(sympy.expand(x / scale))) for x in (num, den))
    return _factored(num, algebraic) / _factored(den, algebraic)


def _factored(x: sympy.Expr, algebraic: list[sympy.Expr]) -> sympy.Expr:
    """x factored over the field of its radicals; expanded as it is where sympy cannot put a
    coefficient in that field (a 400-digit entry beside √2: CoercionFailed; factoring it over QQ
    instead takes minutes)."""
    try:
        return sympy.factor(x, extension=algebraic or None)
    except CoercionFailed:
        return x


def analyse_additive(
    method: AdditiveRungeKutta,
    *,
    max_order: int | None = None,
    time_budget: float = DEFAULT_TIME_BUDGET,
) -> AdditiveReport:
    """Prove the order of an additive Runge-Kutta method (`AdditiveReport`)."""
    return AdditiveReport(method, max_order, time_budget)
