"""`butcherflow bench train`'s section of docs/benchmarks.md, and its command line: the table of
`throughput.bench_train`'s rows (tokens/s, ratios, FLOPs, MFU, memory), the bucketed and
profiled notes, the section each configuration writes, and the options that `run_from_args`
reads from the command line."""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence
from typing import Any

import torch

from ...devices import can_compile
from ...errors import DeclarationError
from ...tasks import TRANSLATION
from .. import TRAIN_DATA, option_flags, output_flag, recipes_and_sizes, write_section
from ..order import machine
from .hardware import MIB, Peak, device_notes, device_peak
from .profile import describe
from .throughput import RECIPES, TrainRow, bench_train


def _cell(value: float | None, text: str) -> str:
    return "n/a" if value is None else text.format(value)


def _ratio(row: TrainRow, other: TrainRow | None) -> str:
    return "" if other is None else f"{row.tokens_per_s / other.tokens_per_s:.3f}"


def train_section_key(
    device: torch.device, compile: bool, recipes: Sequence[str], buckets: bool = False
) -> str:
    """The benchmarks.md section a configuration writes: `train` (CPU) or `train-cuda` for eager
    runs, one section per recipe set for compiled runs (a GPU compiles one recipe per command),
    and `...-buckets` for a comparison with unbucketed batches (`compare_buckets`), so that no
    run overwrites another kind's numbers."""
    key = "train" if device.type == "cpu" else f"train-{device.type}"
    return key + ("-compiled-" + "+".join(recipes) if compile else "") + "-buckets" * buckets


def run_train_bench(output: str, command: str, **options: Any) -> list[TrainRow]:
    """Run `bench_train(**options)`, print the table and write its section of `output`."""
    load = os.getloadavg()[0]  # the machine's business, which every row shared (they alternate)
    rows, settings, target = bench_train(**options)
    peak = device_peak(target)
    peak_text, memory_text = device_notes(target, peak)
    gpu = f", {torch.cuda.get_device_name(target)}" if target.type == "cuda" else ""
    where = "the CPU" if target.type == "cpu" else "the GPU"
    title = (
        f"Length buckets on {where}"
        if options.get("compare_buckets")
        else "Training throughput (`butcherflow bench train`)"
    )
    lines = [
        f"## {title}",
        "",
        f"Command: `{command}` ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}). "
        f"Machine: {machine()}; torch {torch.__version__}{gpu}, {torch.get_num_threads()} torch "
        f"thread(s); load average {load:.1f} at start, {os.getloadavg()[0]:.1f} at the end. "
        f"Settings: {settings}. Each model "
        "takes the training loop's own step (label-smoothed loss, AdamW) on the same batches, "
        "in turns; throughput counts target tokens (non-pad, eos included), as fairseq does. "
        "FLOPs: the model's, from its compiled blocks, forward + backward = 3 × forward "
        f"(`butcherflow.bench.train.timing`); {peak_text}; {memory_text}.",
        "",
        "| model | parameters | target tokens/s | vs torch.nn.Transformer | vs lm-residual "
        "| compiled / eager | GFLOP per target token | TFLOP/s | MFU | peak memory (MiB) |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
        *_table_rows(rows, peak, target, options.get("profile")),
    ]
    body = "\n".join(lines)
    print(body)
    key = train_section_key(
        target,
        bool(options.get("compile")) and can_compile(target.type, say=lambda _: None),  # ran
        options.get("recipes", RECIPES),
        bool(options.get("compare_buckets")),
    )
    write_section(output, key, body)
    return rows


def _table_rows(
    rows: Sequence[TrainRow], peak: Peak | None, target: torch.device, profile: object
) -> list[str]:
    """One line of the section's table per row, then the bucketed / unbucketed ratios and
    where profiled steps' time goes."""
    by_name = {r.name: r for r in rows}
    lines: list[str] = []
    for row in rows:
        ratio = _ratio(row, by_name.get(row.reference or ""))
        lm = (row.reference or "").startswith("lm-residual")  # a decoder-only recipe's row
        transformer, residual = ("", ratio) if lm else (ratio, "")
        eager = _ratio(row, by_name.get(row.eager or ""))
        per_token = None if row.flops is None else row.flops / row.tokens / 1e9
        memory = None if row.memory is None else row.memory / MIB
        lines.append(
            f"| {row.name} | {row.parameters:,} | {row.tokens_per_s:,.0f} | {transformer} | "
            f"{residual} | {eager} | "
            f"{_cell(per_token, '{:.3g}')} | {_cell(row.tflops, '{:.3g}')} | "
            f"{_cell(row.mfu(peak), '{:.1%}')} | {_cell(memory, '{:,.0f}')} |"
        )
    paired = [(row, by_name[row.unbucketed]) for row in rows if row.unbucketed in by_name]
    if paired:
        lines += [
            "",
            "Bucketed / unbucketed target tokens/s, each model beside its copy on unbucketed "
            "batches of the same epoch: "
            + ", ".join(f"{row.name} {_ratio(row, other)}" for row, other in paired)
            + ".",
        ]
    profiled = [row for row in rows if row.hotspots]
    if profiled:
        where = "kernels by device time" if target.type == "cuda" else "operators by CPU time"
        lines += [
            "",
            f"Where one more step's time goes (`--profile {profile}`: a Chrome "
            f"trace and the operator table per model; the largest {where}):",
            "",
            *(f"- {row.name}: {describe(list(row.hotspots))}" for row in profiled),
        ]
    return lines


def run_from_args(args: argparse.Namespace, given: str = "") -> int:
    """`bench train`: the options, the command line shown in its section, the run.

    **Arguments:**

    - `args`: the parsed `butcherflow bench train` arguments.
    - `given`: options the caller already applied, as they appear on the command line
      (`" --threads N"`), appended to the command shown.

    **Returns:** the exit code, 0.
    """
    options: dict[str, Any] = {
        "data": args.data or TRAIN_DATA[TRANSLATION.name],
        "vocab_size": args.vocab_size,
        "max_tokens": args.max_tokens,
        "updates": args.updates,
        "device": args.device,
        "precision": args.precision,
        "buckets": args.buckets,
    }
    command = "butcherflow bench train " + option_flags(options)
    command += " --compile" * args.compile + " --compare-eager" * args.compare_eager
    command += " --compare-buckets" * args.compare_buckets + given
    command += recipes_and_sizes(args, options)
    if args.compare_eager and not args.compile:
        raise DeclarationError(
            "--compare-eager compares compiled models with eager copies",
            key="--compare-eager",
            value=True,
            valid="add --compile",
        )
    if args.profile is not None:
        options["profile"] = args.profile
        command += f" --profile {args.profile}"
    command += output_flag(args.output)
    options.setdefault("recipes", RECIPES)
    run_train_bench(
        args.output,
        command,
        compile=args.compile,
        compare_eager=args.compare_eager,
        compare_buckets=args.compare_buckets,
        **options,
    )
    return 0
