"""Reading declaration files and the built-in catalog of named methods (`solvers/*.toml`)."""

from __future__ import annotations

import difflib
import importlib.resources
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ..errors import DeclarationError, UnknownNameError
from .additive import AdditiveRungeKutta
from .base import NAME, Method, file_safe_name
from .continuous import ContinuousDynamics
from .general_linear import GeneralLinear
from .multistep import LinearMultistep
from .splitting import Splitting
from .tableau import ButcherTableau

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

COMMON_KEYS = ("name", "title", "family", "order", "reference", "description")
# The declaration families, in the order the docs list them. A family states its own file keys
# (`keys`, `required`); this tuple is the one place that lists them.
FAMILIES: tuple[type[Method], ...] = (
    ButcherTableau,
    Splitting,
    LinearMultistep,
    ContinuousDynamics,
    GeneralLinear,
    AdditiveRungeKutta,
)
BY_FAMILY: dict[str, type[Method]] = {cls.family: cls for cls in FAMILIES}


def catalog_dir(kind: str) -> Path:
    """`solvers/` or `models/`: the checkout's folder, or the copy inside the wheel."""
    checkout = Path(__file__).resolve().parents[2] / kind
    if checkout.is_dir():
        return checkout
    return Path(str(importlib.resources.files("butcherflow") / "_catalog" / kind))


