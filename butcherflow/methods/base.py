"""What every declaration shares: a name, a reference, a claimed order, the file it came from."""

from __future__ import annotations

import abc
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, final

import sympy

from ..errors import DeclarationError
from .entries.numbers import Number, parse_number
from .parameters import Parameter

if TYPE_CHECKING:  # the family that overrides `position_flow`, for its return type only
    from .continuous import ContinuousDynamics

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
    if order is None:
        return None
    if isinstance(order, bool) or not isinstance(order, int) or order < 0:
        raise DeclarationError(
            "a claimed order must be a non-negative integer",
            key=key,
            value=order,
            valid="e.g. order = 4",
            source=source,
        )
    return order


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

    _table: dict[str, Any]

    def to_table(self) -> dict[str, Any]:
        """The declaration as the content of a declaration file: `from_dict(m.to_table())`
        builds an equal declaration (entries as given: floats stay floats, strings strings)."""
        head: dict[str, Any] = {"name": self.name, "family": self.family}
        for key in ("title", "reference"):
            if getattr(self, key) and getattr(self, key) != self.name:
                head[key] = getattr(self, key)
        if self.order is not None:
            head["order"] = self.order
        return {**head, **{k: v for k, v in self._table.items() if v is not None}}

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
    multistep, general linear). Each coefficient is exact, numeric (a float's or decimal's
    digits, `methods/entries/numbers.py`) or an expression in a family's symbols.

    A concrete family sets `rounding`, the most that any coefficient's digits leave open (0 when
    every coefficient is exact), and states its coefficients once (`coefficient_values`);
    `numeric` and `symbols` follow from them.
    """

    rounding: Fraction
    # Every coefficient as parsed (value, rounding, raw form), keyed as the declaration and its
    # error messages name it: "A[0][1]", "b[2]" (Runge-Kutta, general linear), "alpha[0]",
    # "beta[1]" (multistep), "steps[3][1]" (splitting), in the declaration's order.
    entries: dict[str, Number]

    def entries_under(self, key: str) -> list[Number]:
        """The parsed entries under one key of the declaration, in order: `"alpha"` gives
        alpha[0], alpha[1], ...; `"A"` gives A's entries row by row."""
        return [x for k, x in self.entries.items() if k.startswith(f"{key}[")]

    @property
    @abc.abstractmethod
    def coefficient_values(self) -> Iterable[sympy.Expr]:
        """Every coefficient the declaration states, as a sympy value."""

    @property
    def numeric(self) -> bool:
        """True when some coefficient was given as a float or decimal (its digits, not an exact
        form)."""
        return self.rounding > 0

    @property
    def symbols(self) -> set[sympy.Symbol]:
        """The free symbols of a parametrised family (empty for one method)."""
        found: set[sympy.Symbol] = set()
        for x in self.coefficient_values:
            found |= x.free_symbols
        return found
