"""The page "What the reference code computes": every audited entry, its verdicts proved when
the page is built, its declarations, citations and findings."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import tomli_w

from ...analysis import Report, check
from ...experiments import EXPERIMENTS
from ...methods import Method
from ..families import page_for
from ..text import cell, fence, table
from .floater import floater_entry
from .macaron import macaron_entries
from .ode_transformer import ode_entries
from .records import AuditEntry, Side, Trained


def entries() -> tuple[AuditEntry, ...]:
    """The audited blocks, in the order the page shows them."""
    return (*ode_entries(), *macaron_entries(), floater_entry())


def verdict(report: Report) -> str:
    """The proved verdict in a few words, as its family's page words it (`FamilyPage.verdict`):
    order, and what decides it for GLMs and splittings."""
    return page_for(report.method).verdict(report)


def _toml(value: Any) -> str:
    """A TOML value on one line (matrices as rows of entries)."""
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    return tomli_w.dumps({"v": value}).split("=", 1)[1].strip()


def _declaration(method: Method) -> list[str]:
    """The declaration as the lines of a declaration file, in a fenced block."""
    text = "\n".join(f"{k} = {_toml(v)}" for k, v in method.to_table().items())
    return fence(text, "toml").splitlines()


def _side(side: Side) -> tuple[list[str], list[str]]:
    """(a verdict table row, the declaration block) for one side."""
    if side.method is None:
        return ["—", side.label, "cannot be declared: " + side.note], []
    report = check(side.method)
    note = f" ({side.note})" if side.note else ""
    row = [f"`{side.method.name}`", side.label + note, verdict(report)]
    return row, [f"*{side.label}* — `{side.method.name}`:", "", *_declaration(side.method), ""]


def _trained(trained: Trained) -> str:
    """Where the code's block trains, beside the paper's: the recipes and the experiment."""
    experiment = EXPERIMENTS[trained.experiment]
    code, paper = experiment.run(trained.code_run), experiment.run(trained.paper_run)
    return (
        f"**Trained:** the code's block is the recipe "
        f"[`{code.recipe_name}`](models/{code.recipe_name}.md), run `{code.name}` of the "
        f"[{trained.experiment} experiment](../experiments/{trained.experiment}.md), beside "
        f"the paper's block, [`{paper.recipe_name}`](models/{paper.recipe_name}.md) (run "
        f"`{paper.name}`); a claim there compares them, and says 'not measured yet' until both "
        "have trained."
    )


def entry_section(entry: AuditEntry) -> str:
    """One entry: the verdicts side by side, the declarations, the cited lines, the findings."""
    rows, blocks, shown = [], [], set()
    for side in (entry.paper, *entry.code):
        row, block = _side(side)
        rows.append(row)
        if side.method is not None and side.method.name not in shown:
            shown.add(side.method.name)
            blocks += block
    lines = [f"## {entry.title}", "", table(["declaration", "reading", "bf.check"], rows), ""]
    lines += [f"- {finding}" for finding in entry.findings]
    lines += [""] if entry.findings else []
    lines += [_trained(t) for t in entry.trained]
    lines += [""] if entry.trained else []
    if entry.sources:
        lines += ["**Read in the code:**", ""]
        lines += [f"- {s.citation}: {cell(s.what)}" for s in entry.sources]
        lines += [""]
    lines += ['??? note "The declarations"', ""]
    lines += ["    " + line if line else "" for line in blocks]
    return "\n".join(lines).rstrip() + "\n"


def audit_page(audited: Sequence[AuditEntry] | None = None) -> str:
    """The gallery page "What the reference code computes", generated from `entries()`."""
    audited = entries() if audited is None else audited
    head = [
        "# What the reference code computes",
        "",
        "The papers butcherflow generalises released code, and the code does not always compute "
        "what the papers write. Each section declares both — the paper's formula and the "
        "released code's computation, in terms of the paper's field F (the residual-free "
        "branch) — and shows `bf.check`'s verdict for each, proved when this page is built. "
        "Code is cited by repository, commit, file and lines as we read it; facts carry "
        "over, code does not.",
        "",
        "*Not preconsistent* means the block's stages or output do not reproduce y when F = 0 "
        "(Butcher's preconsistency of a general linear method): it approximates no solution "
        "of y' = F(y), at any step size.",
        "",
    ]
    return "\n".join(head) + "\n" + "\n".join(entry_section(e) for e in audited)
