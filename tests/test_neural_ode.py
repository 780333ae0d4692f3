"""Continuous-depth blocks and the ODE solver runtime (`butcherflow.nn.ode.solve`).

- A linear field F(y) = yAᵀ: the block is exp(A) applied to y, to the solver's tolerance
  (fixed steps: C·hᵖ for every explicit catalog tableau; adaptive dopri5: rtol-scaled).
- The adjoint gradient equals backpropagation through the solver (fixed-step tableau, dopri5,
  and through the encoder memory of a cross-attending field).
- The empirical order of the fixed-step path on a non-autonomous field (t concatenated to the
  input of a module field) matches the proved order `bf.check(tableau).order`.
- Incremental decoding of a fixed-step decoder block equals its full causal forward; adaptive
  blocks refuse a cache and models say so (`supports_cache`).
- Bad input: time grids, declarations, unknown solvers, exceeded step budgets, blow-ups.

Everything numerical runs in float64.
"""

from __future__ import annotations

import math
import subprocess
import sys
from dataclasses import replace

import pytest
import torch
from catalog_sweep import sweep
from torch import Tensor, nn

import butcherflow as bf
from butcherflow.compiler.continuous import ContinuousBlock
from butcherflow.nn import DecodeCache
from butcherflow.nn.ode import solve

DOUBLE = torch.float64
SIZES: dict = {"d_model": 8, "n_heads": 2, "d_ffn": 16}
EXPLICIT = [
    n
    for n in sorted(bf.catalog)
    if bf.catalog[n].family == "runge-kutta"
    and not bf.catalog[n].symbols
    and bf.catalog[n].is_explicit
    and 1 <= (bf.catalog[n].order or 0) <= 6
]


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


def randn(*shape: int, seed: int) -> Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=DOUBLE)


class Linear(nn.Module):
    """F(y) = y Aᵀ with a trainable A."""

    def __init__(self, A: Tensor) -> None:
        super().__init__()
        self.A = nn.Parameter(A.clone())

    def forward(self, y: Tensor) -> Tensor:
        return y @ self.A.T


def linear_problem(d: int = 3) -> tuple[Tensor, Tensor, Tensor]:
    """A (spectral norm ≈ 1), y0 `(2, 4, d)` and the exact y(1) = y0 exp(A)ᵀ."""
    A = randn(d, d, seed=1)
    A = A / torch.linalg.matrix_norm(A, ord=2)
    y0 = randn(2, 4, d, seed=2)
    return A, y0, y0 @ torch.linalg.matrix_exp(A).T


def block(method: str | bf.ButcherTableau, field: nn.Module | str, **options: object) -> Tensor:
    dynamics = bf.ContinuousDynamics(method, time=options.pop("time", "none"), **options)
    sizes = SIZES if isinstance(field, str) else {"d_model": SIZES["d_model"]}
    return bf.compile(dynamics, field=field, **sizes).to(DOUBLE)


# -- the matrix exponential -----------------------------------------------------------------


@pytest.mark.parametrize("name", sweep(EXPLICIT))
def test_fixed_steps_match_the_matrix_exponential(name: str) -> None:
    """Global error ≤ C·hᵖ with C = ‖A‖ᵖ⁺¹e^‖A‖ (‖A‖ = 1), p the proved order, h = 1/8."""
    A, y0, expected = linear_problem()
    p = bf.check(bf.catalog[name]).order
    error = (block(name, Linear(A), steps=8)(y0) - expected).abs().max().item()
    assert error <= math.e * (1 / 8) ** p, f"{name}: error {error:.3g} at h = 1/8, order {p}"


@pytest.mark.parametrize("rtol", [1e-4, 1e-7, 1e-10])
def test_dopri5_matches_the_matrix_exponential_to_its_tolerance(rtol: float) -> None:
    A, y0, expected = linear_problem()
    out = block("dopri5", Linear(A), rtol=rtol, atol=rtol * 1e-2)(y0)
    error = (out - expected).abs().max().item()
    assert error <= 50 * rtol * expected.abs().max().item()


