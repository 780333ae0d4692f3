"""G-symplecticity of a general linear method, decided exactly (docs/concepts.md, "B-series and
geometric properties").

A GLM (A, U, B, V) with s stages and r values is **G-symplectic** (Butcher 2006, *Acta Numerica*
15; Butcher, Habib, Hill and Norton, *SIAM J. Numer. Anal.* 52, 2014; Butcher, *B-Series*, 2021,
Definition 7.4D; Hairer, Lubich and Wanner XV.4) when a symmetric nonsingular r×r matrix G and a
diagonal s×s matrix D (of any sign: Butcher and Imran's G4123 has d₂ = −3/8) satisfy

    G = VᵀGV,      DU = BᵀGV,      DA + AᵀD = BᵀGB.

Then the quadratic form [y^[n], y^[n]]_{G⊗Q} of the r values is the same at every step for a
problem with the quadratic invariant [y, y]_Q (Butcher 2021, Theorem 7.4E). A Runge-Kutta
method written as a GLM (r = 1, U = 1, B = bᵀ, V = 1) is G-symplectic exactly when
M = BA + AᵀB − bbᵀ = 0: the equations give G = g, D = g·diag(b) and g·M = 0.

The equations are linear and homogeneous in the r(r+1)/2 entries of G and the s of D, so their
solutions form a vector space, found exactly over the field of the entries (sympy's
`DomainMatrix.nullspace`). G = 0 always solves them; the method is G-symplectic iff the space
holds a nonsingular G: det(Σₖ tₖGₖ) over the G-parts Gₖ of a basis is a polynomial in the tₖ,
identically zero iff every G in the space is singular, and otherwise nonzero at some integer
point with coordinates in 0 … r (its degree in each tₖ is at most r), which gives the witness.
The equations are taken in turn, G = VᵀGV, then DU = BᵀGV, then DA + AᵀD = BᵀGB, so that a "no"
names the first that leaves only singular G. An exact witness is scaled so that the first
nonzero entry of G (row by row) is 1; a numeric one so that the largest |Gᵢⱼ| is about 1 and
the first nonzero entry positive (its residuals are judged at that scale).

**Numeric declarations** are judged at their precision (`methods/entries/precision.py`), never
gaining the property where the digits cannot decide it:

- **met**: a witness (G, D), exact (in the field of the digits) with G nonsingular, leaves every
  equation's residual in a ball (over every method within the precision) that holds 0 and is
  narrower than the resolution, or exactly zero for the digits' own method. The witness is the
  exact one of the digits' method when it is G-symplectic; otherwise the floating-point null
  vector of the digits' equations, accepted only when G's condition number is below
  1/resolution (a G that is numerically singular proves nothing), whose entries are widened by
  `WITNESS_SLACK` in the balls (its own rounding: the exact G of a method within the precision
  is not a binary fraction).
- **fails**: det V is not ±1 for any method within the precision (a ball of det(V)² − 1 that
  excludes 0), so G = VᵀGV, which gives det G = det(V)² det G, leaves only singular G; or ball
  Gaussian elimination with pivots that exclude 0 shows that the equations have full column
  rank for every method within the precision, so only G = 0, D = 0 solve them.
- **undetermined** otherwise (a method the digits spell that is not G-symplectic only because
  G must be singular, though nonzero, for another reason than det V is undetermined: that is
  not certified in balls).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, final

import flint
import numpy as np
import sympy

from ...methods.entries.balls import ball
from ...methods.entries.precision import RESOLUTION, Verdict, judge_enclosure, working_precision
from ...methods.general_linear import GeneralLinear
from ..budget import Deadline
from .symplectic_equations import (
    Solved,
    equations,
    exact_system,
    g_of,
    index,
    matrices,
    solve_exact,
)

# How far a floating-point witness (scaled to max |Gᵢⱼ| ≈ 1) may move, entry by entry, in the
# balls that judge it: its own rounding, far below the resolution it is judged at.
WITNESS_SLACK = RESOLUTION / 2**10

# The three equations, in the order they are imposed (a "no" names the first that leaves only
# singular G).
EQUATIONS = ("G = VᵀGV", "DU = BᵀGV", "DA + AᵀD = BᵀGB")


@final
@dataclass(frozen=True)
class GSymplectic:
    """The verdict on a GLM's G-symplecticity, with its proof.

    - `verdict`: met (G and D found), fails (no symmetric nonsingular G), undetermined (the
      digits of a numeric declaration cannot tell, or a parametrised family).
    - `G`: the r×r witness (sympy, exact rationals or field elements; None unless met).
    - `D`: the s diagonal entries of the witness (None unless met).
    - `failing`: for fails, the equation after which only singular G remain (one of
      `EQUATIONS`, e.g. "G = VᵀGV"); for undetermined, the first residual the digits leave
      open (None when there is none to name); None when met.
    - `why`: the proof in words.
    - `bound`: the largest ball radius a numeric verdict used (0.0 when exact).
    """

    verdict: Verdict
    G: tuple[tuple[sympy.Expr, ...], ...] | None
    D: tuple[sympy.Expr, ...] | None
    failing: str | None
    why: str
    bound: float = 0.0

    @property
    def holds(self) -> bool | None:
        """True (met), False (fails), None (undetermined)."""
        return {Verdict.MET: True, Verdict.FAILS: False}.get(self.verdict)

    def text(self) -> str:
        """The report's cell: "yes (…)", "no (…)" or "undetermined (…)"."""
        shown = {True: "yes", False: "no", None: "undetermined"}[self.holds]
        return f"{shown} ({self.why})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "g_symplectic": self.holds,
            "G": None if self.G is None else [[str(x) for x in row] for row in self.G],
            "D": None if self.D is None else [str(x) for x in self.D],
            "failing": self.failing,
            "why": self.why,
        }


