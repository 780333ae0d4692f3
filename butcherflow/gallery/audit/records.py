"""The records of the audit: a cited source, one reading of a block, an audited entry, and where
the code's block trains beside the paper's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import final

from ...methods import Method


@final
@dataclass(frozen=True)
class Source:
    """Where a fact was read: repository, commit, file and the first and last line."""

    repo: str
    commit: str
    path: str
    lines: tuple[int, int]
    what: str

    def __post_init__(self) -> None:
        first, last = self.lines
        if not (self.repo and self.commit and self.path) or not 0 < first <= last:
            raise ValueError(f"a source needs repo, commit, path and lines: {self}")

    @property
    def citation(self) -> str:
        first, last = self.lines
        where = f"L{first}" if first == last else f"L{first}–L{last}"
        return f"`{self.repo}` @ `{self.commit[:10]}`, `{self.path}` {where}"


@final
@dataclass(frozen=True)
class Side:
    """One reading of a block: a declaration (`check`ed on the page) or why there is none."""

    label: str
    method: Method | None
    note: str = ""


@final
@dataclass(frozen=True)
class Trained:
    """Where the code's block trains: `code_run` of `experiment` beside `paper_run`, the
    corrected version (run names of `experiments.EXPERIMENTS`)."""

    experiment: str
    code_run: str
    paper_run: str


@final
@dataclass(frozen=True)
class AuditEntry:
    """A paper's formula and what its released code computes, with the code cited."""

    title: str
    paper: Side
    code: tuple[Side, ...]
    sources: tuple[Source, ...]
    findings: tuple[str, ...]
    trained: tuple[Trained, ...] = ()
