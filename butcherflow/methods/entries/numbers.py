"""Parsing of declaration entries; what the digits of a numeric entry promise is `rounding.py`.

One semantics for every family (docs/guide.md and docs/concepts.md say the same):

- **Exact** entries are ints, `fractions.Fraction`s, strings such as `"1/6"`, `"sqrt(6)/36"`,
  `"1/(2 - 2**(1/3))"`, `"1/2 + sqrt(3)*cos(pi/18)/3"` (trigonometric values of rational
  multiples of π are algebraic numbers), symbols of a parametrised family (`"g"`) and sympy
  expressions. They are exact.
- A **float** (Python's or numpy's) means its exact binary value, known to within 2⁻⁴⁴ of its
  size (256 units in its last binary place: double precision, allowing for the rounding of a
  short computation): `0.5` is 1/2 ± 2.8·10⁻¹⁴. It is never read as a shorter decimal. An
  element of a float32, float16 or bfloat16 array or tensor is known to 256 units in the last
  place of its own format (a float32 to 2⁻¹⁵ of its size), not a double's.
- A **decimal string** (`"0.1666"`, `"1.5e-3"`) or `decimal.Decimal` means the rational number
  its digits spell, known
  to half a unit in its last digit (`"0.1666"` ± 5·10⁻⁵). A decimal inside an expression
  (`"0.1/1000"`) carries its rounding through the expression (interval arithmetic).
- A numeric entry whose value is exactly zero (`0.0`, `"0.00"`) is an exact zero: zeros are the
  structure of a tableau (explicit, diagonally implicit), never a measurement.

Every entry keeps `raw`, the form it was given in (int, float or string), so that a declaration
can be written back to a file and read again as the same declaration (`Method.to_table`).
"""

from __future__ import annotations

import keyword
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import flint
import sympy
from sympy.parsing.sympy_parser import convert_xor, parse_expr, standard_transformations

from ...errors import DeclarationError
from .balls import TRIG, ball
from .limits import (
    MAX_DIGITS,
    VALID_ENTRY,
    check_degree,
    check_finite_real,
    check_literal,
    check_powers,
)
from .rounding import (
    covering_text,
    expression_rounding,
    float_rounding,
    literal_rounding,
)
from .typeset import untypeset

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
    **TRIG,
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
Raw = int | float | str


@dataclass(frozen=True)
class Number:
    """One parsed entry.

    **Arguments:**

    - `value`: the exact sympy value (a float's binary value, a decimal's rational value).
    - `rounding`: how far the intended value may lie from `value` (absolute, exact); `0` for
      exact entries.
    - `raw`: the entry as given, in a form that `parse_number` reads back to this `Number`.
    """

    value: sympy.Expr
    rounding: Fraction = Fraction(0)
    raw: Raw = 0

    @property
    def numeric(self) -> bool:
        return self.rounding > 0

    def at_precision(self, precision: Fraction) -> Number:
        """This entry judged at `precision` at least (a declared precision); zeros stay exact."""
        if self.value == 0 or precision <= self.rounding:
            return self
        return Number(self.value, precision, self.raw)

    def ball(self) -> flint.arb:
        """This entry as an arb ball at the current working precision: its value, widened by
        its rounding (a point ball for an exact entry)."""
        return ball(self.value, self.rounding)


# The formats narrower than a double that arrays and tensors hold (numpy, torch, jax dtypes by
# name), with their stored mantissa bits: their elements are known to their own last place.
NARROW_FLOATS = {"float32": 23, "float16": 10, "bfloat16": 7}


def _refuse(problem: str, raw: Any, key: str, source: str | Path | None) -> DeclarationError:
    return DeclarationError(problem, key=key, value=raw, valid=VALID_ENTRY, source=source)


def _names_in(text: str, raw: str, key: str, source: str | Path | None) -> dict[str, Any]:
    """The functions and family symbols an entry may use; anything else is refused."""
    names: dict[str, Any] = dict(_FUNCTIONS)
    for name in set(_IDENTIFIER.findall(_DECIMAL.sub(" ", _SCIENTIFIC_INT.sub(" ", text)))):
        if name in _FUNCTIONS:
            continue
        if name.lower() in _NOT_FINITE:
            raise _refuse("entry is not finite", raw, key, source)
        if name.startswith("_") or name in _RESERVED or keyword.iskeyword(name):
            raise _refuse(f"'{name}' cannot be a symbol", raw, key, source)
        names[name] = sympy.Symbol(name, real=True)
    return names


