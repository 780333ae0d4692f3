"""Continuous dynamics: a neural ODE dy/dt = f(t, y) solved over a time grid by a chosen solver.

The solver runtime (torchdiffeq or butcherflow's own fixed-step loop) is built by the compiler;
this module declares what is solved and how, so that `bf.check` can report the solver's order.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, final

import sympy

from ..errors import DeclarationError
from .base import Layer, Method
from .entries.numbers import parse_number
from .tableau import ButcherTableau

# torchdiffeq's adaptive methods and the catalog tableau each one runs (for its proved order).
ADAPTIVE = {
    "dopri5": "dormand-prince-5",
    "dopri8": "dormand-prince-8",
    "bosh3": "bogacki-shampine-3",
    "fehlberg2": "fehlberg-2",
    "adaptive_heun": "heun-euler",
}
GRIDS = ("interval", "positions")
TIME = ("none", "concat", "embedding")


def _positive(value: Any, key: str, source: str | None, *, integer: bool = False) -> Any:
    if integer:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise DeclarationError(
                f"{key} must be a positive integer", key=key, value=value, source=source
            )
        return value
    number = parse_number(value, key, source).value
    if number.free_symbols or not bool(number > 0):
        raise DeclarationError(
            f"{key} must be a positive number", key=key, value=value, source=source
        )
    return number


@final
class ContinuousDynamics(Method):
    """A neural ODE solved by a declared method.

    **Arguments:**

    - `method`: an explicit catalog Runge-Kutta name or `ButcherTableau` (fixed steps), or one of
      torchdiffeq's adaptive methods `dopri5`, `dopri8`, `bosh3`, `fehlberg2`, `adaptive_heun`.
    - `grid`: `"interval"` (integrate from `t0` to `t1`: a continuous-depth block) or
      `"positions"` (FLOATER: position i sits at time i·`delta`).
    - `steps` / `step_size`: fixed-step methods only, at most one of them: the number of steps
      over [t0, t1] (or between neighbouring positions), or the step length.
    - `rtol`, `atol`, `max_num_steps`: adaptive methods only.
    - `adjoint`: backpropagate with the adjoint ODE, solved backwards by the same solver.
    - `time`: how the field sees t: `"none"`, `"concat"` (t appended to the input) or
      `"embedding"` (a sinusoidal embedding of t added to the input).
    """

    family = "continuous"
    keys = (
        "method",
        "grid",
        "t0",
        "t1",
        "delta",
        "steps",
        "step_size",
        "rtol",
        "atol",
        "max_num_steps",
        "adjoint",
        "time",
    )
    required = ("method",)
    method: str
    tableau: ButcherTableau | None  # None for adaptive methods
    adaptive: bool
    grid: str
    t0: sympy.Expr
    t1: sympy.Expr
    delta: sympy.Expr
    steps: int | None
    step_size: sympy.Expr | None
    rtol: float | None
    atol: float | None
    max_num_steps: int | None
    adjoint: bool
    time: str

    def __init__(
        self,
        method: str | ButcherTableau = "rk4",
        *,
        grid: str = "interval",
        t0: Any = 0,
        t1: Any = 1,
        delta: Any = "1/100",
        steps: int | None = None,
        step_size: Any = None,
        rtol: float | None = None,
        atol: float | None = None,
        max_num_steps: int | None = None,
        adjoint: bool = False,
        time: str = "concat",
        name: str | None = None,
        order: int | None = None,
        title: str | None = None,
        reference: str | None = None,
        source: str | Path | None = None,
    ) -> None:
        self._set_common(name, order, title, reference, source)
        src = self.source
        if grid not in GRIDS:
            raise self.error("unknown grid", key="grid", value=grid, valid=f"one of {list(GRIDS)}")
        if time not in TIME:
            raise self.error(
                "unknown time dependence", key="time", value=time, valid=f"one of {list(TIME)}"
            )
        if not isinstance(adjoint, bool):
            raise self.error("adjoint must be true or false", key="adjoint", value=adjoint)
        start = parse_number(t0, "t0", src).value
        end = parse_number(t1, "t1", src).value
        for key, raw, number in (("t0", t0, start), ("t1", t1, end)):
            if number.free_symbols:
                raise self.error(f"{key} must be a number", key=key, value=raw)
        if not bool(end > start):
            raise self.error(
                "the time interval must have t1 > t0",
                key="t1",
                value=t1,
                valid=f"a number greater than t0 = {start}",
            )
        delta_value = _positive(delta, "delta", src)
        tableau: ButcherTableau | None
        if isinstance(method, ButcherTableau):
            tableau, method_name, adaptive = method, method.name, False
        elif isinstance(method, str) and method in ADAPTIVE:
            tableau, method_name, adaptive = None, method, True
        elif isinstance(method, str):
            from .files import catalog  # files.py builds these: a late import breaks the cycle

            found = catalog.get(method)
            if not isinstance(found, ButcherTableau):
                raise self.error(
                    f"unknown solver '{method}'",
                    key="method",
                    value=method,
                    valid="an explicit Runge-Kutta method of the catalog (e.g. 'rk4', 'midpoint')"
                    f" or an adaptive torchdiffeq method: {', '.join(ADAPTIVE)}",
                )
            tableau, method_name, adaptive = found, method, False
        else:
            raise self.error(
                "method must be a name or a ButcherTableau", key="method", value=method
            )
        if tableau is not None and not tableau.is_explicit:
            raise self.error(
                f"fixed-step solver '{tableau.name}' is implicit",
                key="method",
                value=method_name,
                valid="an explicit tableau, or an adaptive method for stiff dynamics",
            )
        if tableau is not None and tableau.symbols:
            raise self.error(
                "the solver's tableau has free symbols",
                key="method",
                value=method_name,
                valid="substitute the family's parameters first",
            )
        if adaptive:
            for key, value in (("steps", steps), ("step_size", step_size)):
                if value is not None:
                    raise self.error(
                        f"{key} applies to fixed-step methods; '{method_name}' is adaptive",
                        key=key,
                        value=value,
                        valid="use rtol/atol/max_num_steps, or a fixed-step method",
                    )
            rtol_v: float | None = float(_positive(1e-5 if rtol is None else rtol, "rtol", src))
            atol_v: float | None = float(_positive(1e-7 if atol is None else atol, "atol", src))
            budget: int | None = _positive(
                1000 if max_num_steps is None else max_num_steps, "max_num_steps", src, integer=True
            )
            step_count, size = None, None
        else:
            for key, value in (("rtol", rtol), ("atol", atol), ("max_num_steps", max_num_steps)):
                if value is not None:
                    raise self.error(
                        f"{key} applies to adaptive methods; '{method_name}' takes fixed steps",
                        key=key,
                        value=value,
                        valid=f"use steps or step_size, or one of {', '.join(ADAPTIVE)}",
                    )
            if steps is not None and step_size is not None:
                raise self.error(
                    "steps and step_size cancel each other: give one",
                    key="step_size",
                    value=step_size,
                    valid="either steps (a count) or step_size (a length)",
                )
            step_count = _positive(steps, "steps", src, integer=True) if steps is not None else None
            size = _positive(step_size, "step_size", src) if step_size is not None else None
            if step_count is None and size is None:
                step_count = 1
            rtol_v, atol_v, budget = None, None, None
        for key, number in (("t0", start), ("t1", end), ("delta", delta_value)):
            if not math.isfinite(float(number)):
                raise self.error(f"{key} must be finite", key=key, value=number)
        self._set(
            method=method_name,
            tableau=tableau,
            adaptive=adaptive,
            grid=grid,
            t0=start,
            t1=end,
            delta=delta_value,
            steps=step_count,
            step_size=size,
            rtol=rtol_v,
            atol=atol_v,
            max_num_steps=budget,
            adjoint=adjoint,
            time=time,
        )
        self._set(
            _table={
                "method": method_name if tableau is None else tableau.to_table(),
                "grid": grid,
                "t0": parse_number(t0, "t0", src).raw,
                "t1": parse_number(t1, "t1", src).raw,
                "delta": parse_number(delta, "delta", src).raw,
                "steps": steps,
                "step_size": None if step_size is None else parse_number(step_size, "", src).raw,
                "rtol": rtol,
                "atol": atol,
                "max_num_steps": max_num_steps,
                "adjoint": adjoint,
                "time": time,
            }
        )

    @property
    def position_flow(self) -> ContinuousDynamics | None:
        return self if self.grid == "positions" else None

    @property
    def layer(self) -> Layer:
        if self.grid == "positions":
            return Layer(
                False,
                "not compiled as a block: position dynamics (grid = 'positions') are a position "
                "encoder; use position = 'floater' in a recipe's [embedding]",
                key="grid",
                valid="use it as position = 'floater' in a recipe's [embedding], or declare "
                "grid = 'interval' for a continuous-depth block",
            )
        if self.adaptive:
            return Layer(
                True,
                f"bf.compile: a continuous-depth block, one field called wherever {self.method} "
                "steps (a data-dependent count); no incremental decoding",
            )
        return Layer(
            True,
            "bf.compile: a continuous-depth block, one field called at every stage of "
            "every fixed step, each call with its own decoding-cache slot",
        )

    def solver_tableau(self) -> ButcherTableau:
        """The tableau whose order is the solver's order (adaptive methods map to the catalog)."""
        if self.tableau is not None:
            return self.tableau
        from .files import catalog  # files.py builds these: a late import breaks the cycle

        found = catalog.get(ADAPTIVE[self.method])
        if not isinstance(found, ButcherTableau):
            raise DeclarationError(
                f"the catalog lacks '{ADAPTIVE[self.method]}', the tableau of {self.method}",
                key="method",
                value=self.method,
                source=self.source,
            )
        return found
