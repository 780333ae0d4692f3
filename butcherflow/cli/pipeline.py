"""`butcherflow train`, `evaluate`, `translate`, `generate`, `average` and `experiment`, and their
flags."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from ..data import Vocabulary
from ..devices import resolve_device, set_threads
from ..errors import DeclarationError
from ..experiments import EXPERIMENTS, run_experiment, write_reports
from ..experiments.index import write_readme_summary
from ..generate import Sampling, complete, evaluate, evaluate_perplexity, translate
from ..generate.decoding import BEAM, LENPEN, MAX_LEN_A, MAX_LEN_B
from ..generate.evaluate import MAX_TOKENS, validation_bleu
from ..generate.sample import MAX_NEW_TOKENS
from ..savedir import (
    CheckpointError,
    average_checkpoints,
    checkpoint_paths,
    checkpoint_update,
    load_language_model,
    load_model,
    read_config,
    record_evaluation,
    run_task,
    save_weights,
)
from ..tasks import LANGUAGE_MODEL, TASKS, TOKENS_PER_SAMPLE, TRANSLATION
from ..train import Interrupted, TrainConfig, train
from ..train.config import TRAIN_DEFAULTS, flag
from ..train.interrupts import exit_code
from ..train.loop import best_name
from .parser import at_least, check_parent, said

THREADS_HELP = (
    "torch's CPU threads (default: torch's, OMP_NUM_THREADS or the physical cores; "
    "1 is often fastest on a busy machine)"
)


def cmd_evaluate(args: argparse.Namespace) -> int:
    set_threads(args.threads)
    task = run_task(args.save_dir)
    others = [d for t in TASKS.values() if t is not task for d in t.evaluate_flags]
    given = [d for d in others if hasattr(args, d)]  # task flags default to SUPPRESS
    if given:
        flags = " ".join(flag(d) for d in given)
        raise DeclarationError(
            f"{args.save_dir} holds a {task.title}: {flags} "
            f"{'does' if len(given) == 1 else 'do'} not apply to it",
            key=flag(given[0]),
            value=getattr(args, given[0]),
            valid=f"leave {'it' if len(given) == 1 else 'them'} out; a "
            + task.title
            + " takes "
            + (" ".join(flag(d) for d in task.evaluate_flags) or "no flag of its own"),
        )
    return _EVALUATE[task.name](args)


def _evaluate_translation(args: argparse.Namespace) -> int:
    """`evaluate` of a translation run: sacreBLEU and chrF of its translations."""
    beam, lenpen = getattr(args, "beam", BEAM), getattr(args, "lenpen", LENPEN)
    max_len_a = getattr(args, "max_len_a", MAX_LEN_A)
    max_len_b = getattr(args, "max_len_b", MAX_LEN_B)
    result = evaluate(
        args.save_dir,
        args.subset,
        beam=beam,
        lenpen=lenpen,
        checkpoint=args.checkpoint,
        max_len_a=max_len_a,
        max_len_b=max_len_b,
        max_tokens=args.max_tokens,
        device=args.device,
        progress=sys.stderr.isatty(),
    )
    scores = result.scores
    log = record_evaluation(
        Path(args.save_dir),
        checkpoint_update(Path(args.save_dir), args.checkpoint),
        {
            "subset": args.subset,
            "checkpoint": args.checkpoint,
            "beam": beam,
            "lenpen": lenpen,
            "max_len_a": max_len_a,
            "max_len_b": max_len_b,
            "sentences": scores.n,
            "bleu": scores.bleu,
            "chrf": scores.chrf,
            "bleu_signature": scores.bleu_signature,
            "chrf_signature": scores.chrf_signature,
        },
    )
    print(
        f"{args.save_dir}: checkpoint {args.checkpoint}, {args.subset} "
        f"({scores.n} sentences), beam {beam}, lenpen {lenpen}; recorded in {log}"
    )
    samples = zip(result.sources, result.references, result.hypotheses, strict=True)
    for i, (source, reference, hypothesis) in enumerate(samples):
        if i >= getattr(args, "print_samples", 0):
            break
        print(f"S-{i}\t{source}\nT-{i}\t{reference}\nH-{i}\t{hypothesis}")
    print(scores)
    return 0


def _evaluate_language_model(args: argparse.Namespace) -> int:
    """`evaluate` of a language model run: perplexity per token and bits per byte."""
    result = evaluate_perplexity(
        args.save_dir,
        args.subset,
        checkpoint=args.checkpoint,
        max_tokens=args.max_tokens,
        tokens_per_sample=getattr(args, "tokens_per_sample", None),
        sample_break_mode=getattr(args, "sample_break_mode", None),
        device=args.device,
    )
    log = record_evaluation(
        Path(args.save_dir),
        checkpoint_update(Path(args.save_dir), args.checkpoint),
        {
            "subset": args.subset,
            "checkpoint": args.checkpoint,
            "sentences": result.sentences,
            "windows": result.windows,
            "ppl": result.ppl,
            "nll_bits": result.nll_bits,
            "bpb": result.bpb,
            "text_bytes": result.text_bytes,
        },
    )
    print(
        f"{args.save_dir}: checkpoint {args.checkpoint}, {args.subset} "
        f"({result.sentences} sentences as {result.windows}), language model; recorded in {log}"
    )
    print(result)
    return 0


_EVALUATE: dict[str, Callable[[argparse.Namespace], int]] = {
    TRANSLATION.name: _evaluate_translation,
    LANGUAGE_MODEL.name: _evaluate_language_model,
}


def _require(save_dir: str, command: str) -> None:
    """Refuse a save dir whose model `command` does not run (`Task.command` names the one
    that does)."""
    task = run_task(save_dir)
    if task.command != command:
        raise CheckpointError(
            f"{save_dir} holds a {task.title}, which `butcherflow {command}` does not run: "
            f"`butcherflow {task.command} {save_dir}` does"
        )


def cmd_translate(args: argparse.Namespace) -> int:
    set_threads(args.threads)
    _require(args.save_dir, "translate")
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
    note = unknown_note(vocab, lines)
    if note:
        print(note, file=sys.stderr)
    return 0


def cmd_generate(args: argparse.Namespace) -> int:
    set_threads(args.threads)
    _require(args.save_dir, "generate")
    sampling = Sampling(
        temperature=args.temperature,
        top_k=args.top_k,
        top_p=args.top_p,
        seed=args.seed,
        max_new_tokens=args.max_new_tokens,
    )
    device = resolve_device(args.device)
    model, vocab, _ = load_language_model(args.save_dir, args.checkpoint, device=device)
    prompts = args.prompt if args.prompt else [line.rstrip("\r\n") for line in sys.stdin]
    for text in complete(model, vocab, prompts, sampling, device=device, compile=args.compile):
        print(text)
    return 0


def generate_flags(p: argparse.ArgumentParser) -> None:
    """`butcherflow generate` flags (names as Hugging Face's `generate`)."""
    p.add_argument("save_dir", help="the --save-dir of a language model run")
    p.add_argument("--checkpoint", default="best", help="best, last, avg:N or a weights file")
    p.add_argument(
        "--prompt",
        action="append",
        default=None,
        help="a text to continue (repeatable; default: one prompt per line of stdin; '' "
        "starts a sentence from nothing)",
    )
    p.add_argument(
        "--max-new-tokens", type=int, default=MAX_NEW_TOKENS, help="subwords after each prompt"
    )
    p.add_argument(
        "--temperature", type=float, default=0.0, help="0: greedy; > 0: sample from softmax(z/T)"
    )
    p.add_argument("--top-k", type=int, default=0, help="sample among the K likeliest (0: all)")
    p.add_argument(
        "--top-p", type=float, default=1.0, help="sample within probability mass P (1: all)"
    )
    p.add_argument("--seed", type=int, default=None, help="the sampling seed (default: random)")
    p.add_argument("--compile", action="store_true", help="torch.compile the decoding steps")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    p.add_argument("--threads", type=int, default=None, help=THREADS_HELP)


def unknown_note(vocab: Vocabulary, lines: Sequence[str]) -> str:
    """A note for stderr when the input holds text the vocabulary never saw ("" otherwise):
    the model reads those pieces as unknown, so what it makes of them is a guess."""
    encoded = [vocab.encode(line) for line in lines]
    unknown = [vocab.unknown(ids) for ids in encoded]
    if not any(unknown):
        return ""
    lines_hit = sum(1 for count in unknown if count)
    return (
        f"note: {sum(unknown)} of {sum(map(len, encoded))} input pieces (in {lines_hit} of "
        f"{len(lines)} line(s)) are unknown to this run's vocabulary (characters its training "
        "corpus did not have); their translation is a guess"
    )


def generation_flags(p: argparse.ArgumentParser, *, evaluate: bool = False) -> None:
    """The flags of `translate`, and of `evaluate` (`evaluate`: the search flags are absent
    unless given, so that `evaluate` refuses them on a language model's run)."""
    search = argparse.SUPPRESS if evaluate else None
    p.add_argument("save_dir", help="the --save-dir of a `butcherflow train` run")
    p.add_argument("--checkpoint", default="best", help="best, last, avg:N or a weights file")
    for option_string, kind, value, text in (
        ("--beam", int, BEAM, "beam size (1: greedy)"),
        ("--lenpen", float, LENPEN, "score = logprob / length^lenpen"),
        ("--max-len-a", float, MAX_LEN_A, "max length = a * src_len + b"),
        ("--max-len-b", int, MAX_LEN_B, "max length = a * src_len + b"),
    ):
        prefix = "translation: " if evaluate else ""
        p.add_argument(
            option_string, type=kind, default=search or value, help=said(prefix + text, value)
        )
    p.add_argument(
        "--max-tokens",
        type=int,
        default=MAX_TOKENS,
        help="padded tokens per batch (sources; a language model's windows)",
    )
    p.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    p.add_argument("--threads", type=int, default=None, help=THREADS_HELP)


def cmd_train(args: argparse.Namespace) -> int:
    names = {f.name for f in fields(TrainConfig)}
    config = TrainConfig(**{k: v for k, v in vars(args).items() if k in names})
    try:
        summary = train(config, validate_bleu=_bleu_hook(args.validate_bleu))
    except Interrupted as error:  # before the first update: nothing to save
        print(f"{error}", file=sys.stderr)
        return exit_code(error.signum)
    if summary["interrupted"] is not None:  # the loop said where it stopped and how to resume
        return exit_code(summary["interrupted"])
    if os.environ.get("RANK", "0") != "0":  # under torchrun, one process reports
        return 0
    speed, tokens, session = (
        summary["tokens_per_s"],
        summary["train_tokens"],
        summary["session_tokens"],
    )
    # a resumed run's updates and tokens are the run's, its seconds this command's
    done = (
        f"({tokens:,} target tokens) in {summary['seconds']:.0f} s"
        if session >= tokens
        else f"({tokens:,} target tokens in all; this command: {session:,} of them in "
        f"{summary['seconds']:.0f} s)"
    )
    print(
        f"{summary['updates']} updates {done}"
        + (f", {speed:,.0f} target tokens/s" if speed is not None else "")
        + f"; best valid {best_name(config)} {summary['best_valid_loss']:.3f} bits\n"
        f"next: butcherflow evaluate {config.save_dir} --subset test"
    )
    expected = args.expect_tokens_per_s
    if expected is not None and speed is not None and speed < expected / 2:
        print(
            f"warning: {speed:,.0f} target tokens/s is far below the {expected:,.0f} expected "
            "here (--expect-tokens-per-s): this machine is busy or slower; the model is the same, "
            "it only took longer (on a busy CPU, --threads 1 is often faster)",
            file=sys.stderr,
        )
    return 0


def _bleu_hook(sentences: int) -> Callable[..., float] | None:
    """Validation BLEU on the first `sentences` valid pairs (greedy), given to the train loop,
    which may not import the generate stage itself."""
    if sentences <= 0:
        return None

    def hook(model: Any, vocab: Any, pairs: Sequence[tuple[str, str]], device: Any) -> float:
        return validation_bleu(model, vocab, pairs[:sentences], device)

    return hook


def cmd_average(args: argparse.Namespace) -> int:
    read_config(args.save_dir)  # a clear error when this is not a save dir
    folder = Path(args.output).parent
    if not folder.is_dir():  # a typo in -o must not create folders
        raise DeclarationError(
            f"folder {str(folder)!r} does not exist" if not folder.exists() else "not a folder",
            key="--output",
            value=args.output,
            valid="a .safetensors path in an existing folder",
        )
    paths = checkpoint_paths(Path(args.save_dir), f"avg:{args.last}")
    averaged = ", ".join(p.stem for p in paths)
    save_weights(average_checkpoints(paths), Path(args.output), {"averaged": averaged})
    print(f"averaged {len(paths)} checkpoints ({averaged}) into {args.output}")
    return 0


def train_flags(p: argparse.ArgumentParser) -> None:
    """`butcherflow train` flags: fairseq's names; defaults are TrainConfig's (SUPPRESS keeps an
    omitted flag out of the namespace, so the dataclass default applies; the help says it,
    read from `TRAIN_DEFAULTS`)."""
    p.add_argument("recipe", help="a recipe name (models/*.toml) or a recipe .toml file")
    p.add_argument(
        "--data",
        required=True,
        help="bible:SRC-TGT, DIR[:SRC-TGT] or explicit files; text for a language model: "
        "bible:LANG, a DIR of train.txt/valid.txt/test.txt, or train=A.txt;valid=B.txt;test=C.txt",
    )
    p.add_argument("--save-dir", required=True, help="checkpoints, log, curves; rerun to resume")
    for name, kind, text in _TRAIN_FLAGS:
        default = TRAIN_DEFAULTS[name]
        shown = text if "default" in text or default is None else said(text, default)
        p.add_argument(flag(name), type=kind, default=argparse.SUPPRESS, help=shown)
    for name, text in _TRAIN_SWITCHES:
        p.add_argument(flag(name), action="store_true", default=argparse.SUPPRESS, help=text)
    p.add_argument(
        "--expect-tokens-per-s",
        type=at_least(0, float),
        default=None,
        metavar="N",
        help="warn at the end when training ran below half of N target tokens/s (make demo "
        "passes the README's figure)",
    )
    p.add_argument(
        "--validate-bleu",
        type=at_least(0),
        default=0,
        metavar="N",
        help="also measure greedy BLEU on the first N valid pairs at each validation (0: off)",
    )


# `train`'s flags with a value: (TrainConfig field, type, help without its default)
_TRAIN_FLAGS: tuple[tuple[str, type, str], ...] = (
    ("source_lang", str, "source suffix of a raw-text folder (with --target-lang)"),
    ("target_lang", str, "target suffix of a raw-text folder (the language of .txt text)"),
    ("task", str, "translation or language_model (default: the recipe's: a decoder-only "
     "lm-* recipe is a language model)"),
    ("tokens_per_sample", int, "a language model's context windows, in tokens (default: "
     f"{TOKENS_PER_SAMPLE} with --sample-break-mode none)"),
    ("sample_break_mode", str, "a language model's windows: none (default: across lines) or "
     "eos (no window crosses a line's end)"),
    ("max_tokens", int, "padded positions per batch and process"),
    ("update_freq", int, "micro-batches accumulated per update"),
    ("lr", float, "peak learning rate"),
    ("warmup_updates", int, "linear warmup, then inverse sqrt (the default is for large "
     "corpora; on a small one use far fewer: `make demo` trains 800 updates with 150, lr 3e-3)"),
    ("warmup_init_lr", float, "learning rate of the first update"),
    ("label_smoothing", float, "fairseq's label smoothing (default: the task's, "
     f"{TRANSLATION.label_smoothing:g} for translation, {LANGUAGE_MODEL.label_smoothing:g} for a "
     "language model)"),
    ("dropout", float, "dropout (default: the recipe's)"),
    ("clip_norm", float, "clip the gradient norm (0: off)"),
    ("weight_decay", float, "decoupled weight decay"),
    ("max_update", int, "stop after this many updates (0: no limit)"),
    ("max_epoch", int, "stop after this many epochs (0: no limit)"),
    ("time_budget", float, "stop with a checkpoint after this many seconds of this command"),
    ("patience", int, "stop when the valid loss has not improved for N validations (0: off)"),
    ("seed", int, "initialisation, dropout and shuffling"),
    ("save_interval_updates", int, "also save checkpoint_<update> (and checkpoint_last) every "
     "N updates (0: at epoch ends only)"),
    ("keep_last_checkpoints", int, "keep the newest N interval checkpoints (-1: all)"),
    ("validate_interval_updates", int, "validate every N updates instead of at epoch ends "
     "(0: at epoch ends)"),
    ("log_interval", int, "updates per line of log.jsonl, and of progress when stderr is no "
     "terminal"),
    ("vocab_size", int, "joint sentencepiece BPE vocabulary size"),
    ("device", str, "auto, cpu, cuda or cuda:N"),
    ("threads", int, THREADS_HELP),
    ("tensorboard", str, "also write the log's curves as TensorBoard events into this folder "
     "(needs pip install 'butcherflow[tensorboard]')"),
    ("precision", str, "auto (bf16/fp16 on GPU, fp32 on CPU), fp32, bf16, fp16"),
    ("buckets", str, "length buckets batches are padded to: auto (1.25 on GPU, off on CPU; off "
     "for a language model's windows), off, a ratio such as 1.25 (geometric widths), or widths "
     "such as 16,32,64"),
    ("d_model", int, "override the recipe's d_model"),
    ("n_heads", int, "override the recipe's n_heads"),
    ("d_ffn", int, "override the recipe's d_ffn"),
    ("encoder_layers", int, "override the recipe's encoder layers"),
    ("decoder_layers", int, "override the recipe's decoder layers"),
)  # fmt: skip
_TRAIN_SWITCHES: tuple[tuple[str, str], ...] = (
    ("compile", "torch.compile each block on its own (the view trains; checkpoints are "
     "unchanged)"),
    ("fsdp", "under torchrun, shard each block's weights, gradients and optimizer state over "
     "the processes (FSDP2) instead of replicating the model (DDP, the default)"),
    ("no_epoch_checkpoints", "no checkpoint_last at epoch ends: only at "
     "--save-interval-updates, a new best and when the run stops (fairseq's flag)"),
    ("allow_failed_claims", "train a declaration whose proof refutes its claimed order "
     "(refused by default; recorded in the run's config.json)"),
)  # fmt: skip


def cmd_experiment(args: argparse.Namespace) -> int:
    check_parent(args.out, "--out")
    if args.name == "all" and not args.report_only:
        raise DeclarationError(
            "'all' rebuilds every report from its JSON; it trains nothing",
            key="NAME",
            value="all",
            valid="add --report-only, or name one experiment",
        )
    if args.report_only:
        for name in EXPERIMENTS if args.name == "all" else [args.name]:
            if args.name == "all" and not (Path(args.out) / f"{name}.json").is_file():
                continue
            outcome = write_reports(name, args.out)
            print(
                f"{name}: {len(outcome.results)} result(s) from {args.out}/{name}.json; "
                f"report {outcome.report}, index {outcome.index} (nothing trained)"
            )
        if args.readme:
            write_readme_summary(Path(args.readme), Path(args.out), EXPERIMENTS)
            print(f"summary of {args.out}/*.json written into {args.readme}")
        return 0
    try:
        outcome = run_experiment(
            args.name,
            budget=args.budget,
            device=args.device,
            sizes=args.sizes,
            out=args.out,
            runs_dir=args.runs_dir,
            seeds=args.seeds,
            data=args.data,
            threads=args.threads,
        )
    except Interrupted as error:  # the finished runs keep their result.json; the rest resumes
        print(f"experiment {args.name}: {error}", file=sys.stderr)
        return exit_code(error.signum)
    print(
        f"{args.name}: {len(outcome.trained)} run(s) trained, {len(outcome.skipped)} already "
        f"done, {len(outcome.carried)} carried over from the record; report {outcome.report}, "
        f"index {outcome.index}"
    )
    if args.readme:
        write_readme_summary(Path(args.readme), Path(args.out), EXPERIMENTS)
        print(f"summary of {args.out}/*.json written into {args.readme}")
    return 0
