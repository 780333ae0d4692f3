"""What every declaration shares: a name, a reference, a claimed order, the file it came from."""

from __future__ import annotations

import abc
import numbers
import re
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, final

import sympy

from ..errors import DeclarationError
from .entries.arrays import Coefficients
from .entries.numbers import Number, parse_number, parse_precision, substitute
from .parameters import Parameter

if TYPE_CHECKING:  # the families that override `position_flow`, `as_tableau`: return types only
    from .continuous import ContinuousDynamics
    from .tableau import ButcherTableau

NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


def check_name(name: Any, source: str | Path | None) -> str:
    """Any one-line name people use ("GL3", "RK44", "rk4"); catalog files are stricter
    (`file_safe_name`), since their name is also their file name."""
    if name is None:
        return "unnamed"
    if not isinstance(name, str) or not name.strip() or not name.isprintable() or len(name) > 100:
        raise DeclarationError(
            "invalid name",
            key="name",
            value=name,
            valid="a name is one printable line of at most 100 characters, e.g. 'GL3'",
            source=source,
        )
    return name


def file_safe_name(name: str) -> bool:
    """Catalog entries (`solvers/NAME.toml`): lowercase words joined by hyphens, e.g. 'rk4'."""
    return bool(NAME.match(name))


def check_order(order: Any, key: str, source: str | Path | None) -> int | None:
    problem = "a claimed order must be a non-negative integer"
    return _integer(order, 0, key, source, problem, "e.g. order = 4")