def _parse_string(raw: str, key: str, source: str | Path | None) -> Number:
    try:
        text = untypeset(raw.strip())  # LaTeX or a PDF's typeset characters, as entry syntax
    except DeclarationError as error:  # a form read two ways: named here, where the key is known
        raise DeclarationError(
            error.problem, key=key, value=raw, valid=error.valid, source=source
        ) from None
    if not text:
        raise _refuse("entry is empty", raw, key, source)
    if not _ALLOWED_CHARS.match(text):
        raise _refuse("entry contains characters that cannot appear in a number", raw, key, source)
    if any(len(d) > MAX_DIGITS for d in _DIGITS.findall(text)):
        raise DeclarationError(
            f"number has more than {MAX_DIGITS} digits", key=key, value=raw, source=source
        )
    if _ATTRIBUTE.search(text):
        raise _refuse("entry uses attribute access", raw, key, source)
    names = _names_in(text, raw, key, source)
    literals: list[tuple[sympy.Rational, Fraction]] = []

    def exact(match: re.Match[str]) -> str:
        check_literal(match.group(0), key, raw, source)
        value = sympy.Rational(Fraction(match.group(0)))
        literals.append((value, literal_rounding(match.group(0)) if value != 0 else Fraction(0)))
        return f"_D{len(literals) - 1}"

    rewritten = _SCIENTIFIC_INT.sub(exact, _DECIMAL.sub(exact, text))
    boxes = {sympy.Symbol(f"_D{i}", real=True): lit for i, lit in enumerate(literals)}
    names.update({str(symbol): symbol for symbol in boxes})
    tree = _parse_tree(rewritten, names, raw, key, source)
    if boxes and tree.free_symbols - set(boxes):
        raise _refuse(
            "a parametrised entry must be exact (decimals have no meaning in a family)",
            raw,
            key,
            source,
        )
    value = tree.subs({symbol: lit[0] for symbol, lit in boxes.items()}) if boxes else tree
    if not isinstance(value, sympy.Expr) or getattr(value, "is_Matrix", False):
        raise _refuse("entry is not a number", raw, key, source)
    check_finite_real(value, key, raw, source)
    check_degree(value, raw, key, source)
    return Number(value, expression_rounding(tree, boxes, value), raw)


def parse_expression(
    text: str, names: Mapping[str, Any], key: str, source: str | Path | None, valid: str
) -> sympy.Expr:
    """`text` as a sympy expression in `names`, the entry functions (`sqrt`, ...) and symbols,
    with no builtins and no attribute access, its tree validated as an entry's is (a starting
    procedure's `"h*f(x - h)"`); one `DeclarationError` saying `valid` for anything else."""
    try:
        if _ATTRIBUTE.search(text):
            raise _refuse("entry uses attribute access", text, key, source)
        scope = {**_names_in(text, text, key, source), **names}
        return _parse_tree(text, scope, text, key, source)
    except DeclarationError as error:
        raise DeclarationError(
            error.problem, key=key, value=text, valid=valid, source=source
        ) from None


def _parse_tree(
    text: str, names: dict[str, Any], raw: str, key: str, source: str | Path | None
) -> sympy.Expr:
    """Parse `text` (validating the unevaluated tree before computing anything)."""
    parsed: dict[bool, Any] = {}
    for evaluate in (False, True):
        try:
            parsed[evaluate] = parse_expr(
                text,
                local_dict=names,
                global_dict=_PARSER_GLOBALS,
                transformations=(*standard_transformations, convert_xor),
                evaluate=evaluate,
            )
        except DeclarationError:
            raise
        except Exception as error:  # sympy raises many unrelated types for bad syntax
            raise _refuse(
                f"entry is not a valid expression ({type(error).__name__})", raw, key, source
            ) from None
        if not isinstance(parsed[evaluate], sympy.Expr) or getattr(
            parsed[evaluate], "is_Matrix", False
        ):
            raise _refuse("entry is not a number", raw, key, source)
        if not evaluate:
            check_powers(parsed[False], key, raw, source)
    return parsed[True]


