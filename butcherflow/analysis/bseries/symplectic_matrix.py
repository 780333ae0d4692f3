"""The symplecticity matrix of a Runge-Kutta tableau, read off its entries.

M = BA + AᵀB − bbᵀ (B = diag(b)): M = 0 makes the method symplectic and conserve quadratic
  invariants (Sanz-Serna 1988; Lasagni 1988; Suris 1988); for a numeric tableau every entry of M
  is judged like an order condition (`methods/entries/precision.py`): exactly zero or an enclosure
of 0 narrower than the resolution is met, an enclosure excluding 0 fails, the rest undetermined.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, final

import flint
import sympy

from ...methods import ButcherTableau
from ...methods.entries.precision import Judgement, Verdict, judge_enclosure, working_precision
from ..exact.weights import entries_in_field, judge_element


@final
@dataclass(frozen=True)
class MatrixVerdict:
    """The verdict on M = BA + AᵀB − bbᵀ = 0.

    - `verdict`: met (M = 0), fails (an entry is nonzero for every method within the
      precision), undetermined (the digits cannot tell).
    - `entry`: the first entry that fails or is undetermined, e.g. `"M[0][0] = -1/36"`.
    - `bound`: for a numeric tableau, the largest ball radius used (0.0 when exact).
    """

    verdict: Verdict
    entry: str | None
    bound: float


def symplectic_matrix(tableau: ButcherTableau) -> MatrixVerdict:
    """Judge M = BA + AᵀB − bbᵀ = 0, entry by entry (see `MatrixVerdict`): for a numeric
    tableau an entry is met when its ball is narrower than the resolution, or when the digits'
    own M entry is exactly zero (as order conditions are judged, `methods/entries/precision.py`)."""
    s = tableau.stages
    judged: list[tuple[str, Judgement]] = []
    if tableau.numeric:
        with flint.ctx.workprec(working_precision(tableau.numbers.flat)):
            A, b = tableau.numbers.A.balls(), tableau.numbers.b.balls()
            K, Ad, bd = entries_in_field(tableau)  # the digits exactly
            for i in range(s):
                for j in range(i, s):
                    m = b[i] * A[i][j] + b[j] * A[j][i] - b[i] * b[j]
                    digits = bd[i] * Ad[i][j] + bd[j] * Ad[j][i] - bd[i] * bd[j]
                    judged.append(
                        (f"M[{i}][{j}]", judge_enclosure(m, Fraction(1), digits == K.zero))
                    )
    else:
        K, A, b = entries_in_field(tableau)
        for i in range(s):
            for j in range(i, s):
                m = b[i] * A[i][j] + b[j] * A[j][i] - b[i] * b[j]
                judged.append((f"M[{i}][{j}]", judge_element(K, m)))
    bound = max((v.bound for _, v in judged), default=0.0)
    for wanted in (Verdict.FAILS, Verdict.UNDETERMINED):
        for key, v in judged:
            if v.verdict is wanted:
                return MatrixVerdict(wanted, f"{key} = {_short(v.residual)}", bound)
    return MatrixVerdict(Verdict.MET, None, bound)


def _short(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    text = str(value)
    return text if len(text) <= 40 else f"{float(sympy.N(value, 20)):.6g}"
