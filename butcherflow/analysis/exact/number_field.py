"""Exact arithmetic in a number field QQ(θ) with flint polynomials, for the order conditions.

sympy's algebraic-field elements are dense polynomials multiplied and reduced in Python
(Gauss-Legendre 5, a degree-16 field, spent most of its proof there). Here an element is a flint
`fmpq_poly` in θ of degree < d, and a product is one flint product reduced modulo the minimal
polynomial of θ, in C. Nothing is approximated: `element` converts back to sympy's field exactly.
"""

from __future__ import annotations

from typing import Any, final

import flint
import sympy
from sympy.polys.domains import QQ
from sympy.polys.numberfields.minpoly import minpoly

from ...methods.entries.precision import known_to_double


@final
class NumberField:
    """A sympy algebraic field `QQ<θ>` with its elements as flint polynomials in θ.

    **Arguments:**

    - `domain`: the algebraic field (see `of`).
    """

    def __init__(self, domain: Any) -> None:
        self.domain = domain
        self.modulus = flint.fmpq_poly([flint.fmpq(c) for c in reversed(domain.mod.to_list())])
        self.zero = flint.fmpq_poly([])
        self.one = flint.fmpq_poly([1])
        self._theta: tuple[int, flint.arb] | None = None

    @classmethod
    def of(cls, domain: Any) -> NumberField | None:
        """The flint arithmetic of `domain`, or None when it is not an algebraic field (QQ's
        elements are flint rationals already; polynomial rings keep sympy's arithmetic)."""
        return cls(domain) if domain.is_AlgebraicField else None

    def convert(self, element: Any) -> flint.fmpq_poly:
        """An element of the sympy field as a polynomial in θ."""
        return flint.fmpq_poly([flint.fmpq(c) for c in reversed(element.to_list())])

    def reduce(self, x: flint.fmpq_poly) -> flint.fmpq_poly:
        """x modulo the minimal polynomial of θ."""
        return x % self.modulus

    def element(self, x: flint.fmpq_poly) -> Any:
        """x as an element of the sympy field, exactly."""
        coefficients = [QQ.convert(c) for c in reversed(x.coeffs())]
        return self.domain.dtype.from_list(coefficients, self.domain.mod.to_list(), QQ)

    def to_float(self, x: flint.fmpq_poly) -> float:
        """x(θ) as a float: θ enclosed in a ball, refined until the value is known to double
        precision."""
        if x == 0:
            return 0.0
        digits = 60
        while True:
            with flint.ctx.workprec(4 * digits):
                theta, value = self._theta_ball(digits), flint.arb(0)
                for c in reversed(x.coeffs()):  # Horner, highest degree first
                    value = value * theta + c
                if known_to_double(value):
                    return float(value.mid())
            digits *= 4

    def _theta_ball(self, digits: int) -> flint.arb:
        """θ to within 10^−digits (relative), as a ball."""
        if self._theta is None or self._theta[0] < digits:
            theta = sympy.N(self.domain.ext.as_expr(), digits + 10)
            if theta.as_real_imag()[1] != 0:
                raise ValueError(f"{self.domain} is not a real field")
            mid = flint.arb(str(theta))
            error = (abs(mid) + 1) * flint.arb(10) ** (-digits)
            self._theta = (digits, mid + flint.arb(0, error.upper()))
        return self._theta[1]

    def __str__(self) -> str:
        return str(self.domain)


# The converters of `to_sympy`, one per field (its minimal polynomial and generator).
_CONVERTERS: dict[tuple[Any, ...], tuple[list[Any], list[sympy.Expr], Any]] = {}


def to_sympy(domain: Any, element: Any) -> sympy.Expr:
    """An element of a sympy algebraic field as an expression in the field's own generators
    (cos(pi/7), sqrt(30), ...), equal to `domain.to_sympy(element)`.

    sympy writes θ = Σ cᵢgᵢ, reduces the powers θᵏ modulo the gᵢ's minimal polynomials in a
    polynomial ring (fast) and then expands each θᵏ as one expression, which for a field of
    degree 48 took most of a minute. Here each power is kept in the ring, an element is one
    linear combination there, and only the monomials in the gᵢ that it uses are expanded, each
    once per field.
    """
    if not domain.is_AlgebraicField:
        return domain.to_sympy(element)
    powers, generators, ring = _converter(domain)
    combined = ring.zero
    for c, power in zip(reversed(element.to_list()), powers, strict=False):
        if c:
            combined += power * c
    terms = []
    for monomial, c in combined.items():
        factors = [g**e for g, e in zip(generators, monomial, strict=True) if e]
        terms.append(QQ.to_sympy(c) * sympy.expand(sympy.Mul(*factors)))
    return sympy.Add(*terms)


def _converter(domain: Any) -> tuple[list[Any], list[sympy.Expr], Any]:
    """θ⁰, …, θ^(d−1) as polynomials in the field's generators, reduced by their minimal
    polynomials; the generators; the ring."""
    key = (tuple(domain.mod.to_list()), domain.ext.as_expr())
    if key not in _CONVERTERS:
        ext = domain.ext.as_expr()
        pairs = list(ext.as_coefficients_dict().items()) if ext.is_Add else [(ext, sympy.S.One)]
        generators = [g for g, _ in pairs]
        names = sympy.symbols(f"g:{len(generators)}", cls=sympy.Dummy)
        ring, *gens = sympy.polys.rings.ring(names, QQ)
        theta = sum(
            (QQ.from_sympy(c) * x for (_, c), x in zip(pairs, gens, strict=True)), ring.zero
        )
        minimal = [ring.from_expr(minpoly(g, x)) for g, x in zip(generators, names, strict=True)]
        powers = [ring.one]
        for _ in range(1, domain.mod.degree()):
            powers.append((powers[-1] * theta).rem(minimal))
        _CONVERTERS[key] = (powers, generators, ring)
    return _CONVERTERS[key]
