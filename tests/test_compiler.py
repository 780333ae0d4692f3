"""The compiler: integrators -> blocks.

- Linear fields F(y) = yWᵀ: an RK block is y·R(Wᵀ) with R the stability function (every catalog
  tableau, random ones), a splitting is the product of its sub-steps' matrices.
- The paper forms with real fields: the ODE Transformer's RK2/RK4/gated RK2 (the paper's
  formulas, not the official code's staging), Macaron's FFN(½)-SAN-FFN(½), a pre-norm
  Transformer layer for Euler.
- Dead terms are not computed, stage tensors are released, gradients reach every parameter,
  dropout is seeded, `torch.compile` agrees, and bad arguments are refused with clear errors.

Everything numerical runs in float64.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator
from fractions import Fraction

import pytest
import sympy
import torch
from catalog_sweep import sweep
from closeness import assert_close
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import Tensor, nn

import butcherflow as bf
from butcherflow.compiler import StageGate
from butcherflow.methods.files import from_dict
from butcherflow.nn import Context, Field, make_field

DOUBLE = torch.float64
D, H, DFF = 8, 2, 16
SIZES: dict = {"d_model": D, "n_heads": H, "d_ffn": DFF}
WIDTH = 6  # width of the linear-field tests


def _names(family: str, keep: Callable[[bf.Method], bool] = lambda m: True) -> list[str]:
    return [n for n in sorted(bf.catalog) if bf.catalog[n].family == family and keep(bf.catalog[n])]


EXPLICIT = _names("runge-kutta", lambda m: m.is_explicit and not m.symbols)
IMPLICIT = _names("runge-kutta", lambda m: m.is_implicit and not m.symbols)
DIRK = [n for n in IMPLICIT if bf.catalog[n].is_diagonally_implicit]
FULLY_IMPLICIT = [n for n in IMPLICIT if not bf.catalog[n].is_diagonally_implicit]
FAMILIES_WITH_SYMBOLS = _names("runge-kutta", lambda m: bool(m.symbols))  # parameters declared
SPLITTINGS = _names("splitting", lambda m: m.substep is not None)
EXACT_FLOW_SPLITTINGS = _names("splitting", lambda m: m.substep is None)
MULTISTEP = _names("multistep")


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


@pytest.fixture
def float64_default() -> Iterator[None]:
    """Create every parameter in float64, so that a learned coefficient initialised from the
    tableau is not first rounded to float32 (see `test_trainable_policies_start_at_the_tableau`
    for that rounding)."""
    dtype = torch.get_default_dtype()
    torch.set_default_dtype(DOUBLE)
    yield
    torch.set_default_dtype(dtype)


# -- helpers ------------------------------------------------------------------------------------


class Linear(nn.Module):
    """F(y) = y Wᵀ."""

    def __init__(self, weight: Tensor) -> None:
        super().__init__()
        self.weight = nn.Parameter(weight.clone())

    def forward(self, y: Tensor) -> Tensor:
        return y @ self.weight.T


def small_matrix(seed: int = 0, norm: float = 0.3, width: int = WIDTH) -> Tensor:
    """A random matrix of spectral norm `norm`."""
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(width, width, generator=g, dtype=DOUBLE)
    return w * (norm / torch.linalg.matrix_norm(w, ord=2))


def randn(*shape: int, seed: int = 1) -> Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=DOUBLE)


def polynomial_at(expr: sympy.Expr, z: sympy.Symbol, m: Tensor) -> Tensor:
    """p(M) by Horner's rule, coefficients evaluated at 40 digits."""
    coeffs = sympy.Poly(sympy.expand(expr), z).all_coeffs()
    eye = torch.eye(m.shape[0], dtype=m.dtype)
    result = torch.zeros_like(m)
    for c in coeffs:
        result = result @ m + float(sympy.N(c, 40)) * eye
    return result


def rational_at(expr: sympy.Expr, m: Tensor) -> Tensor:
    """R(M) = P(M) Q(M)⁻¹ for R = P/Q a rational function of its one symbol."""
    expr = sympy.sympify(expr)
    symbols = expr.free_symbols
    assert len(symbols) <= 1, f"R has symbols {symbols}"
    z = next(iter(symbols)) if symbols else sympy.Symbol("z")
    num, den = sympy.fraction(sympy.together(expr))
    scale = den.subs(z, 0)  # Q(0) != 0 for a method: normalise to keep the coefficients small
    num, den = sympy.expand(num / scale), sympy.expand(den / scale)
    return polynomial_at(num, z, m) @ torch.linalg.inv(polynomial_at(den, z, m))


def is_polynomial(expr: sympy.Expr) -> bool:
    return not sympy.fraction(sympy.together(sympy.sympify(expr)))[1].free_symbols


def named(field: str = "san+ffn", **options: object) -> dict:
    return {"field": field, **SIZES, **options}


def stage_users(method: bf.ButcherTableau, weighted: set[int]) -> set[int]:
    """Stages whose value reaches the output (the weighted ones and what they depend on)."""
    used: set[int] = set()
    todo = list(weighted)
    while todo:
        i = todo.pop()
        if i not in used:
            used.add(i)
            todo.extend(j for j in range(method.stages) if method.A[i][j] != 0)
    return used


def released_names(code: str) -> set[str]:
    """Names that the generated code sets to None (`a = b = None` after the last use)."""
    released: set[str] = set()
    for statement in re.findall(r";\s+([\w\s=]+= None)", code):
        released.update(part.strip() for part in statement.split("=")[:-1])
    return released


def field_call_names(code: str) -> list[str]:
    return re.findall(r"^\s*(\w+) = self\.\w+\(", code, flags=re.MULTILINE)


# -- the catalog is really there ------------------------------------------------------------------


