"""Catalog coefficients against their published values, typed here a second time.

Every `solvers/*.toml` entry is proved to have its claimed order, but a mistyped coefficient
can keep the order (a typo in a weight of an unused stage, a sign flip that a symmetry hides,
the wrong one of two published variants) and still pass every proof. So the values below are
transcribed again, independently of `solvers/`, and where possible from another source than
the one the catalog file cites (rklib's Feagin 12 against the catalog's Tudat transcription,
rklib's 40-digit Verner 6(5) against the catalog's rationals, DiffEqDevTools.jl against NodePy,
Abramowitz-Stegun and Hairer-Wanner's quadrature tables against nodes and weights computed
from the collocation definition). Exact entries are compared exactly; numeric ones to half a
unit in the last published digit.

A last test computes, in the same run, NodePy's order for the entries this catalog gained with
them, and compares it with the published (claimed) order. NodePy is a `bench` extra, not a test
dependency: the test is skipped when it is not installed.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
import sympy

import butcherflow as bf

sqrt = sympy.sqrt
R = sympy.Rational


def half_unit(literal: str) -> Fraction:
    """Half a unit in the last digit of a published decimal, e.g. '0.1250' -> 5e-5."""
    mantissa, _, exponent = literal.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return Fraction(1, 2) * Fraction(10) ** (int(exponent or 0) - decimals)


def assert_digits(value: sympy.Expr, literal: str, where: str) -> None:
    """`value` (a catalog entry) agrees with a published decimal to its last digit."""
    exact = Fraction(literal)
    got = Fraction(str(sympy.Rational(value))) if value.is_Rational else None
    if got is None:  # an algebraic entry: compare at 80 digits
        diff = abs(sympy.N(value - sympy.Rational(exact.numerator, exact.denominator), 80))
        assert diff <= half_unit(literal), f"{where} = {sympy.N(value, 30)}, published {literal}"
        return
    assert abs(got - exact) <= half_unit(literal), f"{where} = {got}, published {literal}"


def assert_exact(value: sympy.Expr, expected: sympy.Expr, where: str) -> None:
    diff = sympy.nsimplify(sympy.radsimp(sympy.sympify(value) - sympy.sympify(expected)))
    assert diff == 0, f"{where} = {value}, published {expected}"


def entry(method: bf.ButcherTableau, key: str) -> sympy.Expr:
    """'A[i][j]', 'b[i]', 'c[i]' or 'b_hat[i]' (0-based, as in the TOML files)."""
    name, _, rest = key.partition("[")
    indices = [int(x) for x in rest.replace("]", " ").replace("[", " ").split()]
    value = getattr(method, name)
    for i in indices:
        value = value[i]
    return value


# -- numeric entries: published decimals -------------------------------------------------------

# Feagin 12(10): the catalog transcribes Tudat's C++ set; these are from rklib's Fortran rkf1210
# (its b_ij are A[i][j], its a_i the nodes, its c_i the weights).
FEAGIN_12 = {
    "A[1][0]": "0.200000000000000000000000000000000000000000000000000000000000",
    "A[2][0]": "-0.216049382716049382716049382716049382716049382716049382716049",
    "A[2][1]": "0.771604938271604938271604938271604938271604938271604938271605",
    "A[4][3]": "-0.0800000000000000000000000000000000000000000000000000000000000",
    "A[6][5]": "-0.0387530245694763252085681443767620580395733302341368038804290",
    "A[8][5]": "-0.00544348523717469689965754944144838611346156873847009178068318",
    "A[9][8]": "-0.0865117637557827005740277475955029103267246394128995965941585",
    "A[10][6]": "1.53073638102311295076342566143214939031177504112433874313011",
    "A[11][10]": "0.00315472768977025060103545855572111407955208306374459723959783",
    "A[12][8]": "0.0000678512949171812509306121653452367476194364781259165332321534",
    "A[13][12]": "0.908651882074050281096239478469262145034957129939256789178785",
    "A[14][13]": "0.301167864010967916837091303817051676920059229784957479998077",
    "A[15][14]": "0.958202417754430239892724139109781371059908874605153648768037",
    "A[16][0]": "2.00222477655974203614249646012506747121440306225711721209798",
    "c[17]": "0.947695431179199287562380162101836721649589325892740646458322",
    "c[19]": "0.288724941110620201935458488967024976908118598341806976469674",
    "c[20]": "0.671835709170513812712245661002797570438953420568682550710222",
    "b[12]": "0.138413023680782974005350203145033146748813640089941234591267",
    "b[13]": "0.215872690604931311708935511140681138965472074195773051123019",
    "b[14]": "0.243809523809523809523809523809523809523809523809523809523810",
    "b[23]": "-0.0234375000000000000000000000000000000000000000000000000000000",
}

# Verner's 'most efficient' 6(5): the catalog has Verner's rationals (from DiffEqDevTools.jl);
# these are the 40-digit decimals of rklib's rkv65e (from Verner's CoeffsOnlyFLOAT file).
VERNER_6_EFFICIENT = {
    "A[1][0]": ".6e-1",
    "A[2][0]": ".1923996296296296296296296296296296296296e-1",
    "A[2][1]": ".7669337037037037037037037037037037037037e-1",
    "A[3][0]": ".35975e-1",
    "A[3][2]": ".107925",
    "A[4][0]": "1.318683415233148260919747276431735612861",
    "A[4][2]": "-5.042058063628562225427761634715637693344",
    "A[4][3]": "4.220674648395413964508014358283902080483",
    "A[5][0]": "-41.87259166432751461803757780644346812905",
    "A[5][2]": "159.4325621631374917700365669070346830453",
}

# Gauss-Legendre nodes and weights on [-1, 1] (Abramowitz and Stegun, Table 25.4), mapped to
# [0, 1]: c = (1 + x)/2, b = w/2. The catalog computes them from the collocation definition.
GAUSS_4 = {
    "x": ["-0.861136311594053", "-0.339981043584856"],
    "w": ["0.347854845137454", "0.652145154862546"],
}
GAUSS_5 = {
    "x": ["-0.906179845938664", "-0.538469310105683", "0"],
    "w": ["0.236926885056189", "0.478628670499366", "0.568888888888889"],
}

# Radau IIA with four stages (Hairer and Wanner, Solving ODEs II, Section IV.5; the RADAU code).
RADAU_IIA_7 = {
    "c": ["0.0885879595127039", "0.409466864440735", "0.787659461760847"],
    "b": ["0.220462211176768", "0.388193468843172", "0.328844319980060", "0.0625"],
}


@pytest.mark.parametrize(
    ("name", "published"),
    [("feagin-12", FEAGIN_12), ("verner-6-efficient", VERNER_6_EFFICIENT)],
)
def test_published_decimals(name: str, published: dict[str, str]) -> None:
    method = bf.catalog[name]
    for key, literal in published.items():
        assert_digits(entry(method, key), literal, f"{name} {key}")


@pytest.mark.parametrize(
    ("name", "table"), [("gauss-legendre-4", GAUSS_4), ("gauss-legendre-5", GAUSS_5)]
)
def test_gauss_nodes_and_weights_match_the_quadrature_tables(name: str, table: dict) -> None:
    method = bf.catalog[name]
    s = method.stages
    for i, (x, w) in enumerate(zip(table["x"], table["w"], strict=True)):
        for k, sign in ((i, 1), (s - 1 - i, -1)):  # the table lists one node of each ± pair
            node = str(Fraction(1, 2) + sign * Fraction(x) / 2)
            assert abs(sympy.N(method.c[k], 40) - sympy.Rational(node)) <= half_unit(x), (name, k)
            weight = Fraction(w) / 2
            assert abs(sympy.N(method.b[k], 40) - sympy.Rational(str(weight))) <= half_unit(w), (
                name,
                k,
            )


def test_radau_iia_7_nodes_and_weights() -> None:
    method = bf.catalog["radau-iia-7"]
    for k, literal in enumerate(RADAU_IIA_7["c"]):
        assert_digits(method.c[k], literal, f"radau-iia-7 c[{k}]")
    assert method.c[3] == 1
    for k, literal in enumerate(RADAU_IIA_7["b"]):
        assert_digits(method.b[k], literal, f"radau-iia-7 b[{k}]")
    assert list(method.A[3]) == list(method.b)  # stiffly accurate


# -- exact entries ------------------------------------------------------------------------------

# Cooper and Verner (1972) admit both signs of sqrt(21). This is the other-sign variant as a
# MATLAB implementation prints it (c4 = (7 + sqrt(21))/14); with sqrt(21) -> -sqrt(21) it must
# be the catalog's entry, term for term.
COOPER_VERNER_OTHER_SIGN = {
    "A[3][0]": "1/7",
    "A[3][1]": "(-7-3*sqrt(21))/98",
    "A[3][2]": "(21+5*sqrt(21))/49",
    "A[4][0]": "(11+sqrt(21))/84",
}


def test_cooper_verner_8() -> None:
    method = bf.catalog["cooper-verner-8"]
    s21 = sqrt(21)
    for key, other in COOPER_VERNER_OTHER_SIGN.items():
        flipped = sympy.sympify(other).subs(s21, -s21)
        assert_exact(entry(method, key), flipped, f"cooper-verner-8 {key}")
    # the five-point Lobatto weights at the Lobatto nodes 0, 1/2 -+ sqrt(21)/14, 1/2, 1
    weights = {0: R(1, 20), 7: R(49, 180), 8: R(16, 45), 9: R(49, 180), 10: R(1, 20)}
    for i, w in weights.items():
        assert_exact(method.b[i], w, f"cooper-verner-8 b[{i}]")
    assert all(method.b[i] == 0 for i in range(1, 7))
    for i, node in {3: (7 - s21) / 14, 6: (7 + s21) / 14, 8: R(1, 2), 10: 1}.items():
        assert_exact(method.c[i], node, f"cooper-verner-8 c[{i}]")


def test_butcher_6_is_built_on_the_four_point_lobatto_rule() -> None:
    """Butcher (1964): nodes 1/2 -+ sqrt(5)/10 and the Lobatto weights 1/12, 5/12, 5/12, 1/12."""
    method = bf.catalog["butcher-6"]
    low, high = R(1, 2) - sqrt(5) / 10, R(1, 2) + sqrt(5) / 10
    for i, node in enumerate([0, low, high, low, high, low, 1]):
        assert_exact(method.c[i], node, f"butcher-6 c[{i}]")
    for i, w in enumerate([R(1, 12), 0, 0, 0, R(5, 12), R(5, 12), R(1, 12)]):
        assert_exact(method.b[i], w, f"butcher-6 b[{i}]")
    assert_exact(method.A[6][4], 5 - 2 * sqrt(5), "butcher-6 A[6][4]")


# Bogacki-Shampine 5(4): the catalog takes NodePy's; these are DiffEqDevTools.jl's
# (constructBogakiShampine5; its αEEst2 is the estimate NodePy ships as b_hat).
BS5_ROWS = {
    1: ["1/6"],
    2: ["2/27", "4/27"],
    3: ["183/1372", "-162/343", "1053/1372"],
    4: ["68/297", "-4/11", "42/143", "1960/3861"],
    5: ["597/22528", "81/352", "63099/585728", "58653/366080", "4617/20480"],
    6: [
        "174197/959244",
        "-30942/79937",
        "8152137/19744439",
        "666106/1039181",
        "-29421/29068",
        "482048/414219",
    ],
    7: [
        "587/8064",
        "0",
        "4440339/15491840",
        "24353/124800",
        "387/44800",
        "2152/5985",
        "7267/94080",
    ],
}
BS5_B_HAT = [
    "2479/34992",
    "0",
    "123/416",
    "612941/3411720",
    "43/1440",
    "2272/6561",
    "79937/1113912",
    "3293/556956",
]


def test_bogacki_shampine_5() -> None:
    method = bf.catalog["bogacki-shampine-5"]
    for i, row in BS5_ROWS.items():
        for j, value in enumerate(row):
            assert method.A[i][j] == sympy.Rational(value), f"A[{i}][{j}]"
    assert list(method.b) == [*method.A[7][:7], 0]
    assert list(method.b_hat) == [sympy.Rational(x) for x in BS5_B_HAT]


def test_ssprk_10_4() -> None:
    """Ketcheson (2008) in Butcher form as DiffEqDevTools.jl prints it (constructSSPRK104)."""
    method = bf.catalog["ssprk-10-4"]
    sixth, fifteenth = R(1, 6), R(1, 15)
    for i in range(10):
        for j in range(10):
            if j >= i:
                expected = 0
            elif i <= 4:
                expected = sixth
            else:
                expected = fifteenth if j <= 4 else sixth
            assert method.A[i][j] == expected, f"A[{i}][{j}]"
    assert list(method.b) == [R(1, 10)] * 10


def test_merson_4() -> None:
    """Merson's pair as Hairer, Norsett and Wanner print it (Solving ODEs I, Section II.4)."""
    method = bf.catalog["merson-4"]
    rows = [[], ["1/3"], ["1/6", "1/6"], ["1/8", "0", "3/8"], ["1/2", "0", "-3/2", "2"]]
    for i, row in enumerate(rows):
        assert [str(x) for x in method.A[i][: len(row)]] == row, f"A[{i}]"
    assert [str(x) for x in method.b] == ["1/6", "0", "0", "2/3", "1/6"]
    assert [str(x) for x in method.b_hat] == ["1/10", "0", "3/10", "2/5", "1/5"]


