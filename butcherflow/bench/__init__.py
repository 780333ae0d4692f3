"""Benchmarks behind `butcherflow bench ...`; each writes its own section of docs/benchmarks.md.

The file holds one section per benchmark between `<!-- bench:KEY:start -->` and
`<!-- bench:KEY:end -->`. A benchmark rewrites only its own section (appending it when missing),
so the numbers of other benchmarks stay where they are.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..devices import set_threads

HEADER = (
    "# Benchmarks\n\n"
    "Every number on this page comes from a `butcherflow bench ...` command that anyone can rerun; "
    "each section names its command and machine, and is rewritten only by that command.\n"
)


def replace_section(text: str, key: str, body: str) -> str:
    """Put `body` between the markers of section `key`, leaving the rest of `text` intact.

    **Arguments:**

    - `text`: the current content of the markdown file (empty for a new file).
    - `key`: the benchmark's name (`"order"`, `"block"`, ...).
    - `body`: the section's new markdown, without markers.

    **Returns:** the new content: the section replaced in place, or appended when missing.
    """
    start, end = f"<!-- bench:{key}:start -->", f"<!-- bench:{key}:end -->"
    block = f"{start}\n{body.strip()}\n{end}"
    i, j = text.find(start), text.find(end)
    if i >= 0 and j > i:
        return text[:i] + block + text[j + len(end) :]
    if not text.strip():
        text = HEADER
    return text.rstrip() + "\n\n" + block + "\n"


def write_section(path: str | Path, key: str, body: str) -> None:
    """Rewrite section `key` of the markdown file at `path` (created with its folder if missing).

    **Arguments:**

    - `path`: the markdown file, e.g. `docs/benchmarks.md`.
    - `key`: the benchmark's name.
    - `body`: the section's markdown.

    **Returns:** nothing; the file is written.
    """
    file = Path(path)
    old = file.read_text(encoding="utf-8") if file.is_file() else ""
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(replace_section(old, key, body), encoding="utf-8")


def read_section(text: str, key: str) -> str | None:
    """The body of section `key` in `text` (a benchmarks file's content), or None if absent."""
    start, end = f"<!-- bench:{key}:start -->", f"<!-- bench:{key}:end -->"
    i, j = text.find(start), text.find(end)
    return text[i + len(start) : j].strip() if i >= 0 and j > i else None


def table_rows(body: str) -> list[dict[str, str]]:
    """The rows of the first markdown table in `body`, each a mapping from the header's column
    names to the row's cells (stripped); [] when `body` holds no table.

    **Arguments:**

    - `body`: a section's markdown, as a benchmark writes it.

    **Returns:** one dict per row, in order.
    """
    lines = [line.strip() for line in body.splitlines()]
    for i, line in enumerate(lines[:-1]):
        if line.startswith("|") and lines[i + 1].startswith("|---"):
            header = [cell.strip() for cell in line.strip("|").split("|")]
            rows = []
            for row in lines[i + 2 :]:
                if not row.startswith("|"):
                    break
                cells = [c.strip() for c in row.strip("|").split("|")]
                rows.append(dict(zip(header, cells, strict=False)))
            return rows
    return []


def run_benchmark(args: argparse.Namespace) -> int:
    """Run the benchmark named by `args.what` (the `butcherflow bench` subcommand).

    **Arguments:**

    - `args`: parsed CLI arguments: `what` (`"order"`, `"block"` or `"beam"`), `output`, `repeats`,
      `no_nodepy`, `threads` (torch's CPU threads; None keeps torch's default).

    **Returns:** the exit code, 0 (a missed target is reported, not an error).
    """
    threads = getattr(args, "threads", None)
    set_threads(threads)
    given = f" --threads {threads}" if threads is not None else ""
    command = f"butcherflow bench {args.what} --repeats {args.repeats}{given}"
    if args.what == "order" and args.no_nodepy:
        command += " --no-nodepy"
    if str(args.output) != "docs/benchmarks.md":
        command += f" --output {args.output}"
    if args.what == "train":
        from .train import run_from_args

        return run_from_args(args, given)
    if args.what == "beam":
        from .beam import run_beam

        if args.device != "auto":
            command += f" --device {args.device}"
        run_beam(output=args.output, repeats=args.repeats, command=command, device=args.device)
        return 0
    if args.what == "extract":
        from .extract import run_extract

        run_extract(output=args.output, repeats=args.repeats, command=command)
        return 0
    if args.what == "design":
        from .design import run_design

        run_design(output=args.output, command=f"butcherflow bench design{given}")
        return 0
    if args.what == "bseries":
        from .bseries import run_bseries

        run_bseries(output=args.output, repeats=args.repeats, command=command)
        return 0
    if args.what == "floater":
        from .floater import run_floater

        run_floater(output=args.output, repeats=args.repeats, command=command)
        return 0
    if args.what in ("block", "streams"):
        from .block import run_block
        from .streams import run_streams

        if args.what == "block":
            run_block(output=args.output, repeats=args.repeats, command=command)
        run_streams(output=args.output, repeats=args.repeats, command=command)
        return 0
    from .order import run_order

    run_order(output=args.output, repeats=args.repeats, nodepy=not args.no_nodepy, command=command)
    return 0


__all__ = ["read_section", "replace_section", "run_benchmark", "table_rows", "write_section"]
