"""Elementary weights Φ(t) of (additive) Runge-Kutta methods, exactly, memoised per tree.

For a tree t with root colour ν and children c₁..c_m, the stage vector of t is
g(t) = Π_k h(c_k) (entrywise), where h(c) = A^[colour(c)] g(c) (or a fixed vector for leaf-only
colours such as the time variable, whose vector is the nodes c), and Φ(t) = b^[ν]·g(t). The order
condition of t is Φ(t) = 1/γ(t). Every h(c) is computed once and reused by all larger trees.

Arithmetic happens in the smallest sympy domain that holds every coefficient: QQ for rational
tableaux (and for decimal ones, whose digits are rational), an algebraic field such as QQ<√6>
for Gauss-Legendre or Radau, or a polynomial ring for families with symbols.
"""

from __future__ import annotations

import copy
import functools
import math
import types
from collections.abc import Mapping, Sequence
from typing import Any

import flint
import sympy
from sympy.polys.constructor import construct_domain
from sympy.polys.domains import QQ
from sympy.polys.numberfields.subfield import primitive_element

from ...methods import ButcherTableau
from ...methods.entries.precision import Judgement, Verdict, judge_exact
from ..enclosure.weights import column_products
from .number_field import NumberField, to_sympy
from .trees import Tree, TreeFamily, by_colour

Vector = list[Any]


