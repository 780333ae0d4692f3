"""`butcherflow bench` and `gallery`: the commands that write the documentation's pages."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from ..assemble import recipe_names
from ..bench import run_benchmark
from ..errors import ButcherflowError
from ..gallery import build_gallery
from ..methods import catalog, load
from .parser import check_parent


def cmd_bench(args: argparse.Namespace) -> int:
    return run_benchmark(args)


def _is_file(entry: str) -> bool:
    """A path of a declaration file rather than a name (the rule of `catalog.resolve`)."""
    return entry.endswith(".toml") or "/" in entry


def _only(entries: Sequence[str]) -> tuple[list[str], list[str]]:
    """(declarations, recipes) of `--only`: catalog names and declaration files, recipe names
    (a name that is both gets both pages); an unknown name, a file that is no declaration or
    two pages of one name is one line."""
    models = set(recipe_names())
    unknown = [n for n in entries if not _is_file(n) and n not in catalog and n not in models]
    if unknown:
        raise ButcherflowError(
            f"--only: no catalog entry or recipe named {', '.join(unknown)} "
            "(`butcherflow list` shows the catalog, models/ the recipes; a declaration file "
            "is given by its path, ending in .toml)"
        )
    pages: dict[str, tuple[str, Path]] = {}  # page name -> (entry, its file)
    for entry in entries:
        if not _is_file(entry) and entry not in catalog:
            continue
        name = load(entry).name if _is_file(entry) else entry  # a bad file: its one line
        file = (Path(entry) if _is_file(entry) else catalog.path(entry)).resolve()
        if name in pages and pages[name][1] != file:
            raise ButcherflowError(
                f"--only: {pages[name][0]} and {entry} both declare '{name}', and the gallery "
                "has one page per name; give one of them"
            )
        pages.setdefault(name, (entry, file))
    return [entry for entry, _ in pages.values()], [n for n in entries if n in models]


def cmd_gallery(args: argparse.Namespace) -> int:
    check_parent(args.out, "--out")
    names, recipes = (None, None) if not args.only else _only(args.only)
    result = build_gallery(
        args.out,
        names=names,
        recipes=recipes,
        benchmarks=args.benchmarks,
        jobs=args.jobs,
        reference_code=not args.only,
    )
    solvers = sum(1 for r in result.rows if r.kind == "solver")
    print(
        f"wrote {args.out}: {solvers} solver page(s), {len(result.rows) - solvers} model "
        f"page(s) and the index in {result.seconds:.1f} s"
    )
    for row in result.rows if args.only else ():  # a few pages: where each one is
        print(f"  {Path(args.out) / row.page}")
    for name, problem in result.problems:
        print(f"note: {name}: {problem}")
    return 0
