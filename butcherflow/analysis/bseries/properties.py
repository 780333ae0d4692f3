"""Geometric properties read off a B-series, and those of a Runge-Kutta tableau read off its
entries.

- Symplecticity (Hairer, Lubich and Wanner, Geometric Numerical Integration, VI.7): a B-series
  method is symplectic iff a(u∘v) + a(v∘u) = a(u)·a(v) for all trees u, v (u∘v: v grafted on
  the root of u); its order of symplecticity is the largest q with every condition of
  |u| + |v| ≤ q met. A Runge-Kutta method with M = BA + AᵀB − bbᵀ = 0 is symplectic (Sanz-Serna
  1988, Lasagni, Suris), and an irreducible one only then.
- Energy preservation (Celledoni, McLachlan, Owren and Quispel, Found. Comput. Math. 10, 2010,
  Theorem 2; Faou, Hairer and Pham, BIT 44, 2004): ⟨∇H, f̃⟩ = 0 for the modified field f̃ of
  every Hamiltonian f = J⁻¹∇H. ⟨∇H, F(t)⟩ is ±E(ϑ), E an elementary Hamiltonian of the free
  tree ϑ = t with one leaf (the ∇H) hung on its root, the sign (−1) per edge walked against its
  direction; so the condition at order n is Σ_{t → ϑ} ±b(t)/σ(t) = 0 for every free tree ϑ of
  n + 1 nodes whose E does not vanish identically (it does when ϑ has two isomorphic halves).
- Symmetry: a = a*, the adjoint (`group.adjoint`); for a tableau also the certificate
  a_{s+1−i,s+1−j} + a_ij = b_j, b_{s+1−i} = b_i (HLW V.2.2).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, final

import sympy

from ...errors import AnalysisError
from ...methods.entries.precision import Verdict, judge_enclosure
from ..budget import Deadline
from ..exact.trees import PLAIN, Tree, TreeFamily
from .group import adjoint
from .modified import modified_equation
from .series import BallField, BSeries


@final
@dataclass(frozen=True)
class OrderVerdict:
    """The order up to which a B-series condition family holds.

    - `order`: the largest q with every condition up to q met (≤ `examined`).
    - `examined`: the highest order whose conditions were checked.
    - `failing`: a failing condition at q + 1, in words (None when none fails up to
      `examined`).
    """

    order: int
    examined: int
    failing: str | None
    undetermined: bool = False

    @property
    def holds(self) -> bool:
        """No condition up to `examined` fails or is undetermined."""
        return self.failing is None

    @property
    def fails(self) -> bool:
        """A condition up to `examined` fails (not merely undetermined)."""
        return self.failing is not None and not self.undetermined

    def text(self, what: str) -> str:
        if self.failing is None:
            return f"{what} to order ≥ {self.examined} (every condition up to {self.examined})"
        how = "undetermined at this precision" if self.undetermined else "fails"
        return f"{what} to order {self.order}; {how} at {self.order + 1}: {self.failing}"


def _verdict(domain: Any, residual: Any, density: int, digits_zero: bool = False) -> Verdict:
    """Met, fails or undetermined: exactly for an exact domain; for the balls of a numeric
    declaration by `judge_enclosure` at scale 1/γ, met also when the digits' own residual is
    exactly zero (`digits_zero`), as the order conditions are judged."""
    if isinstance(domain, BallField):
        return judge_enclosure(residual, Fraction(1, density), digits_zero).verdict
    return Verdict.MET if residual == domain.zero else Verdict.FAILS


def _show(domain: Any, residual: Any) -> str:
    if isinstance(domain, BallField):
        return f"{float(residual.mid()):.3g} ± {float(residual.rad()):.2g}"
    return str(domain.to_sympy(residual))


# (order, density, residual of a series, text with "{r}" where the residual goes)
Condition = tuple[int, int, Callable[[BSeries], Any], str]


def _first_open(
    series: BSeries, digits: BSeries | None, conditions: Iterable[Condition]
) -> OrderVerdict:
    """Walk conditions `(order, density, residual(series), text)` in order of
    `order`; the first not met stops the order (fails, or undetermined for balls).

    `digits`: for a ball series, the exact series of the same digits, whose residual being
    exactly zero counts as met (`_verdict`)."""
    K = series.domain
    for n, density, residual_of, text in conditions:
        residual = residual_of(series)
        zero = digits is not None and residual_of(digits) == digits.domain.zero
        verdict = _verdict(K, residual, density, zero)
        if verdict is not Verdict.MET:
            undetermined = verdict is Verdict.UNDETERMINED
            shown = text.replace("{r}", _show(K, residual))
            return OrderVerdict(n - 1, n, shown, undetermined)
    return OrderVerdict(series.order, series.order, None)


def butcher_product(u: Tree, v: Tree, family: TreeFamily = PLAIN) -> Tree:
    """u∘v: the tree u with v grafted on its root (u's root keeps its colour)."""
    return family.find(u.colour, (*u.children, v.index))


def symplecticity_order(
    series: BSeries, digits: BSeries | None = None, deadline: Deadline | None = None
) -> OrderVerdict:
    """Order of symplecticity of a step series (a(∅) = 1): the largest q with
    a(u∘v) + a(v∘u) = a(u)·a(v) for every pair |u| + |v| ≤ q (up to the series' order), over
    the series' trees: plain, or coloured by operator for a splitting, where the conditions on
    every pair of coloured trees make the map symplectic for every splitting into Hamiltonian
    operator fields (Araújo, Murua and Sanz-Serna, SIAM J. Numer. Anal. 34, 1997).

    **Arguments:** `series`: exact, or balls of a numeric declaration; `digits`: for balls, the
    exact series of the digits (see `_first_open`); `deadline`: checked once per order
    (`OutOfTime` past it).

    **Returns:** an `OrderVerdict`; `failing` names the first pair u, v whose condition fails.
    """
    family = series.family

    def conditions() -> Iterator[Condition]:
        yield 1, 1, lambda s: s.empty - s.domain.one, "a(∅) − 1 = {r}"
        for n in range(2, series.order + 1):
            if deadline is not None:
                deadline.check()
            for k in range(1, n // 2 + 1):
                for u in family.of_order(k):
                    for v in family.of_order(n - k):
                        if k == n - k and v.index < u.index:
                            continue
                        uv, vu = butcher_product(u, v, family), butcher_product(v, u, family)

                        def residual(
                            s: BSeries, uv: Tree = uv, vu: Tree = vu, u: Tree = u, v: Tree = v
                        ) -> Any:
                            x = s.values
                            return x[uv.index] + x[vu.index] - x[u.index] * x[v.index]

                        label = f"u = {family.bracket(u)}, v = {family.bracket(v)}"
                        text = f"a(u∘v) + a(v∘u) − a(u)a(v) = {{r}} for {label}"
                        yield n, uv.density, residual, text

    return _first_open(series, digits, conditions())


def symmetry_order(series: BSeries, digits: BSeries | None = None) -> OrderVerdict:
    """The largest q with a*(t) = a(t) for every |t| ≤ q (a* the adjoint)."""
    stars = {id(series): adjoint(series)}
    if digits is not None:
        stars[id(digits)] = adjoint(digits)

    def conditions() -> Iterator[Condition]:
        for t in series:

            def residual(s: BSeries, t: Tree = t) -> Any:
                return stars[id(s)].values[t.index] - s.values[t.index]

            where = series.family.bracket(t)
            yield t.order, t.density, residual, f"a*(t) − a(t) = {{r}} at t = {where}"

    return _first_open(series, digits, conditions())


# --- energy preservation: free trees -------------------------------------------------------


def _adjacency(tree: Tree) -> list[list[int]]:
    """The tree with one extra leaf (node 0, the ∇H) on its root (node 1), as adjacency lists."""
    adj: list[list[int]] = [[1], [0]]

    def add(t: Tree, parent: int) -> None:
        for child in t.children:
            node = len(adj)
            adj.append([parent])
            adj[parent].append(node)
            add(PLAIN.trees[child], node)

    add(tree, 1)
    return adj


def _centres(adj: list[list[int]]) -> list[int]:
    """The centre (one node) or bicentre (two adjacent nodes) of a free tree."""
    degree = [len(n) for n in adj]
    alive = set(range(len(adj)))
    layer = [i for i in alive if degree[i] <= 1]
    while len(alive) > 2:
        alive.difference_update(layer)
        nxt = []
        for leaf in layer:
            for other in adj[leaf]:
                if other in alive:
                    degree[other] -= 1
                    if degree[other] == 1:
                        nxt.append(other)
        layer = nxt
    return sorted(alive)


def _code(adj: list[list[int]], node: int, parent: int) -> str:
    """Canonical code of the subtree at `node` away from `parent` (AHU)."""
    return "(" + "".join(sorted(_code(adj, c, node) for c in adj[node] if c != parent)) + ")"


def _depth(adj: list[list[int]], start: int, goal: int) -> int:
    seen, frontier, d = {start}, [start], 0
    while goal not in seen:
        d += 1
        frontier = [c for n in frontier for c in adj[n] if c not in seen]
        seen.update(frontier)
    return d


def energy_class(tree: Tree) -> tuple[str, int] | None:
    """(free tree ϑ of t with its ∇H leaf, sign) with ⟨∇H, F(t)⟩ = sign·E(ϑ); None when E(ϑ)
    vanishes identically (two isomorphic halves swapped by an edge reversal)."""
    adj = _adjacency(tree)
    centres = _centres(adj)
    if len(centres) == 1:
        (c,) = centres
        return _code(adj, c, -1), (-1) ** _depth(adj, 0, c)
    c1, c2 = centres
    h1, h2 = _code(adj, c1, c2), _code(adj, c2, c1)
    if h1 == h2:
        return None
    if h1 > h2:
        c1, c2, h1, h2 = c2, c1, h2, h1
    d1, d2 = _depth(adj, 0, c1), _depth(adj, 0, c2)
    # edges oriented away from c1 across the centre; from the ∇H leaf on c2's side the
    # central edge is walked against that orientation
    sign = (-1) ** d1 if d1 < d2 else (-1) ** (d2 + 1)
    return f"{h1}-{h2}", sign


def energy_order(series: BSeries, digits: BSeries | None = None) -> OrderVerdict:
    """Order of energy preservation for Hamiltonian problems: the largest q such that the
    modified field's terms with trees of ≤ q nodes conserve every Hamiltonian."""
    fields = {id(series): modified_equation(series, series.order)}
    if digits is not None:
        fields[id(digits)] = modified_equation(digits, series.order)

    def conditions() -> Iterator[Condition]:
        for n in range(1, series.order + 1):
            members: dict[str, list[tuple[Tree, int]]] = defaultdict(list)
            for t in PLAIN.of_order(n):
                found = energy_class(t)
                if found is not None:
                    members[found[0]].append((t, found[1]))
            for group in members.values():

                def residual(s: BSeries, group: list[tuple[Tree, int]] = group) -> Any:
                    field = fields[id(s)]
                    K = field.domain
                    total = K.zero
                    for t, sign in group:
                        term = K.quo(field.values[t.index], K(t.symmetry))
                        total += term if sign > 0 else -term
                    return total

                trees = ", ".join(PLAIN.bracket(t) for t, _ in group)
                density = min(t.density for t, _ in group)
                yield n, density, residual, f"Σ ±b(t)/σ(t) = {{r}} over the trees {trees}"

    return _first_open(series, digits, conditions())


def reversal_certificate(A: Sequence[Sequence[Any]], b: Sequence[Any]) -> bool:
    """a_{s+1−i,s+1−j} + a_ij = b_j and b_{s+1−i} = b_i: the tableau is symmetric (HLW V.2.2)."""
    s = len(b)
    if any(b[s - 1 - i] != b[i] for i in range(s)):
        return False
    return all(A[s - 1 - i][s - 1 - j] + A[i][j] == b[j] for i in range(s) for j in range(s))


def hamiltonian_check(f: Sequence[Any], y: Sequence[Any]) -> None:
    """Raise `AnalysisError` unless f = J⁻¹∇H for some H, y = (q, p) and J = [[0, I], [−I, 0]]:
    then J·f = ∇H up to sign, whose Jacobian (the Hessian of H) is symmetric.

    **Arguments:** `f`: sympy expressions in `y`; `y`: the 2d state symbols (q₁…q_d, p₁…p_d).
    """
    n = len(y)
    if n % 2 or len(f) != n:
        raise AnalysisError(
            f"energy preservation: a Hamiltonian system has an even dimension with one f per "
            f"state (got {len(f)} components for {n} symbols)"
        )
    d = n // 2
    grad = [*(-sympy.sympify(x) for x in f[d:]), *(sympy.sympify(x) for x in f[:d])]
    jac = sympy.Matrix(grad).jacobian(list(y))
    for i in range(n):
        for j in range(i + 1, n):
            if sympy.simplify(jac[i, j] - jac[j, i]) != 0:
                raise AnalysisError(
                    "energy preservation is defined for Hamiltonian problems f = J⁻¹∇H, and "
                    f"this f is not one: ∂(Jf)_{i}/∂y_{j} ≠ ∂(Jf)_{j}/∂y_{i} "
                    f"({jac[i, j]} against {jac[j, i]}); ask for the modified equation instead"
                )


def energy_preservation(series: BSeries, f: Sequence[Any], y: Sequence[Any]) -> OrderVerdict:
    """The energy preservation order of a method for a Hamiltonian problem f (checked to be
    one, `hamiltonian_check`): the order for every Hamiltonian (`energy_order`)."""
    hamiltonian_check(f, y)
    return energy_order(series)
