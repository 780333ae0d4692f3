"""The compiled blocks of methods from outside the catalog compute those methods.

The outside methods are the ones typed in the proof tests (imported, not retyped):
Runge-Kutta tableaux of DiffEqDevTools, diffrax and NodePy (`test_external_tableaux`) in the
encodings a user pastes (exact, float64, 16-digit decimals), splittings from OrdinaryDiffEq.jl
and papers interleaved and alternating (`test_external_methods`, `test_alternating_splittings`),
NodePy's multistep methods (`test_external_methods`) and published general linear methods
(`test_published_glms`). Each is compiled in float64 around a plain module with a known vector
field, y -> y @ M or tanh(y @ M), and its output is compared with one step of the method
computed here by a plain numpy loop from the *published* values (h = 1, the blocks'
convention; a block's field is the whole h·f). A weight converted wrong, a term dropped or
steps taken out of order shows as a difference far above the 1e-12 that rounding allows.

Where cheap, the empirical order is measured too: a field shrunk by ε is a step of size ε.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
import sympy
import test_alternating_splittings as alt
import test_external_tableaux as rk
import test_published_glms as glms
import torch
from torch import nn

import butcherflow as bf
from butcherflow.methods.general_linear import GeneralLinear

try:  # NodePy (the `bench` extra) builds the multistep methods; the splittings live beside them
    import test_external_methods as ext
except pytest.skip.Exception:  # pragma: no cover - without NodePy
    ext = None

needs_nodepy = pytest.mark.skipif(ext is None, reason="NodePy (the bench extra) is not installed")
DOUBLE = torch.float64
SHAPE = (2, 3, 4)
D = SHAPE[-1]
RTOL = 1e-12

Vector = Callable[[np.ndarray], np.ndarray]


# -- fields: a module for the block, the same map in numpy for the reference ---------------------


class LinearField(nn.Module):
    """y -> ε y @ M (M a parameter, so the block reads d_model from it; ε is the step)."""

    def __init__(self, M: np.ndarray, eps: float = 1.0) -> None:
        super().__init__()
        self.M = nn.Parameter(torch.tensor(M, dtype=DOUBLE))
        self.eps = eps

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        return self.eps * (y @ self.M)


class TanhField(LinearField):
    """y -> ε tanh(y @ M)."""

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        return self.eps * torch.tanh(y @ self.M)


FIELDS: dict[str, tuple[type[LinearField], Callable[[np.ndarray], np.ndarray]]] = {
    "linear": (LinearField, lambda z: z),
    "tanh": (TanhField, np.tanh),
}


def matrix(seed: int, scale: float = 0.5) -> np.ndarray:
    return scale * np.random.default_rng(seed).standard_normal((D, D))


def field(kind: str, M: np.ndarray) -> tuple[nn.Module, Vector]:
    """The module and its numpy twin."""
    module, activation = FIELDS[kind]
    return module(M), lambda y: activation(y @ M)


def state(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(100 + seed).standard_normal(SHAPE)


def run(block: nn.Module, y: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        out: torch.Tensor = block(torch.tensor(y, dtype=DOUBLE))
    assert out.dtype == DOUBLE
    return out.numpy()


def assert_same(got: np.ndarray, want: np.ndarray, rtol: float = RTOL) -> None:
    scale = float(np.abs(want).max())
    error = float(np.abs(got - want).max())
    assert error <= rtol * scale, f"block differs from the reference by {error:.3g} (scale {scale})"


def value(x: Any) -> float:
    """A published entry (string, int, Fraction, float) as the float64 nearest its value."""
    if isinstance(x, float):
        return x
    return float(sympy.N(sympy.sympify(x, rational=True), 40))


# -- Runge-Kutta: the reference step ------------------------------------------------------------


def rk_step(A: np.ndarray, b: np.ndarray, f: Vector, y: np.ndarray) -> np.ndarray:
    """One explicit step, h = 1: kᵢ = f(y + Σⱼ aᵢⱼ kⱼ), y + Σ bᵢ kᵢ."""
    k: list[np.ndarray] = []
    for i in range(len(b)):
        k.append(f(y + sum((A[i, j] * k[j] for j in range(i)), np.zeros_like(y))))
    return y + sum(b[i] * k[i] for i in range(len(b)))


def implicit_step(
    A: np.ndarray, b: np.ndarray, f: Vector, y: np.ndarray, sweeps: int
) -> np.ndarray:
    """One implicit step by `sweeps` fixed-point sweeps, as the compiler documents them: a
    diagonally implicit tableau stage by stage (kᵢ⁽⁰⁾ from the earlier stages, then `sweeps`
    corrections where aᵢᵢ ≠ 0); a fully implicit one by Jacobi sweeps from kᵢ⁽⁰⁾ = f(y)."""
    s = len(b)
    if not np.triu(A, 1).any():
        k: list[np.ndarray] = []
        for i in range(s):
            explicit = y + sum((A[i, j] * k[j] for j in range(i)), np.zeros_like(y))
            k.append(f(explicit))
            for _ in range(sweeps if A[i, i] != 0 else 0):
                k[i] = f(explicit + A[i, i] * k[i])
    else:
        k = [f(y)] * s
        for _ in range(sweeps):
            k = [f(y + sum(A[i, j] * k[j] for j in range(s))) for i in range(s)]
    return y + sum(b[i] * k[i] for i in range(s))


def published(method: rk.Published) -> tuple[np.ndarray, np.ndarray]:
    return (
        np.array([[value(x) for x in row] for row in method.A]),
        np.array([value(x) for x in method.b]),
    )


EXPLICIT = [m for m in rk.EXTERNAL if not np.triu(published(m)[0]).any()]
IMPLICIT = [m for m in rk.EXTERNAL if np.triu(published(m)[0]).any()]
RK_ENCODINGS = ["exact", "float64", "decimal-16"]


@pytest.mark.parametrize("kind", FIELDS)
@pytest.mark.parametrize("encoding", RK_ENCODINGS)
@pytest.mark.parametrize("method", EXPLICIT, ids=lambda m: m.name)
def test_explicit_tableau_blocks_compute_the_published_step(
    method: rk.Published, encoding: str, kind: str
) -> None:
    module, f = field(kind, matrix(1))
    block = bf.compile(rk.encode(method, encoding), field=module)
    y = state()
    assert_same(run(block, y), rk_step(*published(method), f, y))


@pytest.mark.parametrize("sweeps", [1, 3])
@pytest.mark.parametrize("encoding", RK_ENCODINGS)
@pytest.mark.parametrize("method", IMPLICIT, ids=lambda m: m.name)
def test_implicit_tableau_blocks_are_the_fixed_point_sweeps(
    method: rk.Published, encoding: str, sweeps: int
) -> None:
    module, f = field("tanh", matrix(2, 0.3))
    block = bf.compile(rk.encode(method, encoding), field=module, iterations=sweeps)
    y = state(1)
    assert_same(run(block, y), implicit_step(*published(method), f, y, sweeps))


def local_error_slope(
    step: Callable[[float], np.ndarray], exact: Callable[[float], np.ndarray]
) -> float:
    """log2 of the ratio of local errors at ε = 0.1 and 0.05 (order + 1 for a one-step map)."""
    errors = [float(np.abs(step(eps) - exact(eps)).max()) for eps in (0.1, 0.05)]
    return math.log2(errors[0] / errors[1])


def flow(f: Vector, y: np.ndarray, t: float, n: int = 64) -> np.ndarray:
    """The exact flow of y' = f(y) over t, by n steps of classical RK4 (error ~ (t/n)⁴ t)."""
    h = t / n
    for _ in range(n):
        k1 = f(y)
        k2 = f(y + h / 2 * k1)
        k3 = f(y + h / 2 * k2)
        k4 = f(y + h * k3)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return y


