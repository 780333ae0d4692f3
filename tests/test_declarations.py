"""The four declaration families: attributes of valid declarations, errors of malformed ones."""

from __future__ import annotations

from fractions import Fraction

import pytest
import sympy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import butcherflow as bf
from butcherflow.methods.splitting import EULER

R = sympy.Rational
half = R(1, 2)


def write_method(folder, name: str, body: str) -> None:
    (folder / f"{name}.toml").write_text(f'name = "{name}"\n{body}', encoding="utf-8")


HEUN_TOML = 'family = "runge-kutta"\nA = [[0, 0], [1, 0]]\nb = ["1/2", "1/2"]\n'
BACKWARD_EULER_TOML = 'family = "runge-kutta"\nA = [[1]]\nb = [1]\n'


# == ButcherTableau =============================================================================


def test_rk4_attributes(rk4) -> None:
    expected = ((0, 0, 0, 0), (half, 0, 0, 0), (0, half, 0, 0), (0, 0, 1, 0))
    assert expected == rk4.A
    assert rk4.b == (R(1, 6), R(1, 3), R(1, 3), R(1, 6))
    assert rk4.c == (0, half, half, 1)  # row sums by default
    assert rk4.b_hat is None
    assert rk4.stages == 4
    assert rk4.is_explicit
    assert not rk4.is_diagonally_implicit
    assert not rk4.is_implicit
    assert rk4.kind == "explicit"
    assert not rk4.numeric
    assert rk4.rounding == 0.0
    assert rk4.symbols == set()
    assert (rk4.name, rk4.order, rk4.family) == ("rk4", 4, "runge-kutta")
    assert rk4.title == "rk4"  # defaults to the name
    assert rk4.reference == ""
    assert rk4.source is None
    assert rk4.embedded_order is None
    assert isinstance(rk4, bf.Method)


def test_entries_are_exact_sympy_values(rk4) -> None:
    for row in rk4.A:
        assert isinstance(row, tuple)
        for x in row:
            assert isinstance(x, sympy.Expr)
            assert not x.has(sympy.Float)
    assert all(isinstance(x, sympy.Rational) for x in rk4.b)


def test_entries_may_mix_ints_fractions_strings_and_sympy() -> None:
    t = bf.ButcherTableau([[0, 0], [Fraction(2, 3), 0]], [sympy.Rational(1, 4), "3/4"])
    assert t.A[1][0] == R(2, 3)
    assert t.b == (R(1, 4), R(3, 4))
    assert t.c == (0, R(2, 3))
    assert t.name == "unnamed"


def test_is_zero_marks_the_skippable_terms(rk4) -> None:
    assert rk4.is_zero(0, 0)
    assert not rk4.is_zero(1, 0)
    assert rk4.is_zero(3, 0)
    assert not rk4.is_zero(3, 2)


def test_sdirk_is_diagonally_implicit(sdirk2) -> None:
    assert not sdirk2.is_explicit
    assert sdirk2.is_diagonally_implicit
    assert sdirk2.is_implicit
    assert sdirk2.kind == "diagonally implicit"
    gamma = 1 - sympy.sqrt(2) / 2
    assert sympy.simplify(sdirk2.A[0][0] - gamma) == 0
    assert sympy.simplify(sdirk2.A[1][1] - gamma) == 0
    assert sympy.simplify(sdirk2.c[1] - 1) == 0


def test_backward_euler_is_diagonally_implicit(backward_euler) -> None:
    assert backward_euler.is_diagonally_implicit
    assert not backward_euler.is_explicit
    assert backward_euler.c == (1,)


def test_gauss_legendre_is_fully_implicit(gauss2) -> None:
    assert not gauss2.is_explicit
    assert not gauss2.is_diagonally_implicit
    assert gauss2.is_implicit
    assert gauss2.kind == "implicit"
    assert sympy.simplify(gauss2.c[0] - (half - sympy.sqrt(3) / 6)) == 0
    assert gauss2.symbols == set()


def test_embedded_pair() -> None:
    heun_euler = bf.ButcherTableau(
        [[0, 0], [1, 0]], ["1/2", "1/2"], b_hat=[1, 0], name="heun-euler", embedded_order=1
    )
    assert heun_euler.b_hat == (1, 0)
    assert heun_euler.embedded_order == 1
    low = heun_euler.embedded()
    assert low.b == (1, 0)
    assert low.A == heun_euler.A
    assert low.order == 1


def test_embedded_without_b_hat_is_an_error(heun, declaration_error) -> None:
    with declaration_error("'b_hat'", "None"):
        heun.embedded()


def test_numeric_tableau_records_rounding() -> None:
    t = bf.ButcherTableau([[0, 0], ["0.6667", 0]], ["0.25", 0.75], name="ralston-ish")
    assert t.numeric
    assert t.A[1][0] == R(6667, 10000)  # exactly the digits given
    assert t.b == (R(1, 4), R(3, 4))
    assert t.rounding == pytest.approx(0.005)  # the coarsest entry decides
    assert t.numbers.A[1][0].rounding == pytest.approx(0.00005)


