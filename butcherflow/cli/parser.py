"""The parser every `butcherflow` command is built with: each default said once in `--help`,
and a mistyped flag answered with the closest one, under the command's own usage.

argparse keeps no public list of a parser's options, so `suggestion` reads `parser._actions`
(as the docs' generated command reference does, `gallery.cli_reference`).
"""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..errors import DeclarationError


class Formatter(argparse.HelpFormatter):
    """An option's help ends with `(default: X)` unless it names its default itself (a default
    in words: "the run's", "torch's") or has none to say (None, False, a suppressed default)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        silent = default is None or default is False or default is argparse.SUPPRESS
        if silent or "default" in text or not action.option_strings or action.nargs == 0:
            return text
        return f"{text} (default: {str(default).replace('%', '%%')})"


class Parser(argparse.ArgumentParser):
    """`argparse.ArgumentParser` with `Formatter`, for the program and every subcommand."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", Formatter)
        super().__init__(*args, **kwargs)


def said(text: str, default: object) -> str:
    """`text` with its default said in it, for an option whose default is suppressed (absent
    from the namespace unless given) but which has one: `said("beam size", 5)`."""
    return f"{text} (default: {default})"


def suggestion(parser: argparse.ArgumentParser, extras: Sequence[str]) -> str:
    """The error for arguments `parser` does not know: each unknown flag with the closest
    flag it has (difflib), e.g. `unrecognized argument --max-updates (did you mean
    --max-update?)`.

    **Arguments:**

    - `parser`: the subcommand's parser (its flags are the candidates).
    - `extras`: what `parse_known_args` left over (the values of unknown flags are left out of
      the message).

    **Returns:** one line for `parser.error`.
    """
    flags = [flag for action in parser._actions for flag in action.option_strings]
    unknown = [extra for extra in extras if extra.startswith("-")] or list(extras)  # not values
    parts = []
    for extra in unknown:
        name = extra.split("=", 1)[0]
        close = difflib.get_close_matches(name, flags, n=1, cutoff=0.6) if name[:1] == "-" else []
        parts.append(f"{extra} (did you mean {close[0]}?)" if close else extra)
    noun = "argument" if len(unknown) == 1 else "arguments"
    return f"unrecognized {noun} " + ", ".join(parts) + f"; `{parser.prog} --help` lists them"


def check_parent(path: str, key: str) -> None:
    """An output a command creates (`gallery --out`, `experiment --out`): its parent folder must
    exist, so that a command run from another folder than a checkout's root, or a typo, creates
    no `docs/` there."""
    parent = Path(path).parent
    if not parent.is_dir():
        raise DeclarationError(
            f"folder {str(parent)!r} does not exist (defaults are relative to the working "
            "directory: run from a checkout's root)",
            key=key,
            value=path,
            valid="a path in an existing folder",
        )


def at_least(least: float, kind: type = int) -> Callable[[str], Any]:
    """An argparse `type`: a `kind` number >= `least` (argparse names the flag on error)."""

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {kind.__name__}") from None
        if not value >= least:  # nan too
            raise argparse.ArgumentTypeError(f"{text} is below {least:g}")
        return value

    return parse
