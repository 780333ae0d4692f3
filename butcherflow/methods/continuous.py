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
from .base import Layer, Method, check_count, check_flag
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


def _positive(value: Any, key: str, source: str | None) -> Any:
    number = parse_number(value, key, source).value
    if number.free_symbols or not bool(number > 0):
        raise DeclarationError(
            f"{key} must be a positive number", key=key, value=value, source=source
        )
    return number


def _one_of(
    value: Any, choices: tuple[str, ...], key: str, problem: str, source: str | None
) -> str:
    if value not in choices:
        raise DeclarationError(
            problem, key=key, value=value, valid=f"one of {list(choices)}", source=source
        )
    return str(value)


def _times(t0: Any, t1: Any, delta: Any, source: str | None) -> dict[str, sympy.Expr]:
    """The interval [t0, t1] (t1 > t0) and the spacing of positions (positive), finite."""
    times = {key: parse_number(raw, key, source).value for key, raw in (("t0", t0), ("t1", t1))}
    for key, raw in (("t0", t0), ("t1", t1)):
        if times[key].free_symbols:
            raise DeclarationError(f"{key} must be a number", key=key, value=raw, source=source)
    if not bool(times["t1"] > times["t0"]):
        raise DeclarationError(
            "the time interval must have t1 > t0",
            key="t1",
            value=t1,
            valid=f"a number greater than t0 = {times['t0']}",
            source=source,
        )
    times["delta"] = _positive(delta, "delta", source)
    for key, number in times.items():
        if not math.isfinite(float(number)):
            raise DeclarationError(f"{key} must be finite", key=key, value=number, source=source)
    return times


def _solver(method: Any, source: str | None) -> tuple[ButcherTableau | None, str]:
    """The fixed-step tableau (None for an adaptive method) and the solver's name."""
    if isinstance(method, str) and method in ADAPTIVE:
        return None, method
    from .files import catalog  # files.py builds these: a late import breaks the cycle

    valid = "an explicit Runge-Kutta method of the catalog (e.g. 'rk4', 'midpoint') or an "
    valid += f"adaptive torchdiffeq method for stiff dynamics: {', '.join(ADAPTIVE)}"
    tableau: ButcherTableau = catalog.tableau(method, "solver", "method", source, valid)
    name = method if isinstance(method, str) else tableau.name
    if tableau.symbols:
        raise DeclarationError(
            "the solver's tableau has free symbols",
            key="method",
            value=name,
            valid="substitute the family's parameters first",
            source=source,
        )
    return tableau, name


# Per kind of solver (adaptive?): the options of the other kind, refused with these words.
_OTHER_KIND = {
    True: (
        ("steps", "step_size"),
        "fixed-step",
        "is adaptive",
        "use rtol/atol/max_num_steps, or a fixed-step method",
    ),
    False: (
        ("rtol", "atol", "max_num_steps"),
        "adaptive",
        "takes fixed steps",
        f"use steps or step_size, or one of {', '.join(ADAPTIVE)}",
    ),
}
_ADAPTIVE_DEFAULTS = {"rtol": 1e-5, "atol": 1e-7, "max_num_steps": 1000}  # torchdiffeq's


def _stepping(
    solver: str, adaptive: bool, given: dict[str, Any], source: str | None
) -> dict[str, Any]:
    """steps or step_size (fixed steps: at most one; one step by default), or rtol, atol and
    max_num_steps (adaptive, torchdiffeq's defaults); the other kind's options are refused."""
    keys, kind, what, valid = _OTHER_KIND[adaptive]
    for key in keys:
        if given[key] is not None:
            raise DeclarationError(
                f"{key} applies to {kind} methods; '{solver}' {what}",
                key=key,
                value=given[key],
                valid=valid,
                source=source,
            )
    found: dict[str, Any] = dict.fromkeys(("steps", "step_size", *_ADAPTIVE_DEFAULTS))
    if adaptive:
        for key, default in _ADAPTIVE_DEFAULTS.items():
            value = default if given[key] is None else given[key]
            count = key == "max_num_steps"
            found[key] = (check_count if count else _positive)(value, key, source)
        return found | {"rtol": float(found["rtol"]), "atol": float(found["atol"])}
    if given["steps"] is not None and given["step_size"] is not None:
        raise DeclarationError(
            "steps and step_size cancel each other: give one",
            key="step_size",
            value=given["step_size"],
            valid="either steps (a count) or step_size (a length)",
            source=source,
        )
    if given["step_size"] is not None:
        return found | {"step_size": _positive(given["step_size"], "step_size", source)}
    return found | {"steps": check_count(given["steps"], "steps", source) or 1}


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
    _given: dict[str, Any]  # the stepping options and times as given, for `to_table`

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
        given = {"t0": t0, "t1": t1, "delta": delta, "steps": steps, "step_size": step_size}
        given |= {"rtol": rtol, "atol": atol, "max_num_steps": max_num_steps}
        self._set(
            grid=_one_of(grid, GRIDS, "grid", "unknown grid", src),
            time=_one_of(time, TIME, "time", "unknown time dependence", src),
            adjoint=check_flag(adjoint, "adjoint", src),
            **_times(t0, t1, delta, src),
            _given=given,
        )
        tableau, solver = _solver(method, src)
        self._set(method=solver, tableau=tableau, adaptive=tableau is None)
        self._set(**_stepping(solver, tableau is None, given, src))

    def _declared(self) -> dict[str, Any]:
        given = dict(self._given)
        for key in ("t0", "t1", "delta", "step_size"):  # as the parser keeps them
            if given[key] is not None:
                given[key] = parse_number(given[key], key, self.source).raw
        method = self.method if self.tableau is None else self.tableau.to_table()
        return {
            "method": method,
            "grid": self.grid,
            **given,
            "adjoint": self.adjoint,
            "time": self.time,
        }

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
        if found is None or found.as_tableau is None:
            raise DeclarationError(
                f"the catalog lacks '{ADAPTIVE[self.method]}', the tableau of {self.method}",
                key="method",
                value=self.method,
                source=self.source,
            )
        return found.as_tableau
