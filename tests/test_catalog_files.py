"""Every file of the built-in catalog (`solvers/*.toml`) is a well-formed declaration."""

from __future__ import annotations

import sys
from pathlib import Path
from unittest import mock

import pytest

import butcherflow as bf
from butcherflow.methods.base import NAME
from butcherflow.methods.continuous import ADAPTIVE

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from butcherflow.methods import files as catalog_files

NAMES = sorted(bf.catalog)  # at collection time; the catalog grows as files are added


def raw(name: str) -> dict:
    """The file's content as TOML, before any defaults (a missing title defaults to the name)."""
    return tomllib.loads(bf.catalog.path(name).read_text(encoding="utf-8"))


def test_catalog_has_at_least_40_entries() -> None:
    assert len(bf.catalog) >= 40, f"only {len(bf.catalog)} declarations: {list(bf.catalog)}"


def test_catalog_iterates_sorted_file_stems() -> None:
    files = sorted(p.stem for p in bf.catalog.directory.glob("*.toml"))
    assert list(bf.catalog) == files
    assert len(bf.catalog) == len(files)
    assert bf.catalog.directory.name == "solvers"


@pytest.mark.parametrize(
    "name",
    [
        "euler",
        "heun",
        "midpoint",
        "ralston",
        "rk4",
        "dormand-prince-5",
        "strang",
        "adams-bashforth-2",
        "bdf-3",
    ],
)
def test_names_promised_by_the_design_exist(name: str) -> None:
    assert name in bf.catalog, f"{name!r} is missing; the catalog has {list(bf.catalog)}"
    assert bf.catalog[name].name == name


@pytest.mark.parametrize("name", NAMES)
def test_entry_loads_under_its_own_name(name: str) -> None:
    path = bf.catalog.path(name)
    method = bf.catalog[name]  # validates the whole declaration
    assert isinstance(method, bf.Method)
    assert path.stem == name
    assert method.name == name
    assert method.source == str(path)
    assert name in bf.catalog


@pytest.mark.parametrize("name", NAMES)
def test_entry_name_is_lowercase_hyphenated(name: str) -> None:
    assert NAME.match(name), f"{name!r}: lowercase words and digits joined by single hyphens"
    assert raw(name).get("name") == name, f"{name}.toml must say name = {name!r}"


@pytest.mark.parametrize("name", NAMES)
def test_entry_is_documented_and_claims_an_order(name: str) -> None:
    data = raw(name)
    title, reference, order = data.get("title"), data.get("reference"), data.get("order")
    assert isinstance(title, str) and title.strip(), f"{name}.toml: give a title"
    assert isinstance(reference, str) and reference.strip(), f"{name}.toml: give a reference"
    assert isinstance(order, int) and not isinstance(order, bool) and order >= 0, (
        f"{name}.toml: state the claimed order (order = p), got {order!r}"
    )
    method = bf.catalog[name]
    assert method.order == order
    assert method.title == title
    assert method.reference == reference


@pytest.mark.parametrize("name", NAMES)
def test_entry_family_matches_its_class(name: str) -> None:
    family = raw(name).get("family")
    method = bf.catalog[name]
    assert method.family == family
    expected = {
        "runge-kutta": bf.ButcherTableau,
        "splitting": bf.Splitting,
        "multistep": bf.LinearMultistep,
        "continuous": bf.ContinuousDynamics,
        "general-linear": bf.GeneralLinear,
        "additive": bf.AdditiveRungeKutta,
    }[family]
    assert isinstance(method, expected)


@pytest.mark.parametrize("name", NAMES)
def test_entry_uses_only_known_keys(name: str) -> None:
    data = raw(name)
    allowed = set(catalog_files.COMMON_KEYS) | set(catalog_files.BY_FAMILY[data["family"]].keys)
    assert set(data) <= allowed, f"{name}.toml: unknown keys {sorted(set(data) - allowed)}"


def test_adaptive_solvers_have_their_tableaux_in_the_catalog() -> None:
    # ContinuousDynamics reports an adaptive method's order through these catalog entries.
    missing = sorted(set(ADAPTIVE.values()) - set(bf.catalog))
    assert not missing, f"the catalog lacks {missing}"
    for tableau in ADAPTIVE.values():
        method = bf.catalog[tableau]
        assert isinstance(method, bf.ButcherTableau)
        assert method.b_hat is not None, f"{tableau} is an embedded pair: give b_hat"


def test_the_catalog_object_and_its_module_have_different_names(tmp_path: Path) -> None:
    assert bf.methods.catalog is bf.catalog and isinstance(bf.catalog, bf.methods.Catalog)
    # mock.patch reaches the module's catalog, which the declarations look names up in
    empty = bf.methods.Catalog(tmp_path)
    unknown = pytest.raises(bf.DeclarationError, match="unknown solver 'rk4'")
    with mock.patch("butcherflow.methods.files.catalog", empty), unknown:
        bf.ContinuousDynamics("rk4")
    assert bf.ContinuousDynamics("rk4").tableau is bf.catalog["rk4"]