def test_numeric_c_matches_row_sums_within_its_rounding() -> None:
    t = bf.ButcherTableau([[0, 0], ["0.3333", 0]], [0, 1], c=[0, "1/3"])
    assert t.c == (0, R(1, 3))  # the given c is kept
    assert t.numeric


def test_parametrised_family_has_symbols() -> None:
    family = bf.ButcherTableau(
        [[0, 0], ["a", 0]], ["1 - 1/(2*a)", "1/(2*a)"], name="two-stage-family"
    )
    assert {str(s) for s in family.symbols} == {"a"}
    assert family.c[1] == sympy.Symbol("a", real=True)
    assert family.is_explicit
    assert not family.numeric


@pytest.mark.parametrize(
    ("a", "b"),
    [(1, (half, half)), (half, (0, 1)), (R(2, 3), (R(1, 4), R(3, 4)))],
    ids=["heun", "midpoint", "ralston"],
)
def test_subs_gives_a_family_member(a, b) -> None:
    family = bf.ButcherTableau([[0, 0], ["a", 0]], ["1 - 1/(2*a)", "1/(2*a)"], name="family")
    member = family.subs({"a": str(a)})
    assert member.symbols == set()
    expected = ((0, 0), (a, 0))
    assert expected == member.A
    assert member.b == b
    assert member.c == (0, a)
    # a symbol object works as a key too
    symbol = next(iter(family.symbols))
    assert family.subs({symbol: a}).b == b


def test_subs_keeps_embedded_weights() -> None:
    family = bf.ButcherTableau([[0, 0], ["a", 0]], ["1 - 1/(2*a)", "1/(2*a)"], b_hat=[1, 0])
    member = family.subs({"a": 1})
    assert member.b_hat == (1, 0)


def test_subs_unknown_symbol(declaration_error) -> None:
    family = bf.ButcherTableau([[0, 0], ["a", 0]], [0, 1])
    with declaration_error("key 'h'", "(got 1)", "['a']"):
        family.subs({"h": 1})


def test_with_weights(rk4) -> None:
    unit = rk4.with_weights([1, 1, 1, 1], name="rk4-unit")
    assert unit.b == (1, 1, 1, 1)
    assert unit.A == rk4.A
    assert unit.c == rk4.c
    assert unit.name == "rk4-unit"
    assert rk4.b == (R(1, 6), R(1, 3), R(1, 3), R(1, 6))  # the original is untouched
    gated = rk4.with_weights(["g", "1 - g", 0, 0])
    assert {str(s) for s in gated.symbols} == {"g"}
    assert gated.name == "rk4"


def test_with_weights_checks_the_new_weights(rk4, declaration_error) -> None:
    with declaration_error("key 'b'", "[1, 1]", "4"):
        rk4.with_weights([1, 1])


def test_tableau_is_frozen(rk4) -> None:
    for attribute, value in [("A", ()), ("b", ()), ("name", "x"), ("order", 5), ("stages", 1)]:
        with pytest.raises(AttributeError):
            setattr(rk4, attribute, value)
    assert rk4.name == "rk4"
    assert rk4.order == 4


def test_tableau_attributes_cannot_be_deleted(rk4) -> None:
    with pytest.raises(AttributeError):
        del rk4.b
    assert rk4.b == (R(1, 6), R(1, 3), R(1, 3), R(1, 6))


def test_row_sum_c_false_keeps_the_given_c() -> None:
    t = bf.ButcherTableau([[0, 0], [1, 0]], [half, half], c=[0, half], row_sum_c=False)
    assert t.c == (0, half)
    assert t.row_sum_c is False


# -- ButcherTableau errors -----------------------------------------------------------------------


def test_ragged_A(declaration_error) -> None:
    with declaration_error("key 'A[1]'", "[1]", "square") as info:
        bf.ButcherTableau([[0, 0], [1]], [half, half])
    assert info.value.key == "A[1]"


def test_non_square_A(declaration_error) -> None:
    with declaration_error("key 'A[0]'", "[0, 0]", "3 rows"):
        bf.ButcherTableau([[0, 0], [1, 0], [1, 1]], [1, 0, 0])


@pytest.mark.parametrize("A", [[], None, "0", 0, {"0": [0]}])
def test_A_must_be_a_list_of_rows(A, declaration_error) -> None:
    with declaration_error("key 'A'", repr(A)):
        bf.ButcherTableau(A, [1])


@pytest.mark.parametrize("row", ["00", 0, None, {0, 1}])
def test_rows_of_A_must_be_lists(row, declaration_error) -> None:
    with declaration_error("key 'A[1]'", repr(row)):
        bf.ButcherTableau([[0, 0], row], [half, half])


def test_bad_entry_of_A_names_its_position(declaration_error) -> None:
    with declaration_error("key 'A[1][0]'", "'nan'"):
        bf.ButcherTableau([[0, 0], ["nan", 0]], [half, half])


