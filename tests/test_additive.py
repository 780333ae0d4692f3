"""Additive Runge-Kutta methods: the declaration, its order over coloured trees, its stability
function and its block.

The IMEX schemes are typed from their papers (coefficients and the order each paper states):
Ascher, Ruuth and Spiteri, "Implicit-explicit Runge-Kutta methods for time-dependent partial
differential equations", Appl. Numer. Math. 25 (1997): ARS(1,1,1), ARS(1,2,2), ARS(2,2,2) and
ARS(4,4,3); Pareschi and Russo, "Implicit-explicit Runge-Kutta schemes and applications to
hyperbolic systems with relaxation", J. Sci. Comput. 25 (2005): IMEX-SSP2(2,2,2). Each scheme
is (explicit tableau for f, implicit tableau for g) over shared stages.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import sympy
import torch
from torch import nn

import butcherflow as bf
from butcherflow.analysis.convergence import convergence, slopes
from butcherflow.errors import DeclarationError
from butcherflow.methods.files import from_dict

GAMMA = "1 - sqrt(2)/2"
DELTA = "1 - 1/(2*(1 - sqrt(2)/2))"
Tableau = tuple[list[list[Any]], list[Any]]


def imex(explicit: Tableau, implicit: Tableau, name: str) -> bf.AdditiveRungeKutta:
    return bf.AdditiveRungeKutta.from_tableaux({"f": explicit, "g": implicit}, name=name)


ARS_443_EXPLICIT = (
    [
        [0, 0, 0, 0, 0],
        ["1/2", 0, 0, 0, 0],
        ["11/18", "1/18", 0, 0, 0],
        ["5/6", "-5/6", "1/2", 0, 0],
        ["1/4", "7/4", "3/4", "-7/4", 0],
    ],
    ["1/4", "7/4", "3/4", "-7/4", 0],
)
ARS_443_IMPLICIT = (
    [
        [0, 0, 0, 0, 0],
        [0, "1/2", 0, 0, 0],
        [0, "1/6", "1/2", 0, 0],
        [0, "-1/2", "1/2", "1/2", 0],
        [0, "3/2", "-3/2", "1/2", "1/2"],
    ],
    [0, "3/2", "-3/2", "1/2", "1/2"],
)
PUBLISHED = {
    "ars-111": (([[0, 0], [1, 0]], [1, 0]), ([[0, 0], [0, 1]], [0, 1]), 1),
    "ars-122": (([[0, 0], ["1/2", 0]], [0, 1]), ([[0, 0], [0, "1/2"]], [0, 1]), 2),
    "ars-222": (
        ([[0, 0, 0], [GAMMA, 0, 0], [DELTA, f"1 - ({DELTA})", 0]], [DELTA, f"1 - ({DELTA})", 0]),
        ([[0, 0, 0], [0, GAMMA, 0], [0, f"1 - ({GAMMA})", GAMMA]], [0, f"1 - ({GAMMA})", GAMMA]),
        2,
    ),
    "imex-ssp2-222": (
        ([[0, 0], [1, 0]], ["1/2", "1/2"]),
        ([[GAMMA, 0], [f"1 - 2*({GAMMA})", GAMMA]], ["1/2", "1/2"]),
        2,
    ),
    "ars-443": (ARS_443_EXPLICIT, ARS_443_IMPLICIT, 3),
}


@pytest.mark.parametrize("name", list(PUBLISHED))
def test_published_imex_schemes_have_their_stated_order(name: str) -> None:
    explicit, implicit, order = PUBLISHED[name]
    assert bf.check(imex(explicit, implicit, name)).order == order


@pytest.mark.parametrize("name", ["ars-222", "ars-443"])
def test_the_measured_slope_is_the_proved_order(name: str) -> None:
    """Independent of the trees: N steps on y' = (L_f + L_g) y with non-commuting matrices
    against the matrix exponential."""
    method = bf.catalog[name]
    report = bf.check(method)
    (curve,) = convergence(method, report)
    assert all(abs(slope - report.order) < 0.1 for slope in slopes(curve.counts, curve.errors))


def test_forward_backward_euler_has_its_two_variable_stability_function() -> None:
    explicit, implicit, _ = PUBLISHED["ars-111"]
    R = bf.check(imex(explicit, implicit, "ars-111")).stability_function
    z_f, z_g = sympy.symbols("z_f z_g")
    assert sympy.simplify(R - (1 + z_f) / (1 - z_g)) == 0


def test_one_field_is_the_tableau() -> None:
    rk4 = bf.catalog["rk4"]
    calls = bf.AdditiveRungeKutta(rk4.to_table()["A"], rk4.to_table()["b"], ["F"] * 4, name="x")
    assert bf.check(calls).order == 4


@pytest.mark.parametrize("name", ["lie-trotter", "strang"])
def test_a_splitting_with_euler_sub_steps_written_call_by_call(name: str) -> None:
    """Yᵢ = y + Σ_{l<i} c_l K_l, y₁ = y + Σ c_l K_l: the coloured order of the call-by-call
    form equals the splitting report's order with its Euler sub-steps."""
    splitting = bf.catalog[name]
    c = [str(x) for _, x in splitting.to_table()["steps"]]
    A = [[c[j] if j < i else 0 for j in range(len(c))] for i in range(len(c))]
    calls = bf.AdditiveRungeKutta(A, c, [op for op, _ in splitting.steps], name=name)
    euler = bf.Splitting(splitting.steps, substep="euler", name=f"{name}-euler")
    assert bf.check(calls).order == bf.check(euler).substep_order


