"""What every declaration shares: a name, a reference, a claimed order, the file it came from."""

from __future__ import annotations

import abc
import re
from pathlib import Path
from typing import Any

from ..errors import DeclarationError

NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
FAMILIES = ("runge-kutta", "splitting", "multistep", "continuous")


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
        raise DeclarationError("expected a string", key=key, value=value, source=source)
    return value


class Method(abc.ABC):
    """Abstract base of the four declaration families; concrete families are final.

    Declarations are validated once, in the constructor, and frozen afterwards: assigning an
    attribute raises. Every family has these attributes:

    - `name`: lowercase, hyphenated (`"rk4"`); the catalog key.
    - `order`: the claimed order, checked by `bf.check` (`None`: no claim).
    - `title`, `reference`: human-readable title and literature reference.
    - `source`: the file the declaration was read from, if any.
    - `family`: `"runge-kutta"`, `"splitting"`, `"multistep"` or `"continuous"`.
    """

    family: str
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

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"

    def error(self, problem: str, **kwargs: Any) -> DeclarationError:
        """A `DeclarationError` attributed to this declaration's file."""
        return DeclarationError(problem, source=self.source, **kwargs)