@pytest.mark.parametrize(
    ("kwargs", "key", "shown"),
    [
        ({"b": [1]}, "b", "[1]"),
        ({"b": [1, 0, 0]}, "b", "[1, 0, 0]"),
        ({"b": [half, half], "c": [0]}, "c", "[0]"),
        ({"b": [half, half], "c": [0, 1, 1]}, "c", "[0, 1, 1]"),
        ({"b": [half, half], "b_hat": [1]}, "b_hat", "[1]"),
        ({"b": [half, half], "b_hat": [1, 0, 0]}, "b_hat", "[1, 0, 0]"),
    ],
)
def test_wrong_vector_lengths(kwargs, key, shown, declaration_error) -> None:
    with declaration_error(f"key '{key}'", shown, "2 stages") as info:
        bf.ButcherTableau([[0, 0], [1, 0]], **kwargs)
    assert info.value.key == key


@pytest.mark.parametrize("key", ["b", "c", "b_hat"])
def test_vectors_must_be_lists(key, declaration_error) -> None:
    kwargs = {"b": [half, half], key: "1/2"}
    with declaration_error(f"key '{key}'", "'1/2'"):
        bf.ButcherTableau([[0, 0], [1, 0]], **kwargs)


def test_c_differing_from_row_sums_names_stage_and_both_values(declaration_error) -> None:
    with declaration_error("key 'c[1]'", "c[1] = 1/3", "A[1] = 1/2", "row_sum_c") as info:
        bf.ButcherTableau([[0, 0], [half, 0]], [0, 1], c=[0, R(1, 3)])
    assert info.value.key == "c[1]"


def test_numeric_c_outside_its_rounding_is_rejected(declaration_error) -> None:
    with declaration_error("key 'c[1]'", "c[1] = 3/10", "1/3"):
        bf.ButcherTableau([[0, 0], ["1/3", 0]], [0, 1], c=[0, "0.30"])


@pytest.mark.parametrize("flag", ["false", 0, None])
def test_row_sum_c_must_be_a_bool(flag, declaration_error) -> None:
    with declaration_error("key 'row_sum_c'", repr(flag)):
        bf.ButcherTableau([[0]], [1], c=[1], row_sum_c=flag)


@pytest.mark.parametrize("iterations", [0, -1, 1.5, True, "3"])
def test_bad_iterations(iterations, declaration_error) -> None:
    with declaration_error("key 'iterations'", repr(iterations), "positive integer"):
        bf.ButcherTableau([[1]], [1], iterations=iterations)


def test_iterations_kept_for_implicit_tableaux(gauss2) -> None:
    t = bf.ButcherTableau([[half]], [1], iterations=3, name="implicit-midpoint")
    assert t.iterations == 3
    assert gauss2.iterations is None


def test_embedded_order_without_b_hat(declaration_error) -> None:
    with declaration_error("key 'embedded_order'", "(got 1)", "b_hat"):
        bf.ButcherTableau([[0, 0], [1, 0]], [half, half], embedded_order=1)


@pytest.mark.parametrize("name", ["GL3", "RK44", "rk_4", "Dormand–Prince 5(4)", "rk4"])
def test_names_people_use_are_accepted_in_python(name) -> None:
    assert bf.ButcherTableau([[0]], [1], name=name).name == name


@pytest.mark.parametrize("name", ["", "   ", "a\nb", "x" * 101, 4, ["rk4"]])
def test_bad_names(name, declaration_error) -> None:
    with declaration_error("key 'name'", repr(name)[:60], "one printable line"):
        bf.ButcherTableau([[0]], [1], name=name)


def test_catalog_names_are_file_safe() -> None:
    from butcherflow.methods.base import file_safe_name

    assert all(file_safe_name(name) for name in bf.catalog)
    assert not file_safe_name("GL3") and not file_safe_name("rk 4")


@pytest.mark.parametrize("order", [-1, 4.0, "4", True, [4]])
@pytest.mark.parametrize("key", ["order", "embedded_order"])
def test_bad_orders(key, order, declaration_error) -> None:
    kwargs = {key: order, "b_hat": [1]}
    with declaration_error(f"key '{key}'", repr(order), "non-negative integer"):
        bf.ButcherTableau([[0]], [1], **kwargs)


@pytest.mark.parametrize("key", ["title", "reference"])
def test_title_and_reference_are_strings(key, declaration_error) -> None:
    with declaration_error(f"key '{key}'", "[1]"):
        bf.ButcherTableau([[0]], [1], **{key: [1]})


def test_title_and_reference_are_kept() -> None:
    t = bf.ButcherTableau([[0]], [1], name="euler", title="Forward Euler", reference="Euler 1768")
    assert (t.title, t.reference) == ("Forward Euler", "Euler 1768")


# == Splitting =================================================================================

STRANG = [("A", "1/2"), ("B", 1), ("A", "1/2")]


def test_strang_steps() -> None:
    strang = bf.Splitting(STRANG, substep="euler", name="strang", order=2, substep_order=1)
    assert strang.steps == (("A", half), ("B", 1), ("A", half))
    assert strang.operators == ("A", "B")
    assert strang.substep is EULER
    assert strang.substep_name == "euler"
    assert strang.coefficient_sums() == {"A": 1, "B": 1}
    assert (strang.order, strang.substep_order) == (2, 1)
    assert strang.family == "splitting"
    assert not strang.numeric


def test_default_substep_is_euler() -> None:
    lie = bf.Splitting([("A", 1), ("B", 1)])
    assert lie.substep is not None
    assert lie.substep.name == "euler"
    assert lie.substep.A == ((0,),)


