"""The ODE solver runtime of continuous dynamics (neural-ODE blocks and FLOATER positions).

Fixed-step declarations run butcherflow's explicit Runge-Kutta loop for the declared catalog
tableau (`fixed_steps`); adaptive declarations run torchdiffeq's own methods (`dopri5`, ...)
through its public `odeint`. With `adjoint = true`, the gradient comes from the adjoint ODE,
integrated backwards by the same solver (`adjoint.py`), so every explicit catalog tableau has an
adjoint, not only torchdiffeq's five, and an exceeded `max_num_steps` in the backward solve is a
`ButcherflowError` like the forward solve's. Nothing is registered in torchdiffeq's tables.

The fixed-step grid always contains every requested output time (`steps` sub-steps between two
consecutive times, or as many equal sub-steps as keep each one at most `step_size` long), so no
output is interpolated: the global error is the tableau's, C·hᵖ. The field sees t in the state's
dtype (as torchdiffeq gives it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, final

import sympy
import torch
from torch import Tensor, nn
from torchdiffeq import odeint

from ..errors import ButcherflowError, DeclarationError
from .adjoint import adjoint_solve

if TYPE_CHECKING:  # nn stays a leaf at run time: declarations are read through attributes
    from ..methods import ButcherTableau, ContinuousDynamics

Field = Callable[[Tensor, Tensor], Tensor]  # f(t, y) -> dy/dt


class Integrator(Protocol):
    """`integrate(f, y0, times, norm) -> (len(times), *y0.shape)`: y at every time (increasing or
    decreasing), `norm` the error norm of adaptive methods (None: torchdiffeq's default)."""

    def __call__(
        self, f: Field, y0: Tensor, times: Tensor, norm: Callable[[Tensor], Tensor] | None = None
    ) -> Tensor: ...


@final
class _Coefficients:
    """A tableau's coefficients as float64 CPU tensors, and the stages that reach the output.

    Always on the CPU, whatever the default device (a model built under `torch.device("meta")`
    prepares them too, and they are cached per tableau): a solve moves them to its state's."""

    def __init__(self, tableau: ButcherTableau) -> None:
        s = tableau.stages

        def cpu(values: list[Any]) -> Tensor:
            return torch.tensor(values, dtype=torch.float64, device="cpu")

        self.A = cpu([[_float(x) for x in row] for row in tableau.A]).reshape(s, s)
        self.b = cpu([_float(x) for x in tableau.b])
        self.c = cpu([_float(x) for x in tableau.c])
        # stage i reads stage j < i where A[i][j] != 0; stages nobody weighs are never computed
        self.reads = [[j for j in range(i) if self.A[i, j] != 0.0] for i in range(s)]
        needed: set[int] = set()
        todo = [i for i in range(s) if self.b[i] != 0.0]
        while todo:
            i = todo.pop()
            if i not in needed:
                needed.add(i)
                todo.extend(self.reads[i])
        self.stages = sorted(needed)
        self.weighted = [i for i in self.stages if self.b[i] != 0.0]


def _float(value: sympy.Expr) -> float:
    return float(sympy.N(value, 30))


# Keyed by id (the entry keeps its tableau alive, so the id is never reused): hashing a tableau
# hashes its sympy entries, which torch.compile cannot trace (nor functools.lru_cache).
_COEFFICIENTS: dict[int, tuple[ButcherTableau, _Coefficients]] = {}


def coefficients(tableau: ButcherTableau) -> _Coefficients:
    """The float64 coefficients of an explicit tableau (computed once per tableau object)."""
    found = _COEFFICIENTS.get(id(tableau))
    if found is None or found[0] is not tableau:
        found = _COEFFICIENTS[id(tableau)] = (tableau, _Coefficients(tableau))
    return found[1]


def prepare(dynamics: ContinuousDynamics) -> None:
    """Compute now what a solve of `dynamics` reads (a fixed-step tableau's coefficients), so that
    `torch.compile` tracing a forward finds them cached instead of running sympy. Modules that
    solve call it when they are built."""
    if dynamics.tableau is not None:
        coefficients(dynamics.tableau)


def substeps(gaps: Tensor, steps: int | None, step_size: float | None) -> list[int]:
    """Sub-steps per gap between output times: `steps` each, or ⌈gap / step_size⌉ each (a
    relative slack of 1e-12 keeps a gap of exactly k steps at k despite rounding)."""
    if steps is not None:
        return [steps] * int(gaps.numel())
    assert step_size is not None
    ratios = gaps.detach().to("cpu", torch.float64) / step_size
    return [max(1, math.ceil(r * (1.0 - 1e-12))) for r in ratios.tolist()]


def fixed_steps(
    f: Field,
    y0: Tensor,
    times: Tensor,
    *,
    tableau: ButcherTableau,
    steps: int | None = None,
    max_step: float | None = None,
) -> Tensor:
    """y at every time of `times` by the explicit Runge-Kutta method `tableau`, with sub-steps on
    a grid that holds every time exactly (`times` increasing, or decreasing to integrate back).

    **Arguments:**

    - `f`: `f(t, y) -> dy/dt`; `t` is 0-dim, in y's dtype.
    - `y0`: the state at `times[0]`, any shape.
    - `times`: 1-D, strictly monotonic.
    - `tableau`: an explicit `ButcherTableau` without free symbols.
    - `steps`: sub-steps between consecutive times, or
    - `max_step`: the longest sub-step (the declaration's `step_size`).

    **Returns:** `(len(times), *y0.shape)`, `y0` first.
    """
    n = coefficients(tableau)
    a, b = n.A.to(y0).unbind(0), n.b.to(y0)  # 0-dim coefficient tensors: no host sync
    c = n.c.to(times)
    counts = substeps((times[1:] - times[:-1]).abs(), steps, max_step)
    outputs, y = [y0], y0
    for j, count in enumerate(counts):
        start, gap = times[j], times[j + 1] - times[j]
        for m in range(count):
            t0 = start + gap * (m / count)
            t1 = times[j + 1] if m == count - 1 else start + gap * ((m + 1) / count)
            dt = (t1 - t0).to(y0)
            k: dict[int, Tensor] = {}
            for i in n.stages:  # Kᵢ = f(t0 + cᵢ·dt, y + dt·Σⱼ aᵢⱼKⱼ)
                stage = y
                if n.reads[i]:
                    stage = y + dt * sum_terms([(a[i][j], k[j]) for j in n.reads[i]])
                k[i] = f((t0 + c[i] * (t1 - t0)).to(y0.dtype), stage)
            y = y + dt * sum_terms([(b[i], k[i]) for i in n.weighted])
        outputs.append(y)
    return torch.stack(outputs)


def sum_terms(terms: Sequence[tuple[Tensor, Tensor]]) -> Tensor:
    """Σ cᵢ·kᵢ for 0-dim coefficient tensors cᵢ."""
    total = terms[0][0] * terms[0][1]
    for c, k in terms[1:]:
        total = total + c * k
    return total


def field_calls_per_step(tableau: ButcherTableau) -> int:
    """Field evaluations of one fixed step: the stages that reach the output."""
    return len(coefficients(tableau).stages)


def check_times(times: Tensor, key: str = "times", source: str | None = None) -> None:
    """Refuse time grids torchdiffeq would choke on, with an error naming `key`: fewer than two
    points, not 1-D, not floating, non-finite or not strictly increasing."""
    if not isinstance(times, Tensor) or times.dim() != 1 or not times.is_floating_point():
        shape = tuple(times.shape) if isinstance(times, Tensor) else type(times).__name__
        raise DeclarationError(
            "the time grid must be a 1-D floating-point tensor",
            key=key,
            value=shape,
            valid="e.g. torch.tensor([0.0, 1.0], dtype=torch.float64)",
            source=source,
        )
    if times.numel() < 2:
        raise DeclarationError(
            "the time grid needs at least two points (the start and one output time)",
            key=key,
            value=times.tolist(),
            valid="a start time followed by later output times",
            source=source,
        )
    host = times.detach().to("cpu", torch.float64)
    if not bool(torch.isfinite(host).all()):
        raise DeclarationError(
            "the time grid is not finite (NaN or inf)",
            key=key,
            value=_preview(host),
            valid="finite times",
            source=source,
        )
    if not bool((host[1:] > host[:-1]).all()):
        bad = int(torch.nonzero(host[1:] <= host[:-1])[0, 0]) + 1
        raise DeclarationError(
            f"the time grid must be strictly increasing: times[{bad}] = {host[bad].item():g} "
            f"follows times[{bad - 1}] = {host[bad - 1].item():g}",
            key=key,
            value=_preview(host),
            valid="strictly increasing times (t[0] is the start)",
            source=source,
        )


def _preview(host: Tensor) -> list[float]:
    values: list[float] = host[:8].tolist()
    return values


def solve(
    func: Callable[[Tensor, Tensor], Tensor],
    y0: Tensor,
    times: Tensor,
    dynamics: ContinuousDynamics,
    *,
    adjoint_params: Sequence[Tensor] | None = None,
) -> Tensor:
    """Solve dy/dt = func(t, y), y(times[0]) = y0, as `dynamics` declares.

    Fixed-step declarations run `dynamics.tableau` with `dynamics.steps` sub-steps between
    consecutive times (or equal sub-steps of at most `dynamics.step_size`); adaptive ones run
    torchdiffeq's `dynamics.method` with `rtol`, `atol` and `max_num_steps` (torchdiffeq counts
    the budget between two consecutive output times). `dynamics.adjoint` backpropagates through
    the adjoint ODE, solved backwards by the same method (`adjoint.py`: memory constant in the
    number of steps; the field is re-evaluated backwards in time, so it must be deterministic:
    no dropout).

    **Arguments:**

    - `func`: `func(t, y) -> dy/dt`, the same shape as `y`; `t` is a 0-dim tensor in y's dtype.
    - `y0`: the initial state, any shape (e.g. `(batch, length, d_model)` or `(d_model,)`).
    - `times`: 1-D, finite, strictly increasing; `times[0]` is the start.
    - `dynamics`: the `ContinuousDynamics` declaration (its `grid` is the caller's business).
    - `adjoint_params`: with the adjoint, every tensor the gradient must reach besides `y0`
      (by default `func.parameters()`, which needs `func` to be an `nn.Module`).

    **Returns:** `(len(times), *y0.shape)`: y at every time, `y0` first.

    **Raises:** `DeclarationError` for a bad grid (naming `times`); `ButcherflowError` when an
    adaptive solver exceeds `max_num_steps` or the solution is not finite (with the adjoint, an
    exceeded `max_num_steps` of the backward solve is raised by `backward()`).
    """
    compiling = torch.compiler.is_compiling()
    if not compiling:  # a host sync; compiled callers pass grids they built themselves
        check_times(times, source=dynamics.source)
    if not y0.is_floating_point():
        raise DeclarationError("the initial state must be floating point", key="y0", value=y0.dtype)
    times = times.to(y0.device)
    params: tuple[Tensor, ...] | None = None
    if dynamics.adjoint:
        if adjoint_params is None:
            if not isinstance(func, nn.Module):
                raise DeclarationError(
                    "the adjoint needs to know which tensors the gradient must reach",
                    key="adjoint_params",
                    value=None,
                    valid="pass adjoint_params=[...] or make func an nn.Module",
                    source=dynamics.source,
                )
            adjoint_params = list(func.parameters())
        params = tuple(adjoint_params)

    def checked(t: Tensor, y: Tensor) -> Tensor:
        dy = func(t, y)
        if not isinstance(dy, Tensor) or dy.shape != y.shape:
            shape = getattr(dy, "shape", type(dy).__name__)
            raise ValueError(
                f"the ODE right-hand side returned {shape} for a state of shape "
                f"{tuple(y.shape)}; func(t, y) must return dy/dt of the state's shape"
            )
        return dy

    if params is not None:
        solution = adjoint_solve(
            integrator(dynamics), integrator(dynamics, backward=True), checked, y0, times, params
        )
    else:
        solution = integrator(dynamics)(checked, y0, times)
    if not torch.compiler.is_compiling() and not bool(torch.isfinite(solution).all()):
        raise ButcherflowError(
            f"{_where(dynamics)}the solution of the dynamics is not finite (NaN or inf) with "
            f"solver '{dynamics.method}': the state blew up; use smaller steps (steps or "
            "step_size), an adaptive method, or smaller weights"
        )
    out: Tensor = solution
    return out


def integrator(dynamics: ContinuousDynamics, *, backward: bool = False) -> Integrator:
    """The solver `dynamics` declares, as an `Integrator`: `fixed_steps` with its tableau, or
    torchdiffeq's adaptive `odeint` with its method, tolerances and `max_num_steps` (whose
    failures become `ButcherflowError`s naming the option; `backward`: in the adjoint solve)."""
    if not dynamics.adaptive:
        tableau = dynamics.tableau
        assert tableau is not None
        step = None if dynamics.step_size is None else _float(dynamics.step_size)

        def fixed(f: Field, y0: Tensor, times: Tensor, norm: Any = None) -> Tensor:
            return fixed_steps(f, y0, times, tableau=tableau, steps=dynamics.steps, max_step=step)

        return fixed

    def adaptive(f: Field, y0: Tensor, times: Tensor, norm: Any = None) -> Tensor:
        options: dict[str, Any] = {"max_num_steps": dynamics.max_num_steps}
        if norm is not None:
            options["norm"] = norm
        try:
            solution: Tensor = odeint(
                f,
                y0,
                times,
                rtol=dynamics.rtol,
                atol=dynamics.atol,
                method=dynamics.method,
                options=options,
            )
        except (AssertionError, RuntimeError) as error:
            known = _solver_error(error, dynamics, adjoint=backward)
            if known is None:
                raise
            raise known from error
        return solution

    return adaptive


def _where(dynamics: ContinuousDynamics) -> str:
    return f"{dynamics.source}: " if dynamics.source else ""


def _solver_error(
    error: Exception, dynamics: ContinuousDynamics, *, adjoint: bool = False
) -> ButcherflowError | None:
    """torchdiffeq's assertions, restated as butcherflow errors naming the option (`adjoint`:
    raised by the adjoint solve, backwards in time inside `backward()`)."""
    text = str(error)
    if "max_num_steps" in text and adjoint:
        return ButcherflowError(
            f"{_where(dynamics)}key 'max_num_steps': in the adjoint (backward) solve, the adaptive "
            f"solver '{dynamics.method}' needed more than max_num_steps = "
            f"{dynamics.max_num_steps} steps between two output times at rtol = "
            f"{dynamics.rtol:g}, atol = {dynamics.atol:g} (the forward solve fit; the adjoint "
            "system also carries the gradients and often needs more steps); raise max_num_steps, "
            "loosen rtol/atol, or set adjoint = false to backpropagate through the solver"
        )
    if "max_num_steps" in text:
        return ButcherflowError(
            f"{_where(dynamics)}key 'max_num_steps': the adaptive solver '{dynamics.method}' "
            f"needed more than max_num_steps = {dynamics.max_num_steps} steps between two output "
            f"times at rtol = {dynamics.rtol:g}, atol = {dynamics.atol:g}; raise max_num_steps "
            "or loosen rtol/atol (the dynamics may also be stiff or blowing up)"
        )
    during = " in the adjoint (backward) solve" if adjoint else ""
    if "underflow in dt" in text:
        return ButcherflowError(
            f"{_where(dynamics)}the adaptive solver '{dynamics.method}' shrank its step to "
            f"zero{during} (rtol = {dynamics.rtol:g}, atol = {dynamics.atol:g}): the dynamics "
            "are stiff or not finite; loosen rtol/atol or check the field"
        )
    if "non-finite" in text:
        return ButcherflowError(
            f"{_where(dynamics)}the state became non-finite (NaN or inf) while solver "
            f"'{dynamics.method}' integrated it{during}: the dynamics blew up"
        )
    return None
