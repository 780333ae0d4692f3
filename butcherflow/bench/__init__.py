"""Benchmarks behind `butcherflow bench ...`; each writes its own section of docs/benchmarks.md.

The file holds one section per benchmark between `<!-- bench:KEY:start -->` and
`<!-- bench:KEY:end -->`. A benchmark rewrites only its own section (appending it when missing),
so the numbers of other benchmarks stay where they are.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..assemble.recipe import OVERRIDES
from ..devices import set_threads
from ..errors import DeclarationError
from ..experiments.presets import get_preset
from ..tasks import LANGUAGE_MODEL, TRANSLATION

# What `butcherflow bench WHAT` runs: the one list of benchmarks (the command's help, and its
# answer when WHAT is left out).
BENCHMARKS = {
    "order": "prove the whole catalog, timed, beside NodePy",
    "block": "compiled blocks vs hand-written loops, then streams",
    "streams": "hyper-connection stacks (n = 4, every coefficient policy) vs the residual stack",
    "beam": "beam search with incremental caches (eager and compiled) vs recomputing every prefix",
    "floater": "a training step with FLOATER positions vs sinusoidal positions",
    "train": "training tokens/s, FLOPs, MFU and peak memory of recipes beside "
    "torch.nn.Transformer (--task language_model: decoder-only recipes beside a nanoGPT-style "
    "GPT on packed windows)",
    "extract": "bf.extract with its proof on one layer, on a 12-layer stack and on 12-layer "
    "causal LMs (and bf.rewire on them)",
    "sweep": "every causal LM of transformers read, rewired, generating and reloaded "
    "(the table: causal-lms.md beside --output)",
    "bseries": "B-series, modified equation and symplecticity order of the catalog to order 8, "
    "SSP coefficients beside NodePy",
    "design": "every kind of bf.design at s <= 10, timed, beside the best known values",
    "export": "butcherflow export of a small language model and its reload by transformers, "
    "each in a fresh process",
}
DEFAULT_OUTPUT = "docs/benchmarks.md"  # relative to the working directory: a checkout's root
# `bench train --data`'s default by task: a translation corpus, or the target side alone
TRAIN_DATA = {TRANSLATION.name: "bible:de-en", LANGUAGE_MODEL.name: "bible:en"}

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

    - `path`: the markdown file, e.g. `docs/benchmarks.md`, in a folder that exists.
    - `key`: the benchmark's name.
    - `body`: the section's markdown.

    **Returns:** nothing; the file is written and its path printed.
    """
    file = Path(path)
    check_output(file)
    old = file.read_text(encoding="utf-8") if file.is_file() else ""
    file.write_text(replace_section(old, key, body), encoding="utf-8")
    print(f"wrote section '{key}' of {file}")


def check_output(path: str | Path) -> None:
    """A markdown file a benchmark may write: in a folder that exists (a benchmark run in
    another folder than a checkout's root must not create `docs/` there)."""
    folder = Path(path).parent
    if not folder.is_dir():
        raise DeclarationError(
            f"folder {str(folder)!r} does not exist (the default {DEFAULT_OUTPUT} is relative to "
            "the working directory: run from a checkout's root)",
            key="--output",
            value=str(path),
            valid="a .md file in an existing folder",
        )


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


def recipes_and_sizes(args: argparse.Namespace, options: dict[str, Any]) -> str:
    """`bench train`'s `--recipes` and `--sizes` (a preset's sizes and dropout) into `options`;
    returns them as the command line spells them."""
    command = ""
    if args.recipes:
        options["recipes"] = tuple(args.recipes)
        command += " --recipes " + " ".join(args.recipes)
    if args.sizes is not None:
        options["sizes"] = preset_sizes(args.sizes)
        command += f" --sizes {args.sizes}"
    return command


def preset_sizes(name: str) -> dict[str, Any]:
    """An experiment preset's sizes and dropout (`assemble.recipe.OVERRIDES`), as `--sizes NAME`
    gives them to `bench train` and `bench beam`; a `DeclarationError` for an unknown name."""
    preset = get_preset(name).train_fields()
    return {k: preset[k] for k in OVERRIDES}


def run_benchmark(args: argparse.Namespace) -> int:
    """Run the benchmark named by `args.what` (the `butcherflow bench` subcommand).

    **Arguments:**

    - `args`: parsed CLI arguments: `what` (a key of `BENCHMARKS`; None lists them), `output`,
      `repeats`, `no_nodepy`, `threads` (torch's CPU threads; None keeps torch's default).

    **Returns:** the exit code, 0 (a missed target is reported, not an error).
    """
    if args.what is None:  # `butcherflow bench`: what it can run
        _list_benchmarks()
        return 0
    check_output(args.output)  # before minutes of measuring
    threads = getattr(args, "threads", None)
    set_threads(threads)
    given = f" --threads {threads}" if threads is not None else ""
    return RUNNERS[args.what](args, _command(args, given), given)


