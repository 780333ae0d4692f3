"""A trained butcherflow model as a Hugging Face `PreTrainedModel`: what an exported folder loads.

`ButcherflowConfig` holds the run's resolved recipe (the `recipe.toml` text, every method
declared in it) and its vocabulary size; `ButcherflowForCausalLM` (a `LanguageModel`) and
`ButcherflowForSeq2SeqLM` (a `Seq2Seq`) rebuild the very model butcherflow trains from it and
run it through its own forward: the logits are butcherflow's, not a re-implementation's.

Generation goes through transformers' `GenerationMixin`. The incremental cache is butcherflow's
own `DecodeCache` (one slot per field call: every Runge-Kutta stage keeps its keys) behind a
transformers `Cache` (`ButcherflowCache`), created on the first step; a model whose blocks cannot
decode incrementally (an adaptive ODE solver) recomputes the prefix at every step instead.
butcherflow's models take no attention mask: a causal LM reads right padding correctly (the
padded positions come after every real one) and left padding, which would shift the positions,
is refused; a seq2seq model masks its source padding from the pad id itself.

This module imports transformers at its top: it is imported only by an exported folder's
`modeling_butcherflow.py` and by `export_run` (transformers is the optional `hf` extra).
"""

from __future__ import annotations

import sys
from typing import Any

import torch
from torch import Tensor, nn
from transformers import GenerationMixin, PretrainedConfig, PreTrainedModel
from transformers.cache_utils import Cache
from transformers.modeling_outputs import BaseModelOutput, CausalLMOutput, Seq2SeqLMOutput

from ..assemble import LanguageModel, Recipe, Seq2Seq, recipe_from_dict
from ..data import Vocabulary
from ..errors import DeclarationError
from ..nn import DecodeCache

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

MODEL_TYPE = "butcherflow"
CAPACITY = 64  # positions the DecodeCache allocates at first (it doubles when a step needs more)


class ButcherflowConfig(PretrainedConfig):
    """The configuration of an exported run.

    **Arguments:**

    - `recipe`: the text of the run's `recipe.toml` (its methods declared, its sizes resolved).
    - `task`: `"language_model"` or `"translation"`.
    - `vocab_size`: the joint vocabulary's size (`spm.model`).
    - `butcherflow_version`: the version that exported it (for the reader).
    - other keyword arguments: `PretrainedConfig`'s (the special ids, `max_position_embeddings`).
    """

    model_type = MODEL_TYPE

    def __init__(
        self,
        recipe: str = "",
        task: str = "language_model",
        vocab_size: int = 0,
        butcherflow_version: str = "unknown",
        **kwargs: Any,
    ) -> None:
        self.recipe = recipe
        self.task = task
        self.vocab_size = vocab_size
        self.butcherflow_version = butcherflow_version
        for key, value in (
            ("pad_token_id", Vocabulary.pad),
            ("bos_token_id", Vocabulary.bos),
            ("eos_token_id", Vocabulary.eos),
            ("decoder_start_token_id", Vocabulary.bos),
            ("tie_word_embeddings", False),  # the output projection is the embedding itself
            ("use_cache", True),
            ("is_encoder_decoder", task == "translation"),
        ):
            kwargs.setdefault(key, value)
        super().__init__(**kwargs)

    def butcherflow_recipe(self) -> Recipe:
        """The `Recipe` the model is built from."""
        return recipe_from_dict(tomllib.loads(self.recipe), source=None, folder=None)


class ButcherflowCache(Cache):
    """butcherflow's `DecodeCache` as a transformers `Cache`: what `generate` carries from step
    to step (`get_seq_length`, `reorder_cache` for beam search, batch selection)."""

    def __init__(self) -> None:
        super().__init__(layers=[])
        self.decode = DecodeCache(CAPACITY)

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return self.decode.length

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        self.decode.reorder(beam_idx)

    def batch_select_indices(self, indices: Tensor) -> None:
        self.decode.reorder(indices)

    def batch_repeat_interleave(self, repeats: int) -> None:
        if self.decode.length:  # generate expands its inputs before the first step
            raise NotImplementedError("a filled butcherflow cache cannot be repeated")

    def crop(self, tokens_to_remove: int) -> None:
        raise NotImplementedError("a butcherflow cache keeps every position (no cropping)")

    @property
    def is_compileable(self) -> bool:
        return False

    @property
    def is_croppable(self) -> bool:
        return False

    @property
    def is_initialized(self) -> bool:
        return self.decode.length > 0

    @property
    def is_sliding(self) -> list[bool]:
        return []

    @property
    def is_linear(self) -> list[bool]:
        return []

    @property
    def is_dummy(self) -> list[bool]:
        return []


