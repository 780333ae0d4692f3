"""The audit page's entries read by `bf.extract` from the pinned libraries."""

from __future__ import annotations

from importlib.metadata import version

import pytest

pytest.importorskip("x_transformers")
pytest.importorskip("hyper_connections")

from butcherflow.gallery.audit.extracted import FINDINGS, entry
from butcherflow.zoo import LIBRARY_TARGETS

BY_KEY = {t.key: t for t in LIBRARY_TARGETS}


def test_every_target_has_its_findings() -> None:
    assert set(FINDINGS) == set(BY_KEY)


def test_an_extracted_entry_names_version_module_declaration_and_proof() -> None:
    target = BY_KEY["x-streams"]
    row, lines = entry(target, version("x-transformers"))
    text = "\n".join(lines)
    assert row[2:] == ["general-linear (per token)", "not preconsistent: order 0"]
    assert f"x-transformers {version('x-transformers')}" in text
    assert "x_transformers.x_transformers.HyperConnection" in text
    assert 'V = [["1", "1", "1", "1"], ["1", "1", "1", "1"]' in text
    assert "round trip" in text


def test_a_refused_entry_says_why_without_link_syntax() -> None:
    row, lines = entry(BY_KEY["hc-fractional"], version("hyper-connections"))
    refusal = next(line for line in lines if "refuses" in line)
    assert row[2] == "refused"
    assert "cut into 2 fractions" in refusal and "[" not in refusal.replace("\\[", "")
