"""`butcherflow bench order` on a few small methods: tables, ratios, the markdown section."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import butcherflow as bf
from butcherflow.bench import order as bench_order
from butcherflow.bench import replace_section, write_section
from butcherflow.bench.order import NodepyResult, run_order
from butcherflow.cli import main


def fake_nodepy(name: str, repeats: int) -> NodepyResult:
    """NodePy stand-in: 0.5 s for heun, a timeout for rk4."""
    if name == "heun":
        return NodepyResult(0.5, order=2)
    return NodepyResult(None, note="timeout (>45 s)")


def test_order_benchmark_rows_and_ratios(tmp_path: Path) -> None:
    output = tmp_path / "benchmarks.md"
    rows = run_order(
        output=output,
        repeats=1,
        names=["euler", "heun", "rk4"],
        nodepy_names=["heun", "rk4"],
        nodepy_timer=fake_nodepy,
        command="butcherflow bench order --repeats 1",
    )
    assert [r.label for r in rows] == ["euler", "heun", "rk4"]
    assert [r.proved for r in rows] == [1, 2, 4]
    assert all(r.passed and r.seconds is not None for r in rows)
    text = output.read_text(encoding="utf-8")
    assert "`butcherflow bench order --repeats 1`" in text and "Machine:" in text
    for r in rows:
        cells = [r.label, "runge-kutta", r.proved, r.proved, f"{r.seconds:.3f}", "< 2", "PASS"]
        assert "| " + " | ".join(map(str, cells)) + " |" in text
    heun, rk4 = rows[1], rows[2]
    assert heun.seconds is not None and rk4.seconds is not None
    ratio = 0.5 / heun.seconds
    shown = f"{ratio:.0f}×" if ratio >= 10 else f"{ratio:.2g}×"
    assert f"| heun | 2 | 2 | {heun.seconds:.3f} | 0.500 | {shown} |" in text
    assert (
        f"| rk4 | 4 | — | {rk4.seconds:.3f} | timeout (>45 s) | > {45 / rk4.seconds:.0f}× |" in text
    )
    assert "| euler | 1 |" not in text.split("### Beside NodePy")[1]  # only the compared ones


def test_a_missed_target_and_a_broken_declaration_are_fail_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(bench_order.TARGETS, "heun", 0.0)
    rows = run_order(output=tmp_path / "b.md", repeats=1, names=["heun", "no-such-method"])
    assert [r.passed for r in rows] == [False, False]
    assert "error:" in rows[1].note
    out = capsys.readouterr().out
    assert "FAIL: heun" in out and "FAIL: no-such-method" in out
    assert "**FAIL**" in (tmp_path / "b.md").read_text(encoding="utf-8")


def test_section_replacement_keeps_the_other_sections(tmp_path: Path) -> None:
    before = (
        "# Benchmarks\n\nIntro written by hand.\n\n"
        "<!-- bench:order:start -->\nold order numbers\n<!-- bench:order:end -->\n\n"
        "<!-- bench:block:start -->\nblock numbers\n<!-- bench:block:end -->\n\nFooter.\n"
    )
    after = replace_section(before, "order", "## Order proofs\n\nnew numbers")
    assert "old order numbers" not in after and "new numbers" in after
    assert after.replace("## Order proofs\n\nnew numbers", "old order numbers") == before
    # A missing section is appended; a missing file is created with a header.
    appended = replace_section(after, "training", "training numbers")
    assert appended.startswith(after.rstrip()) and appended.count("bench:training:") == 2
    file = tmp_path / "docs" / "benchmarks.md"
    write_section(file, "block", "first")
    write_section(file, "order", "second")
    write_section(file, "block", "third")
    text = file.read_text(encoding="utf-8")
    assert text.startswith("# Benchmarks") and "first" not in text
    assert text.index("third") < text.index("second")  # replaced in place, order kept


def test_cli_bench_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "solvers"
    folder.mkdir()
    for name in ("euler", "midpoint"):
        shutil.copy(bf.catalog.path(name), folder)
    monkeypatch.setattr(bench_order, "catalog", bf.methods.Catalog(folder))
    output = tmp_path / "benchmarks.md"
    argv = ["bench", "order", "--output", str(output), "--repeats", "1", "--no-nodepy"]
    assert main(argv) == 0
    text = output.read_text(encoding="utf-8")
    assert "| euler |" in text and "| midpoint |" in text and "Beside NodePy" not in text
    assert f"--no-nodepy --output {output}`" in text
    assert "| midpoint |" in capsys.readouterr().out


def test_nodepy_times_the_same_tableau() -> None:
    pytest.importorskip("nodepy")
    result = bench_order.time_nodepy("heun", 1)
    assert result.order == 2 and result.seconds is not None and result.seconds >= 0, result.note
