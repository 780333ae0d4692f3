"""A numeric tableau's stability rows hold for every method within the precision of its entries
(`analysis/stability_enclosure.py`), or are undetermined: never the digits' own method alone."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy

import butcherflow as bf
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
