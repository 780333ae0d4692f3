"""Exact parsing of tableau entries.

An entry is an int, a `fractions.Fraction`, a string such as `"1/6"`, `"sqrt(6)/36"`,
`"1/(2 - 2**(1/3))"` or `"g"` (a symbol of a parametrised family), or a sympy expression. These are
exact. A float or a decimal string (`"0.1666"`) is also accepted: its value is kept exactly as the
digits given (a decimal is a rational number), and the entry is marked *numeric* with the rounding
error implied by its last digit; the analysis then compares order conditions against the effect of
that rounding instead of zero.
"""

from __future__ import annotations

import keyword
import math
import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import sympy
from sympy.parsing.sympy_parser import convert_xor, parse_expr, standard_transformations

from ..errors import DeclarationError

_DECIMAL = re.compile(r"(?<![\w.])([0-9]*\.[0-9]+|[0-9]+\.[0-9]*)([eE][+-]?[0-9]+)?(?![\w.])")
_SCIENTIFIC_INT = re.compile(r"(?<![\w.])([0-9]+)([eE][+-]?[0-9]+)(?![\w.])")
_ALLOWED_CHARS = re.compile(r"^[0-9A-Za-z_+\-*/().,^ \t]*$")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ATTRIBUTE = re.compile(r"\.\s*[A-Za-z_]")
_DIGITS = re.compile(r"[0-9]+")
_FUNCTIONS: dict[str, Any] = {
    "sqrt": sympy.sqrt,
    "cbrt": sympy.cbrt,
    "root": sympy.root,
    "Rational": sympy.Rational,
    "pi": sympy.pi,
}
# What sympy's parser itself emits (unevaluated trees call Add/Mul/Pow by name); not user names.
_PARSER_GLOBALS: dict[str, Any] = {
    "__builtins__": {},
    "Add": sympy.Add,
    "Mul": sympy.Mul,
    "Pow": sympy.Pow,
    "Integer": sympy.Integer,
    "Float": sympy.Float,
    "Rational": sympy.Rational,
    "Symbol": sympy.Symbol,
}
_NOT_FINITE = {"nan", "inf", "infinity", "oo", "zoo"}
_RESERVED = {"I", "E", "S", "N", "O", "Q", "Integer", "Float", "Symbol"}
# Limits that keep one entry from freezing the parser (a tower like 9**9**9**9, 1e-99999999).
MAX_EXPONENT = 300
MAX_POWER = 64
MAX_DIGITS = 1000
VALID_ENTRY = (
    "valid entries are ints, 'p/q' strings, Fractions, sympy expressions such as 'sqrt(6)/36' "
    "(functions: sqrt, cbrt, root), symbol names for parametrised families, or decimals/floats "
    "(which make the declaration numeric)"
)


@dataclass(frozen=True)
class Number:
    """One parsed entry.

    **Arguments:**

    - `value`: the exact sympy value (a decimal is kept as the rational number its digits spell).
    - `rounding`: the absolute rounding error implied by the digits given; `0` for exact entries.
    """

    value: sympy.Expr
    rounding: float = 0.0

    @property
    def numeric(self) -> bool:
        return self.rounding > 0.0


def _decimal_rounding(literal: str) -> float:
    """Half a unit in the last digit given, e.g. `"0.1667"` -> 5e-5, `"1.5e-3"` -> 5e-5 * 1e-3."""
    mantissa, _, exponent = literal.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    # Never 0: a decimal is numeric however far right its last digit sits (5e-324 is the least
    # positive float).
    return max(0.5 * 10.0 ** (-decimals + (int(exponent) if exponent else 0)), 5e-324)


def _rational_of_decimal(literal: str) -> sympy.Rational:
    return sympy.Rational(Fraction(literal))


def _check_literal(literal: str, key: str, raw: Any, source: str | Path | None) -> None:
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


def _check_finite_real(value: sympy.Expr, key: str, raw: Any, source: str | Path | None) -> None:
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


def _check_powers(tree: sympy.Basic, key: str, raw: Any, source: str | Path | None) -> None:
    """Every exponent must be a small rational (2, 1/3, -1/5): no towers, no huge powers.

    Runs on the unevaluated tree, innermost powers first, so each exponent is evaluated only
    after the powers inside it have been found small.
    """
    for arg in tree.args:
        _check_powers(arg, key, raw, source)
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


