"""Every catalog entry states its order, and the proof agrees with every claim it makes."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

import butcherflow as bf
from butcherflow.methods.files import BY_FAMILY

NAMES = sorted(bf.catalog)
FAMILIES = tuple(BY_FAMILY)  # every family the declaration files name


def test_catalog_is_not_empty() -> None:
    assert len(NAMES) >= 40
    assert {bf.catalog[name].family for name in NAMES} == set(FAMILIES)


@pytest.mark.parametrize("name", NAMES)
def test_claimed_order_is_proved(name: str, catalog_report: Callable[[str], bf.Report]) -> None:
    method = bf.catalog[name]
    assert method.name == name
    assert method.family in FAMILIES
    assert method.order is not None, f"{name}: the declaration must state its claimed order"
    report = catalog_report(name)
    assert report.claim_holds, report.mismatch_message()
    assert report.order == method.order, report.mismatch_message()
    report.raise_for_claims()  # raises bf.OrderClaimError on any mismatch
    data = json.loads(report.to_json())
    assert data["claim_holds"] is True
    assert data["claims"]["order"] == {"claimed": method.order, "proved": report.order}


@pytest.mark.parametrize("name", NAMES)
def test_every_secondary_claim_is_proved(
    name: str, catalog_report: Callable[[str], bf.Report]
) -> None:
    """Embedded orders, orders with the sub-steps of splittings, zero stability of multistep
    methods; every general linear entry is preconsistent with a power-bounded V."""
    method = bf.catalog[name]
    report = catalog_report(name)
    if method.family == "general-linear":
        assert report.preconsistent and report.zero_stable is True  # type: ignore[attr-defined]
        return
    if method.family == "additive":  # one claim, the order; its measured slope: test_additive
        assert report.claims.keys() == {"order"}
        return
    secondary = {
        "runge-kutta": "embedded_order",
        "splitting": "substep_order",
        "multistep": "zero_stable",
    }.get(method.family)
    if secondary is None:  # continuous: the order is the solver's
        solver = method.solver_tableau()  # type: ignore[attr-defined]
        assert report.order == bf.check(solver).order
        return
    claimed = getattr(method, secondary)
    proved = getattr(report, secondary)
    if claimed is not None:
        assert claimed == proved, f"{name}: {secondary} is claimed {claimed} but proved {proved}"
    assert report.claims.get(secondary, (claimed, proved)) == (claimed, proved)
