"""The FLOPs `bench train` counts: the model's, from its compiled blocks.

A block's count (`CompiledBlock.flops`: linear layers and attention's quadratic part, each field
call and combination term) for the non-pad tokens of each batch at that batch's lengths, plus the
tied output projection (2·d_model·vocab per target token); a training step is 3× the forward (the
backward computes two products per forward one). `torch.nn.Transformer` is counted as the
pre-norm Transformer it computes (`transformer_twin`). Padding, norms, softmax, the embeddings and
FLOATER's position solves are not counted, so MFU slightly understates the work done; attention's
quadratic part is counted at the batch's padded length, which bucketed batches lengthen (a few
percent of a block's FLOPs at the Bible's lengths).
"""

from __future__ import annotations

import dataclasses

import torch
from torch import nn

from ..assemble import LanguageModel, Recipe, Seq2Seq
from ..assemble.recipe import Side
from ..compiler import CompiledBlock
from ..data import Batch


def forward_flops(model: Seq2Seq | LanguageModel, batch: Batch, pad: int) -> int | None:
    """Forward FLOPs of `model` on `batch` (see the module docstring for what is counted).

    **Returns:** the count, or None when a block's count is chosen at run time.
    """
    src_len, tgt_len = batch.src.shape[1], batch.prev_output.shape[1]
    output = 2 * int(model.embedding.tokens.weight.shape[1]) * model.embedding.tokens.num_embeddings
    if isinstance(model, LanguageModel):  # the target side alone, causal self-attention
        own = [block.flops(tgt_len, tgt_len) for block in _blocks(model.blocks)]
        if any(c is None for c in own):
            return None
        return (sum(c[0] for c in own if c is not None) + output) * batch.ntokens
    counts = [block.flops(src_len, src_len) for block in _blocks(model.encoder)]
    counts += [block.flops(tgt_len, src_len) for block in _blocks(model.decoder)]
    if any(c is None for c in counts):
        return None
    src_tokens = int(batch.src.ne(pad).sum())
    n_encoder = len(model.encoder)
    per_source = sum(sum(c) for c in counts[:n_encoder] if c is not None)
    per_source += sum(c[1] for c in counts[n_encoder:] if c is not None)  # memory keys/values
    per_target = sum(c[0] for c in counts[n_encoder:] if c is not None)
    per_target += output
    return per_source * src_tokens + per_target * batch.ntokens


def _blocks(side: nn.ModuleList) -> list[CompiledBlock]:
    blocks = [block for block in side if isinstance(block, CompiledBlock)]
    assert len(blocks) == len(side)  # models are made of compiled blocks
    return blocks


def transformer_twin(recipe: Recipe, vocab_size: int, pad: int) -> Seq2Seq:
    """The pre-norm Transformer (Euler blocks) at `recipe`'s sizes, on the meta device: what
    `torch.nn.Transformer(norm_first=True)` computes, to count its FLOPs by the same rule."""
    assert recipe.encoder is not None and recipe.decoder is not None
    twin = dataclasses.replace(
        recipe,
        encoder=Side(recipe.encoder.layers, "euler", field="san+ffn"),
        decoder=Side(recipe.decoder.layers, "euler", field="san+ca+ffn"),
        position="sinusoidal",
        floater=None,
        param_budget=None,
    )
    with torch.device("meta"):
        return Seq2Seq(twin, vocab_size, pad_index=pad)


__all__ = ["forward_flops", "transformer_twin"]
