"""`butcherflow export RUN_DIR OUT_DIR`: a trained run as a Hugging Face folder (`export/`)."""

from __future__ import annotations

import argparse

from ..export import export_run


def add_commands(sub: argparse._SubParsersAction) -> None:
    """The `export` subcommand."""
    p = sub.add_parser(
        "export",
        help="write a trained run as a Hugging Face folder (from_pretrained loads it)",
        description="Write a trained run as a Hugging Face folder: config, safetensors weights, "
        "tokenizer, generation config and model card. It loads with "
        "AutoModelForCausalLM.from_pretrained(OUT_DIR, trust_remote_code=True) (a translation "
        "run: AutoModelForSeq2SeqLM) and AutoTokenizer.from_pretrained(OUT_DIR). Needs "
        "pip install 'butcherflow[hf]'.",
    )
    p.add_argument("run_dir", help="the --save-dir of a `butcherflow train` run")
    p.add_argument("out_dir", help="the folder to write (refused if it exists, unless --force)")
    p.add_argument(
        "--checkpoint",
        default="best",
        help="best (last when the run never validated), last, avg:N or a .safetensors file",
    )
    p.add_argument(
        "--force", action="store_true", help="replace OUT_DIR if it is an earlier export (or empty)"
    )
    p.set_defaults(run=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    exported = export_run(args.run_dir, args.out_dir, checkpoint=args.checkpoint, force=args.force)
    print(
        f"wrote {exported.folder} ({exported.task}): load it with "
        f"{exported.auto_class}.from_pretrained({str(exported.folder)!r}, trust_remote_code=True); "
        f"checked on {exported.checked_sentences} valid sentence(s): tokenizer ids equal, "
        f"logits within {exported.max_logit_difference:.1g}"
    )
    return 0
