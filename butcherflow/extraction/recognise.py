"""Which catalog entry a declaration is: an index of the catalog keyed by a canonical form of the
coefficients, exact (`recognised(method)`).

The canonical form of a declaration is its family and its exact coefficients, with field names
replaced by their order of first use (a splitting's `attn, mlp` and the catalog's `A, B`
alike) and a multistep method's coefficients scaled to α_k = 1. A declaration with a numeric
coefficient (a float's digits) or a free symbol has none: recognition is exact or nothing.
Each family states its form in `FORMS`.

Loading the whole catalog parses every entry (seconds), so the index is built from the files'
raw tables where every coefficient is a rational literal (`"1/6"`, `-1`: read with
`fractions.Fraction`, the same canonical text as sympy's rationals), and the other entries
(irrational coefficients, a LaTeX `tableau`, a family's shorthand) are loaded only for a
declaration with an irrational coefficient.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any

import sympy

from ..methods import (
    AdditiveRungeKutta,
    ButcherTableau,
    GeneralLinear,
    LinearMultistep,
    Method,
    Splitting,
    catalog,
)
from ..methods.files import read_toml

Key = tuple[Any, ...]
_RATIONAL = re.compile(r"^\s*-?\s*\d+\s*(/\s*\d+\s*)?$")


def _text(x: Any) -> str:
    """A coefficient's canonical text: a rational's `p/q`, an irrational's expanded form."""
    if isinstance(x, (Fraction, sympy.Rational)):
        return str(x)
    return str(sympy.expand(x))


def _values(xs: Iterable[Any]) -> tuple[str, ...]:
    return tuple(_text(x) for x in xs)


def _matrix(rows: Sequence[Sequence[Any]]) -> tuple[tuple[str, ...], ...]:
    return tuple(_values(row) for row in rows)


def _renamed(names: Sequence[str]) -> tuple[int, ...]:
    first = list(dict.fromkeys(names))
    return tuple(first.index(n) for n in names)


def _multistep(alpha: Sequence[Any], beta: Sequence[Any]) -> Key:
    top = alpha[-1]
    return (_values(a / top for a in alpha), _values(b / top for b in beta))


def _splitting(steps: Sequence[Sequence[Any]], substep: str) -> Key:
    return (_renamed([op for op, _ in steps]), _values(c for _, c in steps), substep)


def _start(table: Mapping[str, Any]) -> tuple[str, ...] | None:
    start = table.get("start")
    return None if start is None else tuple(str(s) for s in start)


# Per family, its canonical coefficients: of a declaration, and of a file's raw table (whose
# coefficients are `Fraction`s here); None where a raw table is not in the plain form.
FORMS: dict[
    type[Method], tuple[Callable[[Any], Key], Callable[[Mapping[str, Any]], Key | None]]
] = {
    ButcherTableau: (
        lambda m: (_matrix(m.A), _values(m.b)),
        lambda t: (_matrix(t["A"]), _values(t["b"])) if {"A", "b"} <= set(t) else None,
    ),
    Splitting: (
        lambda m: _splitting(m.steps, m.substep_name),
        lambda t: (
            _splitting(t["steps"], t.get("substep", "euler"))
            if "steps" in t and isinstance(t.get("substep", "euler"), str)
            else None
        ),
    ),
    AdditiveRungeKutta: (
        lambda m: (_matrix(m.A), _values(m.b), _renamed(m.fields)),
        lambda t: (
            (_matrix(t["A"]), _values(t["b"]), _renamed(t["fields"]))
            if {"A", "b", "fields"} <= set(t)
            else None
        ),
    ),
    LinearMultistep: (
        lambda m: _multistep(m.alpha, m.beta),
        lambda t: _multistep(t["alpha"], t["beta"]) if {"alpha", "beta"} <= set(t) else None,
    ),
    GeneralLinear: (
        lambda m: (*(_matrix(getattr(m, k)) for k in "AUBV"), _start(m.to_table())),
        lambda t: (*(_matrix(t[k]) for k in "AUBV"), _start(t)) if set("AUBV") <= set(t) else None,
    ),
}
_BY_FAMILY = {cls.family: forms for cls, forms in FORMS.items()}
_SHORTHANDS = ("tableau", "alternating", "tableaux")  # file forms a family expands
_COEFFICIENT_KEYS = ("A", "b", "U", "B", "V", "alpha", "beta", "steps")


