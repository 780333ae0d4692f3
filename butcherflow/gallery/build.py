"""`build_gallery`: every catalog entry and recipe as a page, and the index that compares them.

The gallery is written into a fresh folder beside the target and swapped in at the end, so a
build never leaves pages of entries that no longer exist, and an interrupted build leaves the
previous gallery whole.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import final

from ..assemble import recipe_names
from ..errors import ButcherflowError
from ..methods import catalog
from .audit import audit_page, library_section
from .model_page import VOCAB, model_page
from .solver_block import BASE, LENGTH, STACK_LAYERS
from .solver_page import IndexRow, solver_page
from .text import Measured, count, read_benchmarks

MARKER = ".butcherflow-gallery"  # a folder with this file may be replaced by a new build
AUDIT_PAGE = "reference-code.md"  # "What the reference code computes"
FAMILY_ORDER = ("runge-kutta", "splitting", "multistep", "continuous", "model")


@final
@dataclass(frozen=True)
class GalleryResult:
    """What a build wrote: the index rows (solvers, then models) and the seconds it took."""

    rows: tuple[IndexRow, ...]
    seconds: float

    @property
    def problems(self) -> list[tuple[str, str]]:
        """(entry, what could not be derived) for every page with a problem section."""
        return [(r.name, r.problem) for r in self.rows if r.problem]


def _solver_job(args: tuple[str, str, dict[str, list[Measured]]]) -> IndexRow:
    name, folder, measured = args
    return solver_page(name, Path(folder), measured)


def _one_thread() -> None:
    import torch

    torch.set_num_threads(1)


def build_gallery(
    out: str | Path,
    *,
    names: Sequence[str] | None = None,
    recipes: Sequence[str] | None = None,
    benchmarks: str | Path | None = None,
    jobs: int = 1,
    reference_code: bool = True,
) -> GalleryResult:
    """Write the gallery: `out/index.md`, `out/solvers/NAME.md`, `out/models/NAME.md`, and
    `out/reference-code.md` (what the papers' released code computes, beside the papers).

    **Arguments:**

    - `out`: the gallery folder (replaced as a whole).
    - `names`: catalog entries or declaration files (paths) to include (default: every
      catalog entry).
    - `recipes`: model recipes to include (default: every one).
    - `benchmarks`: `docs/benchmarks.md`, whose rows about an entry appear on its page.
    - `jobs`: worker processes for the solver pages (1: in this process).
    - `reference_code`: write `reference-code.md` (it extracts every library's layers, the
      slowest page; `gallery --only` leaves it out).

    **Returns:** a `GalleryResult`.
    """
    start = time.perf_counter()
    target = Path(out)
    _check_replaceable(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    measured = read_benchmarks(None if benchmarks is None else Path(benchmarks))
    solver_names = sorted(catalog) if names is None else list(names)
    recipe_list = recipe_names() if recipes is None else list(recipes)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        (work / "solvers").mkdir()
        (work / "models").mkdir()
        jobs_args = [(n, str(work / "solvers"), measured) for n in solver_names]
        if jobs > 1 and len(solver_names) > 1:
            # spawn, not fork: torch's threads make fork unsafe
            context = multiprocessing.get_context("spawn")
            with ProcessPoolExecutor(jobs, mp_context=context, initializer=_one_thread) as pool:
                solver_rows = list(pool.map(_solver_job, jobs_args))
        else:
            solver_rows = [_solver_job(a) for a in jobs_args]
        by_name = {r.name: r for r in solver_rows}
        model_rows = [model_page(n, work / "models", measured, by_name) for n in recipe_list]
        rows = tuple(solver_rows + model_rows)
        (work / "index.md").write_text(index_page(rows), encoding="utf-8")
        if reference_code:
            audit = audit_page() + "\n" + library_section()
            (work / AUDIT_PAGE).write_text(audit, encoding="utf-8")
        (work / MARKER).write_text("written by butcherflow gallery; replaced as a whole\n")
        if target.exists():
            old = target.with_name(f".{target.name}-old-{os.getpid()}")
            target.rename(old)
            work.rename(target)
            shutil.rmtree(old)
        else:
            work.rename(target)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return GalleryResult(rows, time.perf_counter() - start)


def _check_replaceable(target: Path) -> None:
    """The gallery replaces its folder as a whole: refuse anything but an empty folder or a
    gallery written before (it carries the marker file)."""
    if not target.exists() and not target.is_symlink():
        return
    if target.is_symlink() or not target.is_dir():
        raise ButcherflowError(
            f"--out {target}: exists and is not a folder; give a folder for the gallery"
        )
    if any(target.iterdir()) and not (target / MARKER).is_file():
        raise ButcherflowError(
            f"--out {target}: a non-empty folder that no gallery build wrote (no {MARKER}); "
            "the gallery replaces its folder as a whole, so give a new or empty folder"
        )


def _sort_key(row: IndexRow) -> tuple[int, str]:
    family = FAMILY_ORDER.index(row.family) if row.family in FAMILY_ORDER else len(FAMILY_ORDER)
    return family, row.name


def _title(text: str) -> str:
    return text.replace('"', "'").replace("|", "/")


def index_page(rows: Sequence[IndexRow]) -> str:
    """The gallery's front page: one sortable table of every entry."""
    sizes = ", ".join(f"{k} {v}" for k, v in BASE.items())
    lines = [
        "---",
        "hide:",
        "  - navigation",
        "  - toc",
        "---",
        "",
        "# Gallery",
        "",
        "Every declaration of the catalog (`solvers/`) and every model recipe (`models/`), each "
        "on a page generated from its file when the docs are built: the exact coefficients, "
        "the proved order report, the stability region and measured convergence, and the "
        "compiled block with its data-flow diagram and generated code. Click a column heading "
        "to sort.",
        "",
        "- **stages**: the method's stages, as its page states them (— for a family without "
        "stages: splittings, multistep methods); models: encoder + decoder layers.",
        "- **field calls**: calls of the field per block as compiled (per layer of a multistep "
        "stack; an implicit method's fixed-point iterations included); models: all blocks.",
        "- **order**: proved with exact sub-flows for splittings; **with sub-steps**: with the "
        "declared sub-step (what the layer computes).",
        "- **real stability interval**: r of the largest [−r, 0] of hλ where the step is stable "
        "(∞: the whole negative axis).",
        f"- **parameters** and **FLOPs/token** at transformer-base sizes ({sizes}) with a "
        f"`san+ffn` field, at sequence length {LENGTH}; multistep stacks per layer (a "
        f"{STACK_LAYERS}-layer stack divided by {STACK_LAYERS}); models: the whole model at a "
        f"vocabulary of {VOCAB:,}, FLOPs of all its blocks (encoder per source token plus "
        "decoder per target token).",
        "",
        '<div class="sortable" markdown>',
        "",
        "| entry | family | stages | field calls | order | with sub-steps "
        "| real stability interval | parameters | FLOPs/token |",
        "| --- | --- | --: | --: | --: | --: | --: | --: | --: |",
    ]
    for row in sorted(rows, key=_sort_key):
        flag = " ⚠" if row.problem else ""
        flops = "—" if row.flops is None else f"{row.flops:,}"
        link = f'[{row.name}]({row.page} "{_title(row.title)}"){flag}'
        lines.append(
            f"| {link} | {row.family} | {row.stages} | {row.calls} | {row.order} | "
            f"{row.substep_order} | "
            f"{row.interval} | {count(row.params)} | {flops} |"
        )
    lines += ["", "</div>", ""]
    problems = [r for r in rows if r.problem]
    if problems:
        lines += [
            "⚠ Parts of these pages could not be derived (each page says why): "
            + ", ".join(f"[{r.name}]({r.page})" for r in problems)
            + ".",
            "",
        ]
    return "\n".join(lines)
