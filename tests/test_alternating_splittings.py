"""The alternating encoding of splittings: one coefficient list per operator, applied in turn.

Papers and libraries store splitting and symplectic methods this way (Ruth's and Yoshida's c_i,
d_i; OrdinaryDiffEq.jl's `symplectic_tableaus.jl`, whose a_i, b_i are padded with zeros). The
declaration `alternating = { A = [...], B = [...] }` must give the very splitting a user would
get by interleaving by hand (same steps, report and compiled block), with exact zeros left out
and nothing else dropped.
"""

from __future__ import annotations

import copy
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import sympy
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import butcherflow as bf
from butcherflow.analysis.splitting.report import SplittingReport
from butcherflow.cli import main
from butcherflow.methods.files import from_dict

THIRD = "2**(1/3)"

# Ruth (1983), third order, as Wikipedia's "Symplectic integrator" lists it: c = (1, -2/3, 2/3),
# d = (-1/24, 3/4, 7/24), applied c_1, d_1, c_2, ...
RUTH_C = [1, "-2/3", "2/3"]
RUTH_D = ["-1/24", "3/4", "7/24"]
# Forest and Ruth (1990), fourth order, the same source: d_4 = 0 pads the lists to equal length.
FOREST_RUTH_C = [
    f"1/(2*(2 - {THIRD}))",
    f"(1 - {THIRD})/(2*(2 - {THIRD}))",
    f"(1 - {THIRD})/(2*(2 - {THIRD}))",
    f"1/(2*(2 - {THIRD}))",
]
FOREST_RUTH_D = [f"1/(2 - {THIRD})", f"-{THIRD}/(2 - {THIRD})", f"1/(2 - {THIRD})", 0]
# OrdinaryDiffEq.jl, lib/OrdinaryDiffEqSymplecticRK/src/symplectic_tableaus.jl: stage i drifts
# by b_i, then kicks by a_i (`symplectic_perform_step.jl`), so the drift list comes first.
# CalvoSanz4ConstantCache: a5 = convert(T, 0.0), float64 literals.
CALVO_SANZ_4_A = [0.205177661542290, 0.403021281604210, -0.12092087633891, 0.512721933192410, 0.0]
CALVO_SANZ_4_B = [0.061758858135626, 0.33897802655364, 0.61479130717558, -0.14054801465937]
CALVO_SANZ_4_B.append(0.12501982279453)
# McAte4ConstantCache, the `big"..."` strings.
MCATE_4_A = ["0.515352837431122936", "-0.085782019412973646"]
MCATE_4_A += ["0.441583023616466524", "0.128846158365384185"]
MCATE_4_B = ["0.134496199277431089", "-0.224819803079420806"]
MCATE_4_B += ["0.756320000515668291", "0.334003603286321425"]
# CandyRoz4ConstantCache: b1 = 0 (the step starts with a kick), a3 = a2, a4 = a1, b4 = b2.
CANDY_ROZ_4_A = [f"(2 + {THIRD} + 2**(-1/3))/6", f"(1 - {THIRD} - 2**(-1/3))/6"]
CANDY_ROZ_4_A += CANDY_ROZ_4_A[::-1]
CANDY_ROZ_4_B = [0, f"1/(2 - {THIRD})", "1/(1 - 2**(2/3))", f"1/(2 - {THIRD})"]


def alternating(lists: dict[str, list[Any]], substep: Any = "exact", **kw: Any) -> bf.Splitting:
    return bf.Splitting(alternating=lists, substep=substep, **kw)


def check(method: bf.Splitting, order: int) -> SplittingReport:
    report = bf.check(method, max_order=order + 1)
    assert isinstance(report, SplittingReport)
    return report


def test_ruth_3_as_published_is_third_order_and_the_adjoint_of_ordinarydiffeqs() -> None:
    ruth = alternating({"A": RUTH_C, "B": RUTH_D})
    report = check(ruth, 3)
    assert (report.order, report.order_upper, report.exact) == (3, 3, True)
    # OrdinaryDiffEq's Ruth3 (a = 2/3, -2/3, 1; b = 7/24, 3/4, -1/24) runs the same sub-steps
    # backwards: the adjoint, of the same order.
    sciml = alternating({"B": ["7/24", "3/4", "-1/24"], "A": ["2/3", "-2/3", 1]})
    assert sciml.steps == ruth.steps[::-1]
    assert check(sciml, 3).order == 3


def test_forest_ruth_with_its_padding_zero_is_the_catalogs_yoshida_4() -> None:
    forest_ruth = alternating({"A": FOREST_RUTH_C, "B": FOREST_RUTH_D})
    assert len(forest_ruth.steps) == 7  # d_4 = 0 is left out: A c_4 ends the step
    catalog = bf.catalog["yoshida-4-rk4"]
    assert isinstance(catalog, bf.Splitting)
    assert [op for op, _ in forest_ruth.steps] == [op for op, _ in catalog.steps]
    for (_, mine), (_, theirs) in zip(forest_ruth.steps, catalog.steps, strict=True):
        assert sympy.simplify(mine - theirs) == 0
    report = check(forest_ruth, 4)
    assert (report.order, report.order_upper) == (4, 4)


