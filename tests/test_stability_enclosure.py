"""A numeric tableau's stability rows hold for every method within the precision of its entries
(`analysis/stability_enclosure.py`), or are undetermined: never the digits' own method alone."""

from __future__ import annotations

import math
from fractions import Fraction

import flint
import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

import butcherflow as bf
from butcherflow.analysis.stability_enclosure import _centred
from butcherflow.methods import ButcherTableau

RK4_A = [[0, 0, 0, 0], ["1/2", 0, 0, 0], [0, "1/2", 0, 0], [0, 0, 1, 0]]


def _floats(method: ButcherTableau) -> ButcherTableau:
    as_float = lambda x: float(sympy.N(x, 30))  # noqa: E731
    return ButcherTableau(
        [[as_float(x) for x in row] for row in method.A], [as_float(x) for x in method.b]
    )


def test_three_digit_rk4_leaves_the_imaginary_interval_open() -> None:
    # The digits spell a method with [-2.83i, 2.83i]; b3 = 0.3334, inside the rounding of
    # "0.333", has none. Before the enclosure the report printed [-2.82842i, 2.82842i].
    digits = bf.check(ButcherTableau(RK4_A, ["0.167", "0.333", "0.333", "0.167"]))
    assert digits.stability.imaginary_interval is None
    assert digits.stability.imaginary_interval_text == "undetermined"
    neighbour = bf.check(ButcherTableau(RK4_A, ["167/1000", "333/1000", "3334/10000", "167/1000"]))
    assert neighbour.stability.imaginary_interval == 0


def test_merson_in_floats_has_the_exact_methods_imaginary_interval() -> None:
    # The exact y⁶ term of |R(iy)|² − 1 is 0; float digits make it +1e-17, which read "none".
    exact = bf.check(bf.catalog["merson-4"]).stability
    floats = bf.check(_floats(bf.catalog["merson-4"])).stability
    assert exact.imaginary_interval == pytest.approx(math.sqrt(12))
    assert floats.imaginary_interval == pytest.approx(math.sqrt(12), rel=1e-9)
    assert any("for the digits" in note for note in floats.notes)


def test_float32_rk4_prints_where_its_real_end_lies() -> None:
    A = np.array([[0, 0, 0, 0], [0.5, 0, 0, 0], [0, 0.5, 0, 0], [0, 0, 1, 0]], dtype=np.float32)
    b = np.array([1 / 6, 1 / 3, 1 / 3, 1 / 6], dtype=np.float32)
    stability = bf.check(ButcherTableau(A, b)).stability
    lo, hi = stability.real_enclosure
    assert lo < 2.785293563405282 < hi and hi - lo < 0.1
    assert "end between" in stability.real_interval_text


def test_ssp_touches_inside_the_interval_count_within_the_resolution() -> None:
    stability = bf.check(_floats(bf.catalog["ssprk-9-3"])).stability
    exact = bf.check(bf.catalog["ssprk-9-3"]).stability
    assert stability.real_interval == pytest.approx(exact.real_interval, rel=1e-4)


EXACT_RK = [
    name
    for name, method in bf.catalog.items()
    if isinstance(method, ButcherTableau) and not method.numeric and not method.parameters
]


@pytest.mark.parametrize("name", EXACT_RK)
def test_floats_of_a_catalog_tableau_never_contradict_its_exact_rows(name: str) -> None:
    exact = bf.check(bf.catalog[name]).stability
    floats = bf.check(_floats(bf.catalog[name])).stability
    for row in ("real", "imaginary"):
        found, truth = getattr(floats, f"{row}_interval"), getattr(exact, f"{row}_interval")
        if found is not None and truth is not None:
            enclosure = getattr(floats, f"{row}_enclosure")
            assert found == pytest.approx(truth, rel=1e-5) or (
                enclosure is not None and enclosure[0] <= truth <= enclosure[1]
            ), (row, found, truth)
    if floats.a_stable is not None and exact.a_stable is not None:
        assert floats.a_stable == exact.a_stable


@settings(max_examples=40, deadline=None)
@given(
    s=st.integers(1, 4),
    data=st.data(),
    digits=st.integers(1, 6),
    numerator=st.booleans(),
)
def test_centred_coefficients_hold_every_matrix_in_the_box(
    s: int, data: st.DataObject, digits: int, numerator: bool
) -> None:
    """det(I − z(A − 1bᵀ)) and det(I − zA) of any point of the entries' box lie in the centred
    enclosure (the mean-value form: centre plus gradient over the box times the radii)."""
    entry = st.fractions(-3, 3, max_denominator=12)
    A = [[data.draw(entry) for _ in range(s)] for _ in range(s)]
    b = [data.draw(entry) for _ in range(s)]
    radius = Fraction(1, 10**digits)
    offset = st.fractions(-1, 1, max_denominator=50)
    moved = [[x + radius * data.draw(offset) for x in row] for row in A]
    weights = [x + radius * data.draw(offset) for x in b]

    def as_ball(x: Fraction) -> flint.arb:
        return flint.arb(flint.fmpq(x.numerator, x.denominator)) + flint.arb(
            0, flint.arb(flint.fmpq(radius.numerator, radius.denominator))
        )

    with flint.ctx.workprec(120):
        enclosure = _centred(
            [[as_ball(x) for x in row] for row in A], [as_ball(x) for x in b] if numerator else None
        )
    point = [[moved[i][j] - (weights[j] if numerator else 0) for j in range(s)] for i in range(s)]
    flat = [flint.fmpq(x.numerator, x.denominator) for row in point for x in row]
    exact = flint.fmpq_mat(s, s, flat).charpoly().coeffs()[::-1]
    assert all(c.contains(flint.arb(e)) for c, e in zip(enclosure, exact, strict=True))
