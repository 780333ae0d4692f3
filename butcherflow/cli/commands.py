"""The subcommands that need torch (show, evaluate, translate, generate, train, average, export,
bench, gallery, experiment): their parsers, imported by `butcherflow.cli` only when one runs."""

from __future__ import annotations

import argparse

from ..bench import BENCHMARKS, DEFAULT_OUTPUT, TRAIN_DATA
from ..data import BREAK_MODES
from ..experiments import EXPERIMENTS
from ..experiments.report import DEFAULT_OUT
from ..generate.evaluate import SUBSETS
from ..tasks import TASKS, TOKENS_PER_SAMPLE
from ..train.config import TRAIN_DEFAULTS
from . import export, extract
from .declarations import cmd_show
from .docs import cmd_bench, cmd_gallery
from .parser import at_least, said
from .pipeline import (
    THREADS_HELP,
    cmd_average,
    cmd_evaluate,
    cmd_experiment,
    cmd_generate,
    cmd_train,
    cmd_translate,
    generate_flags,
    generation_flags,
    train_flags,
)


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Every subcommand but `check`, `list` and `design`, in the order of the help."""
    _show(sub)
    extract.add_commands(sub)
    _evaluate(sub)
    _translate_generate_train(sub)
    _average(sub)
    export.add_commands(sub)
    _bench(sub)
    _gallery(sub)
    _experiment(sub)


def _show(sub: argparse._SubParsersAction) -> None:
    """`show`: a catalog method, recipe or save dir explained."""
    p = sub.add_parser("show", help="a method's compiled block, or a model recipe, explained")
    p.add_argument(
        "name",
        help="a catalog method, a model recipe, a .toml file, or a save dir (learned V per layer)",
    )
    p.add_argument("--field", help="field name (splittings: A=ffn,B=san)")
    p.add_argument("--d-model", type=int, default=512, help="methods: the block's width")
    p.add_argument("--n-heads", type=int, default=8, help="methods: attention heads")
    p.add_argument("--d-ffn", type=int, default=2048, help="methods: the feed-forward width")
    p.add_argument("--layers", type=int, default=6, help="multistep stacks: number of layers")
    p.add_argument("--vocab", type=int, default=32000, help="recipes: vocabulary size")
    p.set_defaults(run=cmd_show)


def _evaluate(sub: argparse._SubParsersAction) -> None:
    """`evaluate`: scores of a valid/test split (BLEU and chrF, or perplexity)."""
    p = sub.add_parser(
        "evaluate",
        help="translate a valid/test split: sacreBLEU and chrF (a language model: perplexity "
        "and bits per byte)",
    )
    generation_flags(p, evaluate=True)
    p.add_argument("--subset", choices=SUBSETS, default="test")
    p.add_argument(
        "--print-samples",
        type=at_least(0),
        default=argparse.SUPPRESS,
        metavar="K",
        help=said("translation: show the first K sentences with references and translations", 0),
    )
    p.add_argument(
        "--tokens-per-sample",
        type=int,
        default=argparse.SUPPRESS,
        metavar="N",
        help="language model: context windows of N tokens (default: the run's)",
    )
    p.add_argument(
        "--sample-break-mode",
        choices=BREAK_MODES,
        default=argparse.SUPPRESS,
        help="language model: none (windows across lines) or eos (no window crosses a line's "
        "end; default: the run's)",
    )
    p.set_defaults(run=cmd_evaluate)


def _translate_generate_train(sub: argparse._SubParsersAction) -> None:
    """`translate`, `generate` and `train`, whose flags `cli.pipeline` declares."""
    p = sub.add_parser("translate", help="translate stdin (one sentence a line) to stdout")
    generation_flags(p)
    p.set_defaults(run=cmd_translate)

    p = sub.add_parser(
        "generate",
        help="continue prompts (stdin or --prompt) with a language model: greedy or sampled",
    )
    generate_flags(p)
    p.set_defaults(run=cmd_generate)

    p = sub.add_parser(
        "train", help="train a recipe on a parallel corpus or on text (resumes by itself)"
    )
    train_flags(p)
    p.set_defaults(run=cmd_train)


def _average(sub: argparse._SubParsersAction) -> None:
    """`average`: the mean of a run's last interval checkpoints."""
    p = sub.add_parser("average", help="average the last N interval checkpoints of a run")
    p.add_argument("save_dir", help="the --save-dir of a `butcherflow train` run")
    p.add_argument("--last", type=int, required=True, help="how many checkpoint_<update> files")
    p.add_argument("-o", "--output", required=True, help="the averaged .safetensors file")
    p.set_defaults(run=cmd_average)


def _gallery(sub: argparse._SubParsersAction) -> None:
    """`gallery`: the docs gallery, a page per catalog entry."""
    p = sub.add_parser("gallery", help="write the docs gallery: a page per catalog entry")
    p.add_argument(
        "--out", default="docs/gallery", help="the gallery folder, replaced (its parent must exist)"
    )
    p.add_argument(
        "--only",
        nargs="+",
        metavar="NAME",
        help="only these catalog entries, declaration files (PATH.toml) and model recipes, "
        "and the index (no reference-code page)",
    )
    p.add_argument("--benchmarks", default=DEFAULT_OUTPUT, help="measured results (read)")
    p.add_argument("--jobs", type=int, default=1, help="worker processes for the pages")
    p.set_defaults(run=cmd_gallery)


