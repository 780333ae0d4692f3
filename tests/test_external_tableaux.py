"""Published Runge-Kutta tableaux from outside the catalog, proved at every encoding a user pastes.

Each method below is typed here from another library's source (cited per entry) and is not in
`solvers/`. The bar (NUMERIC.md): the order, embedded order and stability verdicts must be right
for the exact entries, for float64 (what the other library computes with), for 30- and
16-significant-digit decimal strings; at 8 digits they may only go *undetermined*, never to a
false order or a false "fails"; and a deliberately perturbed entry must lower the order. NodePy's
order of the float64 tableau is compared with the published one in the same run (NodePy is a
`bench` extra: those tests are skipped without it).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import mpmath
import pytest
import sympy

import butcherflow as bf


@dataclass(frozen=True)
class Published:
    """A tableau as its source prints it (exact entries as strings) with its published claims;
    `a_stable`/`l_stable` are None for explicit methods (no claim)."""

    name: str
    source: str
    A: list[list[Any]]
    b: list[Any]
    order: int
    b_hat: list[Any] | None = None
    embedded: int | None = None
    a_stable: bool | None = None
    l_stable: bool | None = None


def lower(rows: list[list[Any]]) -> list[list[Any]]:
    """Strictly lower rows (row i has i entries) padded with zeros to a square matrix."""
    s = len(rows)
    return [[*row, *[0] * (s - len(row))] for row in rows]


DEQ = "SciML/DiffEqDevTools.jl src/ode_tableaus.jl"
S5, S6, S15 = "sqrt(5)", "sqrt(6)", "sqrt(15)"
KENCARP4_B = ["82889/524892", 0, "15625/83664", "69875/102672", "-2260/8211", "1/4"]
KENCARP4_B_HAT = [
    "4586570599/29645900160",
    0,
    "178811875/945068544",
    "814220225/1159782912",
    "-3700637/11593932",
    "61727/225920",
]

EXTERNAL = [
    Published(
        "cassity-5",
        f"{DEQ} constructCassity5",
        lower(
            [
                [],
                ["1/7"],
                ["-367/4088", "261/584"],
                ["41991/2044", "-2493/73", "57/4"],
                ["-108413/196224", "58865/65408", "5/16", "265/1344"],
                ["-204419/58984", "143829/58984", "171/202", "2205/404", "-432/101"],
            ]
        ),
        ["1/9", "7/2700", "413/810", "7/450", "28/75", "-101/8100"],
        5,
    ),
    Published(
        "lawson-5",
        f"{DEQ} constructLawson5 (Lawson, SIAM J. Numer. Anal. 3 (1966))",
        lower(
            [
                [],
                ["1/12"],
                ["-1/8", "3/8"],
                ["3/5", "-9/10", "4/5"],
                ["39/80", "-9/20", "3/20", "9/16"],
                ["-59/35", "66/35", "48/35", "-12/7", "8/7"],
            ]
        ),
        ["7/90", 0, "16/45", "2/15", "16/45", "7/90"],
        5,
    ),
    Published(
        "runge-first-5",
        f"{DEQ} constructRungeFirst5",
        lower(
            [
                [],
                ["1/5"],
                [0, "2/5"],
                ["9/4", -5, "15/4"],
                ["-63/100", "9/5", "-13/20", "2/25"],
                ["-6/25", "4/5", "2/15", "8/75", 0],
            ]
        ),
        ["17/144", 0, "25/36", "1/72", "-25/72", "25/48"],
        5,
    ),
    Published(
        "luther-konen-5",
        f"{DEQ} constructLutherKonen5 (Luther and Konen, SIAM Review 7 (1965))",
        lower(
            [
                [],
                ["1/2"],
                ["1/5", f"3/10 - {S5}/10"],
                ["1/4", "1/4", 0],
                [f"1/20 - {S5}/20", "-1/5", f"1/4 + 3*{S5}/20", "2/5"],
                [f"{S5}/4 - 1/4", f"{S5}/2 - 1/2", f"5/4 - {S5}/4", -2, f"5/2 - {S5}/2"],
            ]
        ),
        ["1/12", 0, "5/12", 0, "5/12", "1/12"],
        5,
    ),
    Published(
        "luther-konen-5-2",
        f"{DEQ} constructLutherKonen52",
        lower(
            [
                [],
                ["2/5"],
                ["3/16", "5/16"],
                ["1/4", "-5/4", 2],
                [f"3/20 - {S15}/100", "-1/4", f"3/5 - 2*{S15}/25", f"-{S15}/100"],
                [f"-3/20 - {S15}/20", "-1/4", "3/5", f"3/10 - {S15}/20", f"{S15}/5"],
            ]
        ),
        [0, 0, "4/9", 0, "5/18", "5/18"],
        5,
    ),
    Published(
        "luther-konen-5-3",
        f"{DEQ} constructLutherKonen53",
        lower(
            [
                [],
                ["3/25"],
                ["-85/1944", "625/1944"],
                ["610425/1409938", "-961875/1409938", "532170/704969"],
                [
                    f"7411/37500 - 673*{S6}/18750",
                    0,
                    f"27621*{S6}/228125 - 6561/228125",
                    f"1180229/2737500 - 126736*{S6}/684375",
                ],
                [
                    f"-5351/62500 - 7087*{S6}/281250",
                    0,
                    f"2736423/1140625 + 786753*{S6}/1140625",
                    f"73736589/86687500 + 101816534*{S6}/195046875",
                    f"-30448/11875 - 12903*{S6}/11875",
                ],
            ]
        ),
        ["1/9", 0, 0, 0, f"4/9 + {S6}/36", f"4/9 - {S6}/36"],
        5,
    ),
    Published(
        "papakostas-papageorgiou-5",
        f"{DEQ} constructPapakostasPapaGeorgiou5 (Math. Comp. 65 (1996)), FSAL 5(4)",
        lower(
            [
                [],
                ["64/315"],
                ["480815/6193536", "462875/2064512"],
                [
                    "344904825219069/345923838700000",
                    "-2360077908867/601606676000",
                    "40439332863108/10810119959375",
                ],
                [
                    "12078745127989699/5009699157786624",
                    "-791781731775/81669668864",
                    "39297175833216951/4694461413969824",
                    "-10508413393960625/54097233987826176",
                ],
                [
                    "2251421737440863/828701767536000",
                    "-39895842357/3782730880",
                    "34564628685305112534/3916944972468643375",
                    "12051135495733565/36492943960723917",
                    "-26808346215168/82592376030125",
                ],
                [
                    "2405713/26289000",
                    0,
                    "63896466577779/141024193000600",
                    "454128848141375/589615117674696",
                    "-1359311744/2892576375",
                    "256979/1656648",
                ],
            ]
        ),
        [
            "2405713/26289000",
            0,
            "63896466577779/141024193000600",
            "454128848141375/589615117674696",
            "-1359311744/2892576375",
            "256979/1656648",
            0,
        ],
        5,
        b_hat=[
            "1818563883019/20194131951000",
            0,
            "5513862498202899713/12036555896794210600",
            "324806515311046773125/452918159177876804664",
            "-126112324722496/317422653663375",
            "137695258717/1272569071032",
            "1/42",
        ],
        embedded=4,
    ),
    Published(
        "kencarp-4-implicit",
        "patrick-kidger/diffrax diffrax/_solver/kencarp4.py (_implicit_tableau; Kennedy and "
        "Carpenter, Appl. Numer. Math. 44 (2003), ARK4(3)6L): ESDIRK, gamma = 1/4",
        [
            [0] * 6,
            ["1/4", "1/4", 0, 0, 0, 0],
            ["8611/62500", "-1743/31250", "1/4", 0, 0, 0],
            ["5012029/34652500", "-654441/2922500", "174375/388108", "1/4", 0, 0],
            [
                "15267082809/155376265600",
                "-71443401/120774400",
                "730878875/902184768",
                "2285395/8070912",
                "1/4",
                0,
            ],
            KENCARP4_B,
        ],
        KENCARP4_B,
        4,
        b_hat=KENCARP4_B_HAT,
        embedded=3,
        a_stable=True,
        l_stable=True,
    ),
    Published(
        "sdirk-2-3",
        "ketch/nodepy nodepy/runge_kutta_method.py loadRKM('SDIRK23') (Crouzeix, 1975): "
        "gamma = 1/2 + sqrt(3)/6",
        [["1/2 + sqrt(3)/6", 0], ["-sqrt(3)/3", "1/2 + sqrt(3)/6"]],
        ["1/2", "1/2"],
        3,
        a_stable=True,
        l_stable=False,
    ),
    Published(
        "lobatto-iiic-3",
        f"{DEQ} constructLobattoIIIC4 (3 stages, order 4)",
        [["1/6", "-1/3", "1/6"], ["1/6", "5/12", "-1/12"], ["1/6", "2/3", "1/6"]],
        ["1/6", "2/3", "1/6"],
        4,
        # DiffEqDevTools gives this αEEst adaptiveorder = 3, but Σ b̂ᵢcᵢ² = 2/4 − 1/2 = 0 ≠ 1/3:
        # the estimate has order 2 (so does NodePy's order() of (A, b̂))
        b_hat=["-1/2", 2, "-1/2"],
        embedded=2,
        a_stable=True,
        l_stable=True,
    ),
    Published(
        "lobatto-iiid-3",
        f"{DEQ} constructLobattoIIID4 (3 stages, order 4)",
        [["1/6", 0, "-1/6"], ["1/12", "5/12", 0], ["1/2", "1/3", "1/6"]],
        ["1/6", "2/3", "1/6"],
        4,
        a_stable=True,  # R = 6(z + 4)/(24 − 18z + 6z² − z³), |Q(iy)|² − |P(iy)|² = y⁶
        l_stable=True,
    ),
    Published(
        "radau-ia-3",
        f"{DEQ} constructRadauIA5 (3 stages, order 5)",
        [
            ["1/9", f"(-1 - {S6})/18", f"(-1 + {S6})/18"],
            ["1/9", f"11/45 + 7*{S6}/360", f"11/45 - 43*{S6}/360"],
            ["1/9", f"11/45 + 43*{S6}/360", f"11/45 - 7*{S6}/360"],
        ],
        ["1/9", f"4/9 + {S6}/36", f"4/9 - {S6}/36"],
        5,
        a_stable=True,
        l_stable=True,
    ),
]
ENCODINGS = ["exact", "float64", "decimal-30", "decimal-16", "decimal-8", "perturbed"]


def decimal(value: sympy.Expr, digits: int) -> str | int:
    """`value` as a decimal string of `digits` significant digits (trailing zeros kept: they
    are digits); zero stays the exact 0 (the structure of the tableau)."""
    if value == 0:
        return 0
    with mpmath.workdps(digits + 20):
        exact = mpmath.mpf(sympy.N(value, digits + 20))
        return mpmath.nstr(exact, digits, min_fixed=-30, max_fixed=30, strip_zeros=False)


def encode(method: Published, encoding: str) -> bf.ButcherTableau:
    """The tableau as a user pastes it in `encoding`."""

    def entry(x: Any) -> Any:
        value = sympy.sympify(x)
        if encoding == "float64":
            return float(value)
        if encoding.startswith("decimal-"):
            return decimal(value, int(encoding.partition("-")[2]))
        return x

    A = [[entry(x) for x in row] for row in method.A]
    if encoding == "perturbed":  # one coupling of the last weighted stage off by 1/1000
        i = max(i for i, x in enumerate(method.b) if i and sympy.sympify(x) != 0)
        A[i][0] = sympy.sympify(A[i][0]) + Fraction(1, 1000)
    b_hat = None if method.b_hat is None else [entry(x) for x in method.b_hat]
    return bf.ButcherTableau(
        A, [entry(x) for x in method.b], b_hat=b_hat, name=f"{method.name}-{encoding}"
    )


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("method", EXTERNAL, ids=lambda m: m.name)
def test_published_order_at_every_encoding(method: Published, encoding: str) -> None:
    report = bf.check(encode(method, encoding))
    p, stab = method.order, report.stability
    if encoding == "perturbed":  # exact: decided, and below the published order
        assert report.order < p and not report.order_is_lower_bound
        return
    if encoding == "decimal-8":  # may stay open, never a false order or a false failure
        assert report.order <= p
        if report.order < p:
            assert report.order_is_lower_bound
            assert report.order_upper is None or report.order_upper >= p
        assert stab.a_stable in (method.a_stable, None) if method.a_stable is not None else True
        assert stab.l_stable in (method.l_stable, None) if method.l_stable is not None else True
        return
    assert (report.order, report.order_is_lower_bound) == (p, False), report
    assert report.embedded_order == method.embedded
    assert not report.embedded_undetermined
    if method.a_stable is not None:
        assert (stab.a_stable, stab.l_stable) == (method.a_stable, method.l_stable)
    else:
        assert stab.a_stable is False and stab.l_stable is False


@pytest.mark.parametrize("method", EXTERNAL, ids=lambda m: m.name)
def test_numeric_encodings_agree_with_the_exact_stability_interval(method: Published) -> None:
    exact = bf.check(encode(method, "exact"))
    for encoding in ("float64", "decimal-30", "decimal-16"):
        numeric = bf.check(encode(method, encoding))
        assert numeric.stability.real_interval == pytest.approx(
            exact.stability.real_interval, rel=1e-9
        ), encoding
        assert numeric.stability.imaginary_interval == pytest.approx(
            exact.stability.imaginary_interval, rel=1e-9, abs=1e-12
        ), encoding
        assert numeric.stage_order == exact.stage_order, encoding


@pytest.mark.parametrize("method", EXTERNAL, ids=lambda m: m.name)
def test_published_order_agrees_with_nodepy(method: Published) -> None:
    np = pytest.importorskip("numpy")
    runge_kutta = pytest.importorskip("nodepy.runge_kutta_method")
    A = np.array([[float(sympy.sympify(x)) for x in row] for row in method.A])
    b = np.array([float(sympy.sympify(x)) for x in method.b])
    explicit = all(A[i][j] == 0 for i in range(len(b)) for j in range(i, len(b)))
    cls = runge_kutta.ExplicitRungeKuttaMethod if explicit else runge_kutta.RungeKuttaMethod
    assert cls(A, b).order(tol=1e-10) == method.order == bf.check(encode(method, "exact")).order


# -- the explicit half of Kennedy and Carpenter's ARK4(3)6L: fractions that round its digits ------

# diffrax/_solver/kencarp4.py (_explicit_tableau), as published: the large fractions are rational
# approximations of the method, so exactly they meet order 1 only (bᵀc = 1/2 misses by 1.6e-26).
KENCARP4_EXPLICIT = lower(
    [
        [],
        ["1/2"],
        ["13861/62500", "6889/62500"],
        [
            "-116923316275/2393684061468",
            "-2731218467317/15368042101831",
            "9408046702089/11113171139209",
        ],
        [
            "-451086348788/2902428689909",
            "-2682348792572/7519795681897",
            "12662868775082/11960479115383",
            "3355817975965/11060851509271",
        ],
        [
            "647845179188/3216320057751",
            "73281519250/8382639484533",
            "552539513391/3454668386233",
            "3354512671639/8306763924573",
            "4040/17871",
        ],
    ]
)


def test_rounded_fractions_get_their_order_exactly_and_a_hint() -> None:
    exact = bf.check(bf.ButcherTableau(KENCARP4_EXPLICIT, KENCARP4_B, b_hat=KENCARP4_B_HAT))
    assert (exact.order, exact.order_upper) == (1, 1)  # true of these fractions
    assert any("miss by at most 1.6e-26" in n and "precision = 1e-26" in n for n in exact.notes)
    at_rounding = bf.check(
        bf.ButcherTableau(KENCARP4_EXPLICIT, KENCARP4_B, b_hat=KENCARP4_B_HAT, precision=1e-15)
    )
    assert (at_rounding.order, at_rounding.order_is_lower_bound) == (4, False)
    assert at_rounding.embedded_order == 3
    assert not any("miss by at most" in n for n in bf.check("rk4").notes)  # a real miss: 1/120


# -- Kværnø's ESDIRKs: gamma is irrational, published as a decimal ------------------------------


def kvaerno_4(g: Any) -> tuple[list[list[Any]], list[Any], list[Any]]:
    """Kværnø (2004) ESDIRK 4(3) as diffrax/_solver/kvaerno4.py writes it, every entry a formula
    in gamma (order 4 with embedded 3 for every gamma; the published gamma = 0.5728160625)."""

    def poly(*coefficients: int) -> Any:
        return sum(c * g**k for k, c in enumerate(reversed(coefficients)))

    q, r, t = poly(12, -6, 1), poly(12, -9, 2), poly(3, -1)
    a31, a32 = poly(144, -180, 81, -15, 1) * g / q**2, poly(-36, 39, -15, 2) * g / q**2
    a41 = poly(-144, 396, -330, 117, -18, 1) / (12 * g**2 * r)
    a42 = poly(72, -126, 69, -15, 1) / (12 * g**2 * t)
    a43 = poly(-6, 6, -1) * q**2 / (12 * g**2 * r * t)
    a51 = poly(288, -312, 120, -18, 1) / (48 * g**2 * r)
    a52 = poly(24, -12, 1) / (48 * g**2 * t)
    a53 = -(q**3) / (48 * g**2 * t * r * poly(6, -6, 1))
    a54 = poly(-24, 36, -12, 1) / poly(24, -24, 4)
    A = [
        [0] * 5,
        [g, g, 0, 0, 0],
        [a31, a32, g, 0, 0],
        [a41, a42, a43, g, 0],
        [a51, a52, a53, a54, g],
    ]
    return A, A[4], [*A[3][:4], 0]


def test_kvaerno_4_at_its_published_gamma() -> None:
    g = Fraction("0.5728160625")
    for A, b, b_hat, precision in (
        (*kvaerno_4(g), None),  # the rational the digits spell: exact
        (*kvaerno_4(float(g)), None),  # diffrax's float64 values
        (*kvaerno_4(g), 1e-10),  # the digits at their own precision
    ):
        report = bf.check(bf.ButcherTableau(A, b, b_hat=b_hat, precision=precision))
        assert (report.order, report.order_is_lower_bound, report.embedded_order) == (4, False, 3)
        assert report.stability.a_stable is True
    # R(∞) = -6.9e-11 for that rational: not L-stable exactly, met in floats (±7.9e-11), and
    # at ±1e-10 in gamma's digits the enclosure (±2.7e-7) is too wide to tell
    exact, floats, digits = (
        bf.check(bf.ButcherTableau(A, b, precision=p)).stability.l_stable
        for A, b, _, p in (
            (*kvaerno_4(g), None),
            (*kvaerno_4(float(g)), None),
            (*kvaerno_4(g), 1e-10),
        )
    )
    assert (exact, floats, digits) == (False, True, None)


# diffrax/_solver/kvaerno5.py: Kværnø's ESDIRK 5(4) as 17-digit floats (gamma = 0.26).
KVAERNO_5_ROWS = [
    [0.26, 0.26],
    [0.13, 0.84033320996790809, 0.26],
    [0.22371961478320505, 0.47675532319799699, -0.06470895363112615, 0.26],
    [0.16648564323248321, 0.10450018841591720, 0.03631482272098715, -0.13090704451073998, 0.26],
    [
        0.13855640231268224,
        0,
        -0.04245337201752043,
        0.02446657898003141,
        0.61943039072480676,
        0.26,
    ],
    [
        0.13659751177640291,
        0,
        -0.05496908796538376,
        -0.04118626728321046,
        0.62993304899016403,
        0.06962479448202728,
        0.26,
    ],
]


def kvaerno_5(entry: Any) -> bf.ButcherTableau:
    """The tableau with every nonzero entry passed through `entry` (zeros stay exact)."""
    rows = [[entry(x) if x else 0 for x in row] for row in KVAERNO_5_ROWS]
    A = [[0] * 7] + [[*row, *[0] * (7 - len(row))] for row in rows]
    return bf.ButcherTableau(A, A[6], b_hat=[*A[5][:6], 0])


def test_kvaerno_5_in_floats_and_as_printed() -> None:
    floats = bf.check(kvaerno_5(lambda x: x))
    assert (floats.order, floats.order_is_lower_bound, floats.embedded_order) == (5, False, 4)
    assert floats.stability.a_stable is True and floats.stability.l_stable is True
    # as printed: "0.26" and "0.13" carry two digits (±0.005), so little is decided; nothing false
    printed = bf.check(kvaerno_5(repr))
    assert printed.order < 5 and printed.order_is_lower_bound
    assert printed.stability.l_stable is None
    assert not any("nan" in note for note in printed.notes)


# -- NodePy's own catalog (ketch/nodepy runge_kutta_method.py loadRKM), its float64 values ------

# Ruuth's and Spiteri-Ruuth's optimal SSP methods, stored by NodePy as floats.
NODEPY_SSP = {"SSP54": 4, "SSP63": 3, "SSP75": 5, "SSP85": 5, "SSP95": 5}


def nodepy_method(key: str) -> Any:
    return pytest.importorskip("nodepy.runge_kutta_method").loadRKM(key)


@pytest.mark.parametrize(("key", "published"), NODEPY_SSP.items())
def test_nodepy_ssp_methods_in_their_float64_values(key: str, published: int) -> None:
    method = nodepy_method(key)
    A = [[float(x) for x in row] for row in method.A]
    report = bf.check(bf.ButcherTableau(A, [float(x) for x in method.b]))
    assert (report.order, report.order_is_lower_bound) == (published, False)
    assert method.order(tol=1e-10) == published


def test_nodepy_ssp53_holds_eight_digit_values_as_floats() -> None:
    """NodePy's SSP(5,3) is an 8-decimal table stored as floats: Σb = 1 + 3.2e-10, so the floats
    (each its binary value) fail order 1, with a note that says how to judge them; at the
    precision of the table they are the published order 3."""
    method = nodepy_method("SSP53")
    A = [[float(x) for x in row] for row in method.A]
    b = [float(x) for x in method.b]
    floats = bf.check(bf.ButcherTableau(A, b))
    assert (floats.order, floats.order_upper) == (0, 0)
    assert any("3.2e-10" in n and "precision = 1e-10 or coarser" in n for n in floats.notes)
    at_digits = bf.check(bf.ButcherTableau(A, b, precision=1e-10))
    assert (at_digits.order, at_digits.order_is_lower_bound) == (3, False)
    assert method.order(tol=1e-8) == 3
