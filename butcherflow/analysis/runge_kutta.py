"""Order of Runge-Kutta methods, proved exactly over rooted trees, and their linear stability.

The order is the largest p such that Φ(t) = 1/γ(t) for every rooted tree t with |t| ≤ p. The
weights are computed in the smallest exact sympy domain of the coefficients (`weights.py`). A
numeric tableau (floats or decimals) is still evaluated exactly, from the digits given, and each
residual is compared with a rigorous bound on what rounding those digits can cause:
|Φ(A + δA, b + δb) − Φ(A, b)| ≤ Φ(|A| + ε, |b| + ε) − Φ(|A|, |b|) for |δ| ≤ ε entrywise, since Φ is
a polynomial with non-negative coefficients in the entries.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any, final

import sympy

from ..methods import ButcherTableau
from .report import Report
from .stability import StabilityFunction, algebraically_stable, stability_function
from .trees import PLAIN, Tree, TreeFamily
from .weights import Dual, WeightTable

DEFAULT_CAP = 10  # search limit when the declaration claims no order


def _tree_family(tableau: ButcherTableau) -> tuple[TreeFamily, dict[str, Sequence[Any]]]:
    """Plain trees, or trees with a leaf-only time colour when c is not the row sums of A."""
    sums = [sympy.Add(*row) for row in tableau.A]
    if tableau.row_sum_c or all(
        sympy.simplify(x - y) == 0 for x, y in zip(tableau.c, sums, strict=True)
    ):
        return PLAIN, {}
    return TreeFamily(("y",), leaf_only=("t",)), {"t": tableau.c}


class _Conditions:
    """Residuals of the order conditions of one tableau, with the rounding bound when numeric."""

    def __init__(self, tableau: ButcherTableau, weights: tuple[Sequence[Any], ...] | None = None):
        A, b = (tableau.A, tableau.b) if weights is None else weights
        self.family, leaves = _tree_family(tableau)
        colours = {colour: b for colour in self.family.colours}
        matrices = {colour: A for colour in self.family.colours if colour not in leaves}
        self.table = WeightTable(self.family, matrices, colours, leaves)
        self.numeric = tableau.numeric
        self.symbolic = bool(tableau.symbols)
        if self.numeric:
            eps = _entry_rounding(tableau, len(b), b is tableau.b)

            def dual(values: Sequence[Any], rounding: Sequence[float]) -> list[Dual]:
                return [Dual(abs(float(x)), e) for x, e in zip(values, rounding, strict=True)]

            self._bound = WeightTable(
                self.family,
                {c: [dual(row, e) for row, e in zip(A, eps["A"], strict=True)] for c in matrices},
                {c: dual(b, eps["b"]) for c in self.family.colours},
                {k: dual(v, eps["c"]) for k, v in leaves.items()},
                exact=False,
            )

    def tolerance(self, tree: Tree) -> float:
        """Twice the first-order bound on what rounding can change Φ(t) (0 when exact)."""
        if not self.numeric:
            return 0.0
        return 2.0 * self._bound.weight(tree).dx + 1e-300

    def residual(self, tree: Tree) -> Any:
        return self.table.residual(tree)

    def holds(self, tree: Tree) -> bool:
        res = self.table.residual(tree)
        if self.numeric:
            return abs(float(self.table.to_sympy(res))) <= self.tolerance(tree)
        return bool(res == self.table.domain.zero)

    def order(self, cap: int) -> tuple[int, list[Tree], bool]:
        """(order, failing trees at order+1, whether the search stopped at the cap)."""
        for n in range(1, cap + 1):
            failing = [t for t in self.family.of_order(n) if not self.holds(t)]
            if failing:
                return n - 1, failing, False
        return cap, [], True


def _entry_rounding(tableau: ButcherTableau, s: int, main: bool) -> dict[str, Any]:
    entries = tableau.entries
    weights = "b" if main else "b_hat"
    return {
        "A": [[entries[f"A[{i}][{j}]"].rounding for j in range(s)] for i in range(s)],
        "b": [entries[f"{weights}[{i}]"].rounding for i in range(s)],
        "c": [entries[f"c[{i}]"].rounding for i in range(s)],
    }


def _stage_order(tableau: ButcherTableau, cap: int) -> int:
    """Largest q with B(q) and C(q): Σ bᵢcᵢ^(k-1) = 1/k and Σⱼ aᵢⱼcⱼ^(k-1) = cᵢ^k/k for k ≤ q."""
    A, b, c = tableau.A, tableau.b, tableau.c
    s = tableau.stages

    def zero(expr: sympy.Expr) -> bool:
        if tableau.numeric and not expr.free_symbols:
            return abs(float(expr)) <= 1e3 * tableau.rounding * s
        return bool(sympy.simplify(expr) == 0)

    q = 0
    for k in range(1, cap + 1):
        quad = sympy.Add(*(b[i] * c[i] ** (k - 1) for i in range(s))) - sympy.Rational(1, k)
        if not zero(quad):
            break
        rows = (
            sympy.Add(*(A[i][j] * c[j] ** (k - 1) for j in range(s))) - c[i] ** k / k
            for i in range(s)
        )
        if not all(zero(r) for r in rows):
            break
        q = k
    return q


@final
class RungeKuttaReport(Report):
    """What `bf.check` proves about a `ButcherTableau`.

    **Attributes:**

    - `order`: the largest p with every condition of order ≤ p met (generic order for families).
    - `exact`: the proof used exact arithmetic (False: numeric tableau, compared with `tolerance`).
    - `domain`: the sympy domain of the coefficients (QQ, QQ<sqrt(6)>, ZZ(g), ...).
    - `failing`: the trees of order p+1 whose condition fails, with residuals Φ(t) − 1/γ(t).
    - `principal_error_norm`: ‖τ‖₂ over trees of order p+1, τ(t) = (Φ(t) − 1/γ(t))/σ(t).
    - `stage_order`, `embedded_order`: see the docs; `None` when not applicable.
    - `stability`: the `StabilityFunction` R(z) with its intervals and A-/L-stability.
    - `algebraically_stable`: Burrage-Butcher algebraic stability (None for families).
    """

    method: ButcherTableau

    def __init__(self, method: ButcherTableau, max_order: int | None = None) -> None:
        start = time.perf_counter()
        self.method = method
        self.notes: list[str] = []
        claimed = method.order
        cap = max_order if max_order is not None else max(DEFAULT_CAP, (claimed or 0) + 1)
        if max_order is None and claimed is not None:
            cap = claimed + 1
        self._conditions = _Conditions(method)
        order, failing, capped = self._conditions.order(cap)
        if capped and max_order is None and claimed is not None:
            # The claim is too low: keep looking so the report says what the order really is.
            order, failing, capped = self._conditions.order(max(claimed + 3, DEFAULT_CAP))
        self.order = order
        self.order_is_lower_bound = capped
        self.exact = not method.numeric
        self.domain = str(self._conditions.table.domain)
        table = self._conditions.table
        self.failing = [
            (self._conditions.family.bracket(t), table.to_sympy(table.residual(t))) for t in failing
        ]
        self.tolerance = (
            max((self._conditions.tolerance(t) for t in failing), default=None)
            if method.numeric
            else None
        )
        self.principal_error_norm = self._error_norm(failing)
        self.stage_order = _stage_order(method, max(order, 1) + 1) if order > 0 else 0
        self.embedded_order: int | None = None
        if method.b_hat is not None:
            embedded = _Conditions(method, (method.A, method.b_hat))
            self.embedded_order = embedded.order(max(cap, 1))[0]
        self.stability: StabilityFunction = stability_function(method, order)
        self.algebraically_stable = algebraically_stable(method)
        self._explain(capped)
        self.seconds = time.perf_counter() - start

    def _error_norm(self, failing: list[Tree]) -> float | None:
        if self.method.symbols or (not failing and self.order_is_lower_bound):
            return None
        table = self._conditions.table
        total = 0.0
        for tree in self._conditions.family.of_order(self.order + 1):
            res = float(table.to_sympy(table.residual(tree))) / tree.symmetry
            total += res * res
        return math.sqrt(total)

    def _explain(self, capped: bool) -> None:
        m = self.method
        total = sympy.nsimplify(sympy.Add(*m.b))
        if self.order == 0 and not m.symbols and sympy.simplify(total - 1) != 0:
            self.notes.append(
                f"Σb = {total} ≠ 1: inconsistent as an integrator of f (order 0); it is a "
                f"consistent step for the rescaled field {total}·f (step {total}·h)."
            )
        if capped:
            self.notes.append(
                f"every condition up to order {self.order} holds; the search "
                f"stopped there (order ≥ {self.order})."
            )
        if m.numeric:
            self.notes.append(
                "numeric tableau: conditions were evaluated exactly from the digits given and "
                "accepted when |Φ(t) − 1/γ(t)| is within twice the rigorous bound of what "
                f"rounding each entry (up to ±{m.rounding:.3g}) can change Φ(t); the largest "
                f"bound used at order {self.order + 1} was {self.tolerance or 0:.3g}."
            )
        if m.symbols:
            self.notes.append(
                f"parametrised family in {sorted(map(str, m.symbols))}: order {self.order} holds "
                "for every parameter value; " + self._raised_by()
            )
        if _tree_family(m)[1]:
            self.notes.append(
                "c differs from the row sums of A (row_sum_c = false): the order is for "
                "non-autonomous problems, with the time variable as a leaf-only tree colour."
            )
        if m.is_implicit:
            self.notes.append(
                f"{m.kind} method: compiled layers solve the stages by "
                f"{m.iterations or 'a declared number of'} fixed-point iteration(s)."
            )

    def _raised_by(self) -> str:
        equations = [sympy.numer(sympy.together(r)) for _, r in self.failing]
        try:
            solutions = sympy.solve(equations, sorted(self.method.symbols, key=str), dict=True)
        except NotImplementedError:
            solutions = []
        if not solutions:
            return f"no parameter value satisfies the order-{self.order + 1} conditions."
        shown = "; ".join(", ".join(f"{k} = {v}" for k, v in sol.items()) for sol in solutions)
        return f"the order-{self.order + 1} conditions hold at {shown}."

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

    @property
    def claims(self) -> dict[str, tuple[Any, Any]]:
        claims = super().claims
        claims["embedded_order"] = (self.method.embedded_order, self.embedded_order)
        return claims

    def rows(self) -> list[tuple[str, Any]]:
        m = self.method
        order = f"{self.order}" + ("+" if self.order_is_lower_bound else "")
        stab = self.stability
        shown_failing = [f"{tree}: {res}" for tree, res in self.failing[:4]]
        if len(self.failing) > 4:
            shown_failing.append(f"... {len(self.failing) - 4} more")
        return [
            ("order", order),
            ("claimed order", m.order),
            ("exact", self.exact),
            ("kind", f"{m.kind}, {m.stages} stage(s)"),
            ("domain", self.domain),
            (f"failing at order {self.order + 1}", shown_failing),
            ("principal error norm", self.principal_error_norm),
            ("stage order", self.stage_order),
            ("embedded order", self.embedded_order),
            ("stability function R(z)", stab.expression),
            ("real stability interval", stab.real_interval_text),
            ("imaginary stability interval", stab.imaginary_interval_text),
            ("A-stable", stab.a_stable),
            ("L-stable", stab.l_stable),
            ("algebraically stable", self.algebraically_stable),
            ("proved in", f"{self.seconds:.3f} s"),
        ]

    def to_dict(self) -> dict[str, Any]:
        m = self.method
        return {
            "order": self.order,
            "order_is_lower_bound": self.order_is_lower_bound,
            "exact": self.exact,
            "tolerance": self.tolerance,
            "kind": m.kind,
            "stages": m.stages,
            "domain": self.domain,
            "failing_trees": [{"tree": t, "residual": r} for t, r in self.failing],
            "principal_error_norm": self.principal_error_norm,
            "stage_order": self.stage_order,
            "embedded_order": self.embedded_order,
            "stability_function": self.stability.expression,
            "real_stability_interval": self.stability.real_interval,
            "imaginary_stability_interval": self.stability.imaginary_interval,
            "a_stable": self.stability.a_stable,
            "l_stable": self.stability.l_stable,
            "algebraically_stable": self.algebraically_stable,
            "seconds": self.seconds,
        }

    @property
    def stability_function(self) -> sympy.Expr:
        """R(z) as a sympy rational function of the symbol z."""
        return self.stability.expression


def analyse_tableau(tableau: ButcherTableau, *, max_order: int | None = None) -> RungeKuttaReport:
    """Prove the order of a tableau and describe its stability.

    **Arguments:**

    - `tableau`: the method.
    - `max_order`: stop the search there (default: the claimed order + 1, or 10 without a claim).

    **Returns:** a `RungeKuttaReport`.
    """
    return RungeKuttaReport(tableau, max_order)
