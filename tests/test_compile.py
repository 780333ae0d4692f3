"""Compiled training: the training forward of every recipe in models/ compiles into one graph.

`torch._dynamo.explain` traces the forward of each recipe (at tiny sizes, in training mode,
dropout on) and reports zero graph breaks: the compiled Runge-Kutta, splitting and multistep
blocks, the general linear stacks, FLOATER's position flows and the fixed-step neural-ODE
blocks. Under `torch.compile` a fixed-step solve skips the check of its time grid, which reads
the grid on the host (the compiled callers build their grids themselves), and the tableau's
coefficients are computed when the module is built, not while dynamo traces (sympy cannot be
traced); the traced solve equals the eager one bit for bit (tested here in float64).

Adaptive solvers (`neural-ode-dopri5`, or any adaptive FLOATER flow) and adjoint solves do break
the graph, by nature: the solver (torchdiffeq's `odeint`) chooses its steps from the data (a
host-side decision at every step), and the adjoint is an autograd function solving backwards.
They still compile and give the eager result, piecewise; `make test-slow` checks that the
adaptive block breaks.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch

import butcherflow as bf
from butcherflow.assemble import load_recipe, model_class, recipe_names
from butcherflow.nn import FloaterPositions
from butcherflow.nn.ode import coefficients, solve

VOCAB = 20


@pytest.fixture(autouse=True)
def _fresh_dynamo() -> Iterator[None]:
    torch.compiler.reset()
    yield
    torch.compiler.reset()


def tiny(name: str, **changes: str) -> bf.Recipe:
    """The recipe at tiny sizes, one layer per side (a multistep stack: its starter and one
    multistep layer), training dropout kept."""
    recipe = load_recipe(name)
    sizes = {**recipe.sizes, "d_model": 8, "n_heads": 2, "d_ffn": 16}
    recipe = replace(recipe, sizes=sizes, param_budget=None)
    assert recipe.decoder is not None
    if recipe.encoder is None:  # decoder-only (models/lm-*)
        return replace(recipe, decoder=replace(recipe.decoder, layers=1, **changes))
    layers = 2 if recipe.encoder.method in ("leapfrog", "dlcl") else 1
    return replace(
        recipe,
        encoder=replace(recipe.encoder, layers=layers, **changes),
        decoder=replace(recipe.decoder, layers=layers),
    )


def batch() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    src = torch.randint(4, VOCAB, (2, 5), generator=g)
    src[1, 3:] = 0  # padding
    return src, torch.randint(4, VOCAB, (2, 4), generator=g)


@pytest.mark.parametrize("name", recipe_names())
def test_the_training_forward_compiles_without_graph_breaks(name: str) -> None:
    torch.manual_seed(0)
    recipe = tiny(name)
    model = model_class(recipe)(recipe, VOCAB).train()
    inputs = batch() if isinstance(model, bf.Seq2Seq) else batch()[1:]  # decoder-only: tokens
    explained = torch._dynamo.explain(model)(*inputs)
    reasons = [str(b.reason).splitlines()[0] for b in explained.break_reasons]
    assert explained.graph_break_count == 0, reasons
    assert explained.graph_count == 1


@pytest.mark.slow
def test_an_adaptive_solver_breaks_the_graph_and_still_computes_the_eager_result() -> None:
    recipe = tiny("neural-ode", method="neural-ode-dopri5")
    recipe = replace(recipe, sizes={**recipe.sizes, "dropout": 0.0})  # a deterministic field
    torch.manual_seed(0)
    model = bf.Seq2Seq(recipe, VOCAB).double().train()
    src, tgt = batch()
    explained = torch._dynamo.explain(model)(src, tgt)
    assert explained.graph_break_count > 0
    compiled = torch.compile(model, backend="eager")
    torch.testing.assert_close(compiled(src, tgt), model(src, tgt), rtol=0, atol=1e-12)


def _traced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)


@pytest.mark.parametrize("name", ["neural-ode-rk4", "floater"])
def test_the_traced_fixed_step_solve_equals_the_eager_one(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The solve a compiled forward traces (no host check of the grid) against the eager solve,
    bit for bit, on a non-autonomous MLP field over a grid of several output times."""
    dynamics = bf.catalog[name]
    torch.manual_seed(0)
    field = bf.nn.FloaterDynamics(6, 12, time="concat").double()
    torch.nn.init.normal_(field.outer.weight)  # not the zero start: a real flow
    y0 = torch.randn(3, 6, dtype=torch.float64)
    times = torch.arange(5, dtype=torch.float64) * 0.3
    expected = solve(field, y0, times, dynamics)
    with monkeypatch.context() as patch:
        _traced(patch)
        direct = solve(field, y0, times, dynamics)
    assert torch.equal(direct, expected)
    expected.sum().backward()  # both paths are differentiable
    direct.sum().backward()