def test_substep_exact_means_no_substep() -> None:
    s = bf.Splitting([["A", 1], ["B", 1]], substep="exact")
    assert s.substep is None
    assert s.substep_name == "exact"


def test_substep_can_be_a_tableau(heun) -> None:
    s = bf.Splitting(STRANG, substep=heun)
    assert s.substep is heun
    assert s.substep_name == "heun"


def test_substep_by_catalog_name(isolated_catalog) -> None:
    write_method(isolated_catalog.directory, "heun", HEUN_TOML)
    s = bf.Splitting(STRANG, substep="heun")
    assert isinstance(s.substep, bf.ButcherTableau)
    assert s.substep.b == (half, half)


def test_three_operators_and_symbolic_coefficients() -> None:
    s = bf.Splitting(
        [("A", "1/2"), ("B", "1/2"), ("C", 1), ("B", "1/2"), ("A", "1/2")],
        substep="exact",
        operators=["A", "B", "C"],
    )
    assert s.operators == ("A", "B", "C")
    assert s.coefficient_sums() == {"A": 1, "B": 1, "C": 1}
    yoshida_like = bf.Splitting([("A", "w"), ("B", "1 - 2*w"), ("A", "w")], substep="exact")
    assert yoshida_like.steps[1][1] == 1 - 2 * sympy.Symbol("w", real=True)


def test_numeric_splitting() -> None:
    s = bf.Splitting([("A", 0.5), ("B", 1), ("A", 0.5)])
    assert s.numeric
    assert s.steps[0] == ("A", half)


def test_splitting_is_frozen() -> None:
    s = bf.Splitting(STRANG)
    with pytest.raises(AttributeError):
        s.steps = ()
    assert len(s.steps) == 3


def test_unknown_operator(declaration_error) -> None:
    with declaration_error("key 'steps[1][0]'", "'C'", "['A', 'B']") as info:
        bf.Splitting([("A", 1), ("C", 1)], operators=["A", "B"])
    assert info.value.key == "steps[1][0]"


def test_declared_operator_never_used(declaration_error) -> None:
    with declaration_error("key 'operators'", "'C'", "['A', 'B', 'C']"):
        bf.Splitting([("A", 1), ("B", 1)], operators=["A", "B", "C"])


@pytest.mark.parametrize("operators", [5, "AB"])
def test_operators_must_be_a_list_of_names(operators, declaration_error) -> None:
    with declaration_error("key 'operators'", repr(operators)):
        bf.Splitting([("A", 1), ("B", 1)], operators=operators)


@pytest.mark.parametrize("zero", [0, "0", "0.0", "1 - 1", Fraction(0)])
def test_zero_coefficient(zero, declaration_error) -> None:
    with declaration_error("key 'steps[1][1]'", repr(zero), "does nothing"):
        bf.Splitting([("A", 1), ("B", zero)])


@pytest.mark.parametrize("steps", [[], (), "AB", {"A": 1}, 3])
def test_empty_or_non_list_steps(steps, declaration_error) -> None:
    with declaration_error("key 'steps'", repr(steps), "at least one step"):
        bf.Splitting(steps)


@pytest.mark.parametrize("step", [("A",), ("A", 1, 2), "A1", 5, None, {"A": 1}, []])
def test_malformed_step(step, declaration_error) -> None:
    with declaration_error("key 'steps[1]'", repr(step), "pair"):
        bf.Splitting([("A", 1), step])


@pytest.mark.parametrize("op", ["", "A B", "1", 1, None, "A-B"])
def test_operator_names_are_identifiers(op, declaration_error) -> None:
    with declaration_error("key 'steps[0][0]'", repr(op)):
        bf.Splitting([(op, 1)])


def test_bad_step_coefficient(declaration_error) -> None:
    with declaration_error("key 'steps[2][1]'", "'inf'"):
        bf.Splitting([("A", "1/2"), ("B", 1), ("A", "inf")])


def test_unknown_substep_names_the_closest_choices(isolated_catalog, declaration_error) -> None:
    """The closest names (difflib) and the command that lists them all, not the whole catalog."""
    write_method(isolated_catalog.directory, "heun", HEUN_TOML)
    with declaration_error("key 'substep'", "'heum'", "did you mean 'heun'", "butcherflow list"):
        bf.Splitting(STRANG, substep="heum")
    with declaration_error("'rk-four'", "'exact'", "'euler'", "butcherflow list") as info:
        bf.Splitting(STRANG, substep="rk-four")
    assert info.value.key == "substep"


def test_unknown_substep_is_not_hidden_by_a_broken_catalog_entry(
    isolated_catalog, declaration_error
) -> None:
    # A catalog file being edited must not turn a typo in `substep` into an unrelated error.
    write_method(isolated_catalog.directory, "heun", HEUN_TOML)
    write_method(isolated_catalog.directory, "broken", 'family = "runge-kutta"\nA = [[0]]\n')
    with declaration_error("key 'substep'", "'rk-four'", "'exact'"):
        bf.Splitting(STRANG, substep="rk-four")