def _labels(r: int, s: int) -> list[list[str]]:
    """Each equation's entries by name, in `equations`' order."""
    return [
        [f"(G − VᵀGV)[{i}][{j}]" for i in range(r) for j in range(i, r)],
        [f"(DU − BᵀGV)[{i}][{j}]" for i in range(s) for j in range(r)],
        [f"(DA + AᵀD − BᵀGB)[{i}][{j}]" for i in range(s) for j in range(i, s)],
    ]


def _witness(K: Any, x: list[Any], r: int) -> tuple[Any, Any]:
    """G and the diagonal of D of a vector of unknowns, as sympy values."""
    g = g_of(x, r)
    G = tuple(tuple(K.to_sympy(v) for v in row) for row in g)
    D = tuple(K.to_sympy(v) for v in x[len(index(r)) :])
    return G, D


def _given(k: int) -> str:
    """The `k`-th equation, with those imposed before it: "DU = BᵀGV (with G = VᵀGV)"."""
    before = f" (with {', '.join(EQUATIONS[:k])})" if k else ""
    return EQUATIONS[k] + before


def _shown(x: sympy.Expr) -> str:
    text = str(x)
    return text if len(text) <= 24 else f"{float(sympy.N(x, 20)):.6g}"


def witness_text(G: Any, D: Any) -> str:
    """`"G = [[1, 0], [0, -1]], D = diag(1/3, -3/8, 25/24)"`."""
    rows = ", ".join("[" + ", ".join(_shown(v) for v in row) + "]" for row in G)
    return f"G = [{rows}], D = diag({', '.join(_shown(v) for v in D)})"


def g_symplectic(method: GeneralLinear, deadline: Deadline | None = None) -> GSymplectic:
    """Decide whether a general linear method is G-symplectic (see the module).

    **Arguments:** `method`: the declaration (exact, numeric, or a family: families are not
    examined); `deadline`: the report's (`OutOfTime` past it; default: none).

    **Returns:** a `GSymplectic` with G and D when met, the equation that fails otherwise.
    """
    deadline = deadline or Deadline.never()
    if method.symbols:
        return GSymplectic(
            Verdict.UNDETERMINED, None, None, None, "not examined for parametrised families"
        )
    r = method.values
    K, groups = exact_system(method)
    solved = solve_exact(K, groups, r, deadline)
    found, k = solved.witness, solved.k
    if found is not None and method.numeric:
        return _judge_numeric(method, K, groups, found, digits_exact=True)
    if found is not None:
        G, D = _witness(K, found, r)
        why = f"{witness_text(G, D)} satisfy {', '.join(EQUATIONS)}"
        return GSymplectic(Verdict.MET, G, D, None, why)
    if not method.numeric:
        leaves = (
            "only G = 0" if solved.only_zero else "only singular G (det ΣtₖGₖ ≡ 0 on its solutions)"
        )
        return GSymplectic(
            Verdict.FAILS,
            None,
            None,
            EQUATIONS[k],
            f"no symmetric nonsingular G: {_given(k)} leaves {leaves}",
        )
    deadline.check()
    return _numeric_without_exact(method, K, groups, solved, deadline)


