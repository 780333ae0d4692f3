"""`butcherflow check` and `list`: proofs and the catalog, without torch.

These two commands load only the declaration and analysis stages, so a proof answers in a
fraction of a second (`butcherflow check rk4`); `butcherflow.cli` builds their parsers without
importing the commands that need tensors. `check --plot DIR` imports the gallery's drawing
(`figures`), and with it torch, only when it is given.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from types import ModuleType

from ..analysis import Report, check
from ..analysis.budget import DEFAULT_TIME_BUDGET
from ..errors import ButcherflowError
from ..methods import catalog
from ..methods.files import BY_FAMILY, catalog_dir, read_toml


def add_commands(sub: argparse._SubParsersAction) -> None:
    """The `check` and `list` subcommands."""
    p = sub.add_parser("check", help="prove the order of a declaration and print its report")
    p.add_argument("method", nargs="?", help="a catalog name (see `list`) or a .toml file")
    p.add_argument("--all", action="store_true", help="check the whole catalog (a table)")
    p.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    p.add_argument("--max-order", type=int, default=None, help="stop the order search here")
    p.add_argument(
        "--time-budget",
        type=float,
        default=DEFAULT_TIME_BUDGET,
        metavar="SECONDS",
        help="seconds the whole report may take (order search and stability rows); a row not "
        f"decided by then says so, with what was established (default {DEFAULT_TIME_BUDGET:g})",
    )
    p.add_argument(
        "--plot",
        metavar="DIR",
        help="also draw the declaration's stability region, order star and convergence plot "
        "into DIR as SVG (as its gallery page shows them; created if needed)",
    )
    p.set_defaults(run=cmd_check)

    p = sub.add_parser("list", help="list the catalog: the integrators, then the model recipes")
    p.add_argument("--family", choices=tuple(BY_FAMILY), help="only the integrators of a family")
    p.set_defaults(run=cmd_list)


def _render(report: Report, fmt: str) -> str:
    if fmt == "json":
        return report.to_json()
    if fmt == "markdown":
        return report.to_markdown()
    return str(report)


def order_table(reports: Sequence[Report]) -> str:
    """One line per method: family, claimed and proved orders, verdict, time."""
    header = f"{'method':<24} {'family':<12} {'claimed':>7} {'proved':>6} {'sub-step':>9}  verdict"
    lines = [header, "-" * len(header)]
    for r in reports:
        effective = r.substep_order
        verdict = "ok" if r.claim_holds else "CLAIM FAILS: " + r.mismatch_message()
        lines.append(
            f"{r.method.name:<24} {r.method.family:<12} "
            f"{'—' if r.method.order is None else r.method.order:>7} {r.order:>6} "
            f"{'' if effective is None else effective:>9}  {verdict}"
        )
    return "\n".join(lines)


def cmd_check(args: argparse.Namespace) -> int:
    if args.all == bool(args.method):
        raise ButcherflowError("give one method (a catalog name or a .toml file) or --all")
    if args.all and args.plot:
        raise ButcherflowError(
            "--plot draws one declaration: give a method, not --all "
            "(`butcherflow gallery` draws the whole catalog)"
        )
    if args.plot:  # before the proof: a file given as DIR fails at once
        _figures().plot_folder(args.plot)
    if args.all:
        reports, broken = [], []
        for name in catalog:
            try:
                reports.append(check(name, time_budget=args.time_budget))
            except ButcherflowError as error:  # report every bad file, not just the first
                broken.append(f"{name}: {error}")
        print(order_table(reports))
        failed = [r for r in reports if not r.claim_holds]
        for line in broken:
            print(f"error: {line}", file=sys.stderr)
        print(
            f"\n{len(reports) + len(broken)} declarations: {len(reports)} checked, "
            f"{len(failed)} claim(s) fail, {len(broken)} invalid."
        )
        return 1 if failed or broken else 0
    report = check(args.method, max_order=args.max_order, time_budget=args.time_budget)
    print(_render(report, args.format))
    if args.plot:
        _figures().plot(report, args.plot, stdout=args.format != "json")
    if not report.claim_holds:
        print(f"error: {report.mismatch_message()}", file=sys.stderr)
        return 1
    return 0


def _figures() -> ModuleType:
    """`cli.figures`, imported on first use: the gallery's drawing loads torch."""
    return importlib.import_module(f"{__package__}.figures")


def cmd_list(args: argparse.Namespace) -> int:
    broken = 0
    for name in catalog:
        try:
            method = catalog[name]
        except ButcherflowError as error:
            print(f"error: {error}", file=sys.stderr)
            broken += 1
            continue
        if args.family and method.family != args.family:
            continue
        order = "—" if method.order is None else method.order
        print(f"{name:<24} {method.family:<12} order {order!s:<3} {method.title}")
    if not args.family:
        _list_recipes()
    return 1 if broken else 0


def _list_recipes() -> None:
    """The model recipes (`models/*.toml`): name, sides, title, read from the files as they
    are (`butcherflow show NAME` builds and explains one)."""
    print("\nmodel recipes (butcherflow show NAME; butcherflow train NAME ...):")
    for path in sorted(catalog_dir("models").glob("*.toml")):
        data = read_toml(path)
        sides = "+".join(side for side in ("encoder", "decoder") if side in data)
        print(f"{path.stem:<32} {sides:<16} {data.get('title', '')}")
