"""The fused stream mixing of general linear stacks (issue 38): under torch.compile the stack
computes what it computes eagerly, on every policy (values and gradients); the fused form is
what torch.compile traces, in a stack and in a language model; Sinkhorn's backward keeps only
the logits and is autograd's through the unrolled iteration; bf.extract reads the same U, B, V
through compiled mixing; the fused form's limits (stream count, dtype) and a missing compiler
fall back with one line."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from tiny_run import RUN, TINY
from torch import fx

import butcherflow as bf
import butcherflow.cli.readback as readback
import butcherflow.devices as devices
from butcherflow.cli.readback import StackLayer
from butcherflow.compiler.general_linear import GLM_POLICIES
from butcherflow.extraction import extract
from butcherflow.methods.general_linear import GeneralLinear
from butcherflow.nn import streams
from butcherflow.savedir import read_log
from butcherflow.train import TrainConfig, train

DOUBLE = torch.float64
SIZES = {"d_model": 8, "n_heads": 2, "d_ffn": 16}
MIXED = [("hyper-connections-4", p) for p in GLM_POLICIES]
MIXED += [("pcformer", p) for p in ("exact", "learned", "dynamic")]  # s = 3, A below the diagonal
# the products the eager form mixes with; the fused form has none of them
PRODUCTS = {torch.mm, torch.bmm, "addmm_", "baddbmm_"}


@pytest.fixture(autouse=True)
def fresh_dynamo() -> None:
    """Every stack is compiled afresh: through the one `CompiledBlock.forward`, the stacks of
    earlier tests would reach dynamo's recompile limit, after which it runs them eagerly."""
    torch._dynamo.reset()


def _stack(name: str, policy: str, fields: int = 1) -> bf.CompiledBlock:
    """A float64 stack whose mixing parameters are all moved off their start (so that U, B, V
    and the streams differ from one another); 3 Sinkhorn iterations (20 trace 7× longer)."""
    torch.manual_seed(0)
    more = {"iterations": 3} if policy == "sinkhorn" else {}
    stack = bf.compile_stack(name, ["san+ffn"] * fields, coefficients=policy, **SIZES, **more)
    stack = stack.to(DOUBLE).eval()
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for n, p in stack.named_parameters():
            if n.startswith("program.mix"):
                p.add_(0.3 * torch.randn(p.shape, generator=g, dtype=DOUBLE))
    return stack


def _values_and_gradients(
    run: Callable[[torch.Tensor], torch.Tensor], stack: torch.nn.Module
) -> list[torch.Tensor]:
    x = torch.randn(2, 5, 8, dtype=DOUBLE, generator=torch.Generator().manual_seed(2))
    x.requires_grad_(True)
    out = run(x)
    return [out, *torch.autograd.grad(out.square().sum(), [x, *stack.parameters()])]


def _assert_all_close(got: list[torch.Tensor], want: list[torch.Tensor], rtol: float) -> None:
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a, b, rtol=rtol, atol=rtol)


def _count_mixes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The fused form without tracing; returns the list that counts its broadcast sums."""
    monkeypatch.setattr(streams, "_fused", streams.fusable)
    mix, calls = streams._mix, []

    def counted(M: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        calls.append(M.dim())
        return mix(M, y)

    monkeypatch.setattr(streams, "_mix", counted)
    return calls


@pytest.mark.parametrize(("name", "policy"), MIXED)
def test_the_fused_form_computes_what_the_products_compute(
    name: str, policy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run eagerly, the broadcast sums equal the matrix products: values and every gradient;
    every read and update of both layers took the fused form."""
    stack = _stack(name, policy, fields=2)
    want = _values_and_gradients(stack, stack)
    mixed = _count_mixes(monkeypatch)
    _assert_all_close(_values_and_gradients(stack, stack), want, rtol=1e-12)
    assert len(mixed) == 2 * 3  # per layer: the stage read, V y and B F(Y)


@pytest.mark.parametrize(
    ("policy", "dynamic"), [*((p, False) for p in GLM_POLICIES), ("sinkhorn", True)]
)
def test_the_traced_stack_computes_what_the_eager_one_does(policy: str, dynamic: bool) -> None:
    """dynamo and AOTAutograd (the forward and backward graphs inductor gets), in one graph
    (a graph break would leave the mixing eager); with dynamic shapes too (how training
    compiles its blocks)."""
    stack = _stack("hyper-connections-4", policy)
    want = _values_and_gradients(stack, stack)
    run = torch.compile(stack, backend="aot_eager", dynamic=dynamic, fullgraph=True)
    _assert_all_close(_values_and_gradients(run, stack), want, rtol=1e-12)


