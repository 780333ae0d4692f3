"""Encoder-decoder and decoder-only models assembled from compiled blocks.

Embeddings are shared between source, target and the output projection (a joint subword
vocabulary, as in the papers' setups); positions are computed from each real token's index, so
padding never shifts them; every stack ends with a LayerNorm (pre-norm blocks need it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from ..analysis import trained_order
from ..compiler import (
    CompiledBlock,
    compile,
    compile_stack,
    resolve,
    spans_layers,
    stack_construct,
)
from ..errors import DeclarationError, UnknownNameError
from ..methods import catalog
from ..methods.base import check_flag
from ..nn import Context, DecodeCache, token_positions
from .recipe import Recipe, Side, load_recipe

CROSS_ATTENDING = ("ca", "san+ca", "san+ca+ffn")


def cross_attends(side: Side) -> bool:
    """Whether a side's fields attend to an encoder's memory (a translation decoder)."""
    names = [side.field] if side.field is not None else list((side.fields or {}).values())
    return any(name in CROSS_ATTENDING for name in names)


def build_side(
    side: Side,
    sizes: Mapping[str, Any],
    *,
    where: str,
    causal: bool,
    source: str | None = None,
) -> nn.ModuleList:
    """The blocks of one side: `layers` compiled blocks, or one stack for multistep/DLCL.

    Compile options and sizes that do not fit the method are refused by the compiler; the error
    names the recipe file `source` and the recipe's key (`encoder.share`, `sizes.n_heads`), or,
    for an entry of the method itself (a V that is not preconsistent), the method's file.
    """
    options = dict(side.options)
    share_gate = check_flag(options.pop("share_gate", False), f"{where}.share_gate", source)
    fields = {"field": side.field} if side.field is not None else {"fields": side.fields}
    method = _named(side.method, f"{where}.method", source)
    if isinstance(options.get("starter"), str):
        _named(options["starter"], f"{where}.starter", source)
    try:
        if spans_layers(method):
            if share_gate:
                raise DeclarationError(
                    f"share_gate shares the stage gate of blocks; a {method.family} stack has none",
                    key="share_gate",
                    value=share_gate,
                    valid="leave share_gate out",
                )
            if side.field is None:
                raise DeclarationError(
                    "a multistep stack takes one field for every layer",
                    key="field",
                    value=side.fields,
                    valid="field = 'san+ffn'",
                )
            stack = compile_stack(
                method, [side.field] * side.layers, **sizes, causal=causal, **options
            )
            return nn.ModuleList([stack])
        blocks: list[CompiledBlock] = []
        for _ in range(side.layers):
            if share_gate and blocks:
                options["gate"] = _gate(blocks[0])
            blocks.append(compile(method, **fields, **sizes, causal=causal, **options))
        return nn.ModuleList(blocks)
    except DeclarationError as error:
        if error.source is not None:  # a method file's own error names that file
            raise
        key, where_from = error.key, source
        if (key or "").split(".")[0] in {*side.options, "field", "fields", "method"}:
            key = f"{where}.{key}"  # fields.A: the recipe's operator, not the method's
        elif key in sizes:
            key = f"sizes.{key}"
        else:  # an entry of the method itself (its V, A, ...): its file, not the recipe's
            where_from = getattr(method, "source", None)
            if where_from is None:
                raise
        raise DeclarationError(
            error.problem, key=key, value=error.value, valid=error.valid, source=where_from
        ) from None


def _named(reference: Any, key: str, source: str | None) -> Any:
    """The declaration a recipe's `key` names; a name the catalog lacks names the key and file."""
    try:
        return resolve(reference)
    except UnknownNameError as error:
        raise DeclarationError(str(error), key=key, value=reference, source=source) from None


def _gate(block: CompiledBlock) -> nn.Module:
    """The stage gate of a side's first block, which `share_gate` gives to the others."""
    try:
        return block.program.get_submodule("gate")
    except AttributeError:
        raise DeclarationError(
            "share_gate shares a per-token stage gate; these blocks have none",
            key="share_gate",
            value=True,
            valid="coefficients = 'gated' or 'tanh' (or a declaration with gates), or leave "
            "share_gate out",
        ) from None


