"""Multistep stacks: the linear recursion computed by hand, starters, learned families, DLCL."""

from __future__ import annotations

import pytest
import torch

import butcherflow as bf


class Linear(torch.nn.Module):
    def __init__(self, weight: torch.Tensor) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(weight.clone())

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        return y @ self.weight.T


def _weights(layers: int, d: int = 4) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(layers)
    return [
        0.3 * torch.randn(d, d, generator=generator, dtype=torch.float64) for _ in range(layers)
    ]


EXPLICIT = [
    name
    for name in sorted(bf.catalog)
    if bf.catalog[name].family == "multistep"
    and bf.catalog[name].is_explicit  # type: ignore[attr-defined]
    and not bf.catalog[name].symbols  # type: ignore[attr-defined]
]


@pytest.mark.parametrize("name", EXPLICIT)
def test_stack_equals_the_recursion_by_hand(name: str) -> None:
    method = bf.catalog[name]
    assert isinstance(method, bf.LinearMultistep)
    weights = _weights(6)
    stack = bf.compile_stack(name, fields=[Linear(w) for w in weights])
    y = torch.randn(2, 3, 4, dtype=torch.float64)
    k = method.steps
    alpha = [float(a) for a in method.alpha]
    beta = [float(b) for b in method.beta]
    states, f = [y], []
    for m, w in enumerate(weights):
        f.append(states[m] @ w.T)
        if m + 1 < k:
            states.append(states[m] + f[m])  # forward Euler starts the method
            continue
        n = m + 1 - k
        acc = sum(-alpha[j] * states[n + j] + beta[j] * f[n + j] for j in range(k))
        states.append(acc / alpha[k])
    torch.testing.assert_close(stack(y), states[-1], rtol=1e-12, atol=1e-12)
    assert stack.field_calls == len(weights)  # every field output is reused, never recomputed


def test_rk_starter_reuses_the_first_stage() -> None:
    weights = _weights(3)
    stack = bf.compile_stack("leapfrog", fields=[Linear(w) for w in weights], starter="heun")
    y = torch.randn(1, 2, 4, dtype=torch.float64)
    f0 = y @ weights[0].T
    y1 = y + 0.5 * f0 + 0.5 * ((y + f0) @ weights[0].T)
    y2 = y + 2 * (y1 @ weights[1].T)
    y3 = y1 + 2 * (y2 @ weights[2].T)
    torch.testing.assert_close(stack(y), y3, rtol=1e-12, atol=1e-12)
    assert stack.field_calls == 4  # Heun's second stage is the only extra call


def test_learned_family_symbol_is_a_per_layer_parameter() -> None:
    weights = _weights(4)
    stack = bf.compile_stack(
        "lm-resnet", fields=[Linear(w) for w in weights], coefficients="learned", init={"k": 0.25}
    )
    y = torch.randn(1, 2, 4, dtype=torch.float64)
    states, f = [y], []
    for m, w in enumerate(weights):
        f.append(states[m] @ w.T)
        states.append(
            states[m] + f[m] if m == 0 else 0.25 * states[m] + 0.75 * states[m - 1] + f[m]
        )
    out = stack(y)
    torch.testing.assert_close(out, states[-1], rtol=1e-12, atol=1e-12)
    out.sum().backward()
    thetas = [p for n, p in stack.named_parameters() if "theta" in n]
    assert len(thetas) == 3 and all(p.grad is not None and p.grad.abs().sum() > 0 for p in thetas)


def test_a_declared_family_compiles_as_declared() -> None:
    """lm-resnet declares k a learned scalar starting at 1: every layer gets its own k, and
    `init=` (with the old coefficients='learned') still overrides the start."""
    weights = _weights(4)
    declared = bf.compile_stack("lm-resnet", fields=[Linear(w) for w in weights])
    assert [p.tolist() for n, p in declared.named_parameters() if "theta" in n] == [[1.0]] * 3
    y = torch.randn(1, 2, 4, dtype=torch.float64)
    states = [y]
    for w in weights:  # k = 1: the residual stack
        states.append(states[-1] + states[-1] @ w.T)
    torch.testing.assert_close(declared(y), states[-1], rtol=1e-12, atol=1e-12)
    old = bf.compile_stack(
        "lm-resnet", fields=[Linear(w) for w in weights], coefficients="learned", init={"k": 1}
    )
    assert old.code == declared.code


