"""General linear stacks: r streams across layers, computed by hand; hyper-connections at their
declared initialisation are the residual stack under every policy; Sinkhorn keeps V doubly
stochastic; the empirical order of converted methods; bad input (issue: general linear methods
across depth)."""

from __future__ import annotations

import pytest
import torch

import butcherflow as bf
from butcherflow.analysis.convergence import convergence
from butcherflow.compiler.general_linear import GLM_POLICIES, StreamMixing
from butcherflow.methods.general_linear import GeneralLinear
from butcherflow.nn.streams import sinkhorn

DOUBLE = torch.float64
SIZES = {"d_model": 8, "n_heads": 2, "d_ffn": 16}
GLMS = [name for name in sorted(bf.catalog) if bf.catalog[name].family == "general-linear"]


class Linear(torch.nn.Module):
    def __init__(self, weight: torch.Tensor) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(weight.clone())

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        return torch.tanh(y @ self.weight.T)


def _fields(layers: int, d: int = 4) -> list[Linear]:
    g = torch.Generator().manual_seed(layers)
    return [Linear(0.5 * torch.randn(d, d, generator=g, dtype=DOUBLE)) for _ in range(layers)]


def _by_hand(method: GeneralLinear, fields: list[Linear], x: torch.Tensor) -> torch.Tensor:
    """The GLM recursion, written out: streams u ⊗ x, stages, V y + B F, mean of y(x) streams."""
    A, U, B, V = (
        [[float(e) for e in row] for row in m] for m in (method.A, method.U, method.B, method.V)
    )
    u = [sum(float(c) for c, kind, _ in terms if kind == "y") for terms in method.start]
    streams = [u_k * x for u_k in u]
    for field in fields:
        F: list[torch.Tensor] = []
        for i in range(method.stages):
            Y = sum(U[i][k] * streams[k] for k in range(method.values))
            Y = Y + sum(A[i][j] * F[j] for j in range(i))
            F.append(field(Y))
        streams = [
            sum(V[q][k] * streams[k] for k in range(method.values))
            + sum(B[q][i] * F[i] for i in range(method.stages))
            for q in range(method.values)
        ]
    plain = [t == "y(x)" for t in method.start_text()]
    return sum(s for s, p in zip(streams, plain, strict=True) if p) / sum(plain)


@pytest.mark.parametrize("name", GLMS)
def test_stack_equals_the_recursion_by_hand(name: str) -> None:
    method = bf.catalog[name]
    assert isinstance(method, GeneralLinear)
    fields = _fields(5)
    stack = bf.compile_stack(name, fields=fields)
    x = torch.randn(2, 3, 4, dtype=DOUBLE)
    torch.testing.assert_close(stack(x), _by_hand(method, fields, x), rtol=1e-12, atol=1e-12)
    assert stack.field_calls == 5 * method.stages


@pytest.mark.parametrize("policy", GLM_POLICIES)
def test_hyper_connections_start_as_the_residual_stack(policy: str) -> None:
    fields = _fields(4)
    stack = bf.compile_stack("hyper-connections-4", fields=fields, coefficients=policy)
    x = torch.randn(2, 3, 4, dtype=DOUBLE)
    expected = x
    for field in fields:
        expected = expected + field(expected)
    # Sinkhorn's V starts near I, but any row-stochastic V keeps the equal streams equal
    torch.testing.assert_close(stack.to(DOUBLE)(x), expected, rtol=1e-12, atol=1e-12)


def _train(stack: bf.CompiledBlock, steps: int = 5) -> torch.Tensor:
    optimizer = torch.optim.Adam(stack.parameters(), lr=5e-2)
    x = torch.randn(2, 5, SIZES["d_model"], dtype=DOUBLE)
    for _ in range(steps):
        optimizer.zero_grad()
        (stack(x) ** 2).mean().backward()
        optimizer.step()
    return x


@pytest.mark.parametrize("policy", ["learned", "dynamic", "sinkhorn"])
def test_policies_train_u_b_v_per_layer(policy: str) -> None:
    torch.manual_seed(0)
    stack = bf.compile_stack(
        "hyper-connections-4", ["san+ffn"] * 2, coefficients=policy, **SIZES
    ).to(DOUBLE)
    before = [v.copy() for v in stack.stream_matrices()]
    names = {n for n, _ in stack.named_parameters()}
    assert {"program.mix0.U", "program.mix1.V"} <= names
    assert ("program.mix0.proj.weight" in names) == (policy != "learned")
    _train(stack)
    after = stack.stream_matrices()
    assert len(after) == 2
    assert any(abs(a - b).max() > 1e-6 for a, b in zip(after, before, strict=True))


