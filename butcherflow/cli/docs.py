"""`butcherflow bench` and `gallery`: the commands that write the documentation's pages."""

from __future__ import annotations

import argparse

from ..bench import run_benchmark
from ..gallery import build_gallery


def cmd_bench(args: argparse.Namespace) -> int:
    return run_benchmark(args)


def cmd_gallery(args: argparse.Namespace) -> int:
    result = build_gallery(
        args.out,
        names=args.only or None,
        recipes=[] if args.only else None,
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