@pytest.mark.parametrize("method", EXPLICIT, ids=lambda m: m.name)
def test_explicit_blocks_have_the_published_order_on_a_nonlinear_field(
    method: rk.Published,
) -> None:
    M, y = matrix(3), state(2)
    tableau = rk.encode(method, "exact")

    def step(eps: float) -> np.ndarray:
        return run(bf.compile(tableau, field=TanhField(M, eps)), y)

    slope = local_error_slope(step, lambda eps: flow(lambda z: np.tanh(z @ M), y, eps))
    assert abs(slope - (method.order + 1)) < 0.5, slope


# -- splittings: a field per operator, one sub-step per step ------------------------------------


def splitting_step(
    steps: Sequence[tuple[str, Any]],
    substep: tuple[np.ndarray, np.ndarray],
    fields: dict[str, Vector],
    y: np.ndarray,
) -> np.ndarray:
    """Each step (op, c) advances y by one sub-step of c·f_op, in the order given."""
    A, b = substep
    for op, c in steps:
        scale, f = value(c), fields[op]
        y = rk_step(A, b, lambda z, f=f, scale=scale: scale * f(z), y)
    return y


def interleave(lists: dict[str, list[Any]]) -> list[tuple[str, Any]]:
    """One list per operator, applied in turn in the order given; a zero step is the identity,
    so it is kept here (the declaration leaves exact zeros out)."""
    width = max(len(xs) for xs in lists.values())
    return [(op, xs[i]) for i in range(width) for op, xs in lists.items() if i < len(xs)]


