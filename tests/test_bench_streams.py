"""`butcherflow bench streams`: every policy eager and compiled beside its residual stack, the
targets on the compiled rows, a profile beside a missed target, eager rows alone (said once)
where torch.compile cannot compile."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

import butcherflow.bench.streams as bench
from butcherflow.bench import read_section, table_rows


@pytest.fixture
def small(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two tiny layers, and torch.compile as dynamo alone (the fused form is traced; no
    inductor C++ compilation, which the fused-streams tests cover)."""
    for name, value in {"LAYERS": 2, "D_MODEL": 8, "N_HEADS": 2, "D_FFN": 16}.items():
        monkeypatch.setattr(bench, name, value)
    compile_ = torch.compile
    monkeypatch.setattr(torch, "compile", lambda m, **k: compile_(m, backend="eager", **k))
    torch._dynamo.reset()  # the stacks' shared forward must not reach the recompile limit


def _rows(path: Path) -> list[dict[str, Any]]:
    section = read_section(path.read_text(), "streams")
    assert section is not None
    return table_rows(section)


@pytest.mark.usefixtures("small")
def test_compiled_rows_beside_eager_ones_with_a_profile_where_a_target_is_missed(
    benchmarks_md: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bench, "compile_problem", lambda device_type: None)
    monkeypatch.setattr(bench, "TARGETS", dict.fromkeys(bench.POLICIES, 0.0))  # all missed
    bench.run_streams(str(benchmarks_md), 1, "butcherflow bench streams (test)", device="cpu")
    rows = _rows(benchmarks_md)
    assert [(r["policy"], r["mode"]) for r in rows] == [
        (p, m) for m in bench.MODES for p in bench.POLICIES
    ]
    for row in rows:
        compiled = row["mode"] == "compiled"
        assert row["target"] == ("≤ 0.00 FAIL" if compiled else "—")
        assert row["where the time goes"].startswith("profiled, per step") == compiled
    text = benchmarks_md.read_text()
    assert "Worst compiled case" in text and "kept" in text


@pytest.mark.usefixtures("small")
def test_without_a_compiler_the_bench_says_so_and_times_eager_stacks(
    benchmarks_md: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(bench, "compile_problem", lambda device_type: "InvalidCxxCompiler: x")
    bench.run_streams(str(benchmarks_md), 1, "butcherflow bench streams (test)", device="cpu")
    assert [r["mode"] for r in _rows(benchmarks_md)] == ["eager"] * len(bench.POLICIES)
    out = capsys.readouterr().out
    assert out.count("InvalidCxxCompiler: x") == 2  # the line printed, and the section's note
    assert "No compiled rows: torch.compile cannot compile here" in out


def test_residual_stack_at_initialisation_is_the_stack_itself() -> None:
    """The reference runs the stack's own field modules: hyper-connections at their declared
    start are the residual stack, so the two compute the same."""
    from butcherflow.compiler import compile_stack
    from butcherflow.nn import Context

    stack = compile_stack("hyper-connections-4", ["san+ffn"] * 2, d_model=8, n_heads=2, d_ffn=16)
    y = torch.randn(2, 3, 8)
    torch.testing.assert_close(bench.residual_stack(stack)(y, Context()), stack(y))