def test_the_catalog_has_every_kind_this_file_parametrizes_over() -> None:
    assert {"euler", "heun", "rk4", "dormand-prince-5", "feagin-10"} <= set(EXPLICIT)
    assert DIRK and FULLY_IMPLICIT
    assert {"backward-euler", "sdirk-2"} <= set(DIRK)
    assert "gauss-legendre-2" in FULLY_IMPLICIT
    assert {"strang", "lie-trotter", "strang-rk4"} <= set(SPLITTINGS)
    assert {"rk2-gated", "rk2-learned"} <= set(FAMILIES_WITH_SYMBOLS)
    assert EXACT_FLOW_SPLITTINGS and MULTISTEP


# -- 1. linear fields: y·R(Wᵀ) ----------------------------------------------------------------


@pytest.mark.parametrize("name", sweep(EXPLICIT))
def test_explicit_block_with_a_linear_field_is_the_stability_polynomial(name: str) -> None:
    w = small_matrix()
    y = randn(2, 3, WIDTH)
    block = bf.compile(name, field=Linear(w))
    r = bf.check(name).stability_function
    assert is_polynomial(r)
    expected = y @ rational_at(r, w.T)
    assert_close(block(y), expected)
    z = next(iter(sympy.sympify(r).free_symbols))
    if sympy.expand(r - 1 - z) != 0:  # the comparison can tell the method from Euler
        assert (block(y) - (y + y @ w.T)).abs().max() > 1e-6


@pytest.mark.parametrize("name", sweep(IMPLICIT))
def test_implicit_block_converges_to_the_stability_function(name: str) -> None:
    w = small_matrix(norm=0.2)
    y = randn(2, 3, WIDTH)
    r = bf.check(name).stability_function
    expected = y @ rational_at(r, w.T)
    block = bf.compile(name, field=Linear(w), iterations=40)
    assert_close(block(y), expected, 1e-10)


@pytest.mark.parametrize("name", ["gauss-legendre-2", "radau-iia-5", "sdirk-2", "backward-euler"])
def test_implicit_error_shrinks_with_the_iterations(name: str) -> None:
    w = small_matrix(norm=0.3)
    y = randn(2, 3, WIDTH)
    expected = y @ rational_at(bf.check(name).stability_function, w.T)
    errors = [
        (bf.compile(name, field=Linear(w), iterations=n)(y) - expected).abs().max().item()
        for n in (1, 3, 6)
    ]
    assert errors[0] > errors[1] > errors[2]
    assert errors[0] > 1e-6  # one sweep is not the implicit method yet


@pytest.mark.parametrize(
    ("name", "iterations"),
    [("rk4", None), ("dormand-prince-5", None), ("gauss-legendre-2", 40), ("sdirk-2", 40)],
)
def test_step_size_scales_the_field(name: str, iterations: int | None) -> None:
    w = small_matrix(norm=0.2)
    y = randn(2, 3, WIDTH)
    block = bf.compile(name, field=Linear(w), step_size=0.5, iterations=iterations)
    expected = y @ rational_at(bf.check(name).stability_function, 0.5 * w.T)
    assert_close(block(y), expected, 1e-10)


@pytest.mark.usefixtures("float64_default")
def test_learned_step_size_starts_at_one_and_learns() -> None:
    w = small_matrix()
    y = randn(2, 3, WIDTH)
    block = bf.compile("rk4", field=Linear(w), step_size="learned")
    assert_close(block(y), bf.compile("rk4", field=Linear(w))(y), 1e-14)
    with torch.no_grad():
        block.program.h.fill_(0.5)
    expected = y @ rational_at(bf.check("rk4").stability_function, 0.5 * w.T)
    assert_close(block(y), expected)
    block(y).pow(2).sum().backward()
    assert block.program.h.grad is not None and block.program.h.grad.abs() > 0


fractions = st.fractions(min_value=-2, max_value=2, max_denominator=6)


@st.composite
def explicit_tableaux(draw: st.DrawFn) -> bf.ButcherTableau:
    s = draw(st.integers(1, 5))
    sparse = st.one_of(st.just(Fraction(0)), fractions)
    a = [[draw(sparse) if j < i else Fraction(0) for j in range(s)] for i in range(s)]
    b = [draw(sparse) for _ in range(s)]
    if all(x == 0 for x in b):
        b[-1] = Fraction(1)
    return bf.ButcherTableau([[str(x) for x in row] for row in a], [str(x) for x in b])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tableau=explicit_tableaux(), h=st.sampled_from([1.0, 0.5]))
def test_random_explicit_tableaux_with_a_linear_field(tableau: bf.ButcherTableau, h: float) -> None:
    w = small_matrix(seed=3)
    y = randn(2, 2, WIDTH)
    block = bf.compile(tableau, field=Linear(w), step_size=h)
    expected = y @ rational_at(bf.check(tableau).stability_function, h * w.T)
    assert_close(block(y), expected)
    # exactly the stages that reach the output are evaluated
    weighted = {i for i in range(tableau.stages) if tableau.b[i] != 0}
    assert block.field_calls == len(stage_users(tableau, weighted))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    diagonal=st.lists(st.sampled_from(["1/4", "1/3", "1/2", "0"]), min_size=1, max_size=3),
    data=st.data(),
)
def test_random_diagonally_implicit_tableaux(diagonal: list[str], data: st.DataObject) -> None:
    s = len(diagonal)
    below = [[data.draw(fractions) for _ in range(s)] for _ in range(s)]
    a = [
        [diagonal[i] if i == j else str(below[i][j]) if j < i else "0" for j in range(s)]
        for i in range(s)
    ]
    b = [str(data.draw(fractions)) for _ in range(s)]
    tableau = bf.ButcherTableau(a, b)
    w = small_matrix(seed=4, norm=0.2)
    y = randn(2, 2, WIDTH)
    block = bf.compile(tableau, field=Linear(w), iterations=40)
    expected = y @ rational_at(bf.check(tableau).stability_function, w.T)
    assert_close(block(y), expected, 1e-10)


# -- 2. splittings: the product of the sub-steps ---------------------------------------------------


def splitting_matrix(name: str, weights: dict[str, Tensor], h: float = 1.0) -> Tensor:
    method = bf.catalog[name]
    r = bf.check(method.substep).stability_function
    product = torch.eye(WIDTH, dtype=DOUBLE)
    for op, c in method.steps:
        product = product @ rational_at(r, h * float(c) * weights[op].T)
    return product


