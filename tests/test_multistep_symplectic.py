"""G-symplecticity of linear multistep methods on their k values (`multistep/symplectic.py`).

Checked against the leapfrog's two-value form typed by hand, a float64 integration that keeps
the witnessed quadratic form of y' = Sy (S skew, |y|² invariant), NodePy's order of the same
coefficients (the k-value form is the same method), and, for random coefficients, the theorem
of Eirola and Sanz-Serna (Numer. Math. 61, 1992): a one-leg method with ρ, σ coprime is
G-symplectic exactly when it is symmetric.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import sympy
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import butcherflow as bf
from butcherflow.analysis.general_linear.symplectic import g_symplectic
from butcherflow.analysis.multistep.symplectic import k_value_form, one_leg_form

ROTATION = np.array([[0.0, 1.0, 0.3], [-1.0, 0.0, -0.7], [-0.3, 0.7, 0.0]])  # skew: |y|² kept


def test_the_leapfrog_is_g_symplectic_with_g_the_exchange_matrix() -> None:
    verdict, why = bf.symplectic("leapfrog")
    assert (verdict, "G = [[0, 1], [1, 0]]" in why, "\n" in why) == (True, True, False)


def test_the_leapfrog_typed_in_its_two_value_form_is_g_symplectic() -> None:
    """y_{n+1} = y_{n-1} + 2h f(y_n) on the inputs (y_n, y_{n-1}), as the issue states it."""
    two_value = bf.GeneralLinear(
        [[0]], [[1, 0]], [[2], [0]], [[0, 1], [1, 0]], start=["y(x)", "y(x - h)"]
    )
    found = g_symplectic(two_value)
    assert (found.holds, found.G) == (True, ((0, 1), (1, 0)))


@pytest.mark.parametrize(
    ("name", "equation"),
    [("adams-bashforth-2", "G = VᵀGV"), ("bdf-2", "G = VᵀGV"), ("adams-moulton-2", "DA + AᵀD")],
)
def test_non_symmetric_and_trapezoid_forms_say_no_naming_the_equation(
    name: str, equation: str
) -> None:
    verdict, why = bf.symplectic(name)
    assert (verdict, f"no symmetric nonsingular G: {equation}" in why) == (False, True)


def test_milne_simpson_is_not_but_its_one_leg_counterpart_is() -> None:
    verdict, why = bf.symplectic("milne-simpson")
    assert (verdict, "one-leg counterpart" in why and "is G-symplectic with G" in why) == (
        False,
        True,
    )


def test_numeric_coefficients_are_judged_at_their_precision() -> None:
    floats = bf.LinearMultistep(alpha=[-1.0, 0, 1.0], beta=[0, 2.0, 0], name="leapfrog-floats")
    verdict, why = bf.symplectic(floats)
    assert (verdict, "within the precision of the entries" in why) == (True, True)


def _invariant_drift(method: bf.LinearMultistep, one_leg: bool, steps: int = 400) -> float:
    """Largest change of the witnessed quadratic form Σ G_ij y_iᵀy_j (G of the method's k-value
    form, or of its one-leg counterpart's) over `steps` float64 steps on y' = Sy, relative to
    its size. On a linear field the method and its one-leg counterpart compute the same y_n."""
    form = one_leg_form(method) if one_leg else k_value_form(method)
    assert form is not None
    G = np.array(g_symplectic(form).G, dtype=float)
    k, h = method.steps, 0.05
    alpha = np.array([float(x) for x in method.alpha]) / float(method.alpha[k])
    beta = np.array([float(x) for x in method.beta]) / float(method.alpha[k])
    ys = [np.cos(0.3 * j) * np.array([1.0, -0.5, 0.25]) for j in range(k)]  # any start

    def quadratic(window: list[np.ndarray]) -> float:
        newest = window[::-1]  # the form's inputs are y_{n+k-1}, ..., y_n
        return float(sum(G[i, j] * newest[i] @ newest[j] for i in range(k) for j in range(k)))

    start, worst = quadratic(ys), 0.0
    for _ in range(steps):
        past = ys[-k:]
        rhs = sum(-alpha[j] * past[j] + h * beta[j] * ROTATION @ past[j] for j in range(k))
        ys.append(np.linalg.solve(np.eye(3) - h * beta[k] * ROTATION, rhs))
        worst = max(worst, abs(quadratic(ys[-k:]) - start))
    return worst / abs(start)


@pytest.mark.parametrize(("name", "one_leg"), [("leapfrog", False), ("milne-simpson", True)])
def test_the_witnessed_form_is_kept_by_a_float64_integration(name: str, one_leg: bool) -> None:
    method = bf.catalog[name]
    assert isinstance(method, bf.LinearMultistep)
    assert _invariant_drift(method, one_leg) < 1e-12


@pytest.mark.parametrize("name", ["adams-bashforth-3", "bdf-4", "milne-simpson", "leapfrog"])
def test_the_k_value_form_is_the_method_nodepy_orders(name: str) -> None:
    from nodepy import linear_multistep_method as lmm

    method = bf.catalog[name]
    assert isinstance(method, bf.LinearMultistep)
    theirs = lmm.LinearMultistepMethod(
        np.array(method.alpha, dtype=object), np.array(method.beta, dtype=object)
    ).order()
    assert bf.check(k_value_form(method)).order == int(theirs)


COEFFICIENT = st.fractions(min_value=-3, max_value=3, max_denominator=4)


@st.composite
def multistep(draw: st.DrawFn) -> tuple[list[Fraction], list[Fraction], bool]:
    """Random (α, β) of k ≤ 3 steps, half of them symmetric (αⱼ = −α_{k−j}, βⱼ = β_{k−j})."""
    k = draw(st.integers(1, 3))
    alpha = draw(st.lists(COEFFICIENT, min_size=k + 1, max_size=k + 1))
    beta = draw(st.lists(COEFFICIENT, min_size=k + 1, max_size=k + 1))
    if draw(st.booleans()):
        alpha = [alpha[j] if 2 * j < k else -alpha[k - j] if 2 * j > k else 0 for j in range(k + 1)]
        beta = [beta[min(j, k - j)] for j in range(k + 1)]
    assume(alpha[k] != 0 and sum(beta) != 0)
    # The label is read off the coefficients, not the draw: an unsymmetrised draw can land on a
    # symmetric method (α = (3, −3), β = (−3, −3)), and that one is G-symplectic too
    return alpha, beta, alpha == [-a for a in alpha[::-1]] and beta == beta[::-1]


def _coprime(alpha: list[Fraction], beta: list[Fraction]) -> bool:
    z = sympy.Symbol("z")
    rho = sum(sympy.Rational(a) * z**j for j, a in enumerate(alpha))
    sigma = sum(sympy.Rational(b) * z**j for j, b in enumerate(beta))
    return bool(sympy.degree(sympy.gcd(rho, sigma), z) == 0)


@settings(max_examples=25, deadline=None)
@given(multistep())
def test_a_one_leg_method_is_g_symplectic_exactly_when_symmetric(
    drawn: tuple[list[Fraction], list[Fraction], bool],
) -> None:
    alpha, beta, symmetric = drawn
    assume(_coprime(alpha, beta))
    method = bf.LinearMultistep([str(a) for a in alpha], [str(b) for b in beta])
    form = one_leg_form(method)
    assert form is not None and g_symplectic(form).holds is symmetric


@settings(max_examples=25, deadline=None)
@given(multistep())
def test_the_method_itself_is_g_symplectic_only_with_one_nonzero_beta_and_symmetric(
    drawn: tuple[list[Fraction], list[Fraction], bool],
) -> None:
    """The module's claim: two nonzero βⱼ leave only singular G on the k values."""
    alpha, beta, symmetric = drawn
    method = bf.LinearMultistep([str(a) for a in alpha], [str(b) for b in beta])
    holds = g_symplectic(k_value_form(method)).holds
    assert not holds or (sum(b != 0 for b in beta) == 1 and symmetric)
