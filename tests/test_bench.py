"""`butcherflow bench order` on a few small methods: tables, ratios, the markdown section."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import pytest

import butcherflow as bf
from butcherflow.bench import (
    DEFAULT_OUTPUT,
    option_flags,
    output_flag,
    preset_sizes,
    recipes_and_sizes,
    replace_section,
    write_section,
)
from butcherflow.bench import order as bench_order
from butcherflow.bench.order import NodepyResult, run_order
from butcherflow.cli import main
from butcherflow.errors import DeclarationError


def fake_nodepy(name: str, repeats: int) -> NodepyResult:
    """NodePy stand-in: 0.5 s for heun, a timeout for rk4, 0.1 ms (faster than us) for euler."""
    if name == "heun":
        return NodepyResult(0.5, order=2)
    if name == "euler":
        return NodepyResult(1e-4, order=1)
    return NodepyResult(None, note="timeout (>300 s)")


def test_order_benchmark_rows_ratios_and_targets(tmp_path: Path) -> None:
    output = tmp_path / "benchmarks.md"
    rows = run_order(
        output=output,
        repeats=1,
        names=["euler", "heun", "rk4", "strang"],
        nodepy_timer=fake_nodepy,
        command="butcherflow bench order --repeats 1",
    )
    assert [r.name for r in rows] == ["euler", "heun", "rk4", "strang"]
    assert [r.proved for r in rows] == [1, 2, 4, 2]
    assert all(r.passed and r.seconds is not None for r in rows)
    euler, heun, rk4, strang = rows
    assert strang.nodepy is None  # NodePy has no splittings
    assert heun.seconds is not None and rk4.seconds is not None and euler.seconds is not None
    assert heun.ratio == pytest.approx(0.5 / heun.seconds)
    assert rk4.ratio == pytest.approx(bench_order.NODEPY_TIMEOUT / rk4.seconds)
    # NodePy over 1 s (here: its timeout) adds the 10x target; heun's 0.5 s does not.
    assert [label for label, _ in heun.targets] == ["< 2 s"]
    assert rk4.targets == [("< 2 s", True), ("≥ 10× NodePy", True)]
    text = output.read_text(encoding="utf-8")
    assert (
        "`butcherflow bench order --repeats 1`" in text
        and "Machine:" in text
        and "load average" in text
    )
    assert (
        f"| heun | runge-kutta | exact | 2 | 2 | {heun.seconds:.3f} | exact | 2 | 0.500 "
        f"| {bench_order._times(0.5 / heun.seconds)} | < 2 s: met |"
    ) in text
    assert f"| rk4 | runge-kutta | exact | 4 | 4 | {rk4.seconds:.3f} | exact | — " in text
    assert "| timeout (>300 s) | > " in text and "≥ 10× NodePy: met |" in text
    assert "| strang | splitting | exact | 2 | 2 |" in text
    ratios = sorted(r.ratio for r in (euler, heun, rk4) if r.ratio is not None)
    median = bench_order._times(ratios[1])
    assert f"over the 3 methods both ran: median {median}, worst " in text
    assert f"worst {bench_order._times(ratios[0])} (euler, NodePy exact mode)" in text
    assert "butcherflow is slower than NodePy on 1 of them: euler." in text
    assert "Targets met: 5 of 5." in text


def test_a_missed_target_and_a_broken_declaration_are_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bench_order, "ORDER_TARGET", 0.0)
    rows = run_order(
        output=tmp_path / "b.md", repeats=1, names=["heun", "no-such-method"], nodepy=False
    )
    assert [r.passed for r in rows] == [False, False]
    assert rows[0].targets == [("< 0 s", False)]
    assert "error:" in rows[1].note and rows[1].seconds is None
    text = (tmp_path / "b.md").read_text(encoding="utf-8")
    assert "< 0 s: **not met**" in text
    assert "Targets met: 0 of 2; not met: heun (< 0 s), no-such-method (< 0 s)." in text


def test_feagin_high_orders_have_their_own_target() -> None:
    row = bench_order.Row("feagin-14", "runge-kutta", True, 14, 14, 59.0)
    assert bench_order.targets(row) == [("< 60 s", True)]
    row = bench_order.Row("hairer-11", "runge-kutta", False, 11, 11, 3.0)
    assert bench_order.targets(row) == []  # order > 10: no target of the issue applies
    slow = bench_order.Row("x", "runge-kutta", False, 6, 6, 0.5, nodepy=NodepyResult(4.0, 6))
    assert bench_order.targets(slow) == [("< 2 s", True), ("≥ 10× NodePy", False)]
    floats = NodepyResult(4.0, 6, mode="float")  # the 10x target is about NodePy's exact mode
    assert bench_order.targets(bench_order.Row("y", "runge-kutta", True, 6, 6, 0.5, nodepy=floats))


def test_a_sections_command_line_spells_the_options_as_typed() -> None:
    """The command a section shows reruns the benchmark: options as flags, --output only off
    the default file."""
    flags = option_flags({"max_tokens": 2500, "data": "bible:en"})
    assert flags + output_flag(DEFAULT_OUTPUT) + output_flag("/tmp/b.md") == (
        "--max-tokens 2500 --data bible:en --output /tmp/b.md"
    )
    options: dict[str, object] = {}
    args = argparse.Namespace(recipes=["lm-mhc", "lm-residual"], sizes="tiny")
    assert recipes_and_sizes(args, options) == " --recipes lm-mhc lm-residual --sizes tiny"
    assert options == {"recipes": ("lm-mhc", "lm-residual"), "sizes": preset_sizes("tiny")}


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
    with pytest.raises(DeclarationError, match=r"--output.*does not exist"):  # no docs/ made
        write_section(file, "block", "first")
    assert not file.parent.exists()
    file.parent.mkdir()
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
    assert "| euler |" in text and "| midpoint |" in text
    euler_row = next(line for line in text.splitlines() if line.startswith("| euler |"))
    assert "| — | — | — | — |" in euler_row  # no NodePy columns filled
    assert f"--no-nodepy --output {output}`" in text
    assert "| midpoint |" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("name", "order", "mode"),
    [("heun", 2, "exact"), ("tsitouras-5", 5, "float"), ("adams-bashforth-3", 3, "exact")],
)
def test_nodepy_times_the_same_method(name: str, order: int, mode: str) -> None:
    """Exact mode for exact tableaux, float mode for numeric ones, multistep methods too."""
    pytest.importorskip("nodepy")
    result = bench_order.time_nodepy(name, 1)
    assert (result.order, result.mode) == (order, mode), result.note
    assert result.seconds is not None and result.seconds >= 0


def test_a_proof_past_the_time_limit_is_a_timeout_row(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench_order, "CHECK_TIMEOUT", 1e-6)
    row = bench_order.time_check("rk4", 3)
    assert row.seconds is None and row.note.startswith("timeout")
    assert bench_order.targets(row) == [("< 2 s", False)]


def test_extract_benchmark_rows_and_worst_cases(benchmarks_md: Path) -> None:
    pytest.importorskip("x_transformers")
    from butcherflow.bench.extract import Case, run_extract
    from butcherflow.zoo import x_transformers_default

    cases = (
        Case("layer", "one tiny layer", lambda: x_transformers_default(1)),
        Case("stack", "two tiny layers", lambda: x_transformers_default(2)),
    )
    rows = run_extract(benchmarks_md, 1, "butcherflow bench extract --repeats 1", cases)
    assert [r.declaration for r in rows] == ["splitting, order 1"] * 2
    assert all(r.extract > 0 and r.difference < 1e-13 for r in rows)
    text = benchmarks_md.read_text()
    assert "kept" in text and "<!-- bench:extract:start -->" in text
    assert "Worst layer: one tiny layer" in text and "Worst stack: two tiny layers" in text


@pytest.mark.slow
def test_export_benchmark_times_each_step_and_the_total(
    benchmarks_md: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("transformers")
    from tiny_run import lm_text

    from butcherflow.bench.export import TARGET, run_export

    monkeypatch.setenv("BUTCHERFLOW_CACHE", str(tmp_path / "cache"))
    text = lm_text(tmp_path / "text")
    medians = run_export(benchmarks_md, 1, "butcherflow bench export", str(text), preset="tiny")
    assert len(medians) == 5 and all(t > 0 for t in medians.values())
    section = benchmarks_md.read_text()
    assert "kept" in section and "<!-- bench:export:start -->" in section
    total = sum(t for name, t in medians.items() if "(fresh process)" in name and "RUN" in name)
    total += next(t for name, t in medians.items() if name.startswith("from_pretrained"))
    assert f"**{total:.2f}**" in section and f"(target < {TARGET:g})" in section


def test_extract_benchmark_times_a_whole_model_and_its_rewiring(benchmarks_md: Path) -> None:
    pytest.importorskip("transformers")
    from butcherflow.bench.extract import Case, run_extract
    from butcherflow.zoo import llama_model

    rows = run_extract(
        benchmarks_md, 1, "butcherflow bench extract", (Case("model", "tiny", llama_model),)
    )
    assert rows[0].declaration == "splitting, order 1; depth order 1"
    assert rows[0].rewire is not None and rows[0].difference < 1e-12
    text = benchmarks_md.read_text()
    assert "Worst model: tiny" in text and "Worst rewiring: tiny" in text