@pytest.mark.parametrize("substep", ["RK4", "a\x00b", "heun.toml", ""])
def test_substep_names_that_cannot_be_catalog_names(
    substep, isolated_catalog, declaration_error
) -> None:
    write_method(isolated_catalog.directory, "heun", HEUN_TOML)
    with declaration_error("key 'substep'", repr(substep)):
        bf.Splitting(STRANG, substep=substep)


@pytest.mark.parametrize("relative", [True, False])
def test_substep_is_never_read_as_a_path(
    relative, isolated_catalog, tmp_path, declaration_error
) -> None:
    # A declaration file outside the catalog folder is not a catalog entry: the name is unknown.
    write_method(tmp_path, "outside", HEUN_TOML)
    substep = "../outside" if relative else str(tmp_path / "outside")
    with declaration_error("key 'substep'", repr(substep)):
        bf.Splitting(STRANG, substep=substep)


@pytest.mark.parametrize("substep", [3, None, ["euler"], {"A": "euler"}])
def test_substep_of_a_wrong_type(substep, declaration_error) -> None:
    with declaration_error("key 'substep'", repr(substep)):
        bf.Splitting(STRANG, substep=substep)


def test_implicit_substep_rejected(backward_euler, declaration_error) -> None:
    with declaration_error("key 'substep'", "'backward-euler'", "implicit"):
        bf.Splitting(STRANG, substep=backward_euler)


def test_implicit_catalog_substep_rejected(isolated_catalog, declaration_error) -> None:
    write_method(isolated_catalog.directory, "backward-euler", BACKWARD_EULER_TOML)
    with declaration_error("key 'substep'", "'backward-euler'", "implicit"):
        bf.Splitting(STRANG, substep="backward-euler")


def test_substep_must_be_a_runge_kutta_method(isolated_catalog, declaration_error) -> None:
    write_method(
        isolated_catalog.directory, "ab1", 'family = "multistep"\nalpha=[-1,1]\nbeta=[1,0]'
    )
    with declaration_error("key 'substep'", "'ab1'"):
        bf.Splitting(STRANG, substep="ab1")


@pytest.mark.parametrize("key", ["order", "substep_order"])
def test_splitting_bad_orders(key, declaration_error) -> None:
    with declaration_error(f"key '{key}'", "-2"):
        bf.Splitting(STRANG, **{key: -2})


# == LinearMultistep ===========================================================================


def test_adams_bashforth_2() -> None:
    ab2 = bf.LinearMultistep(
        alpha=[0, -1, 1], beta=["-1/2", "3/2", 0], name="adams-bashforth-2", order=2
    )
    assert ab2.alpha == (0, -1, 1)
    assert ab2.beta == (-half, R(3, 2), 0)
    assert ab2.steps == 2
    assert ab2.is_explicit
    assert ab2.family == "multistep"
    assert ab2.order == 2
    assert ab2.zero_stable is None
    assert not ab2.numeric
    assert ab2.symbols == set()


def test_implicit_multistep_with_alpha_k_not_one() -> None:
    bdf2 = bf.LinearMultistep(alpha=["1/2", -2, "3/2"], beta=[0, 0, 1], zero_stable=True)
    assert not bdf2.is_explicit
    assert bdf2.alpha[-1] == R(3, 2)
    assert bdf2.zero_stable is True
    trapezoid = bf.LinearMultistep([-1, 1], [half, half])
    assert trapezoid.steps == 1
    assert not trapezoid.is_explicit


def test_multistep_family_and_numeric() -> None:
    family = bf.LinearMultistep([0, "-k", "k"], [0, 1, 0])
    assert {str(s) for s in family.symbols} == {"k"}
    numeric = bf.LinearMultistep([-1, 1], [0.5, 0.5])
    assert numeric.numeric


def test_multistep_is_frozen() -> None:
    lmm = bf.LinearMultistep([-1, 1], [1, 0])
    with pytest.raises(AttributeError):
        lmm.alpha = (1, 1)
    assert lmm.alpha == (-1, 1)


@pytest.mark.parametrize("last", [0, "0", "0.0", "2 - 2", Fraction(0)])
def test_alpha_k_zero(last, declaration_error) -> None:
    with declaration_error("key 'alpha[2]'", repr(last), "must not be 0") as info:
        bf.LinearMultistep([-1, 1, last], [1, 0, 0])
    assert info.value.key == "alpha[2]"


@pytest.mark.parametrize("beta", [[1], [1, 0, 0, 0], []])
def test_alpha_beta_length_mismatch(beta, declaration_error) -> None:
    with declaration_error("key 'beta'", repr(beta), "3 entries"):
        bf.LinearMultistep([0, -1, 1], beta)


@pytest.mark.parametrize("alpha", [[1], []])
def test_at_least_one_step(alpha, declaration_error) -> None:
    with declaration_error("key 'alpha'", repr(alpha), "k >= 1"):
        bf.LinearMultistep(alpha, [0] * len(alpha))


@pytest.mark.parametrize(
    ("alpha", "key", "shown"), [(1, "alpha", "1"), ([-1, "x y"], "alpha[1]", "'x y'")]
)
def test_bad_alpha(alpha, key, shown, declaration_error) -> None:
    with declaration_error(f"key '{key}'", f"(got {shown})"):
        bf.LinearMultistep(alpha, [1, 0])