def linear_fields(name: str) -> tuple[dict[str, Tensor], dict[str, nn.Module]]:
    ops = bf.catalog[name].operators
    weights = {op: small_matrix(seed=10 + k) for k, op in enumerate(ops)}
    return weights, {op: Linear(w) for op, w in weights.items()}


@pytest.mark.usefixtures("float64_default")
@pytest.mark.parametrize("name", sweep(SPLITTINGS))
@pytest.mark.parametrize("coefficients", ["exact", "learned"])
def test_splitting_with_linear_fields_is_the_product_of_its_substeps(
    name: str, coefficients: str
) -> None:
    weights, fields = linear_fields(name)
    y = randn(2, 3, WIDTH)
    block = bf.compile(name, fields=fields, coefficients=coefficients)
    assert_close(block(y), y @ splitting_matrix(name, weights))
    method = bf.catalog[name]
    assert block.field_calls == len(method.steps) * method.substep.stages
    if coefficients == "learned":
        block(y).pow(2).sum().backward()
        grad = block.program.step_weights.grad
        assert grad is not None and bool((grad != 0).all())


@pytest.mark.parametrize("name", sweep(SPLITTINGS))
def test_splitting_copies_modules_per_step_unless_shared(name: str) -> None:
    _, fields = linear_fields(name)
    method = bf.catalog[name]
    y = randn(2, 3, WIDTH)
    separate = bf.compile(name, fields=copy.deepcopy(fields))
    shared = bf.compile(name, fields=fields, share=True)
    assert separate.num_parameters == len(method.steps) * WIDTH * WIDTH
    assert shared.num_parameters == len(method.operators) * WIDTH * WIDTH
    assert_close(shared(y), separate(y), 1e-14)  # equal at initialisation...
    last = max(k for k, (op, _) in enumerate(method.steps) if op == "A")
    with torch.no_grad():  # ... but the copies are independent: change the last A step's only
        separate.program.get_submodule(f"A{last}").module.weight.mul_(2)
    changed = (shared(y) - separate(y)).abs().max()
    assert changed > 1e-3
    with torch.no_grad():  # in the shared block, one change reaches every A step
        shared.program.get_submodule("A").module.weight.mul_(2)
    if sum(op == "A" for op, _ in method.steps) > 1:
        assert (shared(y) - separate(y)).abs().max() > 1e-3
    else:
        assert_close(shared(y), separate(y), 1e-14)


def test_one_module_given_for_two_operators_is_still_copied_per_step() -> None:
    """Without `share`, every step owns its module ("deep-copied per step unless share"), also
    when the caller passes the same module object for two operators."""
    module = Linear(small_matrix())
    block = bf.compile("strang", fields={"A": module, "B": module})
    p = block.program
    modules = [p.A0.module, p.B1.module, p.A2.module]
    assert len({id(m) for m in modules}) == 3
    assert block.num_parameters == 3 * WIDTH * WIDTH


def test_macaron_has_separate_half_step_ffns_and_norms() -> None:
    fields = {"A": "ffn", "B": "san"}
    separate = bf.compile("strang", fields=fields, **SIZES)
    shared = bf.compile("strang", fields=fields, share=True, **SIZES)
    ffn = make_field("ffn", **SIZES)
    san = make_field("san", **SIZES)
    count = sum(p.numel() for p in ffn.parameters()), sum(p.numel() for p in san.parameters())
    assert separate.num_parameters == 2 * count[0] + count[1]
    assert shared.num_parameters == count[0] + count[1]
    first, last = separate.program.A0, separate.program.A2
    assert first is not last
    assert first.parts["ffn"].norm is not last.parts["ffn"].norm
    assert not torch.equal(
        first.parts["ffn"].ffn.linear1.weight, last.parts["ffn"].ffn.linear1.weight
    )


def test_splitting_step_size_is_honoured_or_refused() -> None:
    """`step_size` is an argument of `bf.compile`: a splitting must apply h to every cₖ or
    refuse the option, not silently use h = 1."""
    weights, fields = linear_fields("strang")
    y = randn(2, 3, WIDTH)
    try:
        block = bf.compile("strang", fields=fields, step_size=0.5)
    except bf.DeclarationError as error:
        assert "step_size" in str(error)
        return
    assert_close(block(y), y @ splitting_matrix("strang", weights, h=0.5))


def test_splitting_refuses_a_negative_step_size() -> None:
    _, fields = linear_fields("strang")
    with pytest.raises(bf.DeclarationError, match="step_size"):
        bf.compile("strang", fields=fields, step_size=-1.0)


def test_post_norm_normalises_after_every_unit_step() -> None:
    block = bf.compile("lie-trotter", fields={"A": "ffn", "B": "san"}, post_norm=True, **SIZES)
    block = block.double()
    y = randn(2, 3, D)
    p = block.program
    ctx = Context()
    x = p.norm0(y + p.A0(y, ctx, 0))
    expected = p.norm1(x + p.B1(x, ctx, 1))
    assert_close(block(y), expected, 1e-14)


# -- 3. the paper forms -----------------------------------------------------------------------


def compiled(method: object, **options: object) -> bf.CompiledBlock:
    return bf.compile(method, **options).to(DOUBLE).eval()


def test_rk2_is_the_ode_transformer_paper_formula_not_the_official_staging() -> None:
    block = compiled("heun", **named())
    f, ctx, y = block.field, Context(), randn(2, 5, D)
    f1 = f(y, ctx, 0)
    f2 = f(y + f1, ctx, 1)
    assert_close(block(y), y + 0.5 * (f1 + f2))  # Eq. 12-14
    official = 2.5 * y + f1 + 0.5 * f(2 * y + f1, ctx, 2)  # stages of L(y) = y + F(y)
    assert (block(y) - official).abs().max() > 1e-2


