"""Splittings as products in the Butcher group of coloured B-series.

A splitting y' = Σ_X f_X(y) advances operator X_k by c_k·h in turn. Each sub-step is a
coloured B-series that vanishes on every tree holding a colour other than X_k: the exact flow of
c·h·f_X has c^|t|/γ(t) on the trees of colour X only, a Runge-Kutta sub-step c^|t|·Φ(t). The
splitting is their composition in the order of application (`group.compose`), and its order is
the largest p with a(t) = 1/γ(t) on every coloured tree of ≤ p nodes (the exact flow of Σ f_X).
Each operator may have its own sub-integrator (`substeps`), which the declaration's single
`substep` cannot say; the free-algebra proof of exact sub-flows (`free_algebra.py`) and the
additive-tableau proof of a shared sub-step (`additive.py`) are independent checks of this one.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any, cast

import flint

from ...errors import AnalysisError
from ...methods import ButcherTableau, Splitting, catalog
from ...methods.entries.precision import Verdict, judge_enclosure, working_precision
from ..exact.trees import PLAIN, TreeFamily, coloured
from ..exact.weights import smallest_domain
from .group import compose
from .series import STEP_SERIES, BallField, BSeries


def _plain_index(family: TreeFamily, colour: str, order: int) -> dict[int, int]:
    """Coloured tree index → the plain tree of the same shape, for trees of one colour."""
    out: dict[int, int] = {}
    for t in family.up_to(order):
        if t.colour != colour or any(c not in out for c in t.children):
            continue
        out[t.index] = PLAIN.find("y", [out[c] for c in t.children]).index
    return out


def _step_series(
    family: TreeFamily,
    colour: str,
    c: Any,
    weights: Mapping[int, Any] | None,
    domain: Any,
    order: int,
) -> BSeries:
    """The coloured series of one sub-step: c^|t|·w(t) on the trees of `colour` (w = 1/γ for
    the exact flow, Φ for a Runge-Kutta sub-step), zero on every other tree."""
    shape = _plain_index(family, colour, order)
    values = {}
    for t in family.up_to(order):
        if t.index not in shape:
            values[t.index] = domain.zero
            continue
        plain = PLAIN.trees[shape[t.index]]
        w = (
            domain.quo(domain.one, domain(plain.density))
            if weights is None
            else weights[plain.index]
        )
        values[t.index] = c**t.order * w
    return BSeries(family, order, domain, domain.one, values, f"{colour}({c})")


def chosen_substeps(
    split: Splitting, substeps: Mapping[str, ButcherTableau | str] | None
) -> dict[str, ButcherTableau | None]:
    """Each operator's sub-integrator: `substeps[op]` where given (a tableau, catalog name or
    `"exact"`), else the declaration's `substep`; None stands for the exact flow."""
    chosen: dict[str, ButcherTableau | None] = {op: split.substep for op in split.operators}
    for op, sub in (substeps or {}).items():
        if op not in chosen:
            raise AnalysisError(
                f"{split.name}: substeps names operator {op!r}; valid: {', '.join(chosen)}"
            )
        resolved = None if sub == "exact" else catalog.resolve(sub)
        if resolved is not None and type(resolved) not in STEP_SERIES:
            raise AnalysisError(f"substeps[{op!r}]: {resolved.name} is not a Runge-Kutta tableau")
        chosen[op] = cast(ButcherTableau | None, resolved)
    return chosen


def splitting_series(
    method: Splitting,
    order: int,
    substeps: Mapping[str, ButcherTableau | str] | None = None,
    digits: bool = False,
) -> BSeries:
    """The coloured B-series of a splitting, each operator advanced by its own sub-integrator.

    **Arguments:**

    - `method`: the splitting.
    - `order`: the largest tree order.
    - `substeps`: per operator, a Runge-Kutta tableau (or catalog name) or `"exact"`; operators
      not named use the declaration's `substep` (exact when it has none).
    - `digits`: for a numeric splitting, the series of its digits taken exactly (the default is
      balls holding every splitting within the precision of its coefficients).

    **Returns:** the `BSeries` over trees coloured by operator (`trees.coloured`).
    """
    chosen = chosen_substeps(method, substeps)
    values = [c for _, c in method.steps]
    for sub in {id(t): t for t in chosen.values() if t is not None}.values():
        values += [x for row in sub.A for x in row] + list(sub.b)
    if method.numeric and not digits:
        with flint.ctx.workprec(working_precision(method.numbers.flat)):
            return _composed(method, order, chosen, BallField(flint.ctx.prec))
    domain, _ = smallest_domain(values)
    return _composed(method, order, chosen, domain.get_field())


def _composed(
    split: Splitting, order: int, chosen: Mapping[str, ButcherTableau | None], domain: Any
) -> BSeries:
    """The product of the sub-steps' coloured series over `domain` (exact or balls)."""
    family = coloured(split.operators)
    weights: dict[str, dict[int, Any] | None] = {}
    for op, sub in chosen.items():
        if sub is None:
            weights[op] = None
            continue
        plain = STEP_SERIES[type(sub)](sub, order)
        weights[op] = {
            t.index: domain.convert_from(plain.values[t.index], plain.domain) for t in plain
        }
    numbers = split.numbers.steps
    steps = [
        (op, x.ball() if isinstance(domain, BallField) else domain.from_sympy(c))
        for (op, c), x in zip(split.steps, numbers, strict=True)
    ]
    zeros = {t.index: domain.zero for t in family.up_to(order)}
    total = BSeries(family, order, domain, domain.one, zeros, "identity")
    for op, c in steps:
        step = _step_series(family, op, c, weights[op], domain, order)
        total = compose(total, step)
    total.name = split.name
    return total


def series_order(series: BSeries) -> tuple[int, Verdict | None]:
    """The largest p with a(t) = 1/γ(t) on every tree of ≤ p nodes, and the verdict on the first
    condition that stops it (fails, or undetermined for balls); None when every condition up to
    the series' order holds (the order is then at least p).

    Over balls a condition is judged like an order condition (`precision.judge_enclosure`)."""
    balls = isinstance(series.domain, BallField)
    for t in series:
        value = series.coefficient(t)
        if balls:
            residual = value - flint.arb(flint.fmpq(1, t.density))
            verdict = judge_enclosure(residual, Fraction(1, t.density)).verdict
        else:
            target = series.domain.quo(series.domain.one, series.domain(t.density))
            verdict = Verdict.MET if value == target else Verdict.FAILS
        if verdict is not Verdict.MET:
            return t.order - 1, verdict
    return series.order, None