def test_sinkhorn_keeps_v_doubly_stochastic_per_token() -> None:
    torch.manual_seed(0)
    stack = bf.compile_stack(
        "hyper-connections-4", ["san+ffn"] * 2, coefficients="sinkhorn", iterations=30, **SIZES
    ).to(DOUBLE)
    x = _train(stack)
    mix = stack.program.get_submodule("mix1")
    assert isinstance(mix, StreamMixing) and mix.iterations == 30
    _, _, V = mix(torch.randn(4, 2, 5, SIZES["d_model"], dtype=DOUBLE) + x)  # (r, b, t, d)
    assert V.shape == (2, 5, 4, 4) and bool((V >= 0).all())
    torch.testing.assert_close(V.sum(-1), torch.ones(2, 5, 4, dtype=DOUBLE))
    # columns up to the convergence of 30 iterations near the identity (slow there)
    torch.testing.assert_close(V.sum(-2), torch.ones(2, 5, 4, dtype=DOUBLE), atol=1e-2, rtol=0)


def test_sinkhorn_projects_onto_doubly_stochastic_matrices() -> None:
    logits = torch.randn(3, 5, 5, dtype=DOUBLE)
    P = sinkhorn(logits, 200)
    torch.testing.assert_close(P.sum(-1), torch.ones(3, 5, dtype=DOUBLE))
    torch.testing.assert_close(P.sum(-2), torch.ones(3, 5, dtype=DOUBLE))


def test_dynamic_coefficients_are_per_token() -> None:
    torch.manual_seed(0)
    stack = bf.compile_stack("hyper-connections-4", ["ffn"], coefficients="dynamic", **SIZES).to(
        DOUBLE
    )
    _train(stack)
    mix = stack.program.get_submodule("mix0")
    U, B, V = mix(torch.randn(4, 2, 5, SIZES["d_model"], dtype=DOUBLE))  # (r, b, t, d)
    assert U.shape == (2, 5, 1, 4) and B.shape == (2, 5, 4, 1) and V.shape == (2, 5, 4, 4)
    assert float((V[0, 0] - V[1, 3]).abs().max().detach()) > 0  # tokens differ


@pytest.mark.parametrize("name", ["rk4", "adams-bashforth-3", "milne-simpson", "heun"])
def test_converted_methods_converge_at_their_proved_order(name: str) -> None:
    glm = GeneralLinear.from_method(bf.catalog[name])
    report = bf.check(glm)
    (curve,) = convergence(glm, report)
    assert report.order == bf.check(name).order
    assert abs(curve.slope - report.order) < 0.1, curve.slopes


def test_a_glm_that_is_not_zero_stable_has_no_curve() -> None:
    glm = GeneralLinear([[0]], [[1, 0]], [[1], [0]], [[1, 1], [0, 1]], start=["y(x)", "h*f(x)"])
    assert convergence(glm, bf.check(glm)) == []


NOT_PRECONSISTENT = GeneralLinear([[0, 0], [1, 0]], [[1], [2]], [[1, "1/2"]], [["5/2"]])
IMPLICIT = GeneralLinear([["1/2"]], [[1]], [[1]], [[1]], name="implicit-midpoint-glm")
NOT_STOCHASTIC = GeneralLinear([[0]], [[1, 0]], [[1], [0]], [[1, 0], [1, 0]], name="shift")