def test_dlcl_starts_as_the_residual_stack() -> None:
    torch.manual_seed(0)
    stack = bf.compile_stack("dlcl", fields=["san+ffn"] * 3, d_model=8, n_heads=2, d_ffn=16)
    y = torch.randn(2, 5, 8)
    layers = [stack.program.get_submodule(f"layer{m}") for m in range(3)]
    ctx = bf.nn.Context()
    expected = y
    for m, layer in enumerate(layers):
        expected = expected + layer(expected, ctx, m)
    torch.testing.assert_close(stack(y), expected)
    stack(y).sum().backward()
    assert all(p.grad is not None for p in stack.parameters())


LM_UNDECLARED = bf.LinearMultistep(["k - 1", "-k", 1], [0, 1, 0], name="lm-undeclared")


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"method": "bdf-2"}, "implicit"),
        ({"method": "rk4"}, "not a method that spans layers"),
        ({"method": LM_UNDECLARED}, "no initial value for the free symbol 'k'"),
        ({"method": LM_UNDECLARED, "coefficients": "learned"}, "no initial value"),
        ({"method": "lm-resnet", "init": {"q": 1}}, "init names symbols"),
        ({"method": "dlcl", "coefficients": "exact"}, "learned by definition"),
        ({"method": "leapfrog", "starter": "adams-bashforth-2"}, "Runge-Kutta"),
        ({"method": "leapfrog", "fields": "san"}, "one field per layer"),
        ({"method": "leapfrog", "coefficients": "gated"}, "unknown coefficient policy"),
    ],
)
def test_bad_stacks_are_refused(kwargs: dict[str, object], fragment: str) -> None:
    arguments: dict[str, object] = {"fields": ["ffn", "ffn"], "d_model": 8, "d_ffn": 16}
    arguments.update(kwargs)
    with pytest.raises(bf.DeclarationError, match=fragment):
        bf.compile_stack(**arguments)  # type: ignore[arg-type]


def test_compile_on_a_multistep_method_points_to_compile_stack() -> None:
    with pytest.raises(bf.DeclarationError, match="compile_stack"):
        bf.compile("adams-bashforth-2", field="ffn", d_model=8, d_ffn=16)


@pytest.mark.parametrize("name", ["adams-bashforth-2", "hyper-connections-4"])
def test_a_stack_without_layers_is_one_error_naming_fields(name: str) -> None:
    """Every family that spans layers gets the same check, from one place (compiler/options)."""
    with pytest.raises(bf.DeclarationError, match="a stack needs at least one layer") as info:
        bf.compile_stack(bf.catalog[name], [], d_model=16, n_heads=2, d_ffn=32)
    assert "'fields'" in str(info.value)


def test_dlcl_combines_every_earlier_field_with_its_learned_weights() -> None:
    """y_(m+1) = y_0 + sum_(l<=m) W_(m,l) F_l(y_l) (Wang et al. 2019) at weights other than 1,
    with the parameter names a trained DLCL checkpoint holds."""
    torch.manual_seed(0)
    stack = bf.compile_stack("dlcl", fields=["san+ffn"] * 3, d_model=8, n_heads=2, d_ffn=16)
    assert stack.method is bf.compiler.DLCL
    weights = [getattr(stack.program, f"weights{m}") for m in range(3)]
    with torch.no_grad():
        for w in weights:
            w.copy_(torch.randn_like(w))
    assert [n for n in stack.state_dict() if "weights" in n] == [
        f"program.weights{m}" for m in range(3)
    ]
    layers = [stack.program.get_submodule(f"layer{m}") for m in range(3)]
    ctx = bf.nn.Context()
    y0 = torch.randn(2, 5, 8)
    states, f = [y0], []
    for m, layer in enumerate(layers):
        f.append(layer(states[m], ctx, m))
        states.append(y0 + sum(weights[m][i] * f[i] for i in range(m + 1)))
    torch.testing.assert_close(stack(y0), states[-1])
