"""The command-line reference, generated from the argparse parser itself (it cannot drift)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from .text import table


def _subcommands(
    parser: argparse.ArgumentParser,
) -> Iterator[tuple[str, str, argparse.ArgumentParser]]:
    """(name, help, parser) of every subcommand, in the order they were added."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                yield name, helps.get(name, ""), sub


def _usage(parser: argparse.ArgumentParser) -> str:
    """The usage line at a fixed width (the terminal's would make the page vary)."""
    formatter = argparse.HelpFormatter(parser.prog, width=96)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups, prefix="")
    return formatter.format_help().strip()


def _flags(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    return ", ".join(f"`{flag}`" for flag in action.option_strings)


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _describe(action: argparse.Action) -> str:
    parts = [action.help or ""] if action.help not in (None, argparse.SUPPRESS) else []
    if action.choices is not None and not isinstance(action, argparse._SubParsersAction):
        parts.append("one of " + ", ".join(f"`{c}`" for c in action.choices))
    default = action.default
    no_default = default is None or default is argparse.SUPPRESS or default is False
    said = "default" in (action.help or "")  # the help says its default itself
    if action.nargs != 0 and action.option_strings and not no_default and not said:
        parts.append(f"default `{default}`")
    if action.required and action.option_strings:
        parts.append("required")
    return _cell("; ".join(p for p in parts if p))


def _arguments(parser: argparse.ArgumentParser) -> list[tuple[str, str]]:
    return [
        (_flags(a), _describe(a))
        for a in parser._actions
        if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))
    ]


def _section(name: str, help_text: str, parser: argparse.ArgumentParser, level: int) -> list[str]:
    lines = [f"{'#' * level} `{name}`", ""]
    if help_text:
        lines += [help_text[0].upper() + help_text[1:] + ".", ""]
    if parser.description and parser.description != help_text:
        lines += [parser.description, ""]
    lines += ["```text", _usage(parser), "```", ""]
    arguments = _arguments(parser)
    if arguments:
        lines += [table(("argument", "meaning"), arguments), ""]
    for sub_name, sub_help, sub in _subcommands(parser):
        lines += _section(f"{name} {sub_name}", sub_help, sub, min(level + 1, 6))
    return lines


def cli_reference(parser: argparse.ArgumentParser, level: int = 2) -> str:
    """Markdown for every subcommand of `parser`: usage, arguments, choices and defaults.

    **Arguments:**

    - `parser`: the program's parser (`butcherflow.cli.build_parser()`).
    - `level`: the heading level of each subcommand.

    **Returns:** markdown text.
    """
    lines = []
    if parser.description:
        lines += [parser.description, ""]
    lines += ["```text", _usage(parser), "```", ""]
    for name, help_text, sub in _subcommands(parser):
        lines += _section(f"{parser.prog} {name}", help_text, sub, level)
    return "\n".join(lines).rstrip() + "\n"
