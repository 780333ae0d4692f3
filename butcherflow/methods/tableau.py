"""Runge-Kutta methods as Butcher tableaux: explicit, diagonally implicit and fully implicit."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from functools import cached_property
from pathlib import Path
from typing import Any, final

import flint
import sympy

from ..errors import DeclarationError
from .base import CoefficientMethod, Layer, check_count, check_flag, check_order
from .entries.arrays import Coefficients, NumberArray, matrix, vector
from .entries.numbers import Number, is_zero
from .entries.precision import Verdict, judge_enclosure, working_precision
from .entries.typeset import butcher_array
from .parameters import KINDS, Parameter, parse_parameters, raw_parameters

# Coefficient policies (ODE Transformer Table 10), each stated as the declaration it compiles to
# (`ButcherTableau.with_coefficients`): the compiler knows only declarations and parameters.
POLICIES = ("exact", "unit", "learned", "gated", "tanh")
# The trained policies: the kind of their weights' parameters, and whether those can start at
# the tableau's weights (else at the kind's own start).
TRAINED: dict[str, tuple[str, Callable[[list[float]], bool]]] = {
    "learned": ("learned", lambda w: True),
    "tanh": ("tanh", lambda w: all(abs(x) < 1 for x in w)),
    "gated": ("softmax", lambda w: all(x > 0 for x in w) and abs(sum(w) - 1.0) < 1e-12),
}


def _node_verdict(c: Number, row: Sequence[Number]) -> Verdict:
    """Does the node c equal the row sum of A? Exact entries are compared exactly, numeric ones
    in ball arithmetic with the rule of every other condition (`precision.py`), at scale 1."""
    diff = c.value - sympy.Add(*(x.value for x in row))
    if not (c.numeric or any(x.numeric for x in row)) or diff.free_symbols:
        return Verdict.MET if sympy.simplify(diff) == 0 else Verdict.FAILS
    with flint.ctx.workprec(working_precision([c, *row])):
        enclosure = c.ball() - sum((x.ball() for x in row), flint.arb(0))
        return judge_enclosure(enclosure, Fraction(1), lambda: diff == 0).verdict


def row_sums(a: NumberArray) -> NumberArray:
    """The default nodes c: A's row sums, each carrying its row's roundings."""

    def total(row: NumberArray) -> Number:
        value = sympy.Add(*(x.value for x in row))
        return Number(value, sum((x.rounding for x in row), Fraction(0)), str(value))

    return NumberArray("c", tuple(total(row) for row in a))


def _short(value: sympy.Expr) -> str:
    text = str(value)
    if len(text) <= 40:
        return text
    return f"{text[:37]}..." if value.free_symbols else f"{float(value):.17g}"


def _digits_hint(c: Number, row: Sequence[Number], declared: Fraction | None) -> str:
    """Where a mismatch sits at the level of the digits, say how to declare that precision."""
    difference = c.value - sympy.Add(*(x.value for x in row))
    if difference.free_symbols:  # a family: no digits to speak of
        return ""
    diff = abs(float(difference))
    if declared is not None:
        return f" (declared precision {float(declared):.3g})"
    if 0 < diff < 1e-12:
        exponent = math.floor(math.log10(diff)) + 1
        return (
            f"; the difference ({diff:.2g}) is at the level of the digits: if the entries are "
            f"rounded decimals, declare precision = 1e{exponent} (or coarser) to judge every "
            "entry at that precision"
        )
    return ""


PER_STAGE = {"b": "weights", "c": "nodes or omit c", "b_hat": "weights"}  # s of each


@final
class ButcherTableau(CoefficientMethod):
    """A Runge-Kutta method: stages Kᵢ = f(t + cᵢh, y + h Σⱼ aᵢⱼKⱼ), step y + h Σᵢ bᵢKᵢ.

    **Arguments:**

    - `A`: the s×s stage matrix, a list of s rows of s entries.
    - `b`: the s weights.
    - `c`: the s nodes; by default the row sums of `A`. A given `c` must equal the row sums
      unless `row_sum_c=False`, in which case the analysis uses it for non-autonomous problems.
    - `b_hat`: weights of an embedded method (error estimation), optional.
    - `name`, `order`, `title`, `reference`: see `Method`. `embedded_order` is the claimed order
      of `(A, b_hat)`.
    - `iterations`: fixed-point iterations used when an implicit tableau is compiled into a layer.
    - `parameters`: how a family's symbols become parameters of the layer, symbol -> kind or
      `{"kind": ..., "init": ...}` (`butcherflow.methods.parameters`): `{"g": "gate"}` makes
      `b = ["g", "1 - g"]` the ODE Transformer's gated RK2 block.

    Entries are exact (ints, `"p/q"`, Fractions, sympy expressions, symbols of a parametrised
    family); floats, Decimals and decimal strings make the tableau numeric.

    `numbers` holds the parsed entries (`numbers.A[i][j]`, `numbers.b`, ...: value, rounding,
    raw form); `A`, `b`, `c`, `b_hat` are their exact sympy values (tuples); `stages`,
    `is_explicit`, `is_diagonally_implicit`, `numeric`, `symbols` describe the tableau.
    """

    family = "runge-kutta"
    keys = (
        "A",
        "b",
        "c",
        "b_hat",
        "embedded_order",
        "row_sum_c",
        "iterations",
        "precision",
        "parameters",
        "tableau",
    )
    required = ("A", "b")
    numbers: Coefficients  # A, b, c (as given, or A's row sums), b_hat (when declared)
    embedded_order: int | None
    row_sum_c: bool
    iterations: int | None
    undetermined_nodes: tuple[str, ...]  # the given nodes the digits leave open (`_nodes`)
    _given_c: bool

    def __init__(
        self,
        A: Sequence[Sequence[Any]],
        b: Sequence[Any],
        c: Sequence[Any] | None = None,
        b_hat: Sequence[Any] | None = None,
        *,
        name: str | None = None,
        order: int | None = None,
        embedded_order: int | None = None,
        row_sum_c: bool = True,
        iterations: int | None = None,
        precision: Any = None,
        parameters: Any = None,
        title: str | None = None,
        reference: str | None = None,
        source: str | Path | None = None,
    ) -> None:
        self._set_common(name, order, title, reference, source)
        src, declared = self.source, self._set_precision(precision)
        a = matrix(A, "A", src, precision=declared)
        given = {"b": b, "c": row_sums(a) if c is None else c, "b_hat": b_hat}
        s, because = len(a), f"A has {len(a)} stages"
        arrays = {"A": a} | {
            k: vector(x, k, src, length=s, precision=declared, what=PER_STAGE[k], because=because)
            for k, x in given.items()
            if x is not None or k == "b"  # b is required: vector() refuses None, naming it
        }
        self._set(
            numbers=Coefficients(arrays),
            row_sum_c=check_flag(row_sum_c, "row_sum_c", src),
            _given_c=c is not None,
            iterations=check_count(iterations, "iterations", src),
            embedded_order=check_order(embedded_order, "embedded_order", src),
        )
        self._set(undetermined_nodes=self._check(declared), _parameters=self._parse(parameters))

    def _parse(self, parameters: Any) -> dict[sympy.Symbol, Parameter]:
        """The declared parameters (a gate's or softmax's symbols may appear in b alone)."""
        arrays = self.numbers.arrays
        outside = {
            x for k in arrays if k != "b" for n in arrays[k].flat for x in n.value.free_symbols
        }
        return parse_parameters(
            parameters, self.symbols, outside_weights=outside, source=self.source
        )

    def _check(self, declared: Fraction | None) -> tuple[str, ...]:
        """Refuse an embedded order without b_hat, and check a given c against the row sums of A
        (unless `row_sum_c = false`). **Returns:** the nodes the digits leave open."""
        if self.embedded_order is not None and self.b_hat is None:
            raise self.error(
                "embedded_order is given but there is no b_hat",
                key="embedded_order",
                value=self.embedded_order,
                valid="declare b_hat or drop embedded_order",
            )
        if not self._given_c or not self.row_sum_c:
            return ()
        undetermined = []
        for i, (ci, row) in enumerate(zip(self.numbers.c, self.numbers.A, strict=True)):
            verdict = _node_verdict(ci, row)
            if verdict is Verdict.UNDETERMINED:
                undetermined.append(f"c[{i}]")
            if verdict is Verdict.FAILS:
                raise self.error(
                    f"c[{i}] = {_short(ci.value)} differs from the row sum of A[{i}] = "
                    f"{_short(sympy.Add(*(x.value for x in row)))}"
                    + (" beyond the precision of the entries" if ci.numeric else "")
                    + _digits_hint(ci, row, declared),
                    key=f"c[{i}]",
                    valid="give c equal to the row sums of A, omit c, or set "
                    "row_sum_c = false to use this c for non-autonomous problems",
                )
        return tuple(undetermined)

    def _declared(self) -> dict[str, Any]:
        return {
            **self.numbers.raw,
            "c": self.numbers.c.raw if self._given_c else None,  # (its place kept: A, b, c)
            "embedded_order": self.embedded_order,
            "row_sum_c": None if self.row_sum_c else False,
            "iterations": self.iterations,
            "precision": self._precision_raw,
            "parameters": raw_parameters(self._parameters),
        }

    # -- views: the coefficients' exact sympy values ---------------------------------------------
    @cached_property
    def A(self) -> tuple[tuple[sympy.Expr, ...], ...]:
        return self.numbers.A.values

    @cached_property
    def b(self) -> tuple[sympy.Expr, ...]:
        return self.numbers.b.values

    @cached_property
    def c(self) -> tuple[sympy.Expr, ...]:
        return self.numbers.c.values

    @cached_property
    def b_hat(self) -> tuple[sympy.Expr, ...] | None:
        return self.numbers.b_hat.values if "b_hat" in self.numbers else None

    @cached_property
    def _zero(self) -> tuple[tuple[bool, ...], ...]:
        return tuple(tuple(is_zero(x) for x in row) for row in self.numbers.A)

    # -- structure -----------------------------------------------------------------------------
    @classmethod
    def from_latex(cls, tableau: str, **kwargs: Any) -> ButcherTableau:
        """A tableau pasted as the paper's LaTeX array (`\\begin{array}{c|ccc} ... \\end{array}`:
        rows c | A, a rule, then b and optionally b̂; blank cells are 0; see
        `typeset.butcher_array`). `kwargs` are the constructor's others (`name`, `order`, ...)."""
        rows = butcher_array(tableau)
        return cls(rows["A"], rows["b"], rows["c"], rows.get("b_hat"), **kwargs)

    @classmethod
    def expand(cls, data: Mapping[str, Any]) -> dict[str, Any]:
        """A file's `tableau = '''...'''` (the LaTeX array) as its A, b, c and b_hat."""
        expanded = dict(data)
        if "tableau" not in expanded:
            return expanded
        tableau = expanded.pop("tableau")
        given = [key for key in ("A", "b", "c", "b_hat") if key in expanded]
        if given or not isinstance(tableau, str):
            raise DeclarationError(
                "a tableau is given once" if given else "tableau is the text of a LaTeX array",
                key="tableau",
                value=given or tableau,
                valid="either tableau = '''\\begin{array}...\\end{array}''' or A and b "
                "(with c, b_hat), not both",
            )
        return {**expanded, **butcher_array(tableau)}

    @property
    def as_tableau(self) -> ButcherTableau:
        return self

    @property
    def stages(self) -> int:
        return len(self.b)

    @property
    def is_explicit(self) -> bool:
        """Strictly lower-triangular A."""
        s = self.stages
        return all(self._zero[i][j] for i in range(s) for j in range(i, s))

    @property
    def is_diagonally_implicit(self) -> bool:
        """Lower-triangular A with a non-zero diagonal entry (DIRK/SDIRK); False when explicit."""
        s = self.stages
        lower = all(self._zero[i][j] for i in range(s) for j in range(i + 1, s))
        return lower and not self.is_explicit

    @property
    def is_implicit(self) -> bool:
        return not self.is_explicit

    @property
    def kind(self) -> str:
        if self.is_explicit:
            return "explicit"
        return "diagonally implicit" if self.is_diagonally_implicit else "implicit"

    def is_zero(self, i: int, j: int) -> bool:
        """`A[i][j]` is exactly zero (the compiler skips such terms)."""
        return self._zero[i][j]

    def with_weights(
        self,
        b: Sequence[Any],
        *,
        name: str | None = None,
        title: str | None = None,
        parameters: Any = None,
    ) -> ButcherTableau:
        """The same stages with other weights: e.g. the ODE Transformer's γᵢ = 1 policy."""
        return ButcherTableau(
            self.numbers.A,
            list(b),
            c=self.numbers.c,
            row_sum_c=self.row_sum_c,
            name=name or self.name,
            title=title,
            iterations=self.iterations,
            precision=self._precision_raw,
            parameters=parameters,
        )

    @property
    def layer(self) -> Layer:
        undeclared = sorted(str(s) for s in self.symbols - set(self._parameters))
        if undeclared:
            return Layer(
                False,
                f"not compiled as declared: a family with free symbols {undeclared} that are "
                "not declared parameters",
                key="parameters",
                valid="declare how they train ([parameters] g = 'gate', or { kind = 'learned', "
                "init = 1 }), or compile a member (tableau.subs({...}))",
            )
        if not self.is_implicit:
            stages = "one call per used stage"
        elif self.iterations:
            stages = f"stages solved by {self.iterations} fixed-point sweeps"
        else:
            stages = "stages solved by the fixed-point sweeps iterations= asks for (none declared)"
        how = "bf.compile: one shared field, " + stages
        trained = [f"{s}: {KINDS[p.kind]}" for s, p in self._parameters.items()]
        return Layer(True, how + ("; " + ", ".join(trained) if trained else ""))

    def with_coefficients(self, policy: str) -> ButcherTableau:
        """The declaration a block compiled with `coefficients=policy` computes: the policies
        of the ODE Transformer (Table 10) are parametrised weights.

        - `"exact"`: the tableau itself.
        - `"unit"`: every bᵢ = 1 (the paper's γᵢ = 1).
        - `"learned"`: bᵢ = learned scalars `b1..bs` starting at the tableau's weights.
        - `"gated"`: (g, 1 − g) with a per-token sigmoid gate g for two stages (Eq. 25-26),
          starting at b₁ where the weights are positive and sum to 1; a per-token softmax
          `g1..gs` over more stages.
        - `"tanh"`: per-token tanh weights `g1..gs`, starting at bᵢ where every |bᵢ| < 1.
        """
        if policy not in POLICIES:
            raise DeclarationError(
                "unknown coefficient policy",
                key="coefficients",
                value=policy,
                valid=f"one of {', '.join(POLICIES)}",
            )
        if policy == "exact":
            return self
        if self.symbols:
            raise DeclarationError(
                f"coefficients='{policy}' replaces the weights of a tableau with exact "
                f"weights, but '{self.name}' has the free symbols "
                f"{sorted(map(str, self.symbols))}",
                key="coefficients",
                value=policy,
                valid="leave coefficients unset and declare the symbols' parameters, or "
                "compile a member (tableau.subs({...}))",
            )
        s = self.stages
        if policy in ("gated", "tanh") and s < 2:
            raise DeclarationError(
                f"'{policy}' coefficients need at least two stages",
                key="coefficients",
                value=policy,
                valid="'exact', 'unit' or 'learned'",
            )
        named = {"name": f"{self.name}-{policy}", "title": f"{self.title}, {policy} weights"}
        if policy == "unit":
            return self.with_weights([1] * s, **named)
        raw, (kind, starts) = self.numbers.b.raw, TRAINED[policy]
        init = [v if starts([float(x) for x in self.b]) else None for v in raw]
        if policy == "gated" and s == 2:
            gate = {"kind": "gate", "init": init[0]}
            return self.with_weights(["g", "1 - g"], parameters={"g": gate}, **named)
        symbols = [f"{'b' if policy == 'learned' else 'g'}{i + 1}" for i in range(s)]
        declared = {x: {"kind": kind, "init": v} for x, v in zip(symbols, init, strict=True)}
        return self.with_weights(symbols, parameters=declared, **named)

    def embedded(self) -> ButcherTableau:
        """The embedded method `(A, b_hat)`; raises when there is none."""
        if self.b_hat is None:
            raise self.error("this tableau has no embedded weights", key="b_hat", value=None)
        return ButcherTableau(
            self.numbers.A,
            self.numbers.b_hat,
            c=self.numbers.c,
            row_sum_c=self.row_sum_c,
            name=f"{self.name}-embedded",
            order=self.embedded_order,
            precision=self._precision_raw,
        )

    def subs(self, values: Mapping[Any, Any]) -> ButcherTableau:
        """A member of a parametrised family: substitute values for the symbols.

        Entries without the symbols keep their `Number`; the others are the member declared
        directly (`numbers.substitute`: a decimal or float value makes them numeric, with the
        rounding it carries). The member keeps the name, a given `c`, `row_sum_c`, `iterations`,
        a declared precision and the parameters of the symbols left; claimed orders are the
        family's, not the member's, and are dropped."""
        mapping = self.member_values(values)
        member = self._member(mapping)
        return ButcherTableau(
            member.A,
            member.b,
            c=member.c if self._given_c else None,
            b_hat=member.b_hat if "b_hat" in member else None,
            row_sum_c=self.row_sum_c,
            iterations=self.iterations,
            precision=self._precision_raw,
            name=self.name,
            parameters=raw_parameters(_kept(dict(self._parameters), mapping)),
        )


def _kept(
    parameters: dict[sympy.Symbol, Parameter], substituted: dict[sympy.Symbol, Any]
) -> dict[sympy.Symbol, Parameter]:
    """The parameters of the symbols left after a substitution (a softmax stays whole or goes:
    part of it is no longer a softmax)."""
    broken = any(p.kind == "softmax" and s in substituted for s, p in parameters.items())
    return {
        s: p
        for s, p in parameters.items()
        if s not in substituted and not (broken and p.kind == "softmax")
    }