def substitute(
    number: Number, values: Mapping[sympy.Symbol, Number], key: str, source: str | Path | None
) -> Number:
    """The entry of a family's member: `number` with `values` put in for its symbols.

    **Arguments:**

    - `number`: an entry of the family (untouched, the same object, when it has none of the
      symbols: it keeps its value, rounding and raw).
    - `values`: symbol -> the parsed value given for it (`Method.member_values`).
    - `key`, `source`: where the entry sits, for error messages.

    **Returns:** the entry the member has. A lone symbol takes the given value as it is. Other
    entries become their text with each value's text put in for its symbol (`"1 - 1/(2*a)"` with
    a = `"0.75"` is `"1 - 1/(2*(0.75))"`), parsed as any entry: the member is the method declared
    directly with that text (same value, rounding, raw). A float has no such text (a decimal
    string means its digits, not a binary value); inside an expression its rounding goes through
    the expression by interval arithmetic as a decimal's does, and the raw is a text whose own
    rounding covers the entry's (`covering_text`): a file written from that member
    reads back a little coarser, never finer. Decimals and floats are refused in an entry that
    keeps other symbols (a family is exact in its symbols), as the parser refuses them.
    """
    used = number.value.free_symbols & set(values)
    if not used:
        return number
    if number.value in values:
        return values[number.value]
    floats = any(isinstance(values[s].raw, float) and values[s].numeric for s in used)
    if not floats:
        names = {str(s): values[s] for s in used}
        pattern = r"(?<![\w.])(" + "|".join(map(re.escape, names)) + r")(?!\w)"
        text = re.sub(pattern, lambda m: f"({names[m.group(1)].raw})", str(number.raw))
        return parse_number(text, key, source)
    value = number.value.subs({s: values[s].value for s in used})
    if value.free_symbols:
        raise _refuse(
            "a parametrised entry must be exact (a float has no meaning in a family)",
            {str(s): values[s].raw for s in used},
            key,
            source,
        )
    check_finite_real(value, key, value, source)
    check_degree(value, value, key, source)
    boxes = {s: (values[s].value, values[s].rounding) for s in used}
    rounding = expression_rounding(number.value, boxes, value)
    return Number(value, rounding, covering_text(value, rounding) if rounding else str(value))


def _parse_float(raw: float, key: str, source: str | Path | None) -> Number:
    if not math.isfinite(raw):
        raise _refuse("entry is not finite", raw, key, source)
    return Number(sympy.Rational(Fraction(raw)), float_rounding(raw), raw)


def parse_number(raw: Any, key: str, source: str | Path | None = None) -> Number:
    """Parse one coefficient.

    **Arguments:**

    - `raw`: an int, Fraction, float, numpy scalar, string or sympy expression.
    - `key`: where the entry sits, for error messages (`"A[1][0]"`).
    - `source`: the declaration file, for error messages.

    **Returns:** a `Number`; raises `DeclarationError` for anything else.
    """
    if isinstance(raw, Number):
        return raw
    if isinstance(raw, bool) or raw is None:
        raise _refuse("entry is not a number", raw, key, source)
    if isinstance(raw, int):
        return Number(sympy.Integer(raw), Fraction(0), raw)
    if isinstance(raw, Fraction):
        return Number(sympy.Rational(raw.numerator, raw.denominator), Fraction(0), str(raw))
    if isinstance(raw, float):
        return _parse_float(raw, key, source)
    if isinstance(raw, str):
        return _parse_string(raw, key, source)
    if isinstance(raw, sympy.Basic):
        if not isinstance(raw, sympy.Expr) or getattr(raw, "is_Matrix", False):
            raise _refuse("entry is not a number", raw, key, source)
        check_finite_real(raw, key, raw, source)
        if raw.has(sympy.Float):
            # A sympy Float carries binary digits; keep the decimal it prints as.
            return _parse_string(str(raw), key, source)
        return (
            _parse_string(str(raw), key, source) if raw.free_symbols else _exact(raw, key, source)
        )
    if isinstance(raw, Decimal):  # its digits, as the decimal string it prints as
        if not raw.is_finite():  # 'sNaN' would otherwise read as a family's symbol
            raise _refuse("entry is not finite", raw, key, source)
        return _parse_string(str(raw), key, source)
    numpy_scalar = _from_numpy(raw)
    if numpy_scalar is not None:
        return parse_number(numpy_scalar, key, source)
    problem = f"entry of type {type(raw).__name__} is not a number"
    raise _refuse(problem, _as_given(raw), key, source)


