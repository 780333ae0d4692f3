"""Validation curves in experiment reports (`experiments/curves.py`)."""

from __future__ import annotations

from butcherflow.experiments.curves import curves_rows, valid_curve


def _result(label: str, seed: int, points: dict[int, float] | None) -> dict[str, object]:
    curve = None if points is None else [[u, p] for u, p in points.items()]
    return {"label": label, "column": "1 layer", "seed": seed, "valid_curve": curve}


def test_a_log_gives_its_validations() -> None:
    log = [
        {"kind": "train", "update": 100, "loss": 5.0},
        {"kind": "valid", "update": 100, "valid_ppl": 90.0},
        {"kind": "valid", "update": 200, "valid_ppl": 60.0},
        {"kind": "resume", "update": 200},
    ]
    assert valid_curve(log) == [[100, 90.0], [200, 60.0]]


def test_the_gap_is_paired_by_seed_against_the_first_run_of_the_column() -> None:
    results = [
        _result("residual", 1, {300: 80.0, 600: 50.0}),
        _result("residual", 2, {300: 70.0, 600: 40.0}),
        _result("RK2", 1, {300: 90.0, 600: 56.0}),
        _result("RK2", 2, {300: 74.0, 600: 42.0}),
        _result("RK4", 1, {300: 99.0}),  # seed 2 has no curve: the run is left out
        _result("RK4", 2, None),
    ]
    table = curves_rows(results)
    assert table is not None
    header, rows = table
    assert header == ["run", "300 updates", "600 updates"]
    assert rows == [
        ["residual, 1 layer", "75.0", "45.0"],
        ["RK2, 1 layer", "82.0 (+7.0)", "49.0 (+4.0)"],
    ]


def test_a_run_that_did_not_log_a_mark_shows_a_dash() -> None:
    results = [
        _result("residual", 1, {300: 80.0, 600: 50.0}),
        _result("RK2", 1, {300: 90.0}),
    ]
    table = curves_rows(results)
    assert table is not None and table[1][1] == ["RK2, 1 layer", "90.0 (+10.0)", "—"]


def test_no_curves_no_table() -> None:
    assert curves_rows([_result("residual", 1, None)]) is None
