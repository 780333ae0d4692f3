"""The one exception family of butcherflow.

Every user mistake raises a subclass of `ButcherflowError`. Messages name the file (when the
declaration came from one), the key, the offending value, and say what would be valid, so the CLI
can print them as one line with no traceback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


class ButcherflowError(Exception):
    """Base class of every error butcherflow raises for a user's mistake."""


class DeclarationError(ButcherflowError, ValueError):
    """A declaration (tableau, splitting, multistep method, dynamics, recipe) is malformed.

    **Arguments:**

    - `problem`: what is wrong, in words.
    - `key`: the key or attribute at fault (`"A[2][1]"`, `"steps[0]"`, ...).
    - `value`: the offending value, shown with `repr`.
    - `valid`: what would be accepted instead.
    - `source`: the file the declaration was read from, if any.
    """

    def __init__(
        self,
        problem: str,
        *,
        key: str | None = None,
        value: Any = ...,
        valid: str | None = None,
        source: str | Path | None = None,
    ) -> None:
        self.problem = problem
        self.key = key
        self.value = value
        self.valid = valid
        self.source = None if source is None else str(source)
        super().__init__(self._render())

    def _render(self) -> str:
        parts = []
        if self.source:
            parts.append(f"{self.source}: ")
        if self.key:
            parts.append(f"key '{self.key}': ")
        parts.append(self.problem)
        if self.value is not ...:
            shown = repr(self.value)
            if len(shown) > 120:
                shown = shown[:117] + "..."
            parts.append(f" (got {shown})")
        if self.valid:
            parts.append(f"; {self.valid}")
        return "".join(parts)

    def with_source(self, source: str | Path) -> DeclarationError:
        """The same error, attributed to `source` (used when a file's content fails to validate)."""
        if self.source is not None:
            return self
        return DeclarationError(
            self.problem, key=self.key, value=self.value, valid=self.valid, source=source
        )


def unwritable(error: OSError, key: str, path: str | Path) -> DeclarationError:
    """The one line for a folder the system refused to create (`key` names the flag)."""
    return DeclarationError(
        f"cannot be created: {error.strerror}",
        key=key,
        value=str(path),
        valid="a path in a folder this process can write",
    )


def count_problem(value: Any) -> str:
    """The `problem` of a DeclarationError for a count that failed its rule: `out of range`
    for an integer, `not an integer` otherwise; the rule itself (`an integer >= 1`) is the
    error's `valid`, so the message says it once."""
    return (
        "out of range"
        if isinstance(value, int) and not isinstance(value, bool)
        else ("not an integer")
    )


class DesignError(DeclarationError):
    """`bf.design` was asked for what cannot exist (an order the stages cannot reach, an empty,
    unbounded or growing spectrum, constraints no method meets), or its optimiser found nothing;
    the message says which, and why, or what was found short of the optimum."""


def require_counts(**values: Any) -> None:
    """A `DesignError` for the first value that is not an integer >= 1 (the keyword is its
    key): stages, order, streams, starts."""
    for key, value in values.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise DesignError(f"{key} must be an integer >= 1", key=key, value=value)


class UnknownNameError(ButcherflowError, KeyError):
    """A name that is not in the catalog (the message lists close matches)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class OrderClaimError(ButcherflowError):
    """A declaration's claimed order disagrees with the order butcherflow proved."""


class AnalysisError(ButcherflowError):
    """An analysis was asked for something it cannot answer (say, the order of a bad family)."""


class ExtractionError(ButcherflowError, ValueError):
    """`bf.extract` cannot read an integrator out of a module: a bad field path, a module in
    training mode, an in-place update of the state, randomness, or a block that is not a linear
    combination of its state and field values. The message names the module path and what would
    be valid."""


class ButcherflowWarning(UserWarning):
    """Something a user should know that is not a mistake (the CLI prints it as a `note:` line)."""