def test_tr_bdf2_is_a_trapezoid_half_step_then_bdf2() -> None:
    """Bank et al. (1985) with gamma = 1/2: the trapezoidal rule to t + h/2 (a21 = a22 = 1/4), then
    BDF2 on (t, t + h/2, t + h), which is the stiffly accurate last row (1/3, 1/3, 1/3)."""
    method = bf.catalog["tr-bdf2"]
    assert [list(row) for row in method.A] == [[0, 0, 0], [R(1, 4), R(1, 4), 0], [R(1, 3)] * 3]
    assert list(method.c) == [0, R(1, 2), 1]


# -- NodePy's order beside the published one ----------------------------------------------------

# Entries added with issue 15, each with the order its paper publishes (the catalog's claim).
# NodePy's float mode decides them in well under a second; the big Feagin tableaux and the
# nested-radical Gauss methods are left to `butcherflow bench order`.
QUICK_FOR_NODEPY = [
    "bogacki-shampine-5", "butcher-5", "butcher-6", "butcher-6-rational", "calvo-6",
    "cooper-verner-8", "fehlberg-43", "higham-hall-5", "higham-hall-5-stable",
    "lawson-6", "lobatto-iiic-5", "lobatto-iiic-star-4", "merson-4", "nssprk-3-2", "nssprk-3-3",
    "prince-dormand-8-float", "radau-ia-5", "radau-iia-7", "sdirk-alexander-3",
    "sdirk-crouzeix-4", "sharp-smart-3", "sharp-verner-6", "sharp-verner-7", "soderlind-4",
    "ssprk-4-3", "ssprk-5-4", "ssprk-9-3", "ssprk-10-4", "ssprk-16-3", "tr-bdf2",
    "verner-6-efficient", "verner-6-robust", "verner-7-efficient", "verner-8-dverk78",
    "verner-8-efficient", "zonneveld-4",
]  # fmt: skip


@pytest.mark.parametrize("entry", QUICK_FOR_NODEPY)
def test_claimed_order_agrees_with_nodepy(entry: str) -> None:
    np = pytest.importorskip("numpy")
    runge_kutta = pytest.importorskip("nodepy.runge_kutta_method")
    method = bf.catalog[entry]
    A = np.array([[float(x) for x in row] for row in method.A])
    b = np.array([float(x) for x in method.b])
    cls = (
        runge_kutta.ExplicitRungeKuttaMethod if method.is_explicit else runge_kutta.RungeKuttaMethod
    )
    assert cls(A, b).order(tol=1e-10) == method.order