# inductor's own kernels: cold, a few seconds to half a minute of C++ compilation per policy on
# 2 cores; Sinkhorn (per-token read, update, projection and the iterations, forward and
# backward) in the default run, the other policies in the slow sweep
INDUCTOR = [
    pytest.param(p, marks=[] if p == "sinkhorn" else pytest.mark.slow) for p in GLM_POLICIES
]


@pytest.mark.parametrize("policy", INDUCTOR)
def test_the_inductor_stack_equals_the_eager_stack(policy: str) -> None:
    stack = _stack("hyper-connections-4", policy)
    want = _values_and_gradients(stack, stack)
    _assert_all_close(_values_and_gradients(torch.compile(stack), stack), want, rtol=1e-10)


def _products(graphs: list[fx.GraphModule]) -> list[str]:
    return [
        str(node.target)
        for gm in graphs
        for node in gm.graph.nodes
        if node.target in PRODUCTS and node.op in ("call_function", "call_method")
    ]


def test_a_compiled_language_model_traces_the_fused_mixing() -> None:
    """`--compile` on `lm-mhc`: the graph torch.compile gets mixes the streams without a
    matrix product (the fields' projections are `linear`), and computes the eager logits."""
    model = bf.LanguageModel(bf.load_recipe("lm-mhc").with_overrides(**SIZES), 50).eval()
    graphs: list[fx.GraphModule] = []

    def capture(gm: fx.GraphModule, inputs: Any) -> Callable[..., Any]:
        graphs.append(gm)
        return gm.forward

    tokens = torch.randint(1, 50, (2, 7), generator=torch.Generator().manual_seed(0))
    got = torch.compile(model, backend=capture)(tokens)
    assert len(graphs) == 1 and _products(graphs) == []
    torch.testing.assert_close(got, model(tokens), rtol=1e-5, atol=1e-5)


def _sinkhorn_unrolled(logits: torch.Tensor, iterations: int) -> torch.Tensor:
    """`sinkhorn`'s iteration written on (..., r, r) for autograd to differentiate."""
    P = torch.softmax(torch.log_softmax(logits, dim=-2), dim=-1)
    for _ in range(iterations - 1):
        P = P / P.sum(-2, keepdim=True)
        P = P / P.sum(-1, keepdim=True)
    return P


def test_sinkhorn_backward_keeps_only_the_logits() -> None:
    logits = torch.randn(3, 5, 4, 4, dtype=DOUBLE, requires_grad=True)
    P = streams.sinkhorn(logits, 20)
    assert P.grad_fn is not None
    (saved,) = P.grad_fn.saved_tensors  # type: ignore[attr-defined]
    assert saved.shape == logits.shape and saved.data_ptr() == logits.data_ptr()


@pytest.mark.parametrize("iterations", [1, 2, 20])
def test_sinkhorn_gradient_is_autograd_through_the_unrolled_loop(iterations: int) -> None:
    g = torch.Generator().manual_seed(4)
    logits = 3 * torch.randn(6, 4, 4, dtype=DOUBLE, generator=g)
    logits.requires_grad_(True)
    upstream = torch.randn(6, 4, 4, dtype=DOUBLE, generator=g)
    P, Q = streams.sinkhorn(logits, iterations), _sinkhorn_unrolled(logits, iterations)
    torch.testing.assert_close(P, Q, rtol=1e-13, atol=1e-13)
    (a,) = torch.autograd.grad(P, logits, upstream)
    (b,) = torch.autograd.grad(Q, logits, upstream)
    torch.testing.assert_close(a, b, rtol=1e-11, atol=1e-12)


def _double(*shape: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, dtype=DOUBLE, generator=g).requires_grad_(True)


def test_sinkhorn_gradient_and_its_derivative_pass_gradcheck() -> None:
    """The written-out backward against finite differences (fast mode: random directions),
    and its own derivative (a gradient penalty through Sinkhorn differentiates it)."""
    logits = _double(2, 3, 4, 4, seed=6)
    project = lambda L: streams.sinkhorn(L, 3)  # noqa: E731
    assert torch.autograd.gradcheck(project, (logits,), fast_mode=True)
    assert torch.autograd.gradgradcheck(project, (logits,), fast_mode=True)


