"""The equations of G-symplecticity as a homogeneous linear system in the entries of G and D, and
their exact solution over the field of the entries (`symplectic.py` decides from it)."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, final

import sympy
from sympy.polys.matrices import DomainMatrix

from ...methods.general_linear import GeneralLinear
from ..budget import Deadline
from ..exact.weights import smallest_domain


def index(r: int) -> dict[tuple[int, int], int]:
    """The unknown holding G[i][j] = G[j][i], i ≤ j, row by row; D's s entries follow."""
    pairs = [(i, j) for i in range(r) for j in range(i, r)]
    return {p: n for n, p in enumerate(pairs)}


def equations(A: Any, U: Any, B: Any, V: Any, zero: Any, one: Any) -> list[list[list[Any]]]:
    """The coefficients of the three equations in the unknowns (`index`, then D), one row
    per independent entry (the symmetric ones above the diagonal), grouped by equation; the
    entries are exact field elements or arb balls alike."""
    s, r = len(A), len(V)
    at = index(r)
    n = len(at) + s

    def g(k: int, m: int) -> int:
        return at[(min(k, m), max(k, m))]

    def row() -> list[Any]:
        return [zero for _ in range(n)]

    first, second, third = [], [], []
    for i in range(r):
        for j in range(i, r):
            c = row()
            c[g(i, j)] += one
            for k in range(r):
                for m in range(r):
                    c[g(k, m)] -= V[k][i] * V[m][j]
            first.append(c)
    for i in range(s):
        for j in range(r):
            c = row()
            c[len(at) + i] += U[i][j]
            for k in range(r):
                for m in range(r):
                    c[g(k, m)] -= B[k][i] * V[m][j]
            second.append(c)
    for i in range(s):
        for j in range(i, s):
            c = row()
            c[len(at) + i] += A[i][j]
            c[len(at) + j] += A[j][i]
            for k in range(r):
                for m in range(r):
                    c[g(k, m)] -= B[k][i] * B[m][j]
            third.append(c)
    return [first, second, third]


def matrices(method: GeneralLinear, values: Iterable[Any]) -> tuple[Any, Any, Any, Any]:
    """A, U, B, V with their entries taken from `values`, one per entry in the declaration's
    order (`numbers.flat`)."""
    entries = iter(values)
    n = method.numbers
    A, U, B, V = ([[next(entries) for _ in row] for row in m] for m in (n.A, n.U, n.B, n.V))
    return A, U, B, V


def exact_system(method: GeneralLinear) -> tuple[Any, list[list[list[Any]]]]:
    """The field of the entries (of the digits, for a numeric declaration) and the equations
    over it."""
    domain, values = smallest_domain(method.numbers.values)
    field = domain.get_field()
    if field != domain:  # ZZ -> QQ (converting an algebraic field into itself costs minutes)
        values = [field.convert_from(v, domain) for v in values]
    A, U, B, V = matrices(method, values)
    return field, equations(A, U, B, V, field.zero, field.one)


def g_of(x: list[Any], r: int) -> list[list[Any]]:
    """The symmetric r×r G of a vector of unknowns (`index`)."""
    at = index(r)
    return [[x[at[(min(i, j), max(i, j))]] for j in range(r)] for i in range(r)]


def _nonsingular(K: Any, basis: list[list[Any]], r: int, deadline: Deadline) -> list[Any] | None:
    """A vector of the span of `basis` whose G is nonsingular, or None when every G there is
    singular (det(Σ tₖGₖ) ≡ 0)."""
    parts = [v for v in basis if any(x != K.zero for x in v[: len(index(r))])]
    if not parts:
        return None
    m = len(parts)

    def combine(weights: tuple[int, ...]) -> list[Any]:
        return [
            sum((K.convert(w) * v[n] for w, v in zip(weights, parts, strict=True)), K.zero)
            for n in range(len(parts[0]))
        ]

    def det(x: list[Any]) -> Any:
        return DomainMatrix(g_of(x, r), (r, r), K).det()

    for trial in range(3):
        x = combine(tuple((k + 1) ** trial for k in range(m)))
        if det(x) != K.zero:
            return x
        deadline.check()
    ts = sympy.symbols(f"t0:{m}")
    R = K[ts]
    at = index(r)
    Gt = [
        [
            sum(
                (
                    R.convert_from(p[at[(min(i, j), max(i, j))]], K) * t
                    for p, t in zip(parts, R.gens, strict=True)
                ),
                R.zero,
            )
            for j in range(r)
        ]
        for i in range(r)
    ]
    polynomial = DomainMatrix(Gt, (r, r), R).det()
    if polynomial == R.zero:
        return None
    for count, weights in enumerate(itertools.product(range(r + 1), repeat=m)):
        if polynomial(*weights) != K.zero:
            return combine(weights)
        if count % 64 == 0:
            deadline.check()
    raise AssertionError("a nonzero polynomial of degree ≤ r in each variable vanished on the grid")


def _normalised(K: Any, x: list[Any], r: int) -> list[Any]:
    """`x` scaled so that the first nonzero entry of its G (row by row) is 1."""
    g = g_of(x, r)
    lead = next(v for row in g for v in row if v != K.zero)
    return [K.quo(v, lead) for v in x]


@final
@dataclass(frozen=True)
class Solved:
    """What imposing the equations in turn found (`solve_exact`).

    - `witness`: a solution with G nonsingular, scaled (`_normalised`), or None.
    - `k`: without a witness, the index of the first equation after which every G is singular.
    - `only_zero`: G = 0 is then the only one.
    - `kept`: a basis of the solutions of the equations before `k` (None when k = 0): a
      numeric declaration looks for a floating-point witness among them, so that the equations
      its digits meet exactly stay met exactly.
    """

    witness: list[Any] | None
    k: int
    only_zero: bool
    kept: list[list[Any]] | None


def solve_exact(K: Any, groups: list[list[list[Any]]], r: int, deadline: Deadline) -> Solved:
    """Impose the equations in turn over K, each time asking whether the solutions hold a
    nonsingular G (see `Solved`)."""
    rows: list[list[Any]] = []
    n = len(groups[0][0])  # G = VᵀGV has r(r+1)/2 ≥ 1 rows
    kept: list[list[Any]] | None = None
    for k, group in enumerate(groups):
        rows += group
        deadline.check()
        basis = DomainMatrix(rows, (len(rows), n), K).nullspace().to_list()
        found = _nonsingular(K, basis, r, deadline)
        if found is None:
            g = len(index(r))
            only_zero = all(x == K.zero for v in basis for x in v[:g])
            return Solved(None, k, only_zero, kept)
        kept = basis
    assert found is not None
    return Solved(_normalised(K, found, r), len(groups), False, None)