def _refuse_left_padding(attention_mask: Tensor | None) -> None:
    """A causal LM reads right padding as it is (the real positions come first); a mask with a
    real token after a padded one (left padding, or tokens appended after right padding) is
    refused, since butcherflow's positions count from the first column."""
    if attention_mask is None or bool(attention_mask.all()):
        return
    mask = attention_mask.bool()
    real_after_pad = (mask[:, 1:] & ~mask[:, :-1]).any(dim=1)
    if bool(real_after_pad.any()):
        rows = real_after_pad.nonzero().flatten().tolist()
        raise DeclarationError(
            "a butcherflow language model counts positions from the first column: a real token "
            "after padding would sit at the wrong position",
            key="attention_mask",
            value=f"rows {rows}",
            valid="prompts of one length, or padding on the right (tokenizer.padding_side = "
            "'right') for scoring; generate prompts of different lengths one by one",
        )


class ButcherflowPreTrainedModel(PreTrainedModel):
    """What both exported models share: the config class, the butcherflow model built from the
    config's recipe (`butcherflow_model`: `LanguageModel` or `Seq2Seq`), its token embedding
    as the input embeddings, no weight initialisation of their own (every weight is in the
    folder; butcherflow initialised them when it trained)."""

    config_class = ButcherflowConfig
    base_model_prefix = "model"
    main_input_name = "input_ids"
    _supports_cache_class = True
    butcherflow_model: type[LanguageModel] | type[Seq2Seq]

    def __init__(self, config: ButcherflowConfig) -> None:
        super().__init__(config)
        self.model = self.butcherflow_model(
            config.butcherflow_recipe(), config.vocab_size, pad_index=config.pad_token_id
        )
        self.post_init()

    def get_input_embeddings(self) -> nn.Module:
        return self.model.embedding.tokens

    def get_output_embeddings(self) -> None:
        return None  # the output projection is the input embedding (no separate head)

    def _init_weights(self, module: nn.Module) -> None:
        """Weights come from the exported folder; a freshly built model keeps butcherflow's own
        initialisation (the constructors of its modules)."""

    @classmethod
    def _supports_default_dynamic_cache(cls) -> bool:
        return False  # the cache is a ButcherflowCache, made in prepare_inputs_for_generation

    def _cache_for(self, use_cache: bool | None, cache: Cache | None) -> ButcherflowCache | None:
        """The cache a step uses: the one given, else a new one when caching is on and every
        block decodes incrementally."""
        if cache is not None:
            if not isinstance(cache, ButcherflowCache):
                raise DeclarationError(
                    f"a butcherflow model decodes with its own cache, not a {type(cache).__name__}",
                    key="cache",
                    valid="leave `cache` out (generate makes a ButcherflowCache), or "
                    "use_cache=False",
                )
            return cache
        wanted = getattr(self.config, "use_cache", True) if use_cache is None else use_cache
        return ButcherflowCache() if wanted and self.model.supports_cache else None


class ButcherflowForCausalLM(ButcherflowPreTrainedModel, GenerationMixin):
    """A butcherflow `LanguageModel` behind transformers' causal-LM interface.

    `forward(input_ids)` returns butcherflow's logits `(batch, length, vocab)`; with `labels`,
    the mean next-token cross-entropy over the non-pad labels (shifted inside, as transformers'
    causal LMs do).
    """

    butcherflow_model = LanguageModel

    def prepare_inputs_for_generation(
        self,
        input_ids: Tensor,
        cache: Cache | None = None,
        attention_mask: Tensor | None = None,
        use_cache: bool | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        cache = self._cache_for(use_cache, cache)
        if cache is not None and cache.get_seq_length():
            input_ids = input_ids[:, cache.get_seq_length() :]
        return {"input_ids": input_ids, "cache": cache, "attention_mask": attention_mask}

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Tensor | None = None,
        cache: ButcherflowCache | None = None,
        labels: Tensor | None = None,
        use_cache: bool | None = None,
        **kwargs: Any,
    ) -> CausalLMOutput:
        _refuse_left_padding(attention_mask)
        logits = self.model(input_ids, None if cache is None else cache.decode)
        loss = None
        if labels is not None:
            loss = nn.functional.cross_entropy(
                logits[:, :-1].reshape(-1, logits.shape[-1]).float(),
                labels[:, 1:].reshape(-1),
                ignore_index=-100 if bool((labels == -100).any()) else self.config.pad_token_id,
            )
        output = CausalLMOutput(loss=loss, logits=logits)
        if cache is not None:
            output["cache"] = cache
        return output


