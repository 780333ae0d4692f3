"""What every decoder of a `Seq2Seq` shares (beam search, greedy, sampling): the special ids and
fairseq's generation defaults, the option checks, the length limits, and the next-token
log-probabilities over an incremental `DecodeCache` (`Decoder`)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import Tensor

from ..assemble import Seq2Seq
from ..errors import DeclarationError
from ..nn import DecodeCache, LearnedPositions

BOS, EOS = 2, 3  # fixed special ids of the pipeline (pad is the model's pad_index, 0)
DEFAULT_CAPACITY = 64  # positions a DecodeCache allocates at first (sentences are rarely longer)
# The generation defaults, fairseq's (`fairseq-generate`): spelled here once, for every function,
# command and report that decodes.
BEAM, LENPEN, MAX_LEN_A, MAX_LEN_B, MIN_LEN = 5, 1.0, 0.0, 200, 1


def check_options(
    *,
    beam: int = BEAM,
    lenpen: float = LENPEN,
    max_len_a: float = MAX_LEN_A,
    max_len_b: int = MAX_LEN_B,
    min_len: int = MIN_LEN,
) -> None:
    """Raise a `DeclarationError` naming the option for any invalid search setting."""

    def bad(key: str, value: object, valid: str) -> DeclarationError:
        return DeclarationError(f"invalid {key}", key=key, value=value, valid=valid)

    if isinstance(beam, bool) or not isinstance(beam, int) or beam < 1:
        raise bad("beam", beam, "an integer >= 1")
    if not isinstance(lenpen, (int, float)) or not math.isfinite(lenpen):
        raise bad("lenpen", lenpen, "a finite number (fairseq's default is 1.0)")
    if not isinstance(max_len_a, (int, float)) or not math.isfinite(max_len_a) or max_len_a < 0:
        raise bad("max_len_a", max_len_a, "a finite number >= 0")
    if isinstance(max_len_b, bool) or not isinstance(max_len_b, int) or max_len_b < 0:
        raise bad("max_len_b", max_len_b, "an integer >= 0")
    if isinstance(min_len, bool) or not isinstance(min_len, int) or min_len < 0:
        raise bad("min_len", min_len, "an integer >= 0")


def max_lengths(model: Seq2Seq, src: Tensor, max_len_a: float, max_len_b: int) -> Tensor:
    """`int(max_len_a * src_len + max_len_b)` per row, capped by learned positions.

    **Arguments:**

    - `model`: the model (its `pad_index`, and its positions' `max_len` when they are learned).
    - `src`: `(batch, src_len)` source ids, padded with `model.pad_index`.
    - `max_len_a`, `max_len_b`: fairseq's options.

    **Returns:** `(batch,)` LongTensor on `src.device`: the most output tokens, eos not counted.
    """
    lengths = src.ne(model.pad_index).sum(dim=1).tolist()
    # Python floats, as fairseq's int(a * len + b) (float64 is missing on some devices)
    limits = [int(max_len_a * length + max_len_b) for length in lengths]
    limit = torch.tensor(limits, dtype=torch.long, device=src.device)
    positions = getattr(getattr(model, "embedding", None), "positions", None)
    if isinstance(positions, LearnedPositions):  # decoder inputs are bos + tokens: one less
        limit = limit.clamp(max=positions.max_len - 1)
    return limit


@contextmanager
def evaluating(model: torch.nn.Module) -> Iterator[None]:
    """Dropout off and no autograd during decoding; the model's mode is restored afterwards."""
    training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            yield
    finally:
        model.train(training)


def encode(model: Seq2Seq, src: Tensor) -> tuple[Tensor, Tensor]:
    if src.dim() != 2 or src.dtype != torch.long:
        raise DeclarationError(
            "the source must be a (batch, src_len) LongTensor",
            key="src",
            value=f"{tuple(src.shape)} {src.dtype}",
        )
    empty = src.ne(model.pad_index).sum(dim=1).eq(0).nonzero().flatten().tolist()
    if empty:
        raise DeclarationError(
            "a source row holds only padding",
            key="src",
            value=f"rows {empty}",
            valid="every row needs at least one token (translate() maps empty lines to '')",
        )
    return model.encode(src)


class Decoder:
    """Next-token log-probabilities for the last position of every row, with or without cache.

    With `compile`, each step runs `torch.compile(model.decode)`. The batch and source sizes are
    marked dynamic (sentences leave the batch, batches differ in length), so one model needs
    about three graphs (the first step, which registers the cache's slots; the later steps; the
    time axis once it doubled), reused by later searches while dynamo's guards hold. Dynamo
    keeps at most `torch._dynamo.config.recompile_limit` graphs of `decode` for all models of a
    process together and runs eagerly beyond that: a process that compiles the decoding of
    many models calls `torch.compiler.reset()` between them.
    """

    def __init__(
        self,
        model: Seq2Seq,
        memory: Tensor,
        padding: Tensor,
        use_cache: bool,
        compile: bool = False,
    ) -> None:
        self.model = model
        self.memory = memory
        self.padding = padding
        # one capacity for every search (a compiled graph is specialised to it); more doubles it
        self.cache = DecodeCache(DEFAULT_CAPACITY) if use_cache else None
        self.compile = compile
        self.decode = torch.compile(model.decode) if compile else model.decode

    def logits(self, tokens: Tensor) -> Tensor:
        """**Arguments:** `tokens` `(rows, step + 1)`. **Returns:** `(rows, vocab)` logits."""
        memory, padding = self.memory, self.padding
        # contiguous: the same strides at every step (a stride change recompiles)
        new = tokens if self.cache is None else tokens[:, -1:].contiguous()
        if self.compile:
            for tensor in (new, memory, padding):
                torch._dynamo.maybe_mark_dynamic(tensor, 0)  # rows
            for tensor in (memory, padding) if self.cache else (new, memory, padding):
                torch._dynamo.maybe_mark_dynamic(tensor, 1)  # source length, prefix length
        if self.cache is None:
            out = self.decode(new, memory, padding, last_only=True)
        else:
            self.cache.reserve(tokens.shape[1])  # a compiled step cannot grow the cache
            out = self.decode(new, memory, padding, self.cache)
        logits = out[:, -1]
        # half-precision logits (autocast on GPU) are normalised in float32
        return logits.float() if logits.dtype in (torch.float16, torch.bfloat16) else logits

    def select(self, rows: Tensor, memory_rows: Tensor | None) -> None:
        """Keep `rows` of the cache and, when sentences left the batch, `memory_rows`."""
        if self.cache is not None:
            self.cache.reorder(rows)
        if memory_rows is not None:
            self.memory = self.memory.index_select(0, memory_rows)
            self.padding = self.padding.index_select(0, memory_rows)


def mask_tokens(logits: Tensor, step: int, limit: Tensor, min_len: int, pad: int) -> Tensor:
    """-inf where a token may not follow: pad and bos always; eos before `min_len`; anything but
    eos once a row reached its maximum length `limit` `(rows,)`."""
    logits = logits.masked_fill(logits.isnan(), -math.inf)  # a dead row's all -inf logits
    logits[:, pad] = -math.inf
    logits[:, BOS] = -math.inf
    at_limit = limit.le(step)
    eos = logits[:, EOS].clone()
    if step < min_len:
        eos = eos.masked_fill(~at_limit, -math.inf)
    logits.masked_fill_(at_limit.unsqueeze(1), -math.inf)
    logits[:, EOS] = eos
    return logits


def cache_wanted(model: torch.nn.Module, use_cache: bool) -> bool:
    """Decode with a `DecodeCache`: asked for, and every block of `model` decodes incrementally."""
    return use_cache and bool(getattr(model, "supports_cache", True))


__all__ = [
    "BEAM",
    "BOS",
    "DEFAULT_CAPACITY",
    "EOS",
    "LENPEN",
    "MAX_LEN_A",
    "MAX_LEN_B",
    "MIN_LEN",
    "Decoder",
    "cache_wanted",
    "check_options",
    "encode",
    "evaluating",
    "mask_tokens",
    "max_lengths",
]
