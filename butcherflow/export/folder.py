"""`export_run`: a save dir's trained model as a Hugging Face folder.

The folder holds `config.json` (a `ButcherflowConfig`: the run's resolved recipe and its
`auto_map`), `model.safetensors`, `generation_config.json` (butcherflow's decoding rules: pad and
bos never generated; a translation at least one token and at most `MAX_LEN_B`), the tokenizer
(`tokenizer.json`, `tokenizer_config.json`), `modeling_butcherflow.py` (three lines that import
the classes from the installed butcherflow) and the model card `README.md`.

It loads with `AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=True)` (a
translation run: `AutoModelForSeq2SeqLM`) and `AutoTokenizer.from_pretrained(folder)`, in any
process where butcherflow and transformers are installed, with no `import butcherflow` first:
transformers' remote-code mechanism reads `auto_map` and imports the model from
`modeling_butcherflow.py`. That is how lm-eval, pipelines and other people's scripts load it;
registering with the Auto classes when butcherflow is imported would make `import butcherflow`
import transformers, and would leave those harnesses unable to load the folder.

The folder is written to a temporary folder beside OUT_DIR, checked there (reloaded in this
process: its logits must equal the trained model's, its tokenizer's ids the vocabulary's on the
run's valid text), and renamed into place: a failed or interrupted export leaves no half folder.
An OUT_DIR that exists is refused unless `force`, which replaces it only once the new folder is
complete, and only if it is an earlier export or empty; an OUT_DIR inside the save dir, or above
it, is refused.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, final

import torch
from safetensors.torch import save_file

from ..assemble import LanguageModel, Seq2Seq, recipe_to_toml
from ..data import Vocabulary
from ..errors import ButcherflowError, DeclarationError, unwritable
from ..generate.decoding import MAX_LEN_B, MIN_LEN
from ..generate.sample import MAX_NEW_TOKENS
from ..nn import LearnedPositions
from ..savedir import (
    CheckpointError,
    committed,
    load_language_model,
    load_model,
    read_config,
    read_log,
    run_corpus,
)
from ..savedir.layout import BEST, LAST, LOG
from .card import model_card

EXTRA = "hf"  # the optional dependency group that installs transformers (pyproject.toml)
MODELING, WEIGHTS = "modeling_butcherflow.py", "model.safetensors"
SHIM = '''"""The model classes of a folder written by `butcherflow export` (pip install
'butcherflow[hf]'): transformers imports this file when it loads the folder with
trust_remote_code=True."""

from butcherflow.export.hf import ButcherflowConfig, ButcherflowForCausalLM, ButcherflowForSeq2SeqLM

__all__ = ["ButcherflowConfig", "ButcherflowForCausalLM", "ButcherflowForSeq2SeqLM"]
'''
TOLERANCE = 1e-5  # largest |logit| difference allowed between the folder and the save dir
PROBE = 8  # valid sentences the export checks the tokenizer and the logits on


class ExportError(ButcherflowError):
    """The exported folder does not reproduce the trained model (nothing was written)."""


def require_transformers() -> None:
    """A one-line error naming the extra when transformers is missing."""
    try:
        import transformers  # noqa: F401
    except ImportError:
        raise ButcherflowError(
            f"export needs transformers: pip install 'butcherflow[{EXTRA}]'"
        ) from None


@final
@dataclass(frozen=True)
class Exported:
    """What `export_run` wrote.

    **Arguments:**

    - `folder`: the Hugging Face folder; `task`: the run's task; `auto_class`: the
      transformers class that loads it (`AutoModelForCausalLM`, `AutoModelForSeq2SeqLM`).
    - `checked_sentences`: the valid sentences the tokenizer and logits were checked on;
      `max_logit_difference`: the largest logit difference found (≤ 1e-5).
    """

    folder: Path
    task: str
    auto_class: str
    checked_sentences: int
    max_logit_difference: float


def export_run(
    save_dir: str | Path, out_dir: str | Path, *, checkpoint: str = "best", force: bool = False
) -> Exported:
    """Write a trained run as a Hugging Face folder (module docstring).

    **Arguments:**

    - `save_dir`: the `--save-dir` of a `butcherflow train` run.
    - `out_dir`: the folder to write; refused if it exists, unless `force`.
    - `checkpoint`: `best` (falling back to `last` when the run never validated), `last`,
      `avg:N` or a `.safetensors` file, as `butcherflow evaluate` reads them.
    - `force`: replace an existing `out_dir` (once the new folder is complete).

    **Returns:** an `Exported`.
    """
    require_transformers()
    save, out = Path(save_dir), Path(out_dir)
    config = read_config(save)
    _check_out_dir(save, out, force)
    task = str(config.get("task"))
    if checkpoint == "best" and committed(save, BEST) is None and committed(save, LAST):
        checkpoint = "last"
    load = load_language_model if task == "language_model" else load_model
    model, vocab, config = load(save, checkpoint)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        temporary = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp"))
    except OSError as error:
        raise unwritable(error, "OUT_DIR", out) from None
    try:
        with _quiet():
            auto_class = _write(temporary, model, vocab, config, save, checkpoint)
            sentences, difference = _check(temporary, model, vocab, save, config)
        _move_into_place(temporary, out)
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
    return Exported(out, task, auto_class, sentences, difference)


def _check_out_dir(save: Path, out: Path, force: bool) -> None:
    """OUT_DIR is apart from the save dir (neither inside the other), and new; with `force`, a
    folder an earlier export wrote (it holds `MODELING`) or an empty one: `force` replaces it
    whole, so it never takes a run or a folder of other files with it."""
    run, target = save.resolve(), out.resolve()
    if target == run or run in target.parents or target in run.parents:
        raise DeclarationError(
            f"overlaps the save dir {save}: the export would write into the run or replace it",
            key="OUT_DIR",
            value=str(out),
            valid="a folder outside the save dir and not one of its parents",
        )
    if not out.exists() and not out.is_symlink():
        return
    if not force:
        raise DeclarationError(
            "exists",
            key="OUT_DIR",
            value=str(out),
            valid="a path that does not exist yet, or --force to replace an earlier export",
        )
    if not out.is_dir() or not ((out / MODELING).is_file() or not any(out.iterdir())):
        raise DeclarationError(
            f"--force replaces an earlier export only; this is not one (no {MODELING})",
            key="OUT_DIR",
            value=str(out),
            valid="a new path, an empty folder, or a folder butcherflow export wrote",
        )


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """transformers' progress bars off while the folder is written and reloaded (restored)."""
    from transformers.utils import logging

    shown = logging.is_progress_bar_enabled()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        if shown:
            logging.enable_progress_bar()


