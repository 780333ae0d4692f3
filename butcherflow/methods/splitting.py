"""Operator splittings: compositions of sub-flows, each advanced exactly or by an RK step."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any, final

import sympy

from ..errors import DeclarationError
from .base import CoefficientMethod, Layer, check_order
from .numbers import Number, is_zero, parse_number, substitute
from .tableau import ButcherTableau

_OPERATOR = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
EULER = ButcherTableau([[0]], [1], name="euler", order=1, title="Forward Euler")


@final
class Splitting(CoefficientMethod):
    """A splitting y' = Σ_X f_X(y) advanced by a sequence of sub-steps, each moving one operator.

    Step k advances operator `steps[k][0]` by the fraction `steps[k][1]` of the step h.

    **Arguments:**

    - `steps`: ordered `(operator, coefficient)` pairs, e.g.
      `[("A", "1/2"), ("B", 1), ("A", "1/2")]` for Strang. Any number of operators.
    - `substep`: how each sub-flow is advanced: `"exact"` (the exact flow of that operator),
      `"euler"`, the name of a catalog Runge-Kutta method, or a `ButcherTableau`.
    - `operators`: optional list of the operator names; when given, every step must use one of
      them and each must be used (catches a misspelt operator).
    - `substep_order`: the claimed order with the declared sub-step (`order` is the claim with
      exact sub-flows).
    """

    family = "splitting"
    keys = ("steps", "substep", "operators", "substep_order")
    required = ("steps",)
    steps: tuple[tuple[str, sympy.Expr], ...]
    substep: ButcherTableau | None  # None: exact sub-flows
    operators: tuple[str, ...]
    substep_order: int | None
    step_numbers: tuple[Number, ...]  # the steps' coefficients as parsed (with their precision)

    def __init__(
        self,
        steps: Sequence[Sequence[Any]],
        substep: str | ButcherTableau = "euler",
        *,
        name: str | None = None,
        order: int | None = None,
        substep_order: int | None = None,
        operators: Sequence[str] | None = None,
        title: str | None = None,
        reference: str | None = None,
        source: str | Path | None = None,
    ) -> None:
        self._set_common(name, order, title, reference, source)
        src = self.source
        valid_step = 'each step is a pair [operator, coefficient], e.g. ["A", "1/2"]'
        if isinstance(steps, (str, bytes)) or not isinstance(steps, Sequence) or not steps:
            raise self.error(
                "a splitting needs at least one step", key="steps", value=steps, valid=valid_step
            )
        parsed: list[tuple[str, sympy.Expr]] = []
        raw_steps: list[list[Any]] = []
        numbers: list[Number] = []
        rounding = Fraction(0)
        for k, step in enumerate(steps):
            if isinstance(step, (str, bytes)) or not isinstance(step, Sequence) or len(step) != 2:
                raise self.error("malformed step", key=f"steps[{k}]", value=step, valid=valid_step)
            op, coeff = step
            if not isinstance(op, str) or not _OPERATOR.match(op):
                raise self.error(
                    "operator names are identifiers",
                    key=f"steps[{k}][0]",
                    value=op,
                    valid='e.g. "A", "B", "ffn"',
                )
            number = parse_number(coeff, f"steps[{k}][1]", src)
            if is_zero(number):
                raise self.error(
                    "a step with coefficient 0 does nothing",
                    key=f"steps[{k}][1]",
                    value=coeff,
                    valid="remove the step or give a non-zero coefficient",
                )
            rounding = max(rounding, number.rounding)
            parsed.append((op, number.value))
            raw_steps.append([op, number.raw])
            numbers.append(number)
        used = tuple(dict.fromkeys(op for op, _ in parsed))
        if operators is not None:
            if (
                isinstance(operators, (str, bytes))
                or not isinstance(operators, Sequence)
                or not all(isinstance(op, str) for op in operators)
            ):
                raise self.error(
                    "operators must be a list of operator names",
                    key="operators",
                    value=operators,
                    valid='e.g. operators = ["A", "B"]',
                )
            declared = tuple(operators)
            for k, (op, _) in enumerate(parsed):
                if op not in declared:
                    raise self.error(
                        f"unknown operator '{op}'",
                        key=f"steps[{k}][0]",
                        value=op,
                        valid=f"declared operators are {list(declared)}",
                    )
            for op in declared:
                if op not in used:
                    raise self.error(
                        f"operator '{op}' is declared but no step uses it",
                        key="operators",
                        value=list(declared),
                        valid="use every declared operator",
                    )
            used = declared
        resolved = _resolve_substep(substep, src)
        self._set(
            steps=tuple(parsed),
            substep=resolved,
            operators=used,
            substep_order=check_order(substep_order, "substep_order", src),
            rounding=rounding,
            step_numbers=tuple(numbers),
        )
        self._set(
            _table={
                "steps": raw_steps,
                "substep": "exact"
                if resolved is None
                else ("euler" if resolved is EULER else resolved.to_table()),
                "operators": None if operators is None else list(operators),
                "substep_order": substep_order,
            }
        )

    @property
    def coefficient_values(self) -> list[sympy.Expr]:
        return [c for _, c in self.steps]

    def subs(self, values: Mapping[Any, Any]) -> Splitting:
        """A member of a parametrised family: substitute values for the symbols (coefficients as
        in `ButcherTableau.subs`; the member keeps the name, sub-step and operators)."""
        mapping = self.member_values(values)
        return Splitting(
            [
                (op, substitute(x, mapping, f"steps[{k}][1]", self.source))
                for k, ((op, _), x) in enumerate(zip(self.steps, self.step_numbers, strict=True))
            ],
            substep=self.substep if self.substep is not None else "exact",
            operators=self._table["operators"],
            name=self.name,
        )

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
                key="steps",
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


def _resolve_substep(substep: Any, source: str | None) -> ButcherTableau | None:
    if isinstance(substep, ButcherTableau):
        tableau = substep
    elif substep == "exact":
        return None
    elif substep == "euler":
        return EULER
    elif isinstance(substep, str):
        from .files import catalog  # files.py builds splittings: a late import breaks the cycle

        found = catalog.get(substep) if substep in catalog else None
        if not isinstance(found, ButcherTableau):
            what = "is not a Runge-Kutta method" if found is not None else "is unknown"
            explicit = catalog.names(family="runge-kutta")
            close = difflib.get_close_matches(substep, explicit, n=3)
            hint = f"did you mean {', '.join(close)}? " if close else ""
            raise DeclarationError(
                f"sub-step '{substep}' {what}",
                key="substep",
                value=substep,
                valid=f"{hint}use 'exact', 'euler' or a Runge-Kutta method of the catalog: "
                + ", ".join(explicit),
                source=source,
            )
        tableau = found
    else:
        raise DeclarationError(
            "substep must be a name or a ButcherTableau",
            key="substep",
            value=substep,
            valid="'exact', 'euler', a catalog Runge-Kutta name, or a ButcherTableau",
            source=source,
        )
    if not tableau.is_explicit:
        raise DeclarationError(
            f"sub-step '{tableau.name}' is implicit",
            key="substep",
            value=tableau.name,
            valid="sub-steps are explicit Runge-Kutta methods (or 'exact')",
            source=source,
        )
    return tableau
