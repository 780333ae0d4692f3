"""A designed Runge-Kutta method: the declaration, its proof, and what the optimiser said.

`finish` turns an optimiser's float tableau into a declaration: exact when `exact.py` reaches
one (snapped to small rationals, or the last stage solved exactly), numeric otherwise (its
digits as given, which `bf.check` judges at their precision). Either way `bf.check` proves the
order, and the objective is recomputed from the declaration: the SSP coefficient by the analysis
stage's exact radius of absolute monotonicity, the error norm in exact arithmetic.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, final

import numpy as np
import sympy

from ..analysis import Report, check
from ..analysis.runge_kutta.monotonicity import SSPCoefficient, ssp_coefficient
from ..methods import ButcherTableau
from .conditions import Condition, Trees
from .exact import Matrix, exact_tableau, snap

OBJECTIVES = {
    "ssp": ("SSP coefficient", "maximised"),
    "low-error": ("principal error norm", "minimised"),
    "realise": ("principal error norm", "minimised"),
}


@final
@dataclass(frozen=True)
class DesignedMethod:
    """A Runge-Kutta tableau found by optimisation, with its proof.

    - `objective`: `"ssp"`, `"low-error"` or `"realise"`; `kind`: `"explicit"` or `"dirk"`.
    - `method`: the declaration (exact when `exact`, else numeric: the optimiser's digits).
    - `route`: how the entries became exact, or why they are numeric.
    - `report`: `bf.check(method)`: the order proved.
    - `value`: the optimiser's objective (SSP coefficient or error norm), in floating point.
    - `proved`: the objective recomputed from the declaration (exactly, or of its digits), as
      text; `proved_value` as a float.
    - `good`, `tried`, `starts`: starts that met the constraints, starts tried, and allowed (the
      multistart stops once `AGREE` starts agree on the best value); `seconds`: the search, before
      the entries are made exact.
    - `polynomial`: the stability polynomial realised (`realise`), coefficients a_0..a_s.
    """

    objective: str
    kind: str
    stages: int
    order: int
    method: ButcherTableau
    exact: bool
    route: str
    report: Report
    value: float
    proved: str
    proved_value: float
    good: int
    tried: int
    starts: int
    seconds: float
    seed: int
    polynomial: tuple[Fraction, ...] | None = None
    notes: tuple[str, ...] = field(default=())
    designed_from: str | None = None  # the command that designed the realised polynomial

    @property
    def ratio(self) -> float:
        """The proved objective over the optimiser's (1 when the exact method keeps it)."""
        return self.proved_value / self.value if self.value else math.nan

    def command(self) -> str:
        """The command line that designs this method."""
        implicit = " --implicit" if self.kind == "dirk" else ""
        tail = f" --starts {self.starts} --seed {self.seed}"
        if self.objective == "realise" and self.designed_from is not None:
            return f"{self.designed_from} --realise {self.order}{tail}"
        if self.objective == "realise":
            assert self.polynomial is not None
            coefficients = ",".join(str(c) for c in self.polynomial)
            return (
                f"butcherflow design realise --polynomial {coefficients} --order {self.order}"
                + tail
            )
        return (
            f"butcherflow design {self.objective} --stages {self.stages} --order {self.order}"
            + implicit
            + tail
        )

    def __str__(self) -> str:
        what, how = OBJECTIVES[self.objective]
        lines = [
            f"{self.method.name}: {self.kind} Runge-Kutta, s = {self.stages}, p = {self.order}, "
            f"{what} {how}",
            f"  entries       {'exact' if self.exact else 'numeric'} ({self.route})",
            f"  order         {self.report.order} proved by bf.check",
            f"  {what:<13} {self.proved} (from the declaration)",
            f"  optimiser     {self.value:.12g} (SLSQP, best of {self.good} feasible of "
            f"{self.tried} starts tried, {self.seconds:.2f} s)",
        ]
        return "\n".join(lines + [f"note: {n}" for n in self.notes])

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.method.name,
            "objective": self.objective,
            "kind": self.kind,
            "stages": self.stages,
            "order": self.order,
            "proved_order": self.report.order,
            "exact": self.exact,
            "route": self.route,
            "value": self.value,
            "proved": self.proved,
            "proved_value": self.proved_value,
            "good": self.good,
            "tried": self.tried,
            "starts": self.starts,
            "seconds": self.seconds,
            "command": self.command(),
            "A": [[str(x) for x in row] for row in self.method.A],
            "b": [str(x) for x in self.method.b],
        }

    def to_toml(self, name: str | None = None, title: str | None = None) -> str:
        """The catalog declaration (`solvers/NAME.toml`), with the command that designed it."""
        what, how = OBJECTIVES[self.objective]
        name = name or self.method.name
        title = title or f"Designed {self.kind} RK({self.stages},{self.order}), {what} {how}"

        def cell(x: Any) -> str:
            text = str(x)
            return text if text in ("0", "1") else f'"{text}"'

        rows = ",\n".join("    [" + ", ".join(cell(x) for x in row) + "]" for row in self.method.A)
        return (
            f'name = "{name}"\n'
            f'title = "{title}"\n'
            'family = "runge-kutta"\n'
            f"order = {self.order}\n"
            f'reference = "Designed by butcherflow: {self.command()}"\n'
            f'description = "{self.description()}"\n'
            f"A = [\n{rows},\n]\n"
            f"b = [{', '.join(cell(x) for x in self.method.b)}]\n"
            # an implicit layer solves its stages by fixed-point sweeps (as the catalog's DIRKs)
            + ("iterations = 3\n" if self.kind == "dirk" else "")
        )

    def description(self) -> str:
        what, how = OBJECTIVES[self.objective]
        entries = "exact" if self.exact else "numeric"
        return (
            f"{what[0].upper()}{what[1:]} {how} by SLSQP from {self.starts} starts (RK-Opt's "
            f"formulation); entries {entries} ({self.route}); {what} {self.proved} recomputed "
            f"from these entries (optimiser: {self.value:.12g}); order proved by bf.check."
        )