def _bench(sub: argparse._SubParsersAction) -> None:
    """`bench`: the flags every benchmark shares, then those of bench train and beam (their
    order is the usage line's)."""
    p = sub.add_parser("bench", help=f"run a benchmark and write its section of {DEFAULT_OUTPUT}")
    p.add_argument(
        "what",
        nargs="?",
        choices=tuple(BENCHMARKS),
        help="; ".join(f"{name}: {text}" for name, text in BENCHMARKS.items())
        + " (left out: the list)",
    )
    p.add_argument(
        "--output", default=DEFAULT_OUTPUT, help="markdown file to update, in an existing folder"
    )
    p.add_argument("--repeats", type=int, default=3, help="timings are the median of repeats")
    p.add_argument("--no-nodepy", action="store_true", help="skip the NodePy comparison")
    p.add_argument(
        "--device", default="auto", help="train, beam and streams: auto, cpu, cuda or cuda:N"
    )
    p.add_argument("--threads", type=int, default=None, help=THREADS_HELP)
    train = p.add_argument_group("bench train (training tokens/s beside torch.nn.Transformer)")
    _bench_train_batch_flags(train)
    p.add_argument(
        "--length",
        type=int,
        default=None,
        help="bench beam: the forced output length in tokens (default 50, where its target is "
        "set; fewer: a shorter check, such as the CPU rehearsal of docs/gpu/run.sh quick)",
    )
    _bench_train_task_flags(train)
    p.set_defaults(run=cmd_bench)


def _bench_train_batch_flags(train: argparse._ArgumentGroup) -> None:
    """`bench train`: the corpus, its batches, precision, compilation and the recipes."""
    train.add_argument(
        "--data",
        default=None,
        help="the corpus whose batches are timed (default: "
        + ", ".join(f"{data} for {task}" for task, data in TRAIN_DATA.items())
        + ")",
    )
    train.add_argument(
        "--vocab-size", type=int, default=TRAIN_DEFAULTS["vocab_size"], help="BPE vocabulary size"
    )
    train.add_argument(
        "--max-tokens",
        type=int,
        default=TRAIN_DEFAULTS["max_tokens"],
        help="padded positions per batch",
    )
    train.add_argument("--updates", type=int, default=20, help="timed updates per model")
    train.add_argument(
        "--precision", default=TRAIN_DEFAULTS["precision"], help="auto, fp32, bf16 or fp16"
    )
    train.add_argument(
        "--compile", action="store_true", help="torch.compile every model, block by block"
    )
    train.add_argument(
        "--compare-eager", action="store_true", help="with --compile: eager copies side by side"
    )
    train.add_argument(
        "--buckets",
        default=TRAIN_DEFAULTS["buckets"],
        help="length buckets of the batches, as for train: auto (1.25 on GPU, off on CPU; off "
        "for --task language_model), off, a ratio such as 1.25, or widths such as 16,32,64",
    )
    train.add_argument(
        "--compare-buckets",
        action="store_true",
        help="copies of every model on unbucketed batches, side by side",
    )
    train.add_argument(
        "--recipes", nargs="+", default=None, metavar="RECIPE", help="recipes to time"
    )
    train.add_argument(
        "--sizes",
        default=None,
        help="an experiment preset's sizes: small, base or tiny (also for bench beam)",
    )


def _bench_train_task_flags(train: argparse._ArgumentGroup) -> None:
    """`bench train`: the task, its window length and the profiler's folder."""
    train.add_argument(
        "--task",
        choices=tuple(TASKS),
        default=TASKS["translation"].name,
        help="language_model: decoder-only recipes beside a nanoGPT-style GPT on packed windows",
    )
    train.add_argument(
        "--tokens-per-sample",
        type=int,
        default=TOKENS_PER_SAMPLE,
        help="--task language_model: the window length",
    )
    train.add_argument(
        "--profile",
        default=None,
        metavar="DIR",
        help="profile one more step of every model: Chrome traces and operator tables in DIR, "
        "the largest operators in the section",
    )


def _experiment(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "experiment",
        help="run one of the papers' experiments (resumable) and write its table and plot",
    )
    p.add_argument(
        "name",
        help=", ".join(EXPERIMENTS) + " (all: every one, with --report-only)",
    )
    p.add_argument(
        "--budget", type=int, default=None, help="updates of every run (default: each run's own)"
    )
    p.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    p.add_argument(
        "--sizes",
        default="small",
        help="small (the CPU scale), base (transformer-base, GPU) or tiny",
    )
    p.add_argument(
        "--out",
        default=DEFAULT_OUT,
        help="where NAME.json, NAME.md, NAME.png and index.md go (its parent must exist)",
    )
    p.add_argument("--runs-dir", default="runs/experiments", help="a save dir per run and seed")
    p.add_argument("--seeds", type=int, nargs="+", default=None, help="replace every run's seeds")
    p.add_argument("--data", default=None, help="replace the experiment's corpus (e.g. a test one)")
    p.add_argument("--threads", type=int, default=None, help=THREADS_HELP)
    p.add_argument(
        "--report-only",
        action="store_true",
        help="rebuild NAME.md, NAME.png and index.md from OUT/NAME.json; train nothing",
    )
    p.add_argument(
        "--readme",
        default=None,
        metavar="FILE",
        help="also rewrite the experiments' summary between the markers of FILE (README.md)",
    )
    p.set_defaults(run=cmd_experiment)