def _as_given(raw: Any) -> Any:
    """A refused value as the user gave it: a narrow array's elements (`Number`s by now,
    `as_list`) shown as the floats they were, in nested lists too."""
    if isinstance(raw, list):
        return [_as_given(x) for x in raw]
    if isinstance(raw, Number):
        return float(raw.value) if raw.numeric else raw.raw
    return raw


def _exact(raw: sympy.Expr, key: str, source: str | Path | None) -> Number:
    check_degree(raw, raw, key, source)
    return Number(raw, Fraction(0), str(raw))


def _from_numpy(raw: Any) -> int | float | Number | None:
    """A numpy, torch or jax integer or float scalar (0-d) as the number it holds (None for
    anything else, booleans and complex numbers included): a float32, float16 or bfloat16
    scalar is known to its own last place (`narrow_float`)."""
    item = getattr(raw, "item", None)
    if getattr(raw, "shape", None) not in ((), []) or not callable(item):
        return None
    value = item()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, int):
        return value
    mantissa = _narrow_mantissa(raw)
    finite = math.isfinite(value)  # nan and inf go on to parse_number's refusal
    return narrow_float(value, mantissa) if mantissa is not None and finite else value


def _narrow_mantissa(raw: Any) -> int | None:
    """The stored mantissa bits of an array's or scalar's float format narrower than a double
    (`"float32"` in numpy and jax, `"torch.float32"` in torch), else None."""
    return NARROW_FLOATS.get(str(getattr(raw, "dtype", "")).rpartition(".")[2])


def narrow_float(value: float, mantissa: int) -> Number:
    """An element of a float32, float16 or bfloat16 array: its binary value, known to 256 units
    in that format's last place (a float32 to 2⁻¹⁵ of its size). Its raw is a decimal that
    covers that rounding (`covering_text`): written back to a file it reads back as coarse."""
    if value == 0:
        return Number(sympy.Integer(0), Fraction(0), 0)
    exact = sympy.Rational(Fraction(value))
    rounding = float_rounding(value, mantissa)
    return Number(exact, rounding, covering_text(exact, rounding))


def as_list(raw: Any) -> Any:
    """Numpy arrays and tensors (anything with `tolist`) as nested lists; other values
    unchanged. The elements of a float format narrower than a double become `Number`s known to
    that format's last place (`narrow_float`), not doubles known to 2⁻⁴⁴."""
    tolist = getattr(raw, "tolist", None)
    if not callable(tolist) or getattr(raw, "shape", ()) == ():
        return raw
    mantissa = _narrow_mantissa(raw)
    if mantissa is None:
        return tolist()

    def narrow(entry: Any) -> Any:
        if isinstance(entry, list):
            return [narrow(e) for e in entry]
        finite = isinstance(entry, float) and math.isfinite(entry)
        return narrow_float(entry, mantissa) if finite else entry

    return narrow(tolist())


def parse_precision(raw: Any, source: str | Path | None = None) -> Fraction | None:
    """A declared precision (`precision = 1e-50`): a positive number, or None for none."""
    if raw is None:
        return None
    try:
        number = parse_number(raw, "precision", source)
    except DeclarationError:
        number = None
    value = None if number is None or number.value.free_symbols else number.value
    if value is None or not value.is_Rational or not 0 < value < 1:
        raise DeclarationError(
            "a precision is a positive number below 1",
            key="precision",
            value=raw,
            valid="e.g. precision = 1e-50: every entry is then judged as known to ±1e-50",
            source=source,
        )
    return Fraction(int(value.p), int(value.q))


def is_zero(number: Number) -> bool:
    """Exactly zero (a numeric entry is zero only when its digits are)."""
    value = number.value
    if value.is_zero is not None:
        return bool(value.is_zero)
    return bool(sympy.simplify(value) == 0)