def _balls(method: GeneralLinear) -> list[list[list[flint.arb]]]:
    """The equations with every entry a ball holding it within the precision (call under
    `flint.ctx.workprec`)."""
    zero, one = flint.arb(0), flint.arb(1)
    A, U, B, V = matrices(method, [x.ball() for x in method.numbers.flat])
    return equations(A, U, B, V, zero, one)


def _judge_numeric(
    method: GeneralLinear,
    K: Any,
    exact: list[list[list[Any]]],
    x: list[Any],
    digits_exact: bool,
) -> GSymplectic:
    """Judge every residual of the witness `x` (elements of K, rescaled so that max |G| is
    about 1 and its first nonzero entry positive) in balls: met when each is (see the module),
    else the first residual the digits leave open or that misses."""
    r, s = method.values, method.stages
    g = len(index(r))
    sizes = [float(K.to_sympy(v)) for v in x[:g]]
    lead = next(v for v in sizes if v)
    top = Fraction(max(abs(v) for v in sizes)) * (1 if lead > 0 else -1)
    x = [K.quo(v, K.convert(sympy.Rational(top.numerator, top.denominator))) for v in x]
    values = [K.to_sympy(v) for v in x]
    judged = []
    with flint.ctx.workprec(working_precision(method.numbers.flat)):
        slack = Fraction(0) if digits_exact else WITNESS_SLACK
        point = [ball(v, slack) for v in values]
        for group, labels, rows in zip(_balls(method), _labels(r, s), exact, strict=True):
            for coefficients, label, row in zip(group, labels, rows, strict=True):
                box = sum((c * p for c, p in zip(coefficients, point, strict=True)), flint.arb(0))

                def spelled(row: list[Any] = row) -> bool:
                    total = sum((c * v for c, v in zip(row, x, strict=True)), K.zero)
                    return bool(total == K.zero)

                judged.append((label, judge_enclosure(box, Fraction(1), digits_exact or spelled)))
    bound = max((j.bound for _, j in judged), default=0.0)
    for label, j in judged:
        if j.verdict is not Verdict.MET:
            why = (
                "undetermined at this precision: the nearest G found from the digits leaves "
                f"{label} = {float(j.residual):.3g} ± {j.bound:.3g}"
            )
            return GSymplectic(Verdict.UNDETERMINED, None, None, label, why, bound)
    G, D = _witness(K, x, r)
    why = (
        f"{witness_text(G, D)} satisfy {', '.join(EQUATIONS)} within the precision of the "
        f"entries (±{bound:.2g}" + ("; exactly for the digits as given)" if digits_exact else ")")
    )
    return GSymplectic(Verdict.MET, G, D, None, why, bound)


def _full_rank(rows: list[list[flint.arb]], n: int) -> bool:
    """Whether every matrix within the balls `rows` has rank `n` (its number of columns):
    Gaussian elimination with complete pivoting on entries whose ball excludes 0 (each such
    pivot is nonzero for every matrix within the balls, and the eliminated entries stay
    within theirs)."""
    rows = [list(row) for row in rows]
    free, used = set(range(n)), set()
    for _ in range(n):
        best: tuple[float, int, int] | None = None
        for i, row in enumerate(rows):
            if i in used:
                continue
            for j in free:
                if not row[j].contains(0):
                    size = abs(float(row[j].mid()))
                    if best is None or size > best[0]:
                        best = (size, i, j)
        if best is None:
            return False
        _, i, j = best
        used.add(i)
        free.discard(j)
        pivot = rows[i]
        for k, row in enumerate(rows):
            if k not in used:
                f = row[j] / pivot[j]
                rows[k] = [a - f * b for a, b in zip(row, pivot, strict=True)]
    return True


