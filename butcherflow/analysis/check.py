"""`bf.check`: one entry point that proves the order of any declaration."""

from __future__ import annotations

from pathlib import Path

from ..methods import (
    ButcherTableau,
    ContinuousDynamics,
    LinearMultistep,
    Method,
    Splitting,
    catalog,
)
from .continuous import ContinuousReport
from .multistep import analyse_multistep
from .report import Report
from .rk_order import DEFAULT_TIME_BUDGET
from .runge_kutta import analyse_tableau
from .splitting import analyse_splitting


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
    - `time_budget`: seconds an order search may take; past it the report says what was
      established and that the search stopped at the budget.

    **Returns:** a `RungeKuttaReport`, `SplittingReport`, `MultistepReport` or `ContinuousReport`
    (all `Report`s: `.order`, `.claim_holds`, `str()`, `.to_markdown()`, `.to_json()`).
    """
    resolved = catalog.resolve(method)
    if isinstance(resolved, ButcherTableau):
        return analyse_tableau(resolved, max_order=max_order, time_budget=time_budget)
    if isinstance(resolved, Splitting):
        return analyse_splitting(resolved, max_order=max_order, time_budget=time_budget)
    if isinstance(resolved, LinearMultistep):
        return analyse_multistep(resolved, max_order=max_order)
    if isinstance(resolved, ContinuousDynamics):
        return ContinuousReport(resolved)
    raise TypeError(f"cannot check {type(resolved).__name__}")  # pragma: no cover
