"""`butcherflow bench` and `gallery`: the commands that write the documentation's pages."""

from __future__ import annotations

import argparse

from ..assemble import recipe_names
from ..bench import run_benchmark
from ..errors import ButcherflowError
from ..gallery import build_gallery
from ..methods import catalog
from .parser import check_parent


def cmd_bench(args: argparse.Namespace) -> int:
    return run_benchmark(args)


def cmd_gallery(args: argparse.Namespace) -> int:
    check_parent(args.out, "--out")
    names, recipes = None, None
    if args.only:  # catalog entries and recipes (a name that is both gets both pages)
        models = set(recipe_names())
        unknown = [n for n in args.only if n not in catalog and n not in models]
        if unknown:
            raise ButcherflowError(
                f"--only: no catalog entry or recipe named {', '.join(unknown)} "
                "(`butcherflow list` shows the catalog, models/ the recipes)"
            )
        names = [n for n in args.only if n in catalog]
        recipes = [n for n in args.only if n in models]
    result = build_gallery(
        args.out,
        names=names,
        recipes=recipes,
        benchmarks=args.benchmarks,
        jobs=args.jobs,
    )
    solvers = sum(1 for r in result.rows if r.kind == "solver")
    print(
        f"wrote {args.out}: {solvers} solver page(s), {len(result.rows) - solvers} model "
        f"page(s) and the index in {result.seconds:.1f} s"
    )
    for name, problem in result.problems:
        print(f"note: {name}: {problem}")
    return 0