def smallest_domain(values: Sequence[sympy.Expr]) -> tuple[Any, list[Any]]:
    """The smallest exact sympy domain holding `values`, and the values converted into it.

    When the values are rational expressions in radicals p^(1/q), the field is built from the
    radicals themselves (one generator per base): sympy's general constructor would find a
    minimal polynomial for every composite value such as 1/(2 − 2^(1/5)) (a minute for a
    sixth-order triple jump). Otherwise sympy's constructor decides (QQ, QQ<√k>, polynomial
    rings for families).

    **Returns:** `(domain, converted values)`.
    """
    exprs = [sympy.sympify(v) for v in values]
    roots: dict[sympy.Expr, int] = {}  # base -> lcm of the root indices q of base^(p/q)

    def scan(e: sympy.Expr) -> bool:
        if e.is_Rational:
            return True
        if e.is_Add or e.is_Mul or (e.is_Pow and e.exp.is_Integer):
            return all(scan(a) for a in e.args)
        if e.is_Pow and e.exp.is_Rational and e.base.is_Rational and e.base > 0:
            roots[e.base] = math.lcm(roots.get(e.base, 1), e.exp.q)
            return True
        return False

    if not all(scan(e) for e in exprs) or not roots:
        # 1/2 joins the values so that integer tableaux get QQ (1/γ(t) is rational).
        domain, converted = construct_domain([*exprs, sympy.Rational(1, 2)], extension=True)
        return domain, list(converted)[:-1]
    # One generator base^(1/L) per base: 2^(1/3), 2^(1/5) and 2^(8/15) are powers of 2^(1/15).
    bases = list(roots)
    generators = [base ** sympy.Rational(1, roots[base]) for base in bases]
    g, span, H = primitive_element(generators, ex=True, polys=True)
    root = sympy.Add(*(s * x for s, x in zip(span, generators, strict=True)))
    domain = QQ.algebraic_field((g, root))
    images = {
        b: domain.dtype.from_list(h, g.rep.to_list(), QQ) for b, h in zip(bases, H, strict=True)
    }

    def convert(e: sympy.Expr) -> Any:
        if e.is_Rational:
            return domain.convert(e)
        if e.is_Add:
            return sum((convert(a) for a in e.args), domain.zero)
        if e.is_Mul:
            return math.prod((convert(a) for a in e.args), start=domain.one)
        if e.exp.is_Integer:
            x, n = convert(e.base), int(e.exp)
        else:
            x, n = images[e.base], int(e.exp.p * roots[e.base] // e.exp.q)
        return x**n if n >= 0 else domain.quo(domain.one, x ** (-n))

    return domain, [convert(e) for e in exprs]


def tableau_field(tableau: ButcherTableau) -> tuple[Any, Mapping[str, Any]]:
    """The smallest exact domain of the entries of a tableau, built once per tableau and shared
    by the order conditions, the stage order, R(z) and algebraic stability (finding a primitive
    element of Gauss-Legendre 5's degree-16 field costs more than its order proof).

    The field is that of A, b and b_hat. An exact c that the declaration checked against the row
    sums of A is their sum in that field: its own radicals (1/2 − √(5 + 2√70/7)/6) would ask for
    a primitive element that is not an algebraic integer, and much slower arithmetic. A numeric
    c (its digits, which may differ from the row sums within their precision) or one declared
    with `row_sum_c = false` joins the field as given.

    **Arguments:** `tableau`: the method (exact or numeric, without free symbols or with them:
    a family's field is a polynomial ring).

    **Returns:** `(domain, {name: elements})` for the arrays of `tableau.numbers` ("A": rows,
    "b", "b_hat" when declared, "c": vectors); cached and shared, so read-only.
    """
    own_c = tableau.numeric or not tableau.row_sum_c
    return _tableau_field(tableau.A, tableau.b, tableau.b_hat, tableau.c if own_c else None)


def entries_in_field(tableau: ButcherTableau) -> tuple[Any, list[list[Any]], list[Any]]:
    """The field of the entries (`tableau_field`), with A and b converted into it.

    **Arguments:** `tableau`: the method.

    **Returns:** `(field, A, b)`: the fraction field of the entries' domain (QQ rather than ZZ,
    a rational function field for a family), A as s lists of s elements and b as s elements.
    """
    domain, values = tableau_field(tableau)
    A, b = [list(row) for row in values["A"]], list(values["b"])
    field = domain.get_field()
    if field != domain:  # ZZ -> QQ, a polynomial ring -> its fraction field
        A = [[field.convert_from(x, domain) for x in row] for row in A]
        b = [field.convert_from(x, domain) for x in b]
    return field, A, b


@functools.lru_cache(maxsize=16)
def _tableau_field(
    A: tuple[tuple[sympy.Expr, ...], ...],
    b: tuple[sympy.Expr, ...],
    b_hat: tuple[sympy.Expr, ...] | None,
    c: tuple[sympy.Expr, ...] | None,
) -> tuple[Any, Mapping[str, Any]]:
    domain, converted = smallest_domain(
        [x for row in A for x in row] + [*b, *(b_hat or ()), *(c or ())]
    )
    rest = iter(converted)
    field = {"A": tuple(tuple(next(rest) for _ in b) for _ in b), "b": tuple(next(rest) for _ in b)}
    for key, given in (("b_hat", b_hat), ("c", c)):
        if given is not None:
            field[key] = tuple(next(rest) for _ in given)
    field.setdefault("c", tuple(sum(row, domain.zero) for row in field["A"]))
    # cached and shared by every caller: read-only
    return domain, types.MappingProxyType(field)


def clear_cache() -> None:
    """Forget the fields of recently analysed tableaux (a benchmark times cold runs)."""
    _tableau_field.cache_clear()


class WeightTable:
    """Elementary weights and residuals for one (additive) Runge-Kutta method.

    **Arguments:**

    - `family`: the `TreeFamily` (its colours must be keys of `A` and `b`, or of `leaves`).
    - `A`: per colour, the s×s matrix whose columns are the stages that evaluate that colour's
      field (for a plain method, `{"y": A}`).
    - `b`: per colour, the s weights.
    - `leaves`: per leaf-only colour, its fixed stage vector (e.g. `{"t": c}`).
    - `domain`: the exact domain `A`, `b` and `leaves` are already elements of (default: the
      smallest one holding them, `smallest_domain`).
    """

    def __init__(
        self,
        family: TreeFamily,
        A: Mapping[str, Sequence[Sequence[sympy.Expr]]],
        b: Mapping[str, Sequence[sympy.Expr]],
        leaves: Mapping[str, Sequence[sympy.Expr]] | None = None,
        *,
        domain: Any = None,
    ) -> None:
        leaves = leaves or {}
        self.family = family
        flat: list[sympy.Expr] = []
        shapes: list[tuple[str, str, int]] = []
        for colour, matrix in A.items():
            for row in matrix:
                flat.extend(row)
            shapes.append(("A", colour, len(matrix)))
        for colour, vec in b.items():
            flat.extend(vec)
            shapes.append(("b", colour, len(vec)))
        for colour, vec in leaves.items():
            flat.extend(vec)
            shapes.append(("leaf", colour, len(vec)))
        self.domain: Any
        if domain is not None:
            self.domain, converted = domain, flat
        else:
            self.domain, converted = smallest_domain(flat)
        self.stages = len(next(iter(b.values())))
        # A number field computes on flint polynomials in its generator (`exact/number_field.py`);
        # QQ's elements are flint rationals already.
        self._field = NumberField.of(self.domain)
        if self._field is not None:
            converted = [self._field.convert(x) for x in converted]
        self._zero, self._one = self._constants()
        self._inverses: dict[int, Any] = {}
        pos = 0
        self._rows: dict[str, list[list[tuple[int, Any]]]] = {}
        self._b: dict[str, list[tuple[int, Any]]] = {}
        self._leaves: dict[str, Vector] = {}
        zero = self._zero
        for kind, colour, n in shapes:
            if kind == "A":
                rows = []
                for _ in range(n):
                    row = converted[pos : pos + n]
                    pos += n
                    rows.append([(j, x) for j, x in enumerate(row) if x != zero])
                self._rows[colour] = rows
            else:
                vec = converted[pos : pos + n]
                pos += n
                if kind == "b":
                    self._b[colour] = [(i, x) for i, x in enumerate(vec) if x != zero]
                else:
                    self._leaves[colour] = vec
        self._g: dict[int, Vector] = {}
        self._h: dict[int, Vector] = {}
        self._phi: dict[int, Any] = {}
        self._matrices = self._rational_matrices()

    def _rational_matrices(self) -> dict[tuple[str, str], flint.fmpq_mat] | None:
        """A^[colour] and b^[colour] as flint matrices when the domain is QQ with flint
        rationals as elements (their products are batched, `prepare`); None otherwise."""
        if not (self._field is None and self.domain == QQ and self.domain.dtype is flint.fmpq):
            return None
        s = self.stages

        def dense(rows: Sequence[Sequence[tuple[int, Any]]]) -> flint.fmpq_mat:
            values = [[flint.fmpq(0)] * s for _ in rows]
            for out, row in zip(values, rows, strict=True):
                for j, x in row:
                    out[j] = x
            return flint.fmpq_mat(len(rows), s, [x for row in values for x in row])

        matrices = {("A", colour): dense(rows) for colour, rows in self._rows.items()}
        matrices.update({("b", colour): dense([row]) for colour, row in self._b.items()})
        return matrices

    def reweighted(self, b: Mapping[str, Sequence[Any]]) -> WeightTable:
        """The same method with other weights (an embedded pair's b̂): the stage vectors, which
        do not depend on the weights, are shared, not recomputed.

        **Arguments:** `b`: per colour, the s new weights, elements of `domain`.

        **Returns:** a new `WeightTable` (this one is unchanged).
        """
        other = copy.copy(self)
        field = self._field
        other._b = {
            colour: [(i, field.convert(x) if field else x) for i, x in enumerate(v) if x]
            for colour, v in b.items()
        }
        other._phi = {}
        other._matrices = other._rational_matrices()
        return other

    def _constants(self) -> tuple[Any, Any]:
        """Zero and one in the arithmetic of the stage vectors."""
        field = self._field
        if field is None:
            return self.domain.zero, self.domain.one
        return field.zero, field.one

    def _reduce(self, x: Any) -> Any:
        return x if self._field is None else self._field.reduce(x)

    def prepare(self, trees: Sequence[Tree]) -> None:
        """Compute Φ(t) for every tree in `trees` at once, with what they need: the missing
        stage vectors, order by order, and one matrix product per order and colour (for QQ, one
        flint `fmpq_mat` product: a single reduction per entry instead of one per term).

        **Arguments:** `trees`: trees of `family`, in any order (those already known are skipped).

        **Returns:** nothing; `weight`, `residual` and `is_met` then read the memo.
        """
        wanted = [t for t in trees if t.index not in self._phi]
        if not wanted:
            return
        needed: dict[int, list[tuple[str, Tree]]] = {}  # order -> ("g" or "h", tree)
        seen: set[tuple[str, int]] = set()

        def need(kind: str, tree: Tree) -> None:
            memo = self._g if kind == "g" else self._h
            if tree.index in memo or (kind, tree.index) in seen:
                return
            seen.add((kind, tree.index))
            needed.setdefault(tree.order, []).append((kind, tree))
            if kind == "h" and tree.colour not in self._leaves:
                need("g", tree)
            elif kind == "g" and tree.children:
                u, child = self.family.split(tree)
                need("g", u)
                need("h", child)

        for tree in wanted:
            need("g", tree)
        for n in sorted(needed):
            for kind, tree in needed[n]:
                if kind == "g":
                    self._g[tree.index] = self._stage_vector(tree)
            children = [tree for kind, tree in needed[n] if kind == "h"]
            for colour, group in by_colour(children):
                if colour in self._leaves:
                    for tree in group:
                        self._h[tree.index] = self._leaves[colour]
                    continue
                for tree, h in zip(group, self._products(colour, group), strict=True):
                    self._h[tree.index] = h
        for colour, group in by_colour(wanted):
            for tree, (phi,) in zip(
                group, self._products(colour, group, weights=True), strict=True
            ):
                self._phi[tree.index] = phi

    def _stage_vector(self, tree: Tree) -> Vector:
        """g(t) = g(u) ∘ h(s) entrywise, for t = u + s (`TreeFamily.split`); ones for a leaf."""
        if not tree.children:
            return [self._one] * self.stages
        u, child = self.family.split(tree)
        h = self._h[child.index]
        return [self._reduce(x * y) for x, y in zip(self._g[u.index], h, strict=True)]

    def _products(self, colour: str, trees: Sequence[Tree], weights: bool = False) -> list[Vector]:
        """h(t) = A^[colour] g(t) (or, with `weights`, [Φ(t)] = [b^[colour]·g(t)]) for every
        tree in `trees`, whose stage vectors are known."""
        columns = [self._g[t.index] for t in trees]
        matrix = self._matrices.get(("b" if weights else "A", colour)) if self._matrices else None
        if matrix is not None:
            return column_products(matrix, columns)
        rows = [self._b[colour]] if weights else self._rows[colour]
        zero = self._zero
        out = []
        for g in columns:
            vector = []
            for row in rows:
                acc = zero
                for j, a in row:
                    acc += a * g[j]
                vector.append(self._reduce(acc))
            out.append(vector)
        return out

    def _weight(self, tree: Tree) -> Any:
        """Φ(t) in the arithmetic of the stage vectors."""
        if tree.index not in self._phi:
            self.prepare([tree])
        return self._phi[tree.index]

    def _residual(self, tree: Tree) -> Any:
        """Φ(t) − 1/γ(t) in the arithmetic of the stage vectors."""
        inverse = self._inverses.get(tree.density)
        if inverse is None and self._matrices is not None:  # QQ, flint rationals
            inverse = self._inverses[tree.density] = flint.fmpq(1, tree.density)
        if inverse is None:
            inverse = self.domain.convert(sympy.Rational(1, tree.density))
            if self._field is not None:
                inverse = self._field.convert(inverse)
            self._inverses[tree.density] = inverse
        return self._weight(tree) - inverse

    def _element(self, x: Any) -> Any:
        return x if self._field is None else self._field.element(x)

    def weight(self, tree: Tree) -> Any:
        """Φ(t), a domain element."""
        return self._element(self._weight(tree))

    def residual(self, tree: Tree) -> Any:
        """Φ(t) − 1/γ(t), a domain element; zero exactly when the order condition of t holds."""
        return self._element(self._residual(tree))

    def is_met(self, tree: Tree) -> bool:
        """Whether Φ(t) = 1/γ(t) exactly."""
        return bool(self._residual(tree) == self._zero)

    def residual_float(self, tree: Tree) -> float:
        """Φ(t) − 1/γ(t) as a float (for error norms; never for a verdict)."""
        if self._field is not None:
            return self._field.to_float(self._residual(tree))
        return float(self.to_sympy(self._residual(tree)))

    def judge(self, tree: Tree) -> Judgement:
        """The verdict on the order condition of t (its residual converted to sympy only when
        someone reads it)."""
        if self.is_met(tree):
            return judge_exact(sympy.S.Zero, True)
        return Judgement(Verdict.FAILS, compute=lambda: self.to_sympy(self.residual(tree)))

    def to_sympy(self, element: Any) -> sympy.Expr:
        return to_sympy(self.domain, element)


def judge_element(domain: Any, residual: Any) -> Judgement:
    """The verdict on a condition whose residual is an element of an exact domain; converted to
    sympy only when it fails (the conversion out of an algebraic field costs more than the
    condition: Gauss-Legendre 5 spent a quarter of its proof there)."""
    if residual == domain.zero:
        return judge_exact(sympy.S.Zero, True)
    return Judgement(Verdict.FAILS, compute=lambda: to_sympy(domain, residual))