def canonical(method: Method) -> Key | None:
    """The canonical form of an exact declaration, or None (numeric, parametrised, or a family
    without one)."""
    forms = FORMS.get(type(method))
    if forms is None or getattr(method, "numeric", True) or method.symbols:
        return None
    return (method.family, *forms[0](method))


def _rationals(value: Any) -> Any:
    """A raw coefficient (or nested list of them, steps' names kept) with every rational
    literal as a `Fraction`; None if some coefficient is not one."""
    if isinstance(value, list):
        items = [
            _rationals(v) if not isinstance(v, str) or _RATIONAL.match(v) else v for v in value
        ]
        return None if any(i is None for i in items) else items
    if isinstance(value, (bool, float)):
        return None
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, str) and _RATIONAL.match(value):
        return Fraction(value.replace(" ", ""))
    return None


def _raw_key(table: Mapping[str, Any]) -> Key | None:
    forms = _BY_FAMILY.get(str(table.get("family")))
    if forms is None or any(k in table for k in _SHORTHANDS):
        return None
    parsed = dict(table)
    for key in _COEFFICIENT_KEYS:
        if key in table:
            value = _rationals(table[key])
            if value is None or not _plain(key, value):
                return None
            parsed[key] = value
    form = forms[1](parsed)
    return None if form is None else (table["family"], *form)


def _plain(key: str, value: Any) -> bool:
    """Every coefficient under `key` a Fraction (a splitting's steps: its second items)."""
    if key == "steps":
        return all(
            isinstance(s, list) and len(s) == 2 and isinstance(s[1], Fraction) for s in value
        )
    flat = [x for row in value for x in (row if isinstance(row, list) else [row])]
    return all(isinstance(x, Fraction) for x in flat)


@functools.cache
def _indices() -> tuple[dict[Key, str], tuple[str, ...], tuple[str, ...]]:
    """The index of the entries whose files are plain rational tables, and the names of the
    others: those written in a shorthand (a LaTeX tableau, an alternating splitting), and
    those with an irrational or symbolic coefficient."""
    index: dict[Key, str] = {}
    shorthand, irrational = [], []
    for name in sorted(catalog):
        try:
            table = read_toml(catalog.path(name))
        except Exception:  # a broken file is reported when it is used, not here
            continue
        key = _raw_key(table)
        if key is not None:
            index.setdefault(key, name)
        elif any(k in table for k in _SHORTHANDS):
            shorthand.append(name)
        else:
            irrational.append(name)
    return index, tuple(shorthand), tuple(irrational)


@functools.cache
def _loaded_index(rational: bool) -> dict[Key, str]:
    """The index of the shorthand entries (and, unless `rational`, the irrational ones),
    loaded as declarations."""
    _, shorthand, irrational = _indices()
    index: dict[Key, str] = {}
    for name in shorthand if rational else (*shorthand, *irrational):
        try:
            key = canonical(catalog[name])
        except Exception:
            continue
        if key is not None:
            index.setdefault(key, name)
    return index


def recognised(method: Method) -> str | None:
    """The name of the catalog entry `method` equals (field names aside), or None."""
    key = canonical(method)
    if key is None:
        return None
    found = _indices()[0].get(key)
    if found is not None:
        return found
    values = getattr(method, "coefficient_values", ())
    return _loaded_index(all(isinstance(x, sympy.Rational) for x in values)).get(key)
