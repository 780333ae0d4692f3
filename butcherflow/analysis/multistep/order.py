"""The order of a linear multistep method: its conditions C_q, judged one by one.

The method Σⱼ αⱼ y_{n+j} = h Σⱼ βⱼ f_{n+j} (j = 0..k) has order p when the conditions
C_q = Σⱼ (j^q αⱼ − q j^{q−1} βⱼ) / q! vanish for q = 0..p. Consistency (C_0 = ρ(1) = 0 and
C_1 = ρ'(1) − σ(1) = 0) is part of the definition: a method that fails it has order 0, however
many later conditions it meets. A numeric declaration's C_q is computed exactly from its digits
and judged against the most the entries' precision can move it (C_q is linear in them).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import flint
import sympy

from ...methods import LinearMultistep
from ...methods.entries.balls import ball
from ...methods.entries.precision import Judgement, judge_enclosure, judge_exact, working_precision
from ..budget import Deadline
from ..exact.root_condition import ZETA
from ..search import search_order


def condition(alpha: Sequence[sympy.Expr], beta: Sequence[sympy.Expr], q: int) -> sympy.Expr:
    """The order condition C_q = Σⱼ (j^q αⱼ − q j^{q−1} βⱼ) / q!, exactly (C_0 = Σⱼ αⱼ).

    **Arguments:** `alpha`, `beta`: the k + 1 coefficients of ρ and σ, lowest power first;
    `q`: the order of the condition.

    **Returns:** C_q, expanded (0 exactly when the condition holds identically).
    """
    total = sympy.Integer(0)
    for j, (a, b) in enumerate(zip(alpha, beta, strict=True)):
        total += sympy.Integer(j) ** q * a
        if q > 0:
            total -= q * sympy.Integer(j) ** (q - 1) * b
    return sympy.expand(total / sympy.factorial(q))


def _scale(steps: int, q: int, alpha: Sequence[Any], beta: Sequence[Any]) -> Fraction:
    """The size of C_q's terms, Σⱼ (j^q |αⱼ| + q j^(q−1) |βⱼ|) / q!: the resolution's scale."""
    total = Fraction(0)
    for j in range(steps + 1):
        a, b = _magnitude(alpha[j]), _magnitude(beta[j])
        total += j**q * a + (q * j ** (q - 1) * b if q else 0)
    return max(total / math.factorial(q), Fraction(1, math.factorial(q)))


def _magnitude(x: sympy.Expr) -> Fraction:
    if x.is_Rational:
        return abs(Fraction(int(x.p), int(x.q)))
    return Fraction(abs(float(x)))


def _bound(method: LinearMultistep, q: int) -> Fraction:
    """How far C_q can move when every αⱼ, βⱼ moves within its precision (C_q is linear)."""
    total = Fraction(0)
    numbers = method.numbers
    for j, (a, b) in enumerate(zip(numbers.alpha, numbers.beta, strict=True)):
        total += j**q * a.rounding
        if q:
            total += q * j ** (q - 1) * b.rounding
    return total / math.factorial(q)


def judge_condition(method: LinearMultistep, q: int, value: sympy.Expr) -> Judgement:
    """The verdict on one order condition.

    **Arguments:**

    - `method`: the method (its precision decides how a numeric declaration is judged).
    - `q`: the order of the condition.
    - `value`: C_q computed exactly from the digits (`condition`).

    **Returns:** a `Judgement`: exact for exact coefficients and families, from a ball holding
    C_q of every method within the precision for numeric ones.
    """
    if value.free_symbols:  # a family: only an identity counts
        return judge_exact(value, bool(sympy.simplify(value) == 0))
    zero = vanishes(value)
    if not method.numeric:
        return judge_exact(value, zero)
    bound = _bound(method, q)
    with flint.ctx.workprec(working_precision(method.numbers.flat)):
        enclosure = ball(value, bound)
        scale = _scale(method.steps, q, method.alpha, method.beta)
        return judge_enclosure(enclosure, scale, lambda: zero)


def error_constant_radius(method: LinearMultistep, q: int, value: sympy.Expr) -> float | None:
    """How far the error constant C_q/σ(1) of a numeric declaration can lie from the digits' own
    `value`: a ball holding it for every method within the precision (C_q and σ(1) are linear in
    the entries, each enclosed by its own bound).

    **Arguments:** `method`: a numeric declaration (no symbols); `q`: p + 1; `value`: the digits'
    C_q/σ(1).

    **Returns:** the radius, rounded up to a float; None when σ(1)'s ball holds 0 (no method
    within the precision need have a normalised error constant).
    """
    sigma_rounding = sum((x.rounding for x in method.numbers.beta), Fraction(0))
    with flint.ctx.workprec(working_precision(method.numbers.flat)):
        sigma_1 = ball(sum(method.beta, sympy.Integer(0)), sigma_rounding)
        if sigma_1.contains(0):
            return None
        spread = ball(condition(method.alpha, method.beta, q), _bound(method, q)) / sigma_1
        spread -= ball(value)
        # float() rounds to nearest: one step up keeps the radius an upper bound
        return math.nextafter(float((abs(spread.mid()) + spread.rad()).upper()), math.inf)


def vanishes(value: sympy.Expr) -> bool:
    """Whether an exact value (rational, radical or other algebraic) is exactly zero.

    **Arguments:** `value`: an exact sympy expression.

    **Returns:** True exactly when it is 0 (its minimal polynomial is ζ; sympy's `equals` for
    what is not algebraic).
    """
    if value == 0:
        return True
    if value.is_Rational:
        return False
    try:  # radicals: exactly zero iff the minimal polynomial is ζ itself
        return bool(sympy.minimal_polynomial(value, ZETA) == ZETA)
    except (NotImplementedError, sympy.polys.polyerrors.NotAlgebraic):
        return bool(value.equals(0))


def dahlquist_barrier(steps: int, explicit: bool) -> int:
    """Dahlquist's first barrier: the highest order of a zero-stable k-step method.

    **Arguments:** `steps`: k; `explicit`: whether β_k = 0.

    **Returns:** k + 2 for even k, k + 1 for odd k, k when explicit.
    """
    if explicit:
        return steps
    return steps + 2 if steps % 2 == 0 else steps + 1


@dataclass(frozen=True)
class MultistepOrder:
    """What the search of C_0, C_1, ... established (`search_multistep_order`)."""

    order: int
    upper: int | None
    consistent: bool | None  # C_0 = C_1 = 0; None: the digits cannot decide it
    conditions: list[sympy.Expr]
    failing: list[tuple[int, Judgement]]  # the conditions of order + 1 that fail
    undetermined: list[tuple[int, Judgement]]
    stopped: str | None


def search_multistep_order(
    method: LinearMultistep, limit: int, bound: int | None, capped: bool
) -> MultistepOrder:
    """Judge C_0, C_1, ... up to the first failure (consistency, C_0 = C_1 = 0, is part of the
    definition of order 1).

    **Arguments:**

    - `method`: the linear multistep method.
    - `limit`: the last order examined.
    - `bound`: the highest order the method can have (`dahlquist_barrier`; None: none known).
    - `capped`: `limit` is the caller's own (`search.search_order`).

    **Returns:** a `MultistepOrder`.
    """
    conditions: list[sympy.Expr] = []

    def judged_at(n: int) -> list[tuple[int, Judgement]]:
        while len(conditions) <= n:
            conditions.append(condition(method.alpha, method.beta, len(conditions)))
        qs = (0, 1) if n == 1 else (n,)
        return [(q, judge_condition(method, q, conditions[q])) for q in qs]

    found = search_order(
        judged_at, limit=limit, deadline=Deadline.never(), bound=bound, capped=capped
    )
    # order 0 is inconsistent only where C_0 or C_1 fails (then the upper bound is 0)
    consistent = True if found.order >= 1 else (False if found.upper == 0 else None)
    return MultistepOrder(
        found.order,
        found.upper,
        consistent,
        conditions,
        found.failing,
        found.undetermined,
        found.stopped,
    )


def reversed_reading(method: LinearMultistep, found: MultistepOrder, limit: int) -> str | None:
    """A note for coefficients that read better newest first, as many tables print them (BDF2
    as 3/2, -2, 1/2 with beta 1, 0, 0): the lists are read oldest first, and their reversal is a
    method of higher order.

    **Arguments:** `method`: a declaration without symbols; `found`: its order search; `limit`:
    the last order examined.

    **Returns:** the note, or None when the reversal is no k-step method of higher order.
    """
    if method.symbols or vanishes(method.alpha[0]):
        return None
    flipped = LinearMultistep(method.numbers.alpha[::-1], method.numbers.beta[::-1])
    order = search_multistep_order(flipped, limit, None, False).order
    if order <= found.order:
        return None
    return (
        f"alpha and beta are read oldest first (alpha_0 .. alpha_k); read newest first "
        f"(both lists reversed), these coefficients are a method of order {order}: if the "
        "table printed them newest first, reverse both lists"
    )


def raising_notes(method: LinearMultistep, found: MultistepOrder, limit: int) -> list[str]:
    """Which parameter values of a family meet the conditions that fail generically.

    **Arguments:**

    - `method`: a family (coefficients with free symbols).
    - `found`: its search (`search_multistep_order`), whose failing conditions are solved.
    - `limit`: the last order examined for each member found.

    **Returns:** one note per solution (at most eight) with the order it reaches, or one line
    saying that no value raises the order or that sympy could not solve.
    """
    symbols = sorted(method.symbols, key=str)
    names = ", ".join(map(str, symbols))
    equations = [j.residual for _, j in found.failing]
    try:
        solutions = sympy.solve(equations, symbols, dict=True)
    except NotImplementedError:
        return [f"sympy could not solve the next order condition for {names}"]
    notes = []
    for solution in solutions[:8]:
        alpha, beta = (
            [sympy.expand(x.subs(solution)) for x in v] for v in (method.alpha, method.beta)
        )
        if not vanishes(alpha[-1]):  # else it is no longer a k-step method
            member = LinearMultistep(alpha, beta, name=method.name)
            order = search_multistep_order(member, limit, None, False).order
            where = ", ".join(f"{s} = {v}" for s, v in solution.items())
            notes.append(f"{where} raises the order from {found.order} to {order}")
    return notes or [f"no value of {names} raises the order above {found.order}"]