@pytest.mark.parametrize(
    ("method", "options", "key", "words"),
    [
        (IMPLICIT, {}, "A", "implicit"),
        (NOT_PRECONSISTENT, {}, "V", "not preconsistent"),
        (NOT_STOCHASTIC, {"coefficients": "sinkhorn"}, "V", "doubly stochastic"),
        ("hyper-connections-4", {"coefficients": "gated"}, "coefficients", "unknown"),
        ("hyper-connections-4", {"iterations": 5}, "iterations", "sinkhorn"),
        (
            "hyper-connections-4",
            {"coefficients": "sinkhorn", "iterations": 0},
            "iterations",
            "from 1 to",
        ),
        ("hyper-connections-4", {"starter": "heun"}, "starter", "does not apply"),
        (
            GeneralLinear([[0]], [[1]], [[1]], [["k"]], start=["y(x)"]),
            {},
            "method",
            "free symbols",
        ),
        (
            GeneralLinear([[0]], [["1/2", "1/2"]], [[1], [1]], [["1/2", 0], [0, 1]]),
            {},
            "V",
            "not preconsistent",
        ),
        (  # 0.33333 + 0.6667 is 1 only within the digits: the stack would drift
            GeneralLinear(
                [[0]],
                [["1/2", "1/2"]],
                [[1], [1]],
                [["0.33333", "0.6667"], ["0.6667", "0.33333"]],
                start=["y(x)", "y(x)"],
            ),
            {},
            "V",
            "not known to be preconsistent",
        ),
    ],
)
def test_bad_stacks_name_the_key(
    method: object, options: dict, key: str, words: str, declaration_error
) -> None:
    with declaration_error(f"key '{key}'", words):
        bf.compile_stack(method, ["ffn"] * 2, **SIZES, **options)  # type: ignore[arg-type]


def test_no_stream_started_at_y_is_refused(declaration_error) -> None:
    glm = GeneralLinear([[0]], [[1]], [[1]], [[1]], start=["y(x - h)"])
    with declaration_error("key 'start'", "y(x)"):
        bf.compile_stack(glm, ["ffn"], **SIZES)


def test_a_non_square_v_is_refused_by_the_declaration(declaration_error) -> None:
    with declaration_error("key 'V[0]'", "needs 2"):
        GeneralLinear([[0]], [[1, 0]], [[1], [0]], [[1, 0, 0], [0, 1, 0]])


def test_compile_on_a_glm_points_to_compile_stack() -> None:
    with pytest.raises(bf.DeclarationError, match="compile_stack"):
        bf.compile("hyper-connections-4", field="ffn", **SIZES)


def _sinkhorn_by_hand(logits: torch.Tensor, iterations: int) -> torch.Tensor:
    """mHC's projection as first written: every iteration in log space."""
    for _ in range(iterations):
        logits = logits - torch.logsumexp(logits, dim=-2, keepdim=True)
        logits = logits - torch.logsumexp(logits, dim=-1, keepdim=True)
    return logits.exp()


def _mixing_by_hand(
    stack: bf.CompiledBlock, method: GeneralLinear, fields: list[Linear], x: torch.Tensor
) -> torch.Tensor:
    """The stack's forward written per stream and per token from its own parameters: U, B, V
    read per layer (plus, per token, s·tanh(W norm(yₖ)) from stream k), Sinkhorn in log space."""
    s, r = method.stages, method.values
    A = [[float(e) for e in row] for row in method.A]
    u = [sum(float(c) for c, kind, _ in terms if kind == "y") for terms in method.start]
    streams = [u_k * x for u_k in u]
    for m, field in enumerate(fields):
        mix = stack.program.get_submodule(f"mix{m}")
        assert isinstance(mix, StreamMixing)
        U = mix.U.expand(*x.shape[:-1], s, r)
        B = mix.B.expand(*x.shape[:-1], r, s)
        V = mix.V.expand(*x.shape[:-1], r, r)
        if mix.dynamic:
            out = [torch.tanh(mix.proj(mix.norm(y))) for y in streams]  # stream k's row
            U = torch.stack([U[..., k] + mix.scale[0] * out[k][..., :s] for k in range(r)], -1)
            B = torch.stack(
                [B[..., k, :] + mix.scale[1] * out[k][..., s : 2 * s] for k in range(r)], -2
            )
            V = torch.stack(
                [V[..., k, :] + mix.scale[2] * out[k][..., 2 * s :] for k in range(r)], -2
            )
        if mix.policy == "sinkhorn":
            V = _sinkhorn_by_hand(V, mix.iterations)
        F: list[torch.Tensor] = []
        for i in range(s):
            Y = sum(U[..., i, k, None] * streams[k] for k in range(r))
            F.append(field(Y + sum(A[i][j] * F[j] for j in range(i))))
        streams = [
            sum(V[..., q, k, None] * streams[k] for k in range(r))
            + sum(B[..., q, i, None] * F[i] for i in range(s))
            for q in range(r)
        ]
    plain = [t == "y(x)" for t in method.start_text()]
    return sum(y for y, p in zip(streams, plain, strict=True) if p) / sum(plain)


