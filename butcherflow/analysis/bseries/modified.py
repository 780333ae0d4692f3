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

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import sympy

from ...errors import AnalysisError
from ...methods import Method
from ..exact.trees import PLAIN
from .group import _partitions
from .series import Arithmetic, BSeries, bseries, exact_flow, unify


def _series(method: Method | str | BSeries, order: int) -> BSeries:
    if isinstance(method, BSeries):
        if method.order < order:
            raise AnalysisError(
                f"B-series {method.name!r} holds trees up to order {method.order}, not {order}"
            )
        found = method.truncated(order)
    else:
        found = bseries(method, order)
    if found.family is not PLAIN:
        raise AnalysisError(
            f"{found.name}: modified equations are implemented for plain trees (one field f); "
            "a splitting's coloured series needs the coloured substitution law, not implemented"
        )
    return found


def _solve(a: BSeries, target: BSeries, inner: BSeries, name: str) -> BSeries:
    """The vector-field series b with b ⋆ `inner` = `target` (one of a, e is the inner)."""
    inner, target = unify(inner, target)
    K = inner.domain
    lead = inner.values[PLAIN.of_order(1)[0].index]
    if lead == K.zero:
        raise AnalysisError(f"{a.name}: a(τ) = 0 (inconsistent method): no modified field")
    ar = Arithmetic(K)
    vi, vt = ar.values(inner), ar.values(target)
    scale = ar.convert(K.quo(K.one, lead))
    values: dict[int, Any] = {}
    for t in PLAIN.up_to(inner.order):
        rest = ar.zero
        for (root, skeleton, pieces), n in _partitions(PLAIN, t.index).items():
            if root == t.index:
                continue  # the single piece t: b(t)·inner(τ), solved for
            term = ar.mul(vi[skeleton], values[root])
            for piece in pieces:
                term = ar.mul(term, values[piece])
            rest += n * term
        values[t.index] = ar.mul(vt[t.index] - rest, scale)
    return ar.series(PLAIN, inner.order, ar.zero, values, name)


def modified_equation(method: Method | str | BSeries, order: int) -> BSeries:
    """The modified equation of a method: the field series b with b ⋆ e = a.

    **Arguments:** `method`: a declaration, catalog name or B-series (a(∅) = 1); `order`: the
    largest tree order (the field is then known to h^(order − 1)).

    **Returns:** the vector-field `BSeries` b (b(∅) = 0; b(τ) = 1 for a consistent method).
    """
    a = _series(method, order)
    return _solve(a, a, exact_flow(order), f"modified equation of {a.name}")


def modifying_integrator(method: Method | str | BSeries, order: int) -> BSeries:
    """The modifying integrator of a method: the field series b with b ⋆ a = e.

    **Arguments:** as `modified_equation`.

    **Returns:** the vector-field `BSeries` b.
    """
    a = _series(method, order)
    return _solve(a, exact_flow(order), a, f"modifying integrator of {a.name}")


def elementary_differentials(
    f: Sequence[sympy.Expr], y: Sequence[sympy.Symbol], order: int
) -> dict[int, list[sympy.Expr]]:
    """F(t)(y) for every plain tree up to `order`, as sympy vectors.

    F(τ) = f; for t = [t₁…t_m], F(t) = f^(m)(F(t₁), …, F(t_m)), built through t = u + s: the
    m-th derivative of f applied to the children's differentials, one child at a time, with
    constant placeholders so that a child's own dependence on y is not differentiated.

    **Arguments:** `f`: the right-hand side, one expression per component; `y`: the state
    symbols; `order`: the largest tree order.

    **Returns:** tree index → list of expressions.
    """
    if len(f) != len(y):
        raise AnalysisError(f"evaluate: f has {len(f)} components but y has {len(y)} symbols")
    n = len(y)
    g = [sympy.sympify(x) for x in f]
    # derivatives[m]: f^(m)(w₁, …, w_m) with constant placeholder vectors w_k, so that a
    # child's own dependence on y is never differentiated
    placeholders: list[tuple[sympy.Symbol, ...]] = []
    derivatives = [g]
    out: dict[int, list[sympy.Expr]] = {}
    for t in PLAIN.up_to(order):
        m = len(t.children)
        while len(derivatives) <= m:
            w = sympy.symbols(f"_w{len(placeholders)}_0:{n}")
            placeholders.append(w)
            last = derivatives[-1]
            derivatives.append([sum(sympy.diff(x, y[j]) * w[j] for j in range(n)) for x in last])
        values = {placeholders[k][j]: out[c][j] for k, c in enumerate(t.children) for j in range(n)}
        out[t.index] = [sympy.expand(x.xreplace(values)) for x in derivatives[m]]
    return out


def evaluate(
    series: BSeries, f: Sequence[sympy.Expr], y: Sequence[sympy.Symbol], h: sympy.Symbol
) -> list[sympy.Expr]:
    """The truncated field Σ_t h^(|t|−1) b(t)/σ(t) F(t)(y) of a vector-field series for a
    concrete f (for a step series a, the same sum is (a(h) − a(∅)·y)/h).

    **Arguments:** `series`: e.g. `modified_equation(...)`; `f`: sympy expressions in `y`;
    `y`: the state symbols; `h`: the step-size symbol.

    **Returns:** one sympy expression per component, expanded.
    """
    F = elementary_differentials(f, y, series.order)
    total = [sympy.Integer(0)] * len(y)
    for t, coefficient in series.items():
        if coefficient == 0:
            continue
        scale = coefficient / t.symmetry * h ** (t.order - 1)
        total = [acc + scale * x for acc, x in zip(total, F[t.index], strict=True)]
    return [sympy.expand(x) for x in total]


def evaluate_numpy(
    series: BSeries, f: Sequence[sympy.Expr], y: Sequence[sympy.Symbol], h: sympy.Symbol
) -> Callable[[Any, float], np.ndarray]:
    """`evaluate` as a numpy function `field(y_values, h_value) -> array` (float64)."""
    expressions = evaluate(series, f, y, h)
    fn = sympy.lambdify((tuple(y), h), expressions, modules="numpy")

    def field(values: Any, step: float) -> np.ndarray:
        return np.asarray(fn(tuple(np.asarray(values, dtype=np.float64)), step), dtype=np.float64)

    return field
