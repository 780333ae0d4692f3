"""Text from a `LanguageModel`: greedy decoding or sampling (temperature, top-k, top-p), through
the same incremental cache as translation.

- A prompt is `[bos] + its subword ids` (what a language model reads in training: `prev_output`
  starts with bos); an empty prompt samples from the start of a sentence.
- Prompts of equal length are decoded as one batch: the prompt runs through the model in one
  call (filling every block's per-stage caches, `DecodeCache`), then one token per step; a row
  leaves the batch at eos or after `max_new_tokens` (`cache.reorder`). Batching never changes
  a greedy output; a sampled one depends on the seed and on the prompts decoded with it.
- `temperature = 0` is greedy (argmax); `temperature > 0` samples from `softmax(logits / T)`
  restricted to the `top_k` most likely tokens (0: all) and then to the smallest set whose
  probability reaches `top_p` (nucleus sampling, Holtzman et al. 2020; 1: all), in that order,
  as Hugging Face's `generate` does. pad and bos are never generated.
- Models with learned positions stop at their last position.
- `compile=True` runs each step through `torch.compile(model)` (the batch axis and the prompt
  length marked dynamic, so steps reuse one graph).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import final

import torch
from torch import Tensor

from ..assemble import LanguageModel
from ..data import Vocabulary
from ..devices import resolve_device
from ..errors import DeclarationError
from ..nn import DecodeCache, LearnedPositions
from .decoding import BOS, DEFAULT_CAPACITY, EOS, cache_wanted, evaluating

MAX_NEW_TOKENS = 50  # tokens generated after each prompt unless told otherwise


@final
@dataclass(frozen=True)
class Sampling:
    """How the next token is chosen (module docstring).

    **Arguments:**

    - `temperature`: 0 for greedy decoding, else the softmax temperature (> 0).
    - `top_k`: sample among the `top_k` most likely tokens (0: no limit); needs `temperature > 0`.
    - `top_p`: sample within the smallest set of probability >= `top_p` (1: no limit), in (0, 1];
      needs `temperature > 0`.
    - `seed`: the sampling generator's seed (None: torch's global generator).
    - `max_new_tokens`: tokens generated after each prompt, eos not counted (>= 1).
    """

    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int | None = None
    max_new_tokens: int = MAX_NEW_TOKENS

    def __post_init__(self) -> None:
        def bad(key: str, value: object, valid: str) -> DeclarationError:
            return DeclarationError(f"invalid {key}", key=key, value=value, valid=valid)

        t, k, p, n = self.temperature, self.top_k, self.top_p, self.max_new_tokens
        if not isinstance(t, (int, float)) or not math.isfinite(t) or t < 0:
            raise bad("temperature", t, "a finite number >= 0 (0: greedy)")
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise bad("top_k", k, "an integer >= 0 (0: no limit)")
        if not isinstance(p, (int, float)) or not 0 < p <= 1:
            raise bad("top_p", p, "a number in (0, 1] (1: no limit)")
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise bad("max_new_tokens", n, "an integer >= 1")
        if t == 0 and (k or p < 1):
            raise DeclarationError(
                "top_k and top_p choose among tokens to sample, but temperature 0 is greedy",
                key="top_k" if k else "top_p",
                value=k or p,
                valid="a temperature > 0 to sample (e.g. 0.8), or leave top_k and top_p out",
            )


def warp(logits: Tensor, sampling: Sampling) -> Tensor:
    """The logits sampling draws from: divided by the temperature, `-inf` outside the `top_k`
    most likely tokens, then outside the nucleus of probability `top_p`.

    **Arguments:**

    - `logits`: `(rows, vocab)` next-token logits, `-inf` where a token may not follow.
    - `sampling`: the rule, with `temperature > 0`.

    **Returns:** `(rows, vocab)` logits.
    """
    logits = logits / sampling.temperature
    if sampling.top_k and sampling.top_k < logits.shape[1]:
        kth = logits.topk(sampling.top_k, dim=1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, -math.inf)
    if sampling.top_p < 1:
        ordered, order = logits.sort(dim=1, descending=True)
        probabilities = ordered.softmax(dim=1)
        before = probabilities.cumsum(dim=1) - probabilities
        # a token stays when the tokens more likely than it sum to less than top_p (the first
        # always does)
        drop = torch.zeros_like(logits, dtype=torch.bool).scatter(
            1, order, before >= sampling.top_p
        )
        logits = logits.masked_fill(drop, -math.inf)
    return logits


def next_tokens(logits: Tensor, sampling: Sampling, generator: torch.Generator | None) -> Tensor:
    """The chosen token of every row: the argmax (temperature 0), else a draw from `warp`.

    **Arguments:**

    - `logits`: `(rows, vocab)` next-token logits, `-inf` where a token may not follow.
    - `sampling`: the rule.
    - `generator`: the random stream (None: torch's global one).

    **Returns:** `(rows,)` LongTensor.
    """
    if sampling.temperature == 0:
        return logits.argmax(dim=1)
    probabilities = warp(logits, sampling).softmax(dim=1)
    return torch.multinomial(probabilities, 1, generator=generator).squeeze(1)


def sample(
    model: LanguageModel,
    prompts: Sequence[Sequence[int]],
    sampling: Sampling | None = None,
    *,
    use_cache: bool = True,
    compile: bool = False,
) -> list[list[int]]:
    """Continue token prompts with a language model.

    **Arguments:**

    - `model`: a `LanguageModel` (in eval mode for the search; its mode is restored).
    - `prompts`: subword ids of each prompt, without bos (an empty one starts a sentence).
    - `sampling`: greedy or sampling (`Sampling()`: greedy, 50 new tokens).
    - `use_cache`: decode incrementally (ignored when `model.supports_cache` is False).
    - `compile`: run each step through `torch.compile(model)`.

    **Returns:** the new token ids of each prompt (no bos, eos or pad), in input order.
    """
    sampling = sampling or Sampling()
    device = next(model.parameters()).device
    generator = None
    if sampling.seed is not None:
        generator = torch.Generator(device=device).manual_seed(sampling.seed)
    positions = model.embedding.positions
    last = positions.max_len if isinstance(positions, LearnedPositions) else None
    groups: dict[int, list[int]] = {}
    for i, prompt in enumerate(prompts):
        groups.setdefault(len(prompt), []).append(i)
    out: list[list[int]] = [[] for _ in prompts]
    step: Callable[..., Tensor] = torch.compile(model) if compile else model
    with evaluating(model):
        for length, rows in sorted(groups.items()):
            budget = sampling.max_new_tokens
            if last is not None:  # positions 0 .. last-1 hold bos, the prompt, the new tokens
                budget = min(budget, last - 1 - length)
                if budget < 1:
                    raise DeclarationError(
                        "prompt too long for the model's learned positions",
                        key="prompt",
                        value=f"{length} tokens",
                        valid=f"at most {last - 2} tokens",
                    )
            tokens = torch.tensor(
                [[BOS, *prompts[i]] for i in rows], dtype=torch.long, device=device
            )
            new = _continue(model, step, tokens, budget, sampling, generator, use_cache, compile)
            for i, ids in zip(rows, new, strict=True):
                out[i] = ids
    return out


def _continue(
    model: LanguageModel,
    step: Callable[..., Tensor],
    tokens: Tensor,
    budget: int,
    sampling: Sampling,
    generator: torch.Generator | None,
    use_cache: bool,
    compile: bool,
) -> list[list[int]]:
    """The new tokens of rows `tokens` `(rows, 1 + prompt)`, all of one length."""
    cache = DecodeCache(DEFAULT_CAPACITY) if cache_wanted(model, use_cache) else None
    live = list(range(tokens.shape[0]))  # the input row of each live row
    out: list[list[int]] = [[] for _ in live]
    new = tokens
    for made in range(budget):
        if compile:
            torch._dynamo.maybe_mark_dynamic(new, 0)
            torch._dynamo.maybe_mark_dynamic(new, 1)
        if cache is None:
            logits = step(tokens)[:, -1]
        else:
            cache.reserve(tokens.shape[1])  # a compiled step cannot grow the cache
            logits = step(new, cache)[:, -1]
        logits = logits.float().masked_fill(logits.float().isnan(), -math.inf)
        logits[:, model.pad_index] = -math.inf
        logits[:, BOS] = -math.inf
        chosen = next_tokens(logits, sampling, generator)
        for r, token in enumerate(chosen.tolist()):
            if token != EOS:
                out[live[r]].append(token)
        keep = chosen.ne(EOS).nonzero().flatten()
        if made + 1 == budget or len(keep) == 0:
            break
        if len(keep) < len(live):
            live = [live[r] for r in keep.tolist()]
            tokens, chosen = tokens[keep], chosen[keep]
            if cache is not None:
                cache.reorder(keep)
        tokens = torch.cat([tokens, chosen.unsqueeze(1)], dim=1)
        new = chosen.unsqueeze(1).contiguous()
    return out


def complete(
    model: LanguageModel,
    vocab: Vocabulary,
    prompts: Sequence[str],
    sampling: Sampling | None = None,
    *,
    device: str | torch.device = "cpu",
    use_cache: bool = True,
    compile: bool = False,
) -> list[str]:
    """Continue text prompts with a trained language model (`sample` on their subword ids).

    **Arguments:**

    - `model`: a trained `LanguageModel` (moved to `device`).
    - `vocab`: its `Vocabulary`.
    - `prompts`: the texts to continue; `""` generates a sentence from nothing.
    - `sampling`, `use_cache`, `compile`: as in `sample`.
    - `device`: `"cpu"`, `"cuda"`, `"cuda:N"` or `"auto"`.

    **Returns:** each prompt followed by its continuation, detokenized together, in input order.
    """
    target = resolve_device(device)
    model.to(target)
    encoded = [vocab.encode(prompt.strip()) for prompt in prompts]
    new = sample(model, encoded, sampling, use_cache=use_cache, compile=compile)
    return [vocab.decode(ids + more) for ids, more in zip(encoded, new, strict=True)]


__all__ = ["MAX_NEW_TOKENS", "Sampling", "complete", "next_tokens", "sample", "warp"]
