"""A run's sentencepiece vocabulary as a Hugging Face fast tokenizer with the same ids.

The run's `spm.model` is a BPE model (`data/vocab.py`: identity normalisation, dummy prefix,
extra spaces removed, byte fallback for large scripts). transformers converts such a model
following its own normalizer spec (`SpmConverter.build_tokenizer_from_spm_proto`: the merges
ranked by piece score, as sentencepiece applies them), so `tokenizer(text)` gives the ids of
`Vocabulary.encode(text)`; the tests compare the two on the corpus text. One difference is
transformers' convention: the literal strings `<s>`, `</s>`, `<pad>`, `<unk>` in a text are
read as those special tokens (sentencepiece spells them out as characters).

A language model's tokenizer puts bos first (`[bos] + ids`: what the model reads in training
and what `butcherflow generate` continues); a translation model's source has neither bos nor eos.
"""

from __future__ import annotations

from typing import Any

from ..data import Vocabulary
from ..errors import DeclarationError

SPECIAL = {"pad_token": "<pad>", "unk_token": "<unk>", "bos_token": "<s>", "eos_token": "</s>"}


def hf_tokenizer(vocab: Vocabulary, *, bos_first: bool) -> Any:
    """The `PreTrainedTokenizerFast` of a butcherflow vocabulary.

    **Arguments:**

    - `vocab`: the run's `Vocabulary` (its `.model` file is read).
    - `bos_first`: put bos before the ids of every text (a language model's input).

    **Returns:** the tokenizer (`save_pretrained` writes `tokenizer.json` and its config).
    """
    from sentencepiece import sentencepiece_model_pb2
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import SpmConverter

    proto = sentencepiece_model_pb2.ModelProto()  # type: ignore[attr-defined]
    proto.ParseFromString(vocab.path.read_bytes())
    pieces = [piece.piece for piece in proto.pieces]
    for key, piece in SPECIAL.items():
        index = getattr(Vocabulary, key.removesuffix("_token"))
        if pieces[index] != piece:
            raise DeclarationError(
                f"piece {index} is {pieces[index]!r}, not {piece!r}",
                key=key,
                valid="a vocabulary trained by butcherflow.data.build_vocabulary",
                source=vocab.path,
            )
    if proto.trainer_spec.model_type != proto.trainer_spec.BPE:
        raise DeclarationError(
            "not a BPE model",
            key="model_type",
            value=proto.trainer_spec.model_type,
            valid="a BPE vocabulary (butcherflow.data.build_vocabulary)",
            source=vocab.path,
        )
    backend = SpmConverter.build_tokenizer_from_spm_proto(
        proto, {piece: i for i, piece in enumerate(pieces)}
    )
    if bos_first:
        bos = SPECIAL["bos_token"]
        backend.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A", pair=f"{bos} $A $B:1", special_tokens=[(bos, Vocabulary.bos)]
        )
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        padding_side="right",  # butcherflow's positions count from the first column
        clean_up_tokenization_spaces=False,
        **SPECIAL,
    )
