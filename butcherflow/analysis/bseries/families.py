"""`bf.bseries`: the one table of the B-series each declaration family has.

A Runge-Kutta tableau's step is a B-series over plain trees; a splitting's and an additive
method's are over trees coloured by operator (field); a general linear method's outputs are
B-series relative to its starting procedure. A family adds its line to `BSERIES`; nothing else
asks for the type.
"""

from __future__ import annotations

from collections.abc import Callable

from ...errors import AnalysisError
from ...methods import (
    AdditiveRungeKutta,
    GeneralLinear,
    LinearMultistep,
    Method,
    Splitting,
    catalog,
)
from ..budget import DEFAULT_TIME_BUDGET
from .series import STEP_SERIES, BSeries, additive_series, general_linear_series
from .splitting import splitting_series


def _multistep(method: LinearMultistep, order: int, time_budget: float) -> BSeries:
    raise AnalysisError(
        f"{method.name}: a linear multistep method has no one-step B-series (its step "
        "needs k past values); ask for its order with bf.check, or declare it as a "
        "GeneralLinear method to get the B-series relative to a starting procedure"
    )


# Each family's B-series, called as series(method, order, time_budget). The splitting's sub-steps
# are the declared ones (exact sub-flows when it has none; other choices: `splitting_series`);
# a general linear method's is its first output's (every output: `general_linear_series`).
BSERIES: dict[type[Method], Callable[..., BSeries]] = {
    **STEP_SERIES,
    Splitting: lambda method, order, _: splitting_series(method, order),
    AdditiveRungeKutta: lambda method, order, _: additive_series(method, order),
    GeneralLinear: lambda method, order, _: general_linear_series(method, order)[0],
    LinearMultistep: _multistep,
}


def bseries(
    method: Method | str, order: int, *, time_budget: float = DEFAULT_TIME_BUDGET
) -> BSeries:
    """The B-series of a method, tree by tree, exactly.

    **Arguments:**

    - `method`: a declaration or catalog name: a Runge-Kutta tableau (plain trees), a splitting
      (trees coloured by operator, its declared sub-steps: exact flows or a tableau; a numeric
      splitting's coefficients in balls), an additive Runge-Kutta method (trees coloured by
      field) or a general linear method (its first output, relative to its starting
      procedure; every output: `general_linear_series`).
    - `order`: the largest tree order (number of nodes) to compute.
    - `time_budget`: seconds it may take; past it an `AnalysisError` says what was reached.

    **Returns:** a `BSeries` (`series[tree]`, `str(series)`).
    """
    resolved = catalog.resolve(method)
    if order < 1:
        raise AnalysisError(f"bseries: order must be ≥ 1 (got {order})")
    series = BSERIES.get(type(resolved))
    if series is None:
        raise AnalysisError(
            f"{resolved.name}: a {resolved.family} declaration has no B-series (Runge-Kutta "
            "tableaux, splittings, additive and general linear methods have)"
        )
    return series(resolved, order, time_budget)
