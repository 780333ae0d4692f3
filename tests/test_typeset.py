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
    [(BOGACKI_SHAMPINE, "bogacki-shampine-3"), (RADAU_IIA_5, "radau-iia-5"), (RK4, "rk4")],
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
