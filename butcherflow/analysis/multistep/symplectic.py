"""G-symplecticity of a linear multistep method, decided in the forms that can say yes.

The underlying one-step method of a linear multistep method is never symplectic (Tang 1993),
and its 2k-value form (`GeneralLinear.from_method`: past y and h·f) has a zero row in V, so it
can only answer no. Both forms here carry the k values y_{n+k−1}, …, y_n (`y(x − i·h)`), V the
companion matrix of ρ (α_k = 1), and are decided exactly by `g_symplectic`:

- the **method itself**: one stage per f its step reads (Yⱼ = y_{n+j} where βⱼ ≠ 0), the same
  sequence y_n. The leapfrog is G-symplectic with G = [[0, 1], [1, 0]]; with two nonzero βⱼ,
  DA + AᵀD = BᵀGB and DU = BᵀGV leave only singular G.
- its **one-leg counterpart** ρ(E)x_n = h σ(1) f(σ(E)x_n/σ(1)) (Dahlquist 1975: y_n =
  σ(E)x_n/σ(1) then solves the multistep method), one stage: G-symplectic exactly when the
  method is symmetric, ρ and σ coprime (Eirola and Sanz-Serna, Numer. Math. 61, 1992; Hairer,
  Lubich and Wanner XV.4). A "no" beside a "yes" says the method keeps a quadratic form of the
  one-leg values x_n, not of its own. docs/concepts.md, "G-symplecticity of a multistep method".
"""

from __future__ import annotations

from typing import Any

import sympy

from ...methods import GeneralLinear, LinearMultistep
from ...methods.entries.numbers import Number, substitute
from ..budget import NOT_DECIDED, Deadline, OutOfTime
from ..general_linear.symplectic import g_symplectic, witness_text

KVALUE = (
    "in its k-value form (inputs y_{n+k−1}, …, y_n, V the companion matrix of ρ, one stage per "
    "f the step reads)"
)
ONE_LEG = "its one-leg counterpart ρ(E)y_n = h σ(1) f(σ(E)y_n/σ(1))"


def _coefficients(method: LinearMultistep) -> tuple[list[sympy.Symbol], list[sympy.Symbol], Any]:
    """Symbols a₀…a_k, b₀…b_k for α and β, and `entry(expr)`: the entry `expr` in them, with the
    rounding of numeric coefficients carried through it (`numbers.substitute`)."""
    k = method.steps
    a, b = list(sympy.symbols(f"a0:{k + 1}")), list(sympy.symbols(f"b0:{k + 1}"))
    numbers = [*method.numbers.alpha, *method.numbers.beta]
    given = dict(zip(a + b, numbers, strict=True))

    def entry(expr: sympy.Expr) -> Number:
        return substitute(Number(expr, raw=str(expr)), given, "alpha", method.source)

    return a, b, entry


def _companion(method: LinearMultistep) -> tuple[list[list[Any]], list[str]]:
    """V, the companion matrix of ρ/α_k on the inputs y_{n+k−1}, …, y_n, and their start."""
    k = method.steps
    a, _, entry = _coefficients(method)
    V: list[list[Any]] = [[entry(-a[j] / a[k]) for j in reversed(range(k))]]
    V += [[int(j == i) for j in range(k)] for i in range(k - 1)]
    return V, [f"y(x - {i}*h)" for i in range(k)]


def k_value_form(method: LinearMultistep) -> GeneralLinear:
    """The method on its k values: one stage per f it reads (βⱼ ≠ 0), Yⱼ = y_{n+j} (see the
    module); the same sequence y_n, the f of a past value evaluated again."""
    k = method.steps
    a, b, entry = _coefficients(method)
    V, start = _companion(method)
    read = [j for j in range(k + 1) if method.beta[j] != 0]
    U = [V[0] if j == k else [int(i == k - 1 - j) for i in range(k)] for j in read]
    weights = [entry(b[j] / a[k]) for j in read]
    A = [weights if j == k else [0] * len(read) for j in read]
    B = [weights] + [[0] * len(read) for _ in range(k - 1)]
    return GeneralLinear(A, U, B, V, start=start, name=f"{method.name}-k-value")


def one_leg_form(method: LinearMultistep) -> GeneralLinear | None:
    """The one-leg counterpart ρ(E)y_n = h σ(1) f(σ(E)y_n/σ(1)) on its k values (None when
    σ(1) = 0): Y = Σ_{j<k} (βⱼ − β_k αⱼ)/σ(1) y_{n+j} + h β_k f(Y), y_{n+k} = −Σ_{j<k} αⱼ y_{n+j}
    + h σ(1) f(Y), with α_k = 1."""
    if sum(method.beta, sympy.Integer(0)) == 0:
        return None
    k = method.steps
    a, b, entry = _coefficients(method)
    V, start = _companion(method)
    s1 = sum(b, sympy.Integer(0)) / a[k]
    U = [[entry((b[j] - b[k] * a[j] / a[k]) / (a[k] * s1)) for j in reversed(range(k))]]
    B = [[entry(s1)]] + [[0] for _ in range(k - 1)]
    return GeneralLinear(
        [[entry(b[k] / a[k])]], U, B, V, start=start, name=f"{method.name}-one-leg"
    )


def multistep_symplectic(method: LinearMultistep, deadline: Deadline) -> tuple[bool | None, str]:
    """Whether a linear multistep method is G-symplectic in its k-value form, with its one-leg
    counterpart's verdict beside it (see the module).

    **Arguments:** `method`: the declaration; `deadline`: past it the verdict says it was not
    decided.

    **Returns:** `(True / False / None, why)`: the method's own verdict (None: undetermined at
    the precision of numeric coefficients, or not decided in time).
    """
    if method.symbols:
        return None, "not examined for parametrised families"
    own, counterpart = k_value_form(method), one_leg_form(method)
    try:
        verdict = g_symplectic(own, deadline)
        leg = None if counterpart is None else g_symplectic(counterpart, deadline)
    except OutOfTime:
        return None, f"G-symplecticity {NOT_DECIDED}"
    symmetric = _symmetric(method)
    if leg is None:
        beside = f"{ONE_LEG} is not defined: σ(1) = 0"
    elif leg.holds:
        assert leg.G is not None and leg.D is not None
        beside = f"{ONE_LEG} is G-symplectic with {witness_text(leg.G, leg.D)}"
    elif leg.holds is False:
        beside = f"{ONE_LEG} is not ({leg.failing} leaves no symmetric nonsingular G)"
    else:
        beside = f"{ONE_LEG} is undetermined ({leg.why})"
    why = (
        f"{'G-symplectic' if verdict.holds else 'not G-symplectic'} {KVALUE}: {verdict.why}; "
        f"{beside}; the method is {symmetric} (a one-leg method with ρ and σ coprime is "
        "G-symplectic exactly when it is symmetric: Eirola and Sanz-Serna 1992)"
    )
    if verdict.holds is None:
        why = f"undetermined {KVALUE}: {verdict.why}; {beside}"
    return verdict.holds, why


def _symmetric(method: LinearMultistep) -> str:
    """Whether αⱼ = −α_{k−j} and βⱼ = β_{k−j} for every j, in words."""
    k, alpha, beta = method.steps, method.alpha, method.beta
    for j in range(k + 1):
        if sympy.simplify(alpha[j] + alpha[k - j]) != 0:
            return f"not symmetric: α{j} + α{k - j} ≠ 0"
        if sympy.simplify(beta[j] - beta[k - j]) != 0:
            return f"not symmetric: β{j} ≠ β{k - j}"
    return "symmetric: αⱼ = −α_{k−j}, βⱼ = β_{k−j}"