def read_toml(path: str | Path) -> dict[str, Any]:
    """Read a TOML file; syntax errors become `DeclarationError`s with the line number."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except IsADirectoryError:
        raise DeclarationError(
            "is a directory, not a declaration file",
            value=str(path),
            valid="give the path of a .toml declaration",
        ) from None
    except FileNotFoundError:
        raise DeclarationError(
            "no such file", value=str(path), valid="give the path of a .toml declaration"
        ) from None
    except OSError as error:
        raise DeclarationError(f"cannot read the file ({error.strerror})", source=file) from None
    except UnicodeDecodeError as error:
        raise DeclarationError(
            f"file is not UTF-8 ({error.reason} at byte {error.start})", source=file
        ) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise DeclarationError(f"TOML syntax error: {error}", source=file) from None


def check_keys(
    data: Mapping[str, Any], allowed: tuple[str, ...], source: str | Path | None, where: str = ""
) -> None:
    """Unknown keys are errors, with the closest valid key suggested."""
    for key in data:
        if key not in allowed:
            close = difflib.get_close_matches(key, allowed, n=1)
            hint = f"did you mean '{close[0]}'? " if close else ""
            raise DeclarationError(
                "unknown key",
                key=f"{where}{key}",
                valid=f"{hint}valid keys are " + ", ".join(allowed),
                source=source,
            )


def from_dict(data: Mapping[str, Any], source: str | Path | None = None) -> Method:
    """Build a declaration from the parsed content of a declaration file."""
    family = data.get("family")
    if not isinstance(family, str) or family not in BY_FAMILY:
        raise DeclarationError(
            "missing or unknown family" if family is not None else "missing key 'family'",
            key="family",
            value=family,
            valid=f"family is one of {', '.join(BY_FAMILY)}",
            source=source,
        )
    cls = BY_FAMILY[family]
    check_keys(data, COMMON_KEYS + cls.keys, source)
    try:
        data = cls.expand(data)
    except DeclarationError as error:
        raise error.with_source(source) if source is not None else error from None
    for key in cls.required:
        if key not in data:
            raise DeclarationError(
                f"missing key '{key}' for a {family} declaration", key=key, source=source
            )
    kwargs = {k: v for k, v in data.items() if k not in ("family", "description")}
    for key in ("substep", "method"):  # a resolved declaration inlines the methods it uses
        if isinstance(kwargs.get(key), Mapping):
            try:
                kwargs[key] = from_dict(kwargs[key], source)
            except DeclarationError as error:  # named by its place: 'method.family', ...
                raise DeclarationError(
                    f"the inline declaration of {key}: {error.problem}",
                    key=f"{key}.{error.key}" if error.key else key,
                    value=error.value,
                    valid=error.valid,
                    source=source,
                ) from None
    try:
        build: Callable[..., Method] = cls
        return build(**kwargs, source=source)
    except DeclarationError as error:
        raise error.with_source(source) if source is not None else error from None


def load(path: str | Path) -> Method:
    """Load one declaration file (any family). The file's stem need not match its name, but a
    file's name is file-safe (lowercase words joined by hyphens), like the catalog's."""
    data = read_toml(path)
    name = data.get("name")
    if isinstance(name, str) and not file_safe_name(name):
        raise DeclarationError(
            "invalid name for a declaration file",
            key="name",
            value=name,
            valid="names in files are lowercase words joined by hyphens, e.g. 'dormand-prince-5' "
            "(a tableau built in Python may take any name, e.g. 'GL3')",
            source=path,
        )
    return from_dict(data, source=path)


class Catalog(Mapping[str, Method]):
    """The built-in methods, by name, loaded lazily from `solvers/*.toml` (a file per method)."""

    def __init__(self, directory: Path | None = None) -> None:
        self._directory = directory
        self._cache: dict[str, Method] = {}
        self._loading: set[str] = set()

    @property
    def directory(self) -> Path:
        return self._directory or catalog_dir("solvers")

    def path(self, name: str) -> Path:
        return self.directory / f"{name}.toml"

    def _names(self) -> list[str]:
        return sorted(p.stem for p in self.directory.glob("*.toml"))

    def __getitem__(self, name: str) -> Method:
        if name in self._cache:
            return self._cache[name]
        file = self.path(name) if isinstance(name, str) and NAME.match(name) else None
        if file is None or not file.is_file():
            close = difflib.get_close_matches(str(name), self._names(), n=3)
            hint = f"did you mean {', '.join(close)}? " if close else ""
            raise UnknownNameError(
                f"no method named '{name}' in the catalog; {hint}`butcherflow list` shows them all"
            )
        if name in self._loading:
            raise DeclarationError(
                "declaration refers to itself", key="name", value=name, source=file
            )
        self._loading.add(name)
        try:
            method = load(file)
        finally:
            self._loading.discard(name)
        if method.name != name:
            raise DeclarationError(
                f"the file is named '{name}.toml' but declares another name",
                key="name",
                value=method.name,
                valid=f'name = "{name}"',
                source=file,
            )
        self._cache[name] = method
        return method

    def names(self, family: str | None = None) -> list[str]:
        """Catalog names, optionally of one family (read from the files, nothing is built)."""
        if family is None:
            return self._names()
        found = []
        for name in self._names():
            try:
                if read_toml(self.path(name)).get("family") == family:
                    found.append(name)
            except DeclarationError:
                continue  # a broken file is reported when it is used, not when listing others
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and bool(NAME.match(name)) and self.path(name).is_file()

    def resolve(self, method: str | Path | Method) -> Method:
        """A `Method`, a catalog name, or the path of a declaration file -> a `Method`."""
        if isinstance(method, Method):
            return method
        text = str(method)
        if isinstance(method, Path) or text.endswith(".toml") or "/" in text:
            return load(text)
        return self[text]

    def tableau(self, value: Any, role: str, key: str, source: str | None, valid: str) -> Any:
        """The explicit Runge-Kutta tableau `value` names (a catalog name) or is (a declaration):
        a splitting's sub-step, a continuous block's solver; one `DeclarationError` naming `key`,
        the `role` ("sub-step") and what is `valid` otherwise."""
        named = isinstance(value, str)
        found = (self.get(value) if value in self else None) if named else value
        tableau = found.as_tableau if isinstance(found, Method) else None
        if tableau is None:
            close = (
                difflib.get_close_matches(value, self.names("runge-kutta"), n=3) if named else []
            )
            problem = (
                f"{role} '{value}' is not a Runge-Kutta method"
                if found is not None and named
                else f"unknown {role} '{value}'"
                if named
                else f"{key} must be a name or a ButcherTableau"
            )
            hint = f"did you mean {', '.join(repr(c) for c in close)}? " if close else ""
            raise DeclarationError(problem, key=key, value=value, valid=hint + valid, source=source)
        if not tableau.is_explicit:
            raise DeclarationError(
                f"{role} '{tableau.name}' is implicit",
                key=key,
                value=value if named else tableau.name,
                valid=valid,
                source=source,
            )
        return tableau


catalog = Catalog()