def test_rk4_is_eq_15_to_19() -> None:
    block = compiled("rk4", **named())
    f, ctx, y = block.field, Context(), randn(2, 5, D)
    f1 = f(y, ctx, 0)
    f2 = f(y + 0.5 * f1, ctx, 1)
    f3 = f(y + 0.5 * f2, ctx, 2)
    f4 = f(y + f3, ctx, 3)
    assert_close(block(y), y + (f1 + 2 * f2 + 2 * f3 + f4) / 6)


def test_rk4_with_a_padding_mask_is_eq_15_to_19_with_that_mask() -> None:
    block = compiled("rk4", **named())
    y = randn(2, 5, D)
    pad = torch.tensor([[False] * 5, [False] * 3 + [True] * 2])
    f, ctx = block.field, Context(key_padding_mask=pad)
    f1 = f(y, ctx, 0)
    f2 = f(y + 0.5 * f1, ctx, 1)
    f3 = f(y + 0.5 * f2, ctx, 2)
    f4 = f(y + f3, ctx, 3)
    expected = y + (f1 + 2 * f2 + 2 * f3 + f4) / 6
    assert_close(block(y, key_padding_mask=pad), expected)
    assert_close(block(y, ctx=ctx), expected)
    # padding matters: the unpadded rows see different keys
    assert (block(y)[1, :3] - expected[1, :3]).abs().max() > 1e-6


def test_gated_rk2_is_eq_25_26() -> None:
    block = compiled("heun", **named(coefficients="gated"))
    proj = block.program.gate.proj
    assert proj.weight.shape == (1, 2 * D)
    with torch.no_grad():
        proj.weight.normal_(0.0, 0.5)
        proj.bias.fill_(0.3)
    f, ctx, y = block.field, Context(), randn(2, 5, D)
    f1 = f(y, ctx, 0)
    f2 = f(y + f1, ctx, 1)
    start = block.program.gate.start  # the declared weights' logits (0 for Heun's 1/2, 1/2)
    g = torch.sigmoid(torch.cat([f1, f2], dim=-1) @ proj.weight.T + proj.bias + start)
    assert g.shape == (2, 5, 1) and float(g.detach().std()) > 1e-3  # a per-token gate
    assert_close(block(y), y + g * f1 + (1 - g) * f2)


def test_gated_rk4_is_a_softmax_over_the_stages() -> None:
    block = compiled("rk4", **named(coefficients="gated"))
    proj = block.program.gate.proj
    assert proj.weight.shape == (4, 4 * D)
    with torch.no_grad():
        proj.weight.normal_(0.0, 0.5)
    f, ctx, y = block.field, Context(), randn(2, 5, D)
    f1 = f(y, ctx, 0)
    f2 = f(y + 0.5 * f1, ctx, 1)
    f3 = f(y + 0.5 * f2, ctx, 2)
    f4 = f(y + f3, ctx, 3)
    stages = [f1, f2, f3, f4]
    start = block.program.gate.start  # log of RK4's weights: the gate starts at the tableau
    g = torch.softmax(torch.cat(stages, dim=-1) @ proj.weight.T + proj.bias + start, dim=-1)
    expected = y + sum(g[..., i : i + 1] * k for i, k in enumerate(stages))
    assert_close(block(y), expected)


def test_tanh_coefficients_are_per_token_tanh_weights() -> None:
    block = compiled("heun", **named(coefficients="tanh"))
    proj = block.program.gate.proj
    with torch.no_grad():
        proj.weight.normal_(0.0, 0.5)
    f, ctx, y = block.field, Context(), randn(2, 5, D)
    f1 = f(y, ctx, 0)
    f2 = f(y + f1, ctx, 1)
    start = block.program.gate.start  # atanh of Heun's weights
    g = torch.tanh(torch.cat([f1, f2], dim=-1) @ proj.weight.T + proj.bias + start)
    assert_close(block(y), y + g[..., :1] * f1 + g[..., 1:] * f2)


