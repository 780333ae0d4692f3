"""The depth method: the residual stream across a whole stack read as one declaration.

Each block l is a field of the stack, its increment K_l = block_l(Y_l) − v_l Y_l at its input
Y_l, v_l the block's own weight of its state as its reading found it (1 for a residual block
y + F(y), 0 for a branch whose output the model's code adds to the stream, as a stack of
sub-layers x = x + layer(x)). A probe run makes every block return v_l Y_l plus a random value
(so K_l is that value) and
records each block's input and the stream the read-out (the final norm, or the head) reads;
the model's own code between the blocks (embedding skips, U-net skips, DenseFormer averages)
is then read, per token, as Y_l = U_l x₀ + Σ_{j<l} A_lj K_j and out = V x₀ + Σ_j B_j K_j, with
x₀ the first block's input (`solve.fit`, the same least squares as a layer's). The rows
R_m = (U_m, A_m) (R_L = (V, B)) are then read as the smallest recurrence over layers that
generates them, tried in this order:

1. a k-step linear multistep method, k ≤ `MAX_STEPS`, the first k − 1 layers by forward Euler:
   y_{m+1} = Σᵢ aᵢ y_{m−i} + Σᵢ cᵢ K_{m−i} (a plain residual stack: Euler, k = 1);
2. one step with the embedding as a second value carried along (x₀ skips):
   y_{m+1} = a y_m + c K_m + d x₀, a `GeneralLinear` over (y, x₀);
3. else the stack as one step whose stages are its layers (`declare.declare`: a splitting, an
   additive Runge-Kutta method), or a general linear method over them (U-net skips,
   DenseFormer's weighted averages, scaled residuals): exact, but no recurrence that a deeper
   stack would repeat.

A stack whose blocks carry streams (hyper-connections) has its depth recurrence in its layers:
each block is a step of a general linear method over the streams, and the depth method is the
first block's declaration (the same at every layer when they agree).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, final

import numpy as np
import torch
from torch import Tensor, nn

from ...analysis import Report, check
from ...errors import ExtractionError
from ...methods import GeneralLinear, LinearMultistep, Method
from ..declare import close, declare, glm
from ..probe import Run, first_output, module_name, replace_output
from ..solve import entries, fit, fixed_tolerance, recognise
from .blocks import Blocks, hooks

MAX_STEPS = 4  # the longest history a depth recurrence is read with


@final
@dataclass(frozen=True)
class Depth:
    """The residual stream across the stack.

    - `method`: the depth method's declaration (`LinearMultistep`, `GeneralLinear`, ...).
    - `report`: `bf.check(method)` (zero-stability included).
    - `rows`: R, `(L + 1, 1 + L)`: the stack's coefficients the declaration generates (row m:
      block m's input over x₀ and the blocks' increments; row L: the read-out's input), or
      None for a stack of streams (its recurrence is its layers').
    - `notes`: how it was read.
    """

    method: Method
    report: Report
    rows: np.ndarray | None
    notes: tuple[str, ...]


def _number(x: float, scale: float, precision: float | None) -> Fraction | float:
    return recognise(float(x), scale, precision)


def unroll_multistep(a: Sequence[float], c: Sequence[float], layers: int) -> np.ndarray:
    """R of a k-step recurrence over `layers` layers, the first k − 1 by forward Euler."""
    k, width = len(a), 1 + layers
    R = np.zeros((layers + 1, width))
    R[0, 0] = 1.0
    eye = np.eye(width)
    for m in range(layers):
        if m < k - 1:
            R[m + 1] = R[m] + eye[1 + m]
        else:
            R[m + 1] = sum(a[i] * R[m - i] + c[i] * eye[1 + m - i] for i in range(k))
    return R


def _multistep(
    R: np.ndarray, precision: float | None, name: str
) -> tuple[Method, np.ndarray, int] | None:
    L = R.shape[0] - 1
    eye = np.eye(R.shape[1])
    for k in range(1, min(MAX_STEPS, L) + 1):
        if not all(close(R[m + 1], R[m] + eye[1 + m], precision) for m in range(k - 1)):
            continue
        rows = [
            np.stack([R[m - i] for i in range(k)] + [eye[1 + m - i] for i in range(k)], 1)
            for m in range(k - 1, L)
        ]
        system = np.concatenate(rows)
        target = np.concatenate([R[m + 1] for m in range(k - 1, L)])
        if np.linalg.matrix_rank(system) < 2 * k:
            continue
        solution, *_ = np.linalg.lstsq(system, target, rcond=None)
        scale = float(np.abs(solution).max())
        a = [_number(x, scale, precision) for x in solution[:k]]
        c = [_number(x, scale, precision) for x in solution[k:]]
        unrolled = unroll_multistep([float(x) for x in a], [float(x) for x in c], L)
        if not close(unrolled, R, precision):
            continue
        alpha = [-a[k - 1 - j] for j in range(k)] + [1]
        beta = [c[k - 1 - j] for j in range(k)] + [0]
        return LinearMultistep(alpha, beta, name=f"{name}-depth"), unrolled, k
    return None


def unroll_embedding_skip(a: float, c: float, d: float, layers: int) -> np.ndarray:
    """R of y_{m+1} = a y_m + c K_m + d x₀ over `layers` layers (y_0 = x₀)."""
    width = 1 + layers
    R = np.zeros((layers + 1, width))
    R[0, 0] = 1.0
    for m in range(layers):
        R[m + 1] = a * R[m]
        R[m + 1, 0] += d
        R[m + 1, 1 + m] += c
    return R


def _embedding_skip(
    R: np.ndarray, precision: float | None, name: str
) -> tuple[Method, np.ndarray] | None:
    L = R.shape[0] - 1
    eye = np.eye(R.shape[1])
    system = np.concatenate([np.stack([R[m], eye[1 + m], eye[0]], 1) for m in range(L)])
    target = np.concatenate([R[m + 1] for m in range(L)])
    if np.linalg.matrix_rank(system) < 3:
        return None
    solution, *_ = np.linalg.lstsq(system, target, rcond=None)
    scale = float(np.abs(solution).max())
    a, c, d = (_number(x, scale, precision) for x in solution)
    unrolled = unroll_embedding_skip(float(a), float(c), float(d), L)
    if not close(unrolled, R, precision):
        return None
    method = GeneralLinear([[0]], [[1, 0]], [[c], [0]], [[a, d], [0, 1]], name=f"{name}-depth")
    return method, unrolled


def read_rows(R: np.ndarray, precision: float | None, name: str) -> tuple[Method, np.ndarray, str]:
    """The depth declaration of the stack's rows R (see the module's docstring), the rows it
    generates, and a note on how it was read."""
    stack = _multistep(R, precision, name)
    if stack is not None:
        method, rows, k = stack
        start = f", the first {k - 1} forward Euler" if k > 1 else ""
        return method, rows, f"a {k}-step recurrence over the layers{start}"
    skip = _embedding_skip(R, precision, name)
    if skip is not None:
        return (*skip, "one step per layer with the embedding x₀ carried as a second value")
    L = R.shape[0] - 1
    U, A = R[:L, :1], R[:L, 1:]
    B, V = R[L:, 1:], R[L:, :1]
    labels = [f"layer{i}" for i in range(L)]
    note = (
        "no recurrence over the layers generates the stack (its skips pair layers, or weigh "
        "every earlier one): the whole stack as one step whose stages are its layers"
    )
    try:
        method = declare(U, A, B, V, labels, f"{name}-depth", precision).method
    except ExtractionError:
        method = glm(U, A, B, V, f"{name}-depth", precision)
        note += " (a general linear method: the report proves it with one field in every stage)"
    rows = np.array([[float(x) for x in row] for row in entries(R, precision)])
    return method, rows, note


def stack_run(
    model: nn.Module,
    blocks: Sequence[nn.Module],
    readout: nn.Module | None,
    call: Callable[[], Any],
    noise: Sequence[Tensor] | None,
    selves: Sequence[Tensor | float],
) -> Run:
    """One forward of the model recording each block's input and the read-out's input;
    with `noise`, block l returns `selves[l]` times its input plus `noise[l]` (its
    increment)."""
    run = Run()
    inputs: list[Tensor] = []

    def pre(index: int) -> Any:
        def hook(module: nn.Module, args: tuple) -> None:
            inputs.append(first_output(args, module_name(module)).detach().clone())

        return hook

    done = [False]  # the last block has run: the read-out's next call reads the stack's output

    def post(index: int) -> Any:
        def hook(module: nn.Module, args: tuple, out: Any) -> Any:
            done[0] = index == len(blocks) - 1
            y = inputs[index]
            value = first_output(out, module_name(module))
            v = selves[index]
            if noise is None:
                run.values.append((value - v * y).detach().clone())
                return None
            run.values.append(noise[index])
            return replace_output(out, (v * y + noise[index]).to(value.dtype))

        return hook

    last: list[Tensor] = []
    pairs: list[tuple[nn.Module, Any, Any]] = [(b, pre(i), post(i)) for i, b in enumerate(blocks)]

    def read_out(module: nn.Module, args: tuple) -> None:
        if done[0] and not last:  # a norm also called before the stack (nanochat) is skipped
            last.append(first_output(args, module_name(module)).detach().clone())

    if readout is not None:
        pairs.append((readout, read_out, None))
    with hooks(pairs, with_kwargs=False), torch.no_grad():
        out = call()
    run.stage_inputs = inputs
    run.labels = [f"layer{i}" for i in range(len(inputs))]
    run.output = last[0] if last else first_output(out, module_name(model))
    return run


def read_depth(
    model: nn.Module,
    blocks: Blocks,
    call: Callable[[], Any],
    runs: int,
    generator: torch.Generator,
    precision: float | None,
    selves: Sequence[Tensor | float],
) -> tuple[Depth, Run]:
    """The depth method of `model`'s stack (a float64 copy), called by `call()`; `selves`:
    each block's weight of its own state (`v_l`, per token or one number).

    **Returns:** the `Depth` and the reference run (the blocks' own increments), for `verify`.
    """
    who = module_name(model)
    readout = model.get_submodule(blocks.readout) if blocks.readout else None
    reference = stack_run(model, blocks.modules, readout, call, None, selves)
    if len(reference.stage_inputs) != len(blocks.modules):
        raise ExtractionError(f"{who}: the blocks a forward runs depend on the data")
    x0 = reference.stage_inputs[0]
    probes = []
    for _ in range(runs):
        noise = [
            torch.randn(y.shape, dtype=torch.float64, generator=generator)
            for y in reference.stage_inputs
        ]
        probe = stack_run(model, blocks.modules, readout, call, noise, selves)
        if len(probe.stage_inputs) != len(blocks.modules):
            raise ExtractionError(
                f"{who}: the blocks a forward runs change with their outputs (data-dependent "
                "control flow: early exit, routing between blocks); valid: a stack whose "
                "blocks run whatever they compute"
            )
        probes.append(probe)
    if reference.output.shape != x0.shape:
        raise ExtractionError(
            f"{who}: the stream the read-out {blocks.readout} reads has shape "
            f"{tuple(reference.output.shape)}, the first block's input {tuple(x0.shape)}; "
            "valid: a stack that keeps the stream's shape to its read-out"
        )
    found = fit(probes, [x0] * runs, None)
    bad = found.broken(precision)
    if bad is not None:
        where = f"block {bad}'s input" if bad < found.stages else "the read-out's input"
        raise ExtractionError(
            f"{who}: {where} ({blocks.names()[bad] if bad < found.stages else blocks.readout}) "
            "is not a linear combination of the first block's input and the blocks' "
            f"increments (relative residual {found.residual[bad]:.2g}): the model's code "
            "between its blocks is nonlinear in the stream (a norm or gate between blocks); "
            "valid: a stack whose blocks are joined by linear skips"
        )
    notes = []
    if found.spread() > fixed_tolerance(precision):
        notes.append(
            "the coefficients between the blocks vary per token: the declaration is the "
            "first token's"
        )
    R = np.concatenate(
        [
            np.concatenate([found.U[0], found.A[0]], axis=1),
            np.concatenate([found.V[0], found.B[0]], axis=1),
        ]
    )
    method, rows, note = read_rows(R, precision, who)
    report = check(method)
    return Depth(method, report, rows, (note, *notes)), reference


def depth_residual(depth: Depth, run: Run) -> float:
    """The round trip of the depth method: the largest relative difference between the blocks'
    inputs and the read-out's input of a forward and what the declaration's rows give from the
    first block's input and the blocks' own increments."""
    if depth.rows is None:
        return 0.0
    basis = [run.stage_inputs[0], *run.values]
    targets = [*run.stage_inputs, run.output]
    worst = 0.0
    for row, target in zip(depth.rows, targets, strict=True):
        combined = sum(float(c) * b for c, b in zip(row, basis, strict=True) if c != 0)
        scale = float(target.abs().max()) or 1.0
        worst = max(worst, float((combined - target).abs().max()) / scale)
    return worst


def streams_depth(methods: Sequence[Method]) -> Depth:
    """The depth method of a stack whose blocks carry streams: the first block's declaration
    (each block is a step of a general linear method over the streams)."""
    first = methods[0]

    def body(m: Method) -> dict[str, Any]:
        return {k: v for k, v in m.to_table().items() if k not in ("name", "title")}

    same = all(body(m) == body(first) for m in methods)
    note = "the blocks carry streams: each is one step of a general linear method over them, " + (
        "the same at every layer" if same else "the first layer's shown (they differ per layer)"
    )
    return Depth(first, check(first), None, (note,))
