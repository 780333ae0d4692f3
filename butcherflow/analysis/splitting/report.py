"""Order of operator splittings: exact sub-flows in the free algebra, sub-steps by coloured trees.

The splitting's word conditions are read from the free associative algebra (`free_algebra`,
which states the ordering convention); with a Runge-Kutta sub-step, the composition is an
additive Runge-Kutta method over the fields {f_X} (`additive_tableau`), and its order is proved
with coloured trees (`additive`). This module assembles both into a `SplittingReport`.

A numeric declaration (floats, decimals) is judged like every other
(`methods/entries/precision.py`): each word coefficient and elementary weight is enclosed in ball
arithmetic holding every splitting within the precision of the coefficients, and each condition is
met, fails or is undetermined.

"Order with the sub-step" is the order of the composition when each sub-flow is advanced by the
declared Runge-Kutta step (what a compiled layer computes). It is not Butcher's *effective*
order (the order up to a change of variables, a processing map), which this module does not
compute.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence
from fractions import Fraction
from typing import Any, final

import flint
import sympy

from ...errors import AnalysisError
from ...methods import ButcherTableau, Splitting
from ...methods.entries.precision import Judgement, digits_hint, judge_enclosure, working_precision
from ..bseries.splitting_geometry import splitting_symmetric, splitting_symplectic
from ..budget import DEFAULT_TIME_BUDGET, Deadline
from ..enclosure.weights import BallDomain
from ..exact.free_algebra import FreeProduct, Word
from ..exact.number_field import to_sympy
from ..exact.trees import TreeFamily
from ..exact.weights import judge_element, smallest_domain
from ..report import Report, precision_text, raised_by, resolution_text, shown_open
from ..search import search_order
from .substeps import additive_tableau, search_substep_order

DEFAULT_CAP = 8  # search limit when the declaration claims no order (compositions have no barrier)


@final
class SplittingReport(Report):
    """What was proved about a splitting.

    **Arguments:**

    - `method`: the `Splitting`.
    - `max_order`: where the searches stop (default: the claimed order + 1, or 8 without a claim).

    Attributes: `order` (exact sub-flows, free algebra), `substep_order` (the declared sub-step,
    coloured trees; equals `order` for exact sub-flows), `coefficient_sums` (per operator),
    `failing_words` ((word, residual) at `order` + 1), `failing_trees` ((tree, residual) at
    `substep_order` + 1), `order_is_lower_bound` / `substep_order_is_lower_bound` (the search
    stopped at its cap), `exact`, `domain`, `notes`.
    """

    method: Splitting

    def __init__(
        self,
        method: Splitting,
        max_order: int | None = None,
        time_budget: float = DEFAULT_TIME_BUDGET,
    ) -> None:
        start = time.perf_counter()
        deadline = Deadline.after(time_budget)
        self._deadline = deadline
        self.method = method
        self.notes: list[str] = []
        sub = method.substep
        self._exact = not method.numeric and not (sub and sub.numeric)
        self.zero_stable = True  # a one-step method
        self.symbolic = any(c.free_symbols for _, c in method.steps)
        ops = method.operators
        self._letter = {op: i for i, op in enumerate(ops)}
        self._single = all(len(op) == 1 for op in ops)
        domain, values = smallest_domain([c for _, c in method.steps])
        self.domain = str(domain) if self.exact else "numeric (ball arithmetic)"
        letters = [self._letter[op] for op, _ in method.steps]
        self._product = FreeProduct(list(zip(letters, values, strict=True)), domain)
        sums = dict.fromkeys(ops, domain.zero)
        for (op, _), v in zip(method.steps, values, strict=True):
            sums[op] += v
        self.coefficient_sums: dict[str, sympy.Expr] = {
            op: to_sympy(domain, x) for op, x in sums.items()
        }
        self._numbers = [*method.numbers.flat, *(sub.numbers.flat if sub else [])]
        self._prec = working_precision(self._numbers)
        self._balls: FreeProduct | None = None
        self._sizes: FreeProduct | None = None
        if not self.exact and not self.symbolic:
            with flint.ctx.workprec(self._prec):
                factors = method.numbers.steps.balls()
                self._balls = FreeProduct(list(zip(letters, factors, strict=True)), BallDomain())
                # the size of each word's terms: its coefficient in Π exp(|c_i| X_i)
                sizes = [(x, abs(c)) for x, c in self._balls.factors]
                self._sizes = FreeProduct(sizes, BallDomain())

        claims = [c for c in (method.order, method.substep_order) if c is not None]
        limit = max_order if max_order is not None else max([DEFAULT_CAP, *(c + 1 for c in claims)])
        found = search_order(
            self._judged_words, limit=limit, deadline=deadline, capped=max_order is not None
        )
        self.order: int = found.order
        self.order_upper = found.upper
        self.order_is_lower_bound = found.is_lower_bound
        self.failing_words = [(self.word(w), j.residual) for w, j in found.failing]
        self.undetermined_words = [
            (self.word(w), j.residual, j.bound) for w, j in found.undetermined
        ]
        self.tolerance: float | None = (
            None
            if self.exact
            else max((j.bound for _, j in found.failing + found.undetermined), default=0.0)
        )
        self.stopped = found.stopped
        self._failing_judgements = [j for _, j in found.failing]

        self._substep_order = self.order
        self.substep_order_is_lower_bound = self.order_is_lower_bound
        self.substep_stopped = self.stopped
        self.failing_trees: list[tuple[str, Any]] = []
        self.undetermined_trees: list[tuple[str, Any, float]] = []
        if sub is not None:
            # A consistent sub-step never beats the exact flows (its errors are single-colour
            # trees, the splitting's are mixed), so searching past order + 1 would only cost time.
            reach = self.order if found.upper is None else self.order + 1
            sub_limit = (
                max_order if max_order is not None else max([reach, *(c + 1 for c in claims)])
            )
            self._trees(sub, sub_limit, deadline, max_order is not None)
        self._explain()
        self.seconds = time.perf_counter() - start

    # -- free algebra ----------------------------------------------------------------------------
    def word(self, word: Word) -> str:
        """A word as text: letters juxtaposed ("ABB"), or joined by "·" for longer names."""
        names = [self.method.operators[i] for i in word]
        return ("" if self._single else "·").join(names)

    def _exact_residuals(self, n: int) -> list[tuple[Word, Any]]:
        """(word, exact residual) for every word of length n, in lexicographic order."""
        product, domain = self._product, self._product.domain
        part, exact = product.grade(n), product.exact(n)
        words = itertools.product(range(len(self.method.operators)), repeat=n)
        return [(w, part.get(w, domain.zero) - exact) for w in words]

    def _judged_words(self, n: int) -> list[tuple[Word, Judgement]]:
        domain = self._product.domain
        exact = self._exact_residuals(n)
        if self._balls is None:
            return [(w, judge_element(domain, r)) for w, r in exact]
        assert self._sizes is not None
        with flint.ctx.workprec(self._prec):
            part, target = self._balls.grade(n), self._balls.exact(n)
            sizes, least = self._sizes.grade(n), Fraction(1, math.factorial(n))

            def scale(w: Word) -> Fraction:
                """The size of the word's terms (at least 1/n!), where the resolution applies:
                doubles of a composition with large coefficients (Yoshida's eighth order)
                cancel terms ~1e4 times 1/n!, and only their size says what 2⁻⁴⁴ of each moves."""
                size = sizes.get(w)
                return least if size is None else max(least, Fraction(float(size.mid())))

            return [
                (
                    w,
                    judge_enclosure(
                        part.get(w, flint.arb(0)) - target, scale(w), bool(r == domain.zero)
                    ),
                )
                for w, r in exact
            ]

    def conditions(self, order: int) -> list[sympy.Expr]:
        """The word conditions up to `order` that do not hold identically, as residuals
        (product coefficient − 1/|w|!), words by length then lexicographically (polynomials in
        the symbols of a parametrised splitting)."""
        domain = self._product.domain
        return [
            sympy.factor(to_sympy(domain, res))
            for n in range(1, order + 1)
            for _, res in self._exact_residuals(n)
            if res != domain.zero
        ]

    # -- coloured trees --------------------------------------------------------------------------
    def _trees(self, substep: ButcherTableau, limit: int, deadline: Deadline, capped: bool) -> None:
        family = TreeFamily(colours=self.method.operators)
        numeric = not self.exact and not self.symbolic and not substep.symbols
        found = search_substep_order(
            self.method,
            substep,
            family,
            limit=limit,
            deadline=deadline,
            capped=capped,
            prec=self._prec if numeric else None,
        )
        self._substep_order = found.order
        self.substep_order_is_lower_bound = found.is_lower_bound
        self.substep_stopped = found.stopped
        self.failing_trees = [(family.bracket(t), j.residual) for t, j in found.failing]
        self._failing_judgements += [j for _, j in found.failing]
        self.undetermined_trees = [
            (family.bracket(t), j.residual, j.bound) for t, j in found.undetermined
        ]
        if self.tolerance is not None:
            bounds = [j.bound for _, j in found.failing + found.undetermined]
            self.tolerance = max([self.tolerance, *bounds])

    # -- the report ------------------------------------------------------------------------------
    def _explain(self) -> None:
        m = self.method
        off = {op: s for op, s in self.coefficient_sums.items() if sympy.simplify(s - 1) != 0}
        if off and self.order == 0 and not self.symbolic and self.failing_words:
            shown = ", ".join(f"Σ{op} = {s}" for op, s in off.items())
            self.notes.append(
                f"coefficient sums are not 1 ({shown}): the splitting is inconsistent (order 0)."
            )
        if self.symbolic:
            self.notes.append(
                f"parametrised splitting: order {self.order} holds for every parameter value; "
                + self._raised_by()
            )
        # Undetermined conditions end a search too: their note below says why, not this one.
        if self.order_is_lower_bound and not self.undetermined_words:
            self.notes.append(
                f"every word condition up to order {self.order} holds; the search stopped there "
                f"(order ≥ {self.order})."
            )
        if (
            m.substep is not None
            and self.substep_order_is_lower_bound
            and not self.undetermined_trees
        ):
            self.notes.append(
                f"with {m.substep_name} sub-steps every coloured-tree condition up to order "
                f"{self.substep_order} holds; the search stopped there."
            )
        elif m.substep is not None and self.substep_order < self.order:
            self.notes.append(
                f"{m.substep_name} sub-steps lower the order from {self.order} (exact sub-flows) "
                f"to {self.substep_order}: that is the order of the compiled layer."
            )
        if not self.exact and not self.symbolic:
            self.notes.append(
                "numeric declaration: every word coefficient and elementary weight was enclosed "
                "in ball arithmetic holding every splitting within the precision of the "
                f"coefficients ({self._precision_text()}); a "
                "condition is met when its enclosure holds 0 and is narrow, fails when it "
                "excludes 0, and is undetermined otherwise "
                f"(largest bound used {self.tolerance or 0:.3g})."
            )
        hint = digits_hint(self._failing_judgements)
        if hint and not self.exact:
            self.notes.append(hint)
        if self.undetermined_words or self.undetermined_trees:
            self.notes.append(
                f"{len(self.undetermined_words) + len(self.undetermined_trees)} condition(s) "
                "are undetermined at the precision of the coefficients: the orders shown are "
                "what was established; give more digits or exact values to decide the rest."
            )

    def _precision_text(self) -> str:
        """The splitting's precision, and its sub-step's where that tableau is numeric too."""
        m, sub = self.method, self.method.substep
        text = precision_text(m.precision, m.rounding) if m.numeric else "exact"
        if sub is not None and sub.numeric:
            text += f"; the {sub.name} sub-step's {precision_text(sub.precision, sub.rounding)}"
        return text

    def _raised_by(self) -> str:
        symbols = set().union(*(c.free_symbols for _, c in self.method.steps))
        return raised_by([r for _, r in self.failing_words], list(symbols), self.order)

    def _show(self, value: sympy.Expr) -> str:
        """Exact values as they are; a numeric declaration's long rationals as floats."""
        value = sympy.sympify(value)
        return str(value) if self.exact or value.free_symbols else f"{float(value):.6g}"

    def _show_sum(self, value: sympy.Expr) -> str:
        """A coefficient sum: as `_show`, but one that is not 1 never prints as 1 (consistency
        is read from it)."""
        text = self._show(value)
        if text != "1" or sympy.sympify(value) == 1:
            return text
        return str(sympy.N(value, 20)).rstrip("0")

    @property
    def claims(self) -> dict[str, tuple[Any, Any]]:
        claims = super().claims
        if self.method.substep_order is not None:
            claims["substep_order"] = (self.method.substep_order, self.substep_order)
        return claims

    def search_end(self, key: str) -> tuple[int, str | None]:
        """The word search behind "order", the coloured-tree search behind "substep_order"."""
        if key == "order":
            return len(self.undetermined_words), self.stopped
        if key == "substep_order":
            return len(self.undetermined_trees), self.substep_stopped
        return super().search_end(key)

    @property
    def exact(self) -> bool:
        return self._exact

    @property
    def substep_order(self) -> int:
        return self._substep_order

    @property
    def failing(self) -> Sequence[tuple[str, Any]]:
        """The sub-steps' failing coloured trees, else the exact flows' failing words."""
        return self.failing_trees or self.failing_words

    @property
    def failing_what(self) -> str:
        if self.failing_trees:
            return f"coloured trees at order {self.substep_order + 1}"
        return f"words at order {self.order + 1}"

    @property
    def block_order_text(self) -> str:
        """The layer computes the sub-steps: their order, beside the exact flows' order."""
        if self.method.substep is None:
            return str(self.order)
        return (
            f"{self.substep_order} with {self.method.substep_name} sub-steps "
            f"({self.order} with exact sub-flows)"
        )

    def geometry_rows(self) -> list[tuple[str, Any]]:
        rows = []
        for label, (value, why) in (
            ("symplectic", splitting_symplectic(self.method, deadline=self._deadline)),
            ("symmetric", splitting_symmetric(self.method)),
        ):
            shown = "undetermined" if value is None else "yes" if value else "no"
            rows.append((label, f"{shown} ({why})"))
        return rows

    def rows(self) -> list[tuple[str, Any]]:
        def shorten(items: list[tuple[str, sympy.Expr]], shown: int = 4) -> list[str]:
            more = [f"... {len(items) - shown} more"] if len(items) > shown else []
            return [f"{name}: {self._show(res)}" for name, res in items[:shown]] + more

        m = self.method
        steps = " → ".join(f"{op} {self._show(c)}" for op, c in m.steps)
        sums = ", ".join(f"{op}: {self._show_sum(s)}" for op, s in self.coefficient_sums.items())
        order = f"{self.order}" + ("+" if self.order_is_lower_bound else "")
        effective = f"{self.substep_order}" + ("+" if self.substep_order_is_lower_bound else "")
        rows: list[tuple[str, Any]] = [
            ("order (exact sub-flows)", order),
            ("claimed order", m.order),
            (f"order with the sub-step ({m.substep_name})", effective),
            ("claimed order with the sub-step", m.substep_order),
            ("exact", self.exact),
            ("operators", ", ".join(m.operators)),
            ("steps", steps),
            ("coefficient sums", sums),
            ("domain", self.domain),
        ]
        if not self.exact and not self.symbolic:
            tolerance = resolution_text(self.tolerance, "(size of its terms, at least 1/|w|!)")
            rows.append(("tolerance", f"{self._precision_text()}; {tolerance}"))
        rows.append((f"failing words at order {self.order + 1}", shorten(self.failing_words)))
        if self.undetermined_words:
            label = f"undetermined words at order {self.order + 1}"
            rows.append((label, shown_open(self.undetermined_words)))
        if m.substep is not None:
            label = f"failing trees at order {self.substep_order + 1}"
            rows.append((label, shorten(self.failing_trees)))
            if self.undetermined_trees:
                label = f"undetermined trees at order {self.substep_order + 1}"
                rows.append((label, shown_open(self.undetermined_trees)))
        rows.append(("proved in", f"{self.seconds:.3f} s"))
        return rows

    def to_dict(self) -> dict[str, Any]:
        m = self.method
        return {
            "order": self.order,
            "order_is_lower_bound": self.order_is_lower_bound,
            "substep_order": self.substep_order,
            "substep_order_is_lower_bound": self.substep_order_is_lower_bound,
            "substep": m.substep_name,
            "exact": self.exact,
            "tolerance": self.tolerance,
            "precision": None if m.precision is None else float(m.precision),
            "operators": list(m.operators),
            "steps": [[op, c] for op, c in m.steps],
            "coefficient_sums": self.coefficient_sums,
            "domain": self.domain,
            "failing_words": [{"word": w, "residual": r} for w, r in self.failing_words],
            "failing_trees": [{"tree": t, "residual": r} for t, r in self.failing_trees],
            "undetermined_words": [
                {"word": w, "residual": r, "bound": b} for w, r, b in self.undetermined_words
            ],
            "undetermined_trees": [
                {"tree": t, "residual": r, "bound": b} for t, r, b in self.undetermined_trees
            ],
            "seconds": self.seconds,
        }


def analyse_splitting(
    method: Splitting,
    *,
    max_order: int | None = None,
    time_budget: float = DEFAULT_TIME_BUDGET,
) -> SplittingReport:
    """Prove the order of a splitting with exact sub-flows and with its declared sub-step.

    **Arguments:**

    - `method`: the `Splitting`.
    - `max_order`: stop the searches there (default: the largest claim + 1, or 8 without one).

    **Returns:** a `SplittingReport`.
    """
    if max_order is not None and (not isinstance(max_order, int) or max_order < 1):
        raise AnalysisError(f"max_order must be a positive integer, got {max_order!r}")
    return SplittingReport(method, max_order, time_budget)


__all__ = ["SplittingReport", "additive_tableau", "analyse_splitting"]