@pytest.mark.parametrize("default", [DOUBLE, torch.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("coefficients", ["gated", "tanh", "learned"])
@pytest.mark.parametrize("name", ["heun", "rk4"])
def test_trainable_policies_start_at_the_tableau(
    name: str, coefficients: str, default: torch.dtype
) -> None:
    """A block built (in the default dtype) then moved to float64 starts at the tableau's
    weights to float64 precision: the initial values must not be rounded to float32 first."""
    dtype = torch.get_default_dtype()
    torch.set_default_dtype(default)
    try:
        field = make_field("san+ffn", **SIZES).eval()
        exact = bf.compile(name, field=field, d_model=D)
        trained = bf.compile(name, field=field, d_model=D, coefficients=coefficients)
    finally:
        torch.set_default_dtype(dtype)
    exact, trained = exact.to(DOUBLE).eval(), trained.to(DOUBLE).eval()
    y = randn(2, 5, D)
    assert_close(trained(y), exact(y))


def test_unit_coefficients_give_gamma_equal_one() -> None:
    block = compiled("heun", **named(coefficients="unit"))
    f, ctx, y = block.field, Context(), randn(2, 5, D)
    f1 = f(y, ctx, 0)
    f2 = f(y + f1, ctx, 1)
    assert_close(block(y), y + f1 + f2)


@pytest.mark.usefixtures("float64_default")
def test_learned_coefficients_start_exact_and_get_gradients() -> None:
    field = make_field("san+ffn", **SIZES).to(DOUBLE)
    y = randn(2, 5, D)
    exact = compiled("rk4", field=field, d_model=D)
    learned = compiled("rk4", field=field, d_model=D, coefficients="learned")
    weights = learned.program.weights
    assert torch.allclose(weights, torch.tensor([1 / 6, 1 / 3, 1 / 3, 1 / 6], dtype=DOUBLE))
    assert_close(learned(y), exact(y))
    assert learned.num_parameters == exact.num_parameters + 4
    (learned(y) * randn(2, 5, D, seed=7)).sum().backward()
    assert weights.grad is not None and bool((weights.grad != 0).all())
    with torch.no_grad():  # and they are used: y + Σ bᵢKᵢ with the new weights
        weights.copy_(torch.tensor([1.0, 0.0, 0.0, 0.0]))
    f1 = learned.field(y, Context(), 0)
    assert_close(learned(y), y + f1)


def test_strang_with_ffn_and_san_is_the_macaron_layer() -> None:
    block = compiled("strang", fields={"A": "ffn", "B": "san"}, **SIZES)
    p, ctx, y = block.program, Context(), randn(2, 5, D)
    first, attention, last = p.A0, p.B1, p.A2
    x1 = y + 0.5 * first(y, ctx, 0)  # Eq. 17
    x2 = x1 + attention(x1, ctx, 1)  # Eq. 18
    expected = x2 + 0.5 * last(x2, ctx, 2)  # Eq. 19
    assert_close(block(y), expected)
    # the two FFNs are really different modules: swapping them changes the output
    swapped = x2 + 0.5 * first(x2, ctx, 2)
    assert (block(y) - swapped).abs().max() > 1e-4


def _copy_sublayers(field: Field, layer: nn.Module, attention: list[str], norms: list[str]) -> None:
    parts = field.parts
    with torch.no_grad():
        for word, name in zip(["san", "ca"], attention, strict=False):
            if word not in parts:
                continue
            ours, theirs = parts[word].attention, getattr(layer, name)
            theirs.in_proj_weight.copy_(ours.in_proj.weight)
            theirs.in_proj_bias.copy_(ours.in_proj.bias)
            theirs.out_proj.weight.copy_(ours.out_proj.weight)
            theirs.out_proj.bias.copy_(ours.out_proj.bias)
        for word, name in zip(parts.keys(), norms, strict=True):
            getattr(layer, name).load_state_dict(parts[word].norm.state_dict())
        layer.linear1.load_state_dict(parts["ffn"].ffn.linear1.state_dict())
        layer.linear2.load_state_dict(parts["ffn"].ffn.linear2.state_dict())


def test_euler_with_san_ffn_is_a_pre_norm_encoder_layer() -> None:
    block = compiled("euler", **named())
    layer = nn.TransformerEncoderLayer(
        D, H, DFF, dropout=0.0, norm_first=True, batch_first=True
    ).to(DOUBLE)
    _copy_sublayers(block.field, layer, ["self_attn"], ["norm1", "norm2"])
    layer.eval()
    y = randn(2, 5, D)
    pad = torch.tensor([[False] * 5, [False] * 3 + [True] * 2])
    assert_close(block(y), layer(y))
    assert_close(block(y, key_padding_mask=pad)[1, :3], layer(y, src_key_padding_mask=pad)[1, :3])


def test_euler_with_san_ca_ffn_is_a_pre_norm_causal_decoder_layer() -> None:
    block = compiled("euler", **named("san+ca+ffn"))
    assert block.causal
    layer = nn.TransformerDecoderLayer(
        D, H, DFF, dropout=0.0, norm_first=True, batch_first=True
    ).to(DOUBLE)
    _copy_sublayers(
        block.field, layer, ["self_attn", "multihead_attn"], ["norm1", "norm2", "norm3"]
    )
    layer.eval()
    y, memory = randn(2, 5, D), randn(2, 4, D, seed=2)
    mask = nn.Transformer.generate_square_subsequent_mask(5, dtype=DOUBLE)
    assert_close(block(y, memory=memory), layer(y, memory, tgt_mask=mask))


def test_a_named_field_is_residual_free() -> None:
    """F(y) = L(y) − y for the pre-norm layer L: F of the "ffn" field is FFN(LN(y))."""
    field = make_field("ffn", **SIZES).to(DOUBLE)
    y = randn(2, 5, D)
    sub = field.parts["ffn"]
    assert_close(field(y, Context(), 0), sub.ffn(sub.norm(y)), 1e-14)


# -- 4. dead terms, released stages, costs ----------------------------------------------------


@pytest.mark.parametrize("name", sweep(EXPLICIT))
def test_only_stages_that_reach_the_output_are_computed(name: str) -> None:
    method = bf.catalog[name]
    weighted = {i for i in range(method.stages) if method.b[i] != 0}
    exact = bf.compile(name, field=Linear(small_matrix()))
    learned = bf.compile(name, field=Linear(small_matrix()), coefficients="learned")
    assert exact.field_calls == len(stage_users(method, weighted))
    assert learned.field_calls == method.stages
    for block in (exact, learned):
        code = block.code
        calls = field_call_names(code)
        assert len(calls) == block.field_calls
        # no multiplication by zero and no addition of a zero term
        assert not re.search(r"alpha = -?0\.0\b", code), code
        assert not re.search(r"(?<![\w.])-?0\.0 \*|\* -?0\.0(?![\d])", code), code
        # every stage tensor is released after its last use
        assert set(calls) <= released_names(code), code


def test_dormand_prince_fsal_stage_is_skipped_with_exact_weights() -> None:
    method = bf.catalog["dormand-prince-5"]
    assert method.stages == 7 and method.b[6] == 0
    assert bf.compile("dormand-prince-5", **named()).field_calls == 6
    assert bf.compile("dormand-prince-5", **named(coefficients="learned")).field_calls == 7
    assert bf.compile("dormand-prince-5", **named(coefficients="gated")).field_calls == 7


def test_rk4_code_releases_each_stage() -> None:
    code = bf.compile("rk4", **named()).code
    assert "k1 = None" in code and "k2 = None" in code and "k3 = None" in code
    assert code.count("self.field(") == 4
    assert "def forward(self, y, ctx)" in code


@pytest.mark.parametrize("name", ["rk4", "strang", "neural-ode-rk4", "leapfrog"])
def test_the_code_starts_at_its_first_line_and_ends_clean(name: str) -> None:
    """`block.code` as printed: no blank lines before `def`, no trailing spaces on any line,
    one newline at the end; the explicit Runge-Kutta output is `y_next`, its partial sums
    `acc1`, `acc2`, ... (no `y_next_3`)."""
    method = bf.catalog[name]
    sizes = {"d_model": 8, "n_heads": 2, "d_ffn": 16}
    if isinstance(method, bf.LinearMultistep):
        block = bf.compile_stack(method, fields=["ffn"] * 3, **sizes)
    elif isinstance(method, bf.Splitting):
        block = bf.compile(method, fields={"A": "ffn", "B": "san"}, **sizes)
    else:
        block = bf.compile(method, field="ffn", **sizes)
    code = block.code
    assert code.startswith(("def ", "# ")), repr(code[:40])
    assert all(line == line.rstrip() for line in code.split("\n")), repr(code[-40:])
    assert code.endswith("\n") and not code.endswith("\n\n")
    if name == "rk4":
        assert "y_next_" not in code and "return y_next\n" in code and "acc3 = " in code


def test_midpoint_does_not_weight_its_zero_stage() -> None:
    # midpoint: b = (0, 1): k1 is needed for the stage input, but not added to the output
    code = bf.compile("midpoint", **named()).code
    assert bf.compile("midpoint", **named()).field_calls == 2
    outputs = [line for line in code.splitlines() if line.strip().startswith("y_next")]
    assert outputs and all("k1" not in line.split(";")[0] for line in outputs), code


@pytest.mark.parametrize("name", sweep(IMPLICIT))
def test_implicit_field_calls_follow_the_declared_iterations(name: str) -> None:
    """Diagonally implicit: 1 + iterations calls per needed stage with aᵢᵢ ≠ 0 (1 without);
    fully implicit: K⁽⁰⁾ = F(y) once, then per sweep the stages read by the next sweep (the
    weighted ones in the last sweep) except those whose row of A is zero, which are F(y) and
    reuse K⁽⁰⁾. `field_calls` counts the calls the code makes."""
    method = bf.catalog[name]
    weighted = {i for i in range(method.stages) if method.b[i] != 0}
    needed = stage_users(method, weighted)
    for iterations in (1, 3):
        block = bf.compile(name, field=Linear(small_matrix()), iterations=iterations)
        if method.is_diagonally_implicit:
            expected = sum(1 + iterations * (method.A[i][i] != 0) for i in needed)
        else:

            def zero_row(i: int) -> bool:
                return all(method.A[i][j] == 0 for j in range(method.stages))

            # Walk the sweeps from the last back to the first. In the first sweep every stage
            # reads K⁽⁰⁾ = F(y) only, so its input folds to y + cᵢ·K⁽⁰⁾: no call when cᵢ = 0.
            live, expected = set(weighted), 0
            for sweep in reversed(range(iterations)):
                reused = (
                    {i for i in live if method.c[i] == 0}
                    if sweep == 0
                    else {i for i in live if zero_row(i)}
                )
                expected += len(live - reused)
                if sweep > 0:
                    live = {j for i in live for j in range(method.stages) if method.A[i][j] != 0}
            expected += 1 if live else 0  # K⁽⁰⁾ = F(y), read or reused by the first sweep
        assert block.code.count("self.field(") == expected, block.code
        assert block.field_calls == expected
    default = bf.compile(name, field=Linear(small_matrix()))
    assert method.iterations is not None
    assert (
        default.field_calls
        == bf.compile(name, field=Linear(small_matrix()), iterations=method.iterations).field_calls
    )


def test_parameters_are_shared_across_stages() -> None:
    euler = bf.compile("euler", **named())
    for name in ("heun", "rk4", "dormand-prince-5", "feagin-10"):
        assert bf.compile(name, **named()).num_parameters == euler.num_parameters
    gated = bf.compile("heun", **named(coefficients="gated"))
    assert gated.num_parameters == euler.num_parameters + 2 * D + 1
    assert bf.compile("heun", **named(step_size="learned")).num_parameters == (
        euler.num_parameters + 1
    )


def test_flops_grow_with_the_field_calls() -> None:
    """FLOPs per token: one field evaluation per call plus 2·d_model per axpy."""
    euler = bf.compile("euler", **named("ffn"))
    rk4 = bf.compile("rk4", **named("ffn"))
    axpy = 2 * D
    field = euler.flops_per_token() - axpy  # y + k1
    assert field == 2 * 2 * D * DFF  # two linear layers
    assert rk4.flops_per_token() == 4 * field + 7 * axpy  # 3 stage inputs + 4 output terms
    attention = bf.compile("euler", **named("san"))
    assert attention.flops_per_token(length=10) < attention.flops_per_token(length=20)


def test_a_shared_gate_is_shared() -> None:
    gate = StageGate(D, 2, "gate", init=(0.5,))
    first = bf.compile("heun", **named(coefficients="gated", gate=gate))
    second = bf.compile("heun", **named(coefficients="gated", gate=gate))
    assert first.program.gate is gate and second.program.gate is gate


# -- 5. gradients, dropout, torch.compile -----------------------------------------------------


def _assert_every_parameter_learns(block: nn.Module, *args: Tensor, **kwargs: Tensor) -> None:
    block.train()
    out = block(*args, **kwargs)
    (out * randn(*out.shape, seed=9)).sum().backward()
    missing = [n for n, p in block.named_parameters() if p.grad is None or not p.grad.any()]
    assert not missing, f"no gradient for {missing}"


@pytest.mark.parametrize("coefficients", ["exact", "unit", "learned", "gated", "tanh"])
@pytest.mark.parametrize("name", ["heun", "rk4"])
def test_gradients_reach_every_parameter_of_an_rk_block(name: str, coefficients: str) -> None:
    block = compiled(name, **named(coefficients=coefficients, step_size="learned"))
    _assert_every_parameter_learns(block, randn(2, 5, D))


@pytest.mark.parametrize("name", ["gauss-legendre-2", "sdirk-2"])
def test_gradients_reach_every_parameter_of_an_implicit_block(name: str) -> None:
    block = compiled(name, **named("san+ca+ffn", coefficients="learned", iterations=2))
    _assert_every_parameter_learns(block, randn(2, 5, D), memory=randn(2, 4, D, seed=2))


@pytest.mark.parametrize("share", [False, True])
@pytest.mark.parametrize("coefficients", ["exact", "learned"])
@pytest.mark.parametrize("name", ["strang", "strang-heun", "macaron-decoder"])
def test_gradients_reach_every_parameter_of_a_splitting(
    name: str, coefficients: str, share: bool
) -> None:
    fields = {"A": "ffn", "B": "san", "C": "ca"}
    fields = {op: fields[op] for op in bf.catalog[name].operators}
    block = compiled(name, fields=fields, coefficients=coefficients, share=share, **SIZES)
    _assert_every_parameter_learns(block, randn(2, 5, D), memory=randn(2, 4, D, seed=2))


def test_gradients_reach_the_input() -> None:
    block = compiled("rk4", **named())
    y = randn(2, 5, D).requires_grad_()
    block(y).sum().backward()
    assert y.grad is not None and y.grad.abs().sum() > 0


def test_dropout_is_deterministic_under_a_seed() -> None:
    block = compiled("rk4", **named(dropout=0.3)).train()
    y = randn(2, 5, D)
    torch.manual_seed(123)
    first = block(y)
    torch.manual_seed(123)
    second = block(y)
    torch.manual_seed(124)
    third = block(y)
    assert torch.equal(first, second)
    assert not torch.allclose(first, third)  # dropout is active in training
    block.eval()
    assert torch.equal(block(y), block(y))


def test_dropout_free_block_does_not_depend_on_the_mode() -> None:
    block = compiled("rk4", **named())
    y = randn(2, 5, D)
    evaluated = block(y)
    assert torch.equal(block.train()(y), evaluated)


@pytest.mark.parametrize(
    ("method", "options"),
    [
        ("rk4", named()),
        ("heun", named(coefficients="gated")),
        ("sdirk-2", named("san+ca+ffn", iterations=2)),
        ("strang", {"fields": {"A": "ffn", "B": "san"}, **SIZES, "coefficients": "learned"}),
    ],
    ids=["rk4", "gated", "sdirk-decoder", "strang"],
)
def test_torch_compile_gives_the_eager_output(method: str, options: dict) -> None:
    torch._dynamo.reset()
    block = compiled(method, **options)
    y, memory = randn(2, 5, D), randn(2, 4, D, seed=2)
    pad = torch.tensor([[False] * 5, [False] * 3 + [True] * 2])
    memory_pad = torch.tensor([[False] * 4, [False] * 2 + [True] * 2])
    kwargs = {"key_padding_mask": pad, "memory": memory, "memory_key_padding_mask": memory_pad}
    fast = torch.compile(block, backend="aot_eager", fullgraph=True)
    assert_close(fast(y, **kwargs), block(y, **kwargs))
    # and backward through the compiled block gives the eager gradients
    eager = copy.deepcopy(block)
    fast(y, **kwargs).sum().backward()
    eager(y, **kwargs).sum().backward()
    for (name, p), q in zip(block.named_parameters(), eager.parameters(), strict=True):
        assert p.grad is not None and q.grad is not None, name
        assert_close(p.grad, q.grad, 1e-10)
    torch._dynamo.reset()


# -- 6. bad arguments -------------------------------------------------------------------------


def raises(*fragments: str) -> pytest.RaisesContext:
    return pytest.raises(bf.DeclarationError, match=".*".join(re.escape(f) for f in fragments))


STRANG = {"fields": {"A": "ffn", "B": "san"}, **SIZES}


def test_declaration_errors_are_value_errors() -> None:
    assert issubclass(bf.DeclarationError, ValueError)


@pytest.mark.parametrize(
    ("method", "options"),
    [
        ("heun", {"field": "san", "d_model": 10, "n_heads": 4}),
        ("heun", {"field": "san+ca+ffn", "d_model": 10, "n_heads": 4, "d_ffn": 4}),
        ("strang", {"fields": {"A": "ffn", "B": "san"}, "d_model": 10, "n_heads": 4, "d_ffn": 4}),
    ],
)
def test_heads_must_divide_the_width(method: str, options: dict) -> None:
    with raises("d_model=10", "n_heads=4") as info:
        bf.compile(method, **options)
    assert "[1, 2, 5, 10]" in str(info.value)  # says what would be valid


def test_unknown_field_name() -> None:
    with raises("unknown field", "attn", "san+ffn"):
        bf.compile("heun", **named("attn"))
    with raises("unknown field", "attn"):
        bf.compile("strang", fields={"A": "ffn", "B": "attn"}, **SIZES)


def test_named_field_needs_its_sizes() -> None:
    with raises("n_heads"):
        bf.compile("heun", field="san", d_model=D)
    with raises("d_ffn"):
        bf.compile("heun", field="ffn", d_model=D)


def test_missing_and_extra_operators() -> None:
    with raises("no field for operator 'B'", "['A', 'B']"):
        bf.compile("strang", fields={"A": "ffn"}, **SIZES)
    with raises("no operator 'C'"):
        bf.compile("strang", fields={"A": "ffn", "B": "san", "C": "ca"}, **SIZES)


def test_implicit_tableau_needs_iterations() -> None:
    implicit = bf.ButcherTableau([[1]], [1])
    with raises("implicit", "iterations"):
        bf.compile(implicit, **named("ffn"))
    with raises("iterations"):
        bf.compile(implicit, **named("ffn", iterations=0))
    assert bf.compile(implicit, **named("ffn", iterations=2)).field_calls == 3


def _undeclared(name: str) -> bf.Method:
    """A catalog family without its [parameters] table."""
    table = {k: v for k, v in bf.catalog[name].to_table().items() if k != "parameters"}
    return from_dict(table)


@pytest.mark.parametrize("name", FAMILIES_WITH_SYMBOLS)
def test_family_with_symbols_is_refused_unless_its_parameters_are_declared(name: str) -> None:
    family = _undeclared(name)
    symbols = sorted(str(s) for s in family.symbols)
    with raises(name, "symbols", symbols[0], "parameters"):
        bf.compile(family, **named())
    block = bf.compile(name, **named())  # as declared: its symbols are parameters
    assert block.method is bf.catalog[name]
    with raises("coefficients='gated'", "free symbols"):
        bf.compile(name, **named(coefficients="gated"))


@pytest.mark.parametrize("policy", ["gated", "tanh"])
def test_gates_need_two_stages(policy: str) -> None:
    with raises("at least two stages"):
        bf.compile("euler", **named(coefficients=policy))


@pytest.mark.parametrize("policy", ["gated", "unit", "tanh"])
def test_splitting_refuses_policies_that_replace_its_coefficients(policy: str) -> None:
    with raises("cannot be used with a splitting", "exact, learned"):
        bf.compile("strang", coefficients=policy, **STRANG)


def test_post_norm_after_scaled_steps_is_refused() -> None:
    with raises("post_norm", "cancel"):
        bf.compile("strang", post_norm=True, **STRANG)
    with raises("post_norm"):
        bf.compile("lie-trotter", post_norm=True, coefficients="learned", **STRANG)
    with raises("post_norm does not apply to a runge-kutta declaration", "takes field"):
        bf.compile("heun", **named(post_norm=True))
    with raises("share does not apply to a runge-kutta declaration"):
        bf.compile("heun", **named(share=True))


@pytest.mark.parametrize("name", EXACT_FLOW_SPLITTINGS)
def test_splitting_with_exact_substeps_is_refused(name: str) -> None:
    fields = {op: "ffn" for op in bf.catalog[name].operators}
    with raises("exactly", "substep"):
        bf.compile(name, fields=fields, **SIZES)


@pytest.mark.parametrize("name", MULTISTEP)
def test_multistep_points_to_compile_stack(name: str) -> None:
    with raises("multistep", "compile_stack"):
        bf.compile(name, **named())


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_input_is_refused(bad: float) -> None:
    block = compiled("heun", **named())
    y = randn(2, 5, D)
    y[1, 2, 3] = bad
    with pytest.raises(ValueError, match="NaN"):
        block(y)
    assert torch.isfinite(block(y, check=False)[0]).all()  # row 0 never saw the bad token


def test_unknown_coefficient_policy() -> None:
    with raises("unknown coefficient policy", "exact, unit, learned, gated, tanh"):
        bf.compile("heun", **named(coefficients="learnt"))
    with raises("coefficients", "learnt"):
        bf.compile("strang", coefficients="learnt", **STRANG)


@pytest.mark.parametrize("step", [0, 0.0, -1.0, float("nan"), float("inf"), 1e300, "big", True])
def test_step_size_must_be_a_positive_number(step: object) -> None:
    with raises("step_size"):
        bf.compile("heun", **named(step_size=step))


@pytest.mark.parametrize(
    ("method", "options", "fragments"),
    [
        ("backward-euler", {"iterations": "3"}, ["iterations must be an integer, or None"]),
        ("backward-euler", {"iterations": 1.5}, ["iterations must be an integer"]),
        ("heun", {"causal": "no"}, ["causal must be true or false, or None"]),
        ("heun", {"dropout": "0.1"}, ["dropout must be a number", "in [0, 1)"]),
        ("heun", {"d_model": 16.5}, ["d_model must be an integer", "widths"]),
        ("strang", {"share": [1]}, ["share must be true or false", "one module per operator"]),
        ("lm-resnet", {"init": {"k": "x"}}, ["init must be a mapping from a string to a number"]),
        ("adams-bashforth-2", {"fields": ["ffn", 3]}, ["fields must be a list, each item"]),
    ],
)
def test_an_option_of_another_type_names_its_type_and_meaning(
    method: str, options: dict, fragments: list[str]
) -> None:
    spec = STRANG if method == "strang" else named()
    with raises(f"key '{next(iter(options))}'", *fragments):
        if bf.catalog[method].family == "multistep":
            bf.compile_stack(method, **{"fields": ["ffn"] * 3, **SIZES, **options})
        else:
            bf.compile(method, **{**spec, **options})


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"d_model": 0}, "d_model must be a positive integer"),
        ({"dropout": 1.0}, "dropout must be in [0, 1)"),
        ({"iterations": 10**30}, "from 1 to 1000 fixed-point iterations"),
    ],
)
def test_options_out_of_range_are_refused(options: dict, fragment: str) -> None:
    with raises(fragment):
        bf.compile("backward-euler", **{**named(), **options})


