"""The report every analysis returns: a table for the terminal, markdown, and JSON."""

from __future__ import annotations

import abc
import json
import math
from collections.abc import Sequence
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Any

import sympy

from ..errors import OrderClaimError
from ..methods import Method
from ..methods.base import Layer
from ..methods.entries.precision import RESOLUTION


def show(value: Any) -> str:
    """A short human-readable rendering of a report value."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(show(v) for v in value) if value else "none"
    if isinstance(value, sympy.Basic):
        return str(value)
    return str(value)


def ball_text(value: sympy.Expr, radius: float) -> str:
    """`"centre ± r"` for the ball `value ± radius`, printed so that the printed ball holds it:
    the centre to as many significant digits as the radius needs (at least six: -1/12 ± 2.8e-14
    is not -0.0833333 ± 2.8e-14, which holds no point of it), r the radius plus what printing
    the centre moved it, rounded up to two digits.

    **Arguments:** `value`: an exact real (rational or algebraic); `radius`: > 0.

    **Returns:** the text.
    """
    exact = value if value.is_Rational else sympy.N(value, 60)
    v = Fraction(str(exact)) if value.is_Rational else Fraction(Decimal(str(exact)))
    slack = Fraction(0) if value.is_Rational else Fraction(1, 10**50)
    r = Fraction(radius)
    top = math.floor(math.log10(abs(v))) if v else 0
    digits = min(60, max(6, top - math.floor(math.log10(r)) + 2))
    with localcontext() as ctx:
        ctx.prec = 80
        centre = f"{Decimal(v.numerator) / Decimal(v.denominator):.{digits}g}"
    total = r + abs(v - Fraction(Decimal(centre))) + slack
    unit = Fraction(10) ** (math.floor(math.log10(total)) - 1)
    mantissa = math.ceil(total / unit)
    while Fraction(Decimal(shown := f"{float(mantissa * unit):.2g}")) < total:
        mantissa += 1
    return f"{centre} ± {shown}"


def raised_by(residuals: Sequence[sympy.Expr], symbols: Sequence[sympy.Symbol], order: int) -> str:
    """Where a parametrised family's order is higher than for a generic member: the parameter
    values at which every failing residual of order `order + 1` vanishes (as a sentence).

    **Arguments:**

    - `residuals`: the failing conditions of order `order + 1`, in the family's symbols.
    - `symbols`: the family's symbols.
    - `order`: the order proved for every parameter value.

    **Returns:** e.g. "the order-2 conditions hold at a = 1/2."
    """
    # coefficients are real: a complex root of the conditions is not a member of the family
    real = {x: sympy.Symbol(x.name, real=True) for x in symbols}
    equations = [sympy.numer(sympy.together(r)).subs(real) for r in residuals]
    try:
        solutions = sympy.solve(equations, sorted(real.values(), key=str), dict=True)
    except NotImplementedError:  # not "no solution": sympy could not tell
        return f"sympy could not solve the order-{order + 1} conditions for the parameters."
    if not solutions:
        return f"no parameter value satisfies the order-{order + 1} conditions."
    shown = "; ".join(", ".join(f"{k} = {v}" for k, v in sol.items()) for sol in solutions)
    return f"the order-{order + 1} conditions hold at {shown}."


def shown_open(undetermined: Sequence[tuple[str, Any, float]], shown: int = 4) -> list[str]:
    """Undetermined conditions as report lines, `"name: residual ± bound"`: the digits' own
    residual and how far the precision of the entries can move it (a few, then how many more)."""
    more = [f"... {len(undetermined) - shown} more"] if len(undetermined) > shown else []
    return [f"{name}: {res:.3g} ± {bound:.3g}" for name, res, bound in undetermined[:shown]] + more


def precision_text(precision: Fraction | None, rounding: Fraction) -> str:
    """What a numeric declaration's entries are judged at: its declared precision, or the
    worst precision its digits carry."""
    if precision:
        return f"declared precision ±{float(precision):.3g}"
    return f"entries' own precision (worst ±{float(rounding):.3g})"


def tolerance_text(
    precision: Fraction | None, rounding: Fraction, largest: float | None, scale: str = "(1/γ)"
) -> str:
    """The tolerance row of a numeric declaration: its precision, then `resolution_text`."""
    return f"{precision_text(precision, rounding)}; {resolution_text(largest, scale)}"


def resolution_text(largest: float | None, scale: str) -> str:
    """The resolution below which an enclosure of 0 counts as met (relative to `scale`, the
    condition's scale), and the largest bound the verdicts used."""
    used = f"; largest bound {largest:.3g}" if largest is not None else ""
    return f"met below {float(RESOLUTION):.2g}·{scale}{used}"


# What would decide a condition the digits leave open.
DECIDE = "give more digits, exact values or a declared precision to decide them"
# A stability row that a numeric declaration's digits leave open (the notes say why)
OPEN_ROW = "undetermined (see notes)"


def digits_reading(rounding: float, what: str = "interval", moved: str = "its end") -> str:
    """What a numeric declaration's reading is where it is not enclosed (multistep A(α), an
    interval read as "none" that no ball bounds; Runge-Kutta, multistep and general linear
    interval ends are enclosed, `runge_kutta/stability_enclosure.py`, `multistep/enclosure.py`,
    `general_linear/enclosure.py`)."""
    return (
        f"it is the {what} of the method the digits spell: how far their rounding "
        f"(±{rounding:.2g}) moves {moved} is not bounded"
    )


def open_text(count: int, what: str) -> str:
    """`"N condition(s) of WHAT undetermined at this precision"`: how every report counts the
    conditions a numeric declaration's digits cannot decide (`what`: "order 3",
    "preconsistency (V u = u, U u = 1)")."""
    return f"{count} condition(s) of {what} undetermined at this precision"


def undetermined_note(order: int, count: int, upper: int | None) -> str:
    """Why a numeric declaration's order stops at `order`: `count` conditions of order
    `order + 1` are undetermined at its precision, and what would decide them.

    **Arguments:**

    - `order`: the order established (every condition up to it met).
    - `count`: how many conditions of order `order + 1` are undetermined.
    - `upper`: a certain upper bound (a failing condition found further on), or None.
    """
    bound = (
        f"at most {upper}"
        if upper is not None
        else "no failing condition found up to the order examined"
    )
    return (
        f"order {order} established; {open_text(count, f'order {order + 1}')} ({bound}): {DECIDE}."
    )


def jsonable(value: Any) -> Any:
    """Convert sympy values to strings (exact) so that `json.dumps` keeps every digit."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, sympy.Basic):
        return str(value)
    if isinstance(value, float) and value != value:
        return None
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return "inf" if value > 0 else "-inf"  # strict JSON has no Infinity
    return value


def trained_order_text(
    order: int, symbols: Any, initial_order: int, start: dict[Any, Any], initial_open: bool = False
) -> str:
    """The order of a layer whose parameters train: for every value they take, and (when it
    differs) at their initial values: `"1 for every g (2 at initialisation, g = 1/2)"`;
    `initial_open`: a decimal init leaves the order above `initial_order` undetermined
    (`"1+ at initialisation, a = 0.6667"`)."""
    names = ", ".join(sorted(map(str, symbols))) or "value"
    text = f"{order} for every {names}"
    if initial_order != order or initial_open:
        values = ", ".join(f"{k} = {v}" for k, v in start.items())
        text += f" ({initial_order}{'+' if initial_open else ''} at initialisation, {values})"
    return text


class Report(abc.ABC):
    """Abstract base of the order reports.

    Subclasses set `method`, `order`, `notes`, `stopped` (why the order search ended without a
    failing condition: "max_order", "time budget", or None), `undetermined` (the conditions
    of order `order + 1` the digits leave open, as (condition, residual, bound)) and
    `zero_stable`, or override `search_end`; implement `exact`, `rows()` (the table's lines, in
    order) and `to_dict()` (everything, for JSON); and override the rows every family shares
    where theirs differ from the default: `failing`, `failing_what`, `substep_order`,
    `real_stability_interval`.
    """

    method: Method
    order: int
    notes: list[str]
    stopped: str | None
    undetermined: Sequence[tuple[str, Any, float]]
    # Whether the method converges at all as h -> 0 (the root condition; a one-step method is
    # zero-stable); None where symbols or digits leave it open.
    zero_stable: bool | None

    @property
    @abc.abstractmethod
    def exact(self) -> bool:
        """The proof used exact arithmetic (False: a numeric declaration, judged at the
        precision of its entries)."""

    @property
    def failing(self) -> Sequence[tuple[str, Any]]:
        """The first failing conditions, (condition, residual), as `failing_what` names them;
        empty where none fails or the family's search lists none."""
        return ()

    @property
    def failing_what(self) -> str:
        """What `failing` lists, in words: `"trees at order 5"`."""
        return f"trees at order {self.order + 1}"

    @property
    def substep_order(self) -> int | None:
        """The order with the declared sub-steps (what a splitting's layer computes); None for
        the families without sub-steps."""
        return None

    @property
    def real_stability_interval(self) -> float | None:
        """r of the real stability interval [-r, 0] of the step applied to y' = λy (`math.inf`
        when unbounded); None where the family has no such step or the digits leave it
        open."""
        return None

    @property
    def claims(self) -> dict[str, tuple[Any, Any]]:
        """Every claim of the declaration: name -> (claimed, proved). Subclasses add theirs."""
        return {"order": (self.method.order, self.order)}

    def search_end(self, key: str) -> tuple[int, str | None]:
        """How the search behind the claim `key` ended short of a failing condition: how many
        conditions it left undetermined, and why it stopped (`stopped`). Default: the order
        search's, for "order"; none for other claims."""
        return (len(self.undetermined), self.stopped) if key == "order" else (0, None)

    @property
    def mismatches(self) -> dict[str, tuple[Any, Any]]:
        """Claims the proof contradicts: every family's one rule. An order claimed above the
        order established is a mismatch (undetermined conditions or a time budget leave it
        unproved), unless the search stopped at the caller's own `max_order` before reaching
        it: then nothing contradicts it."""
        out = {}
        for key, (claimed, proved) in self.claims.items():
            if claimed is None or claimed == proved:
                continue
            orders = all(isinstance(x, int) and not isinstance(x, bool) for x in (claimed, proved))
            if orders and claimed > proved and self.search_end(key)[1] == "max_order":
                continue
            out[key] = (claimed, proved)
        return out

    @property
    def claim_holds(self) -> bool:
        """No claim of the declaration disagrees with the proof."""
        return not self.mismatches

    def raise_for_claims(self) -> None:
        """Raise `OrderClaimError` when a claim disagrees with the proof."""
        if self.mismatches:
            raise OrderClaimError(self.mismatch_message())

    def mismatch_message(self) -> str:
        where = f"{self.method.source}: " if self.method.source else ""
        parts = []
        for key, (claimed, proved) in self.mismatches.items():
            if proved is None:  # a verdict the digits cannot reach (zero-stability)
                parts.append(f"{key} is claimed {claimed} but undetermined (see the notes)")
                continue
            part = f"{key} is claimed {claimed} but proved {proved}"
            count, stopped = self.search_end(key)
            if count:
                part += (
                    f" (established {proved}; {count} condition(s) of order {proved + 1} "
                    "undetermined at the precision of the entries)"
                )
            elif stopped == "time budget":
                part += f" (established {proved} before the time budget ran out)"
            parts.append(part)
        return f"{where}{self.method.name}: " + "; ".join(parts)

    @abc.abstractmethod
    def rows(self) -> list[tuple[str, Any]]:
        """The report's table, line by line: (label, value)."""

    @abc.abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """Everything the report knows, as plain data (exact values as strings)."""

    @property
    def layer(self) -> Layer:
        """Whether `bf.compile` turns the method into a layer, and how or why not (stated by
        the declaration, `Method.layer`, which the compiler enforces)."""
        return self.method.layer

    @property
    def block_order_text(self) -> str:
        """The order of what the compiled layer computes, in words (`"4"`; a family's reports
        add the order for every parameter value and at initialisation)."""
        return str(self.order)

    def geometry_rows(self) -> list[tuple[str, Any]]:
        """The geometric properties (symplecticity, symmetry, energy, SSP, internal stability)
        as table lines, for the families that define them; none by default."""
        return []

    def all_rows(self) -> list[tuple[str, Any]]:
        return [*self.rows(), *self.geometry_rows(), ("layer", self.layer.how)]

    def header(self) -> str:
        title = self.method.title if self.method.title != self.method.name else ""
        return f"{self.method.name} ({self.method.family}{', ' + title if title else ''})"

    def __str__(self) -> str:
        rows = [(label, show(value)) for label, value in self.all_rows()]
        width = max(len(label) for label, _ in rows)
        lines = [self.header(), "-" * len(self.header())]
        lines += [f"{label.ljust(width)}  {value}" for label, value in rows]
        if self.mismatches:
            lines.append(f"{'CLAIM'.ljust(width)}  FAILS: {self.mismatch_message()}")
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)

    def to_markdown(self) -> str:
        lines = [f"### {self.header()}", "", "| property | value |", "|---|---|"]
        for label, value in self.all_rows():
            cell = show(value).replace("|", "\\|")
            lines.append(f"| {label} | {cell} |")
        if self.mismatches:
            lines.append(f"| **claim** | **fails: {self.mismatch_message()}** |")
        lines += ["", *(f"- {note}" for note in self.notes)]
        return "\n".join(lines).rstrip() + "\n"

    def to_json(self, **kwargs: Any) -> str:
        data = {
            "name": self.method.name,
            "family": self.method.family,
            "claims": {k: {"claimed": c, "proved": p} for k, (c, p) in self.claims.items()},
            "claim_holds": self.claim_holds,
            "layer": {"compiles": self.layer.compiles, "how": self.layer.how},
            **self.to_dict(),
            "notes": self.notes,
        }
        return json.dumps(jsonable(data), indent=kwargs.pop("indent", 2), **kwargs)