def test_outputs_at_every_time_are_solved_not_interpolated() -> None:
    """FLOATER's use: many output times, one solve; every output is a grid point."""
    A, y0, _ = linear_problem()
    times = torch.linspace(0, 1, 11, dtype=DOUBLE)
    path = solve(lambda t, y: y @ A.T, y0, times, bf.ContinuousDynamics("rk4", steps=2))
    assert path.shape == (11, *y0.shape)
    assert torch.equal(path[0], y0)
    for t, y in zip(times, path, strict=True):
        exact = y0 @ torch.linalg.matrix_exp(t * A).T
        assert (y - exact).abs().max() <= 1e-7  # (h = 1/20)⁴ scale
    by_size = solve(lambda t, y: y @ A.T, y0, times, bf.ContinuousDynamics("rk4", step_size="1/20"))
    torch.testing.assert_close(by_size, path, rtol=0, atol=1e-14)


# -- the adjoint --------------------------------------------------------------------------------


def gradients(module: nn.Module, y0: Tensor) -> list[Tensor]:
    y = y0.clone().requires_grad_(True)
    module(y).sin().sum().backward()
    assert y.grad is not None
    return [y.grad, *(p.grad for p in module.parameters())]


@pytest.mark.parametrize(
    ("method", "options", "tol"),
    [("rk4", {"steps": 16}, 1e-6), ("dopri5", {"rtol": 1e-10, "atol": 1e-12}, 1e-7)],
)
def test_adjoint_gradient_equals_the_direct_gradient(
    method: str, options: dict, tol: float
) -> None:
    A, y0, _ = linear_problem()
    direct = gradients(block(method, Linear(A), **options), y0)
    adjoint = gradients(block(method, Linear(A), adjoint=True, **options), y0)
    assert len(direct) == len(adjoint) == 2
    for d, a in zip(direct, adjoint, strict=True):
        assert (d - a).abs().max() <= tol * d.abs().max()


@pytest.mark.parametrize("name", sweep(EXPLICIT))
def test_every_explicit_tableau_has_an_adjoint(name: str) -> None:
    """The adjoint ODE solved backwards by the same tableau: its gradient differs from
    backpropagation through the steps by the method's own error, C·hᵖ (h = 1/16)."""
    A, y0, _ = linear_problem()
    p = bf.check(bf.catalog[name]).order
    direct = gradients(block(name, Linear(A), steps=16), y0)
    adjoint = gradients(block(name, Linear(A), steps=16, adjoint=True), y0)
    for d, a in zip(direct, adjoint, strict=True):
        assert (d - a).abs().max() <= 4 * (1 / 16) ** p * d.abs().max(), name


def test_nothing_is_written_into_torchdiffeqs_tables() -> None:
    from torchdiffeq._impl.odeint import SOLVERS  # read only, to check that it stays torchdiffeq's

    assert not [name for name in SOLVERS if "butcherflow" in name]


def test_adjoint_gradient_reaches_the_encoder_memory_and_time_weights() -> None:
    def run(adjoint: bool) -> list[Tensor]:
        torch.manual_seed(3)
        dynamics = bf.ContinuousDynamics("rk4", steps=8, adjoint=adjoint, time="concat")
        model = bf.compile(dynamics, field="san+ca", **SIZES).to(DOUBLE)
        memory = randn(2, 3, 8, seed=4).requires_grad_(True)
        x = randn(2, 5, 8, seed=5)
        model(x, memory=memory).square().sum().backward()
        assert memory.grad is not None
        return [memory.grad, *(p.grad for p in model.parameters())]

    direct, adjoint = run(False), run(True)
    for d, a in zip(direct, adjoint, strict=True):
        assert (d - a).abs().max() <= 1e-6 * d.abs().max()


# -- empirical order on a non-autonomous field ------------------------------------------------

LAMBDA, OMEGA = -1.0, 2.0


class Forced(nn.Module):
    """dy/dt = λy + cos(ωt), reading t from the last input column (time = "concat")."""

    def forward(self, z: Tensor) -> Tensor:
        y, t = z[..., :-1], z[..., -1:]
        return LAMBDA * y + torch.cos(OMEGA * t)


