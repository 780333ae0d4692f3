"""`butcherflow extract FACTORY`: the integrator a module computes, for a module you can name.

FACTORY is `package.module:callable` (an installed package) or `path/to/file.py:callable`; the
callable takes no arguments and returns a `butcherflow.extraction.Target`: a layer with a call of
it and its fields, or a whole model with its inputs and no fields (its blocks and their fields
are found: the output is the model's table, layer by layer, and its depth method). `--fields`,
`--streams` and `--frozen` replace the target's own. The audit's targets are factories too:
`butcherflow extract butcherflow.zoo:x_transformers_macaron`,
`butcherflow extract butcherflow.zoo:gpt2_model`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import replace

from ..errors import ExtractionError
from ..extraction import ExtractedModel
from ..extraction.render import model_round_trip_line, round_trip_line, to_json, to_markdown
from ..extraction.streams import Streams
from ..extraction.target import FieldPaths, build_target

VALID_FIELD = "NAME=PATH or NAME=PATH1,PATH2 (a chain in call order), e.g. attn=norm,self_attn"


def add_commands(sub: argparse._SubParsersAction) -> None:
    """The `extract` subcommand."""
    p = sub.add_parser(
        "extract",
        help="read the integrator a PyTorch module computes, prove it, and verify it",
    )
    p.add_argument(
        "factory",
        help="package.module:callable or path/to/file.py:callable returning a "
        "butcherflow.extraction.Target (a layer with its fields, or a model with its inputs)",
    )
    p.add_argument(
        "--fields",
        nargs="+",
        metavar="NAME=PATHS",
        help=f"replace the target's fields: {VALID_FIELD}",
    )
    p.add_argument(
        "--streams",
        default=None,
        help="where the state holds its streams: an axis (2) or batch:R (R streams folded into "
        "the batch axis, as lucidrains' hyper-connections)",
    )
    p.add_argument("--frozen", nargs="+", default=None, metavar="PATH", help="frozen sub-modules")
    p.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    p.set_defaults(run=cmd_extract)


def parse_fields(items: Sequence[str]) -> dict[str, FieldPaths]:
    """`["attn=norm,self_attn", "mlp=mlp"]` -> `{"attn": ("norm", "self_attn"), "mlp": "mlp"}`."""
    fields: dict[str, FieldPaths] = {}
    for item in items:
        name, equals, paths = item.partition("=")
        parts = tuple(p.strip() for p in paths.split(","))
        if not equals or not name.strip() or not all(parts):
            raise ExtractionError(f"--fields: '{item}' is not a field; valid: {VALID_FIELD}")
        fields[name.strip()] = parts[0] if len(parts) == 1 else parts
    return fields


def parse_streams(text: str) -> Streams:
    """`"2"` -> 2, `"batch:4"` -> `("batch", 4)`."""
    kind, colon, count = text.partition(":")
    try:
        return ("batch", int(count)) if colon and kind == "batch" else int(text)
    except ValueError:
        raise ExtractionError(
            f"--streams: '{text}' is neither an axis nor batch:R; valid: e.g. 2 or batch:4"
        ) from None


def cmd_extract(args: argparse.Namespace) -> int:
    target = build_target(args.factory)
    fields = parse_fields(args.fields) if args.fields else target.fields
    streams = target.streams if args.streams is None else parse_streams(args.streams)
    frozen = target.frozen if args.frozen is None else tuple(args.frozen)
    found = replace(target, fields=fields, streams=streams, frozen=frozen).extract()
    difference = found.verify()
    if args.format == "json":
        print(to_json(found, difference))
    elif args.format == "markdown":
        print(to_markdown(found, difference))
    else:
        title = f"{target.title}\n\n" if target.title else ""
        line = (
            model_round_trip_line(found)
            if isinstance(found, ExtractedModel)
            else round_trip_line(difference, found.precision)
        )
        print(f"{title}{found}\n\n{line}")
    return 0
