"""The adjoint method: gradients of an ODE solve by solving another ODE backwards in time.

For y' = f(t, y; θ) solved from times[0] to times[-1], the adjoint a(t) = ∂L/∂y(t) obeys
a' = −aᵀ∂f/∂y, and ∂L/∂θ = ∫ aᵀ∂f/∂θ dt (Chen et al., 2018, "Neural Ordinary Differential
Equations", appendix B; torchdiffeq's `odeint_adjoint` does the same). The forward solve keeps no
graph; `backward` integrates the augmented state (y, a, ∂L/∂θ) from each output time to the one
before with the declared solver, starting y from the forward solution and adding the output's
gradient to a at every output time. Memory is constant in the number of steps.

Adaptive solvers control the backward step size with torchdiffeq's default adjoint norm: the
largest RMS norm of y, a and each parameter's gradient.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor
from torch.autograd.function import FunctionCtx, once_differentiable

Field = Callable[[Tensor, Tensor], Tensor]
Integrate = Callable[..., Tensor]  # (f, y0, times, norm) -> (len(times), *y0.shape)


def adjoint_solve(
    forward: Integrate,
    backward: Integrate,
    f: Field,
    y0: Tensor,
    times: Tensor,
    params: Sequence[Tensor],
) -> Tensor:
    """y at every time of `times`, differentiable in `y0` and `params` through the adjoint ODE.

    **Arguments:**

    - `forward`, `backward`: the solver (`ode.Integrator`) of the forward and of the adjoint
      solve (they differ only in how their errors are worded).
    - `f`: `f(t, y) -> dy/dt`; it must compute the same function when called again (no dropout).
    - `y0`: the initial state, any shape; `times`: 1-D, increasing.
    - `params`: every tensor besides `y0` that `f` depends on and the gradient must reach.

    **Returns:** `(len(times), *y0.shape)`.
    """
    solution: Tensor = _Adjoint.apply(forward, backward, f, y0, times, *params)
    return solution


class _Adjoint(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any,
        forward: Integrate,
        backward: Integrate,
        f: Field,
        y0: Tensor,
        times: Tensor,
        *params: Tensor,
    ) -> Tensor:
        with torch.no_grad():
            ys = forward(f, y0, times)
        ctx.solve_back, ctx.f = backward, f
        ctx.save_for_backward(times, ys, *params)
        return ys

    @staticmethod
    @once_differentiable
    def backward(ctx: FunctionCtx, grad_ys: Tensor) -> tuple[Tensor | None, ...]:
        times, ys, *params = ctx.saved_tensors  # type: ignore[attr-defined]
        shapes = [ys.shape[1:], ys.shape[1:], *(p.shape for p in params)]
        sizes = [s.numel() for s in shapes]
        f: Field = ctx.f  # type: ignore[attr-defined]

        def unflatten(state: Tensor) -> list[Tensor]:
            return [
                part.view(shape) for part, shape in zip(state.split(sizes), shapes, strict=True)
            ]

        def augmented(t: Tensor, state: Tensor) -> Tensor:
            y, a, *_ = unflatten(state)
            with torch.enable_grad():
                y = y.detach().requires_grad_(True)
                dy = f(t, y)
                vjps = torch.autograd.grad(dy, (y, *params), -a, allow_unused=True)
            wrt = (y, *params)
            parts = [dy.detach(), *(_or_zeros(v, x) for v, x in zip(vjps, wrt, strict=True))]
            return torch.cat([p.reshape(-1).to(state.dtype) for p in parts])

        def norm(state: Tensor) -> Tensor:
            return max(part.pow(2).mean().sqrt() for part in state.split(sizes) if part.numel())

        a = grad_ys[-1]
        grads = [torch.zeros(p.numel(), dtype=ys.dtype, device=ys.device) for p in params]
        for i in range(len(times) - 1, 0, -1):
            state = torch.cat([ys[i].reshape(-1), a.reshape(-1), *grads])
            back = times[i - 1 : i + 1].flip(0)  # from times[i] to times[i - 1]
            path = ctx.solve_back(augmented, state, back, norm)  # type: ignore[attr-defined]
            _, a, *rest = path[-1].split(sizes)
            a = a.view(ys.shape[1:]) + grad_ys[i - 1]
            grads = list(rest)
        out = [g.view(p.shape).to(p.dtype) for g, p in zip(grads, params, strict=True)]
        return (None, None, None, a, None, *out)


def _or_zeros(grad: Tensor | None, like: Tensor) -> Tensor:
    return torch.zeros_like(like) if grad is None else grad
