"""Operator splittings: compositions of sub-flows, each advanced exactly or by an RK step."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any, final

import sympy

from ..errors import DeclarationError
from .base import CoefficientMethod, Layer, check_order
from .entries.arrays import Coefficients, NumberArray, vector
from .entries.numbers import Number, as_list, is_zero, parse_number, substitute
from .tableau import ButcherTableau

_OPERATOR = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
VALID_STEP = 'each step is a pair [operator, coefficient], e.g. ["A", "1/2"]'
VALID_ALTERNATING = (
    "one coefficient list per operator, applied alternately in the order given, e.g. "
    'alternating = { A = ["1/2", "1/2"], B = [1, 0] } for Strang (zeros are left out)'
)
# A placed sub-step: (operator, coefficient, the keys that name the operator and the coefficient
# in the declaration).
Placed = tuple[str, Number, str, str]
EULER = ButcherTableau([[0]], [1], name="euler", order=1, title="Forward Euler")


@final
class Splitting(CoefficientMethod):
    """A splitting y' = Σ_X f_X(y) advanced by a sequence of sub-steps, each moving one operator.

    Step k advances operator `steps[k][0]` by the fraction `steps[k][1]` of the step h.

    **Arguments:**

    - `steps`: ordered `(operator, coefficient)` pairs, e.g.
      `[("A", "1/2"), ("B", 1), ("A", "1/2")]` for Strang. Any number of operators. A zero
      coefficient is refused here (it moves nothing: a mistake in an explicit list).
    - `alternating`: instead of `steps`, one coefficient list per operator, applied alternately
      in the mapping's order, as other libraries and papers store splitting and symplectic
      methods: `{"A": [a₁, a₂, ...], "B": [b₁, b₂, ...]}` is A a₁, B b₁, A a₂, B b₂, ... Every
      list has as many entries as the first or one fewer (shorter ones last). Exact zeros
      (`0`, `0.0`, `"0.00"`: exact zeros, `numbers.py`) are the padding of that form and are left
      out, which is exact: a zero sub-step is the identity for exact and Runge-Kutta sub-flows
      alike. Any non-zero value, however small (`"1e-30"`), is a sub-step and is kept.
    - `substep`: how each sub-flow is advanced: `"exact"` (the exact flow of that operator),
      `"euler"`, the name of a catalog Runge-Kutta method, or a `ButcherTableau`.
    - `operators`: optional list of the operator names; when given, every step must use one of
      them and each must be used (catches a misspelt operator).
    - `substep_order`: the claimed order with the declared sub-step (`order` is the claim with
      exact sub-flows).
    - `precision`: judge every non-zero coefficient as known to ±precision at least (a positive
      number below 1, e.g. `1e-25`), as `ButcherTableau` does. It covers the splitting's own
      coefficients; a sub-step tableau states its own.
    """

    family = "splitting"
    keys = ("steps", "alternating", "substep", "operators", "substep_order", "precision")
    required = ()  # `steps` or `alternating`: exactly one (checked by the constructor)
    numbers: Coefficients  # steps: the coefficient of each step
    substep: ButcherTableau | None  # None: exact sub-flows
    operators: tuple[str, ...]
    substep_order: int | None
    _moves: tuple[str, ...]  # the operator of each step
    _alternating: dict[str, NumberArray] | None  # the lists as declared, zeros kept
    _operators_given: bool

    def __init__(
        self,
        steps: Sequence[Sequence[Any]] | None = None,
        substep: str | ButcherTableau = "euler",
        *,
        alternating: Mapping[str, Sequence[Any]] | None = None,
        name: str | None = None,
        order: int | None = None,
        substep_order: int | None = None,
        operators: Sequence[str] | None = None,
        precision: Any = None,
        title: str | None = None,
        reference: str | None = None,
        source: str | Path | None = None,
    ) -> None:
        self._set_common(name, order, title, reference, source)
        src, declared = self.source, self._set_precision(precision)
        lists, placed = _placed(steps, alternating, src)
        names = tuple(p[3] for p in placed)  # "steps[k][1]", "alternating.A[i]"
        coefficients = NumberArray("steps", tuple(p[1] for p in placed), names).judged(declared)
        self._set(
            numbers=Coefficients({"steps": coefficients}),
            _moves=tuple(p[0] for p in placed),
            operators=_declared_operators(operators, placed, src),
            _operators_given=operators is not None,
            substep=_resolve_substep(substep, src),
            substep_order=check_order(substep_order, "substep_order", src),
            _alternating=lists and {op: xs.judged(declared) for op, xs in lists.items()},
        )

    def _declared(self) -> dict[str, Any]:
        lists, sub = self._alternating, self.substep
        steps = [[op, x.raw] for op, x in zip(self._moves, self.numbers.steps, strict=True)]
        return {
            "steps": steps if lists is None else None,
            "alternating": lists and {op: xs.raw for op, xs in lists.items()},
            "substep": "exact" if sub is None else "euler" if sub is EULER else sub.to_table(),
            "operators": list(self.operators) if self._operators_given else None,
            "substep_order": self.substep_order,
            "precision": self._precision_raw,
        }

    @cached_property
    def steps(self) -> tuple[tuple[str, sympy.Expr], ...]:
        """(operator, coefficient) of each step, in order."""
        return tuple(zip(self._moves, self.numbers.steps.values, strict=True))

    def subs(self, values: Mapping[Any, Any]) -> Splitting:
        """A member of a parametrised family: substitute values for the symbols (coefficients as
        in `ButcherTableau.subs`; the member keeps the name, sub-step, operators, a declared
        precision and the form of its steps: in the alternating form a coefficient that becomes
        0 is left out)."""
        mapping = self.member_values(values)
        common: dict[str, Any] = {
            "substep": self.substep if self.substep is not None else "exact",
            "operators": list(self.operators) if self._operators_given else None,
            "precision": self._precision_raw,
            "name": self.name,
        }

        def put(x: Number, key: str) -> Number:
            return substitute(x, mapping, key, self.source)

        if self._alternating is not None:
            return Splitting(
                alternating={op: xs.map(put) for op, xs in self._alternating.items()}, **common
            )
        moved = zip(self._moves, self.numbers.steps.map(put), strict=True)
        return Splitting(list(moved), **common)

    @property
    def layer(self) -> Layer:
        if self.substep is None:
            return Layer(
                False,
                "not compiled: it advances its sub-flows exactly, and exact sub-flows have no "
                "layer",
                key="substep",
                valid="declare a Runge-Kutta sub-step (e.g. substep = 'euler')",
            )
        if self.symbols:
            return Layer(
                False,
                f"not compiled as declared: a family with free symbols "
                f"{sorted(map(str, self.symbols))}",
                key="steps" if self._alternating is None else "alternating",
                valid="compile a member (splitting.subs({...}))",
            )
        return Layer(
            True, f"bf.compile(fields=...): one field per step, {self.substep.name} sub-steps"
        )

    @property
    def substep_name(self) -> str:
        return "exact" if self.substep is None else self.substep.name

    def coefficient_sums(self) -> dict[str, sympy.Expr]:
        """Σ of the coefficients of each operator (1 for a consistent splitting)."""
        sums: dict[str, sympy.Expr] = {op: sympy.Integer(0) for op in self.operators}
        for op, coeff in self.steps:
            sums[op] = sympy.nsimplify(sums[op] + coeff)
        return sums


def _operator_name(op: Any, key: str, source: str | None) -> str:
    if not isinstance(op, str) or not _OPERATOR.match(op):
        raise DeclarationError(
            "operator names are identifiers",
            key=key,
            value=op,
            valid='e.g. "A", "B", "ffn"',
            source=source,
        )
    return op


def _placed(
    steps: Any, alternating: Any, source: str | None
) -> tuple[dict[str, NumberArray] | None, list[Placed]]:
    """The steps of either form: the alternating lists as declared (None for explicit steps),
    and every step placed."""
    if steps is not None and alternating is not None:
        raise DeclarationError(
            "give the steps once: steps or alternating, not both",
            key="alternating",
            valid="drop steps (explicit [operator, coefficient] pairs) or alternating "
            "(one coefficient list per operator)",
            source=source,
        )
    if alternating is None:
        return None, _explicit_steps(steps, source)
    lists = _alternating_lists(alternating, source)
    return lists, _interleaved(lists)


def _explicit_steps(steps: Any, source: str | None) -> list[Placed]:
    """The `steps` form: [operator, coefficient] pairs, none of them zero."""
    if steps is None:
        raise DeclarationError(
            "a splitting needs at least one step: neither steps nor alternating is given",
            key="steps",
            valid="give steps = [[operator, coefficient], ...] or alternating = "
            "{ A = [...], B = [...] } (one coefficient list per operator)",
            source=source,
        )
    steps = as_list(steps)
    if isinstance(steps, (str, bytes)) or not isinstance(steps, Sequence) or not steps:
        raise DeclarationError(
            "a splitting needs at least one step",
            key="steps",
            value=steps,
            valid=VALID_STEP,
            source=source,
        )
    placed: list[Placed] = []
    for k, step in enumerate(steps):
        if isinstance(step, (str, bytes)) or not isinstance(step, Sequence) or len(step) != 2:
            raise DeclarationError(
                "malformed step", key=f"steps[{k}]", value=step, valid=VALID_STEP, source=source
            )
        op = _operator_name(step[0], f"steps[{k}][0]", source)
        number = parse_number(step[1], f"steps[{k}][1]", source)
        if is_zero(number):
            raise DeclarationError(
                "a step with coefficient 0 does nothing",
                key=f"steps[{k}][1]",
                value=step[1],
                valid="remove the step or give a non-zero coefficient",
                source=source,
            )
        placed.append((op, number, f"steps[{k}][0]", f"steps[{k}][1]"))
    return placed


def _alternating_lists(alternating: Any, source: str | None) -> dict[str, NumberArray]:
    """The `alternating` form's lists, parsed (zeros kept), with their lengths checked: every
    list as long as the first or one shorter, shorter ones last (A a₁ B b₁ ... A aₙ)."""
    if not isinstance(alternating, Mapping) or len(alternating) < 2:
        raise DeclarationError(
            "alternating needs a coefficient list for each of at least two operators",
            key="alternating",
            value=alternating,
            valid=VALID_ALTERNATING,
            source=source,
        )
    lists: dict[str, NumberArray] = {}
    for op, raw in alternating.items():
        key = f"alternating.{op}"
        _operator_name(op, key, source)
        raw = as_list(raw)
        if isinstance(raw, (str, bytes)) or not isinstance(raw, Sequence):
            raise DeclarationError(
                "expected a list of coefficients",
                key=key,
                value=raw,
                valid=VALID_ALTERNATING,
                source=source,
            )
        lists[op] = vector(raw, key, source)
        if all(is_zero(x) for x in lists[op]):
            raise DeclarationError(
                f"operator '{op}' never moves: every coefficient of its list is 0",
                key=key,
                value=list(raw),
                valid="give it a non-zero coefficient, or leave the operator out",
                source=source,
            )
    lengths = [len(xs) for xs in lists.values()]
    first = lengths[0]
    for (op, xs), before in zip(lists.items(), [first, *lengths[:-1]], strict=True):
        if not first - 1 <= len(xs) <= before:
            raise DeclarationError(
                f"the list of '{op}' has {len(xs)} entries, but the lists are applied "
                f"alternately: each has as many as the first ({first}) or one fewer, shorter "
                "ones last",
                key=f"alternating.{op}",
                value=[x.raw for x in xs],
                valid="list first the operator that moves first, and pad a short list with "
                "zeros (zero sub-steps are left out)",
                source=source,
            )
    return lists


def _interleaved(lists: Mapping[str, Sequence[Number]]) -> list[Placed]:
    """The alternating lists read column by column, exact zeros left out (the identity)."""
    width = max(len(xs) for xs in lists.values())
    return [
        (op, xs[i], f"alternating.{op}", f"alternating.{op}[{i}]")
        for i in range(width)
        for op, xs in lists.items()
        if i < len(xs) and not is_zero(xs[i])
    ]


def _declared_operators(
    operators: Any, placed: list[Placed], source: str | None
) -> tuple[str, ...]:
    """The declared operator list, checked against the steps that use them (by default the
    operators in the order the steps first use them)."""
    used = tuple(dict.fromkeys(p[0] for p in placed))
    if operators is None:
        return used
    if (
        isinstance(operators, (str, bytes))
        or not isinstance(operators, Sequence)
        or not all(isinstance(op, str) for op in operators)
    ):
        raise DeclarationError(
            "operators must be a list of operator names",
            key="operators",
            value=operators,
            valid='e.g. operators = ["A", "B"]',
            source=source,
        )
    declared = tuple(operators)
    for op, _, key, _ in placed:
        if op not in declared:
            raise DeclarationError(
                f"unknown operator '{op}'",
                key=key,
                value=op,
                valid=f"declared operators are {list(declared)}",
                source=source,
            )
    for op in declared:
        if op not in used:
            raise DeclarationError(
                f"operator '{op}' is declared but no step uses it",
                key="operators",
                value=list(declared),
                valid="use every declared operator",
                source=source,
            )
    return declared


def _resolve_substep(substep: Any, source: str | None) -> ButcherTableau | None:
    if substep in ("exact", "euler"):
        return None if substep == "exact" else EULER
    from .files import catalog  # files.py builds splittings: a late import breaks the cycle

    valid = "use 'exact', 'euler' or an explicit Runge-Kutta method of the catalog "
    return catalog.tableau(substep, "sub-step", "substep", source, valid + "(`butcherflow list`)")
