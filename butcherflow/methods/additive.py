"""Additive Runge-Kutta methods: y' = Σ_X f_X(y), each field call with its own coefficients.

A Transformer layer whose branches are distinct fields (attention, feed-forward) and whose branch
inputs are not simply "everything so far" (LIMe's softmax mixtures of earlier states,
x-transformers' `integrate_layers`) is neither a splitting (sequential Euler steps) nor one
tableau of a summed field. It is an additive method, written call by call:

    Yᵢ = y + h Σⱼ aᵢⱼ Kⱼ,   Kᵢ = f_{Xᵢ}(Yᵢ),   y₁ = y + h Σᵢ bᵢ Kᵢ,

call i evaluating field Xᵢ (`fields[i]`). The Kennedy-Carpenter form (one tableau per field
over shared stages, every stage evaluating every field: IMEX methods) is the same method with
one call per (stage, field): `AdditiveRungeKutta.from_tableaux`. Its order is proved over trees
coloured by field and its stability function has one variable per field (`analysis/additive`);
when every call evaluates the same field it is the tableau (A, b) (`equal_fields`).
See docs/concepts.md, "Additive methods".
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any, ClassVar, final

import sympy

from ..errors import DeclarationError
from .base import CoefficientMethod, Layer
from .entries.arrays import Coefficients
from .entries.numbers import parse_number
from .tableau import ButcherTableau

FIELD_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")


@final
class AdditiveRungeKutta(CoefficientMethod):
    """An additive Runge-Kutta method, one field per call.

    **Arguments:**

    - `A` `(s, s)`, `b` `(s,)`: the coefficients of the s calls, entries as a tableau's (exact
      strings, integers, floats, decimals).
    - `fields`: the field each call evaluates, e.g. `["attn", "ff"]`: names of letters, digits,
      `_` and `.` (a module path).
    - `precision`: as a tableau's: the relative precision of numeric entries.
    - `name`, `order`, `title`, `reference`, `source`: as every declaration's.

    Attributes: `A`, `b` (sympy values), `fields`, `operators` (the distinct fields in order of
    first call), `stages` (s, the number of calls), `numbers` (the parsed A and b), `rounding`,
    `precision`, `equal_fields` (the `ButcherTableau` (A, b): what the calls compute when every
    one of them evaluates the same field).
    """

    family: ClassVar[str] = "additive"
    keys: ClassVar[tuple[str, ...]] = ("A", "b", "fields", "tableaux", "precision")
    required: ClassVar[tuple[str, ...]] = ("A", "b", "fields")

    numbers: Coefficients  # A, b
    fields: tuple[str, ...]
    equal_fields: ButcherTableau

    def __init__(
        self,
        A: Sequence[Sequence[Any]],
        b: Sequence[Any],
        fields: Sequence[str],
        *,
        precision: Any = None,
        name: str | None = None,
        order: int | None = None,
        title: str | None = None,
        reference: str | None = None,
        source: str | Path | None = None,
    ) -> None:
        self._set_common(name, order, title, reference, source)
        # the entries are a tableau's: its parser names a bad one by key (A[1][0], b[2])
        tableau = ButcherTableau(
            A, b, name=f"{self.name}-equal-fields", precision=precision, source=self.source
        )
        if tableau.symbols:
            raise self.error(
                "an additive method's coefficients are numbers",
                key="A",
                value=sorted(map(str, tableau.symbols)),
                valid="exact or numeric entries (parametrised additive methods are not declared)",
            )
        self._set(
            numbers=Coefficients({k: tableau.numbers.arrays[k] for k in ("A", "b")}),
            fields=_field_names(fields, tableau.stages, self.source),
            precision=tableau.precision,
            _precision_raw=precision,
            equal_fields=tableau,
        )

    def _declared(self) -> dict[str, Any]:
        return {**self.numbers.raw, "fields": list(self.fields), "precision": self._precision_raw}

    @property
    def rounding(self) -> Fraction:
        """As the tableau's it equals (`equal_fields`), the roundings of its row sums included."""
        return self.equal_fields.rounding

    @property
    def A(self) -> tuple[tuple[sympy.Expr, ...], ...]:
        return self.equal_fields.A

    @property
    def b(self) -> tuple[sympy.Expr, ...]:
        return self.equal_fields.b

    @classmethod
    def from_tableaux(cls, tableaux: Mapping[str, Any], **kwargs: Any) -> AdditiveRungeKutta:
        """The Kennedy-Carpenter form: per field X a tableau (A⁽ˣ⁾, b⁽ˣ⁾) over the same s
        stages, every stage evaluating every field (IMEX methods: an explicit and an implicit
        tableau). Calls are (stage, field) pairs, stage by stage; a call no coefficient reads
        (its column of A⁽ˣ⁾ and b⁽ˣ⁾ zero) is left out.

        **Arguments:** `tableaux`: field -> `(A, b)` or `{"A": ..., "b": ...}`; `kwargs`: the
        constructor's others.

        **Returns:** the method, one call per (stage, field) that is used.
        """
        A, b, fields = calls_of_tableaux(tableaux, kwargs.get("source"))
        return cls(A, b, fields, **kwargs)

    @classmethod
    def expand(cls, data: Mapping[str, Any]) -> dict[str, Any]:
        """A file's `[tableaux.X]` tables (A and b per field, the Kennedy-Carpenter form) as the
        calls' A, b and fields."""
        expanded = dict(data)
        if "tableaux" not in expanded:
            return expanded
        given = [key for key in ("A", "b", "fields") if key in expanded]
        if given:
            raise DeclarationError(
                "the calls are given once",
                key="tableaux",
                value=given,
                valid="either [tableaux.X] tables (A and b per field) or A, b and fields",
            )
        A, b, fields = calls_of_tableaux(expanded.pop("tableaux"))
        return {**expanded, "A": A, "b": b, "fields": fields}

    @property
    def stages(self) -> int:
        return len(self.b)

    @property
    def operators(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.fields))

    @property
    def is_explicit(self) -> bool:
        return self.equal_fields.is_explicit

    def by_field(self) -> tuple[dict[str, list[list[Any]]], dict[str, list[Any]]]:
        """Per field X the s×s matrix and weights of the calls of X (other columns zero): the
        coloured form the order conditions read (`analysis/exact/weights.py`)."""
        return split_by_field(self.fields, self.A, self.b, sympy.Integer(0))

    @property
    def layer(self) -> Layer:
        if not self.is_explicit:
            return Layer(
                False,
                "not compiled: an implicit additive method (IMEX) needs a solve per stage, "
                "which the compiler has for one shared field only",
                key="A",
                valid="an explicit method (strictly lower-triangular A)",
            )
        names = ", ".join(self.operators)
        return Layer(True, f"bf.compile: one module per field ({names}), one call per row of A")


