"""The `butcherflow` command line.

Every subcommand turns a user's mistake (a bad declaration, an unknown name, a claim that fails)
into a one-line message and exit code 1; tracebacks are for bugs only.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from .analysis import Report, check
from .errors import ButcherflowError
from .methods import catalog

Command = Callable[[argparse.Namespace], int]


def _render(report: Report, fmt: str) -> str:
    if fmt == "json":
        return report.to_json()
    if fmt == "markdown":
        return report.to_markdown()
    return str(report)


def order_table(reports: Sequence[Report]) -> str:
    """One line per method: family, claimed and proved orders, verdict, time."""
    header = f"{'method':<24} {'family':<12} {'claimed':>7} {'proved':>6} {'effective':>9}  verdict"
    lines = [header, "-" * len(header)]
    for r in reports:
        effective = getattr(r, "effective_order", None)
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
    if args.all:
        reports, broken = [], []
        for name in catalog:
            try:
                reports.append(check(name))
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
    report = check(args.method, max_order=args.max_order)
    print(_render(report, args.format))
    if not report.claim_holds:
        print(f"error: {report.mismatch_message()}", file=sys.stderr)
        return 1
    return 0


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
    return 1 if broken else 0


DEFAULT_FIELDS = {"A": "ffn", "B": "san", "C": "ca"}


def cmd_show(args: argparse.Namespace) -> int:
    """A catalog method compiled at the given sizes, and/or a model recipe, explained.

    Some names are both (the `leapfrog` integrator and the `leapfrog` architecture): both are
    shown, the method first.
    """
    from .assemble import recipe_names

    is_recipe = args.name in recipe_names() or "models/" in args.name
    is_method = args.name in catalog or (args.name.endswith(".toml") and not is_recipe)
    if not (is_recipe or is_method):
        catalog.resolve(args.name)  # raises the unknown-name error with suggestions
    if is_method:
        _show_method(args)
    if is_recipe:
        if is_method:
            print("\n" + "=" * 72 + "\n")
        _show_recipe(args)
    return 0


def _show_method(args: argparse.Namespace) -> None:
    from .compiler import CompiledBlock, compile, compile_stack
    from .methods import ContinuousDynamics, LinearMultistep, Splitting

    method = catalog.resolve(args.name)
    sizes = {"d_model": args.d_model, "n_heads": args.n_heads, "d_ffn": args.d_ffn}
    if isinstance(method, ContinuousDynamics) and method.grid == "positions":
        from .assemble import load_recipe, recipe_names
        from .assemble.floater import describe_dynamics

        d_model, hidden = args.d_model, None
        if args.name in recipe_names():  # also a recipe: explain the encoder at its sizes
            recipe = load_recipe(args.name)
            if recipe.position == "floater":
                d_model, hidden = int(recipe.sizes["d_model"]), recipe.floater_hidden
        print(describe_dynamics(method, d_model, hidden))
        print(
            "  (a position encoder, not a block: recipes use it with [embedding] "
            f"position = 'floater', floater = '{method.name}')\n"
        )
        print(check(method))
        return
    block: CompiledBlock | None
    if isinstance(method, ContinuousDynamics):
        shown = args.field or "san+ffn"
        block = compile(method, field=shown, **sizes)
    elif isinstance(method, Splitting):
        fields = {op: DEFAULT_FIELDS.get(op, "ffn") for op in method.operators}
        if args.field:
            fields = dict(part.split("=", 1) for part in args.field.split(","))
        shown = ", ".join(f"{k}={v}" for k, v in fields.items())
        block = compile(method, fields=fields, **sizes) if method.substep else None
    elif isinstance(method, LinearMultistep):
        shown = f"{args.field or 'san+ffn'} x {args.layers} layers"
        block = (
            compile_stack(method, [args.field or "san+ffn"] * args.layers, **sizes)
            if method.is_explicit and not method.symbols
            else None
        )
    else:
        shown = args.field or "san+ffn"
        runnable = not getattr(method, "symbols", set())
        block = compile(method, field=shown, **sizes) if runnable else None
    print(f"{method.name}: {method.title}")
    if block is None:
        print(
            "(not compiled: exact sub-flows, implicit multistep methods and families with free "
            "symbols have no layer; see the report)"
        )
    else:
        print(
            f"compiled with {shown} at d_model={args.d_model}, n_heads={args.n_heads}, "
            f"d_ffn={args.d_ffn}"
        )
        flops = block.flops_per_token(64)
        print(
            f"parameters: {block.num_parameters:,}   field calls: "
            f"{'chosen at run time' if block.field_calls is None else block.field_calls}   "
            f"FLOPs/token (length 64): {'data-dependent' if flops is None else f'{flops:,}'}"
        )
        print(block.code)
    print(check(method))


def _show_recipe(args: argparse.Namespace) -> None:
    import torch

    from .assemble import Seq2Seq, load_recipe

    recipe = load_recipe(args.name)
    with torch.device("meta"):
        model = Seq2Seq.from_recipe(recipe, args.vocab)
    print(f"{recipe.name}: {recipe.title} ({recipe.reference})")
    print(model.recipe.description)
    for where, side in (("encoder", recipe.encoder), ("decoder", recipe.decoder)):
        if side is not None:
            what = side.field or dict(side.fields or {})
            print(f"{where}: {side.layers} x {side.method} with {what} {dict(side.options)}")
    print(f"parameters: {model.num_parameters:,} (vocabulary {args.vocab:,})")
    if model.floater is not None:
        print(model.floater.describe())
    first = model.encoder[0]
    print(f"\nfirst encoder block ({type(first).__name__}):{first.code}")


def cmd_evaluate(args: argparse.Namespace) -> int:
    from .generate import evaluate

    result = evaluate(
        args.save_dir,
        args.subset,
        beam=args.beam,
        lenpen=args.lenpen,
        checkpoint=args.checkpoint,
        max_len_a=args.max_len_a,
        max_len_b=args.max_len_b,
        max_tokens=args.max_tokens,
        device=args.device,
        progress=sys.stderr.isatty(),
    )
    print(
        f"{args.save_dir}: checkpoint {args.checkpoint}, {args.subset} "
        f"({result.scores.n} sentences), beam {args.beam}, lenpen {args.lenpen}"
    )
    samples = zip(result.sources, result.references, result.hypotheses, strict=True)
    for i, (source, reference, hypothesis) in enumerate(samples):
        if i >= args.print_samples:
            break
        print(f"S-{i}\t{source}\nT-{i}\t{reference}\nH-{i}\t{hypothesis}")
    print(result.scores)
    return 0


def cmd_translate(args: argparse.Namespace) -> int:
    from .generate import translate
    from .generate.evaluate import resolve_device
    from .train.checkpoint import load_model

    device = resolve_device(args.device)
    model, vocab, _ = load_model(args.save_dir, args.checkpoint, device=device)
    lines = [line.rstrip("\r\n") for line in sys.stdin]
    outputs = translate(
        model,
        vocab,
        lines,
        beam=args.beam,
        lenpen=args.lenpen,
        max_len_a=args.max_len_a,
        max_len_b=args.max_len_b,
        max_tokens=args.max_tokens,
        device=device,
    )
    for output in outputs:
        print(output)
    return 0


def _generation_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("save_dir", help="the --save-dir of a `butcherflow train` run")
    p.add_argument("--checkpoint", default="best", help="best, last, avg:N or a weights file")
    p.add_argument("--beam", type=int, default=5, help="beam size (1: greedy)")
    p.add_argument("--lenpen", type=float, default=1.0, help="score = logprob / length^lenpen")
    p.add_argument("--max-len-a", type=float, default=0.0, help="max length = a * src_len + b")
    p.add_argument("--max-len-b", type=int, default=200, help="max length = a * src_len + b")
    p.add_argument("--max-tokens", type=int, default=4096, help="source tokens per batch")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")


def cmd_train(args: argparse.Namespace) -> int:
    import os
    from dataclasses import fields

    from .train.config import TrainConfig
    from .train.loop import train

    names = {f.name for f in fields(TrainConfig)}
    config = TrainConfig(**{k: v for k, v in vars(args).items() if k in names})
    summary = train(config, validate_bleu=_bleu_hook(args.validate_bleu))
    if os.environ.get("RANK", "0") != "0":  # under torchrun, one process reports
        return 0
    print(
        f"{summary['updates']} updates ({summary['train_tokens']:,} target tokens) in "
        f"{summary['seconds']:.0f} s; best valid loss {summary['best_valid_loss']:.3f} bits\n"
        f"next: butcherflow evaluate {config.save_dir} --subset test"
    )
    return 0


def _bleu_hook(sentences: int) -> Callable[..., float] | None:
    """Validation BLEU on the first `sentences` valid pairs (greedy), given to the train loop,
    which may not import the generate stage itself."""
    if sentences <= 0:
        return None
    from .generate.evaluate import validation_bleu

    def hook(model: Any, vocab: Any, pairs: Sequence[tuple[str, str]], device: Any) -> float:
        return validation_bleu(model, vocab, pairs[:sentences], device)

    return hook


def cmd_average(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .train.checkpoint import average_checkpoints, checkpoint_paths, read_config, save_weights

    read_config(args.save_dir)  # a clear error when this is not a save dir
    paths = checkpoint_paths(Path(args.save_dir), f"avg:{args.last}")
    averaged = ", ".join(p.stem for p in paths)
    save_weights(average_checkpoints(paths), Path(args.output), {"averaged": averaged})
    print(f"averaged {len(paths)} checkpoints ({averaged}) into {args.output}")
    return 0


def _train_flags(p: argparse.ArgumentParser) -> None:
    """`butcherflow train` flags: fairseq's names; defaults are TrainConfig's (SUPPRESS keeps an
    omitted flag out of the namespace, so the dataclass default applies)."""
    p.add_argument("recipe", help="a recipe name (models/*.toml) or a recipe .toml file")
    p.add_argument("--data", required=True, help="bible:SRC-TGT, DIR[:SRC-TGT] or explicit files")
    p.add_argument("--save-dir", required=True, help="checkpoints, log, curves; rerun to resume")
    flags: list[tuple[str, type, str]] = [
        ("--source-lang", str, "source suffix of a raw-text folder (with --target-lang)"),
        ("--target-lang", str, "target suffix of a raw-text folder"),
        ("--max-tokens", int, "padded positions per batch and process (default 4096)"),
        ("--update-freq", int, "micro-batches accumulated per update (default 1)"),
        ("--lr", float, "peak learning rate (default 5e-4)"),
        ("--warmup-updates", int, "linear warmup, then inverse sqrt (default 4000)"),
        ("--warmup-init-lr", float, "learning rate of the first update (default 1e-7)"),
        ("--label-smoothing", float, "fairseq's label smoothing (default 0.1)"),
        ("--dropout", float, "dropout (default: the recipe's)"),
        ("--clip-norm", float, "clip the gradient norm (default 0: off)"),
        ("--weight-decay", float, "decoupled weight decay (default 0)"),
        ("--max-update", int, "stop after this many updates (default 0: no limit)"),
        ("--max-epoch", int, "stop after this many epochs (default 0: no limit)"),
        ("--time-budget", float, "stop with a checkpoint after this many seconds of this command"),
        ("--seed", int, "initialisation, dropout and shuffling (default 1)"),
        ("--save-interval-updates", int, "also save checkpoint_<update> every N updates"),
        ("--keep-last-checkpoints", int, "keep the newest N interval checkpoints (default all)"),
        ("--validate-interval-updates", int, "validate every N updates (default: epoch ends)"),
        ("--log-interval", int, "updates per line of log.jsonl (default 100)"),
        ("--vocab-size", int, "joint sentencepiece BPE vocabulary size (default 8000)"),
        ("--device", str, "auto (default), cpu, cuda or cuda:N"),
        ("--precision", str, "auto (default: bf16/fp16 on GPU, fp32 on CPU), fp32, bf16, fp16"),
        ("--d-model", int, "override the recipe's d_model"),
        ("--n-heads", int, "override the recipe's n_heads"),
        ("--d-ffn", int, "override the recipe's d_ffn"),
        ("--encoder-layers", int, "override the recipe's encoder layers"),
        ("--decoder-layers", int, "override the recipe's decoder layers"),
        ("--task", str, "translation (default) or language_model (decoder-only, target side)"),
    ]
    for name, kind, text in flags:
        p.add_argument(name, type=kind, default=argparse.SUPPRESS, help=text)
    p.add_argument(
        "--compile", action="store_true", default=argparse.SUPPRESS, help="torch.compile"
    )
    p.add_argument(
        "--validate-bleu",
        type=int,
        default=0,
        metavar="N",
        help="also measure greedy BLEU on the first N valid pairs at each validation (0: off)",
    )


def cmd_bench(args: argparse.Namespace) -> int:
    from .bench import run_benchmark

    return run_benchmark(args)


def cmd_experiment(args: argparse.Namespace) -> int:
    from .experiments import run_experiment

    outcome = run_experiment(
        args.name,
        budget=args.budget,
        device=args.device,
        sizes=args.sizes,
        out=args.out,
        runs_dir=args.runs_dir,
        seeds=args.seeds,
        data=args.data,
    )
    print(
        f"{args.name}: {len(outcome.trained)} run(s) trained, {len(outcome.skipped)} already "
        f"done; report {outcome.report}, index {outcome.index}"
    )
    return 0


def cmd_gallery(args: argparse.Namespace) -> int:
    from .gallery import build_gallery

    result = build_gallery(
        args.out,
        names=args.only or None,
        recipes=[] if args.only else None,
        benchmarks=args.benchmarks,
        jobs=args.jobs,
    )
    solvers = sum(1 for r in result.rows if r.kind == "solver")
    print(
        f"wrote {args.out}: {solvers} solver page(s), {len(result.rows) - solvers} model "
        f"page(s) and the index in {result.seconds:.1f} s"
    )
    for name, problem in result.problems:
        print(f"note: {name}: {problem}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="butcherflow",
        description="Declare integrators, prove their order, compile them into layers.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("check", help="prove the order of a declaration and print its report")
    p.add_argument("method", nargs="?", help="a catalog name (see `list`) or a .toml file")
    p.add_argument("--all", action="store_true", help="check the whole catalog (a table)")
    p.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    p.add_argument("--max-order", type=int, default=None, help="stop the order search here")
    p.set_defaults(run=cmd_check)

    p = sub.add_parser("list", help="list the catalog")
    p.add_argument("--family", choices=("runge-kutta", "splitting", "multistep", "continuous"))
    p.set_defaults(run=cmd_list)

    p = sub.add_parser("show", help="a method's compiled block, or a model recipe, explained")
    p.add_argument("name", help="a catalog method, a model recipe, or a .toml file")
    p.add_argument("--field", help="field name (splittings: A=ffn,B=san)")
    p.add_argument("--d-model", type=int, default=512)
    p.add_argument("--n-heads", type=int, default=8)
    p.add_argument("--d-ffn", type=int, default=2048)
    p.add_argument("--layers", type=int, default=6, help="multistep stacks: number of layers")
    p.add_argument("--vocab", type=int, default=32000, help="recipes: vocabulary size")
    p.set_defaults(run=cmd_show)

    p = sub.add_parser("evaluate", help="translate a valid/test split; sacreBLEU and chrF")
    _generation_flags(p)
    p.add_argument("--subset", choices=("valid", "test"), default="test")
    p.add_argument("--print-samples", type=int, default=0, metavar="K", help="show K sentences")
    p.set_defaults(run=cmd_evaluate)

    p = sub.add_parser("translate", help="translate stdin (one sentence a line) to stdout")
    _generation_flags(p)
    p.set_defaults(run=cmd_translate)

    p = sub.add_parser("train", help="train a recipe on a parallel corpus (resumes by itself)")
    _train_flags(p)
    p.set_defaults(run=cmd_train)

    p = sub.add_parser("average", help="average the last N interval checkpoints of a run")
    p.add_argument("save_dir", help="the --save-dir of a `butcherflow train` run")
    p.add_argument("--last", type=int, required=True, help="how many checkpoint_<update> files")
    p.add_argument("-o", "--output", required=True, help="the averaged .safetensors file")
    p.set_defaults(run=cmd_average)

    p = sub.add_parser("bench", help="run a benchmark and write docs/benchmarks.md")
    p.add_argument(
        "what",
        choices=("order", "block", "beam", "floater", "train"),
        help="order: prove the whole catalog, timed, beside NodePy; block: compiled blocks vs "
        "hand-written loops and transformer-small vs torch.nn.Transformer; beam: beam search "
        "with incremental caches vs recomputing every prefix; floater: a training step with "
        "FLOATER positions vs sinusoidal positions; train: training tokens/s of transformer-small "
        "and ode-transformer-rk2-gated beside torch.nn.Transformer",
    )
    p.add_argument("--output", default="docs/benchmarks.md", help="markdown file to update")
    p.add_argument("--repeats", type=int, default=3, help="timings are the median of repeats")
    p.add_argument("--no-nodepy", action="store_true", help="skip the NodePy comparison")
    train = p.add_argument_group("bench train (training tokens/s beside torch.nn.Transformer)")
    train.add_argument("--data", default="bible:de-en", help="the corpus whose batches are timed")
    train.add_argument("--vocab-size", type=int, default=8000, help="BPE vocabulary size")
    train.add_argument("--max-tokens", type=int, default=4096, help="padded positions per batch")
    train.add_argument("--updates", type=int, default=20, help="timed updates per model")
    train.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    train.add_argument("--precision", default="auto", help="auto, fp32, bf16 or fp16")
    train.add_argument("--compile", action="store_true", help="torch.compile every model")
    p.set_defaults(run=cmd_bench)

    p = sub.add_parser("gallery", help="write the docs gallery: a page per catalog entry")
    p.add_argument("--out", default="docs/gallery", help="the gallery folder (replaced)")
    p.add_argument("--only", nargs="+", metavar="NAME", help="only these catalog entries")
    p.add_argument("--benchmarks", default="docs/benchmarks.md", help="measured results")
    p.add_argument("--jobs", type=int, default=1, help="worker processes for the pages")
    p.set_defaults(run=cmd_gallery)

    p = sub.add_parser(
        "experiment",
        help="run one of the papers' experiments (resumable) and write its table and plot",
    )
    p.add_argument("name", help="truncation, translation, coefficients, extrapolation or depth")
    p.add_argument("--budget", type=int, default=None, help="updates per run (default: its own)")
    p.add_argument("--device", default="auto", help="auto (default), cpu, cuda or cuda:N")
    p.add_argument(
        "--sizes", default="small", help="small (CPU, default), base (transformer-base, GPU), tiny"
    )
    p.add_argument("--out", default="docs/experiments", help="NAME.md, NAME.png, index.md")
    p.add_argument("--runs-dir", default="runs/experiments", help="a save dir per run and seed")
    p.add_argument("--seeds", type=int, nargs="+", default=None, help="replace every run's seeds")
    p.add_argument("--data", default=None, help="replace the experiment's corpus (e.g. a test one)")
    p.set_defaults(run=cmd_experiment)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.run(args)
    except ButcherflowError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `butcherflow show rk4 | head`: the reader left, nothing to say
        sys.stderr.close()
        return 0
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
