"""The declarations a recipe uses: found (`references`), pinned (`pinned`), compared (`difference`).

A recipe names its methods where they are used: `encoder.method`, `encoder.starter`,
`decoder.method`, `decoder.starter` and `embedding.floater`, by catalog name or declaration
file. `failed_claims` proves every one (a run refuses a declaration whose claimed order its proof
refutes). `pinned` replaces every name with the declaration it means now (sub-steps and solvers
inlined by `Method.to_table`), so a recipe serialised after pinning (`recipe_to_toml`) carries its
coefficients: a trained run stores it as `recipe.toml`, as nanoGPT keeps `model_args` in its
checkpoint, and loading, resuming or evaluating the run never reads the catalog or the user's
declaration file again.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..analysis import check
from ..compiler import stack_construct
from ..errors import DeclarationError, UnknownNameError
from ..methods import Method, catalog
from .recipe import Recipe, method_name

SIDES = ("encoder", "decoder")


def references(recipe: Recipe) -> dict[str, str | Method]:
    """Every method `recipe` uses, by where it is named (`"encoder.method"`, ...): a
    declaration, or the name or file it is given by."""
    found: dict[str, str | Method] = {}
    for where in SIDES:
        side = getattr(recipe, where)
        if side is None:
            continue
        if stack_construct(side.method) is None:  # a construct is declared in the compiler
            found[f"{where}.method"] = side.method
        if "starter" in side.options:
            found[f"{where}.starter"] = side.options["starter"]
    found |= recipe.positions.methods(recipe)  # FLOATER's flow
    return found


def by_name(recipe: Recipe) -> list[str]:
    """The methods of `recipe` still given by name or file, as `"encoder.method 'rk4'"`."""
    return [
        f"{where} '{reference}'"
        for where, reference in references(recipe).items()
        if not isinstance(reference, Method)
    ]


def pinned(recipe: Recipe) -> Recipe:
    """`recipe` with every method it names replaced by its declaration, read now from the
    catalog or the declaration file (an unknown name is a `DeclarationError` naming where)."""

    def pin(where: str, reference: Any) -> Any:
        if isinstance(reference, Method):
            return reference
        try:
            return catalog.resolve(reference)
        except UnknownNameError as error:
            raise DeclarationError(
                str(error), key=where, value=reference, source=recipe.source
            ) from None

    changes: dict[str, Any] = {}
    for where in SIDES:
        side = getattr(recipe, where)
        if side is None:
            continue
        method = side.method
        if stack_construct(method) is None:
            method = pin(f"{where}.method", method)
        options = dict(side.options)
        if "starter" in options:
            options["starter"] = pin(f"{where}.starter", options["starter"])
        changes[where] = dataclasses.replace(side, method=method, options=options)
    changes |= recipe.positions.pinned(recipe)  # FLOATER's flow
    return dataclasses.replace(recipe, **changes)


def failed_claims(recipe: Recipe) -> dict[str, str]:
    """The methods of `recipe` whose claimed order their own proof refutes: where each is used
    (`"encoder.method"`, ...) -> the proof's one-line verdict (`Report.mismatch_message`).
    Methods given by name are resolved first (`pinned`)."""
    failed = {}
    for where, method in references(pinned(recipe)).items():
        assert isinstance(method, Method)
        report = check(method)
        if not report.claim_holds:
            failed[where] = report.mismatch_message()
    return failed


def difference(old: str | Method, new: str | Method) -> tuple[str, Any, Any] | None:
    """The first entry in which two declarations differ, as `(entry, old value, new value)`
    (`"b[1]"`, `"method.A[2][1]"`, ...), or None when they are the same declaration. Entries
    differ in value or in kind: `1`, `1.0` and `"1"` are three different coefficients."""
    if not isinstance(old, Method) or not isinstance(new, Method):
        return None if old == new else ("", method_name(old), method_name(new))
    return _first_difference(old.to_table(), new.to_table(), "")


def _first_difference(old: Any, new: Any, entry: str) -> tuple[str, Any, Any] | None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in [*old, *(k for k in new if k not in old)]:
            where = f"{entry}.{key}" if entry else str(key)
            if key not in old or key not in new:
                return where, old.get(key), new.get(key)
            found = _first_difference(old[key], new[key], where)
            if found is not None:
                return found
        return None
    if isinstance(old, list) and isinstance(new, list):
        for i, (a, b) in enumerate(zip(old, new, strict=False)):
            found = _first_difference(a, b, f"{entry}[{i}]")
            if found is not None:
                return found
        return None if len(old) == len(new) else (entry, old, new)
    return None if type(old) is type(new) and old == new else (entry, old, new)