def test_bad_beta_entry(declaration_error) -> None:
    with declaration_error("key 'beta[0]'", "None"):
        bf.LinearMultistep([-1, 1], [None, 1])


@pytest.mark.parametrize("flag", ["yes", 1, 0])
def test_zero_stable_must_be_a_bool(flag, declaration_error) -> None:
    with declaration_error("key 'zero_stable'", repr(flag)):
        bf.LinearMultistep([-1, 1], [1, 0], zero_stable=flag)


# == ContinuousDynamics ========================================================================


def test_adaptive_dynamics_defaults() -> None:
    dyn = bf.ContinuousDynamics("dopri5", name="node")
    assert dyn.adaptive
    assert dyn.method == "dopri5"
    assert dyn.tableau is None
    assert (dyn.rtol, dyn.atol, dyn.max_num_steps) == (1e-5, 1e-7, 1000)
    assert dyn.steps is None and dyn.step_size is None
    assert (dyn.t0, dyn.t1) == (0, 1)
    assert dyn.grid == "interval"
    assert dyn.time == "concat"
    assert dyn.adjoint is False
    assert dyn.family == "continuous"


def test_fixed_step_dynamics(rk4) -> None:
    dyn = bf.ContinuousDynamics(rk4, steps=4, t0="1/2", t1=2, adjoint=True, time="none")
    assert not dyn.adaptive
    assert dyn.tableau is rk4
    assert dyn.solver_tableau() is rk4
    assert dyn.method == "rk4"
    assert dyn.steps == 4
    assert (dyn.t0, dyn.t1) == (half, 2)
    assert dyn.rtol is None and dyn.atol is None and dyn.max_num_steps is None
    assert dyn.adjoint is True
    default = bf.ContinuousDynamics(rk4)
    assert default.steps == 1  # one step over [t0, t1] when neither steps nor step_size is given
    sized = bf.ContinuousDynamics(rk4, step_size="1/10")
    assert sized.step_size == R(1, 10)
    assert sized.steps is None


def test_floater_positions_grid(rk4) -> None:
    floater = bf.ContinuousDynamics(rk4, grid="positions", delta="1/100", time="embedding")
    assert floater.grid == "positions"
    assert floater.delta == R(1, 100)
    assert floater.time == "embedding"


def test_method_by_catalog_name(isolated_catalog) -> None:
    write_method(
        isolated_catalog.directory,
        "rk4",
        'family = "runge-kutta"\nA = [[0,0,0,0],["1/2",0,0,0],[0,"1/2",0,0],[0,0,1,0]]\n'
        'b = ["1/6","1/3","1/3","1/6"]\n',
    )
    dyn = bf.ContinuousDynamics()  # rk4 is the default
    assert dyn.method == "rk4"
    assert isinstance(dyn.tableau, bf.ButcherTableau)
    assert dyn.tableau.stages == 4


def test_adaptive_solver_tableau_comes_from_the_catalog(isolated_catalog, declaration_error):
    dyn = bf.ContinuousDynamics("adaptive_heun")
    with declaration_error("key 'method'", "'adaptive_heun'", "heun-euler"):
        dyn.solver_tableau()
    write_method(
        isolated_catalog.directory,
        "heun-euler",
        HEUN_TOML + "b_hat = [1, 0]\n",
    )
    assert dyn.solver_tableau().b_hat == (1, 0)


@pytest.mark.parametrize(
    ("kwargs", "key", "shown"),
    [
        ({"steps": 10}, "steps", "10"),
        ({"step_size": "1/10"}, "step_size", "'1/10'"),
    ],
)
def test_fixed_step_options_rejected_for_adaptive_methods(
    kwargs, key, shown, declaration_error
) -> None:
    with declaration_error(f"key '{key}'", shown, "'dopri5'", "adaptive") as info:
        bf.ContinuousDynamics("dopri5", **kwargs)
    assert info.value.key == key


@pytest.mark.parametrize(
    ("kwargs", "key", "shown"),
    [
        ({"rtol": 1e-6}, "rtol", "1e-06"),
        ({"atol": 1e-9}, "atol", "1e-09"),
        ({"max_num_steps": 100}, "max_num_steps", "100"),
    ],
)
def test_adaptive_options_rejected_for_fixed_step_methods(
    rk4, kwargs, key, shown, declaration_error
) -> None:
    with declaration_error(f"key '{key}'", shown, "'rk4'", "fixed steps"):
        bf.ContinuousDynamics(rk4, **kwargs)


def test_steps_and_step_size_cancel_each_other(rk4, declaration_error) -> None:
    with declaration_error("key 'step_size'", "'1/10'", "steps"):
        bf.ContinuousDynamics(rk4, steps=10, step_size="1/10")


@pytest.mark.parametrize("delta", [0, -1, "-1/100", "0.0", "g", "nan", None])
def test_non_positive_delta(delta, declaration_error) -> None:
    with declaration_error("key 'delta'", repr(delta)):
        bf.ContinuousDynamics("dopri5", delta=delta)