EULER = (np.zeros((1, 1)), np.ones(1))
SUBSTEPS: dict[str, tuple[Any, tuple[np.ndarray, np.ndarray]]] = {
    "euler": ("euler", EULER),
    # an outside tableau as the sub-step: Lawson's fifth-order method, exact entries
    "lawson-5": (rk.encode(rk.EXTERNAL[1], "exact"), published(rk.EXTERNAL[1])),
}


def check_splitting(method: bf.Splitting, steps: Sequence[tuple[str, Any]], sub: str) -> None:
    ops = sorted({op for op, _ in steps})
    pairs = {op: field("tanh", matrix(10 + n, 0.4)) for n, op in enumerate(ops)}
    block = bf.compile(method, fields={op: m for op, (m, _) in pairs.items()})
    y = state(3)
    fields = {op: f for op, (_, f) in pairs.items()}
    assert_same(run(block, y), splitting_step(steps, SUBSTEPS[sub][1], fields, y))


ALTERNATING = {
    "ruth-3": {"A": alt.RUTH_C, "B": alt.RUTH_D},
    "forest-ruth-4": {"A": alt.FOREST_RUTH_C, "B": alt.FOREST_RUTH_D},
    "calvo-sanz-4": {"B": alt.CALVO_SANZ_4_B, "A": alt.CALVO_SANZ_4_A},
    "mcate-4": {"B": alt.MCATE_4_B, "A": alt.MCATE_4_A},
    "candy-rozmus-4": {"B": alt.CANDY_ROZ_4_B, "A": alt.CANDY_ROZ_4_A},
}


@pytest.mark.parametrize("sub", SUBSTEPS)
@pytest.mark.parametrize("name", ALTERNATING)
def test_alternating_splitting_blocks_apply_the_lists_in_turn(name: str, sub: str) -> None:
    lists = ALTERNATING[name]
    method = bf.Splitting(alternating=lists, substep=SUBSTEPS[sub][0])
    check_splitting(method, interleave(lists), sub)


@needs_nodepy
@pytest.mark.parametrize("sub", SUBSTEPS)
@pytest.mark.parametrize("name", [] if ext is None else list(ext.SPLITTINGS))
def test_published_splitting_blocks_compute_their_steps(name: str, sub: str) -> None:
    steps, _ = ext.SPLITTINGS[name]
    check_splitting(bf.Splitting(steps, substep=SUBSTEPS[sub][0]), steps, sub)


@needs_nodepy
@pytest.mark.parametrize("name", [] if ext is None else list(ext.KICK_DRIFT))
def test_library_lists_compile_alternating_with_the_drift_first(name: str) -> None:
    (a, b), _ = ext.KICK_DRIFT[name]
    method = bf.Splitting(alternating={"B": b, "A": a}, substep="euler")
    check_splitting(method, interleave({"B": b, "A": a}), "euler")


