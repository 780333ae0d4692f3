"""A declaration's coefficients, held once: a `Coefficients` record of `NumberArray`s of parsed
entries, named as the declaration names them (`tableau.numbers.A[1][0]`), whose values, balls,
raw forms and roundings every reader uses; `vector` and `matrix` are the one conversion to it."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, final

import sympy

from ...errors import DeclarationError
from .limits import VALID_ENTRY
from .numbers import Number, as_list, parse_number


@final
@dataclass(frozen=True)
class NumberArray(Sequence[Any]):
    """A vector of `Number`s, or a matrix: a vector of row vectors.

    - `key`: the name the declaration gives it (`"b"`; row i of `"A"` is `"A[i]"`), so that
      an error names any entry.
    - `items`: the entries of a vector, the rows of a matrix.
    - `names`: the entries' own keys where the declaration places them elsewhere than
      `key[i]` (a splitting's coefficients, `"steps[2][1]"`); empty otherwise.
    """

    key: str
    items: tuple[Any, ...]
    names: tuple[str, ...] = field(default=(), compare=False)  # where, not what

    def name(self, i: int) -> str:
        """The key of entry (or row) i, as an error names it."""
        return self.names[i] if self.names else f"{self.key}[{i}]"

    def __getitem__(self, i: Any) -> Any:  # an entry or a row (a slice: a tuple of them)
        return self.items[i]

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.items)

    @property
    def is_matrix(self) -> bool:
        return bool(self.items) and isinstance(self.items[0], NumberArray)

    @property
    def shape(self) -> tuple[int, ...]:
        return (len(self), *self.items[0].shape) if self.is_matrix else (len(self),)

    @property
    def flat(self) -> tuple[Number, ...]:
        """Every entry, row by row."""
        return tuple(x for row in self for x in row.flat) if self.is_matrix else self.items

    def _nested(self, leaf: Callable[[Number], Any], kind: Callable[[Any], Any]) -> Any:
        return kind(row._nested(leaf, kind) if self.is_matrix else leaf(row) for row in self)

    @property
    def values(self) -> tuple[Any, ...]:
        """The exact sympy values, as nested tuples."""
        return self._nested(lambda x: x.value, tuple)

    @property
    def raw(self) -> list[Any]:
        """The entries as given, as nested lists (for writing the declaration back)."""
        return self._nested(lambda x: x.raw, list)

    def balls(self) -> list[Any]:
        """The entries as arb balls, as nested lists (call under `flint.ctx.workprec`)."""
        return self._nested(Number.ball, list)

    @property
    def rounding(self) -> Fraction:
        """The most that any entry's digits leave open (0 when every entry is exact)."""
        return max((x.rounding for x in self.flat), default=Fraction(0))

    def keyed(self) -> Iterator[tuple[str, Number]]:
        """(`"A[0][1]"`, entry) for every entry, row by row."""
        for i, x in enumerate(self):
            yield from x.keyed() if isinstance(x, NumberArray) else [(self.name(i), x)]

    def map(self, change: Callable[[Number, str], Number]) -> NumberArray:
        """The array with `change(entry, key)` for every entry (a family's member, a precision)."""
        items = (
            x.map(change) if isinstance(x, NumberArray) else change(x, self.name(i))
            for i, x in enumerate(self)
        )
        return NumberArray(self.key, tuple(items), self.names)

    def judged(self, precision: Fraction | None) -> NumberArray:
        """Every entry judged at a declared precision at least (`Number.at_precision`)."""
        return self if precision is None else self.map(lambda x, _: x.at_precision(precision))


@final
@dataclass(frozen=True)
class Coefficients:
    """A declaration's coefficient arrays in its order (`numbers.A`, `numbers.b`, ...).

    - `arrays`: name -> `NumberArray`.
    """

    arrays: Mapping[str, NumberArray]

    def __getattr__(self, name: str) -> NumberArray:
        arrays = self.__dict__.get("arrays", {})
        if name not in arrays:
            raise AttributeError(f"no coefficients {name!r}: the declaration has {list(arrays)}")
        return arrays[name]

    def __contains__(self, name: str) -> bool:
        return name in self.arrays

    @property
    def every(self) -> NumberArray:
        """All the arrays as one, in the declaration's order."""
        return NumberArray("", tuple(self.arrays.values()))

    @property
    def flat(self) -> tuple[Number, ...]:
        return self.every.flat

    @property
    def values(self) -> list[sympy.Expr]:
        return [x.value for x in self.flat]

    @property
    def raw(self) -> dict[str, list[Any]]:
        """Each array as given, for writing the declaration back."""
        return {k: a.raw for k, a in self.arrays.items()}

    @property
    def rounding(self) -> Fraction:
        return self.every.rounding

    def keyed(self) -> Iterator[tuple[str, Number]]:
        return self.every.keyed()

    def map(self, change: Callable[[Number, str], Number]) -> Coefficients:
        return Coefficients({k: a.map(change) for k, a in self.arrays.items()})


def _listed(
    raw: Any, key: str, source: str | Path | None, problem: str, valid: str, empty: bool = True
) -> list[Any]:
    listed = as_list(raw)
    if (
        isinstance(listed, (str, bytes))
        or not isinstance(listed, Sequence)
        or not (empty or listed)
    ):
        raise DeclarationError(problem, key=key, value=listed, valid=valid, source=source)
    return list(listed)


def vector(
    raw: Any, key: str, source: str | Path | None = None, *, precision: Fraction | None = None,
    length: int | None = None, what: str = "entries", because: str | None = None,
) -> NumberArray:  # fmt: skip
    """Parse a list (or 1-d array) of coefficients named `key`, judged at a declared `precision`;
    with `length`, refuse another length, saying `because` why it is needed ("A has 2 stages")
    and that the declaration should give exactly `length` of `what` ("weights")."""
    items = _listed(raw, key, source, "expected a list of numbers", VALID_ENTRY)
    found = NumberArray(
        key, tuple(parse_number(x, f"{key}[{i}]", source) for i, x in enumerate(items))
    )
    if length is not None and len(found) != length:
        raise DeclarationError(
            f"{key} has {len(found)} entries but {because or f'needs {length}'}",
            key=key,
            value=[x.raw for x in found],
            valid=f"give exactly {length} {what}",
            source=source,
        )
    return found.judged(precision)


def matrix(
    raw: Any, key: str, source: str | Path | None = None, *, rows: int | None = None,
    cols: int | None = None, precision: Fraction | None = None, valid: str | None = None,
) -> NumberArray:  # fmt: skip
    """Parse a non-empty list of rows named `key`: `rows` × `cols` (None: as many rows as given;
    `cols` None: square); judged at a declared `precision`; `valid` says what shape is."""
    example = valid or f"e.g. {key} = [[0, 0], [1, 0]]"
    given = _listed(raw, key, source, f"{key} must be a non-empty list of rows", example, False)
    problem = f"each row of {key} must be a list"
    parsed = NumberArray(key, tuple(
        vector(_listed(row, f"{key}[{i}]", source, problem, example), f"{key}[{i}]", source)
        for i, row in enumerate(given)
    ))  # fmt: skip
    if rows is not None and len(parsed) != rows:
        raise DeclarationError(
            f"{key} has {len(parsed)} rows but needs {rows}",
            key=key,
            value=given,
            valid=example,
            source=source,
        )
    width = len(parsed) if cols is None else cols
    for i, row in enumerate(parsed):
        if len(row) != width:
            square = f": {key} must be square ({width} rows)" if cols is None else ""
            raise DeclarationError(
                f"{key} row {i} has {len(row)} entries but needs {width}{square}",
                key=f"{key}[{i}]",
                value=row.raw,
                valid=valid or f"every row needs exactly {width} entries",
                source=source,
            )
    return parsed.judged(precision)
