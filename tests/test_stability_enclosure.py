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
from butcherflow.analysis.runge_kutta.stability_enclosure import _centred
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


def _inside(numeric: ButcherTableau, neighbour: ButcherTableau) -> bool:
    """Every entry of the exact `neighbour` lies within the rounding of `numeric`'s entry."""
    return all(
        abs(Fraction(str(near.value)) - Fraction(str(number.value))) <= number.rounding
        for (_, number), (_, near) in zip(
            numeric.numbers.keyed(), neighbour.numbers.keyed(), strict=False
        )
    )


MERSON_A = [
    [0, 0, 0, 0, 0],
    ["1/3", 0, 0, 0, 0],
    ["1/6", "1/6", 0, 0, 0],
    ["1/8", 0, "3/8", 0, 0],
    ["1/2", 0, "-3/2", 2, 0],
]
MERSON_B = ["1/6", 0, 0, "2/3", "1/6"]


def test_merson_in_floats_leaves_the_imaginary_interval_open() -> None:
    # The exact y⁶ term of |R(iy)|² − 1 is 0 without being fixed by order 4 or by the zeros of
    # the tableau: a31 = 1/6 − e, a32 = 1/6 + e keeps order 4 exactly and makes it e/12, so
    # e = 1e-15 (inside the floats' rounding) has no imaginary interval and e = 0 has √12.
    # Taking that coefficient as zero printed [-3.4641i, 3.4641i] for every such method.
    floats = _floats(ButcherTableau(MERSON_A, MERSON_B))
    found = bf.check(floats)
    assert found.order == 4 and found.stability.imaginary_interval_text == "undetermined"
    e = Fraction(1, 10**15)
    A = [[Fraction(x) for x in row] for row in MERSON_A]
    A[2][0], A[2][1] = A[2][0] - e, A[2][1] + e
    neighbour = ButcherTableau(A, MERSON_B)
    assert _inside(floats, neighbour)
    moved = bf.check(neighbour)
    assert moved.order == 4 and moved.stability.imaginary_interval == 0


def test_a_singular_matrix_in_floats_is_not_called_a_stable() -> None:
    # A has proportional rows: det A = 0 for these digits but not by their zeros. Its neighbour
    # with a11 = 1/8 − e, a12 = 1/8 + e (order 2 exactly, inside the floats' rounding) has
    # det A = −3e/4: a pole near −1/e in the left half-plane. Taking det A as zero printed
    # "A-stable: yes" and the real interval (-∞, 0] for every such method.
    floats = ButcherTableau([[0.125, 0.125], [0.375, 0.375]], [0.5, 0.5])
    found = bf.check(floats).stability
    assert found.a_stable is None and found.real_interval is None
    e = Fraction(1, 10**15)
    A = [[Fraction(1, 8) - e, Fraction(1, 8) + e], [Fraction(3, 8), Fraction(3, 8)]]
    neighbour = ButcherTableau(A, ["1/2", "1/2"])
    assert _inside(floats, neighbour)
    moved = bf.check(neighbour)
    assert moved.order == 2 and moved.stability.a_stable is False
    assert 0 < moved.stability.real_interval < math.inf


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
            [[as_ball(x) for x in row] for row in A],
            [as_ball(x) for x in b] if numerator else None,
            frozenset(),
        )
    point = [[moved[i][j] - (weights[j] if numerator else 0) for j in range(s)] for i in range(s)]
    flat = [flint.fmpq(x.numerator, x.denominator) for row in point for x in row]
    exact = flint.fmpq_mat(s, s, flat).charpoly().coeffs()[::-1]
    assert all(c.contains(flint.arb(e)) for c, e in zip(enclosure, exact, strict=True))


SDIRK_2 = 1 - math.sqrt(2) / 2  # γ of the L-stable two-stage SDIRK


def test_a_stage_no_weight_uses_leaves_a_stability_to_the_stages_that_count() -> None:
    # Stage 3 has b3 = 0 and no later stage: R is SDIRK-2's for every method within the
    # precision, but its diagonal -1 put a pole at z = -1 into D, which Routh's test called
    # "certainly not A-stable": the report said "A-stable: False (yes for the digits)".
    g = SDIRK_2
    with_unused = ButcherTableau([[g, 0, 0], [1 - g, g, 0], [0.3, 0.2, -1.0]], [1 - g, g, 0])
    alone = ButcherTableau([[g, 0], [1 - g, g]], [1 - g, g])
    found, shared = bf.check(with_unused).stability, bf.check(alone).stability
    assert shared.a_stable is True and shared.real_interval == math.inf
    assert dict(found.rows()) == dict(shared.rows())


def test_a_pole_the_digits_cancel_leaves_a_stability_open() -> None:
    # SDIRK (γ = 1/3) with a third stage of diagonal −1 that no weight sees, mixed in by a
    # similarity that keeps A·1: the digits' R is the SDIRK's (A-stable), but D has the root
    # z = −1, which a neighbour no longer cancels (not A-stable). Routh's test on D alone said
    # "A-stable: False" for every method, which the digits' own method contradicts.
    A = [
        ["-43/220", "-41/110", "367/220"],
        ["-49/990", "-16/165", "547/330"],
        ["61/220", "7/110", "-9/220"],
    ]
    b = ["1/4", 0, "3/4"]
    assert bf.check(ButcherTableau(A, b)).stability.a_stable is True
    found = bf.check(ButcherTableau(A, b, precision=1e-12)).stability
    assert found.a_stable is None and found.imaginary_interval == math.inf
    moved = [[Fraction(x) for x in row] for row in A]
    moved[0][0], moved[0][1] = moved[0][0] + Fraction(1, 10**13), moved[0][1] - Fraction(1, 10**13)
    assert bf.check(ButcherTableau(moved, b)).stability.a_stable is False


def test_lobatto_iiib_in_floats_is_a_stable_only_with_its_first_column_typed_as_b() -> None:
    # Its first column is b₁ in every row: that column of A − 1bᵀ is zero for every method whose
    # column moves with b₁, as a stiffly accurate last row is. Typed apart by 1e-13, it is open.
    method = bf.catalog["lobatto-iiib-4"]
    floats = _floats(method)
    assert bf.check(floats).stability.a_stable is True
    A = [[float(sympy.N(x, 30)) for x in row] for row in method.A]
    A[1][0] *= 1 + 1e-13
    moved = ButcherTableau(A, [float(sympy.N(x, 30)) for x in method.b])
    assert bf.check(moved).stability.a_stable is None