def forced_solution(y0: Tensor, t: float) -> Tensor:
    den = OMEGA**2 + LAMBDA**2
    a, b = -LAMBDA / den, OMEGA / den
    particular = a * math.cos(OMEGA * t) + b * math.sin(OMEGA * t)
    return particular + (y0 - a) * math.exp(LAMBDA * t)


@pytest.mark.parametrize("name", sweep(EXPLICIT))
def test_empirical_order_matches_the_proved_order(name: str) -> None:
    order = bf.check(bf.catalog[name]).order
    y0 = torch.tensor([[[0.3, -1.2]]], dtype=DOUBLE)
    expected = forced_solution(y0, 1.0)
    errors = []
    for steps in (4, 8, 16):
        dynamics = bf.ContinuousDynamics(name, steps=steps, time="concat")
        model = bf.compile(dynamics, field=Forced(), d_model=2).to(DOUBLE)
        errors.append((model(y0) - expected).abs().max().item())
    slope = math.log2(errors[-2] / errors[-1])
    assert abs(slope - order) <= 0.3, f"{name}: slope {slope:.2f}, proved order {order}"


def test_the_nodes_c_matter_on_the_non_autonomous_field() -> None:
    """Midpoint with c = (0, 1) is first order here: t really enters at t0 + cᵢh."""
    shifted = bf.ButcherTableau([[0, 0], ["1/2", 0]], [0, 1], c=[0, 1], row_sum_c=False)
    y0 = torch.tensor([[[0.3]]], dtype=DOUBLE)
    errors = []
    for steps in (8, 16):
        model = bf.compile(
            bf.ContinuousDynamics(shifted, steps=steps, time="concat"), field=Forced(), d_model=1
        ).to(DOUBLE)
        errors.append((model(y0) - forced_solution(y0, 1.0)).abs().item())
    assert abs(math.log2(errors[0] / errors[1]) - 1) <= 0.3


# -- the block: cost, code, equivalences, time dependence ---------------------------------------


def test_one_euler_step_is_the_residual_block() -> None:
    residual = bf.compile("euler", field="san+ffn", **SIZES).to(DOUBLE)
    continuous = bf.compile(
        bf.ContinuousDynamics("euler", steps=1, time="none"), field=residual.field, d_model=8
    ).to(DOUBLE)
    x = randn(2, 5, 8, seed=6)
    torch.testing.assert_close(continuous(x), residual(x), rtol=0, atol=1e-14)
    assert continuous.field_calls == residual.field_calls == 1
    assert continuous.flops_per_token(32) == residual.flops_per_token(32)
    assert continuous.num_parameters == residual.num_parameters


def test_cost_and_code_of_fixed_and_adaptive_blocks() -> None:
    rk4 = bf.compile("neural-ode-rk4", field="san+ffn", **SIZES)
    field = bf.compile("euler", field="san+ffn", **SIZES)
    assert isinstance(rk4, ContinuousBlock) and rk4.incremental
    assert rk4.field_calls == 4 * 4
    assert rk4.num_parameters == field.num_parameters + SIZES["d_model"]  # + the t column
    assert "k4 = F(t + h, y + h*k3)" in rk4.code and "range(4)" in rk4.code
    flops = rk4.flops_per_token(64)
    assert flops is not None and flops > 16 * (field.flops_per_token(64) or 0) // 2
    # Dormand-Prince's 7th stage has b = 0 (it only feeds the error estimate): never computed
    dp = bf.compile(bf.ContinuousDynamics("dormand-prince-5", steps=2), field="ffn", **SIZES)
    assert dp.field_calls == 2 * 6 and "k7" not in dp.code
    adaptive = bf.compile("neural-ode-dopri5", field="san+ffn", **SIZES)
    assert not adaptive.incremental
    assert adaptive.field_calls is None and adaptive.flops_per_token(64) is None
    assert "method='dopri5'" in adaptive.code and "max_num_steps" in adaptive.code


