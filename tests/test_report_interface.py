"""The rows every family's report shares (`Report`): read the same way for every family."""

from __future__ import annotations

import math
import re

import pytest
import sympy

import butcherflow as bf

# r of the real stability interval [-r, 0]: classical RK4 (Hairer-Wanner II, fig. IV.2.1),
# the two-step Adams-Bashforth method (Hairer-Wanner II, section V.1: [-1, 0]).
RK4_INTERVAL = 2.785293563405282
AB2_INTERVAL = 1.0


def test_real_stability_interval_of_a_tableau() -> None:
    assert bf.check("rk4").real_stability_interval == pytest.approx(RK4_INTERVAL, abs=1e-9)


def test_real_stability_interval_of_a_multistep_method() -> None:
    assert bf.check("adams-bashforth-2").real_stability_interval == pytest.approx(
        AB2_INTERVAL, abs=1e-9
    )


def test_real_stability_interval_of_a_neural_ode_is_its_solvers() -> None:
    report = bf.check("neural-ode-rk4")
    assert report.real_stability_interval == pytest.approx(RK4_INTERVAL, abs=1e-9)


def test_a_splitting_has_no_stability_interval() -> None:
    assert bf.check("lie-trotter").real_stability_interval is None


def test_failing_words_of_exact_sub_flows() -> None:
    # exp(hA) exp(hB): the words AB and BA miss 1/2 by +1/2 and -1/2
    report = bf.check(bf.Splitting([("A", 1), ("B", 1)], substep="exact"))
    assert (report.failing_what, list(report.failing)) == (
        "words at order 2",
        [("AB", sympy.Rational(1, 2)), ("BA", sympy.Rational(-1, 2))],
    )


def test_failing_trees_of_euler_sub_steps() -> None:
    report = bf.check(bf.Splitting([("A", 1), ("B", 1)], substep="euler"))
    assert report.failing_what == "coloured trees at order 2"
    assert list(report.failing) == report.failing_trees


def test_failing_trees_of_a_tableau() -> None:
    report = bf.check("rk4")
    assert report.failing_what == "trees at order 5" and len(report.failing) > 0


def test_substep_order_only_where_there_are_sub_steps() -> None:
    assert bf.check("rk4").substep_order is None
    assert bf.check(bf.Splitting([("A", 1), ("B", 1)], substep="euler")).substep_order == 1


def test_one_step_methods_are_zero_stable() -> None:
    assert bf.check("rk4").zero_stable is True


def test_exact_follows_the_digits() -> None:
    numeric = bf.LinearMultistep([-1, 1], [0.5, 0.5])
    assert (bf.check("adams-bashforth-2").exact, bf.check(numeric).exact) == (True, False)


def test_unbounded_interval_is_infinite() -> None:
    assert bf.check("backward-euler").real_stability_interval == math.inf


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"time_budget": float("nan")}, "key 'time_budget': the time budget must be"),
        ({"time_budget": -1}, "key 'time_budget': the time budget must be"),
        ({"time_budget": "5"}, "key 'time_budget': the time budget must be"),
        ({"max_order": -1}, "key 'max_order': max_order must be a positive integer"),
    ],
)
def test_bad_check_options_are_one_line(options: dict, fragment: str) -> None:
    with pytest.raises(bf.DeclarationError, match=re.escape(fragment)):
        bf.check("heun", **options)
