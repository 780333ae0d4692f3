"""Tableaux pasted as papers typeset them: the LaTeX array of a Butcher tableau
(`ButcherTableau.from_latex`, a file's `tableau = '''...'''`), typed from the papers' own
layout (facts, not code) and compared with the catalog's declarations."""

from __future__ import annotations

import pytest
import sympy

import butcherflow as bf
from butcherflow.methods import ButcherTableau
from butcherflow.methods.files import from_dict

# Bogacki and Shampine (1989), Table 1 layout: c | A, a rule, b, then the embedded weights
BOGACKI_SHAMPINE = r"""
\begin{array}{c|cccc}
0 & & & & \\
\frac{1}{2} & \frac{1}{2} & & & \\
\frac{3}{4} & 0 & \frac{3}{4} & & \\
1 & \frac{2}{9} & \frac{1}{3} & \frac{4}{9} & \\ \hline
 & \frac{2}{9} & \frac{1}{3} & \frac{4}{9} & 0 \\
 & \frac{7}{24} & \frac{1}{4} & \frac{1}{3} & \frac{1}{8}
\end{array}
"""

# Hairer and Wanner (1996), Table IV.5.6: Radau IIA of order 5, with √6 in every entry
RADAU_IIA_5 = r"""
\begin{array}{c|ccc}
\frac{4-\sqrt{6}}{10} & \frac{88-7\sqrt{6}}{360} & \frac{296-169\sqrt{6}}{1800}
  & \frac{-2+3\sqrt{6}}{225} \\
\frac{4+\sqrt{6}}{10} & \frac{296+169\sqrt{6}}{1800} & \frac{88+7\sqrt{6}}{360}
  & \frac{-2-3\sqrt{6}}{225} \\
1 & \frac{16-\sqrt{6}}{36} & \frac{16+\sqrt{6}}{36} & \frac{1}{9} \\
\hline
 & \frac{16-\sqrt{6}}{36} & \frac{16+\sqrt{6}}{36} & \frac{1}{9}
\end{array}
"""

# Kutta (1901)'s RK4 as many papers print it: blank upper triangle, \tfrac, row spacing, comments
RK4 = r"""
% the classical method
\renewcommand{\arraystretch}{1.2}
\begin{array}{c|cccc}
0 &&&& \\[2pt]
\tfrac12 & \tfrac12 &&& \\[2pt]
\tfrac12 & 0 & \tfrac12 && \\[2pt]
1 & 0 & 0 & 1 & \\[2pt] \hline
 & \tfrac16 & \tfrac13 & \tfrac13 & \tfrac16 % weights
\end{array}
"""


# Dormand and Prince (1980): labels y_1 and \hat{y}_1 in the weight rows' first cell, a rule at
# the very top, rows ending with \\ (the last one too), inside an equation
DORMAND_PRINCE_5 = r"""
\begin{equation}
\begin{array}{c|ccccccc}
\hline
0 \\
\frac{1}{5} & \frac{1}{5} \\
\frac{3}{10} & \frac{3}{40} & \frac{9}{40} \\
\frac{4}{5} & \frac{44}{45} & -\frac{56}{15} & \frac{32}{9} \\
\frac{8}{9} & \frac{19372}{6561} & -\frac{25360}{2187} & \frac{64448}{6561} & -\frac{212}{729} \\
1 & \frac{9017}{3168} & -\frac{355}{33} & \frac{46732}{5247} & \frac{49}{176}
  & -\frac{5103}{18656} \\
1 & \frac{35}{384} & 0 & \frac{500}{1113} & \frac{125}{192} & -\frac{2187}{6784}
  & \frac{11}{84} \\
\hline
y_1 & \frac{35}{384} & 0 & \frac{500}{1113} & \frac{125}{192} & -\frac{2187}{6784}
  & \frac{11}{84} & 0 \\
\hat{y}_1 & \frac{5179}{57600} & 0 & \frac{7571}{16695} & \frac{393}{640}
  & -\frac{92097}{339200} & \frac{187}{2100} & \frac{1}{40} \\
\end{array}
\end{equation}
"""