@final
@dataclass(frozen=True)
class Point:
    """An optimiser's tableau: its floats as exact rationals, and `polish`, which gives the same
    point polished at 256 bits (None when that does not converge, `polish.py`); called only
    when the floats do not snap, since polishing is the slow part of a large design."""

    A: Matrix
    b: list[Fraction]
    polish: Callable[[], tuple[Matrix, list[Fraction]] | None] = lambda: None

    @classmethod
    def of_floats(cls, A: np.ndarray, b: np.ndarray, polish: Any = None) -> Point:
        exact = [[Fraction(float(x)) for x in row] for row in A]
        return cls(exact, [Fraction(float(x)) for x in b], polish or (lambda: None))


# how near a small rational a float entry may be, when the result is no worse: tried in turn,
# since a flat optimum (DIRK SSP(2,2): C moves by 5e-10 when an entry moves by 6e-6) leaves the
# optimiser's point far from the rational one; "no worse" is what makes a loose one safe
SNAP = (1e-6, 1e-4)


@final
@dataclass(frozen=True)
class Search:
    """What a design searched for, as `finish` records it: the objective, the `kind`
    (`"explicit"` or `"dirk"`), s and p, the trees and the conditions imposed, the multistart's
    `starts` and `seed`, and when the search `began` (`time.perf_counter()`)."""

    objective: str
    kind: str
    stages: int
    order: int
    trees: Trees
    conditions: list[Condition]
    starts: int
    seed: int
    began: float


def finish(
    search: Search,
    point: Point,
    value: float,
    good: int,
    tried: int,
    polynomial: tuple[Fraction, ...] | None = None,
) -> DesignedMethod:
    """The `DesignedMethod` of an optimiser's tableau (module docstring): small rationals
    within a `SNAP` tolerance of the floats when they meet every condition and their objective
    is no worse than the optimiser's; else the exact routes of `exact.py` from the polished
    point (or the floats); else numeric digits."""
    seconds = time.perf_counter() - search.began
    objective, s, p, trees = search.objective, search.stages, search.order, search.trees
    name = f"designed-{objective}-{'dirk-' if search.kind == 'dirk' else ''}{s}-{p}"
    method, exact, route, notes, known = _declaration(
        objective, name, point, value, trees, p, search.conditions
    )
    proved, proved_value = known or _objective(objective, method, trees, p, exact)
    report = check(method)
    if report.order < p:
        notes.append(f"the declaration proves order {report.order} only (see bf.check)")
    elif report.order > p:
        notes.append(f"the declaration has order {report.order}, above the {p} asked")
    return DesignedMethod(
        objective,
        search.kind,
        s,
        p,
        method,
        exact,
        route,
        report,
        value,
        proved,
        proved_value,
        good,
        tried,
        search.starts,
        seconds,
        search.seed,
        polynomial,
        tuple(notes),
    )