def test_candy_rozmus_4_with_a_leading_zero_is_fourth_order() -> None:
    method = alternating({"B": CANDY_ROZ_4_B, "A": CANDY_ROZ_4_A})
    assert [op for op, _ in method.steps] == ["A", "B"] * 3 + ["A"]  # b_1 = 0: starts with A
    assert method.operators == ("A", "B")
    assert check(method, 4).order == 4


@pytest.mark.parametrize(
    ("lists", "steps"),
    [
        ({"B": CALVO_SANZ_4_B, "A": CALVO_SANZ_4_A}, 9),
        ({"B": MCATE_4_B, "A": MCATE_4_A}, 8),
    ],
    ids=["calvo-sanz-4", "mcate-4"],
)
def test_ordinarydiffeqs_fourth_order_pairs_are_third_order_for_general_operators(
    lists: dict[str, list[Any]], steps: int
) -> None:
    # Order 4 for q'' = f(q) (quadratic kinetic energy, where some brackets vanish); for general
    # non-commuting operators, order 3 (tests/test_external_methods.py checks it numerically).
    method = alternating(lists)
    assert len(method.steps) == steps  # Calvo-Sanz's a_5 = 0.0 is an exact zero, left out
    report = check(method, 3)
    assert (report.order, report.order_upper) == (3, 3)


def test_a_toml_file_stores_the_lists_as_the_library_does(tmp_path: Path, capsys) -> None:
    floats = ", ".join(map(repr, CALVO_SANZ_4_A))
    path = tmp_path / "calvo-sanz-4.toml"
    path.write_text(
        'name = "calvo-sanz-4"\nfamily = "splitting"\norder = 3\nsubstep = "exact"\n'
        f"alternating.B = [{', '.join(map(repr, CALVO_SANZ_4_B))}]\n"
        f"alternating.A = [{floats}]\n",
        encoding="utf-8",
    )
    method = bf.load(path)
    assert method.steps == alternating({"B": CALVO_SANZ_4_B, "A": CALVO_SANZ_4_A}).steps
    assert main(["check", str(path)]) == 0
    assert "order (exact sub-flows)          3" in capsys.readouterr().out
    # Written back as declared: the lists, the padding zero and the floats as they were.
    table = method.to_table()
    assert "steps" not in table
    assert table["alternating"] == {"B": CALVO_SANZ_4_B, "A": CALVO_SANZ_4_A}
    assert from_dict(table).to_table() == table


# -- the same splitting as the one interleaved by hand --------------------------------------------

ZEROS: list[Any] = [0, 0.0, "0.0", "0e3", "-0.000", Fraction(0), "1 - 1", "sqrt(2) - sqrt(2)"]
NONZEROS: list[Any] = [1, -2, Fraction(1, 3), "1/2", "-3/4", 0.25, "0.1", "1e-30", "sqrt(2)/3"]
ENTRY = st.one_of(
    st.sampled_from(ZEROS).map(lambda x: (x, True)),
    st.sampled_from(NONZEROS).map(lambda x: (x, False)),
)


@st.composite
def alternating_lists(draw: st.DrawFn) -> dict[str, list[tuple[Any, bool]]]:
    """Two or three operators, the first list n long, each later one n or n - 1 (non-increasing),
    entries (raw, is it an exact zero)."""
    names = draw(st.permutations(["A", "B", "kick"]))[: draw(st.integers(2, 3))]
    n = draw(st.integers(1, 4))
    shorter = draw(st.integers(0, len(names) - 1))  # how many of the last lists are short
    lengths = [n] * (len(names) - shorter) + [n - 1] * shorter
    lists = {
        op: draw(st.lists(ENTRY, min_size=k, max_size=k))
        for op, k in zip(names, lengths, strict=True)
    }
    assume(all(any(not zero for _, zero in xs) for xs in lists.values()))
    return lists


def by_hand(lists: dict[str, list[tuple[Any, bool]]]) -> list[tuple[str, Any]]:
    width = max(len(xs) for xs in lists.values())
    return [
        (op, xs[i][0])
        for i in range(width)
        for op, xs in lists.items()
        if i < len(xs) and not xs[i][1]
    ]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lists=alternating_lists(),
    substep=st.sampled_from(["exact", "euler"]),
    precision=st.sampled_from([None, 1e-20]),
)
def test_alternating_lists_are_the_splitting_interleaved_by_hand(
    lists: dict[str, list[tuple[Any, bool]]], substep: str, precision: float | None
) -> None:
    raw = {op: [x for x, _ in xs] for op, xs in lists.items()}
    mine = bf.Splitting(alternating=raw, substep=substep, precision=precision)
    hand = bf.Splitting(by_hand(lists), substep=substep, precision=precision)
    assert mine.steps == hand.steps
    assert mine.numbers == hand.numbers
    assert (mine.operators, mine.rounding, mine.numeric) == (
        hand.operators,
        hand.rounding,
        hand.numeric,
    )
    ours, theirs = bf.check(mine, max_order=3), bf.check(hand, max_order=3)
    assert [r for r in ours.rows() if r[0] != "proved in"] == [
        r for r in theirs.rows() if r[0] != "proved in"
    ]
    assert ours.notes == theirs.notes