@pytest.mark.parametrize(("t0", "t1"), [(1, 1), (1, 0), ("1/2", "1/3"), (0, -1.5)])
def test_t1_must_exceed_t0(t0, t1, declaration_error) -> None:
    with declaration_error("key 't1'", repr(t1), "t0"):
        bf.ContinuousDynamics("dopri5", t0=t0, t1=t1)


@pytest.mark.parametrize("t0", ["g", "inf", None])
def test_bad_t0_is_reported_as_t0(t0, declaration_error) -> None:
    with declaration_error("key 't0'", repr(t0)):
        bf.ContinuousDynamics("dopri5", t0=t0)


def test_unknown_method(isolated_catalog, declaration_error) -> None:
    with declaration_error("key 'method'", "'dopri-5'", "dopri5", "rk4"):
        bf.ContinuousDynamics("dopri-5")


@pytest.mark.parametrize("method", [3, None, ["rk4"]])
def test_method_of_a_wrong_type(method, declaration_error) -> None:
    with declaration_error("key 'method'", repr(method)):
        bf.ContinuousDynamics(method)


def test_implicit_fixed_step_method(backward_euler, declaration_error) -> None:
    with declaration_error("key 'method'", "'backward-euler'", "implicit"):
        bf.ContinuousDynamics(backward_euler)


def test_fixed_step_method_with_free_symbols(declaration_error) -> None:
    family = bf.ButcherTableau([[0, 0], ["a", 0]], [0, 1], name="family")
    with declaration_error("key 'method'", "'family'", "symbols"):
        bf.ContinuousDynamics(family)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("grid", "tokens"),
        ("grid", None),
        ("time", "sinusoid"),
        ("time", False),
        ("adjoint", "yes"),
        ("adjoint", 1),
    ],
)
def test_bad_grid_time_adjoint(key, value, declaration_error) -> None:
    with declaration_error(f"key '{key}'", repr(value)):
        bf.ContinuousDynamics("dopri5", **{key: value})


@pytest.mark.parametrize("steps", [0, -1, 2.5, True, "4"])
def test_bad_steps(rk4, steps, declaration_error) -> None:
    with declaration_error("key 'steps'", repr(steps), "positive integer"):
        bf.ContinuousDynamics(rk4, steps=steps)


@pytest.mark.parametrize(
    ("key", "value"),
    [("rtol", 0), ("rtol", -1e-3), ("atol", "g"), ("max_num_steps", 0), ("max_num_steps", 1.5)],
)
def test_bad_adaptive_options(key, value, declaration_error) -> None:
    with declaration_error(f"key '{key}'", repr(value), "positive"):
        bf.ContinuousDynamics("dopri5", **{key: value})


def test_bad_step_size(rk4, declaration_error) -> None:
    with declaration_error("key 'step_size'", "'-1/10'", "positive"):
        bf.ContinuousDynamics(rk4, step_size="-1/10")


# == property: malformed declarations raise DeclarationError, never anything else ==============

# Token soup for strings: numbers, operators, names, injection fragments. No `**`/`^` chains:
# an exponent tower is a separate (subprocess) test in test_numbers.py, it would hang here.
TOKENS = [
    "0",
    "1",
    "2",
    "7",
    "1/2",
    "-",
    "+",
    "*",
    "/",
    "**(1/2)",
    "^(1/3)",
    "(",
    ")",
    " ",
    "0.25",
    "1e-3",
    "1.",
    ".5",
    "e",
    "g",
    "h1",
    "sqrt(",
    "cbrt(",
    "root(",
    ",",
    "nan",
    "inf",
    "oo",
    "zoo",
    "I",
    "E",
    "pi",
    "_",
    "__class__",
    ".",
    "'",
    "lambda",
    "x(",
    "[",
    "]",
    ":",
    "=",
    "\n",
    "é",
    "if",
    "or",
    "not",
]
expressions = st.lists(st.sampled_from(TOKENS), max_size=6).map("".join)
garbage_text = st.text(alphabet=st.characters(blacklist_characters="*^"), max_size=8)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.fractions(max_denominator=100),
    st.complex_numbers(max_magnitude=10),
    expressions,
    garbage_text,
    st.sampled_from([sympy.Rational(1, 3), sympy.sqrt(2), sympy.nan, sympy.I, sympy.true]),
)
# Valid entries, drawn often, so that random declarations get past the first entry.
good_numbers = st.sampled_from([0, 1, -1, 2, "1/2", "1/3", "g", 0.5, "0.25", "sqrt(2)/2", "1 - g"])


def mostly(good: st.SearchStrategy, bad: st.SearchStrategy, odds: int = 4) -> st.SearchStrategy:
    """`good` `odds` times out of `odds + 1`, else `bad` (hypothesis' one_of is not uniform)."""
    return st.integers(0, odds).flatmap(lambda i: bad if i == 0 else good)