def _list_benchmarks() -> None:
    width = max(map(len, BENCHMARKS))
    print("butcherflow bench WHAT, where WHAT is one of:")
    for name, text in BENCHMARKS.items():
        print(f"  {name:<{width}}  {text}")
    print(f"Each writes its section of --output (default {DEFAULT_OUTPUT}).")


def _command(args: argparse.Namespace, given: str) -> str:
    """The command line a section shows: the flags every benchmark shares (its runner adds its
    own); `given`: `" --threads N"` or nothing."""
    repeats = "" if args.what == "sweep" else f" --repeats {args.repeats}"  # one run each
    command = f"butcherflow bench {args.what}{repeats}{given}"
    if args.what == "order" and args.no_nodepy:
        command += " --no-nodepy"
    return command + output_flag(args.output)


def output_flag(output: str | Path) -> str:
    """The `--output` a section's command line shows: nothing for the default file."""
    return "" if str(output) == DEFAULT_OUTPUT else f" --output {output}"


def option_flags(options: Mapping[str, object]) -> str:
    """`{"max_tokens": 2500}` as the command line spells it: `--max-tokens 2500`."""
    return " ".join(f"--{key.replace('_', '-')} {value}" for key, value in options.items())


# Each benchmark's runner, `(args, command, given) -> exit code`: it imports its module when it
# runs (most need torch), adds its own flags to `command` and writes its section.
Runner = Callable[[argparse.Namespace, str, str], int]


def _plain(name: str) -> Runner:
    """The runner of a benchmark that takes only the shared flags: `bench.NAME.run_NAME(output,
    repeats, command)`, its module imported when it runs."""

    def run(args: argparse.Namespace, command: str, given: str) -> int:
        module = importlib.import_module(f"{__name__}.{name}")
        getattr(module, f"run_{name}")(output=args.output, repeats=args.repeats, command=command)
        return 0

    return run


def _run_order(args: argparse.Namespace, command: str, given: str) -> int:
    from .order import run_order

    run_order(output=args.output, repeats=args.repeats, nodepy=not args.no_nodepy, command=command)
    return 0


def _run_block_streams(args: argparse.Namespace, command: str, given: str) -> int:
    """`block` (then streams, as its help says) and `streams` alone."""
    from .block import run_block
    from .streams import run_streams

    if args.device != "auto":
        command += f" --device {args.device}"
    if args.what == "block":
        run_block(output=args.output, repeats=args.repeats, command=command)
    run_streams(args.output, args.repeats, command, device=args.device)
    return 0


def _run_beam(args: argparse.Namespace, command: str, given: str) -> int:
    from .beam import LENGTH, run_beam

    if args.device != "auto":
        command += f" --device {args.device}"
    sizes = None
    if args.sizes is not None:  # the decoder's sizes and depth, for both sides
        preset = preset_sizes(args.sizes)
        sizes = {k: preset[k] for k in ("d_model", "n_heads", "d_ffn")}
        sizes["layers"] = preset["decoder_layers"]
        command += f" --sizes {args.sizes}"
    length = LENGTH if args.length is None else args.length
    if length < 1:
        raise DeclarationError(
            "a beam search needs at least one output token",
            key="--length",
            value=length,
            valid=f"a positive number of tokens (default {LENGTH})",
        )
    if length != LENGTH:
        command += f" --length {length}"
    run_beam(
        output=args.output,
        repeats=args.repeats,
        command=command,
        device=args.device,
        sizes=sizes,
        length=length,
    )
    return 0


def _run_train(args: argparse.Namespace, command: str, given: str) -> int:
    """`bench train`: recipes beside torch.nn.Transformer, or (`--task language_model`)
    decoder-only recipes beside the residual LM; each builds its own command line."""
    if getattr(args, "task", None) == LANGUAGE_MODEL.name:
        from .train.lm import run_from_args as run_lm

        return run_lm(args, given)
    from .train.section import run_from_args

    return run_from_args(args, given)


def _run_sweep(args: argparse.Namespace, command: str, given: str) -> int:
    from .sweep import run_sweep

    run_sweep(output=args.output, command=command)
    return 0


def _run_design(args: argparse.Namespace, command: str, given: str) -> int:
    from .design import run_design

    run_design(output=args.output, command=f"butcherflow bench design{given}")
    return 0


# by `butcherflow bench WHAT`, the keys of BENCHMARKS
RUNNERS: dict[str, Runner] = {
    "order": _run_order,
    "block": _run_block_streams,
    "streams": _run_block_streams,
    "beam": _run_beam,
    "floater": _plain("floater"),
    "train": _run_train,
    "extract": _plain("extract"),
    "sweep": _run_sweep,
    "bseries": _plain("bseries"),
    "design": _run_design,
    "export": _plain("export"),
}


__all__ = [
    "BENCHMARKS",
    "DEFAULT_OUTPUT",
    "check_output",
    "option_flags",
    "output_flag",
    "preset_sizes",
    "read_section",
    "recipes_and_sizes",
    "replace_section",
    "run_benchmark",
    "table_rows",
    "write_section",
]
