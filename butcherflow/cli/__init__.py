"""The `butcherflow` command line.

Every subcommand turns a user's mistake (a bad declaration, an unknown name, a claim that fails)
into a one-line message and exit code 1; tracebacks are for bugs only.

The parser lives here; the commands in `proofs` (check, list: no torch), `design` (no torch
either), `extract`, `export` and, behind `commands`, `declarations` (show), `pipeline` (train,
evaluate, translate, average, experiment) and `docs` (bench, gallery). A run imports only the
module that declares its own command (`ALONE`): a proof loads no torch, an export neither the
benchmarks nor the optimisers; `butcherflow --help` imports them all.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as installed_version
from typing import Any

from ..errors import ButcherflowError, ButcherflowWarning
from .parser import Parser, suggestion

# The subcommands whose module declares them alone, and that module; every other one is declared
# by `commands`. Each module's `add_commands(sub)` adds its subcommands to the parser.
ALONE = {
    "check": "proofs",
    "list": "proofs",
    "design": "design",
    "extract": "extract",
    "export": "export",
}
EVERY = ("proofs", "design", "commands")  # the order of the help (`commands` adds the rest)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of `command` alone when one module declares it (`ALONE`), else the whole
    parser."""
    parser = Parser(
        prog="butcherflow",
        description="Declare integrators, prove their order, compile them into layers.",
    )
    parser.add_argument("--version", action="version", version=f"butcherflow {version()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for module in (ALONE[command],) if command in ALONE else EVERY:
        importlib.import_module(f"{__name__}.{module}").add_commands(sub)
    return parser


def version() -> str:
    """butcherflow's version as installed (`pip show butcherflow`), or `unknown` when it runs
    from a checkout that was never installed."""
    try:
        return installed_version("butcherflow")
    except PackageNotFoundError:
        return "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv[0] if argv else None)
    args, extras = parser.parse_known_args(argv)
    if extras:  # said under the command's usage, with the closest flag it has
        command = _subcommand(parser, args.command)
        command.error(suggestion(command, extras))
    with warnings.catch_warnings():
        warnings.showwarning = _note
        try:
            code: int = args.run(args)
        except ButcherflowError as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        except BrokenPipeError:  # `butcherflow show rk4 | head`: the reader left, nothing to say
            sys.stderr.close()
            return 0
    return code


def _subcommand(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    """The parser of subcommand `name`."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found: argparse.ArgumentParser = action.choices[name]
            return found
    return parser


_show_warning = warnings.showwarning


def _note(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
    """butcherflow's own warnings as one `note:` line; any other warning as Python shows it."""
    if issubclass(category, ButcherflowWarning):
        print(f"note: {message}", file=sys.stderr)
    else:
        _show_warning(message, category, *args, **kwargs)