# Cash and Karp (1990): \dfrac{-9}{10}, a booktabs \midrule, labels b^T and \hat b^T, {r|rrrrrr}
CASH_KARP = r"""
$$\begin{array}{r|rrrrrr}
0 & & & & & & \\[3pt]
\dfrac{1}{5} & \dfrac{1}{5} & & & & & \\[3pt]
\dfrac{3}{10} & \dfrac{3}{40} & \dfrac{9}{40} & & & & \\[3pt]
\dfrac{3}{5} & \dfrac{3}{10} & \dfrac{-9}{10} & \dfrac{6}{5} & & & \\[3pt]
1 & \dfrac{-11}{54} & \dfrac{5}{2} & \dfrac{-70}{27} & \dfrac{35}{27} & & \\[3pt]
\dfrac{7}{8} & \dfrac{1631}{55296} & \dfrac{175}{512} & \dfrac{575}{13824}
  & \dfrac{44275}{110592} & \dfrac{253}{4096} & \\[3pt]
\midrule
b^T & \dfrac{37}{378} & 0 & \dfrac{250}{621} & \dfrac{125}{594} & 0 & \dfrac{512}{1771} \\[3pt]
\hat b^T & \dfrac{2825}{27648} & 0 & \dfrac{18575}{48384} & \dfrac{13525}{55296}
  & \dfrac{277}{14336} & \dfrac{1}{4}
\end{array}$$
"""

# Gauss-Legendre of order 6 (Hairer and Wanner, Table IV.5.2), with \sqrt{15}
GAUSS_LEGENDRE_3 = r"""
\begin{array}{c|ccc}
\frac{1}{2}-\frac{\sqrt{15}}{10} & \frac{5}{36} & \frac{2}{9}-\frac{\sqrt{15}}{15}
  & \frac{5}{36}-\frac{\sqrt{15}}{30} \\
\frac{1}{2} & \frac{5}{36}+\frac{\sqrt{15}}{24} & \frac{2}{9} & \frac{5}{36}-\frac{\sqrt{15}}{24} \\
\frac{1}{2}+\frac{\sqrt{15}}{10} & \frac{5}{36}+\frac{\sqrt{15}}{30}
  & \frac{2}{9}+\frac{\sqrt{15}}{15} & \frac{5}{36} \\
\hline
 & \frac{5}{18} & \frac{4}{9} & \frac{5}{18}
\end{array}
"""

# Lobatto IIIC: columns aligned with \phantom{-}, as papers do
LOBATTO_IIIC_4 = r"""
\begin{array}{c|ccc}
0 & \phantom{-}\frac16 & -\frac13 & \phantom{-}\frac16 \\
\frac12 & \phantom{-}\frac16 & \phantom{-}\frac{5}{12} & -\frac{1}{12} \\
1 & \phantom{-}\frac16 & \phantom{-}\frac23 & \phantom{-}\frac16 \\ \hline
 & \phantom{-}\frac16 & \phantom{-}\frac23 & \phantom{-}\frac16
\end{array}
"""

# Kutta's 3/8 rule copied from a PDF: U+2212 minus, vulgar fractions, no-break spaces
KUTTA_3_8_PDF = (
    "0 & & & & \\\\\n⅓ & ⅓ & & & \\\\\n⅔ &\u00a0\u2212⅓ & 1 & & \\\\\n"
    "1 & 1 &\u00a0\u22121 & 1 & \\\\ \\hline\n & ⅛ & ⅜ & ⅜ & ⅛"
)

# Heun with a position [t], a column spec with nested braces and a dashed rule (arydshln)
HEUN = r"""\begin{array}[t]{@{}c|*{2}{c}@{}} 0 & & \\ 1 & 1 & \\ \hdashline & \tfrac12 & \tfrac12
\end{array}"""


def _same(pasted: ButcherTableau, declared: ButcherTableau) -> bool:
    pairs = [
        pair for rows in zip(pasted.A, declared.A, strict=True) for pair in zip(*rows, strict=True)
    ]
    pairs += [*zip(pasted.b, declared.b, strict=True), *zip(pasted.c, declared.c, strict=True)]
    if declared.b_hat is not None:
        assert pasted.b_hat is not None
        pairs += [*zip(pasted.b_hat, declared.b_hat, strict=True)]
    return all(sympy.simplify(x - y) == 0 for x, y in pairs)