def test_field_and_fields_are_not_interchangeable() -> None:
    with raises("fields"):
        bf.compile("strang", field="ffn", **SIZES)
    with raises("fields does not apply to a runge-kutta declaration", "takes field,"):
        bf.compile("heun", fields={"A": "ffn"}, **SIZES)
    with raises("field="):
        bf.compile("heun", **SIZES)


def test_shared_gate_must_fit() -> None:
    with raises("gate"):
        bf.compile("heun", **named(gate=StageGate(D, 2, "gate", (None,))))
    with raises("gate", "4 stages"):
        bf.compile("rk4", **named(coefficients="gated", gate=StageGate(D, 2, "gate", (None,))))


def test_unknown_method_name() -> None:
    with pytest.raises(bf.UnknownNameError, match="rk4"):
        bf.compile("rk5", **named())


def test_cache_on_a_non_causal_block_is_refused() -> None:
    block = compiled("heun", **named("san"))
    assert not block.causal
    with pytest.raises(ValueError, match="causal=True"):
        block(randn(2, 1, D), cache=bf.nn.DecodeCache())


def test_cross_attention_needs_memory() -> None:
    block = compiled("heun", **named("san+ca+ffn"))
    with pytest.raises(ValueError, match="memory"):
        block(randn(2, 3, D))


def test_module_field_must_keep_the_shape() -> None:
    block = bf.compile("heun", field=nn.Linear(WIDTH, WIDTH + 1))
    with pytest.raises(ValueError, match="same shape"):
        block(torch.randn(2, 3, WIDTH))