def _integer(
    value: Any, least: int, key: str, source: str | Path | None, problem: str, valid: str
) -> int | None:
    """None, or an int (not a bool) of at least `least`; else the error `problem`."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
        raise DeclarationError(problem, key=key, value=value, valid=valid, source=source)
    return int(value)


def check_flag(value: Any, key: str, source: str | Path | None, optional: bool = False) -> Any:
    """A true/false option (None allowed when `optional`: no claim)."""
    if not isinstance(value, bool) and not (optional and value is None):
        raise DeclarationError(f"{key} must be true or false", key=key, value=value, source=source)
    return value


def check_count(value: Any, key: str, source: str | Path | None) -> int | None:
    return _integer(value, 1, key, source, f"{key} must be a positive integer", f"e.g. {key} = 3")


def check_text(value: Any, key: str, source: str | Path | None) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise DeclarationError(
            "expected a string",
            key=key,
            value=value,
            valid=f'a line of text in quotes, e.g. {key} = "..."',
            source=source,
        )
    return value


class Named(Protocol):
    """What an error about a declaration names: a catalog family's or a stack construct's
    (`compiler/dlcl.py`) name, family and file."""

    @property
    def name(self) -> str: ...
    @property
    def family(self) -> str: ...
    @property
    def source(self) -> str | None: ...


@final
@dataclass(frozen=True)
class Layer:
    """Whether a declaration becomes a layer (`bf.compile` / `bf.compile_stack`), decided from
    the declaration alone: the one statement of the rule, which `bf.check` reports and the
    compiler enforces.

    - `compiles`: it has a layer.
    - `how`: how it is compiled, or why not (then it starts with "not compiled").
    - `key`, `valid`: the declaration key that prevents it and what would be valid.
    """

    compiles: bool
    how: str
    key: str | None = None
    valid: str | None = None

    def require(self, method: Named) -> None:
        """Raise the `DeclarationError` of a declaration that has no layer."""
        if not self.compiles:
            raise DeclarationError(
                f"'{method.name}' is {self.how}",
                key=self.key,
                valid=self.valid,
                source=method.source,
            )


class Method(abc.ABC):
    """Abstract base of the declaration families; concrete families are final.

    Declarations are validated once, in the constructor, and frozen afterwards: assigning an
    attribute raises. Every family has these attributes:

    - `name`: lowercase, hyphenated (`"rk4"`); the catalog key.
    - `order`: the claimed order, checked by `bf.check` (`None`: no claim).
    - `title`, `reference`: human-readable title and literature reference.
    - `source`: the file the declaration was read from, if any.
    - `family`: the family's name in declaration files (`"runge-kutta"`, ...).
    - `keys`, `required`: the keys of the family's declaration files (beyond the common ones)
      and those that must be present.

    and this interface, which the later stages use instead of asking for the type:

    - `symbols`, `parameters`, `subs(values)`: a parametrised family's free symbols, how they
      become parameters of a layer, and its members.
    - `layer`: whether (and how) the declaration becomes a layer.
    - `with_coefficients(policy)`: the declaration a layer compiled with `coefficients=policy`
      computes, when the family states its policies as declarations.
    """

    family: ClassVar[str]
    keys: ClassVar[tuple[str, ...]]
    required: ClassVar[tuple[str, ...]]
    name: str
    order: int | None
    title: str
    reference: str
    source: str | None

    def _set_common(
        self,
        name: Any,
        order: Any,
        title: Any,
        reference: Any,
        source: str | Path | None,
    ) -> None:
        src = None if source is None else str(source)
        object.__setattr__(self, "source", src)
        object.__setattr__(self, "name", check_name(name, src))
        object.__setattr__(self, "order", check_order(order, "order", src))
        object.__setattr__(self, "title", check_text(title, "title", src) or self.name)
        object.__setattr__(self, "reference", check_text(reference, "reference", src))

    @classmethod
    def expand(cls, data: Mapping[str, Any]) -> dict[str, Any]:
        """A declaration file's keys as the constructor's arguments; a family may accept a
        shorthand (a Runge-Kutta file's LaTeX `tableau`). Raises `DeclarationError`."""
        return dict(data)

    @abc.abstractmethod
    def _declared(self) -> dict[str, Any]:
        """The family's keys as a declaration file states them (None: not given)."""

    def to_table(self) -> dict[str, Any]:
        """The declaration as the content of a declaration file: `from_dict(m.to_table())`
        builds an equal declaration (entries as given: floats stay floats, strings strings)."""
        head: dict[str, Any] = {"name": self.name, "family": self.family}
        for key in ("title", "reference"):
            if getattr(self, key) and getattr(self, key) != self.name:
                head[key] = getattr(self, key)
        if self.order is not None:
            head["order"] = self.order
        return {**head, **{k: v for k, v in self._declared().items() if v is not None}}

    def _set(self, **fields: Any) -> None:
        for key, value in fields.items():
            object.__setattr__(self, key, value)

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: cannot set {key!r}")

    def __delattr__(self, key: str) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: cannot delete {key!r}")

    @property
    def symbols(self) -> set[sympy.Symbol]:
        """The free symbols of a parametrised family (empty for one method)."""
        return set()

    @property
    def parameters(self) -> Mapping[sympy.Symbol, Parameter]:
        """How the symbols become parameters of the layer (`methods/parameters.py`)."""
        return {}

    def subs(self, values: Mapping[Any, Any]) -> Method:
        """A member of a parametrised family: substitute values for the symbols."""
        self.member_values(values)
        return self

    def member_values(self, values: Mapping[Any, Any]) -> dict[sympy.Symbol, Number]:
        """The values of `subs`, parsed as entries (a decimal string or a float is numeric).

        **Arguments:**

        - `values`: symbol (or its name) -> value, any entry `parse_number` reads.

        **Returns:** symbol -> `Number`; one `DeclarationError` for a name that is not a symbol
        of the declaration (naming it and the symbols) or a value that is not a number.
        """
        symbols = {str(s): s for s in self.symbols}
        found: dict[sympy.Symbol, Number] = {}
        for key, value in values.items():
            if str(key) not in symbols:
                raise DeclarationError(
                    f"no such symbol in '{self.name}'",
                    key=str(key),
                    value=value,
                    valid=f"its symbols are {sorted(symbols)}" if symbols else "it has none",
                    source=self.source,
                )
            found[symbols[str(key)]] = parse_number(value, str(key), self.source)
        return found

    @property
    @abc.abstractmethod
    def layer(self) -> Layer:
        """Whether `bf.compile` (or `bf.compile_stack`) turns the declaration into a layer."""

    def with_coefficients(self, policy: str) -> Method | None:
        """The declaration a layer compiled with `coefficients=policy` computes: itself for
        `"exact"`; None where the family's compiler applies the policy itself (the proof then
        covers the coefficients it starts from)."""
        return self if policy == "exact" else None

    def refuse_numeric_family(self) -> None:
        """Raise the `DeclarationError` of a family whose proof cannot be judged: free symbols
        beside numeric entries (ball arithmetic judges numbers, not symbols); none by default."""
        return None

    @property
    def as_tableau(self) -> ButcherTableau | None:
        """The declaration as a Runge-Kutta tableau (a splitting's sub-step, a solver, a stack's
        starter), or None where it is none."""
        return None

    @property
    def position_flow(self) -> ContinuousDynamics | None:
        """The declaration as a position encoder (FLOATER's flow over positions, used by a
        recipe's [embedding], not as a block), or None where it is none."""
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"

    def error(self, problem: str, **kwargs: Any) -> DeclarationError:
        """A `DeclarationError` attributed to this declaration's file."""
        return DeclarationError(problem, source=self.source, **kwargs)


class CoefficientMethod(Method):
    """Abstract base of the families declared by their coefficients (Runge-Kutta, splitting,
    multistep, general linear, additive). Each coefficient is exact, numeric (a float's or
    decimal's digits, `methods/entries/numbers.py`) or an expression in a family's symbols.

    A concrete family holds its coefficients once, as `numbers` (`Coefficients`: `numbers.A`,
    `numbers.b`, ... are `NumberArray`s of `Number`s, named as the declaration names them), and
    may declare a `precision` (its raw form kept) at which every non-zero entry is judged;
    `rounding`, `numeric`, `symbols` and `coefficient_values` follow from them.
    """

    numbers: Coefficients
    precision: Fraction | None  # the declared precision, if any
    _precision_raw: Any  # as given, for writing the declaration back
    _parameters: Mapping[sympy.Symbol, Parameter] = MappingProxyType({})

    def _set_precision(self, raw: Any) -> Fraction | None:
        """Parse and keep a declared precision (`precision = 1e-50`)."""
        declared = parse_precision(raw, self.source)
        self._set(precision=declared, _precision_raw=raw)
        return declared

    def _member(self, mapping: Mapping[sympy.Symbol, Number]) -> Coefficients:
        """The coefficients of a member of a parametrised family (`subs`): every entry with the
        values (`member_values`) put in for its symbols (`numbers.substitute`)."""
        return self.numbers.map(lambda x, key: substitute(x, mapping, key, self.source))

    @property
    def rounding(self) -> Fraction:
        """The most that any coefficient's digits leave open (0 when every one is exact)."""
        return self.numbers.rounding

    @property
    def coefficient_values(self) -> list[sympy.Expr]:
        """Every coefficient the declaration states, as a sympy value."""
        return self.numbers.values

    @property
    def numeric(self) -> bool:
        """Some coefficient was given as a float or decimal (its digits, not an exact form)."""
        return self.rounding > 0

    @property
    def symbols(self) -> set[sympy.Symbol]:
        """The free symbols of a parametrised family (empty for one method)."""
        return set().union(*(x.free_symbols for x in self.coefficient_values))

    @property
    def parameters(self) -> dict[sympy.Symbol, Parameter]:
        return dict(self._parameters)

    def refuse_numeric_family(self) -> None:
        if not (self.numeric and self.symbols):
            return
        key, number = next((k, x) for k, x in self.numbers.keyed() if x.numeric)
        raise self.error(
            f"'{self.name}' is a numeric family: the free symbols "
            f"{sorted(map(str, self.symbols))} beside numeric entries, and ball arithmetic "
            "judges numbers",
            key=key,
            value=number.raw,
            valid="exact entries in a family (a fraction or an expression for each number), "
            "or a member with the symbols substituted (method.subs({...}))",
        )
