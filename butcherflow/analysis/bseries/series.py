"""B-series as exact mappings tree → coefficient, and the B-series of each family's step.

A B-series a stands for the formal step y ↦ a(∅)·y + Σ_t h^|t| a(t)/σ(t) F(t)(y), F(t) the
elementary differential of the rooted tree t (Hairer, Lubich and Wanner, Geometric Numerical
Integration, III.1). With this normalisation a Runge-Kutta method has a(t) = Φ(t), its
elementary weight, and the exact flow has e(t) = 1/γ(t). Coefficients live in one exact sympy
domain (QQ, an algebraic field such as QQ<√15> for Gauss-Legendre, a rational function field
for families), the domain the order proof already uses (`weights.WeightTable`).

For y' = Σ_X f_X(y), the fields of an additive method or the operators of a splitting, the trees
are coloured by field (`trees.coloured`) and F(t) is built from the f_X: F([τ_B]_A) = f_A′f_B
(Araújo, Murua and Sanz-Serna, SIAM J. Numer. Anal. 34, 1997). `families.BSERIES` says which
series each family has.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, final

import flint
import sympy
from sympy.polys.domains import QQ

from ...errors import AnalysisError
from ...methods import AdditiveRungeKutta, ButcherTableau, GeneralLinear, Method
from ...methods.entries.balls import ball
from ...methods.entries.precision import working_precision
from ..budget import DEFAULT_TIME_BUDGET, Deadline
from ..exact.number_field import NumberField
from ..exact.trees import PLAIN, Tree, TreeFamily, coloured
from ..exact.weights import WeightTable, entries_in_field
from ..general_linear.series import StageSeries
from ..runge_kutta.order import Conditions


@final
class BSeries:
    """A B-series truncated after trees of `order` nodes, exactly.

    **Arguments:**

    - `family`: the trees (`PLAIN`, or coloured trees for additive methods).
    - `order`: the largest tree order held.
    - `domain`: the exact sympy domain of the coefficients.
    - `empty`: a(∅), a domain element (1 for a step of a method, 0 for a vector field).
    - `values`: tree index → coefficient (a domain element) for every tree up to `order`.
    - `name`: what the series is of (shown in `str`).

    `series[tree]` is a(t) as a sympy number; `series[None]` is a(∅); iterating gives the trees.
    """

    __slots__ = ("domain", "empty", "family", "name", "order", "values")

    def __init__(
        self,
        family: TreeFamily,
        order: int,
        domain: Any,
        empty: Any,
        values: Mapping[int, Any],
        name: str = "",
    ) -> None:
        if order < 0:
            raise AnalysisError(f"B-series order must be ≥ 0 (got {order})")
        missing = [t.index for t in family.up_to(order) if t.index not in values]
        if missing:
            raise AnalysisError(f"B-series {name!r}: no coefficient for tree(s) {missing[:5]}")
        self.family = family
        self.order = order
        self.domain = domain
        self.empty = empty
        self.values = dict(values)
        self.name = name

    def coefficient(self, tree: Tree | None) -> Any:
        """a(t) as a domain element (None: the empty tree); 0 beyond the truncation order is an
        error, not a value."""
        if tree is None:
            return self.empty
        if tree.order > self.order:
            raise AnalysisError(
                f"B-series {self.name!r} is truncated at order {self.order}; tree "
                f"{self.family.bracket(tree)} has {tree.order} nodes"
            )
        return self.values[tree.index]

    def __getitem__(self, tree: Tree | None) -> sympy.Expr:
        return self.domain.to_sympy(self.coefficient(tree))

    def __iter__(self) -> Iterator[Tree]:
        return iter(self.family.up_to(self.order))

    def __len__(self) -> int:
        return sum(len(self.family.of_order(k)) for k in range(1, self.order + 1))

    def items(self) -> Iterator[tuple[Tree, sympy.Expr]]:
        for tree in self:
            yield tree, self[tree]

    def trees(self, order: int) -> list[Tree]:
        """The trees of exactly `order` nodes (≤ the truncation order)."""
        return self.family.of_order(order)

    def truncated(self, order: int) -> BSeries:
        """The same series cut after trees of `order` nodes."""
        if order > self.order:
            raise AnalysisError(
                f"B-series {self.name!r} holds trees up to order {self.order}, not {order}"
            )
        keep = {t.index: self.values[t.index] for t in self.family.up_to(order)}
        return BSeries(self.family, order, self.domain, self.empty, keep, self.name)

    def over(self, domain: Any) -> BSeries:
        """The same series with its coefficients converted into `domain` (one that holds them)."""
        if self.domain == domain:
            return self
        values = {k: domain.convert_from(v, self.domain) for k, v in self.values.items()}
        empty = domain.convert_from(self.empty, self.domain)
        return BSeries(self.family, self.order, domain, empty, values, self.name)

    def map(self, fn: Callable[[Tree, Any], Any], empty: Any, name: str = "") -> BSeries:
        """A new series with coefficients `fn(tree, a(tree))` (domain elements)."""
        values = {t.index: fn(t, self.values[t.index]) for t in self}
        return BSeries(self.family, self.order, self.domain, empty, values, name or self.name)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BSeries) or other.family is not self.family:
            return NotImplemented
        if other.order != self.order:
            return False
        a, b = unify(self, other)
        return bool(a.empty == b.empty) and all(a.values[t.index] == b.values[t.index] for t in a)

    __hash__ = None  # type: ignore[assignment]

    def __str__(self) -> str:
        head = f"B-series of {self.name} to order {self.order} (over {self.domain})"
        lines = [head, f"  ∅: {self[None]}"]
        lines += [f"  {self.family.bracket(t)}: {value}" for t, value in self.items()]
        return "\n".join(lines)

    __repr__ = __str__


@final
class BallField:
    """arb balls standing in for an exact domain, for a numeric splitting: every coefficient
    is a ball holding its value for every splitting within the precision of its digits."""

    is_AlgebraicField = False

    def __init__(self, prec: int) -> None:
        self.prec = prec
        self.zero = flint.arb(0)
        self.one = flint.arb(1)

    def __call__(self, n: int) -> flint.arb:
        return flint.arb(n)

    def quo(self, a: flint.arb, b: flint.arb) -> flint.arb:
        return a / b

    def to_sympy(self, x: flint.arb) -> sympy.Expr:
        return sympy.Float(float(x.mid()))

    def convert_from(self, x: Any, domain: Any) -> flint.arb:
        return x if isinstance(x, flint.arb) else ball(domain.to_sympy(x))

    def unify(self, other: Any) -> BallField:
        return self

    def __str__(self) -> str:
        return f"arb balls ({self.prec} bits)"


@final
class Arithmetic:
    """The arithmetic group operations run in: for an algebraic field, flint polynomials in θ
    reduced modulo its minimal polynomial (`number_field.NumberField`, in C: sympy's own
    elements multiply in Python, twenty times slower); otherwise the domain's elements (QQ's
    are flint rationals already).

    **Arguments:** `domain`: the series' exact domain.
    """

    def __init__(self, domain: Any) -> None:
        self.domain = domain
        self.field = NumberField.of(domain)
        self.zero = domain.zero if self.field is None else self.field.zero
        self.one = domain.one if self.field is None else self.field.one

    def values(self, series: BSeries) -> dict[int, Any]:
        """The coefficients of `series` (over this domain) in this arithmetic."""
        if self.field is None:
            return series.values
        return {k: self.field.convert(v) for k, v in series.values.items()}

    def convert(self, x: Any) -> Any:
        """A domain element in this arithmetic."""
        return x if self.field is None else self.field.convert(x)

    def mul(self, x: Any, y: Any) -> Any:
        return x * y if self.field is None else self.field.reduce(x * y)

    def element(self, x: Any) -> Any:
        """Back to a domain element."""
        return x if self.field is None else self.field.element(self.field.reduce(x))

    def series(
        self, family: TreeFamily, order: int, empty: Any, values: dict[int, Any], name: str
    ) -> BSeries:
        out = {k: self.element(v) for k, v in values.items()}
        return BSeries(family, order, self.domain, self.element(empty), out, name)


def unify(a: BSeries, b: BSeries) -> tuple[BSeries, BSeries]:
    """Both series over one domain (the smallest holding both); they must share trees."""
    if a.family is not b.family:
        raise AnalysisError(
            f"B-series {a.name!r} and {b.name!r} are over different trees (plain and coloured, "
            "or different colours)"
        )
    if a.domain == b.domain:
        return a, b
    balls = [d for d in (a.domain, b.domain) if isinstance(d, BallField)]
    domain = balls[0] if balls else a.domain.unify(b.domain)
    return a.over(domain), b.over(domain)


def exact_flow(order: int, family: TreeFamily = PLAIN) -> BSeries:
    """The B-series of the exact flow, e(t) = 1/γ(t), over QQ."""
    values = {t.index: QQ(1, t.density) for t in family.up_to(order)}
    return BSeries(family, order, QQ, QQ.one, values, "the exact flow")


def tableau_series(
    tableau: ButcherTableau, order: int, time_budget: float = DEFAULT_TIME_BUDGET
) -> BSeries:
    """The B-series of a Runge-Kutta tableau, a(t) = Φ(t), in the field of its entries.

    The series is that of autonomous problems y' = f(y), where only A and b enter (a declared
    c that differs from the row sums of A matters for non-autonomous ones only,
    `runge_kutta/order.py`).

    **Arguments:** `tableau`: the method (exact, numeric: its digits exactly, or a family);
    `order`: the largest tree order; `time_budget`: seconds it may take (past it, an
    `AnalysisError` says which order was reached).

    **Returns:** the `BSeries`.
    """
    field, A, b = entries_in_field(tableau)
    table = WeightTable(PLAIN, {"y": A}, {"y": b}, domain=field)
    deadline = Deadline.after(time_budget)
    for k in range(1, order + 1):
        if deadline.passed():
            raise AnalysisError(
                f"{tableau.name}: the B-series to order {order} did not fit the time budget of "
                f"{time_budget:g} s; it reached order {k - 1} ({len(list(PLAIN.up_to(k - 1)))} "
                "trees): ask for that order, or give a larger time_budget"
            )
        table.prepare(PLAIN.of_order(k))
    values = {t.index: table.weight(t) for t in PLAIN.up_to(order)}
    return BSeries(PLAIN, order, field, field.one, values, tableau.name)


def tableau_ball_series(tableau: ButcherTableau, order: int) -> BSeries:
    """The B-series of a numeric tableau in arb balls holding Φ(t) for every method within the
    precision of its entries (`enclosure.WeightEnclosures`, as its order proof uses); compute
    with it inside `flint.ctx.workprec(series.domain.prec)`."""
    conditions = Conditions(tableau)
    enclosures = conditions.balls
    if enclosures is None:
        raise AnalysisError(f"{tableau.name}: ball B-series are for numeric tableaux")
    prec = working_precision(tableau.numbers.flat)
    field = BallField(prec)
    with flint.ctx.workprec(prec):
        values = {
            t.index: enclosures.residual(t) + flint.arb(flint.fmpq(1, t.density))
            for t in PLAIN.up_to(order)
        }
    return BSeries(PLAIN, order, field, field.one, values, tableau.name)


def additive_series(method: AdditiveRungeKutta, order: int) -> BSeries:
    """The coloured B-series of an additive Runge-Kutta method, one colour per field:
    Φ(t) = Σᵢ b⁽ʳᵒᵒᵗ⁾ᵢ Πchildren (A⁽ᶜʰⁱˡᵈ⁾ Φ)ᵢ over the trees coloured by field
    (`additive/order.py`), in the field of its entries (a numeric method's digits exactly, as
    `tableau_series`). A splitting with a Runge-Kutta sub-step written as the additive method it
    computes has the same series as the composition of its sub-steps (`splitting_series`).

    **Arguments:** `method`: the declaration; `order`: the largest tree order.

    **Returns:** the `BSeries` over `coloured(method.operators)`.
    """
    family = coloured(method.operators)
    big_A, big_b = method.by_field()
    table = WeightTable(family, big_A, big_b)
    trees = list(family.up_to(order))
    table.prepare(trees)
    values = {t.index: table.weight(t) for t in trees}
    return BSeries(family, order, table.domain, table.domain.one, values, method.name)


def general_linear_series(method: GeneralLinear, order: int) -> list[BSeries]:
    """The B-series of each output of a general linear method, relative to its starting
    procedure: output k at t is Σ_j B_kj η′_j(t) + Σ_m V_km ξ_m(t) (`general_linear/series.py`),
    its empty tree V ξ(∅). Compare output k with the starting procedure advanced one step."""
    stages = StageSeries(method)
    K = stages.domain
    out = []
    for k in range(method.values):
        empty = sum((v * x for v, x in zip(stages.V[k], stages.xi(None), strict=True)), K.zero)
        values = {}
        for t in PLAIN.up_to(order):
            eta, xi = stages.eta_prime(t), stages.xi(t)
            total = sum((x * y for x, y in zip(stages.B[k], eta, strict=True)), K.zero)
            values[t.index] = total + sum(
                (v * x for v, x in zip(stages.V[k], xi, strict=True)), K.zero
            )
        out.append(BSeries(PLAIN, order, K, empty, values, f"{method.name} output {k}"))
    return out


# The families whose step is one map y ↦ Φ_h(y) with a B-series over plain trees, called as
# series(method, order, time_budget): what may advance one operator of a splitting
# (`splitting.chosen_substeps`). `families.BSERIES` extends this table to every family.
STEP_SERIES: dict[type[Method], Callable[..., BSeries]] = {ButcherTableau: tableau_series}


def tree(notation: str | list[int]) -> Tree:
    """The plain tree written in bracket notation (`"[τ, [τ]]"`) or as a level sequence
    (`[1, 2, 3, 2]`: each node's depth in depth-first order, RootedTrees.jl's notation).

    **Returns:** the `Tree` of `PLAIN`.
    """
    if isinstance(notation, str):
        for t in PLAIN.up_to(max(1, notation.count("τ"))):
            if PLAIN.bracket(t) == notation:
                return t
        raise AnalysisError(f"no rooted tree is written {notation!r} (use τ and [ ], '[τ, [τ]]')")
    levels = list(notation)
    if not levels or levels[0] != min(levels) or levels.count(levels[0]) != 1:
        raise AnalysisError(f"not a level sequence of one rooted tree: {levels!r}")

    def build(start: int) -> tuple[int, int]:
        """(tree index, next position) of the subtree rooted at `start`."""
        children, pos = [], start + 1
        while pos < len(levels) and levels[pos] > levels[start]:
            if levels[pos] != levels[start] + 1:
                raise AnalysisError(f"not a level sequence: {levels!r} (a level skips)")
            child, pos = build(pos)
            children.append(child)
        return PLAIN.find("y", children).index, pos

    index, _ = build(0)
    return PLAIN.trees[index]
