"""The order of continuous dynamics is the order of the solver that integrates them."""

from __future__ import annotations

from typing import Any, final

from ...methods import ContinuousDynamics
from ..budget import DEFAULT_TIME_BUDGET
from ..report import Report
from ..runge_kutta.report import RungeKuttaReport, analyse_tableau


@final
class ContinuousReport(Report):
    """What `bf.check` says about a `ContinuousDynamics` declaration.

    **Attributes:**

    - `order`: the proved order of the solver's tableau (for an adaptive torchdiffeq method, of
      the catalog tableau it runs: dopri5 is `dormand-prince-5`, and so on).
    - `solver`: the full `RungeKuttaReport` of that tableau.
    """

    method: ContinuousDynamics

    def search_end(self, key: str) -> tuple[int, str | None]:
        """The order claimed is the solver's: its search decides."""
        return self.solver.search_end(key) if key == "order" else (0, None)

    def __init__(
        self, method: ContinuousDynamics, time_budget: float = DEFAULT_TIME_BUDGET
    ) -> None:
        self.method = method
        tableau = method.solver_tableau()
        self.solver: RungeKuttaReport = analyse_tableau(tableau, time_budget=time_budget)
        self.order = self.solver.order
        self.zero_stable = True  # a one-step solver
        self.notes = []
        if method.adaptive:
            self.notes.append(
                f"adaptive: torchdiffeq's {method.method} runs the tableau '{tableau.name}' "
                f"(order {self.order}, embedded order {self.solver.embedded_order}) with "
                f"rtol={method.rtol:g}, atol={method.atol:g}, at most {method.max_num_steps} steps."
            )
        else:
            span = "unit interval" if method.grid == "interval" else "position gap"
            steps = (
                f"step size {method.step_size}"
                if method.step_size is not None
                else f"{method.steps} step(s) per {span}"
            )
            self.notes.append(
                f"fixed steps: '{tableau.name}' (order {self.order}), {steps}: the global error "
                f"falls as h^{self.order}."
            )
        if method.grid == "positions":
            self.notes.append(
                f"positions: token i sits at t = i·{method.delta}; longer sequences integrate "
                "further, with no maximum length."
            )

    @property
    def exact(self) -> bool:
        return self.solver.exact

    @property
    def real_stability_interval(self) -> float | None:
        """The solver's: the flow is integrated by its tableau."""
        return self.solver.real_stability_interval

    def rows(self) -> list[tuple[str, Any]]:
        m = self.method
        return [
            ("order", self.order),
            ("claimed order", m.order),
            ("solver", f"{m.method} ({'adaptive' if m.adaptive else 'fixed steps'})"),
            ("grid", m.grid if m.grid == "interval" else f"positions, delta = {m.delta}"),
            ("interval", f"[{m.t0}, {m.t1}]" if m.grid == "interval" else None),
            ("gradients", "adjoint ODE" if m.adjoint else "backpropagation through the solver"),
            ("time dependence", m.time),
            ("solver stability", self.solver.stability.real_interval_text),
        ]

    def to_dict(self) -> dict[str, Any]:
        m = self.method
        return {
            "order": self.order,
            "method": m.method,
            "adaptive": m.adaptive,
            "grid": m.grid,
            "delta": m.delta,
            "t0": m.t0,
            "t1": m.t1,
            "steps": m.steps,
            "step_size": m.step_size,
            "rtol": m.rtol,
            "atol": m.atol,
            "adjoint": m.adjoint,
            "time": m.time,
            "solver": self.solver.to_dict(),
        }


def analyse_continuous(
    method: ContinuousDynamics, *, max_order: int | None = None, time_budget: float | None = None
) -> ContinuousReport:
    """The order of continuous dynamics: the proved order of their solver's tableau.

    **Arguments:**

    - `method`: the declaration.
    - `max_order`: accepted like every family's analysis; the solver's tableau is proved in
      full.
    - `time_budget`: the budget of the solver's report (default `DEFAULT_TIME_BUDGET`).

    **Returns:** a `ContinuousReport`.
    """
    return ContinuousReport(method, DEFAULT_TIME_BUDGET if time_budget is None else time_budget)
