"""General linear methods (Butcher): r values carried from step to step, s stages per step.

    Y      = h (A ⊗ I) F(Y) + (U ⊗ I) y^[n-1]        (s stages)
    y^[n]  = h (B ⊗ I) F(Y) + (V ⊗ I) y^[n-1]        (r outputs, the next step's inputs)

Runge-Kutta methods (r = 1) and linear multistep methods (r = 2k: past values and past
derivatives) are general linear methods, and so are the learned connections across depth of
recent Transformers: hyper-connections (n streams mixed by V, read by U, written by B), mHC (V
doubly stochastic), DenseFormer (weighted averages of earlier block outputs), PCformer.

The inputs are approximations of a stated **starting procedure**: each input is a linear
combination of exact solution values y(x + θh) and scaled derivatives h·f(y(x + θh)), e.g.
`"y(x)"`, `"y(x - h)"`, `"h*f(x - h)"`, `"1/2*y(x) + 1/2*y(x - h)"`. Order is relative to it
(Butcher's order of a GLM with a starting method); the default is every input a copy of y(x),
the initial state of a hyper-connection stack.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any, final

import sympy

from ..errors import DeclarationError
from .base import CoefficientMethod, Layer, Method
from .entries.arrays import Coefficients, matrix
from .entries.numbers import Number, as_list, parse_expression, substitute
from .multistep import LinearMultistep
from .tableau import ButcherTableau

# One input of the starting procedure: (coefficient, kind, shift θ) with kind "y" (y(x + θh)) or
# "hf" (h·f(y(x + θh))).
StartTerm = tuple[sympy.Expr, str, sympy.Expr]
_X, _H = sympy.Symbol("x"), sympy.Symbol("h")
_Y, _F = sympy.Function("y"), sympy.Function("f")
_START_TEXT = re.compile(r"^[0-9A-Za-z_+\-*/().,^ \t]*$")
VALID_START = (
    "each input is a linear combination of y(x + θ*h) and h*f(x + θ*h) with constant "
    "coefficients and shifts, e.g. 'y(x)', 'y(x - h)', 'h*f(x - h)', '1/2*y(x) + 1/2*y(x - h)'"
)


# coefficients="birkhoff" (nn.birkhoff, design.depth) sums the r! permutation matrices of r streams
BIRKHOFF_MAX_STREAMS = 6
_SHAPES = "A is s×s, U is s×r, B is r×s and V is r×r (s stages, r values carried between steps)"


def _start_texts(start: Any, r: int, src: str | None) -> list[str]:
    """The starting procedure as given (default: every input y(x)), one text per input."""
    listed = ["y(x)"] * r if start is None else as_list(start)
    if isinstance(listed, (str, bytes)) or not isinstance(listed, Sequence) or len(listed) != r:
        raise DeclarationError(
            f"start must be a list of {r} starting value(s), one per input",
            key="start",
            value=start,
            valid=f"e.g. start = {['y(x)'] * r}; {VALID_START}",
            source=src,
        )
    return list(listed)


def parse_start_term(text: str, key: str, src: str | None) -> list[StartTerm]:
    """'1/2*y(x) + h*f(x - h)' -> [(1/2, 'y', 0), (1, 'hf', -1)]."""
    if not isinstance(text, str) or not text.strip() or not _START_TEXT.match(text):
        raise DeclarationError(
            "not a starting value", key=key, value=text, valid=VALID_START, source=src
        )
    names = {"x": _X, "h": _H, "y": _Y, "f": _F}
    expr = parse_expression(text, names, key, src, VALID_START)
    terms: list[StartTerm] = []
    for term in sympy.Add.make_args(sympy.expand(expr)):
        calls = [a for a in term.atoms(sympy.core.function.AppliedUndef)]
        if len(calls) != 1 or len(calls[0].args) != 1:
            raise DeclarationError(
                "each term needs exactly one y(...) or h*f(...)",
                key=key,
                value=text,
                valid=VALID_START,
                source=src,
            )
        call = calls[0]
        rest = sympy.simplify(term / call)
        kind = "y" if call.func == _Y else "hf"
        if kind == "hf":
            rest = sympy.simplify(rest / _H)
        shift = sympy.simplify((call.args[0] - _X) / _H)
        if rest.free_symbols or shift.free_symbols or not (rest.is_Rational and shift.is_Rational):
            raise DeclarationError(
                "coefficients and shifts must be rational numbers (f needs a factor h)",
                key=key,
                value=text,
                valid=VALID_START,
                source=src,
            )
        terms.append((rest, kind, shift))
    return terms


@final
class GeneralLinear(CoefficientMethod):
    """A general linear method (A, U, B, V) with a stated starting procedure.

    **Arguments:**

    - `A`: s×s stage coefficients (strictly lower triangular for explicit stages; implicit ones
      are analysed but have no layer).
    - `U`: s×r: how the stages read the r inputs.
    - `B`: r×s: how the outputs take the stage derivatives.
    - `V`: r×r: how the outputs take the inputs (the stream-mixing matrix of hyper-connections).
    - `start`: r starting values, each a string such as `"y(x)"`, `"y(x - h)"`, `"h*f(x)"`
      (default: every input `"y(x)"`, copies of the initial state).
    - `precision`: judge every non-zero entry at this precision (see `ButcherTableau`).
    - `name`, `order`, `title`, `reference`: see `Method`.

    Entries follow the tableau rules: exact by default, floats and decimals numeric, symbols for
    parametrised families (learned connections start at declared values).
    """

    family = "general-linear"
    keys = ("A", "U", "B", "V", "start", "precision")
    required = ("A", "U", "B", "V")
    numbers: Coefficients  # A, U, B, V
    start: tuple[tuple[StartTerm, ...], ...]
    _start_given: tuple[str, ...] | None

    def __init__(
        self,
        A: Any,
        U: Any,
        B: Any,
        V: Any,
        *,
        start: Sequence[str] | None = None,
        precision: Any = None,
        name: str | None = None,
        order: int | None = None,
        title: str | None = None,
        reference: str | None = None,
        source: str | Path | None = None,
    ) -> None:
        self._set_common(name, order, title, reference, source)
        src, declared = self.source, self._set_precision(precision)
        a = matrix(A, "A", src, precision=declared, valid=_SHAPES)
        v = matrix(V, "V", src, precision=declared, valid=_SHAPES)
        s, r = len(a), len(v)
        u = matrix(U, "U", src, rows=s, cols=r, precision=declared, valid=_SHAPES)
        b = matrix(B, "B", src, rows=r, cols=s, precision=declared, valid=_SHAPES)
        texts = _start_texts(start, r, src)
        self._set(
            numbers=Coefficients({"A": a, "U": u, "B": b, "V": v}),
            start=tuple(
                tuple(parse_start_term(t, f"start[{i}]", src)) for i, t in enumerate(texts)
            ),
            _start_given=None if start is None else tuple(texts),
        )

    def _declared(self) -> dict[str, Any]:
        return {
            **self.numbers.raw,
            "start": None if self._start_given is None else list(self._start_given),
            "precision": self._precision_raw,
        }

    @cached_property
    def A(self) -> tuple[tuple[sympy.Expr, ...], ...]:
        return self.numbers.A.values

    @cached_property
    def U(self) -> tuple[tuple[sympy.Expr, ...], ...]:
        return self.numbers.U.values

    @cached_property
    def B(self) -> tuple[tuple[sympy.Expr, ...], ...]:
        return self.numbers.B.values

    @cached_property
    def V(self) -> tuple[tuple[sympy.Expr, ...], ...]:
        return self.numbers.V.values

    @property
    def is_explicit(self) -> bool:
        """Strictly lower-triangular A: every stage is computed from earlier ones."""
        s = len(self.A)
        return all(self.A[i][j] == 0 for i in range(s) for j in range(i, s))

    @property
    def layer(self) -> Layer:
        if not self.is_explicit:
            return Layer(
                False,
                "not compiled: implicit stages (A not strictly lower triangular) have no layer",
                key="A",
                valid="0 on and above the diagonal of A",
            )
        return Layer(
            True,
            f"bf.compile_stack: {self.values} streams carried across layers, "
            f"{self.stages} field call(s) per layer",
        )

    @property
    def stages(self) -> int:
        return len(self.A)

    @property
    def values(self) -> int:
        """r, the number of values carried from step to step (streams)."""
        return len(self.V)

    def subs(self, values: Mapping[Any, Any]) -> GeneralLinear:
        """A member of a parametrised family: substitute values for the symbols (entries as in
        `ButcherTableau.subs`; the member keeps the name, the starting procedure and a declared
        precision)."""
        member = self._member(self.member_values(values))
        return GeneralLinear(
            member.A,
            member.U,
            member.B,
            member.V,
            start=self._start_given,
            precision=self._precision_raw,
            name=self.name,
            source=self.source,  # later errors on the member still name the family's file
        )

    def start_text(self) -> list[str]:
        """The starting procedure, one string per input."""
        return [_start_string(terms) for terms in self.start]

    @classmethod
    def from_method(cls, method: Method) -> GeneralLinear:
        """A Runge-Kutta method or a linear multistep method as the general linear method it is.

        A tableau (A, b) is (A, U = 1, B = bᵀ, V = 1) with input y(x). A k-step method
        Σ αⱼ y_{n+j} = h Σ βⱼ f_{n+j} (scaled to α_k = 1) has one stage, the new value, and
        r = 2k inputs y(x), y(x − h), …, y(x − (k−1)h), h·f(x), …, h·f(x − (k−1)h).
        """
        convert = AS_GENERAL_LINEAR.get(type(method))
        if convert is None:
            raise DeclarationError(
                f"'{method.name}' is a {method.family} method; only Runge-Kutta and multistep "
                "methods convert to general linear methods",
                key="method",
                value=method.name,
            )
        return convert(cls, method)

    @classmethod
    def of_layer_stages(cls, method: Method | None) -> GeneralLinear | None:
        """The general linear method a declaration's block computes when each stage stores the
        whole layer (`stage = "layer"`), or None for a family without that form (`LAYER_STAGES`:
        Runge-Kutta tableaux only; None: no declaration)."""
        convert = LAYER_STAGES.get(type(method))
        return None if convert is None else convert(method)

    @classmethod
    def from_layer_stages(cls, tableau: ButcherTableau) -> GeneralLinear:
        """The block a tableau gives when each stage stores the whole layer L(y) = y + F(y)
        (`stage = "layer"`, the ODE Transformer's released code), written in F at step size 1.

        Yᵢ = y + Σⱼ aᵢⱼL(Yⱼ) and y' = y + Σᵢ bᵢL(Yᵢ) solve to the general linear method
        U = (I − A)⁻¹1, A' = (I − A)⁻¹A, B = bᵀ(I − A)⁻¹, V = 1 + bᵀ(I − A)⁻¹1: Heun becomes
        V = 5/2, not preconsistent (the gallery's "What the reference code computes").
        """
        s = tableau.stages
        inverse = layer_stage_inverse(tableau)
        a = sympy.Matrix(s, s, lambda i, j: tableau.A[i][j])
        b = sympy.Matrix([list(tableau.b)])
        ones = sympy.ones(s, 1)

        def rows(m: sympy.Matrix) -> list[list[str]]:
            return [[str(sympy.simplify(x)) for x in m.row(i)] for i in range(m.rows)]

        return cls(
            rows(inverse * a),
            rows(inverse * ones),
            rows(b * inverse),
            rows(sympy.Matrix([[1]]) + b * inverse * ones),
            name=f"{tableau.name}-layer-stages",
            title=f"{tableau.title}, each stage storing the whole layer y + F(y)",
            reference=tableau.reference,
        )


def layer_stage_inverse(tableau: ButcherTableau) -> sympy.Matrix:
    """(I − A)⁻¹, which a tableau's stages need when each stores the whole layer y + F(y):
    Yᵢ = y + Σⱼ aᵢⱼ(Yⱼ + F(Yⱼ)) determines the stages only where I − A is invertible.

    **Arguments:**

    - `tableau`: the Runge-Kutta method compiled with `stage = "layer"`.

    **Returns:** the exact inverse, `(s, s)`; raises `DeclarationError` (key `stage`) where
    I − A is singular (an implicit stage with aᵢᵢ = 1, as backward Euler: the stage equation
    Y = y + Y + F(Y) says only F(Y) = −y).
    """
    s = tableau.stages
    shifted = sympy.eye(s) - sympy.Matrix(s, s, lambda i, j: tableau.A[i][j])
    if sympy.simplify(shifted.det()) == 0:
        raise DeclarationError(
            f"'{tableau.name}' cannot store whole layers as its stages: I - A is singular, so "
            "Y = y + A(Y + F(Y)) does not determine the stages",
            key="stage",
            value="layer",
            valid="stage = 'branch' for this tableau, or a tableau with I - A invertible",
        )
    return shifted.inv()


def _from_tableau(cls: type[GeneralLinear], method: ButcherTableau) -> GeneralLinear:
    s = method.stages
    return cls(
        method.numbers.A,
        [[1] for _ in range(s)],
        [method.numbers.b],
        [[1]],
        name=f"{method.name}-glm",
        order=method.order,
        title=f"{method.title} as a general linear method",
        reference=method.reference,
    )


def _from_multistep(cls: type[GeneralLinear], m: LinearMultistep) -> GeneralLinear:
    k = m.steps
    top, entry = sympy.symbols("top entry")

    def scaled(x: Number, sign: int) -> Number:
        """±x/α_k, carrying the rounding of both: each entry keeps its own digits (exact α
        stay exact beside numeric β, so V's eigenvalues are judged at α's rounding)."""
        ratio = Number(sign * entry / top, raw=f"{sign}*entry/top")
        return substitute(ratio, {entry: x, top: alpha[k]}, "alpha", m.source)

    # Inputs, newest first: y_{n+k-1} .. y_n, then h f_{n+k-1} .. h f_n; one stage, y_{n+k}.
    alpha, beta = m.numbers.alpha, m.numbers.beta
    stage_row = [scaled(alpha[j], -1) for j in reversed(range(k))]
    stage_row += [scaled(beta[j], 1) for j in reversed(range(k))]
    implicit = scaled(beta[k], 1)
    r = 2 * k
    V: list[list[Any]] = [stage_row]
    V += [[1 if j == i else 0 for j in range(r)] for i in range(k - 1)]  # y values shift down
    V.append([0] * r)  # h f of the new value comes from the stage
    V += [[1 if j == k + i else 0 for j in range(r)] for i in range(k - 1)]
    B: list[list[Any]] = [[0] for _ in range(r)]
    B[0], B[k] = [implicit], [1]
    start = [f"y(x - {j}*h)" for j in range(k)] + [f"h*f(x - {j}*h)" for j in range(k)]
    return cls(
        [[implicit]],
        [stage_row],
        B,
        V,
        start=start,
        name=f"{m.name}-glm",
        order=m.order,
        title=f"{m.title} as a general linear method",
        reference=m.reference,
    )


def _start_string(terms: Sequence[StartTerm]) -> str:
    parts = []
    for coeff, kind, shift in terms:
        where = "x" if shift == 0 else f"x {'+' if shift > 0 else '-'} {abs(shift)}*h"
        call = f"y({where})" if kind == "y" else f"h*f({where})"
        parts.append(call if coeff == 1 else f"{coeff}*{call}")
    return " + ".join(parts) if parts else "0"


AS_GENERAL_LINEAR: dict[type[Method], Callable[[type[GeneralLinear], Any], GeneralLinear]] = {
    ButcherTableau: _from_tableau,
    LinearMultistep: _from_multistep,
}
"""The families that are general linear methods, and how each is written as one
(`GeneralLinear.from_method`): a family that converts adds its line here."""

LAYER_STAGES: dict[type[Method | None], Callable[[Any], GeneralLinear]] = {
    ButcherTableau: GeneralLinear.from_layer_stages,
}
"""The families whose stages can store the whole layer y + F(y) (`stage = "layer"`), and the
general linear method each then is (`GeneralLinear.of_layer_stages`)."""
