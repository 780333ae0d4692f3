"""The whole sweep over transformers' causal LMs (`make test-slow`; the representative handful
runs in `make test`, tests/test_extract_models.py): every class that builds tiny is read or
refused with a reason, and no step ends in a traceback or a silent mismatch (the tokens with
the cache, the round trip, the reloaded logits)."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

from butcherflow.zoo.sweep import sweep, sweep_table, tally


@pytest.mark.slow
def test_every_causal_lm_is_read_or_refused_with_no_traceback_and_no_mismatch() -> None:
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