@needs_nodepy
@pytest.mark.parametrize("how", ["exact", "float"])
@pytest.mark.parametrize("name", ["forest-ruth-4", "ruth-3", "mcate-4"])
def test_splitting_blocks_have_the_published_order_with_exact_flows(name: str, how: str) -> None:
    """A linear field per operator, with Lawson's fifth-order sub-step standing in for the exact
    sub-flows: the local error of the composition against exp(ε(M_A + M_B))."""
    steps, order = ext.SPLITTINGS[name]
    if how == "float":
        steps = [(op, value(c)) for op, c in steps]
    method = bf.Splitting(steps, substep=SUBSTEPS["lawson-5"][0])
    M = {"A": matrix(20, 0.6), "B": matrix(21, 0.6)}
    y = state(4)

    def step(eps: float) -> np.ndarray:
        fields = {op: LinearField(m, eps) for op, m in M.items()}
        return run(bf.compile(method, fields=fields), y)

    def exact(eps: float) -> np.ndarray:
        return flow(lambda z: z @ (M["A"] + M["B"]), y, eps)

    slope = local_error_slope(step, exact)
    assert abs(slope - (order + 1)) < 0.5, slope


# -- multistep stacks: layer m has its own field; the first k − 1 layers are Euler steps ---------


def multistep_stack(
    alpha: Sequence[float], beta: Sequence[float], fields: Sequence[Vector], y: np.ndarray
) -> np.ndarray:
    """Σⱼ αⱼ y_{n+j} = Σⱼ βⱼ f_{n+j} with fₘ = Fₘ(yₘ), h = 1, started by forward Euler."""
    k = len(alpha) - 1
    states, f = [y], []
    for m, F in enumerate(fields):
        f.append(F(states[m]))
        if m + 1 < k:
            states.append(states[m] + f[m])
            continue
        n = m + 1 - k
        total = sum(-alpha[j] * states[n + j] + beta[j] * f[n + j] for j in range(k))
        states.append(total / alpha[k])
    return states[-1]


EXPLICIT_MULTISTEP = (
    [] if ext is None else [name for name in ext.NODEPY if ext.coefficients(name)[1][-1] == 0]
)


@needs_nodepy
@pytest.mark.parametrize("how", ["exact", "float", "dec16"])
@pytest.mark.parametrize("name", EXPLICIT_MULTISTEP)
def test_explicit_multistep_stacks_compute_the_recursion(name: str, how: str) -> None:
    alpha, beta = ext.coefficients(name)
    layers = len(alpha) + 3
    pairs = [field("tanh", matrix(30 + m, 0.4)) for m in range(layers)]
    method = bf.LinearMultistep(ext.encode(alpha, how), ext.encode(beta, how), name=name)
    stack = bf.compile_stack(method, fields=[module for module, _ in pairs])
    y = state(5)
    want = multistep_stack(
        [float(a) for a in alpha], [float(b) for b in beta], [f for _, f in pairs], y
    )
    assert_same(run(stack, y), want)


@needs_nodepy
@pytest.mark.parametrize("name", ["adams-bashforth-2", "adams-bashforth-3", "adams-bashforth-4"])
def test_multistep_stacks_converge_at_the_published_order(name: str) -> None:
    """Started by RK4 layers, L layers of the linear field (T/L)·M over T = 1: the global error
    against exp(M) falls as L^-p."""
    alpha, beta = ext.coefficients(name)
    method = bf.LinearMultistep(ext.encode(alpha, "exact"), ext.encode(beta, "exact"))
    M, y = matrix(40), state(6)
    exact = flow(lambda z: z @ M, y, 1.0, n=256)
    errors = []
    for layers in (16, 32):
        fields = [LinearField(M, 1 / layers) for _ in range(layers)]
        stack = bf.compile_stack(method, fields=fields, starter="rk4")
        errors.append(float(np.abs(run(stack, y) - exact).max()))
    assert abs(math.log2(errors[0] / errors[1]) - ext.ORDER[name]) < 0.3, errors


# -- general linear stacks: r streams, read in as u ⊗ x, read out from the y(x) streams --------


