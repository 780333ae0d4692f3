"""The geometric rows of a splitting, decided on its coloured B-series.

- Symplecticity: a composition of symplectic maps is symplectic, so exact sub-flows of
  Hamiltonian operator fields and sub-steps by a tableau with M = 0 give a symplectic splitting.
  Otherwise the coloured series decides: the splitting is symplectic for every splitting
  y' = Σ_X J⁻¹∇H_X into Hamiltonian operator fields iff a(u∘v) + a(v∘u) = a(u)·a(v) for every
  pair of trees u, v coloured by operator (Araújo, Murua and Sanz-Serna, SIAM J. Numer. Anal.
  34, 1997; Hairer, Lubich and Wanner VI.7). A failing pair proves that some Hamiltonian
  operator fields make it non-symplectic; particular fields may still give a symplectic map
  (Lie-Trotter with Euler sub-steps is symplectic Euler when one field depends on p only and
  the other on q only), which the series cannot see.
- Symmetry: a palindrome of symmetric sub-steps is symmetric; otherwise a* = a is compared
  on the coloured series.
"""

from __future__ import annotations

from collections.abc import Mapping

import flint

from ...methods import ButcherTableau, Splitting
from ...methods.entries.precision import Verdict
from ..budget import NOT_DECIDED, Deadline, OutOfTime
from ..exact.weights import entries_in_field
from .properties import reversal_certificate, symmetry_order, symplecticity_order
from .splitting import chosen_substeps, splitting_series
from .symplectic_matrix import symplectic_matrix

# The highest coloured-tree order symmetry is examined to
SPLITTING_EXAMINED = 4
# Symplecticity conditions are examined to this order, or lower where the operators' colours
# make more trees than `TREE_LIMIT` up to it (2 colours: 1202 trees to order 6; 3: 1788 to 5)
SYMPLECTIC_EXAMINED = 6
TREE_LIMIT = 2000


def coloured_tree_count(colours: int, order: int) -> int:
    """The number of rooted trees with 1…`order` nodes, each node one of `colours` colours
    (a₁ = k, aₙ₊₁ = (1/n) Σᵢ (Σ_{d|i} d·a_d)·aₙ₋ᵢ₊₁, OEIS A000081 for k = 1)."""
    a = [0, colours]
    for n in range(1, order):
        total = sum(
            sum(d * a[d] for d in range(1, i + 1) if i % d == 0) * a[n - i + 1]
            for i in range(1, n + 1)
        )
        a.append(total // n)
    return sum(a[1 : order + 1])


def symplectic_examined(operators: int) -> int:
    """The coloured-tree order the symplecticity conditions of a splitting of `operators`
    operators are examined to (see `SYMPLECTIC_EXAMINED`, `TREE_LIMIT`)."""
    order = SYMPLECTIC_EXAMINED
    while order > 2 and coloured_tree_count(operators, order) > TREE_LIMIT:
        order -= 1
    return order


def splitting_symplectic(
    method: Splitting,
    substeps: Mapping[str, ButcherTableau | str] | None = None,
    deadline: Deadline | None = None,
) -> tuple[bool | None, str]:
    """Whether a splitting is symplectic for every splitting into Hamiltonian operator fields,
    with the proof in words (see the module's docstring).

    **Arguments:** `method`: the splitting; `substeps`: per operator, a tableau, catalog name
    or `"exact"` in place of the declared sub-step; `deadline`: past it the verdict says it was
    not decided.

    **Returns:** `(True / False / None, why)`: None when undetermined (the conditions hold as
    far as examined, or the digits cannot decide them) or not decided in time.
    """
    chosen = chosen_substeps(method, substeps)
    approximate = {sub.name: sub for sub in chosen.values() if sub is not None}
    if not approximate:
        return True, "a composition of exact flows: symplectic when every operator is Hamiltonian"
    proofs = {name: symplectic_matrix(s) for name, s in approximate.items() if not s.symbols}
    if len(proofs) == len(approximate) and all(p.verdict is Verdict.MET for p in proofs.values()):
        flows = "exact flows and " if None in chosen.values() else ""
        names = " and ".join(approximate)
        return True, f"a composition of {flows}{names} sub-steps, which are symplectic (M = 0)"
    if any(c.free_symbols for _, c in method.steps):
        return None, "not examined for parametrised splittings"
    if any(sub.numeric for sub in approximate.values()):
        return None, (
            "not examined: a numeric sub-step tableau's coloured series is computed from its "
            "digits taken exactly, which would decide what its precision cannot"
        )
    order = symplectic_examined(len(method.operators))
    try:
        series = splitting_series(method, order, substeps)
        digits = splitting_series(method, order, substeps, digits=True) if method.numeric else None
        if digits is None:
            found = symplecticity_order(series, None, deadline)
        else:
            with flint.ctx.workprec(series.domain.prec):
                found = symplecticity_order(series, digits, deadline)
    except OutOfTime:
        return None, f"{NOT_DECIDED} (the coloured symplecticity conditions)"
    if found.fails:
        return False, (
            f"symplectic to order {found.order} only: at {found.order + 1} the coloured "
            f"condition {found.failing}"
        )
    if found.undetermined:
        return None, (
            f"symplectic to order {found.order}; undetermined at {found.order + 1} at this "
            f"precision: {found.failing}"
        )
    sub_why = "; ".join(f"{name}: {p.entry}" for name, p in proofs.items() if p.entry)
    return None, (
        f"a(u∘v) + a(v∘u) = a(u)a(v) on every pair of coloured trees to order {found.examined} "
        f"(no certificate for all orders; sub-steps not symplectic by M: {sub_why})"
    )


def splitting_symmetric(method: Splitting) -> tuple[bool | None, str]:
    """A palindromic sequence of symmetric sub-steps (exact flows, or a symmetric tableau) is
    symmetric (Hairer, Lubich and Wanner, V.3)."""
    steps = list(method.steps)
    palindrome = steps == steps[::-1]
    sub = method.substep
    symmetric_sub = sub is None
    if sub is not None and not sub.numeric and not sub.symbols:
        _, A, b = entries_in_field(sub)
        symmetric_sub = reversal_certificate(A, b)
    if palindrome and symmetric_sub:
        what = "exact sub-flows" if sub is None else f"symmetric {sub.name} sub-steps"
        return True, f"palindromic steps of {what}"
    # the coloured B-series of the composition against its adjoint
    exact = {op: "exact" for op in method.operators} if sub is None else None
    found = symmetry_order(splitting_series(method, SPLITTING_EXAMINED, exact))
    if not found.holds:
        return False, f"a* ≠ a at order {found.order + 1}: {found.failing}"
    return None, f"a* = a to order {found.examined} (no certificate for all orders)"
