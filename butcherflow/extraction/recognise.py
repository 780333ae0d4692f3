"""Which catalog entry a declaration is: an index of the catalog keyed by a canonical form of the
coefficients, exact (`recognised(method)`).

The canonical form of a declaration is its family and its exact coefficients (sympy values,
simplified), with field names replaced by their order of first use (a splitting's `attn, mlp`
and the catalog's `A, B` alike) and a multistep method's coefficients scaled to α_k = 1. A
declaration with a numeric coefficient (a float's digits) or a free symbol has no canonical
form: recognition is exact or nothing. Each family states its form in `FORMS`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
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

Key = tuple[Any, ...]


def _values(xs: Iterable[Any]) -> tuple[str, ...]:
    return tuple(
        str(x) if isinstance(x, sympy.Rational) else str(sympy.nsimplify(sympy.simplify(x)))
        for x in xs
    )


def _matrix(rows: Sequence[Sequence[Any]]) -> tuple[tuple[str, ...], ...]:
    return tuple(_values(row) for row in rows)


def _renamed(names: Sequence[str]) -> tuple[int, ...]:
    first = list(dict.fromkeys(names))
    return tuple(first.index(n) for n in names)


def _multistep(m: LinearMultistep) -> Key:
    top = m.alpha[-1]
    return (_values(a / top for a in m.alpha), _values(b / top for b in m.beta))


FORMS: dict[type[Method], Callable[[Any], Key]] = {
    ButcherTableau: lambda m: (_matrix(m.A), _values(m.b)),
    Splitting: lambda m: (
        _renamed([op for op, _ in m.steps]),
        _values(c for _, c in m.steps),
        m.substep_name,
    ),
    AdditiveRungeKutta: lambda m: (_matrix(m.A), _values(m.b), _renamed(m.fields)),
    LinearMultistep: _multistep,
    GeneralLinear: lambda m: (_matrix(m.A), _matrix(m.U), _matrix(m.B), _matrix(m.V)),
}


def canonical(method: Method) -> Key | None:
    """The canonical form of an exact declaration, or None (numeric, parametrised, or a family
    without one)."""
    form = FORMS.get(type(method))
    if form is None or getattr(method, "numeric", True) or method.symbols:
        return None
    return (method.family, *form(method))


@functools.cache
def _index() -> dict[Key, str]:
    index: dict[Key, str] = {}
    for name in sorted(catalog):
        key = canonical(catalog[name])
        if key is not None:
            index.setdefault(key, name)
    return index


def recognised(method: Method) -> str | None:
    """The name of the catalog entry `method` equals (field names aside), or None."""
    key = canonical(method)
    return None if key is None else _index().get(key)