def test_a_compiled_floater_flow_solves_a_power_of_two_of_positions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One unrolled graph serves every length up to the next power of two, with the biases
    of the exact-length solve (fixed steps: a prefix does not depend on the solve's end)."""
    flow = FloaterPositions(bf.catalog["floater"], 4, 3).double().train()
    torch.nn.init.normal_(flow.dynamics.outer.weight)
    torch.nn.init.normal_(flow.initial)
    solved: list[int] = []
    original = FloaterPositions._solve

    def counting(self: FloaterPositions, length: int) -> torch.Tensor:
        solved.append(length)
        return original(self, length)

    monkeypatch.setattr(FloaterPositions, "_solve", counting)
    expected = flow(5)
    with monkeypatch.context() as patch:
        _traced(patch)
        covered = flow(5)
    assert solved == [5, 8]
    torch.testing.assert_close(covered, expected, rtol=0, atol=1e-15)


@pytest.mark.parametrize("policy", ["exact", "dynamic", "sinkhorn"])
def test_a_general_linear_stack_decodes_compiled_in_one_graph(policy: str) -> None:
    """A hyper-connection decoder stack, one token per step through `torch.compile(fullgraph=True)`
    (dynamo and AOT autograd; inductor's code generation is test_generate's) with the static
    `DecodeCache`, equals its full causal forward in float64: the streams, their per-token
    mixing and every layer's key/value slots trace without a graph break."""
    torch.manual_seed(0)
    stack = bf.compile_stack(
        "hyper-connections-4",
        ["san+ca+ffn"] * 3,
        coefficients=policy,
        d_model=8,
        n_heads=2,
        d_ffn=16,
    ).double()
    stack.eval()
    with torch.no_grad():  # leave the declared start, so that the streams differ
        for p in stack.parameters():
            p.add_(0.05 * torch.randn_like(p))
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    memory = torch.randn(2, 4, 8, dtype=torch.float64)
    cache = bf.nn.DecodeCache(capacity=8)

    def step(new: torch.Tensor) -> torch.Tensor:
        return stack(new, memory=memory, cache=cache)

    compiled = torch.compile(step, backend="aot_eager", fullgraph=True)
    with torch.no_grad():
        full = stack(x, memory=memory)
        steps = []
        for t in range(x.shape[1]):
            steps.append(compiled(x[:, t : t + 1].contiguous()))
            cache.advance(1)
    torch.testing.assert_close(torch.cat(steps, dim=1), full, rtol=0, atol=1e-12)
    assert cache.length == x.shape[1]


def test_coefficients_prepared_under_the_meta_device_stay_on_the_cpu() -> None:
    """A model built under `torch.device("meta")` (parameter counts) prepares its solvers'
    coefficients too; they are cached per tableau, so they must not become meta tensors."""
    tableau = bf.ButcherTableau(A=[[0, 0], ["1/2", 0]], b=[0, 1], name="midpoint-fresh")
    with torch.device("meta"):
        numbers = coefficients(tableau)
    assert {t.device.type for t in (numbers.A, numbers.b, numbers.c)} == {"cpu"}
    assert numbers.stages == [0, 1] and numbers.weighted == [1]


class _Decay(torch.nn.Module):
    """dy/dt = -y: a field without parameters (the README's "any module mapping y to dy")."""

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        return -y


def test_a_field_without_parameters_takes_its_width_from_the_first_call() -> None:
    block = bf.compile("rk4", field=_Decay())
    assert block.d_model is None
    with pytest.raises(bf.DeclarationError, match="first input"):
        block.flops_per_token()
    y = torch.randn(2, 3, 5, dtype=torch.float64)
    # one RK4 step of y' = -y: y·R(-1), R(z) = 1 + z + z²/2 + z³/6 + z⁴/24, R(-1) = 3/8
    torch.testing.assert_close(block(y), 0.375 * y, rtol=1e-15, atol=0)
    assert block.d_model == 5
    assert block.flops_per_token() == 2 * 5 * 7  # seven axpys (3 stage inputs, 4 weights)


def test_a_gate_needs_the_width_of_a_field_without_parameters_before_the_first_call() -> None:
    with pytest.raises(bf.DeclarationError, match="stage gate is d_model wide") as info:
        bf.compile("heun", field=_Decay(), coefficients="gated")
    assert "pass d_model=" in str(info.value)
    gated = bf.compile("heun", field=_Decay(), coefficients="gated", d_model=4)
    assert gated(torch.randn(1, 2, 4)).shape == (1, 2, 4)


def test_the_custom_field_example_of_the_docs_runs_as_it_says() -> None:
    """docs/concepts.md's "Your own field" example: the padding keeps x, the rest is x·R(-1)."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "concepts.md").read_text("utf-8")
    code = text.split("<!-- example: custom-field -->\n```python\n", 1)[1].split("```", 1)[0]
    scope: dict[str, Any] = {}
    exec(compile(code, "concepts.md", "exec"), scope)  # the docs' own example
    x, y, pad = scope["x"], scope["y"], scope["pad"]
    torch.testing.assert_close(y[pad], x[pad], rtol=0, atol=0)
    torch.testing.assert_close(y[~pad], 0.375 * x[~pad])