def side_order(side: Side) -> str:
    """The proved order of one side's blocks as they train (`analysis.trained_order`): of the
    declaration the compiled blocks compute, its parameters and `coefficients` included."""
    construct = stack_construct(side.method)
    if construct is not None:
        return construct.trained_order
    method = catalog.resolve(side.method)
    coefficients = str(side.options.get("coefficients") or "exact")
    return trained_order(method, coefficients, str(side.options.get("stage") or "branch"))


class _Embedding(nn.Module):
    """Token embedding · √d + positions, then dropout."""

    def __init__(self, recipe: Recipe, vocab_size: int, pad_index: int) -> None:
        super().__init__()
        d = int(recipe.sizes["d_model"])
        self.tokens = nn.Embedding(vocab_size, d, padding_idx=pad_index)
        nn.init.normal_(self.tokens.weight, std=d**-0.5)
        with torch.no_grad():
            self.tokens.weight[pad_index].zero_()
        self.positions: nn.Module = recipe.positions.encoding(recipe, d)
        self.scale = math.sqrt(d) if recipe.scale_embeddings else 1.0
        self.dropout = nn.Dropout(float(recipe.sizes["dropout"]))
        self.pad_index = pad_index

    def forward(self, tokens: Tensor, padding: Tensor | None, offset: int | Tensor = 0) -> Tensor:
        """`offset`: the first token's position, an int or a 0-dim tensor (`DecodeCache.position`:
        a compiled decoding step then reads no Python number that changes between steps)."""
        positions = (
            token_positions(padding, offset)
            if padding is not None
            else (torch.arange(tokens.shape[1], device=tokens.device) + offset).expand(
                tokens.shape[0], -1
            )
        )
        x = self.tokens(tokens) * self.scale + self.positions(positions).to(self.tokens.weight)
        return self.dropout(x)


def _run(blocks: nn.ModuleList, x: Tensor, ctx: Context) -> Tensor:
    for block in blocks:
        x = block(x, ctx=ctx, check=False)
    return x