@pytest.mark.parametrize("time", ["concat", "embedding"])
def test_time_input_makes_the_field_depend_on_t(time: str) -> None:
    model = block("rk4", "san+ffn", steps=2, time=time)
    assert isinstance(model, ContinuousBlock)
    y, ctx = randn(2, 5, 8, seed=7), bf.nn.Context()
    at = [model.ode.rhs(torch.tensor(t, dtype=DOUBLE), y, ctx, 0) for t in (0.0, 0.5, 1.0)]
    assert (at[0] - at[1]).abs().max() > 1e-3 and (at[1] - at[2]).abs().max() > 1e-3
    still = block("rk4", "san+ffn", steps=2, time="none")
    assert isinstance(still, ContinuousBlock)
    a, b = (still.ode.rhs(torch.tensor(t, dtype=DOUBLE), y, ctx, 0) for t in (0.0, 1.0))
    assert torch.equal(a, b)


def test_a_module_field_receives_the_time_column() -> None:
    seen: list[Tensor] = []

    class Recorder(nn.Module):
        def forward(self, z: Tensor) -> Tensor:
            seen.append(z[..., -1].flatten()[0].detach())
            return torch.zeros_like(z[..., :-1])

    model = bf.compile(
        bf.ContinuousDynamics("rk4", steps=2, time="concat"), field=Recorder(), d_model=3
    )
    x = randn(1, 2, 3, seed=8).float()
    torch.testing.assert_close(model(x), x)
    assert [float(t) for t in seen] == [0.0, 0.25, 0.25, 0.5, 0.5, 0.75, 0.75, 1.0]


# -- incremental decoding ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [{"steps": 2, "time": "concat"}, {"step_size": "1/3", "time": "embedding"}],
    ids=["steps-concat", "step_size-embedding"],
)
def test_fixed_step_decoding_equals_the_full_causal_forward(options: dict) -> None:
    dynamics = bf.ContinuousDynamics("rk4", **options)
    model = bf.compile(dynamics, field="san+ca+ffn", **SIZES).to(DOUBLE).eval()
    assert model.causal and model.incremental
    x, memory = randn(2, 5, 8, seed=9), randn(2, 4, 8, seed=10)
    memory_padding = torch.tensor([[False] * 4, [False, False, True, True]])
    full = model(x, memory=memory, memory_key_padding_mask=memory_padding)
    cache, steps = DecodeCache(), []
    for t in range(5):
        steps.append(
            model(
                x[:, t : t + 1],
                memory=memory,
                memory_key_padding_mask=memory_padding,
                cache=cache,
            )
        )
        cache.advance(1)
    torch.testing.assert_close(torch.cat(steps, dim=1), full, rtol=0, atol=1e-10)
    later = x.clone()
    later[:, -1] += 1.0
    changed = model(later, memory=memory, memory_key_padding_mask=memory_padding)
    torch.testing.assert_close(changed[:, :-1], full[:, :-1], rtol=0, atol=1e-12)


def test_adaptive_blocks_refuse_a_cache_and_models_say_so() -> None:
    model = bf.compile("neural-ode-dopri5", field="san+ca+ffn", **SIZES).to(DOUBLE)
    x, memory = randn(1, 1, 8, seed=11), randn(1, 2, 8, seed=12)
    with pytest.raises(bf.ButcherflowError, match="cannot decode incrementally"):
        model(x, memory=memory, cache=DecodeCache())
    recipe = bf.load_recipe("neural-ode")
    small = replace(recipe, sizes={**recipe.sizes, **SIZES, "dropout": 0.0})
    assert bf.Seq2Seq(small, 20).supports_cache  # the ODE blocks are in the encoder
    decoder = replace(small.decoder, method="neural-ode-dopri5")
    assert not bf.Seq2Seq(replace(small, decoder=decoder), 20).supports_cache
    assert bf.LanguageModel(replace(small, decoder=None), 20).supports_cache  # fixed steps
    encoder = replace(small.encoder, method="neural-ode-dopri5")
    assert not bf.LanguageModel(replace(small, encoder=encoder, decoder=None), 20).supports_cache
    assert bf.LanguageModel("transformer-small", 20).supports_cache