def _declaration(
    objective: str,
    name: str,
    point: Point,
    value: float,
    trees: Trees,
    p: int,
    conditions: list[Condition],
) -> tuple[ButcherTableau, bool, str, list[str], tuple[str, float] | None]:
    """(declaration, exact?, route, notes, its objective when already computed): the routes of
    `finish`, in order."""
    for tolerance in SNAP:
        snapped = snap(trees, conditions, point.A, point.b, tolerance)
        if snapped is None:
            continue
        method = ButcherTableau(A=snapped[0], b=snapped[1], name=name)
        proved, proved_value = _objective(objective, method, trees, p, True)
        if objective == "ssp":
            better = proved_value >= value * (1 - 1e-12)
        else:
            better = proved_value <= value * (1 + 1e-9)
        if better:
            return method, True, "snapped to small rationals", [], (proved, proved_value)
    polished = point.polish()
    A, b = polished or (point.A, point.b)
    # an SSP coefficient moves with the 1e-12th digit (polish.py); an error norm does not
    bits = (200 if objective == "ssp" else 64) if polished else 53
    tolerance = 1e-40 if polished else 1e-9
    notes = ["polished to 256 bits before rounding (polish.py)"] if polished else []
    found = exact_tableau(trees, conditions, A, b, tolerance, bits)
    if found is not None:
        return ButcherTableau(A=found[0], b=found[1], name=name), True, found[2], notes, None
    digits = 60 if polished else 17
    route = (
        "no exact route (neither small rationals nor a last stage solvable for the "
        f"conditions): {digits} significant digits"
    )
    method = ButcherTableau(
        A=[[_digits(x, digits) for x in row] for row in A],
        b=[_digits(x, digits) for x in b],
        name=name,
    )
    return method, False, route, notes, None


def _objective(
    objective: str, method: ButcherTableau, trees: Trees, p: int, exact: bool
) -> tuple[str, float]:
    """The objective recomputed from the declaration."""
    if objective == "ssp":
        radius = ssp_coefficient(method)
        return radius.text(), radius.value
    return _error_norm(method, trees, p, exact)


def _digits(x: Fraction, digits: int) -> str:
    """x as a decimal string of `digits` significant digits (0 as "0")."""
    if x == 0:
        return "0"
    return sympy.Float(sympy.Rational(x.numerator, x.denominator), digits).__str__()


def _error_norm(method: ButcherTableau, trees: Trees, p: int, exact: bool) -> tuple[str, float]:
    """‖τ_{p+1}‖₂ of the declaration: exact (a square root of a rational) or of its digits."""
    if not exact:
        A = np.array([[float(x) for x in row] for row in method.A])
        b = np.array([float(x) for x in method.b])
        g = trees.weights(A, p + 1)
        tau = [(b @ g[t.index] - 1 / t.density) / t.symmetry for t in trees.of_order(p + 1)]
        value = float(np.sqrt(np.sum(np.square(tau))))
        return f"{value:.12g} (of the digits as given)", value
    A_exact = [[Fraction(str(x)) for x in row] for row in method.A]
    b_exact = [Fraction(str(x)) for x in method.b]
    weights = trees.exact_weights(A_exact, p + 1)
    total = Fraction(0)
    for t in trees.of_order(p + 1):
        phi = sum((bi * gi for bi, gi in zip(b_exact, weights[t.index], strict=True)), Fraction(0))
        total += ((phi - Fraction(1, t.density)) / t.symmetry) ** 2
    norm = sympy.sqrt(sympy.Rational(total.numerator, total.denominator))
    text = str(norm) if len(str(norm)) <= 40 else f"{float(norm):.15g} (exactly √{_short(total)})"
    return text, float(norm)


def _short(x: Fraction) -> str:
    text = str(x)
    return text if len(text) <= 40 else f"{float(x):.15g}"


__all__ = ["DesignedMethod", "Point", "SSPCoefficient", "Search", "finish"]
