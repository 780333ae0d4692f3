"""The model card (`README.md`) of an exported folder: what the model computes and how it was
made, in the Hugging Face card format (YAML metadata, then markdown).

It states each side's integrator (its declaration, as trained), the proof of that declaration
(`bf.check`'s report, and the order of the blocks as they train), the training data (the
corpus, its fingerprint and sizes) and the metrics the run recorded for the exported weights
(the validation at that update, and every `butcherflow evaluate` of them in `log.jsonl`).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

import tomli_w

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from ..analysis import check
from ..assemble import Recipe, side_order
from ..assemble.recipe import Side, method_name
from ..methods import catalog

TAGS = ("butcherflow", "numerical-integrators", "runge-kutta")
# the numbers a validation records, as the card names them (losses in bits per target token)
METRICS = {
    "valid_loss": "valid loss (label-smoothed, bits per token)",
    "valid_nll_loss": "valid NLL (bits per token)",
    "valid_ppl": "valid perplexity (per token)",
    "valid_bleu": "valid BLEU (greedy)",
}


def model_card(
    recipe: Recipe,
    recipe_toml: str,
    sides: Sequence[tuple[str, Side]],
    config: Mapping[str, Any],
    commit: Mapping[str, Any] | None,
    evaluations: Sequence[Mapping[str, Any]],
    usage: str,
) -> str:
    """The card's text.

    **Arguments:**

    - `recipe`: the run's resolved recipe, `recipe_toml` its file's text (`recipe.toml`);
      `sides`: `(name, side)` of the blocks the exported model holds (a language model: one).
    - `config`: the run's `config.json`; `commit`: the exported checkpoint's commit (None for an
      average or a weights file).
    - `evaluations`: the run's `evaluate` log entries for these weights.
    - `usage`: the python that loads the folder (a code block's content).
    """
    language_model = config.get("task") == "language_model"
    metadata = {
        "library_name": "transformers",
        "pipeline_tag": "text-generation" if language_model else "translation",
        "tags": list(TAGS),
        "language": [lang for lang in config.get("languages", []) if lang and lang != "und"],
    }
    lines = ["---", tomli_yaml(metadata), "---", "", f"# {recipe.name}: {recipe.title}", ""]
    lines += [recipe.description, "", f"Trained with butcherflow ({recipe.reference}).", ""]
    lines += ["## Load it", "", "```python", usage.strip(), "```", ""]
    tables = tomllib.loads(recipe_toml)
    for where, side in sides:
        lines += _side_section(where, side, tables[where]["method"])
    lines += _data_section(config)
    lines += _metrics_section(commit, evaluations)
    return "\n".join(lines).rstrip() + "\n"


def tomli_yaml(metadata: Mapping[str, Any]) -> str:
    """Flat YAML for the card's metadata (strings and lists of strings only)."""
    out = []
    for key, value in metadata.items():
        if isinstance(value, list):
            out.append(f"{key}:" + ("" if value else " []"))
            out += [f"- {item}" for item in value]
        else:
            out.append(f"{key}: {value}")
    return "\n".join(out)


def _side_section(where: str, side: Side, table: Mapping[str, Any]) -> list[str]:
    """The integrator of one side: its declaration (`table`, from the run's recipe file), its
    proof, the order of the blocks as they train."""
    method = catalog.resolve(side.method)
    declaration = tomli_w.dumps({"method": dict(table)})
    what = side.field or ", ".join(f"{k} = {v}" for k, v in (side.fields or {}).items())
    return [
        f"## The integrator ({where}: {side.layers} layer(s) of {method_name(side.method)})",
        "",
        f"Each layer is one step of `{method_name(side.method)}` on the fields `{what}`; the "
        f"order of the blocks as they train: {side_order(side)}.",
        "",
        "The declaration, as trained:",
        "",
        "```toml",
        declaration.strip(),
        "```",
        "",
        "Its proof (`butcherflow check`):",
        "",
        check(method).to_markdown().strip(),
        "",
    ]


def _data_section(config: Mapping[str, Any]) -> list[str]:
    languages = [lang for lang in config.get("languages", []) if lang]
    return [
        "## Training data",
        "",
        f"- corpus: `{config.get('corpus_name')}` ({' -> '.join(languages) or 'text'})",
        f"- fingerprint (sha256 of the splits): `{config.get('corpus_fingerprint')}`",
        f"- vocabulary: joint sentencepiece BPE, {config.get('vocab_size')} pieces",
        f"- task: {config.get('task')}; updates: max_update {config.get('max_update')}, "
        f"max_tokens {config.get('max_tokens')}, lr {config.get('lr')}, seed {config.get('seed')}",
        "",
    ]


def _metrics_section(
    commit: Mapping[str, Any] | None, evaluations: Sequence[Mapping[str, Any]]
) -> list[str]:
    lines = ["## Metrics", ""]
    if commit is None:
        lines.append("The exported weights are an average or a file: no validation is recorded.")
    else:
        lines.append(f"At update {commit.get('update')} (the exported checkpoint):")
        lines.append("")
        lines += [
            f"- {label}: {float(commit[key]):.4f}"
            for key, label in METRICS.items()
            if isinstance(commit.get(key), (int, float))
        ]
    for entry in evaluations:
        scores = {
            k: v
            for k, v in entry.items()
            if k not in ("kind", "update", "time", "checkpoint") and isinstance(v, (int, float))
        }
        shown = ", ".join(f"{k} {v:.4g}" for k, v in scores.items())
        lines.append(
            f"- `butcherflow evaluate` ({entry.get('time')}, {entry.get('subset')}): {shown}"
        )
    return [*lines, ""]
