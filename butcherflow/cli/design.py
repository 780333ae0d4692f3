"""`butcherflow design ...`: integrators found by optimisation, each printed with its proof.

- `design polynomial --stages S --order P --spectrum SPEC`: the optimal stability polynomial,
  exact, its step proved (`--realise Q` adds a tableau of nonlinear order Q for it).
- `design ssp --stages S --order P [--implicit]`: the largest SSP coefficient.
- `design low-error --stages S --order P [--implicit]`: the smallest principal error norm.
- `design realise --polynomial A0,A1,... --order Q`: a tableau with that stability polynomial.
- `design depth --streams R --order P`: a depth method whose V is doubly stochastic.

`--format toml` prints the catalog declaration (with the command that designed it), `--output
FILE` writes it (to a temporary file renamed into place). Like `check`, these commands load no
torch.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from ..design import (
    depth_method,
    low_error_tableau,
    parse_spectrum,
    realise,
    ssp_tableau,
    stability_polynomial,
)
from ..errors import DesignError
from .parser import at_least


def add_commands(sub: argparse._SubParsersAction) -> None:
    """The `design` subcommand and its five designs."""
    p = sub.add_parser("design", help="design an integrator by optimisation, with the proof")
    kinds = p.add_subparsers(dest="design", required=True, parser_class=type(p))

    q = kinds.add_parser("polynomial", help="the optimal stability polynomial for a spectrum")
    _stages_order(q)
    q.add_argument(
        "--spectrum",
        required=True,
        help="real:LO,HI | imag:BETA | disk:CENTER,RADIUS | eigenvalues:Z1,Z2,... | "
        "eigenvalues:@FILE (the step scales the set; real:-1,0 gives h = 2s² at order 1)",
    )
    q.add_argument(
        "--samples", type=at_least(1), default=None, help="points of the spectrum to start"
    )
    q.add_argument(
        "--realise", type=int, default=None, metavar="Q", help="and a tableau of order Q"
    )
    _search(q, 10)
    _output(q)
    q.set_defaults(run=cmd_polynomial)

    for name, helptext, starts in (
        ("ssp", "the largest SSP coefficient for s stages and order p", 20),
        ("low-error", "the smallest principal error norm for s stages and order p", 10),
    ):
        q = kinds.add_parser(name, help=helptext)
        _stages_order(q)
        q.add_argument("--implicit", action="store_true", help="diagonally implicit (DIRK)")
        _search(q, starts)
        _output(q)
        q.set_defaults(run=cmd_tableau)

    q = kinds.add_parser("realise", help="a tableau with a given stability polynomial")
    q.add_argument("--polynomial", required=True, help="a_0,a_1,...,a_s (exact: 1,1,1/2,1/8)")
    q.add_argument("--order", type=int, required=True, help="the nonlinear order")
    _search(q, 10)
    _output(q)
    q.set_defaults(run=cmd_realise)

    q = kinds.add_parser("depth", help="a depth method over r streams, V doubly stochastic")
    q.add_argument("--streams", type=int, required=True, help="r, the number of streams")
    q.add_argument("--order", type=int, required=True, help="the order (at most r)")
    _search(q, starts=8)
    _output(q)
    q.set_defaults(run=cmd_depth)


def _stages_order(p: argparse.ArgumentParser) -> None:
    p.add_argument("--stages", type=int, required=True, help="s")
    p.add_argument("--order", type=int, required=True, help="p")


def _search(p: argparse.ArgumentParser, starts: int = 20) -> None:
    p.add_argument("--starts", type=at_least(1), default=starts, help="multistart: starting points")
    p.add_argument("--seed", type=int, default=0, help="the random starts' seed")


def _output(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=("text", "json", "toml"), default="text")
    p.add_argument("--name", default=None, help="the declaration's name (toml)")
    p.add_argument("--output", default=None, metavar="FILE", help="write the output here")


def _emit(args: argparse.Namespace, text: str) -> int:
    if args.output is None:
        print(text)
        return 0
    path = Path(args.output)
    if not path.parent.is_dir():
        raise DesignError("no such folder", key="--output", value=str(path.parent))
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text.rstrip() + "\n")
    os.replace(temp, path)
    print(f"wrote {path}")
    return 0


def _render(args: argparse.Namespace, design: Any) -> str:
    if args.format == "json":
        return json.dumps(design.to_dict(), indent=2)
    if args.format == "toml":
        if not hasattr(design, "to_toml"):
            raise DesignError(
                "a stability polynomial alone is no declaration",
                key="--format",
                value="toml",
                valid="add --realise Q for a tableau, or --format text/json",
            )
        return str(design.to_toml(args.name))
    return str(design)


def cmd_polynomial(args: argparse.Namespace) -> int:
    polynomial = stability_polynomial(
        args.stages, args.order, parse_spectrum(args.spectrum), samples=args.samples
    )
    if args.realise is None:
        return _emit(args, _render(args, polynomial))
    method = realise(polynomial, args.realise, starts=args.starts, seed=args.seed)
    if args.format == "text":
        return _emit(args, f"{polynomial}\n\n{method}")
    return _emit(args, _render(args, method))


def cmd_tableau(args: argparse.Namespace) -> int:
    design = ssp_tableau if args.design == "ssp" else low_error_tableau
    found = design(
        args.stages, args.order, implicit=args.implicit, starts=args.starts, seed=args.seed
    )
    return _emit(args, _render(args, found))


def cmd_realise(args: argparse.Namespace) -> int:
    coefficients = [c.strip() for c in args.polynomial.split(",") if c.strip()]
    found = realise(coefficients, args.order, starts=args.starts, seed=args.seed)
    return _emit(args, _render(args, found))


def cmd_depth(args: argparse.Namespace) -> int:
    found = depth_method(args.streams, args.order, starts=args.starts, seed=args.seed)
    return _emit(args, _render(args, found))