def test_the_neural_ode_recipe_trains() -> None:
    recipe = bf.load_recipe("neural-ode")
    small = replace(recipe, sizes={**recipe.sizes, **SIZES, "dropout": 0.0})
    model = bf.Seq2Seq(small, 20)
    assert all(isinstance(b, ContinuousBlock) for b in model.encoder)
    src, tgt = torch.randint(1, 20, (2, 5)), torch.randint(1, 20, (2, 4))
    model(src, tgt).logsumexp(-1).sum().backward()
    assert not [n for n, p in model.named_parameters() if p.grad is None]


# -- bad input ------------------------------------------------------------------------------------

RK4 = bf.ContinuousDynamics("rk4", steps=2)


@pytest.mark.parametrize(
    ("times", "fragment"),
    [
        (torch.tensor([0.0, 0.5, 0.5, 1.0], dtype=DOUBLE), "strictly increasing"),
        (torch.tensor([1.0, 0.0], dtype=DOUBLE), "strictly increasing"),
        (torch.tensor([0.0, math.nan], dtype=DOUBLE), "not finite"),
        (torch.tensor([0.0, math.inf], dtype=DOUBLE), "not finite"),
        (torch.tensor([0.0], dtype=DOUBLE), "at least two points"),
        (torch.tensor([0, 1]), "floating-point"),
        (torch.zeros(2, 2, dtype=DOUBLE), "1-D"),
    ],
)
def test_bad_time_grids_name_times(times: Tensor, fragment: str, declaration_error) -> None:
    with declaration_error("'times'", fragment):
        solve(lambda t, y: -y, torch.ones(3, dtype=DOUBLE), times, RK4)


@pytest.mark.parametrize(
    ("options", "key"),
    [
        ({"grid": "positions", "delta": 0}, "'delta'"),
        ({"grid": "positions", "delta": "-1/100"}, "'delta'"),
        ({"t0": 1, "t1": 1}, "'t1'"),
        ({"t0": 0, "t1": "nan"}, "'t1'"),
        ({"steps": 0}, "'steps'"),
        ({"step_size": 0}, "'step_size'"),
        ({"method": "rk5-typo"}, "'method'"),
        ({"method": "backward-euler"}, "'method'"),
        ({"method": "dopri5", "steps": 4}, "'steps'"),
        ({"method": "rk4", "rtol": 1e-3}, "'rtol'"),
    ],
)
def test_bad_declarations_name_the_option(options: dict, key: str, declaration_error) -> None:
    with declaration_error(key):
        bf.ContinuousDynamics(**options)


def test_an_exceeded_step_budget_names_max_num_steps() -> None:
    A, y0, _ = linear_problem()
    model = block("dopri5", Linear(40 * A), rtol=1e-12, atol=1e-14, max_num_steps=3)
    with pytest.raises(bf.ButcherflowError) as info:
        model(y0)
    message = str(info.value)
    assert "max_num_steps = 3" in message and "'dopri5'" in message and "rtol" in message


def test_an_exceeded_step_budget_of_the_adjoint_solve_names_max_num_steps() -> None:
    """The adjoint system (state, its gradient, the parameter gradients) needs more steps than
    the forward solve: a budget of 14 suffices forwards (10 needed), not backwards (18 needed)."""
    A, y0, _ = linear_problem()
    model = block("dopri5", Linear(5 * A), rtol=1e-6, atol=1e-8, max_num_steps=14, adjoint=True)
    y = y0.clone().requires_grad_(True)
    out = model(y)  # the forward solve fits in the budget
    with pytest.raises(bf.ButcherflowError) as info:
        out.sin().sum().backward()
    message = str(info.value)
    assert "'max_num_steps'" in message and "max_num_steps = 14" in message
    assert "'dopri5'" in message and "adjoint (backward) solve" in message
    assert "adjoint = false" in message
    assert isinstance(info.value.__cause__, AssertionError)  # torchdiffeq's, restated
    enough = block("dopri5", Linear(5 * A), rtol=1e-6, atol=1e-8, max_num_steps=64, adjoint=True)
    enough(y).sin().sum().backward()  # the same solve with a larger budget: gradients arrive
    assert y.grad is not None and bool(torch.isfinite(y.grad).all())