def _float_witness(
    K: Any, exact: list[list[list[Any]]], r: int, solved: Solved
) -> list[Any] | None:
    """A floating-point solution, with G well conditioned (condition number below
    1/resolution), of the equations the digits do not meet exactly, among the exact solutions
    of those they do (`solved.kept`); its coordinates' binary values exactly, so that the
    witness lies exactly in that space. None when no such G is found."""
    n = len(exact[0][0])
    basis = solved.kept or [[K.one if i == j else K.zero for j in range(n)] for i in range(n)]
    rest = [row for group in exact[solved.k :] for row in group]
    M = np.array(
        [
            [
                float(K.to_sympy(sum((c * v for c, v in zip(row, b, strict=True)), K.zero)))
                for b in basis
            ]
            for row in rest
        ],
        dtype=np.float64,
    )
    N = np.array([[float(K.to_sympy(v)) for v in b] for b in basis], dtype=np.float64)
    _, sv, vt = np.linalg.svd(M)
    m = len(basis)
    scale = max(float(sv[0]) if len(sv) else 0.0, 1.0)
    null = [k for k in range(m) if k >= len(sv) or sv[k] <= 1e-6 * scale] or [m - 1]
    for trial in range(3):
        y = sum(((k + 1) ** trial * vt[i] for k, i in enumerate(null)), np.zeros(m))
        G = np.array(g_of(list(y @ N), r))
        if np.linalg.cond(G) < float(1 / RESOLUTION):
            exact_y = [K.convert(sympy.Rational(*Fraction(float(v)).as_integer_ratio())) for v in y]
            return [
                sum((c * b[i] for c, b in zip(exact_y, basis, strict=True)), K.zero)
                for i in range(n)
            ]
    return None


def _numeric_without_exact(
    method: GeneralLinear,
    K: Any,
    exact: list[list[list[Any]]],
    solved: Solved,
    deadline: Deadline,
) -> GSymplectic:
    """A numeric declaration whose digits' own method is not G-symplectic: fails when the
    equations force G = 0 for every method within the precision, met when a well-conditioned
    floating-point witness meets them at the precision, undetermined otherwise."""
    r = method.values
    n = len(index(r)) + method.stages
    with flint.ctx.workprec(working_precision(method.numbers.flat)):
        V = flint.arb_mat(method.numbers.V.balls())
        det = V.det()
        if not (det * det - 1).contains(0):
            return GSymplectic(
                Verdict.FAILS,
                None,
                None,
                EQUATIONS[0],
                f"no symmetric nonsingular G: G = VᵀGV gives det G = det(V)² det G, and "
                f"det V = {float(det.mid()):.6g} ± {float(det.rad()):.2g} is not ±1 for any "
                "method within the precision of the entries",
            )
        groups = _balls(method)
        for k in range(len(groups)):
            if _full_rank([row for group in groups[: k + 1] for row in group], n):
                return GSymplectic(
                    Verdict.FAILS,
                    None,
                    None,
                    EQUATIONS[k],
                    f"no symmetric nonsingular G: {_given(k)} leaves only G = 0 for every method "
                    "within the precision of the entries (ball elimination, pivots excluding 0)",
                )
    deadline.check()
    x = _float_witness(K, exact, r, solved)
    if x is None:
        return GSymplectic(
            Verdict.UNDETERMINED,
            None,
            None,
            None,
            "the digits' own method is not G-symplectic, no well-conditioned G nearly solves "
            "the equations, and they do not force G = 0 for every method within the precision",
        )
    verdict = _judge_numeric(method, K, exact, x, digits_exact=False)
    if verdict.holds:
        return verdict
    why = f"{verdict.why}, and the equations do not force G = 0 for every method within it"
    return dataclasses.replace(verdict, why=why)
