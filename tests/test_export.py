"""`butcherflow export`: a trained run as a Hugging Face folder, checked by loading it where
butcherflow is never imported by hand (a fresh process: transformers' `trust_remote_code`, and
lm-eval's `HFLM` on a local text file) against butcherflow's own generation, logits, translations
and `evaluate` loss."""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from tiny_run import RUN, TINY

from butcherflow.cli import main
from butcherflow.data import Vocabulary
from butcherflow.errors import ButcherflowError, DeclarationError
from butcherflow.export import ExportError, export_run
from butcherflow.generate import Sampling, evaluate_perplexity, sample, translate
from butcherflow.savedir import CheckpointError, load_language_model, load_model, save_weights
from butcherflow.savedir.checkpoint import load_weights
from butcherflow.train import TrainConfig, train

transformers = pytest.importorskip("transformers")
# the tiny LM run is shared with test_fsdp.py: one worker trains it for both
pytestmark = [pytest.mark.usefixtures("vocab_cache"), pytest.mark.xdist_group("tiny-lm")]

CHECK = Path(__file__).parent / "export_check.py"
PROMPTS = ["In the beginning", "And God said", ""]
NEW_TOKENS = 12
SPECIAL_IDS = (Vocabulary.pad, Vocabulary.bos, Vocabulary.eos)
SHORT = {"max_update": 2, "validate_interval_updates": 2, "save_interval_updates": 2}


def _scrambled(save_dir: Path, seed: int) -> Path:
    """The run's weights with every matrix drawn anew from N(0, 1), as a weights file (what
    `butcherflow average` writes): two training updates leave a model that repeats one token,
    which would make "the same tokens" an easy test (greedy decoding of drawn weights repeats
    tokens too: the seeds are ones whose generations vary)."""
    tensors = load_weights(save_dir / "checkpoint_last.safetensors")
    generator = torch.Generator().manual_seed(seed)
    drawn = {
        k: torch.randn(v.shape, generator=generator) if v.dim() > 1 else v
        for k, v in tensors.items()
    }
    path = save_dir / "scrambled.safetensors"
    save_weights(drawn, path, {"scrambled": str(seed)})
    return path


@pytest.fixture(scope="module")
def text(tiny_lm_text: Path) -> Path:
    return tiny_lm_text


@pytest.fixture(scope="module")
def lm_run(tiny_lm_run: Path) -> Path:
    """The shared lm-rk4 run (conftest: four updates, validated at 2 and 4; four field calls per
    layer: four cache slots per layer)."""
    return tiny_lm_run


@pytest.fixture(scope="module")
def mt_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    save_dir = tmp_path_factory.mktemp("mt") / "run"
    train(TrainConfig("transformer-small", f"{TINY}:de-en", str(save_dir), **{**RUN, **SHORT}))
    return save_dir