class Seq2Seq(nn.Module):
    """An encoder-decoder Transformer whose layers are compiled integrators.

    **Arguments:**

    - `recipe`: a `Recipe`, a built-in recipe name or a recipe file.
    - `vocab_size`: size of the joint source/target vocabulary.
    - `pad_index`: the padding token.

    `forward(src, tgt)` maps `(batch, src_len)` and `(batch, tgt_len)` token ids to logits
    `(batch, tgt_len, vocab_size)`; `encode` and `decode` (with a `DecodeCache`) serve
    incremental generation.
    """

    def __init__(self, recipe: Recipe | str | Path, vocab_size: int, pad_index: int = 0) -> None:
        super().__init__()
        recipe = load_recipe(recipe)
        if recipe.encoder is None or recipe.decoder is None:
            raise DeclarationError(
                "a Seq2Seq recipe needs [encoder] and [decoder] tables",
                valid="a recipe with one side is a language model (--task language_model)",
                source=recipe.source,
            )
        if cross_attends(recipe.encoder):
            raise DeclarationError(
                "the encoder's fields cross-attend, but only the decoder has an encoder to read",
                key="encoder.field" if recipe.encoder.field is not None else "encoder.fields",
                value=recipe.encoder.field or recipe.encoder.fields,
                valid="a field without cross-attention: 'san+ffn', 'san' or 'ffn'",
                source=recipe.source,
            )
        if not cross_attends(recipe.decoder):
            raise DeclarationError(
                "the decoder's fields never attend to the encoder",
                key="decoder.field",
                value=recipe.decoder.field or recipe.decoder.fields,
                valid="a field with cross-attention: 'san+ca+ffn', 'san+ca' or 'ca'",
                source=recipe.source,
            )
        self.recipe = recipe
        sizes = {
            k: recipe.sizes[k] for k in ("d_model", "n_heads", "d_ffn", "dropout", "activation")
        }
        self.embedding = _Embedding(recipe, vocab_size, pad_index)
        self.encoder = build_side(
            recipe.encoder, sizes, where="encoder", causal=False, source=recipe.source
        )
        self.decoder = build_side(
            recipe.decoder, sizes, where="decoder", causal=True, source=recipe.source
        )
        self.floater = recipe.positions.injection(recipe, self.encoder, self.decoder)
        d = int(sizes["d_model"])
        self.encoder_norm = nn.LayerNorm(d)
        self.decoder_norm = nn.LayerNorm(d)
        self.pad_index = pad_index
        self.vocab_size = vocab_size

    @classmethod
    def from_recipe(
        cls, recipe: Recipe | str | Path, vocab_size: int, pad_index: int = 0
    ) -> Seq2Seq:
        """Build from a recipe, applying its `param_budget` rule when it has one."""
        return cls(apply_param_budget(load_recipe(recipe), vocab_size), vocab_size, pad_index)

    @property
    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def sides(self) -> dict[str, tuple[Side, nn.ModuleList]]:
        """The recipe's sides with the blocks built from them: encoder, then decoder."""
        assert self.recipe.encoder is not None and self.recipe.decoder is not None
        return {
            "encoder": (self.recipe.encoder, self.encoder),
            "decoder": (self.recipe.decoder, self.decoder),
        }

    @property
    def supports_cache(self) -> bool:
        """`decode` accepts a `DecodeCache`: every decoder block decodes incrementally (blocks
        with an adaptive ODE solver do not; decode them without a cache)."""
        return all(getattr(block, "incremental", True) for block in self.decoder)

    def encode(self, src: Tensor) -> tuple[Tensor, Tensor]:
        """**Returns:** `(memory (batch, src_len, d_model), src padding mask (batch, src_len))`."""
        padding = src.eq(self.pad_index)
        bias = None if self.floater is None else self.floater.encoder_bias(padding)
        ctx = Context(key_padding_mask=padding, causal=False, attention_bias=bias)
        x = _run(self.encoder, self.embedding(src, padding), ctx)
        return self.encoder_norm(x), padding

    def decode(
        self,
        tgt: Tensor,
        memory: Tensor,
        memory_padding: Tensor,
        cache: DecodeCache | None = None,
        *,
        last_only: bool = False,
    ) -> Tensor:
        """Logits for target tokens `(batch, new)`. With a cache, `tgt` holds only the new tokens
        (the cache is advanced here) and the result equals the full causal forward.
        `last_only` projects only the last position onto the vocabulary (`(batch, 1, vocab)`):
        all that search needs when it recomputes the whole prefix."""
        bias = None
        if self.floater is not None:  # cross k/v biases only while the cross keys are computed
            offset = 0 if cache is None else cache.length
            bias = self.floater.decoder_bias(
                tgt.shape[1], offset, memory_padding, cross=offset == 0
            )
        ctx = Context(
            causal=True,
            memory=memory,
            memory_key_padding_mask=memory_padding,
            cache=cache,
            attention_bias=bias,
        )
        # the position as a device tensor: a compiled step reads no number that changes
        start = 0 if cache is None else cache.position(tgt.device)
        x = _run(self.decoder, self.embedding(tgt, None, start), ctx)
        if cache is not None:
            cache.advance(tgt.shape[1])
        if last_only:
            x = x[:, -1:]
        return self.decoder_norm(x) @ self.embedding.tokens.weight.T

    def forward(self, src: Tensor, tgt: Tensor) -> Tensor:
        if self.floater is None:
            memory, padding = self.encode(src)
            return self.decode(tgt, memory, padding)
        with self.floater.sharing():  # the source flow is solved once for encode and decode
            memory, padding = self.encode(src)
            return self.decode(tgt, memory, padding)


def language_model_side(recipe: Recipe) -> str:
    """The side a `LanguageModel` of `recipe` is built from: `"decoder"` when that side does
    not cross-attend (a decoder-only recipe, `models/lm-*.toml`), otherwise `"encoder"`, made
    causal (so every translation recipe also defines a language model)."""
    if recipe.decoder is not None and not cross_attends(recipe.decoder):
        return "decoder"
    if recipe.encoder is None or cross_attends(recipe.encoder):
        raise DeclarationError(
            "no side of this recipe works without an encoder",
            key="decoder",
            source=recipe.source,
            valid="a [decoder] with field 'san+ffn' or an [encoder]",
        )
    return "encoder"


def model_class(recipe: Recipe) -> type[Seq2Seq] | type[LanguageModel]:
    """The model a recipe declares: a `Seq2Seq` when it has both sides, else (a decoder-only
    recipe) a `LanguageModel`."""
    return Seq2Seq if recipe.encoder is not None and recipe.decoder is not None else LanguageModel


