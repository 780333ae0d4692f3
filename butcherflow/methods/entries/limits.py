"""What one declaration entry may be: finite, real, algebraic of moderate degree, with small
exponents and short literals, so that no entry can freeze the parser or the analysis (a tower
like 9**9**9**9, 1e-99999999, ten nested square roots whose number field has degree 1024).

`numbers.py` parses entries and calls these checks; each refuses in one line naming the key.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import sympy

from ...errors import DeclarationError
from .balls import TRIG

MAX_EXPONENT = 300  # of a decimal literal
MAX_POWER = 64  # numerator and denominator of an exponent
MAX_DIGITS = 1000  # of one literal
MAX_DEGREE = 256  # algebraic degree of an exact entry
VALID_ENTRY = (
    "valid entries are ints, 'p/q' strings, Fractions, sympy expressions such as 'sqrt(6)/36' or "
    "'cos(pi/18)' (functions: sqrt, cbrt, root, sin, cos, tan of rational multiples of pi), "
    "symbol names for parametrised families, or floats, Decimals and decimal strings (numeric: "
    "known to their last digit)"
)


def check_literal(literal: str, key: str, raw: Any, source: str | Path | None) -> None:
    """Refuse literals whose exact value would be enormous before building it."""
    mantissa, _, exponent = literal.lower().partition("e")
    if exponent and abs(int(exponent)) > MAX_EXPONENT:
        raise DeclarationError(
            f"decimal exponent out of range (|exponent| <= {MAX_EXPONENT})",
            key=key,
            value=raw,
            valid=VALID_ENTRY,
            source=source,
        )
    if len(mantissa) > MAX_DIGITS:
        raise DeclarationError(
            f"number has more than {MAX_DIGITS} digits", key=key, value=raw, source=source
        )


def check_finite_real(value: sympy.Expr, key: str, raw: Any, source: str | Path | None) -> None:
    if value.has(sympy.zoo, sympy.oo, -sympy.oo, sympy.nan):
        raise DeclarationError(
            "entry is not finite", key=key, value=raw, valid=VALID_ENTRY, source=source
        )
    if value.free_symbols:
        return
    number = complex(value.evalf(30))
    if not (math.isfinite(number.real) and math.isfinite(number.imag)):
        raise DeclarationError(
            "entry is not finite", key=key, value=raw, valid=VALID_ENTRY, source=source
        )
    if abs(number.imag) > 1e-25 * max(1.0, abs(number.real)):
        raise DeclarationError(
            "entry is not a real number",
            key=key,
            value=raw,
            valid="coefficients must be real",
            source=source,
        )
    if any(
        isinstance(p.exp, sympy.Rational) and p.exp.q != 1 and p.base.is_positive is not True
        for p in value.atoms(sympy.Pow)
    ):
        # sympy reads (-1)**(1/3) as the complex principal root: a real total of such roots
        # would need complex arithmetic everywhere the entry goes (balls, number fields).
        raise DeclarationError(
            "a fractional power of a negative number is its complex principal root in sympy",
            key=key,
            value=raw,
            valid="write the real root as -(2**(1/3)) (a root of a positive number), or give "
            "the entry as a decimal",
            source=source,
        )


def degree_bound(tree: sympy.Basic) -> float:
    """An upper bound on the algebraic degree of an expression built from rationals by + − × ÷,
    rational powers and trigonometric values of rational multiples of π: the product of the
    degrees of its distinct generators (a root of degree q over its base, cos(pπ/q) of degree at
    most φ(4q)); inf for anything else (π itself)."""
    generators: dict[sympy.Basic, float] = {}

    def scan(e: sympy.Basic) -> None:
        if isinstance(e, (sympy.Rational, sympy.Symbol)):
            return
        if isinstance(e, sympy.Pow) and isinstance(e.exp, sympy.Rational):
            if e.exp.q == 1:
                scan(e.base)
            elif isinstance(e.base, sympy.Rational):  # 2^(1/3), 2^(8/15): powers of 2^(1/15)
                generators[e.base] = math.lcm(int(generators.get(e.base, 1)), int(e.exp.q))
            else:
                generators[e.base ** (1 / e.exp.q)] = degree_bound(e.base) * int(e.exp.q)
            return
        if isinstance(e, tuple(TRIG.values())):
            ratio = e.args[0] / sympy.pi  # type: ignore[attr-defined]
            q = int(ratio.q) if isinstance(ratio, sympy.Rational) else 0
            generators[e] = float(sympy.totient(4 * q)) if q else math.inf
            return
        if isinstance(e, (sympy.Add, sympy.Mul)):
            for arg in e.args:
                scan(arg)
            return
        generators[e] = math.inf

    scan(tree)
    return math.prod(generators.values(), start=1.0)


def check_powers(tree: sympy.Basic, key: str, raw: Any, source: str | Path | None) -> None:
    """Every exponent must be a small rational (2, 1/3, -1/5): no towers, no huge powers; trig
    functions take rational multiples of π (so that the value is an algebraic number).

    Runs on the unevaluated tree, innermost powers first, so each exponent is evaluated only
    after the powers inside it have been found small.
    """
    for arg in tree.args:
        check_powers(arg, key, raw, source)
    if isinstance(tree, sympy.Pow):
        exponent = tree.exp.doit()
        if not (
            isinstance(exponent, sympy.Rational)
            and abs(exponent.p) <= MAX_POWER
            and exponent.q <= MAX_POWER
        ):
            raise DeclarationError(
                f"exponents must be small rational numbers (|p|, q <= {MAX_POWER})",
                key=key,
                value=raw,
                valid=VALID_ENTRY,
                source=source,
            )
    if isinstance(tree, tuple(TRIG.values())):
        ratio = sympy.nsimplify(tree.args[0].doit() / sympy.pi)  # type: ignore[attr-defined]
        if not isinstance(ratio, sympy.Rational) or ratio.q > 10 * MAX_DEGREE:
            raise DeclarationError(
                "trigonometric functions take rational multiples of pi (whose values are "
                "algebraic numbers)",
                key=key,
                value=raw,
                valid="e.g. cos(pi/18), or give the value as a decimal",
                source=source,
            )


def check_degree(value: sympy.Expr, raw: Any, key: str, source: str | Path | None) -> None:
    """Exact entries must be algebraic numbers of moderate degree (the analysis works in the
    number field they generate; ten nested roots would make it a field of degree 1024)."""
    degree = degree_bound(value)
    if degree == math.inf:
        raise DeclarationError(
            "entry is not an algebraic number (pi alone is transcendental); exact analysis "
            "needs algebraic entries: give it as a decimal",
            key=key,
            value=raw,
            valid=VALID_ENTRY,
            source=source,
        )
    if degree > MAX_DEGREE:
        raise DeclarationError(
            f"entry is an algebraic number of too high a degree for exact analysis (up to "
            f"{degree:.0f} > {MAX_DEGREE}: e.g. more than eight nested square roots); give it as a "
            "decimal",
            key=key,
            value=raw,
            valid=VALID_ENTRY,
            source=source,
        )
