"""`butcherflow check METHOD --plot DIR`: the declaration's stability region, order star and
convergence plot (`gallery.figures`, the gallery's own drawing), each file's path printed.

`proofs` imports this module only when `--plot` is given: the gallery loads torch, and a proof
alone answers without it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..analysis import Report
from ..gallery.figures import check_folder, draw_figures


def plot_folder(folder: str) -> Path:
    """`--plot DIR` checked before the proof runs (a file is one line; nothing is created)."""
    return check_folder(folder)


def plot(report: Report, folder: str, *, stdout: bool = True) -> None:
    """Draw the report's declaration into `folder` and say what was written (on stdout, or
    stderr when stdout carries JSON) and, in one `note:` line each, what was not and why."""
    drawn = draw_figures(report.method, report, folder)
    for path in drawn.written:
        print(f"wrote {path}", file=sys.stdout if stdout else sys.stderr)
    for note in drawn.notes:
        print(f"note: {report.method.name}: {note}", file=sys.stderr)