entries = mostly(good_numbers, scalars)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(st.text(max_size=3), inner, max_size=3),
    ),
    max_leaves=10,
)
squares = st.integers(1, 3).flatmap(
    lambda s: st.lists(st.lists(entries, min_size=s, max_size=s), min_size=s, max_size=s)
)
vectors = st.lists(entries, min_size=1, max_size=3)
names = st.one_of(st.none(), st.sampled_from(["rk4", "RK4", "a-b", ""]), values)
orders = st.one_of(st.none(), st.integers(-2, 12), values)
operator_names = st.sampled_from(["A", "B", "C", "", "A B", "ffn", "1"])
steps_lists = st.lists(
    mostly(
        st.tuples(mostly(st.sampled_from(["A", "B", "C"]), operator_names), entries),
        st.one_of(st.lists(scalars, max_size=3), scalars),
    ),
    max_size=4,
)
substeps = st.one_of(
    st.sampled_from(["exact", "euler", "heun", "backward-euler", "ab1", "nope", "../x", ""]),
    values,
)
methods = st.one_of(
    st.sampled_from(["dopri5", "bosh3", "rk4", "heun", "backward-euler", "ab1", "nope"]),
    values,
)

PROPERTY = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@pytest.fixture
def small_catalog(isolated_catalog):
    """A tiny catalog so that name lookups in the property tests are fast and deterministic."""
    folder = isolated_catalog.directory
    write_method(folder, "heun", HEUN_TOML)
    write_method(folder, "rk4", HEUN_TOML)  # the name is what matters here, not the order
    write_method(folder, "backward-euler", BACKWARD_EULER_TOML)
    write_method(folder, "ab1", 'family = "multistep"\nalpha = [-1, 1]\nbeta = [1, 0]\n')
    return isolated_catalog


def construct_or_declaration_error(build, *args, **kwargs) -> bool:
    """True when the declaration was accepted; a DeclarationError naming its key is fine; anything
    else (TypeError, OverflowError, ...) fails the test."""
    try:
        build(*args, **kwargs)
    except bf.DeclarationError as error:
        assert error.key, f"the error names no key: {error}"
        assert f"key '{error.key}'" in str(error)
        return False
    return True


@PROPERTY
@given(
    A=mostly(squares, values),
    b=mostly(vectors, values),
    c=st.one_of(st.none(), vectors, values),
    b_hat=st.one_of(st.none(), vectors, values),
    name=names,
    order=orders,
    embedded_order=orders,
    row_sum_c=st.one_of(st.booleans(), values),
    iterations=st.one_of(st.none(), st.integers(-1, 5), values),
)
def test_random_tableaux_raise_only_declaration_errors(
    small_catalog, A, b, c, b_hat, name, order, embedded_order, row_sum_c, iterations
) -> None:
    construct_or_declaration_error(
        bf.ButcherTableau,
        A,
        b,
        c=c,
        b_hat=b_hat,
        name=name,
        order=order,
        embedded_order=embedded_order,
        row_sum_c=row_sum_c,
        iterations=iterations,
    )


@PROPERTY
@given(
    steps=mostly(steps_lists, values),
    substep=substeps,
    operators=st.one_of(st.none(), st.lists(operator_names, max_size=3), scalars, values),
    name=names,
    order=orders,
    substep_order=orders,
)
def test_random_splittings_raise_only_declaration_errors(
    small_catalog, steps, substep, operators, name, order, substep_order
) -> None:
    construct_or_declaration_error(
        bf.Splitting,
        steps,
        substep,
        operators=operators,
        name=name,
        order=order,
        substep_order=substep_order,
    )


@PROPERTY
@given(
    alpha=mostly(vectors, values),
    beta=mostly(vectors, values),
    zero_stable=st.one_of(st.none(), st.booleans(), values),
    name=names,
    order=orders,
)
def test_random_multistep_methods_raise_only_declaration_errors(
    small_catalog, alpha, beta, zero_stable, name, order
) -> None:
    construct_or_declaration_error(
        bf.LinearMultistep, alpha, beta, zero_stable=zero_stable, name=name, order=order
    )


optional = st.one_of(st.none(), st.none(), entries, values)


@PROPERTY
@given(
    method=methods,
    grid=st.one_of(st.sampled_from(["interval", "positions"]), values),
    time=st.one_of(st.sampled_from(["none", "concat", "embedding"]), values),
    t0=st.one_of(st.just(0), entries),
    t1=st.one_of(st.just(1), entries),
    delta=st.one_of(st.just("1/100"), entries),
    steps=optional,
    step_size=optional,
    rtol=optional,
    atol=optional,
    max_num_steps=optional,
    adjoint=st.one_of(st.booleans(), values),
)
def test_random_dynamics_raise_only_declaration_errors(small_catalog, method, **kwargs) -> None:
    construct_or_declaration_error(bf.ContinuousDynamics, method, **kwargs)


def test_property_strategies_reach_valid_declarations(small_catalog) -> None:
    """The random inputs above are not all rejected up front: valid corner cases construct."""
    assert construct_or_declaration_error(bf.ButcherTableau, [["1/2"]], [1], c=["1/2"])
    assert construct_or_declaration_error(bf.Splitting, [("A", 1)], "heun", operators=["A"])
    assert construct_or_declaration_error(bf.LinearMultistep, [-1, 1], [1, 0])
    assert construct_or_declaration_error(bf.ContinuousDynamics, "rk4", steps=2)
    assert not construct_or_declaration_error(bf.Splitting, [("A", 1)], "backward-euler")