def _field_names(fields: Any, calls: int, source: str | None) -> tuple[str, ...]:
    given = list(fields) if isinstance(fields, (list, tuple)) else fields
    if not isinstance(given, list) or len(given) != calls:
        raise DeclarationError(
            "fields names the field of each call",
            key="fields",
            value=fields,
            valid=f"a list of {calls} field names, one per row of A",
            source=source,
        )
    for i, field in enumerate(given):
        if not isinstance(field, str) or not FIELD_NAME.match(field):
            raise DeclarationError(
                "invalid field name",
                key=f"fields[{i}]",
                value=field,
                valid="letters, digits, '_' and '.', not starting with a digit: 'attn', "
                "'layers.0.ff'",
                source=source,
            )
    return tuple(given)


def calls_of_tableaux(
    tableaux: Any, source: Any = None
) -> tuple[list[list[Any]], list[Any], list[str]]:
    """The call-by-call (A, b, fields) of per-field tableaux over shared stages (see
    `AdditiveRungeKutta.from_tableaux`)."""
    valid = (
        "tableaux = {'f': (A, b), 'g': (A, b)} ([tableaux.f] A = ..., b = ... in a file), "
        "s stages each"
    )
    if not isinstance(tableaux, Mapping) or not tableaux:
        raise DeclarationError(
            "expected a table of tableaux, one per field",
            key="tableaux",
            value=tableaux,
            valid=valid,
            source=source,
        )
    pairs: dict[str, tuple[Any, Any]] = {}
    for field, tableau in tableaux.items():
        pair = (tableau.get("A"), tableau.get("b")) if isinstance(tableau, Mapping) else tableau
        if (
            not isinstance(pair, (tuple, list))
            or len(pair) != 2
            or not all(isinstance(x, list) for x in pair)
        ):
            raise DeclarationError(
                "a field's tableau is its A and b",
                key=f"tableaux.{field}",
                value=tableau,
                valid=valid,
                source=source,
            )
        pairs[field] = (pair[0], pair[1])
    sizes = {field: len(b) for field, (_, b) in pairs.items()}
    s = next(iter(sizes.values()))
    if any(
        len(b) != s or len(A) != s or any(len(row) != s for row in A) for A, b in pairs.values()
    ):
        raise DeclarationError(
            "every field's tableau has the same number of stages",
            key="tableaux",
            value=sizes,
            valid=valid,
            source=source,
        )

    def zero(x: Any) -> bool:
        return parse_number(x, "tableaux", source).value == 0

    calls = [
        (i, field)
        for i in range(s)
        for field, (A, b) in pairs.items()
        if not (zero(b[i]) and all(zero(A[k][i]) for k in range(s)))
    ]
    rows = [[pairs[g][0][i][j] for (j, g) in calls] for (i, _) in calls]
    weights = [pairs[f][1][i] for (i, f) in calls]
    return rows, weights, [f for _, f in calls]


def split_by_field(
    fields: Sequence[str], A: Sequence[Sequence[Any]], b: Sequence[Any], zero: Any
) -> tuple[dict[str, list[list[Any]]], dict[str, list[Any]]]:
    """Per field X, (A, b) with every column of another field's calls set to `zero`; entries of
    any type (sympy values, balls)."""
    s = len(b)
    big_A = {
        X: [[A[i][j] if fields[j] == X else zero for j in range(s)] for i in range(s)]
        for X in dict.fromkeys(fields)
    }
    big_b = {X: [b[j] if fields[j] == X else zero for j in range(s)] for X in big_A}
    return big_A, big_b