def test_a_blow_up_is_an_error_not_a_nan() -> None:
    A, y0, _ = linear_problem()
    model = block("euler", Linear(1e300 * A), steps=4)
    with pytest.raises(bf.ButcherflowError, match="not finite"):
        model(y0)
    adaptive = block("dopri5", Linear(1e300 * A))
    with pytest.raises(bf.ButcherflowError):
        adaptive(y0)


@pytest.mark.parametrize(
    ("options", "key"),
    [
        ({"coefficients": "learned"}, "'coefficients'"),
        ({"step_size": 0.5}, "'step_size'"),
        ({"iterations": 2}, "'iterations'"),
        ({"share": True}, "'share'"),
        ({"post_norm": True}, "'post_norm'"),
    ],
)
def test_compile_refuses_options_of_other_families(
    options: dict, key: str, declaration_error
) -> None:
    # the declaration fixes the solver, its steps and the interval: a block takes field, causal
    with declaration_error(
        key, "does not apply to a continuous declaration", "takes field, causal"
    ):
        bf.compile("neural-ode-rk4", field="ffn", **SIZES, **options)


def test_compile_refuses_what_makes_no_block(declaration_error) -> None:
    with declaration_error("'grid'", "position = 'floater'"):
        bf.compile("floater", field="ffn", **SIZES)
    with declaration_error("'fields'", "takes field, causal"):
        bf.compile("neural-ode-rk4", fields={"A": "ffn"}, **SIZES)
    with declaration_error("'field'", "pass field="):
        bf.compile("neural-ode-rk4", **SIZES)
    with declaration_error("'dropout'", "adjoint"):
        bf.compile(bf.ContinuousDynamics("rk4", adjoint=True), field="ffn", dropout=0.1, **SIZES)
    with declaration_error("'d_model'"):
        bf.compile(bf.ContinuousDynamics("rk4", time="concat"), field=nn.Linear(4, 3))
    with declaration_error("'adjoint_params'"):
        solve(
            lambda t, y: -y,
            torch.ones(2, dtype=DOUBLE),
            torch.tensor([0.0, 1.0], dtype=DOUBLE),
            bf.ContinuousDynamics("rk4", adjoint=True),
        )


def test_a_module_field_of_the_wrong_width_is_named() -> None:
    model = bf.compile(
        bf.ContinuousDynamics("rk4", time="concat"), field=nn.Linear(3, 3), d_model=3
    )
    with pytest.raises(ValueError, match="d_model \\+ 1"):
        model(torch.ones(1, 2, 3))
    narrow = bf.compile(
        bf.ContinuousDynamics("rk4", time="concat"), field=nn.Linear(4, 2), d_model=3
    )
    with pytest.raises(ValueError, match="returned"):
        narrow(torch.ones(1, 2, 3))


def test_an_adaptive_solve_under_inference_mode_leaves_training_solves_working() -> None:
    """The first adaptive solve of a process may run under `torch.inference_mode()` (decoding):
    torchdiffeq builds its tableaux as tensors when it is imported, so an import at that moment
    would make them inference tensors, and every later float64 solve with gradients would fail
    (float64 tableaux are used as they are). Run in a fresh process, where nothing has solved
    before."""
    code = (
        "import torch, butcherflow as bf\n"
        "dynamics = bf.ContinuousDynamics('dopri5', time='none', rtol=1e-6, atol=1e-8)\n"
        "block = bf.compile(dynamics, field=torch.nn.Linear(3, 3), d_model=3).double()\n"
        "y = torch.randn(2, 4, 3, dtype=torch.float64)\n"
        "with torch.inference_mode():\n"
        "    block(y)\n"
        "block(y.requires_grad_()).sum().backward()\n"
        "print(y.grad.shape)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
