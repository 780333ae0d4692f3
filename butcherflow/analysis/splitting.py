"""Order of operator splittings: exact sub-flows in the free algebra, sub-steps by coloured trees.

Ordering convention. The splitting y' = Σ_X f_X(y) with steps (X₁, c₁), ..., (X_n, c_n) advances
X₁ by c₁h first, then X₂ by c₂h, and so on: Ψ_h = φ^{X_n}_{c_n h} ∘ ⋯ ∘ φ^{X₁}_{c₁ h}. With the Lie
derivatives D_X g = g'·f_X, a function g along the flows obeys (Gröbner's lemma reverses the order)

    g(Ψ_h(y)) = (exp(c₁ h D_{X₁}) exp(c₂ h D_{X₂}) ⋯ exp(c_n h D_{X_n}) g)(y),

so the first step's factor stands leftmost, and the word "AB" means D_A D_B (A's flow acts first).
The exact flow is exp(h Σ_X D_X). The splitting has order p when both series agree on every word
of length ≤ p in the free associative algebra over one letter per operator (necessary and
sufficient for arbitrary non-commuting fields). Word reversal fixes exp(h Σ D), so the reversed
(adjoint) composition has the same order.

With a Runge-Kutta sub-step, the composition is an additive Runge-Kutta method over the fields
{f_X} (`additive_tableau`), and its order is proved with coloured trees (`weights.py`).

A numeric declaration (decimal digits) is evaluated exactly from its digits, and a residual is
accepted when it is within twice the rigorous bound P(|c| + ε) − P(|c|) of what rounding every
coefficient by ε can change it: every word coefficient and every elementary weight is a polynomial
P with non-negative coefficients in the coefficients.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from typing import Any, final

import sympy
from sympy.polys.domains import QQ

from ..errors import AnalysisError
from ..methods import ButcherTableau, Splitting
from .report import Report
from .trees import TreeFamily
from .weights import WeightTable, smallest_domain

DEFAULT_CAP = 8  # search limit when the declaration claims no order
Word = tuple[int, ...]  # letters are operator indices
Series = dict[Word, Any]


@final
class FreeProduct:
    """The product exp(c₁hX₁)⋯exp(c_nhX_n) in the free associative algebra, graded, extended on
    demand (grade n of every partial product needs only grades < n, so the search stops at the
    first failing order without computing higher ones).

    **Arguments:**

    - `factors`: `(letter, coefficient)` pairs in order, coefficients elements of `domain`.
    - `domain`: a sympy domain that is a field (QQ, QQ<α>, ...) or contains 1/k!.
    """

    def __init__(self, factors: Sequence[tuple[int, Any]], domain: Any) -> None:
        merged: list[tuple[int, Any]] = []
        for letter, c in factors:
            # exp(aX) exp(bX) = exp((a+b)X): merging adjacent factors shortens the product.
            if merged and merged[-1][0] == letter:
                merged[-1] = (letter, merged[-1][1] + c)
            else:
                merged.append((letter, c))
        self.domain = domain
        self.factors = [(x, c) for x, c in merged if c != domain.zero]
        self._inverse_factorial = [domain.one]
        self._terms = [[domain.one] for _ in self.factors]  # c^j / j!
        # _parts[k][n]: the grade-n part of the product of the first k factors.
        self._parts: list[list[Series]] = [[{(): domain.one}] for _ in range(len(self.factors) + 1)]

    def grade(self, n: int) -> Series:
        """The words of length n with their (non-zero) coefficients."""
        while len(self._parts[0]) <= n:
            self._extend()
        return self._parts[-1][n]

    def exact(self, n: int) -> Any:
        """The coefficient 1/n! of every word of length n in exp(h Σ X)."""
        self.grade(n)
        return self._inverse_factorial[n]

    def _extend(self) -> None:
        domain = self.domain
        n = len(self._parts[0])
        inverse = domain.convert(sympy.Rational(1, n))
        self._inverse_factorial.append(self._inverse_factorial[-1] * inverse)
        self._parts[0].append({})
        for k, (letter, c) in enumerate(self.factors):
            terms = self._terms[k]
            terms.append(terms[-1] * c * inverse)
            previous, part = self._parts[k], {}  # type: list[Series], Series
            for j in range(n + 1):
                suffix, coefficient = (letter,) * j, terms[j]
                for word, x in previous[n - j].items():
                    key = word + suffix
                    part[key] = part.get(key, domain.zero) + x * coefficient
            self._parts[k + 1].append(part)


def additive_tableau(
    steps: Sequence[tuple[str, Any]], A: Sequence[Sequence[Any]], b: Sequence[Any], zero: Any = 0
) -> tuple[dict[str, list[list[Any]]], dict[str, list[Any]]]:
    """The additive Runge-Kutta method that a splitting with Runge-Kutta sub-steps computes.

    Sub-step k advances operator X_k by c_k·h with the tableau (A, b): its stages are rows
    k·s .. k·s+s−1, which use c_k·A within the block and c_m·b in the block of every earlier
    sub-step m (whose result they start from); the weights are c_k·b. A column is coloured by the
    operator its sub-step advances.

    **Arguments:**

    - `steps`: `(operator, coefficient)` pairs in order of application.
    - `A`, `b`: the sub-step's explicit tableau (s stages).
    - `zero`: the zero of the entries' type.

    **Returns:** `(A_by_colour, b_by_colour)`: per operator the (n·s)×(n·s) matrix with the other
    colours' columns zeroed, and the n·s weights likewise.
    """
    s = len(b)
    size = len(steps) * s
    operators = dict.fromkeys(op for op, _ in steps)
    big_A = {op: [[zero] * size for _ in range(size)] for op in operators}
    big_b = {op: [zero] * size for op in operators}
    for k, (op, c) in enumerate(steps):
        for i in range(s):
            row = k * s + i
            for m, (earlier, c_m) in enumerate(steps[:k]):
                for j in range(s):
                    big_A[earlier][row][m * s + j] = c_m * b[j]
            for j in range(s):
                big_A[op][row][k * s + j] = c * A[i][j]
        for j in range(s):
            big_b[op][k * s + j] = c * b[j]
    return big_A, big_b


def _majorant(value: sympy.Expr, eps: float) -> tuple[sympy.Rational, sympy.Rational]:
    """(|value|, |value| + ε) as rationals, for the rounding bound."""
    low = sympy.Rational(abs(float(value)))
    return low, low + sympy.Rational(repr(eps))


@final
class SplittingReport(Report):
    """What was proved about a splitting.

    **Arguments:**

    - `method`: the `Splitting`.
    - `max_order`: where the searches stop (default: the claimed order + 1, or 8 without a claim).

    Attributes: `order` (exact sub-flows, free algebra), `effective_order` (the declared sub-step,
    coloured trees; equals `order` for exact sub-flows), `coefficient_sums` (per operator),
    `failing_words` ((word, residual) at `order` + 1), `failing_trees` ((tree, residual) at
    `effective_order` + 1), `order_is_lower_bound` / `effective_order_is_lower_bound` (the search
    stopped at its cap), `exact`, `domain`, `notes`.
    """

    method: Splitting

    def __init__(self, method: Splitting, max_order: int | None = None) -> None:
        start = time.perf_counter()
        self.method = method
        self.notes: list[str] = []
        self.exact = not method.numeric and not (method.substep and method.substep.numeric)
        self.symbolic = any(c.free_symbols for _, c in method.steps)
        ops = method.operators
        self._letter = {op: i for i, op in enumerate(ops)}
        self._single = all(len(op) == 1 for op in ops)
        domain, values = smallest_domain([c for _, c in method.steps])
        self.domain = str(domain)
        self._product = FreeProduct(
            [(self._letter[op], v) for (op, _), v in zip(method.steps, values, strict=True)], domain
        )
        sums = dict.fromkeys(ops, domain.zero)
        for (op, _), v in zip(method.steps, values, strict=True):
            sums[op] += v
        self.coefficient_sums: dict[str, sympy.Expr] = {
            op: domain.to_sympy(x) for op, x in sums.items()
        }
        self.tolerance: float | None = None  # the largest rounding bound used (numeric only)
        self._bounds: list[FreeProduct] = []
        if method.numeric and not self.symbolic:
            pairs = [(self._letter[op], _majorant(c, method.rounding)) for op, c in method.steps]
            self._bounds = [
                FreeProduct([(x, QQ.from_sympy(c[side])) for x, c in pairs], QQ) for side in (0, 1)
            ]

        claims = [c for c in (method.order, method.effective_order) if c is not None]
        cap = max_order if max_order is not None else (max(claims) + 1 if claims else DEFAULT_CAP)
        order, failing, capped = self._free_order(cap)
        if capped and max_order is None and claims:
            # The claim is too low: keep looking so the report says what the order really is.
            order, failing, capped = self._free_order(max(cap + 2, DEFAULT_CAP))
        self.order: int = order
        self.order_is_lower_bound = capped
        self.failing_words = [(self.word(w), domain.to_sympy(r)) for w, r in failing]

        self.effective_order: int = order
        self.effective_order_is_lower_bound = capped
        self.failing_trees: list[tuple[str, sympy.Expr]] = []
        if method.substep is not None:
            # A consistent sub-step never beats the exact flows (its errors are single-colour
            # trees, the splitting's are mixed), so searching past order + 1 would only cost time.
            found = order if capped else order + 1
            eff_cap = max_order if max_order is not None else max([found, *(c + 1 for c in claims)])
            self._trees(method.substep, eff_cap)
        self._explain()
        self.seconds = time.perf_counter() - start

    # -- free algebra ----------------------------------------------------------------------------
    def word(self, word: Word) -> str:
        """A word as text: letters juxtaposed ("ABB"), or joined by "·" for longer names."""
        names = [self.method.operators[i] for i in word]
        return ("" if self._single else "·").join(names)

    def _residuals(self, n: int) -> list[tuple[Word, Any, bool]]:
        """(word, residual, holds) for every word of length n, in lexicographic order."""
        product, domain = self._product, self._product.domain
        part, exact = product.grade(n), product.exact(n)
        out = []
        for word in itertools.product(range(len(self.method.operators)), repeat=n):
            res = part.get(word, domain.zero) - exact
            holds = res == domain.zero
            if not holds and self._bounds:
                majorants = [b.grade(n).get(word, QQ.zero) for b in self._bounds]
                holds = self._within(domain.to_sympy(res), *majorants)
            out.append((word, res, holds))
        return out

    def _within(self, residual: sympy.Expr, low: Any, high: Any) -> bool:
        """|residual| ≤ 2 (P(|c| + ε) − P(|c|)), with low = P(|c|) and high = P(|c| + ε)."""
        bound = 2 * float(high - low)
        if abs(float(residual)) > bound:
            return False
        self.tolerance = max(self.tolerance or 0.0, bound)
        return True

    def _free_order(self, cap: int) -> tuple[int, list[tuple[Word, Any]], bool]:
        for n in range(1, cap + 1):
            failing = [(w, r) for w, r, holds in self._residuals(n) if not holds]
            if failing:
                return n - 1, failing, False
        return cap, [], True

    def conditions(self, order: int) -> list[sympy.Expr]:
        """The word conditions up to `order` that do not hold identically, as residuals
        (product coefficient − 1/|w|!), words by length then lexicographically (polynomials in
        the symbols of a parametrised splitting)."""
        domain = self._product.domain
        return [
            sympy.factor(domain.to_sympy(res))
            for n in range(1, order + 1)
            for _, res, _ in self._residuals(n)
            if res != domain.zero
        ]

    # -- coloured trees --------------------------------------------------------------------------
    def _trees(self, substep: ButcherTableau, cap: int) -> None:
        method = self.method
        family = TreeFamily(colours=method.operators)
        big_A, big_b = additive_tableau(method.steps, substep.A, substep.b, sympy.Integer(0))
        table = WeightTable(family, big_A, big_b)
        bounds = []
        if not self.exact and not self.symbolic and not substep.symbols:
            bounds = self._rounding_tables(family, substep)
        for n in range(1, cap + 1):
            failing = []
            for tree in family.of_order(n):
                res = table.residual(tree)
                if res == table.domain.zero:
                    continue
                majorants = [t.weight(tree) for t in bounds]
                if bounds and self._within(table.to_sympy(res), *majorants):
                    continue
                failing.append((family.bracket(tree), table.to_sympy(res)))
            if failing:
                self.effective_order, self.failing_trees = n - 1, failing
                self.effective_order_is_lower_bound = False
                return
        self.effective_order, self.effective_order_is_lower_bound = cap, True

    def _rounding_tables(self, family: TreeFamily, sub: ButcherTableau) -> list[WeightTable]:
        """Weight tables of the majorants, |entries| and |entries| + ε, in exact rationals."""
        rounding = {key: x.rounding for key, x in sub.entries.items()}
        steps = [(op, _majorant(c, self.method.rounding)) for op, c in self.method.steps]
        A = [
            [_majorant(x, rounding[f"A[{i}][{j}]"]) for j, x in enumerate(r)]
            for i, r in enumerate(sub.A)
        ]
        b = [_majorant(x, rounding[f"b[{i}]"]) for i, x in enumerate(sub.b)]
        tables = []
        for side in (0, 1):
            pick = [(op, c[side]) for op, c in steps]
            big = additive_tableau(pick, [[x[side] for x in r] for r in A], [x[side] for x in b])
            tables.append(WeightTable(family, *big))
        return tables

    # -- the report ------------------------------------------------------------------------------
    def _explain(self) -> None:
        m = self.method
        off = {op: s for op, s in self.coefficient_sums.items() if sympy.simplify(s - 1) != 0}
        if off and self.order == 0 and not self.symbolic:
            shown = ", ".join(f"Σ{op} = {s}" for op, s in off.items())
            self.notes.append(
                f"coefficient sums are not 1 ({shown}): the splitting is inconsistent (order 0)."
            )
        if self.symbolic:
            self.notes.append(
                f"parametrised splitting: order {self.order} holds for every parameter value; "
                + self._raised_by()
            )
        if self.order_is_lower_bound:
            self.notes.append(
                f"every word condition up to order {self.order} holds; the search stopped there "
                f"(order ≥ {self.order})."
            )
        if m.substep is not None and self.effective_order_is_lower_bound:
            self.notes.append(
                f"with {m.substep_name} sub-steps every coloured-tree condition up to order "
                f"{self.effective_order} holds; the search stopped there."
            )
        elif m.substep is not None and self.effective_order < self.order:
            self.notes.append(
                f"{m.substep_name} sub-steps lower the order from {self.order} (exact sub-flows) "
                f"to {self.effective_order}: that is the order of the compiled layer."
            )
        if not self.exact and not self.symbolic:
            sub = f", sub-step ±{m.substep.rounding:.3g}" if m.substep else ""
            self.notes.append(
                "numeric declaration: conditions were evaluated exactly from the digits given "
                "and accepted when the residual is within twice the rigorous bound of what "
                f"rounding every coefficient (steps ±{m.rounding:.3g}{sub}) can "
                f"cause; the largest bound used was {self.tolerance or 0:.3g}."
            )

    def _raised_by(self) -> str:
        equations = [sympy.numer(sympy.together(r)) for _, r in self.failing_words]
        symbols = sorted(set().union(*(c.free_symbols for _, c in self.method.steps)), key=str)
        try:
            solutions = sympy.solve(equations, symbols, dict=True)
        except NotImplementedError:
            solutions = []
        if not solutions:
            return f"no parameter value satisfies the order-{self.order + 1} conditions."
        shown = "; ".join(", ".join(f"{k} = {v}" for k, v in sol.items()) for sol in solutions)
        return f"the order-{self.order + 1} conditions hold at {shown}."

    def _show(self, value: sympy.Expr) -> str:
        """Exact values as they are; a numeric declaration's long rationals as floats."""
        return str(value) if self.exact or value.free_symbols else f"{float(value):.6g}"

    @property
    def claims(self) -> dict[str, tuple[Any, Any]]:
        claims = super().claims
        if self.method.effective_order is not None:
            claims["effective_order"] = (self.method.effective_order, self.effective_order)
        return claims

    def rows(self) -> list[tuple[str, Any]]:
        def shorten(items: list[tuple[str, sympy.Expr]], shown: int = 4) -> list[str]:
            more = [f"... {len(items) - shown} more"] if len(items) > shown else []
            return [f"{name}: {self._show(res)}" for name, res in items[:shown]] + more

        m = self.method
        steps = " → ".join(f"{op} {self._show(c)}" for op, c in m.steps)
        sums = ", ".join(f"{op}: {self._show(s)}" for op, s in self.coefficient_sums.items())
        order = f"{self.order}" + ("+" if self.order_is_lower_bound else "")
        effective = f"{self.effective_order}" + ("+" if self.effective_order_is_lower_bound else "")
        rows: list[tuple[str, Any]] = [
            ("order (exact sub-flows)", order),
            ("claimed order", m.order),
            (f"effective order ({m.substep_name})", effective),
            ("claimed effective order", m.effective_order),
            ("exact", self.exact),
            ("operators", ", ".join(m.operators)),
            ("steps", steps),
            ("coefficient sums", sums),
            ("domain", self.domain),
            (f"failing words at order {self.order + 1}", shorten(self.failing_words)),
        ]
        if m.substep is not None:
            label = f"failing trees at order {self.effective_order + 1}"
            rows.append((label, shorten(self.failing_trees)))
        rows.append(("proved in", f"{self.seconds:.3f} s"))
        return rows

    def to_dict(self) -> dict[str, Any]:
        m = self.method
        return {
            "order": self.order,
            "order_is_lower_bound": self.order_is_lower_bound,
            "effective_order": self.effective_order,
            "effective_order_is_lower_bound": self.effective_order_is_lower_bound,
            "substep": m.substep_name,
            "exact": self.exact,
            "tolerance": self.tolerance,
            "operators": list(m.operators),
            "steps": [[op, c] for op, c in m.steps],
            "coefficient_sums": self.coefficient_sums,
            "domain": self.domain,
            "failing_words": [{"word": w, "residual": r} for w, r in self.failing_words],
            "failing_trees": [{"tree": t, "residual": r} for t, r in self.failing_trees],
            "seconds": self.seconds,
        }


def analyse_splitting(method: Splitting, *, max_order: int | None = None) -> SplittingReport:
    """Prove the order of a splitting with exact sub-flows and with its declared sub-step.

    **Arguments:**

    - `method`: the `Splitting`.
    - `max_order`: stop the searches there (default: the largest claim + 1, or 8 without one).

    **Returns:** a `SplittingReport`.
    """
    if not isinstance(method, Splitting):
        raise AnalysisError(f"analyse_splitting needs a Splitting, got {type(method).__name__}")
    if max_order is not None and (not isinstance(max_order, int) or max_order < 1):
        raise AnalysisError(f"max_order must be a positive integer, got {max_order!r}")
    return SplittingReport(method, max_order)