def _parse_string(raw: str, key: str, source: str | Path | None) -> Number:
    text = raw.strip()
    if not text:
        raise DeclarationError(
            "entry is empty", key=key, value=raw, valid=VALID_ENTRY, source=source
        )
    if not _ALLOWED_CHARS.match(text):
        raise DeclarationError(
            "entry contains characters that cannot appear in a number",
            key=key,
            value=raw,
            valid=VALID_ENTRY,
            source=source,
        )
    if any(len(d) > MAX_DIGITS for d in _DIGITS.findall(text)):
        raise DeclarationError(
            f"number has more than {MAX_DIGITS} digits", key=key, value=raw, source=source
        )
    if _ATTRIBUTE.search(text):
        raise DeclarationError(
            "entry uses attribute access", key=key, value=raw, valid=VALID_ENTRY, source=source
        )
    names: dict[str, Any] = dict(_FUNCTIONS)
    for name in set(_IDENTIFIER.findall(_DECIMAL.sub(" ", _SCIENTIFIC_INT.sub(" ", text)))):
        if name in _FUNCTIONS:
            continue
        if name.lower() in _NOT_FINITE:
            raise DeclarationError(
                "entry is not finite", key=key, value=raw, valid=VALID_ENTRY, source=source
            )
        if name.startswith("_") or name in _RESERVED or keyword.iskeyword(name):
            raise DeclarationError(
                f"'{name}' cannot be a symbol",
                key=key,
                value=raw,
                valid=VALID_ENTRY,
                source=source,
            )
        names[name] = sympy.Symbol(name, real=True)
    rounding = 0.0
    literals = _DECIMAL.findall(text) + _SCIENTIFIC_INT.findall(text)
    for mantissa, exponent in literals:
        _check_literal(mantissa + exponent, key, raw, source)
        rounding = max(rounding, _decimal_rounding(mantissa + exponent))

    def exact(match: re.Match[str]) -> str:
        r = _rational_of_decimal(match.group(0))
        return f"_R({r.p}, {r.q})"

    rewritten = _SCIENTIFIC_INT.sub(exact, _DECIMAL.sub(exact, text))
    names["_R"] = sympy.Rational
    parsed: dict[str, sympy.Basic] = {}
    for evaluate in (False, True):  # validate the unevaluated tree before computing anything
        try:
            parsed[str(evaluate)] = parse_expr(
                rewritten,
                local_dict=names,
                global_dict=_PARSER_GLOBALS,
                transformations=(*standard_transformations, convert_xor),
                evaluate=evaluate,
            )
        except DeclarationError:
            raise
        except Exception as error:  # sympy raises many unrelated types for bad syntax
            raise DeclarationError(
                f"entry is not a valid expression ({type(error).__name__})",
                key=key,
                value=raw,
                valid=VALID_ENTRY,
                source=source,
            ) from None
        if not isinstance(parsed[str(evaluate)], sympy.Expr):
            raise DeclarationError(
                "entry is not a number", key=key, value=raw, valid=VALID_ENTRY, source=source
            )
        if not evaluate:
            _check_powers(parsed["False"], key, raw, source)
    value = parsed["True"]
    if not isinstance(value, sympy.Expr) or getattr(value, "is_Matrix", False):
        raise DeclarationError(
            "entry is not a number", key=key, value=raw, valid=VALID_ENTRY, source=source
        )
    _check_finite_real(value, key, raw, source)
    return Number(value, rounding)


def parse_number(raw: Any, key: str, source: str | Path | None = None) -> Number:
    """Parse one coefficient exactly.

    **Arguments:**

    - `raw`: an int, Fraction, float, string or sympy expression.
    - `key`: where the entry sits, for error messages (`"A[1][0]"`).
    - `source`: the declaration file, for error messages.

    **Returns:** a `Number`; raises `DeclarationError` for anything else.
    """
    if isinstance(raw, Number):
        return raw
    if isinstance(raw, bool) or raw is None:
        raise DeclarationError(
            "entry is not a number", key=key, value=raw, valid=VALID_ENTRY, source=source
        )
    if isinstance(raw, int):
        return Number(sympy.Integer(raw))
    if isinstance(raw, Fraction):
        return Number(sympy.Rational(raw.numerator, raw.denominator))
    if isinstance(raw, float):
        if not math.isfinite(raw):
            raise DeclarationError(
                "entry is not finite", key=key, value=raw, valid=VALID_ENTRY, source=source
            )
        literal = repr(raw)
        _check_literal(literal, key, raw, source)
        return Number(_rational_of_decimal(literal), _decimal_rounding(literal))
    if isinstance(raw, str):
        return _parse_string(raw, key, source)
    if isinstance(raw, sympy.Basic):
        if not isinstance(raw, sympy.Expr) or getattr(raw, "is_Matrix", False):
            raise DeclarationError(
                "entry is not a number", key=key, value=raw, valid=VALID_ENTRY, source=source
            )
        _check_finite_real(raw, key, raw, source)
        if raw.has(sympy.Float):
            # A sympy Float carries binary digits; keep the decimal it prints as, like a float.
            return _parse_string(str(raw), key, source)
        return Number(raw)
    raise DeclarationError(
        f"entry of type {type(raw).__name__} is not a number",
        key=key,
        value=raw,
        valid=VALID_ENTRY,
        source=source,
    )


def parse_vector(raw: Any, key: str, source: str | Path | None = None) -> tuple[Number, ...]:
    """Parse a list of coefficients; `key` names the list (`"b"`)."""
    if isinstance(raw, (str, bytes)) or not isinstance(raw, (list, tuple)):
        raise DeclarationError(
            "expected a list of numbers", key=key, value=raw, valid=VALID_ENTRY, source=source
        )
    return tuple(parse_number(entry, f"{key}[{i}]", source) for i, entry in enumerate(raw))


def is_zero(number: Number) -> bool:
    """Exactly zero (a numeric entry is zero only when its digits are)."""
    value = number.value
    if value.is_zero is not None:
        return bool(value.is_zero)
    return bool(sympy.simplify(value) == 0)


def to_latex(value: sympy.Expr) -> str:
    """LaTeX of an exact value (used by reports and the gallery)."""
    return sympy.latex(value)