class LanguageModel(nn.Module):
    """A decoder-only model: causal blocks over one token stream, tied output projection.

    It is built from the side `language_model_side` names: a decoder-only recipe's `[decoder]`,
    or a translation recipe's `[encoder]` made causal.
    """

    def __init__(self, recipe: Recipe | str | Path, vocab_size: int, pad_index: int = 0) -> None:
        super().__init__()
        recipe = load_recipe(recipe)
        where = language_model_side(recipe)
        side = recipe.decoder if where == "decoder" else recipe.encoder
        assert side is not None
        self.recipe = recipe
        sizes = {
            k: recipe.sizes[k] for k in ("d_model", "n_heads", "d_ffn", "dropout", "activation")
        }
        self.embedding = _Embedding(recipe, vocab_size, pad_index)
        self.side = where  # the recipe's side these blocks are built from
        self.blocks = build_side(side, sizes, where=where, causal=True, source=recipe.source)
        self.floater = recipe.positions.injection(recipe, None, self.blocks)
        self.norm = nn.LayerNorm(int(sizes["d_model"]))
        self.pad_index = pad_index

    @property
    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    @classmethod
    def from_recipe(
        cls, recipe: Recipe | str | Path, vocab_size: int, pad_index: int = 0
    ) -> LanguageModel:
        """Build from a recipe, applying its `param_budget` rule when it has one (a decoder-only
        recipe sized to another's parameter count, as `models/lm-macaron.toml`)."""
        return cls(apply_param_budget(load_recipe(recipe), vocab_size), vocab_size, pad_index)

    def sides(self) -> dict[str, tuple[Side, nn.ModuleList]]:
        """The recipe's side these blocks are built from (`self.side`), with the blocks."""
        side: Side = getattr(self.recipe, self.side)
        return {self.side: (side, self.blocks)}

    @property
    def supports_cache(self) -> bool:
        """`forward` accepts a `DecodeCache`: every block decodes incrementally."""
        return all(getattr(block, "incremental", True) for block in self.blocks)

    def forward(self, tokens: Tensor, cache: DecodeCache | None = None) -> Tensor:
        """`(batch, length)` ids -> logits `(batch, length, vocab)`; with a cache, only the new
        tokens are given and the cache is advanced."""
        bias = None
        if self.floater is not None:
            offset = 0 if cache is None else cache.length
            bias = self.floater.decoder_bias(tokens.shape[1], offset)
        ctx = Context(causal=True, cache=cache, attention_bias=bias)
        start = 0 if cache is None else cache.position(tokens.device)
        x = _run(self.blocks, self.embedding(tokens, None, start), ctx)
        if cache is not None:
            cache.advance(tokens.shape[1])
        return self.norm(x) @ self.embedding.tokens.weight.T


def count_parameters(recipe: Recipe, vocab_size: int) -> int:
    """Parameters of the recipe's model (`model_class`) at `vocab_size`, counted on the meta
    device (no memory)."""
    with torch.device("meta"):
        return model_class(recipe)(recipe, vocab_size).num_parameters


def apply_param_budget(recipe: Recipe, vocab_size: int, budget: Recipe | None = None) -> Recipe:
    """Size d_ffn so the model has as many parameters as the recipe named in `param_budget`
    (each counted as the model it declares, `model_class`).

    The count is affine in d_ffn, so two counts give the exact solution (rounded to the nearest
    multiple of 8). The budget and the result are recorded in the returned recipe's description.
    `budget` replaces the named recipe (training passes it resized by the same size overrides).
    """
    if recipe.param_budget is None:
        return recipe
    from dataclasses import replace

    target = count_parameters(budget or load_recipe(recipe.param_budget), vocab_size)
    low, high = 8, 16
    count_low = count_parameters(replace(recipe, sizes={**recipe.sizes, "d_ffn": low}), vocab_size)
    count_high = count_parameters(
        replace(recipe, sizes={**recipe.sizes, "d_ffn": high}), vocab_size
    )
    per_unit = (count_high - count_low) / (high - low)
    d_ffn = max(8, round((low + (target - count_low) / per_unit) / 8) * 8)
    sized = replace(recipe, sizes={**recipe.sizes, "d_ffn": d_ffn})
    got = count_parameters(sized, vocab_size)
    note = (
        f"param_budget: d_ffn = {d_ffn} gives {got:,} parameters; "
        f"{recipe.param_budget} has {target:,} (vocabulary {vocab_size:,})"
    )
    return replace(sized, description=(recipe.description + "\n" + note).strip())
