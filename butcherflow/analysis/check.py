"""`bf.check`: one entry point that proves the order of any declaration."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..methods import (
    AdditiveRungeKutta,
    ButcherTableau,
    ContinuousDynamics,
    GeneralLinear,
    LinearMultistep,
    Method,
    Splitting,
    catalog,
)
from ..methods.base import check_count
from .additive.report import analyse_additive
from .budget import DEFAULT_TIME_BUDGET, check_time_budget
from .continuous.report import analyse_continuous
from .general_linear.report import analyse_general_linear
from .multistep.report import analyse_multistep
from .report import Report
from .runge_kutta.report import analyse_tableau
from .splitting.report import analyse_splitting

# Each family's analysis, called as analyse(method, max_order=..., time_budget=...). A new family
# adds its line here: no registration happens anywhere else.
ANALYSES: dict[type[Method], Callable[..., Report]] = {
    ButcherTableau: analyse_tableau,
    Splitting: analyse_splitting,
    LinearMultistep: analyse_multistep,
    ContinuousDynamics: analyse_continuous,
    GeneralLinear: analyse_general_linear,
    AdditiveRungeKutta: analyse_additive,
}


def check(
    method: Method | str | Path,
    *,
    max_order: int | None = None,
    time_budget: float = DEFAULT_TIME_BUDGET,
) -> Report:
    """Prove the order of a declaration and report it.

    **Arguments:**

    - `method`: a declaration, a catalog name (`"rk4"`) or the path of a declaration file.
    - `max_order`: where the order search stops (default: what the method can reach: Butcher's
      barrier or 2s stages for a tableau, 2k + 1 for a k-step method, and one order more).
    - `time_budget`: seconds the whole report may take (`budget.Deadline`): the order search
      and the stability rows check one deadline; past it the search reports what it
      established and a row not yet decided says "not decided within the time budget".

    **Returns:** the family's report (`RungeKuttaReport`, `SplittingReport`, `MultistepReport`,
    `ContinuousReport`; all `Report`s: `.order`, `.claim_holds`, `str()`, `.to_markdown()`,
    `.to_json()`).
    """
    if max_order is not None:
        check_count(max_order, "max_order", None)
    check_time_budget(time_budget)
    resolved = catalog.resolve(method)
    resolved.refuse_numeric_family()
    return ANALYSES[type(resolved)](resolved, max_order=max_order, time_budget=time_budget)


def trained_order(
    method: Method, coefficients: str = "exact", stage: str = "branch", **kwargs: Any
) -> str:
    """The order of a layer as it trains, in words: the proof is about the declaration the
    compiled layer computes (`Method.with_coefficients`), its parameters included.

    **Arguments:**

    - `method`: the declaration a block is compiled from.
    - `coefficients`: the compile option `coefficients=` ("exact" when not given).
    - `stage`: the compile option `stage=`: with `"layer"` (stages store y + F(y)) a tableau
      is proved as the general linear method it then is (`GeneralLinear.of_layer_stages`).
    - `kwargs`: passed to `check` (`time_budget`, ...).

    **Returns:** e.g. `"4"`, `"1 for every g (2 at initialisation, g = 1/2)"`, or, where the
    family's compiler trains the coefficients itself, the order they start from.
    """
    declared = method.with_coefficients(coefficients)
    if stage == "layer":
        layer_stages = GeneralLinear.of_layer_stages(declared)
        if layer_stages is None:
            return (
                f"not proved: stage = 'layer' is analysed for Runge-Kutta tableaux only "
                f"('{method.name}' is a {method.family} declaration)"
            )
        report = analyse_general_linear(layer_stages, **kwargs)
        why = (
            ""
            if report.preconsistent
            else " (not preconsistent)"
            if report.preconsistent is False
            else " (preconsistent only within the digits)"
        )
        return f"{report.block_order_text} in F{why}: each stage stores the whole layer y + F(y)"
    if declared is not None:
        return check(declared, **kwargs).block_order_text
    start = check(method, **kwargs).block_order_text
    return (
        f"{start} at initialisation; coefficients = '{coefficients}' trains the coefficients, so "
        "no order is proved for the trained layer"
    )
