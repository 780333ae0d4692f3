"""Depth methods: general linear methods over r streams whose mixing V is doubly stochastic, so
the stack is zero-stable for every V the constraint allows, with a prescribed order.

One field call per layer (the residual stack's cost) and r streams: the streams carry y and
r − 1 past derivatives, as an r-step Adams method does (y_{n+1} = y_n + h Σ_j β_j f_{n−j}, of
order p ≤ r; AB_r for p = r, the β of least norm among those of order p otherwise, exact). In
its natural form [y_n, h f_{n−1}, …, h f_{n−r+1}] the mixing V₀ has the eigenvalue 1 and a
nilpotent part, and is not doubly stochastic. A change of streams z = Tξ gives the same method
with V = TV₀T⁻¹, and the design chooses T:

- T's first row is e₀ᵀ, so stream 0 is y itself (the stack reads it out);
- T's first column is 1 and 1ᵀT = rℓᵀ (ℓ the left eigenvector of V₀ for 1, ℓ₀ = 1), so that
  V1 = 1 and 1ᵀV = 1ᵀ hold exactly, for every T of this form;
- the remaining (r − 1)(r − 2) entries maximise the smallest entry of V within |T_ij| ≤ 4
  (16, 64 when no positive margin exists within 4)
  by Nelder-Mead from several starts (the objective is a minimum, not smooth), then rounded
  to small rationals; V is recomputed exactly and its entries checked non-negative exactly.
  The bound matters: V₀'s nilpotent part is a Jordan block for r ≥ 3, and V = J/r (every entry
  1/r) is approached only as T becomes singular.

The declaration (A, U, B, V, start) is a `GeneralLinear` whose order `bf.check` proves. The
zero-stability is a theorem about the whole set: every doubly stochastic V is a convex
combination of permutation matrices (Birkhoff), so ‖Vⁿ‖∞ = 1 for every n. The design checks
that statement symbolically for the parametrisation the compiled layer trains
(`coefficients="birkhoff"`: V = Σ_σ softmax(θ)_σ P_σ), and `nn.birkhoff.birkhoff_weights` gives
the θ that starts it at the designed V.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, final

import numpy as np
import scipy.optimize
import sympy
from threadpoolctl import threadpool_limits

from ..analysis import Report, check
from ..errors import DesignError, require_counts
from ..methods import BIRKHOFF_MAX_STREAMS, GeneralLinear

BOUNDS = (4.0, 16.0, 64.0)  # |T_ij|: each stream is y plus at most this × each past derivative


def adams_weights(r: int, p: int) -> list[Fraction]:
    """β₀..β_{r−1} of y_{n+1} = y_n + h Σ_j β_j f_{n−j} with order p: Σ_j β_j (−j)^m = 1/(m+1)
    for m < p, exactly; the least-norm solution when p < r (β = Mᵀ(MMᵀ)⁻¹c)."""
    M = sympy.Matrix([[sympy.Integer(-j) ** m for j in range(r)] for m in range(p)])
    c = sympy.Matrix([sympy.Rational(1, m + 1) for m in range(p)])
    beta = M.T * (M * M.T).inv() * c
    return [Fraction(int(sympy.fraction(x)[0]), int(sympy.fraction(x)[1])) for x in beta]


def natural_form(beta: list[Fraction]) -> tuple[sympy.Matrix, sympy.Matrix, sympy.Matrix]:
    """(U₀, B₀, V₀) of the Adams method on the streams [y_n, h f_{n−1}, …, h f_{n−r+1}]."""
    r = len(beta)
    V = sympy.zeros(r, r)
    V[0, 0] = 1
    for j in range(1, r):
        V[0, j] = sympy.Rational(beta[j].numerator, beta[j].denominator)
    for k in range(2, r):
        V[k, k - 1] = 1
    B = sympy.zeros(r, 1)
    B[0] = sympy.Rational(beta[0].numerator, beta[0].denominator)
    if r > 1:
        B[1] = 1
    U = sympy.zeros(1, r)
    U[0] = 1
    return U, B, V


@final
@dataclass(frozen=True)
class DepthMethod:
    """A designed depth method and its proofs.

    - `method`: the `GeneralLinear` declaration (r streams, one stage); `report`: bf.check.
    - `beta`: the Adams weights it is built from; `transform`: T (streams z = Tξ).
    - `margin`: the smallest entry of V (exact): how far inside the doubly stochastic set.
    - `theorem`: the family statement, checked symbolically (`family_theorem`).
    """

    streams: int
    order: int
    method: GeneralLinear
    report: Report
    beta: tuple[Fraction, ...]
    transform: tuple[tuple[Fraction, ...], ...]
    margin: Fraction
    theorem: str
    seconds: float
    starts: int
    seed: int

    def command(self) -> str:
        return (
            f"butcherflow design depth --streams {self.streams} --order {self.order} "
            f"--starts {self.starts} --seed {self.seed}"
        )

    def __str__(self) -> str:
        lines = [
            f"{self.method.name}: {self.streams} streams, one field call per layer, order "
            f"{self.report.order} proved by bf.check",
            "  Adams weights β  " + ", ".join(str(b) for b in self.beta),
            "  V                "
            + "; ".join(" ".join(str(x) for x in row) for row in self.method.V),
            f"  smallest entry   {self.margin} (V doubly stochastic, exactly)",
            f"  zero-stability   {self.theorem}",
            f"  designed in {self.seconds:.2f} s",
        ]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        m = self.method
        return {
            "name": m.name,
            "streams": self.streams,
            "order": self.order,
            "proved_order": self.report.order,
            "beta": [str(b) for b in self.beta],
            "transform": [[str(x) for x in row] for row in self.transform],
            "U": [[str(x) for x in row] for row in m.U],
            "B": [[str(x) for x in row] for row in m.B],
            "V": [[str(x) for x in row] for row in m.V],
            "start": _start_texts(self.transform),
            "margin": str(self.margin),
            "theorem": self.theorem,
            "seconds": self.seconds,
            "command": self.command(),
        }

    def to_toml(self, name: str | None = None) -> str:
        """The catalog declaration, with the command that designed it."""
        m = self.method

        def cells(rows: Any) -> str:
            return (
                "["
                + ", ".join(
                    "["
                    + ", ".join(f'"{x}"' if str(x) not in ("0", "1") else str(x) for x in row)
                    + "]"
                    for row in rows
                )
                + "]"
            )

        start = ", ".join(f'"{s}"' for s in _start_texts(self.transform))
        return (
            f'name = "{name or m.name}"\n'
            f'title = "Designed depth method: {self.streams} streams, order {self.order}, '
            'doubly stochastic V"\n'
            'family = "general-linear"\n'
            f"order = {self.order}\n"
            f'reference = "Designed by butcherflow: {self.command()}"\n'
            f'description = "The {self.streams}-step Adams method of order {self.order} '
            f"(beta = {', '.join(str(b) for b in self.beta)}) on streams chosen so that V is "
            f"doubly stochastic (smallest entry {self.margin}): stream 0 is y, one field call per "
            "layer. Zero-stable for every doubly stochastic V (Birkhoff: ||V^n||_inf = 1); "
            "compile with coefficients = 'birkhoff' to train V inside that set.\"\n"
            f"A = {cells(m.A)}\nU = {cells(m.U)}\nB = {cells(m.B)}\nV = {cells(m.V)}\n"
            f"start = [{start}]\n"
        )


def _start_texts(T: tuple[tuple[Fraction, ...], ...]) -> list[str]:
    """Stream k starts at Σ_j T[k][j] ξ_j, ξ = [y(x), h f(x − h), …]."""
    texts = []
    for row in T:
        terms = []
        for j, t in enumerate(row):
            if t == 0:
                continue
            base = "y(x)" if j == 0 else f"h*f(x - {j}*h)" if j > 1 else "h*f(x - h)"
            terms.append(base if t == 1 else f"({t})*{base}")
        texts.append(" + ".join(terms) if terms else "0*y(x)")
    return texts


def depth_method(streams: int, order: int, *, starts: int = 8, seed: int = 0) -> DepthMethod:
    """The depth method of `streams` streams and order `order` (module docstring).

    **Arguments:**

    - `streams`: r, 1 ≤ r ≤ 6 (the Birkhoff parametrisation sums r! permutations).
    - `order`: 1 ≤ p ≤ r (an r-step Adams method has order r at most).
    - `starts`, `seed`: the multistart of the transform.

    **Returns:** a `DepthMethod`. Raises `DesignError` for an order above the streams, or when
    no T makes V doubly stochastic.
    """
    started = time.perf_counter()
    r, p = _checked(streams, order, starts)
    beta = adams_weights(r, p)
    U0, B0, V0 = natural_form(beta)
    for bound in BOUNDS:  # the smallest bound on T that admits a doubly stochastic V
        T = _transform(V0, r, starts, seed, bound)
        Ti = T.inv()
        V, U, B = T * V0 * Ti, U0 * Ti, T * B0
        margin = min(V)
        if margin > 0:
            break
    else:
        raise DesignError(
            "no change of streams found makes V doubly stochastic within |T_ij| <= "
            f"{BOUNDS[-1]:g} (the best has an entry {float(margin):.3g})",
            key="streams",
            value=r,
            valid="more starts (--starts), or fewer streams",
        )
    rows = [[_fraction(T[i, j]) for j in range(r)] for i in range(r)]
    method = GeneralLinear(
        A=[[0]],
        U=[[_fraction(x) for x in U]],
        B=[[_fraction(x)] for x in B],
        V=[[_fraction(V[i, j]) for j in range(r)] for i in range(r)],
        start=_start_texts(tuple(tuple(row) for row in rows)),
        name=f"designed-depth-{r}-{p}",
        order=p,
    )
    return DepthMethod(
        r,
        p,
        method,
        check(method),
        tuple(beta),
        tuple(tuple(row) for row in rows),
        _fraction(margin),
        family_theorem(r),
        time.perf_counter() - started,
        starts,
        seed,
    )


def _checked(streams: Any, order: Any, starts: Any = 1) -> tuple[int, int]:
    require_counts(streams=streams, order=order, starts=starts)
    if streams > BIRKHOFF_MAX_STREAMS:
        raise DesignError(
            f"at most {BIRKHOFF_MAX_STREAMS} streams: the Birkhoff parametrisation sums r! "
            "permutations",
            key="streams",
            value=streams,
            valid=f"streams <= {BIRKHOFF_MAX_STREAMS}",
        )
    if order > streams:
        raise DesignError(
            f"with one field call per layer, {streams} streams carry y and {streams - 1} past "
            f"derivatives: an Adams method of {streams} steps has order {streams} at most",
            key="order",
            value=order,
            valid=f"order <= {streams}, or more streams",
        )
    return streams, order


def _fraction(x: Any) -> Fraction:
    x = sympy.Rational(x)
    return Fraction(int(x.p), int(x.q))


def _left_eigenvector(V0: sympy.Matrix) -> list[sympy.Rational]:
    """ℓ with ℓᵀV₀ = ℓᵀ and ℓ₀ = 1."""
    r = V0.rows
    null = (V0.T - sympy.eye(r)).nullspace()
    ell = null[0] / null[0][0]
    return list(ell)


def _transform(V0: sympy.Matrix, r: int, starts: int, seed: int, bound: float) -> sympy.Matrix:
    """T (module docstring): the free entries maximise the smallest entry of TV₀T⁻¹."""
    ell = _left_eigenvector(V0)
    free = [(i, j) for i in range(1, r) for j in range(1, r) if i < r - 1]  # last row: sums

    def build(values: Any, exact: bool) -> Any:
        T = sympy.zeros(r, r) if exact else np.zeros((r, r))
        T[0, 0] = 1
        for i in range(1, r):
            T[i, 0] = 1
        for (i, j), v in zip(free, values, strict=True):
            T[i, j] = v
        for j in range(1, r):  # 1ᵀT = rℓᵀ fixes the last row
            total = sum(T[i, j] for i in range(r - 1))
            T[r - 1, j] = (r * ell[j] if exact else float(r * ell[j])) - total
        return T

    if r <= 2:
        return build([], True)
    V0f = np.array(V0.tolist(), dtype=float)

    def smallest(x: np.ndarray) -> float:
        T = build(x, False)
        if np.abs(T).max() > bound or abs(np.linalg.det(T)) < 1e-3:
            return -1e3  # streams would be large combinations of y and past derivatives
        return float((T @ V0f @ np.linalg.inv(T)).min())

    rng = np.random.default_rng(seed)
    best, best_value = None, -math.inf
    with threadpool_limits(1):
        for _ in range(starts):
            x0 = rng.uniform(-1, 1, len(free))
            result = scipy.optimize.minimize(
                lambda x: -smallest(x),
                x0,
                method="Nelder-Mead",
                bounds=[(-bound, bound)] * len(free),
                options={"maxiter": 4000, "xatol": 1e-9, "fatol": 1e-12},
            )
            value = -float(result.fun)
            if value > best_value:
                best, best_value = result.x, value
    assert best is not None
    for limit in (4, 8, 16, 32, 64, 128, 1024):  # small rationals that keep the margin
        values = [sympy.Rational(Fraction(float(v)).limit_denominator(limit)) for v in best]
        T = build(values, True)
        if T.det() != 0 and min(T * V0 * T.inv()) > 0:
            return T
    return build([sympy.Rational(Fraction(float(v))) for v in best], True)


def family_theorem(r: int) -> str:
    """The statement that every V = Σ_σ w_σ P_σ (w ≥ 0, Σ w = 1) is power-bounded, with its
    premises checked symbolically: each entry of V is a sum of distinct w_σ (so ≥ 0), each row
    and each column sums to Σ_σ w_σ (so to 1)."""
    perms = list(itertools.permutations(range(r)))
    w = sympy.symbols(f"w0:{len(perms)}", nonnegative=True)
    V = sympy.zeros(r, r)
    for weight, sigma in zip(w, perms, strict=True):
        for i, j in enumerate(sigma):
            V[i, j] += weight
    total = sum(w)
    rows = all(sympy.expand(sum(V.row(i)) - total) == 0 for i in range(r))
    cols = all(sympy.expand(sum(V.col(j)) - total) == 0 for j in range(r))
    entries = all(
        all(c == 1 for c in sympy.Poly(V[i, j], *w).coeffs()) for i in range(r) for j in range(r)
    )
    if not (rows and cols and entries):
        raise AssertionError("the Birkhoff parametrisation is not doubly stochastic")
    return (
        f"for every V = Σ w_σ P_σ over the {len(perms)} permutation matrices (w ≥ 0, Σ w = 1): "
        "entries ≥ 0 and row sums 1 (checked symbolically), so ‖Vⁿ‖∞ = 1 for every n"
    )