def test_static_mixing_gradient_passes_gradcheck() -> None:
    """`_StaticMix`'s backward (M's gradient as one product over the tokens)."""
    M, y = _double(3, 4, seed=7), _double(4, 2, 3, 5, seed=8)
    assert torch.autograd.gradcheck(streams._StaticMix.apply, (M, y), fast_mode=True)


def test_row_projection_gradient_passes_gradcheck() -> None:
    """`_RowProjection`'s backward (W's gradient as one product over the rows)."""
    W, x = _double(3, 5, seed=14), _double(2, 4, 5, seed=15)
    assert torch.autograd.gradcheck(streams._RowProjection.apply, (W, x), fast_mode=True)


def test_the_fused_projection_is_the_layer_norm_then_the_product(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The normalisation moved after the product: the same values and the same gradients of x,
    γ, β and W as `Linear(LayerNorm(x))`, on rows whose mean is large against their spread."""
    norm, weight = torch.nn.LayerNorm(5, dtype=DOUBLE), _double(3, 5, seed=16)
    with torch.no_grad():
        norm.weight.add_(torch.randn(5, dtype=DOUBLE, generator=torch.Generator().manual_seed(17)))
        norm.bias.add_(0.5)
    x = (_double(2, 4, 5, seed=18).detach() + 100.0).requires_grad_(True)
    inputs = [x, norm.weight, norm.bias, weight]

    def run() -> list[torch.Tensor]:
        out = streams.normalised_projection(x, norm, weight)
        return [out, *torch.autograd.grad(out.sin().sum(), inputs)]

    want = run()
    monkeypatch.setattr(streams, "_fused_rows", lambda x: True)
    _assert_all_close(run(), want, rtol=1e-10)


@pytest.mark.parametrize("per_token", [False, True], ids=["static", "per-token"])
def test_the_fused_kernels_pass_gradcheck(per_token: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """read_stages and advance in their fused form, 4 streams, 2 stages, every input."""
    mixed = _count_mixes(monkeypatch)
    tokens = (2, 3) if per_token else ()
    U, V, B = (_double(*tokens, *rc, seed=9 + k) for k, rc in enumerate([(2, 4), (4, 4), (4, 2)]))
    y, F = _double(4, 2, 3, 5, seed=12), _double(2, 2, 3, 5, seed=13)
    assert torch.autograd.gradcheck(streams.read_stages, (U, y), fast_mode=True)
    step = lambda V, y, B, F: streams.advance(V, y, B, F[0], F[1])  # noqa: E731
    assert torch.autograd.gradcheck(step, (V, y, B, F), fast_mode=True)
    assert mixed and set(mixed) == {U.dim()}


@pytest.fixture
def compiled_mixing(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[StackLayer], None]]:
    """Makes a `StackLayer` mix through torch.compile (aot_eager: the traced fused form); its
    field stays eager, so that extract's hooks on it run as they do on any module."""
    compile_ = torch.compile
    backend = "aot_eager"
    monkeypatch.setattr(readback, "read_stages", compile_(streams.read_stages, backend=backend))
    monkeypatch.setattr(readback, "advance", compile_(streams.advance, backend=backend))

    def compiled(layer: StackLayer) -> None:
        layer.mix = compile_(layer.mix, backend=backend)  # type: ignore[assignment]

    yield compiled


def test_extract_reads_the_same_u_b_v_through_compiled_mixing(
    compiled_mixing: Callable[[StackLayer], None],
) -> None:
    """Dynamic coefficients (per token): the same U, B, V to round-off, and a fit as close."""
    stack = _stack("hyper-connections-4", "dynamic").float()
    assert isinstance(stack, bf.compiler.GeneralLinearStack)
    state = torch.randn(4, 2, 6, 8, generator=torch.Generator().manual_seed(3))
    options: dict[str, Any] = {"fields": {"F": "field"}, "streams": 0, "frozen": ("mix",)}
    eager = extract(StackLayer(stack, 0).eval(), state, **options)
    layer = StackLayer(stack, 0).eval()
    compiled_mixing(layer)
    found = extract(layer, state, **options)
    assert _largest_difference(found.method, eager.method) < 1e-12
    assert found.verify() < 1e-12


def _largest_difference(a: GeneralLinear, b: GeneralLinear) -> float:
    """The largest entry of |U − U'|, |B − B'|, |V − V'|: per-token coefficients read through
    the fused projection (the normalisation after the product) differ in the last bits."""
    pairs = [
        (x, y)
        for M, N in ((a.U, b.U), (a.B, b.B), (a.V, b.V))
        for r, q in zip(M, N, strict=True)
        for x, y in zip(r, q, strict=True)
    ]
    return max(abs(float(x - y)) for x, y in pairs)


def _many_streams(r: int) -> GeneralLinear:
    identity = [[int(i == j) for j in range(r)] for i in range(r)]
    return GeneralLinear(
        [[0]], [[1] + [0] * (r - 1)], [[1]] * r, identity, start=["y(x)"] * r, name=f"hc-{r}"
    )


def test_more_streams_than_the_fused_form_takes_keep_the_products_and_say_so() -> None:
    stack = bf.compile_stack(_many_streams(10), ["ffn"], **SIZES).to(DOUBLE)
    streams._WARNED.clear()
    with pytest.warns(UserWarning, match="matrix products for 10 streams") as caught:
        got = _values_and_gradients(torch.compile(stack, backend="aot_eager"), stack)
    assert len({str(w.message) for w in caught}) == 1
    _assert_all_close(got, _values_and_gradients(stack, stack), rtol=1e-12)


def test_a_dtype_the_fused_form_does_not_take_keeps_the_products() -> None:
    g = torch.Generator().manual_seed(5)
    U = torch.randn(1, 4, dtype=torch.complex64, generator=g)
    y = torch.randn(4, 2, 3, 8, dtype=torch.complex64, generator=g)
    streams._WARNED.clear()
    with pytest.warns(UserWarning, match="dtype torch.complex64"):
        got = torch.compile(streams.read_stages, backend="aot_eager")(U, y)
    torch.testing.assert_close(got, streams.read_stages(U, y))


@pytest.fixture
def no_compiler() -> Iterator[None]:
    """Inductor's C++ compiler set to one that does not exist, as on a machine without one;
    through inductor's own `config.patch`, which restores the setting (pytest's monkeypatch
    deleted it on undo: every later compilation in the worker failed)."""
    import torch._inductor.config as inductor

    with inductor.patch({"cpp.cxx": ("/nonexistent/c++",)}):
        devices.compile_problem.cache_clear()
        torch._dynamo.reset()  # the probe compiled before must compile again
        yield
    devices.compile_problem.cache_clear()
    torch._dynamo.reset()


@pytest.mark.usefixtures("no_compiler")
def test_a_missing_compiler_is_one_line_and_compile_falls_back() -> None:
    problem = devices.compile_problem("cpu")
    assert problem is not None and "C++ compiler" in problem and "\n" not in problem
    said: list[str] = []
    assert not devices.can_compile("cpu", said.append)
    assert said == [f"--compile: torch.compile cannot compile on cpu ({problem}); running eagerly"]


def _lm_mhc(save_dir: Path, **changes: Any) -> TrainConfig:
    """`lm-mhc` at the tiny run's sizes, one block, on the target side of the tiny corpus."""
    sizes = {k: v for k, v in RUN.items() if k != "encoder_layers"}
    settings = {**sizes, "max_update": 2, "save_interval_updates": 0}
    return TrainConfig(
        "lm-mhc", f"{TINY}:de-en", str(save_dir), task="language_model", **{**settings, **changes}
    )


def test_training_with_compile_where_it_cannot_compile_runs_eagerly_saying_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(devices, "compile_problem", lambda device_type: "InvalidCxxCompiler: x")
    summary = train(_lm_mhc(tmp_path, compile=True, max_update=1))
    assert summary["updates"] == 1
    err = capsys.readouterr().err
    line = "--compile: torch.compile cannot compile on cpu (InvalidCxxCompiler: x); running eagerly"
    assert err.count(line) == 1


@pytest.mark.slow
def test_training_lm_mhc_with_compile_takes_the_eager_losses(tmp_path: Path) -> None:
    """`butcherflow train --compile` on `lm-mhc`: inductor compiles the model, the stream
    mixing in its fused form, and two updates give the eager run's losses."""
    # no dropout: inductor draws its own random numbers
    eager = train(_lm_mhc(tmp_path / "eager", dropout=0.0))
    compiled = train(_lm_mhc(tmp_path / "compiled", dropout=0.0, compile=True))
    logged = [read_log(tmp_path / name / "log.jsonl") for name in ("eager", "compiled")]
    losses = [[e["loss"] for e in log if e.get("kind") == "train"] for log in logged]
    assert eager["updates"] == compiled["updates"] == 2 and len(losses[0]) == 2
    assert losses[1] == pytest.approx(losses[0], rel=1e-4)