def _write(
    folder: Path,
    model: LanguageModel | Seq2Seq,
    vocab: Vocabulary,
    config: dict[str, Any],
    save: Path,
    checkpoint: str,
) -> str:
    """Fill `folder`; return the name of the auto class that loads it."""
    from transformers import GenerationConfig

    from . import hf
    from .tokenizer import hf_tokenizer

    task = str(config["task"])
    auto_class, model_type = hf.AUTO_CLASSES[task]
    recipe_toml = recipe_to_toml(model.recipe)
    positions = model.embedding.positions
    learned = positions.max_len if isinstance(positions, LearnedPositions) else None
    hf_config = hf.ButcherflowConfig(
        recipe=recipe_toml,
        task=task,
        vocab_size=len(vocab),
        butcherflow_version=_version(),
        architectures=[model_type.__name__],
        auto_map={
            "AutoConfig": "modeling_butcherflow.ButcherflowConfig",
            auto_class: f"modeling_butcherflow.{model_type.__name__}",
        },
        dtype="float32",
        **({} if learned is None else {"max_position_embeddings": learned}),
    )
    hf_config.to_json_file(folder / "config.json")
    GenerationConfig(**_decoding(task, learned)).save_pretrained(folder)
    # The exported model's state dict is the trained model's under "model." (the attribute of
    # the transformers class). Every name is written, aliases included (a shared gate), each
    # tensor its own copy: transformers' loader fills each name from the file.
    tensors = {f"model.{k}": v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    save_file(tensors, str(folder / WEIGHTS), metadata={"format": "pt"})
    hf_tokenizer(vocab, bos_first=task == "language_model").save_pretrained(folder)
    (folder / MODELING).write_text(SHIM, encoding="utf-8")
    (folder / "README.md").write_text(
        _card(model, recipe_toml, config, save, checkpoint, auto_class), encoding="utf-8"
    )
    return auto_class


def _decoding(task: str, learned: int | None) -> dict[str, Any]:
    """butcherflow's decoding rules as a `GenerationConfig` (greedy; `generate` and `translate`
    never emit pad or bos; a translation has at least `MIN_LEN` tokens, at most `MAX_LEN_B`,
    and no more than the learned positions hold)."""
    rules: dict[str, Any] = {
        "bos_token_id": Vocabulary.bos,
        "eos_token_id": Vocabulary.eos,
        "pad_token_id": Vocabulary.pad,
        "suppress_tokens": [Vocabulary.pad, Vocabulary.bos],
        "do_sample": False,
    }
    if task == "language_model":
        return {**rules, "max_new_tokens": MAX_NEW_TOKENS}
    longest = MAX_LEN_B if learned is None else min(MAX_LEN_B, learned - 1)
    return {
        **rules,
        "decoder_start_token_id": Vocabulary.bos,
        "max_new_tokens": longest,
        "min_new_tokens": MIN_LEN,
    }


def _card(
    model: LanguageModel | Seq2Seq,
    recipe_toml: str,
    config: dict[str, Any],
    save: Path,
    checkpoint: str,
    auto_class: str,
) -> str:
    recipe = model.recipe
    if isinstance(model, LanguageModel):
        side = recipe.decoder if model.side == "decoder" else recipe.encoder
        assert side is not None
        sides = [(model.side, side)]
    else:
        assert recipe.encoder is not None and recipe.decoder is not None
        sides = [("encoder", recipe.encoder), ("decoder", recipe.decoder)]
    name = {"best": BEST, "last": LAST}.get(checkpoint)
    found = None if name is None else committed(save, name)
    commit = None if found is None else found[1]
    update = None if commit is None else commit.get("update")
    evaluations = [
        e
        for e in read_log(save / LOG)
        if e.get("kind") == "evaluate" and update is not None and e.get("update") == update
    ]
    return model_card(recipe, recipe_toml, sides, config, commit, evaluations, _usage(auto_class))


def _usage(auto_class: str) -> str:
    if auto_class == "AutoModelForCausalLM":
        return (
            "from transformers import AutoModelForCausalLM, AutoTokenizer\n\n"
            'model = AutoModelForCausalLM.from_pretrained("FOLDER", trust_remote_code=True)\n'
            'tokenizer = AutoTokenizer.from_pretrained("FOLDER", trust_remote_code=True)\n'
            'prompt = tokenizer("In the beginning", return_tensors="pt")  # bos first\n'
            "out = model.generate(**prompt, max_new_tokens=20)\n"
            "print(tokenizer.decode(out[0], skip_special_tokens=True))"
        )
    return (
        "from transformers import AutoModelForSeq2SeqLM, AutoTokenizer\n\n"
        'model = AutoModelForSeq2SeqLM.from_pretrained("FOLDER", trust_remote_code=True)\n'
        'tokenizer = AutoTokenizer.from_pretrained("FOLDER", trust_remote_code=True)\n'
        'source = tokenizer(["Im Anfang schuf Gott"], return_tensors="pt", padding=True)\n'
        "out = model.generate(**source)  # greedy, as butcherflow translate --beam 1\n"
        "print(tokenizer.batch_decode(out, skip_special_tokens=True))"
    )


def _check(
    folder: Path, model: LanguageModel | Seq2Seq, vocab: Vocabulary, save: Path, config: dict
) -> tuple[int, float]:
    """Reload `folder` here and compare it with the trained model: the tokenizer's ids with the
    vocabulary's on the first valid sentences (or a fixed text when the corpus cannot be read
    from here), the logits of those ids; a difference raises `ExportError`."""
    from transformers import PreTrainedTokenizerFast

    from . import hf

    _, model_type = hf.AUTO_CLASSES[str(config["task"])]
    reloaded = model_type.from_pretrained(folder).eval()
    tokenizer = PreTrainedTokenizerFast.from_pretrained(folder)
    try:
        texts = [t for _, t in run_corpus(save, config).valid[:PROBE]]
    except CheckpointError:
        texts = ["In the beginning God created the heavens and the earth."]
    rows = []
    for text in texts:
        ids = vocab.encode(text)
        got = tokenizer(text, add_special_tokens=False)["input_ids"]
        if got != ids:
            raise ExportError(
                f"the exported tokenizer gives other ids than {vocab.path} on {text!r}: "
                f"{got[:12]} against {ids[:12]}; nothing was written"
            )
        rows.append(ids or [Vocabulary.unk])
    worst = _logit_difference(model, reloaded, rows)
    if worst > TOLERANCE:
        raise ExportError(
            f"the exported folder's logits differ from the trained model's by {worst:.3g} "
            f"(> {TOLERANCE:g}); nothing was written"
        )
    return len(texts), worst


@torch.no_grad()
def _logit_difference(
    model: LanguageModel | Seq2Seq, reloaded: Any, rows: list[list[int]]
) -> float:
    """The largest logit difference over the non-pad positions of one right-padded batch of
    `rows` (both models read the same tensors: one forward each, not one per sentence)."""
    model.eval()
    width = 1 + max(map(len, rows))
    padded = [[Vocabulary.bos, *ids] + [Vocabulary.pad] * (width - 1 - len(ids)) for ids in rows]
    target = torch.tensor(padded)
    real = target.ne(Vocabulary.pad)
    if isinstance(model, LanguageModel):
        mine, theirs = model(target), reloaded(input_ids=target).logits
    else:
        src = target[:, 1:].contiguous()  # the sentence itself, right-padded
        mine = model(src, target)
        theirs = reloaded(input_ids=src, decoder_input_ids=target).logits
    return float((mine - theirs)[real].abs().max())


def _move_into_place(temporary: Path, out: Path) -> None:
    """Rename the complete folder to `out`; an existing `out` (`force`) is moved aside first
    and deleted only after the rename."""
    if not out.exists():
        os.replace(temporary, out)
        return
    old = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.", suffix=".old"))
    os.replace(out, old / out.name)
    try:
        os.replace(temporary, out)
    except OSError:
        os.replace(old / out.name, out)
        raise
    finally:
        shutil.rmtree(old, ignore_errors=True)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("butcherflow")
    except PackageNotFoundError:
        return "unknown"
