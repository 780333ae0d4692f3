"""The whole sweep over transformers' causal LMs (`make test-slow`; the representative handful
runs in `make test`, tests/test_extract_models.py): every class that builds tiny is read or
refused with a reason, and no step ends in a traceback or a silent mismatch (the tokens with
the cache, the round trip, the reloaded logits). The counts and the table it records are
checked on rows typed here."""

from __future__ import annotations

from pathlib import Path

import pytest

from butcherflow.gallery.audit import sweep_section
from butcherflow.zoo.sweep import SweepRow, counts_line, sweep_table, tally

ROWS = [
    SweepRow("llama", "LlamaForCausalLM", read="ok", integrator="splitting [a(1) b(1)]",
             order="1", depth="multistep", round_trip=1e-15,
             steps={"own": "ok", "strang": "ok", "midpoint": "ok", "reload": "ok"}),
    SweepRow("bloom", "BloomForCausalLM", read="refused: takes the residual stream | inside"),
    SweepRow("odd", "OddForCausalLM", read="ok", steps={"own": "mismatch: greedy [1] [2]",
             "strang": "traceback: KeyError: 'x'", "midpoint": "refused: twice"}),
    SweepRow("big", "BigForCausalLM", built="ValueError: too many parameters"),
]  # fmt: skip


def test_the_counts_name_reads_refusals_tracebacks_and_mismatches() -> None:
    assert tally(ROWS) == {
        "classes": 4,
        "built": 3,
        "read": 2,
        "refused": 1,
        "steps refused": 1,
        "tracebacks": 1,
        "mismatches": 1,
    }
    assert "tracebacks 1 (goal 0), silent mismatches 1 (goal 0)" in counts_line(ROWS)


def test_the_table_has_a_row_per_built_class_and_lists_the_others() -> None:
    table = sweep_table(ROWS).splitlines()
    assert len([line for line in table if line.startswith("| ") and "ForCausalLM" in line]) == 3
    assert r"takes the residual stream \| inside" in table[3]  # a pipe does not split the cell
    assert table[-1].endswith("`BigForCausalLM` (ValueError: too many parameters).")


def test_the_audit_page_carries_the_recorded_sweep_or_names_its_command(tmp_path: Path) -> None:
    page = tmp_path / "causal-lms.md"
    assert "`butcherflow bench sweep` writes it" in sweep_section(page)
    page.write_text("# Every causal LM\n\n" + sweep_table(ROWS), encoding="utf-8")
    assert sweep_section(page).startswith("## Every causal LM\n")


@pytest.mark.slow
def test_every_causal_lm_is_read_or_refused_with_no_traceback_and_no_mismatch() -> None:
    pytest.importorskip("transformers")
    from butcherflow.zoo.sweep import sweep

    rows = sweep()
    counts = tally(rows)
    defects = [
        f"{r.architecture}: {o}"
        for r in rows
        for o in r.outcomes
        if o.startswith(("traceback", "mismatch"))
    ]
    assert counts["tracebacks"] == counts["mismatches"] == 0, "\n".join(defects)
    assert counts["read"] > counts["built"] // 2, sweep_table(rows)  # most of them are read