@pytest.mark.parametrize("w", ["1/3", "1/2", "1"])
def test_lime_weights_give_order_one_whatever_w(w: str) -> None:
    """y + F_attn + F_ff(y + w·F_attn): [τ_attn]_attn needs the attention's output inside its
    own weight, which no w gives."""
    report = bf.check(bf.AdditiveRungeKutta([[0, 0], [w, 0]], [1, 1], ["attn", "ff"]))
    assert report.order == 1 and "[τ_attn]_attn: -1/2" in str(report)


def test_a_numeric_entry_is_judged_at_its_precision() -> None:
    midpoint = bf.AdditiveRungeKutta([[0, 0], [0.5, 0]], [0, 1], ["f", "f"], name="numeric")
    off = bf.AdditiveRungeKutta([[0, 0], [0.4999, 0]], [0, 1], ["f", "f"], name="off")
    assert (bf.check(midpoint).order, bf.check(off).order) == (2, 1)


def test_the_block_computes_the_calls_on_its_own_modules() -> None:
    torch.manual_seed(0)
    attn, ff = nn.Linear(8, 8).double(), nn.Linear(8, 8).double()
    method = bf.AdditiveRungeKutta([[0, 0], ["1/3", 0]], [1, "1/2"], ["attn", "ff"], name="lime")
    block = bf.compile(method, fields={"attn": attn, "ff": ff}, d_model=8)
    y = torch.randn(2, 3, 8, dtype=torch.float64)
    k1 = attn(y)
    expected = y + k1 + ff(y + k1 / 3) / 2
    assert torch.allclose(block(y), expected, rtol=0, atol=1e-14)


def test_the_declaration_round_trips_through_its_file_table() -> None:
    explicit, implicit, _ = PUBLISHED["ars-222"]
    method = imex(explicit, implicit, "ars-222")
    again = from_dict(method.to_table())
    assert isinstance(again, bf.AdditiveRungeKutta) and again.A == method.A
    assert again.fields == method.fields


def test_a_declaration_file_loads(tmp_path: Path) -> None:
    path = tmp_path / "lime.toml"
    path.write_text(
        'name = "lime"\nfamily = "additive"\nA = [[0, 0], ["1/2", 0]]\nb = [1, 1]\n'
        'fields = ["attn", "ff"]\norder = 1\n'
    )
    assert bf.check(bf.load(path)).claim_holds


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"fields": ["attn"]}, "fields"),
        ({"fields": ["attn", "2ff"]}, "fields[1]"),
        ({"fields": "attn"}, "fields"),
        ({"A": [[0, 0], ["g", 0]]}, "numbers"),
    ],
)
def test_bad_declarations_are_refused_in_one_line(kwargs: dict[str, Any], fragment: str) -> None:
    given: dict[str, Any] = {"A": [[0, 0], ["1/2", 0]], "b": [1, 1], "fields": ["attn", "ff"]}
    with pytest.raises(DeclarationError, match=fragment.replace("[", r"\[")) as error:
        bf.AdditiveRungeKutta(**{**given, **kwargs})
    assert "\n" not in str(error.value)


def test_an_implicit_method_is_checked_but_not_compiled() -> None:
    explicit, implicit, _ = PUBLISHED["ars-222"]
    method = imex(explicit, implicit, "ars-222")
    with pytest.raises(DeclarationError, match="implicit additive"):
        bf.compile(method, fields={"f": "ffn", "g": "ffn"}, d_model=8, d_ffn=16)


def test_a_missing_field_is_named() -> None:
    method = bf.AdditiveRungeKutta([[0, 0], ["1/2", 0]], [1, 1], ["attn", "ff"], name="lime")
    with pytest.raises(DeclarationError, match="no field for operator 'ff'"):
        bf.compile(method, fields={"attn": "san"}, d_model=8, n_heads=2)
