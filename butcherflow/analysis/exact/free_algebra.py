"""The free associative algebra in which a splitting with exact sub-flows is proved.

Ordering convention. The splitting y' = Σ_X f_X(y) with steps (X₁, c₁), ..., (X_n, c_n) advances
X₁ by c₁h first, then X₂ by c₂h, and so on: Ψ_h = φ^{X_n}_{c_n h} ∘ ⋯ ∘ φ^{X₁}_{c₁ h}. With the Lie
derivatives D_X g = g'·f_X, a function g along the flows obeys (Gröbner's lemma reverses the order)

    g(Ψ_h(y)) = (exp(c₁ h D_{X₁}) exp(c₂ h D_{X₂}) ⋯ exp(c_n h D_{X_n}) g)(y),

so the first step's factor stands leftmost, and the word "AB" means D_A D_B (A's flow acts first).
The exact flow is exp(h Σ_X D_X). The splitting has order p when both series agree on every word
of length ≤ p in the free associative algebra over one letter per operator (necessary and
sufficient for arbitrary non-commuting fields). Word reversal fixes exp(h Σ D), so the reversed
(adjoint) composition has the same order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, final

import sympy

Word = tuple[int, ...]  # letters are operator indices
Series = dict[Word, Any]


@final
class FreeProduct:
    """The product exp(c₁hX₁)⋯exp(c_nhX_n) in the free associative algebra, graded, extended on
    demand (grade n of every partial product needs only grades < n, so the search stops at the
    first failing order without computing higher ones).

    **Arguments:**

    - `factors`: `(letter, coefficient)` pairs in order, coefficients elements of `domain`.
    - `domain`: a sympy domain that is a field (QQ, QQ<α>, ...) or contains 1/k!.
    """

    def __init__(self, factors: Sequence[tuple[int, Any]], domain: Any) -> None:
        merged: list[tuple[int, Any]] = []
        for letter, c in factors:
            # exp(aX) exp(bX) = exp((a+b)X): merging adjacent factors shortens the product.
            if merged and merged[-1][0] == letter:
                merged[-1] = (letter, merged[-1][1] + c)
            else:
                merged.append((letter, c))
        self.domain = domain
        self.factors = [(x, c) for x, c in merged if c != domain.zero]
        self._inverse_factorial = [domain.one]
        self._terms = [[domain.one] for _ in self.factors]  # c^j / j!
        # _parts[k][n]: the grade-n part of the product of the first k factors.
        self._parts: list[list[Series]] = [[{(): domain.one}] for _ in range(len(self.factors) + 1)]

    def grade(self, n: int) -> Series:
        """The words of length n with their (non-zero) coefficients."""
        while len(self._parts[0]) <= n:
            self._extend()
        return self._parts[-1][n]

    def exact(self, n: int) -> Any:
        """The coefficient 1/n! of every word of length n in exp(h Σ X)."""
        self.grade(n)
        return self._inverse_factorial[n]

    def _extend(self) -> None:
        domain = self.domain
        n = len(self._parts[0])
        inverse = domain.convert(sympy.Rational(1, n))
        self._inverse_factorial.append(self._inverse_factorial[-1] * inverse)
        self._parts[0].append({})
        for k, (letter, c) in enumerate(self.factors):
            terms = self._terms[k]
            terms.append(terms[-1] * c * inverse)
            previous, part = self._parts[k], {}  # type: list[Series], Series
            for j in range(n + 1):
                suffix, coefficient = (letter,) * j, terms[j]
                for word, x in previous[n - j].items():
                    key = word + suffix
                    part[key] = part.get(key, domain.zero) + x * coefficient
            self._parts[k + 1].append(part)
