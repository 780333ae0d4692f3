"""`bf.symplectic` on a tableau is the symplectic row of `bf.check`: the M = 0 test, then the
B-series conditions to two orders beyond the method's proved order (not to a fixed order 4).

Lobatto IIIA and Radau IIA with three stages are typed from Hairer and Wanner, Solving ODEs II,
IV.5 (Tables 5.7 and 5.6); their order is NodePy's, in the same run, and the order of
symplecticity found is checked against the Jacobian of the step on a non-separable Hamiltonian
system (torch autograd, float64): Ψ′ᵀJΨ′ − J = O(h^(q+1)).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import sympy
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import butcherflow as bf

S6 = "sqrt(6)"
LOBATTO_IIIA_3 = bf.ButcherTableau(
    A=[[0, 0, 0], ["5/24", "1/3", "-1/24"], ["1/6", "2/3", "1/6"]],
    b=["1/6", "2/3", "1/6"],
    name="lobatto-iiia-3-stages",
)
RADAU_IIA_3 = bf.ButcherTableau(
    A=[
        [f"(88 - 7*{S6})/360", f"(296 - 169*{S6})/1800", f"(-2 + 3*{S6})/225"],
        [f"(296 + 169*{S6})/1800", f"(88 + 7*{S6})/360", f"(-2 - 3*{S6})/225"],
        [f"(16 - {S6})/36", f"(16 + {S6})/36", "1/9"],
    ],
    b=[f"(16 - {S6})/36", f"(16 + {S6})/36", "1/9"],
    name="radau-iia-3-stages",
)
TYPED = [(LOBATTO_IIIA_3, 5), (RADAU_IIA_3, 6)]  # the tableau, the order its conditions fail at


def check_row(method: Any) -> str:
    return dict(bf.check(method).geometry_rows())["symplectic"]


def shown(verdict: tuple[bool | None, str]) -> str:
    holds, why = verdict
    return f"{'undetermined' if holds is None else 'yes' if holds else 'no'} ({why})"


@pytest.mark.parametrize(("method", "fails_at"), TYPED, ids=lambda x: getattr(x, "name", x))
def test_symplectic_is_the_check_row_and_fails_beyond_nodepys_order(
    method: bf.ButcherTableau, fails_at: int
) -> None:
    from nodepy.runge_kutta_method import RungeKuttaMethod

    theirs = RungeKuttaMethod(
        np.array(method.A, dtype=object), np.array(method.b, dtype=object)
    ).order()
    verdict = bf.symplectic(method)
    assert (shown(verdict), f"fails at order {fails_at}" in verdict[1], int(theirs) + 1) == (
        check_row(method),
        True,
        fails_at,
    )


def hamiltonian_field(y: torch.Tensor) -> torch.Tensor:
    q, p = y  # H = p²/2 + q²/2 + q³p/3, not separable
    return torch.stack([p + q**3 / 3, -q - q**2 * p])


def implicit_step(method: bf.ButcherTableau, y: torch.Tensor, h: float) -> torch.Tensor:
    """One step, the stage equations solved by fixed-point iteration to round-off (a
    contraction at these step sizes), differentiable by autograd."""
    A = torch.tensor([[float(x) for x in row] for row in method.A], dtype=torch.float64)
    b = torch.tensor([float(x) for x in method.b], dtype=torch.float64)
    K = torch.zeros(method.stages, 2, dtype=torch.float64)
    for _ in range(80):
        K = torch.stack([hamiltonian_field(y + h * A[i] @ K) for i in range(method.stages)])
    return y + h * b @ K


def defect(method: bf.ButcherTableau, h: float) -> float:
    y0 = torch.tensor([0.8, 0.5], dtype=torch.float64)
    jac = torch.autograd.functional.jacobian(lambda y: implicit_step(method, y, h), y0)
    J = torch.tensor([[0.0, 1.0], [-1.0, 0.0]], dtype=torch.float64)
    return float((jac.T @ J @ jac - J).abs().max())


@pytest.mark.parametrize(("method", "fails_at"), TYPED, ids=lambda x: getattr(x, "name", x))
def test_the_order_of_symplecticity_is_the_step_jacobians(
    method: bf.ButcherTableau, fails_at: int
) -> None:
    """Symplectic to order q = fails_at − 1: the defect falls like h^(q+1) when h halves."""
    ratio = defect(method, 0.1) / defect(method, 0.05)
    assert round(math.log2(ratio)) == fails_at


NODE = st.fractions(min_value=0, max_value=1, max_denominator=7)


def collocation(nodes: list[sympy.Rational]) -> bf.ButcherTableau:
    """The collocation method of the nodes: a_ij = ∫₀^{c_i} ℓ_j, b_j = ∫₀¹ ℓ_j (order ≥ s)."""
    x = sympy.Symbol("x")
    basis = [
        sympy.prod([(x - c) / (nodes[j] - c) for m, c in enumerate(nodes) if m != j])
        for j in range(len(nodes))
    ]
    A = [[str(sympy.integrate(ell, (x, 0, c))) for ell in basis] for c in nodes]
    b = [str(sympy.integrate(ell, (x, 0, 1))) for ell in basis]
    return bf.ButcherTableau(A=A, b=b, name="collocation")


@settings(max_examples=8, deadline=None)
@given(st.lists(NODE, min_size=2, max_size=3, unique=True))
def test_symplectic_agrees_with_check_on_random_collocation_methods(nodes: list[Any]) -> None:
    """Orders s to 2s, so that the conditions examined reach past order 4."""
    assume(all(c > 0 for c in nodes) or len(nodes) > 2)
    method = collocation([sympy.Rational(c.numerator, c.denominator) for c in sorted(nodes)])
    assert shown(bf.symplectic(method)) == check_row(method)


TABLEAUX = [n for n in bf.catalog.names(bf.ButcherTableau.family)]


@pytest.mark.slow
@pytest.mark.parametrize("name", TABLEAUX)
def test_symplectic_agrees_with_check_on_every_catalog_tableau(name: str) -> None:
    assert shown(bf.symplectic(name)) == check_row(name)