MIXED = [("hyper-connections-4", p) for p in GLM_POLICIES]
MIXED += [("pcformer", p) for p in ("exact", "learned", "dynamic")]  # s = 3, A below the diagonal


@pytest.mark.parametrize(("name", "policy"), MIXED)
def test_batched_mixing_equals_the_mixing_by_hand(name: str, policy: str) -> None:
    """Output and every gradient of the batched stream mixing equal the per-stream, per-token
    recursion, with every mixing parameter moved off its initial value."""
    method = bf.catalog[name]
    assert isinstance(method, GeneralLinear)
    fields = _fields(3, d=6)
    stack = bf.compile_stack(name, fields=fields, coefficients=policy).to(DOUBLE)
    g = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for n, p in stack.named_parameters():
            if ".mix" in f".{n}" or n.startswith("program.mix"):
                p.add_(0.3 * torch.randn(p.shape, generator=g, dtype=DOUBLE))
    x = torch.randn(2, 3, 6, dtype=DOUBLE, generator=g, requires_grad=True)
    params = [x, *stack.parameters()]
    got = stack(x)
    want = _mixing_by_hand(stack, method, fields, x)
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    grads = torch.autograd.grad(got.square().sum(), params)
    wants = torch.autograd.grad(want.square().sum(), params)
    for a, b in zip(grads, wants, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


def test_sinkhorn_equals_the_log_space_iteration_for_any_spread() -> None:
    g = torch.Generator().manual_seed(3)
    logits = 20 * torch.randn(6, 4, 4, dtype=DOUBLE, generator=g)
    logits[0, :, 1] = -200.0  # a column far below the others
    logits.requires_grad_(True)
    for iterations in (1, 2, 20):
        P, Q = sinkhorn(logits, iterations), _sinkhorn_by_hand(logits, iterations)
        torch.testing.assert_close(P, Q, rtol=1e-12, atol=1e-12)
        (a,) = torch.autograd.grad((P * P.detach()).sum(), logits)
        (b,) = torch.autograd.grad((Q * Q.detach()).sum(), logits)
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("policy", GLM_POLICIES)
def test_mixing_state_dict_keys_and_shapes_are_kept(policy: str) -> None:
    """Checkpoints saved before the batched mixing still load: the same keys and shapes."""
    stack = bf.compile_stack("hyper-connections-4", ["ffn"], coefficients=policy, **SIZES)
    got = {
        k: tuple(v.shape)
        for k, v in stack.state_dict().items()
        if "mix" in k or k in ("program.u", "program.w")
    }
    want = {"program.mix0.U": (1, 4), "program.mix0.B": (4, 1), "program.mix0.V": (4, 4)}
    if policy in ("dynamic", "sinkhorn"):
        want |= {
            "program.mix0.norm.weight": (8,),
            "program.mix0.norm.bias": (8,),
            "program.mix0.proj.weight": (6, 8),
            "program.mix0.scale": (3,),
        }
    if policy == "birkhoff":  # V from its logits over the 4! permutations (a new policy)
        del want["program.mix0.V"]
        want["program.mix0.parametrizations.V.original"] = (24,)
    assert got == want | {"program.u": (4,), "program.w": (4,)}


def test_sinkhorn_gradient_passes_gradcheck() -> None:
    """The hand-written gradient of the normalisations against finite differences."""
    logits = torch.randn(2, 3, 3, dtype=DOUBLE, generator=torch.Generator().manual_seed(5))
    assert torch.autograd.gradcheck(lambda L: sinkhorn(L, 4), (logits.requires_grad_(True),))


@pytest.mark.parametrize("policy", GLM_POLICIES)
def test_stacks_train_under_bfloat16_autocast(policy: str) -> None:
    """Mixed precision (`--precision bf16`): the in-place updates take autocast's dtype."""
    torch.manual_seed(0)
    stack = bf.compile_stack("hyper-connections-4", ["san+ffn"] * 2, coefficients=policy, **SIZES)
    x = torch.randn(2, 5, SIZES["d_model"])
    want = stack(x)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = stack(x)
    got.float().square().sum().backward()
    torch.testing.assert_close(got.float(), want, rtol=0.05, atol=0.05)
    assert all(p.grad is not None for p in stack.parameters())