class _Encoder(nn.Module):
    """The encoder half of an exported `Seq2Seq`, as `generate` calls it (`get_encoder()`); it
    holds the model without registering it (its weights belong to the seq2seq model)."""

    main_input_name = "input_ids"

    def __init__(self, model: Seq2Seq) -> None:
        super().__init__()
        self.__dict__["seq2seq"] = model

    def forward(self, input_ids: Tensor, **kwargs: Any) -> BaseModelOutput:
        memory, _ = self.__dict__["seq2seq"].encode(input_ids)
        return BaseModelOutput(last_hidden_state=memory)


class ButcherflowForSeq2SeqLM(ButcherflowPreTrainedModel, GenerationMixin):
    """A butcherflow `Seq2Seq` (translation) behind transformers' encoder-decoder interface:
    `input_ids` are source ids (no bos, no eos, padded with the pad id), `decoder_input_ids`
    start with bos (`decoder_start_token_id`)."""

    butcherflow_model = Seq2Seq

    def get_encoder(self, modality: str | None = None) -> nn.Module:
        return _Encoder(self.model)

    def prepare_inputs_for_generation(
        self,
        decoder_input_ids: Tensor,
        cache: Cache | None = None,
        attention_mask: Tensor | None = None,
        use_cache: bool | None = None,
        encoder_outputs: BaseModelOutput | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        cache = self._cache_for(use_cache, cache)
        if cache is not None and cache.get_seq_length():
            decoder_input_ids = decoder_input_ids[:, cache.get_seq_length() :]
        return {
            "decoder_input_ids": decoder_input_ids,
            "encoder_outputs": encoder_outputs,
            "attention_mask": attention_mask,
            "cache": cache,
        }

    def forward(
        self,
        input_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        decoder_input_ids: Tensor | None = None,
        encoder_outputs: BaseModelOutput | tuple[Tensor, ...] | None = None,
        cache: ButcherflowCache | None = None,
        labels: Tensor | None = None,
        use_cache: bool | None = None,
        **kwargs: Any,
    ) -> Seq2SeqLMOutput:
        pad = self.config.pad_token_id
        if encoder_outputs is None:
            if input_ids is None:
                raise DeclarationError(
                    "give input_ids (the source) or encoder_outputs", key="input_ids"
                )
            memory, padding = self.model.encode(input_ids)
        else:
            memory = encoder_outputs[0]
            padding = (  # generate's mask is the source's non-pad positions
                ~attention_mask.bool()
                if attention_mask is not None
                else torch.zeros(memory.shape[:2], dtype=torch.bool, device=memory.device)
            )
        if decoder_input_ids is None:
            raise DeclarationError("give decoder_input_ids (bos first)", key="decoder_input_ids")
        logits = self.model.decode(
            decoder_input_ids, memory, padding, None if cache is None else cache.decode
        )
        loss = None
        if labels is not None:
            loss = nn.functional.cross_entropy(
                logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1), ignore_index=pad
            )
        output = Seq2SeqLMOutput(loss=loss, logits=logits, encoder_last_hidden_state=memory)
        if cache is not None:
            output["cache"] = cache
        return output


# the auto classes an exported folder maps (config.json's `auto_map`), per task
AUTO_CLASSES = {
    "language_model": ("AutoModelForCausalLM", ButcherflowForCausalLM),
    "translation": ("AutoModelForSeq2SeqLM", ButcherflowForSeq2SeqLM),
}