def glm_stack(method: GeneralLinear, fields: Sequence[Vector], x: np.ndarray) -> np.ndarray:
    """The GLM recursion, h = 1, with u the coefficients of y(x) in the stated starting values
    (their h → 0 limit) and the output the mean of the streams started exactly at y(x)."""
    A, U, B, V = (
        np.array([[float(e) for e in row] for row in m])
        for m in (method.A, method.U, method.B, method.V)
    )
    h, t = sympy.symbols("h x")
    yf, ff = sympy.Function("y"), sympy.Function("f")
    starts = [
        sympy.sympify(s, locals={"y": yf, "f": ff, "h": h, "x": t}) for s in method.start_text()
    ]
    u = [float(sympy.expand(s.subs(h, 0)).coeff(yf(t))) for s in starts]
    streams = [c * x for c in u]
    for F in fields:
        stages: list[np.ndarray] = []
        for i in range(method.stages):
            Y = sum(U[i, k] * streams[k] for k in range(method.values))
            stages.append(F(Y + sum((A[i, j] * stages[j] for j in range(i)), np.zeros_like(x))))
        streams = [
            sum(V[q, k] * streams[k] for k in range(method.values))
            + sum(B[q, i] * stages[i] for i in range(method.stages))
            for q in range(method.values)
        ]
    plain = [s == yf(t) for s in starts]
    return sum(s for s, p in zip(streams, plain, strict=True) if p) / sum(plain)


GLMS: dict[str, Callable[[], GeneralLinear]] = {
    **{
        f"ab{ps}-am{p}-{m}-{'pece' if final else 'pec'}": (
            lambda ps=ps, p=p, m=m, final=final: glms.predictor_corrector(ps, p, m, final)
        )
        for ps, p, m, final in glms.CASES
    },
    "tsrk-3-c1": lambda: glms.tsrk(*glms.jackiewicz_tracogna_3(sympy.Integer(1), sympy.Integer(0))),
    "dimsim-2": lambda: GeneralLinear(**glms.DIMSIM, start=["y(x)", "y(x - h)"]),
    "dimsim-2-by-f": lambda: GeneralLinear(
        **glms.DIMSIM, start=["y(x)", "y(x) - 1/2*h*f(x) - 1/2*h*f(x - h)"]
    ),
}


@functools.cache
def glm(name: str) -> GeneralLinear:
    return GLMS[name]()


@pytest.mark.parametrize("digits", [None, 16])
@pytest.mark.parametrize("name", GLMS)
def test_general_linear_stacks_compute_the_recursion(name: str, digits: int | None) -> None:
    method = glm(name)
    encoded = method if digits is None else glms.as_decimals(method, digits)
    pairs = [field("tanh", matrix(50 + m, 0.4)) for m in range(4)]
    stack = bf.compile_stack(encoded, fields=[module for module, _ in pairs])
    x = state(7)
    assert_same(run(stack, x), glm_stack(method, [f for _, f in pairs], x))


# -- the other outside tables of the proof tests: long fractions, floats as printed -------------


def test_kencarp4_explicit_fractions_compile_to_their_values() -> None:
    """diffrax's ARK4(3)6L explicit half: 13-digit numerators and denominators."""
    module, f = field("tanh", matrix(60))
    block = bf.compile(bf.ButcherTableau(rk.KENCARP4_EXPLICIT, rk.KENCARP4_B), field=module)
    A = np.array([[value(x) for x in row] for row in rk.KENCARP4_EXPLICIT])
    y = state(8)
    assert_same(run(block, y), rk_step(A, np.array([value(x) for x in rk.KENCARP4_B]), f, y))


@pytest.mark.parametrize("entry", [float, repr], ids=["float64", "printed"])
def test_kvaerno_5_esdirk_compiles_to_its_sweeps(entry: Callable[[float], Any]) -> None:
    """diffrax's Kværnø 5(4) as its float64 literals and as the decimals they print as."""
    tableau = rk.kvaerno_5(entry)
    A = np.zeros((7, 7))  # from the published rows (a printed float reads back as itself)
    for i, row in enumerate(rk.KVAERNO_5_ROWS, start=1):
        A[i, : len(row)] = row
    module, f = field("tanh", matrix(61, 0.3))
    block = bf.compile(tableau, field=module, iterations=2)
    y = state(9)
    assert_same(run(block, y), implicit_step(A, A[6], f, y, 2))