def test_the_compiled_block_is_the_one_interleaved_by_hand() -> None:
    torch = pytest.importorskip("torch")
    lists = {"B": CALVO_SANZ_4_B, "A": CALVO_SANZ_4_A}
    hand = [(op, x) for b, a in zip(*lists.values(), strict=True) for op, x in (("B", b), ("A", a))]
    hand = [(op, x) for op, x in hand if x != 0.0]
    torch.manual_seed(0)
    fields = {op: torch.nn.Linear(4, 4, dtype=torch.float64) for op in "AB"}
    mine = bf.compile(alternating(lists, "euler"), fields=copy.deepcopy(fields))
    theirs = bf.compile(bf.Splitting(hand, "euler"), fields=copy.deepcopy(fields))
    assert mine.code == theirs.code
    assert mine.field_calls == theirs.field_calls == 9
    y = torch.randn(2, 3, 4, dtype=torch.float64)
    assert torch.equal(mine(y), theirs(y))


# -- what a zero is, and what is refused --------------------------------------------------------


def test_only_exact_zeros_are_left_out() -> None:
    # NUMERIC.md: a float 0.0 and a decimal whose value is zero are exact zeros; "1e-30" is a
    # sub-step of size 1e-30 known to ±5e-31, never a zero, and stays (its rounding is judged).
    method = alternating({"A": ["1/2", "1/2"], "B": [1, "1e-30"]})
    assert [op for op, _ in method.steps] == ["A", "B", "A", "B"]
    assert method.numeric
    for zero in [0, 0.0, "0.0", "-0e-5", Fraction(0)]:
        strang = alternating({"A": ["1/2", "1/2"], "B": [1, zero]})
        assert [op for op, _ in strang.steps] == ["A", "B", "A"] and not strang.numeric


def test_a_member_whose_coefficient_becomes_zero_leaves_that_step_out() -> None:
    family = alternating({"A": ["g", "1 - g"], "B": [1, 0]}, precision=1e-12)
    assert len(family.steps) == 3
    lie = family.subs({"g": 1})
    assert [op for op, _ in lie.steps] == ["A", "B"]
    assert lie.precision == family.precision
    assert bf.check(lie).order == 1
    assert bf.check(family.subs({"g": "1/2"})).order == 2


def test_the_steps_form_still_refuses_a_zero(declaration_error) -> None:
    with declaration_error("key 'steps[1][1]'", "does nothing"):
        bf.Splitting([("A", 1), ("B", 0.0), ("A", 1)])


def test_steps_and_alternating_are_exclusive(declaration_error, write_toml) -> None:
    with declaration_error("key 'alternating'", "not both"):
        bf.Splitting([("A", 1), ("B", 1)], alternating={"A": [1], "B": [1]})
    with declaration_error("key 'steps'", "neither steps nor alternating"):
        bf.Splitting()
    path = write_toml('name = "s"\nfamily = "splitting"\nsubstep = "exact"\n')
    with declaration_error("method.toml", "key 'steps'", "alternating = {"):
        bf.load(path)


@pytest.mark.parametrize(
    ("lists", "fragments"),
    [
        ({"A": [1, "1/2"], "B": [0, 0.0]}, ("key 'alternating.B'", "never moves", "[0, 0.0]")),
        ({"A": [1], "B": []}, ("key 'alternating.B'", "never moves")),
        ({"A": [1, "x!"], "B": [1]}, ("key 'alternating.A[1]'", "'x!'")),
        ({"A": [1, None], "B": [1]}, ("key 'alternating.A[1]'", "not a number")),
        ({"A": [1], "B": [1, 2]}, ("key 'alternating.B'", "2 entries", "first (1)")),
        ({"A": [1, 2, 3], "B": [1]}, ("key 'alternating.B'", "1 entries", "first (3)")),
        ({"A": [1, 1], "B": [1], "C": [1, 1]}, ("key 'alternating.C'", "shorter ones last")),
        ({"A": [1]}, ("key 'alternating'", "at least two operators")),
        ([["A", 1], ["B", 1]], ("key 'alternating'", "at least two operators")),
        ({"A": [1], "B B": [1]}, ("key 'alternating.B B'", "identifiers")),
        ({"A": "1, 2", "B": [1]}, ("key 'alternating.A'", "list of coefficients")),
    ],
)
def test_malformed_alternating_lists_get_one_line(
    lists: Any, fragments: tuple[str, ...], declaration_error
) -> None:
    with declaration_error(*fragments):
        bf.Splitting(alternating=lists)


def test_declared_operators_are_checked_against_the_lists(declaration_error) -> None:
    with declaration_error("key 'alternating.C'", "unknown operator 'C'"):
        bf.Splitting(alternating={"A": [1], "C": [1]}, operators=["A", "B"])