@pytest.mark.parametrize(
    ("latex", "name"),
    [
        (BOGACKI_SHAMPINE, "bogacki-shampine-3"),
        (RADAU_IIA_5, "radau-iia-5"),
        (RK4, "rk4"),
        (DORMAND_PRINCE_5, "dormand-prince-5"),
        (CASH_KARP, "cash-karp"),
        (GAUSS_LEGENDRE_3, "gauss-legendre-3"),
        (LOBATTO_IIIC_4, "lobatto-iiic-4"),
        (KUTTA_3_8_PDF, "rk-3-8"),
        (HEUN, "heun"),
    ],
)
def test_a_latex_array_is_the_declared_method(latex: str, name: str) -> None:
    declared = bf.catalog[name]
    pasted = ButcherTableau.from_latex(latex, name=name, order=declared.order)
    assert _same(pasted, declared) and not pasted.numeric
    report = bf.check(pasted)
    assert report.order == bf.check(declared).order and report.claim_holds
    if declared.b_hat is not None:
        assert report.embedded_order == bf.check(declared).embedded_order


def test_a_declaration_file_takes_the_latex_array(write_toml) -> None:
    path = write_toml(
        "name = 'bs3-latex'\nfamily = 'runge-kutta'\norder = 3\nembedded_order = 2\n"
        f"tableau = '''{BOGACKI_SHAMPINE}'''\n"
    )
    method = bf.load(path)
    assert _same(method, bf.catalog["bogacki-shampine-3"]) and bf.check(method).claim_holds
    again = from_dict(method.to_table())  # written back as A, b, c, b_hat
    assert _same(again, method)


@pytest.mark.parametrize(
    ("latex", "problem"),
    [
        (r"\begin{array}{cc} 0 & 1 \\ 1 & 2 \end{array}", "a rule"),
        (r"0 & \\ 1 & 1 \\ \hline & 1 & 2 & 3", "more than 3 cells for 2 stages"),
        (r"0 & \\ \hline & 1 \\ & 1 \\ & 2", "3 rows below the rule"),
        (r"\begin{array}{c|c} \begin{array}{c} 1 \end{array} \end{array}", "one array"),
        # two arrays side by side: the second was dropped without a word
        (
            r"\begin{array}{c|c} 0 & 0 \\ \hline & 1 \end{array} \begin{array}{c|c} 1 & 1 \\ "
            r"\hline & 1 \end{array}",
            "2 arrays",
        ),
        # b typed without its leading &: b_1 sat in the label column, b was read (1/3, 1/3, 1/6, 0)
        (
            r"0 \\ \frac12 & \frac12 \\ \frac12 & 0 & \frac12 \\ 1 & 0 & 0 & 1 \\ \hline "
            r"\frac16 & \frac13 & \frac13 & \frac16",
            "a weight row has 4 cells, not 5",
        ),
    ],
)
def test_a_malformed_array_is_one_line_naming_the_tableau(
    latex: str, problem: str, declaration_error
) -> None:
    with declaration_error("tableau", problem):
        ButcherTableau.from_latex(latex)


def test_a_bad_cell_names_its_entry(declaration_error) -> None:
    with declaration_error("A[1][0]", "cannot appear"):
        ButcherTableau.from_latex(r"0 & \\ \alpha & \alpha \\ \hline & 0 & 1")


@pytest.mark.parametrize("extra", ["A = [[0]]\nb = [1]\n", "b_hat = [1, 0]\n"])
def test_a_file_gives_the_tableau_once(extra: str, write_toml, declaration_error) -> None:
    path = write_toml(
        "name = 'x'\nfamily = 'runge-kutta'\n" + extra + "tableau = '0 & \\\\ \\hline & 1'\n"
    )
    with declaration_error("tableau", "given once"):
        bf.load(path)


def test_a_file_tableau_must_be_text(write_toml, declaration_error) -> None:
    path = write_toml("name = 'x'\nfamily = 'runge-kutta'\ntableau = [1, 2]\n")
    with declaration_error("tableau", "text of a LaTeX array"):
        bf.load(path)
