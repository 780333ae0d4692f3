"""`bf.extract` on hand-written blocks: the integrator each computes, its proof, the round trip
through the compiler, and one clear line for every bad input."""

from __future__ import annotations

import pytest
import sympy
import torch
from torch import nn

import butcherflow as bf

D = 16


def _mlp() -> nn.Module:
    return nn.Sequential(nn.LayerNorm(D), nn.Linear(D, 32), nn.GELU(), nn.Linear(32, D))


class PreNorm(nn.Module):
    """The pre-norm Transformer layer: y + A(y), then + M(...): Lie-Trotter with Euler steps."""

    def __init__(self) -> None:
        super().__init__()
        self.ln1, self.attn = nn.LayerNorm(D), nn.Linear(D, D)
        self.ln2, self.mlp = nn.LayerNorm(D), nn.Sequential(nn.Linear(D, 32), nn.GELU())
        self.out = nn.Linear(32, D)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.out(self.mlp(self.ln2(x)))


class Macaron(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ffn1, self.attn, self.ffn2 = _mlp(), _mlp(), _mlp()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + 0.5 * self.ffn1(x)
        x = x + self.attn(x)
        return x + 0.5 * self.ffn2(x)


class RK4(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.f = _mlp()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        k1 = self.f(x)
        k2 = self.f(x + k1 / 2)
        k3 = self.f(x + k2 / 2)
        k4 = self.f(x + k3)
        return x + (k1 + 2 * k2 + 2 * k3 + k4) / 6


class Parallel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ln, self.attn, self.mlp = nn.LayerNorm(D), nn.Linear(D, D), _mlp()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.ln(x)
        return x + self.attn(h) + self.mlp(h)


class LayerStages(nn.Module):
    """The ODE Transformer's released RK2: stages store whole layers L(y) = y + F(y)."""

    def __init__(self) -> None:
        super().__init__()
        self.f = _mlp()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        l1 = x + self.f(x)
        l2 = (x + l1) + self.f(x + l1)
        return x + 0.5 * (l1 + l2)


class PostNorm(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attn, self.norm1 = nn.Linear(D, D), nn.LayerNorm(D)
        self.mlp, self.norm2 = _mlp(), nn.LayerNorm(D)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.norm1(x + self.attn(x))
        return self.norm2(x + self.mlp(x))


def _x() -> torch.Tensor:
    return torch.randn(2, 5, D, generator=torch.Generator().manual_seed(0))


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


def test_a_pre_norm_layer_is_lie_trotter_with_euler_steps() -> None:
    found = bf.extract(
        PreNorm().eval(), _x(), fields={"attn": ("ln1", "attn"), "mlp": ("ln2", "mlp", "out")}
    )
    assert isinstance(found.method, bf.Splitting)
    assert [(op, str(c)) for op, c in found.method.steps] == [("attn", "1"), ("mlp", "1")]
    assert found.report.order == 1
    assert found.verify() < 1e-13


def test_macaron_is_strang() -> None:
    found = bf.extract(
        Macaron().eval(), _x(), fields={"ffn1": "ffn1", "attn": "attn", "ffn2": "ffn2"}
    )
    assert [(op, str(c)) for op, c in found.method.steps] == [
        ("ffn1", "1/2"),
        ("attn", "1"),
        ("ffn2", "1/2"),
    ]
    assert found.verify() < 1e-13


def test_a_hand_written_rk4_reads_as_the_catalog_rk4() -> None:
    found = bf.extract(RK4().eval(), _x(), fields={"f": "f"})
    rk4 = bf.catalog["rk4"]
    assert isinstance(found.method, bf.ButcherTableau)
    assert found.method.A == rk4.A and found.method.b == rk4.b
    assert found.report.order == 4 and found.declared.exact
    assert found.verify() < 1e-13


def test_parallel_branches_are_euler_on_the_summed_field() -> None:
    found = bf.extract(
        Parallel().eval(), _x(), fields={"attn": ("ln", "attn"), "mlp": ("ln", "mlp")}
    )
    assert isinstance(found.method, bf.ButcherTableau) and found.method.stages == 1
    assert found.declared.groups == {"F": ("attn", "mlp")}
    assert found.verify() < 1e-13


def test_layer_stages_read_as_the_general_linear_method_the_compiler_documents() -> None:
    found = bf.extract(LayerStages().eval(), _x(), fields={"f": "f"})
    expected = bf.GeneralLinear.from_layer_stages(bf.catalog["heun"])
    assert isinstance(found.method, bf.GeneralLinear)
    assert (found.method.A, found.method.U, found.method.B, found.method.V) == (
        expected.A,
        expected.U,
        expected.B,
        expected.V,
    )
    assert found.verify() < 1e-13


def test_post_norm_is_refused_naming_the_norm() -> None:
    with pytest.raises(bf.ExtractionError, match=r"input of call 2 .*linearity breaks in norm1"):
        bf.extract(PostNorm().eval(), _x(), fields={"attn": "attn", "mlp": "mlp"})


def test_the_summary_names_fields_declaration_and_proof() -> None:
    text = str(bf.extract(RK4().eval(), _x(), fields={"f": "f"}))
    assert "field f: f" in text and 'b = ["1/6", "1/3", "1/3", "1/6"]' in text and "order" in text


class InPlace(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.f = _mlp()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x += self.f(x)
        return x


class Noisy(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.f = _mlp()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.f(x) + 1e-3 * torch.randn_like(x)


class NonTensor(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.f = _mlp()
        self.g = nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.g(None)
        return x + self.f(x)


@pytest.mark.parametrize(
    "module,fields,message",
    [
        (
            PreNorm(),
            {"attn": "atn"},
            r"PreNorm: field 'attn' names 'atn', which is not a sub-module",
        ),
        (RK4().train(), {"f": "f"}, r"RK4 is in training mode.*call module.eval\(\)"),
        (InPlace(), {"f": "f"}, r"InPlace updates its state in place"),
        (Noisy(), {"f": "f"}, r"Noisy: two identical calls give different outputs"),
        (NonTensor(), {"f": "f", "g": "g"}, r"NonTensor.g \(field 'g'\) is called with NoneType"),
        (PreNorm(), {"attn": "attn", "x": "out.weight"}, r"names 'out.weight', which is not"),
        (Macaron(), {"f": ("attn",), "g": ()}, r"field 'g' must be a sub-module path"),
        (PreNorm(), {"mlp": ("ln2", "mlp")}, r"ends in 'mlp', which returns shape \(2, 5, 32\)"),
    ],
)
def test_bad_inputs_get_one_line(module: nn.Module, fields: dict, message: str) -> None:
    if not isinstance(module, RK4):
        module.eval()
    with pytest.raises(bf.ExtractionError, match=message) as caught:
        bf.extract(module, _x(), fields=fields)
    assert "\n" not in str(caught.value)


def test_a_field_that_is_never_called_is_named() -> None:
    layer = PreNorm().eval()
    layer.unused = nn.Linear(D, D)
    with pytest.raises(bf.ExtractionError, match=r"field 'u' \(unused\) is never called"):
        bf.extract(layer, _x(), fields={"attn": "attn", "u": "unused"})


def test_rewire_with_the_found_method_reproduces_the_layer() -> None:
    layer, x = Macaron().eval(), _x()
    found = bf.extract(layer, x, fields={"ffn1": "ffn1", "attn": "attn", "ffn2": "ffn2"})
    with torch.no_grad():
        assert torch.equal(found.rewire(found.method)(x), layer(x))


def test_rewire_to_rk4_on_the_whole_layer_computes_rk4() -> None:
    layer, x = PreNorm().eval(), _x()
    found = bf.extract(layer, x, fields={"attn": ("ln1", "attn"), "mlp": ("ln2", "mlp", "out")})
    rewired = found.rewire("rk4")  # a name; a two-field layer's one field is the whole layer
    f = lambda y: layer(y) - y  # noqa: E731
    with torch.no_grad():
        k1 = f(x)
        k2 = f(x + k1 / 2)
        k3 = f(x + k2 / 2)
        k4 = f(x + k3)
        expected = x + (k1 + 2 * k2 + 2 * k3 + k4) / 6
        assert torch.allclose(rewired(x), expected, atol=1e-6)


def test_rewire_refuses_a_field_that_leaves_another_out() -> None:
    layer, x = PreNorm().eval(), _x()
    found = bf.extract(layer, x, fields={"attn": ("ln1", "attn"), "mlp": ("ln2", "mlp", "out")})
    with pytest.raises(bf.ExtractionError, match=r"field='attn' leaves 'mlp' of PreNorm out"):
        found.rewire(bf.catalog["rk4"], field="attn")


def _pre_norm_found() -> tuple[nn.Module, torch.Tensor, bf.Extracted]:
    layer, x = PreNorm().eval(), _x()
    fields = {"attn": ("ln1", "attn"), "mlp": ("ln2", "mlp", "out")}
    return layer, x, bf.extract(layer, x, fields=fields)


def test_a_catalog_splitting_is_put_on_the_layers_fields_as_compile_does() -> None:
    layer, x, found = _pre_norm_found()
    rewired = found.rewire("strang", fields={"A": "mlp", "B": "attn"})
    a = lambda y: layer.attn(layer.ln1(y))  # noqa: E731
    m = lambda y: layer.out(layer.mlp(layer.ln2(y)))  # noqa: E731
    with torch.no_grad():
        y = x + m(x) / 2
        y = y + a(y)
        assert torch.allclose(rewired(x), y + m(y) / 2, atol=1e-6)


def test_a_splitting_without_fields_takes_the_layers_fields_in_call_order() -> None:
    _, x, found = _pre_norm_found()
    by_order = found.rewire("strang")  # A -> attn, B -> mlp: the fields in call order
    named = found.rewire("strang", fields={"A": "attn", "B": "mlp"})
    with torch.no_grad():
        assert torch.equal(by_order(x), named(x))


@pytest.mark.parametrize(
    "method, fields, message",
    [
        ("strang-3", None, r"'strang-3' has 3 operator\(s\) \(A, B, C\) and PreNorm 2"),
        ("strang", {"A": "mlp", "B": "atn"}, r"fields\['B'\] = 'atn' names no field of PreNorm"),
        ("strang", {"A": "mlp", "C": "attn"}, r"maps the operators of 'strang' \(A, B\) wrongly"),
        ("strang", {"A": "mlp", "B": "mlp"}, r"leaves 'attn' of PreNorm out of 'strang'"),
    ],
)
def test_a_splitting_that_does_not_fit_the_layer_is_refused(
    method: str, fields: dict | None, message: str
) -> None:
    _, _, found = _pre_norm_found()
    with pytest.raises(bf.ExtractionError, match=message):
        found.rewire(method, fields=fields)


class StaticStreams(nn.Module):
    """Two streams, static hyper-connection weights: h = ½x₀ + ½x₁, out = V x + b F(h)."""

    def __init__(self, folded: bool) -> None:
        super().__init__()
        self.f, self.folded = _mlp(), folded

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.folded:  # (batch·2, time, d), stream fastest
            x = x.reshape(-1, 2, *x.shape[1:]).movedim(1, -2)
        x0, x1 = x[..., 0, :], x[..., 1, :]
        k = self.f(0.5 * x0 + 0.5 * x1)
        out = torch.stack([x0 + k, 0.5 * x0 + 0.5 * x1 + 2 * k], dim=-2)
        if self.folded:
            out = out.movedim(-2, 1).reshape(-1, *out.shape[1:-2], out.shape[-1])
        return out


@pytest.mark.parametrize("folded", [False, True])
def test_static_streams_read_as_an_exact_general_linear_method(folded: bool) -> None:
    x = torch.randn(4, 5, 2, D) if not folded else torch.randn(8, 5, D)
    streams = ("batch", 2) if folded else 2
    found = bf.extract(StaticStreams(folded).eval(), x, fields={"f": "f"}, streams=streams)
    m = found.method
    assert isinstance(m, bf.GeneralLinear) and found.declared.exact
    half = sympy.Rational(1, 2)
    expected = bf.GeneralLinear([[0]], [[half, half]], [[1], [2]], [[1, 0], [half, half]])
    assert (m.U, m.B, m.V) == (expected.U, expected.B, expected.V)
    assert not found.varies and found.verify() < 1e-13


class Gated(nn.Module):
    """y + g·F(y) with a per-token sigmoid gate g read from the state through `gate`."""

    def __init__(self) -> None:
        super().__init__()
        self.f, self.gate = _mlp(), nn.Linear(D, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.sigmoid(self.gate(x)) * self.f(x)


def test_a_state_gate_reads_per_token_weights() -> None:
    layer, x = Gated().eval(), _x()
    found = bf.extract(layer, x, fields={"f": "f"})
    with torch.no_grad():
        gate = torch.sigmoid(layer.gate(x)).reshape(-1).numpy()
    assert found.varies.token and found.varies.state
    assert abs(found.varies.B[:, 0, 0] - gate).max() < 1e-6  # float32 gate, float64 fit
    assert found.verify() < 1e-13


# Up to 13 stages: the extraction of a 17- to 35-stage tableau (Feagin, Ono, Curtis, Hairer)
# takes seconds, but `bf.check` of its numeric reading (14-digit entries) spends minutes
# isolating the real roots of its stability polynomial.
MAX_STAGES = 13


def _explicit_tableaux() -> list[object]:
    params = []
    for name in bf.catalog:
        m = bf.catalog[name]
        small = isinstance(m, bf.ButcherTableau) and m.stages <= MAX_STAGES
        if small and not m.is_implicit and not m.symbols:
            marks = [pytest.mark.slow] if m.stages > 5 else []
            params.append(pytest.param(name, marks=marks, id=name))
    return params


@pytest.mark.parametrize("name", _explicit_tableaux())
def test_extract_inverts_the_compiler_on_every_explicit_catalog_tableau(name: str) -> None:
    """Compile a catalog tableau (typed from its paper) onto a module, read it back: the same
    coefficients (the stages the compiled block computes), exact rationals recognised."""
    from butcherflow.compiler.runge_kutta import _needed_stages

    method = bf.catalog[name]
    field = nn.Sequential(nn.LayerNorm(8), nn.Linear(8, 8), nn.Tanh())
    block = bf.compile(method, field=field, d_model=8).eval()
    found = bf.extract(block, torch.randn(2, 3, 8), fields={"f": "program.field"})
    weighted = {i for i in range(method.stages) if not method.b[i].is_zero}
    used = sorted(_needed_stages(method, weighted))
    declared = [[method.A[i][j] for j in used] + [method.b[i]] for i in used]
    read = [[*found.method.A[k], found.method.b[k]] for k in range(len(used))]
    for row, got in zip(declared, read, strict=True):
        for exact, value in zip(row, got, strict=True):
            assert abs(float(exact) - float(value)) <= 1e-9 * max(1.0, abs(float(exact)))
            small = exact.is_Rational and exact.q <= 1000 and abs(exact) <= 10
            assert not small or exact == value
    # a numeric reading keeps 14 digits: entries near 200 (Verner's efficient pairs) move the
    # output by ~1e-10 of its size
    assert found.verify() < (1e-12 if found.declared.exact else 1e-9)


class AdamsBashforthStack(nn.Module):
    """Six layers driven by AB2 across depth: y_{m+1} = y_m + 3/2 F_m(y_m) − 1/2 F_{m−1}(y_{m−1}),
    the first layer a forward Euler step."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList(_mlp() for _ in range(6))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        previous = None
        for layer in self.layers:
            k = layer(x)
            x = x + k if previous is None else x + 1.5 * k - 0.5 * previous
            previous = k
        return x


def test_a_stack_across_depth_reads_as_the_catalog_multistep_method() -> None:
    fields = {f"f{i}": f"layers.{i}" for i in range(6)}
    found = bf.extract(AdamsBashforthStack().eval(), _x(), fields=fields)
    ab2 = bf.catalog["adams-bashforth-2"]
    assert isinstance(found.method, bf.LinearMultistep)
    assert (found.method.alpha, found.method.beta) == (ab2.alpha, ab2.beta)
    assert found.report.order == 2
    assert found.verify() < 1e-13


def test_a_twelve_layer_stack_reads_as_one_splitting() -> None:
    """The time targets (a layer < 2 s, this stack < 10 s) are `butcherflow bench extract`'s."""
    stack = nn.Sequential(*(PreNorm() for _ in range(12))).eval()
    fields: dict[str, tuple[str, ...]] = {}
    for i in range(12):
        fields[f"attn{i}"] = (f"{i}.ln1", f"{i}.attn")
        fields[f"mlp{i}"] = (f"{i}.ln2", f"{i}.mlp", f"{i}.out")
    found = bf.extract(stack, _x(), fields=fields)
    assert isinstance(found.method, bf.Splitting) and len(found.method.steps) == 24


def test_a_general_linear_method_rewires_a_layer_with_streams() -> None:
    layer, x = StaticStreams(folded=False).eval(), torch.randn(4, 5, 2, D)
    found = bf.extract(layer, x, fields={"f": "f"}, streams=2)
    with torch.no_grad():
        assert torch.allclose(found.rewire(found.method)(x), layer(x), atol=1e-6)


class TupleLayer(nn.Module):
    """Returns (state, attention weights), as older transformers layers do; the state is passed
    by keyword."""

    def __init__(self) -> None:
        super().__init__()
        self.attn, self.mlp = _mlp(), _mlp()

    def forward(self, *, mask: torch.Tensor, hidden_states: torch.Tensor) -> tuple:
        h = hidden_states + self.attn(hidden_states)
        return h + self.mlp(h), mask


def test_a_layer_returning_a_tuple_is_read_and_rewired_in_its_structure() -> None:
    layer, x = TupleLayer().eval(), _x()
    found = bf.extract(
        layer, mask=torch.ones(2, 5), hidden_states=x, fields={"a": "attn", "m": "mlp"}
    )
    assert found.verify() < 1e-13
    out = found.rewire(found.method)(mask=torch.ones(2, 5), hidden_states=x)
    assert isinstance(out, tuple) and len(out) == 2 and out[1] is None
    with torch.no_grad():
        assert torch.equal(out[0], layer(mask=torch.ones(2, 5), hidden_states=x)[0])


def test_verify_is_a_real_comparison_a_changed_field_is_seen() -> None:
    found = bf.extract(RK4().eval(), _x(), fields={"f": "f"})
    with torch.no_grad():
        found.session.work.get_submodule("f.1").weight.mul_(2)  # the copy verify runs on
    assert found.verify() > 1e-3


class WeightedParallel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attn, self.mlp = _mlp(), _mlp()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.attn(x) + 0.5 * self.mlp(x)


def test_parallel_branches_of_unequal_weight_are_an_additive_method() -> None:
    found = bf.extract(WeightedParallel().eval(), _x(), fields={"attn": "attn", "mlp": "mlp"})
    assert isinstance(found.method, bf.AdditiveRungeKutta)
    assert [str(b) for b in found.method.b] == ["1", "1/2"] and found.report.order == 0


class ScaledState(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attn, self.mlp = _mlp(), _mlp()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return 0.5 * x + self.attn(x) + 0.5 * self.mlp(x)


def test_distinct_fields_with_the_state_scaled_are_refused() -> None:
    with pytest.raises(bf.ExtractionError, match=r"state scaled .*output \[\['1/2'\]\]"):
        bf.extract(ScaledState().eval(), _x(), fields={"attn": "attn", "mlp": "mlp"})


class SecondStreamLayer(nn.Module):
    """Returns beside its state a tensor it computes (XLNet's query stream)."""

    def __init__(self) -> None:
        super().__init__()
        self.attn, self.mlp = _mlp(), _mlp()

    def forward(self, x: torch.Tensor) -> tuple:
        h = x + self.attn(x)
        return h + self.mlp(h), 2 * h


def test_a_layer_returning_a_tensor_it_computes_beside_its_state_is_not_rewired() -> None:
    found = bf.extract(SecondStreamLayer().eval(), _x(), fields={"a": "attn", "m": "mlp"})
    with pytest.raises(bf.ExtractionError, match=r"returns a tensor of shape .* \(output 1\)"):
        found.rewire(found.method)


class FlatField(nn.Module):
    """Its field reads the state flattened to (tokens, d): the same numbers, another shape."""

    def __init__(self) -> None:
        super().__init__()
        self.mlp = _mlp()

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        return y + 0.5 * self.mlp(y.reshape(-1, y.shape[-1])).reshape(y.shape)


class MeanOfStreams(nn.Module):
    """(batch, time, r, d): the field reads the streams' mean and adds to every stream."""

    def __init__(self) -> None:
        super().__init__()
        self.mlp = _mlp()

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        return y + self.mlp(y.mean(-2)).unsqueeze(-2)


def test_a_field_may_read_the_state_reshaped() -> None:
    found = bf.extract(FlatField().eval(), _x(), fields={"F": "mlp"})
    assert found.verify() < 1e-12


def test_a_negative_streams_axis_is_kept_and_rewires_states_of_another_rank() -> None:
    module = MeanOfStreams().eval()
    found = bf.extract(module, torch.randn(2, 3, 2, D), fields={"F": "mlp"}, streams=-2)
    assert found.streams == -2
    rewired = found.rewire(found.method)
    y = torch.randn(3, 2, D)  # one rank fewer than the state it was read on
    with torch.no_grad():
        torch.testing.assert_close(rewired(y), module(y))