@pytest.fixture(scope="module")
def exported(lm_run: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("exported")
    return {"lm": export_run(lm_run, out / "lm", checkpoint=str(_scrambled(lm_run, 7))).folder}


@pytest.fixture(scope="module")
def exported_mt(mt_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("exported-mt")
    return export_run(mt_run, out / "mt", checkpoint=str(_scrambled(mt_run, 2))).folder


def _fresh(spec: dict[str, Any], folder: Path) -> Any:
    """What export_check.py (transformers and lm-eval, in a new process) found on `spec`."""
    (folder / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
    env = {
        **os.environ,
        "HF_HOME": str(folder / "hf"),  # the remote-code module cache, nothing downloaded
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[1]), *sys.path]),
    }
    done = subprocess.run(
        [sys.executable, str(CHECK), str(folder / "spec.json"), str(folder / "result.json")],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((folder / "result.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def fresh(exported: dict[str, Path], text: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The language model's folder in a fresh process: transformers, then lm-eval's HFLM."""
    pytest.importorskip("lm_eval")
    spec = {
        "lm": str(exported["lm"]),
        "prompts": PROMPTS,
        "text": str(text / "test.txt"),
        "new_tokens": NEW_TOKENS,
    }
    return _fresh(spec, tmp_path_factory.mktemp("fresh"))


@pytest.fixture(scope="module")
def fresh_mt(exported_mt: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The translation folder in a fresh process (a second training run: slow)."""
    spec = {"mt": str(exported_mt), "sources": _sources()}
    return _fresh(spec, tmp_path_factory.mktemp("fresh-mt"))


@pytest.fixture(scope="module")
def cli_export(lm_run: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """`butcherflow export RUN_DIR OUT_DIR` (the best checkpoint) and what it printed."""
    out = tmp_path_factory.mktemp("cli") / "hf"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["export", str(lm_run), str(out)]) == 0
    return out, printed.getvalue()


def _sources() -> list[str]:
    return [line.strip() for line in (TINY / "test.de").read_text("utf-8").splitlines()][:8]


# --- the language model, loaded by transformers in a fresh process -------------------------------


def test_the_folder_loads_as_a_pretrained_model_with_generation(fresh: Any) -> None:
    assert fresh["lm"]["classes"] == [True, True]
    assert fresh["lm"]["class"] == "ButcherflowForCausalLM"


def test_the_tokenizer_puts_bos_before_the_vocabularys_ids(fresh: Any, lm_run: Path) -> None:
    vocab = Vocabulary.load(lm_run / "spm.model")
    assert fresh["lm"]["prompt_ids"] == [[Vocabulary.bos, *vocab.encode(p)] for p in PROMPTS]


def test_greedy_generate_gives_butcherflows_tokens(fresh: Any, lm_run: Path) -> None:
    model, vocab, _ = load_language_model(lm_run, str(lm_run / "scrambled.safetensors"))
    ours = sample(model, [vocab.encode(p) for p in PROMPTS], Sampling(max_new_tokens=NEW_TOKENS))
    assert len({t for row in ours for t in row}) > 4  # not one token repeated
    theirs = [[t for t in row if t != Vocabulary.eos] for row in fresh["lm"]["cached"]]
    assert theirs == ours


def test_generate_without_the_cache_gives_the_same_tokens(fresh: Any) -> None:
    assert fresh["lm"]["uncached"] == fresh["lm"]["cached"]


def test_the_logits_are_butcherflows(fresh: Any, lm_run: Path) -> None:
    model, _, _ = load_language_model(lm_run, str(lm_run / "scrambled.safetensors"))
    for ids, logits in zip(fresh["lm"]["prompt_ids"], fresh["lm"]["logits"], strict=True):
        with torch.no_grad():
            ours = model(torch.tensor([ids]))[0]
        assert (ours - torch.tensor(logits)).abs().max() < 1e-5


def test_the_cached_steps_give_the_full_forwards_logits(fresh: Any) -> None:
    for full, steps in zip(fresh["lm"]["logits"], fresh["lm"]["step_logits"], strict=True):
        # the same sums in another order (one position at a time): float32 round-off
        assert torch.allclose(torch.tensor(steps), torch.tensor(full), rtol=1e-5, atol=1e-4)


def test_lm_eval_gives_butcherflows_evaluate_loss(fresh: Any, lm_run: Path) -> None:
    # one line per sample (break mode eos): the harness scores each line as a document of its own
    scrambled = str(lm_run / "scrambled.safetensors")
    ours = evaluate_perplexity(lm_run, "test", checkpoint=scrambled, sample_break_mode="eos")
    assert math.isclose(fresh["harness"]["nll_bits"], ours.nll_bits, rel_tol=1e-4)


# --- the translation model ------------------------------------------------------------------------


@pytest.mark.slow
def test_a_translation_run_exports_an_encoder_decoder_that_translates_as_butcherflow(
    fresh_mt: Any, mt_run: Path
) -> None:
    model, vocab, _ = load_model(mt_run, str(mt_run / "scrambled.safetensors"))
    theirs = [[t for t in row if t not in SPECIAL_IDS] for row in fresh_mt["mt"]["ids"]]
    assert fresh_mt["mt"]["classes"] == [True, True]
    # sentencepiece spells the unknown piece " ⁇ ", transformers' skip_special_tokens drops it:
    # the ids are compared, and butcherflow's detokenization of them
    assert [vocab.decode(ids) for ids in theirs] == translate(model, vocab, _sources(), beam=1)


# --- the folder -----------------------------------------------------------------------------------


def test_the_tokenizer_gives_the_sentencepiece_ids_on_the_corpus(
    exported: dict[str, Path], lm_run: Path
) -> None:
    tokenizer = transformers.AutoTokenizer.from_pretrained(exported["lm"])
    vocab = Vocabulary.load(lm_run / "spm.model")
    lines = [
        line
        for split in ("train", "valid", "test")
        for lang in ("de", "en")  # the German side: pieces the English vocabulary lacks
        for line in (TINY / f"{split}.{lang}").read_text("utf-8").splitlines()
    ]
    lines += ["  two  spaces ", "unseen ☃ characters ж", "tab\tand newline\nhere"]
    found = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in lines]
    assert found == [vocab.encode(t) for t in lines]


def test_the_model_card_states_the_integrator_its_proof_the_data_and_the_metrics(
    exported: dict[str, Path], lm_run: Path
) -> None:
    card = (exported["lm"] / "README.md").read_text("utf-8")
    config = json.loads((lm_run / "config.json").read_text("utf-8"))
    assert card.startswith("---\nlibrary_name: transformers\npipeline_tag: text-generation\n")
    assert 'name = "rk4"' in card and "b = [" in card  # the declaration, as trained
    assert "| order | 4 |" in card  # the proof's table
    assert config["corpus_fingerprint"] in card
    assert "AutoModelForCausalLM.from_pretrained" in card


def test_the_card_of_a_validated_checkpoint_gives_its_metrics(
    cli_export: tuple[Path, str], lm_run: Path
) -> None:
    card = (cli_export[0] / "README.md").read_text("utf-8")
    commit = json.loads((lm_run / "checkpoint_best.json").read_text("utf-8"))
    assert f"valid perplexity (per token): {commit['valid_ppl']:.4f}" in card


def test_an_existing_folder_is_refused_unless_forced(lm_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(DeclarationError, match=r"OUT_DIR.*exists.*--force"):
        export_run(lm_run, out)
    export_run(lm_run, out, force=True)  # an empty folder
    export_run(lm_run, out, force=True)  # an earlier export
    assert (out / "model.safetensors").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no temporary left


def test_force_keeps_a_folder_that_is_no_export(lm_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("keep me", encoding="utf-8")
    with pytest.raises(DeclarationError, match=r"OUT_DIR.*replaces an earlier export only"):
        export_run(lm_run, out, force=True)
    assert sorted(p.name for p in out.iterdir()) == ["mine.txt"]


@pytest.mark.parametrize("where", [".", "..", "hf"])
def test_an_out_dir_overlapping_the_run_is_refused(
    lm_run: Path, tmp_path: Path, where: str
) -> None:
    run = tmp_path / "run"
    shutil.copytree(lm_run, run)
    before = sorted(p.relative_to(run) for p in run.rglob("*"))
    with pytest.raises(DeclarationError, match=r"OUT_DIR.*overlaps the save dir"):
        export_run(run, run / where, force=True)
    assert sorted(p.relative_to(run) for p in run.rglob("*")) == before


def test_a_failed_export_leaves_no_folder(
    lm_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from butcherflow.export import folder

    def differs(*args: Any) -> tuple[int, float]:
        raise ExportError("the logits differ")

    monkeypatch.setattr(folder, "_check", differs)
    with pytest.raises(ExportError):
        export_run(lm_run, tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


def test_export_of_a_folder_that_is_no_run_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="not a butcherflow save dir"):
        export_run(tmp_path, tmp_path / "out")


def test_left_padding_is_refused_in_one_line(exported: dict[str, Path]) -> None:
    model = transformers.AutoModelForCausalLM.from_pretrained(
        exported["lm"], trust_remote_code=True
    )
    ids = torch.tensor([[0, 2, 7], [2, 7, 8]])
    with pytest.raises(ButcherflowError, match=r"attention_mask.*rows \[0\].*padding on the right"):
        model(ids, attention_mask=ids.ne(0).long())


def test_the_command_line_writes_the_folder_and_says_how_to_load_it(
    cli_export: tuple[Path, str], lm_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, said = cli_export
    assert f"wrote {out}" in said and "AutoModelForCausalLM.from_pretrained" in said
    assert main(["export", str(lm_run), str(out)]) == 1
    assert "error: key 'OUT_DIR': exists" in capsys.readouterr().err
