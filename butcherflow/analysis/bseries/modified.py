"""Backward error analysis with B-series: modified equations and modifying integrators.

The modified equation of a method a is the vector-field series b (b(∅) = 0) whose exact flow is
the method: b ⋆ e = a, e the exact flow (Chartier, Hairer and Vilmart 2010). The modifying
integrator is the b with b ⋆ a = e: the method applied to the field B(b) gives the exact flow
of f. Both are solved tree by tree: the partition of t into the single piece t contributes
b(t)·a(τ), every other partition only pieces smaller than t.

A truncated field is evaluated for a concrete f as
    f̃(y) = Σ_t h^(|t|−1) b(t)/σ(t) F(t)(y),
F(t) the elementary differentials of f: sympy expressions for a symbolic ODE (`evaluate`), or
a numpy function of (y, h) made from them (`evaluate_numpy`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import sympy

from ...errors import AnalysisError
from ...methods import Method
from ..exact.trees import PLAIN, TreeFamily
from .families import bseries
from .group import _partitions, common_domain
from .series import Arithmetic, BSeries, exact_flow


def _series(method: Method | str | BSeries, order: int) -> BSeries:
    """The step series of `method` to `order` (`families.bseries`: a splitting's over coloured
    trees, its sub-steps as declared, exact sub-flows included)."""
    if isinstance(method, BSeries):
        if method.order < order:
            raise AnalysisError(
                f"B-series {method.name!r} holds trees up to order {method.order}, not {order}"
            )
        return method.truncated(order)
    return bseries(method, order)


def _solve(a: BSeries, target: BSeries, inner: BSeries, name: str) -> BSeries:
    """The vector-field series b with b ⋆ `inner` = `target` over the trees of `target` (one
    of a, e is the inner; a coloured b is substituted into a plain inner, whose skeletons are
    plain trees)."""
    inner, target = common_domain(inner, target)
    K, family = target.domain, target.family
    lead = inner.values[PLAIN.of_order(1)[0].index]
    if lead == K.zero:
        raise AnalysisError(f"{a.name}: a(τ) = 0 (inconsistent method): no modified field")
    ar = Arithmetic(K)
    vi, vt = ar.values(inner), ar.values(target)
    scale = ar.convert(K.quo(K.one, lead))
    values: dict[int, Any] = {}
    for t in family.up_to(target.order):
        rest = ar.zero
        for (root, skeleton, pieces), n in _partitions(family, t.index).items():
            if root == t.index:
                continue  # the single piece t: b(t)·inner(τ), solved for
            term = ar.mul(vi[skeleton], values[root])
            for piece in pieces:
                term = ar.mul(term, values[piece])
            rest += n * term
        values[t.index] = ar.mul(vt[t.index] - rest, scale)
    return ar.series(family, target.order, ar.zero, values, name)


def modified_equation(method: Method | str | BSeries, order: int) -> BSeries:
    """The modified equation of a method: the field series b with b ⋆ e = a.

    For a splitting or an additive method, y' = Σ_X f_X, the series is over trees coloured by
    operator (field), and the modified field Σ_t h^(|t|−1) b(t)/σ(t) F(t) has the coloured
    elementary differentials of the f_X (F([τ_B]_A) = f_A′f_B): for Lie-Trotter
    f_A + f_B + (h/2)(f_B′f_A − f_A′f_B) + …, the Baker-Campbell-Hausdorff series of the
    composed flows.

    **Arguments:** `method`: a declaration, catalog name or B-series (a(∅) = 1); a splitting's
    sub-steps as declared (exact sub-flows or its tableau; other choices: pass
    `splitting_series(method, order, substeps)`); `order`: the largest tree order (the field is
    then known to h^(order − 1)).

    **Returns:** the vector-field `BSeries` b (b(∅) = 0; b(τ) = 1 for a consistent method).
    """
    a = _series(method, order)
    return _solve(a, a, exact_flow(order), f"modified equation of {a.name}")


def modifying_integrator(method: Method | str | BSeries, order: int) -> BSeries:
    """The modifying integrator of a method: the field series b with b ⋆ a = e.

    **Arguments:** as `modified_equation`; plain trees only: for a splitting (or an additive
    method) each operator's field would be replaced by its own series, and the coloured
    conditions fix only their sum (Lie-Trotter needs corrections g_A + g_B =
    −(h/2)(f_B′f_A − f_A′f_B) + …, shared between the operators in any way), so there is no
    one modifying integrator to return.

    **Returns:** the vector-field `BSeries` b.
    """
    a = _series(method, order)
    if a.family is not PLAIN:
        raise AnalysisError(
            f"{a.name}: a method over coloured trees (a splitting, an additive method) has no "
            "unique modifying integrator (each operator's field "
            "is modified separately and the coloured conditions fix only the sum of the "
            "corrections); ask for modified_equation, or for a tableau's modifying_integrator"
        )
    return _solve(a, exact_flow(order), a, f"modifying integrator of {a.name}")


Fields = Sequence[sympy.Expr] | Mapping[str, Sequence[sympy.Expr]]


def _fields(f: Fields, y: Sequence[sympy.Symbol], family: TreeFamily) -> dict[str, list[Any]]:
    """Colour → field: one f for plain trees, one f_X per operator X for coloured ones."""
    if isinstance(f, Mapping):
        if set(f) != set(family.colours):
            raise AnalysisError(
                f"evaluate: f names the operators {sorted(f)}; the series' trees are coloured "
                f"by {list(family.colours)} (give one field per operator)"
            )
        chosen = dict(f)
    elif family.is_plain:
        chosen = {family.colours[0]: f}
    else:
        raise AnalysisError(
            f"evaluate: the series is over trees coloured by {list(family.colours)}; give f as "
            "a mapping operator → field (one list of expressions per operator)"
        )
    for colour, field in chosen.items():
        if len(field) != len(y):
            raise AnalysisError(
                f"evaluate: f[{colour!r}] has {len(field)} components but y has {len(y)} symbols"
            )
    return {colour: [sympy.sympify(x) for x in field] for colour, field in chosen.items()}


def elementary_differentials(
    f: Fields, y: Sequence[sympy.Symbol], order: int, family: TreeFamily = PLAIN
) -> dict[int, list[sympy.Expr]]:
    """F(t)(y) for every tree of `family` up to `order`, as sympy vectors.

    F(τ_X) = f_X; for t = [t₁…t_m]_X, F(t) = f_X^(m)(F(t₁), …, F(t_m)) (plain trees: one f),
    built through t = u + s: the m-th derivative of f_X applied to the children's
    differentials, with constant placeholders so that a child's own dependence on y is not
    differentiated.

    **Arguments:** `f`: the right-hand side, one expression per component (plain trees), or a
    mapping operator → such a list (trees coloured by operator); `y`: the state symbols;
    `order`: the largest tree order; `family`: the trees.

    **Returns:** tree index → list of expressions.
    """
    fields = _fields(f, y, family)
    n = len(y)
    # derivatives[X][m]: f_X^(m)(w₁, …, w_m) with constant placeholder vectors w_k
    placeholders: list[tuple[sympy.Symbol, ...]] = []
    derivatives = {colour: [g] for colour, g in fields.items()}
    out: dict[int, list[sympy.Expr]] = {}
    for t in family.up_to(order):
        m = len(t.children)
        while len(placeholders) < m:
            placeholders.append(sympy.symbols(f"_w{len(placeholders)}_0:{n}"))
        levels = derivatives[t.colour]
        while len(levels) <= m:
            w, last = placeholders[len(levels) - 1], levels[-1]
            levels.append([sum(sympy.diff(x, y[j]) * w[j] for j in range(n)) for x in last])
        values = {placeholders[k][j]: out[c][j] for k, c in enumerate(t.children) for j in range(n)}
        out[t.index] = [sympy.expand(x.xreplace(values)) for x in levels[m]]
    return out


def evaluate(
    series: BSeries, f: Fields, y: Sequence[sympy.Symbol], h: sympy.Symbol
) -> list[sympy.Expr]:
    """The truncated field Σ_t h^(|t|−1) b(t)/σ(t) F(t)(y) of a vector-field series for a
    concrete f (for a step series a, the same sum is (a(h) − a(∅)·y)/h).

    **Arguments:** `series`: e.g. `modified_equation(...)`; `f`: sympy expressions in `y`, or
    for a series over coloured trees (a splitting's) a mapping operator → expressions; `y`: the
    state symbols; `h`: the step-size symbol.

    **Returns:** one sympy expression per component, expanded.
    """
    F = elementary_differentials(f, y, series.order, series.family)
    total = [sympy.Integer(0)] * len(y)
    for t, coefficient in series.items():
        if coefficient == 0:
            continue
        scale = coefficient / t.symmetry * h ** (t.order - 1)
        total = [acc + scale * x for acc, x in zip(total, F[t.index], strict=True)]
    return [sympy.expand(x) for x in total]


def evaluate_numpy(
    series: BSeries, f: Fields, y: Sequence[sympy.Symbol], h: sympy.Symbol
) -> Callable[[Any, float], np.ndarray]:
    """`evaluate` as a numpy function `field(y_values, h_value) -> array` (float64)."""
    expressions = evaluate(series, f, y, h)
    fn = sympy.lambdify((tuple(y), h), expressions, modules="numpy")

    def field(values: Any, step: float) -> np.ndarray:
        return np.asarray(fn(tuple(np.asarray(values, dtype=np.float64)), step), dtype=np.float64)

    return field
