"""Batched beam search and greedy decoding for `Seq2Seq` models, with incremental caches.

The search follows fairseq's `SequenceGenerator` (fairseq ≥ 0.10, `sequence_generator.py`):

- Every sentence has `beam` live hypotheses; one `DecodeCache` holds the keys/values of all
  `batch × beam` rows (every self-attention call of every block, so each stage of a Runge-Kutta
  or splitting decoder block keeps its own cache) and is re-indexed with `cache.reorder(rows)`
  after each step, when hypotheses are re-ranked and finished sentences leave the batch.
- Each step ranks the `2 × beam` best continuations by cumulative log-probability (the first step
  expands only the first row, as all rows are equal); an end-of-sentence continuation is finished
  only if it ranks among the first `beam`, and the first `beam` others stay live.
- A finished hypothesis scores `logprob / length ** lenpen`, where `logprob` sums the log-
  probabilities of its tokens *and* of the eos, and `length` counts the tokens *plus the eos*
  (fairseq's `eos_scores /= (step + 1) ** len_penalty`, at step = number of tokens before the eos).
- The maximum output length of a sentence is `int(max_len_a * src_len + max_len_b)` tokens, eos
  not counted; at that length only eos may follow. `src_len` is the sentence's own number of
  source tokens (fairseq uses the padded width of the batch, so its outputs depend on the
  batching; here they do not). Models with learned positions cap it at their last position.
- `min_len` forbids eos before that many tokens (fairseq's `--min-len`, default 1: no empty
  output); the maximum length wins when the two disagree.
- Stopping (`early_stop=True`, fairseq's criterion and the default): a sentence stops as soon as
  it has `beam` finished hypotheses, even if a live one might still end with a better
  length-normalised score. `early_stop=False` (old fairseq's `--no-early-stop`) goes on until no
  live hypothesis can beat the worst of the `beam` best finished ones: log-probabilities are
  ≤ 0, so a live hypothesis with cumulative `s` can at best end with `s / L ** lenpen`, where `L`
  is the longest allowed length (`lenpen > 0`) or its next length (`lenpen ≤ 0`).
- pad and bos are never generated.

`use_cache=False` recomputes the whole prefix at every step: the baseline of `butcherflow bench
beam`, and the path taken for models with `supports_cache = False`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import final

import torch
from torch import Tensor

from ..assemble import Seq2Seq
from ..errors import ButcherflowError
from .decoding import (
    BEAM,
    BOS,
    EOS,
    LENPEN,
    MAX_LEN_A,
    MAX_LEN_B,
    MIN_LEN,
    Decoder,
    cache_wanted,
    check_options,
    encode,
    evaluating,
    mask_tokens,
    max_lengths,
)


@final
@dataclass(frozen=True)
class Hypothesis:
    """A finished hypothesis.

    **Arguments:**

    - `tokens`: the output token ids, without bos, eos or pad.
    - `score`: `logprob / (len(tokens) + 1) ** lenpen`, the value hypotheses are ranked by.
    - `logprob`: the sum of the log-probabilities of the tokens and of the final eos.
    """

    tokens: tuple[int, ...]
    score: float
    logprob: float


def length_penalized(logprob: float, length: int, lenpen: float) -> float:
    """fairseq's normalised score: `logprob / length ** lenpen`.

    **Arguments:**

    - `logprob`: sum of the log-probabilities of a hypothesis, eos included.
    - `length`: its number of tokens *including* the eos.
    - `lenpen`: the length penalty exponent (0: raw log-probability; 1: per-token average).

    **Returns:** the score hypotheses are ranked by (larger is better).
    """
    return logprob / length**lenpen


def search(
    model: Seq2Seq,
    src: Tensor,
    *,
    beam: int = BEAM,
    lenpen: float = LENPEN,
    max_len_a: float = MAX_LEN_A,
    max_len_b: int = MAX_LEN_B,
    min_len: int = MIN_LEN,
    early_stop: bool = True,
    use_cache: bool = True,
    compile: bool = False,
) -> list[list[Hypothesis]]:
    """Beam search over a batch of sources; every finished hypothesis, best first.

    **Arguments:**

    - `model`: a `Seq2Seq` (in eval mode for the search; its mode is restored).
    - `src`: `(batch, src_len)` LongTensor of source ids right- or left-padded with
      `model.pad_index`, on the model's device.
    - `beam`: hypotheses kept per sentence.
    - `lenpen`: length penalty; scores are `logprob / (tokens + 1) ** lenpen` (module docstring).
    - `max_len_a`, `max_len_b`: at most `int(max_len_a * src_len + max_len_b)` output tokens.
    - `min_len`: no eos before this many tokens.
    - `early_stop`: fairseq's stopping rule (True) or the exact one (False); module docstring.
    - `use_cache`: decode incrementally with a `DecodeCache` (ignored, i.e. False, when the
      model has `supports_cache = False`).
    - `compile`: run each decoding step through `torch.compile(model.decode)` (the same tokens
      as eager decoding; the first call compiles, later calls reuse the graphs).

    **Returns:** for each source row, up to `beam` `Hypothesis`, sorted by decreasing score.
    """
    check_options(
        beam=beam, lenpen=lenpen, max_len_a=max_len_a, max_len_b=max_len_b, min_len=min_len
    )
    with evaluating(model):
        return _beam(
            model,
            src,
            beam,
            lenpen,
            max_len_a,
            max_len_b,
            min_len,
            early_stop,
            cache_wanted(model, use_cache),
            compile,
        )


def _beam(
    model: Seq2Seq,
    src: Tensor,
    beam: int,
    lenpen: float,
    max_len_a: float,
    max_len_b: int,
    min_len: int,
    early_stop: bool,
    use_cache: bool,
    compile: bool,
) -> list[list[Hypothesis]]:
    batch, device = src.shape[0], src.device
    memory, padding = encode(model, src)
    expand = torch.arange(batch, device=device).repeat_interleave(beam)
    limit = max_lengths(model, src, max_len_a, max_len_b)  # (n,) for the n live sentences
    decoder = Decoder(model, memory[expand], padding[expand], use_cache, compile)
    sentences = list(range(batch))  # original index of each live sentence
    tokens = torch.full((batch * beam, 1), BOS, dtype=torch.long, device=device)
    scores = torch.zeros(batch * beam, device=device)
    finished: list[list[Hypothesis]] = [[] for _ in range(batch)]
    step = 0
    while sentences:
        n = len(sentences)
        lprobs = mask_tokens(
            torch.log_softmax(decoder.logits(tokens), dim=-1),
            step,
            limit.repeat_interleave(beam),
            min_len,
            model.pad_index,
        )
        top_scores, top_rows, top_tokens = _top_candidates(lprobs, scores, n, beam, step)
        possible = top_scores.isfinite()
        ends = top_tokens.eq(EOS) & possible
        offsets = torch.arange(n, device=device).unsqueeze(1) * beam
        ended = [finished[s] for s in sentences]
        ending = (top_scores, top_rows, ends, offsets)
        _finish(ended, tokens, *ending, step, beam, lenpen, early_stop)
        # the first `beam` other candidates stay live; when fewer exist (tiny vocabularies), the
        # rest are dead rows: -inf, never extended to a finite score (fairseq's cands_to_ignore)
        excluded = ~possible | ends
        rank = excluded.long() * (2 * beam) + torch.arange(2 * beam, device=device)
        pick = rank.topk(beam, dim=1, largest=False).indices
        live_scores = top_scores.gather(1, pick).masked_fill(excluded.gather(1, pick), -math.inf)
        live_rows = offsets + top_rows.gather(1, pick)
        live_tokens = top_tokens.gather(1, pick)
        done = _done(ended, live_scores, limit, step, beam, lenpen, early_stop)
        keep = [i for i in range(n) if not done[i]]
        if not keep:
            break
        if len(keep) < n:
            kept = torch.tensor(keep, device=device)
            live_rows, live_tokens = live_rows[kept], live_tokens[kept]
            live_scores, limit = live_scores[kept], limit[kept]
            sentences = [sentences[i] for i in keep]
        rows = live_rows.reshape(-1)
        # beams of one sentence share its memory: re-index it only when sentences leave
        decoder.select(rows, rows if len(keep) < n else None)
        tokens = torch.cat([tokens.index_select(0, rows), live_tokens.reshape(-1, 1)], dim=1)
        scores = live_scores.reshape(-1)
        step += 1
    for i, found in enumerate(finished):
        if not found:
            raise ButcherflowError(
                f"beam search: source row {i} ended with no hypothesis of finite score; the "
                "model's log-probabilities are NaN or -inf everywhere (a diverged checkpoint?)"
            )
        found.sort(key=lambda h: -h.score)
    return finished


def _top_candidates(
    lprobs: Tensor, scores: Tensor, n: int, beam: int, step: int
) -> tuple[Tensor, Tensor, Tensor]:
    """The 2·beam best extensions of each sentence's beams: their scores, the beam row each
    extends (within the sentence) and the token it appends, each `(n, 2·beam)`."""
    vocab = lprobs.shape[1]
    candidates = (scores.to(lprobs.dtype).unsqueeze(1) + lprobs).view(n, beam, vocab)
    if step == 0:  # every row is bos: expand the first only
        candidates = candidates[:, :1]
    flat = candidates.reshape(n, -1)
    if flat.shape[1] < 2 * beam:  # tiny vocabularies: pad with impossible candidates
        flat = torch.nn.functional.pad(flat, (0, 2 * beam - flat.shape[1]), value=-math.inf)
    top_scores, top_index = flat.topk(2 * beam, dim=1)
    top_rows = (top_index // vocab).clamp(max=candidates.shape[1] - 1)
    return top_scores, top_rows, top_index % vocab


def _finish(
    ended: list[list[Hypothesis]],
    tokens: Tensor,
    top_scores: Tensor,
    top_rows: Tensor,
    ends: Tensor,
    offsets: Tensor,
    step: int,
    beam: int,
    lenpen: float,
    early_stop: bool,
) -> None:
    """Add to each live sentence's finished hypotheses (`ended[i]`) its candidates that end
    with eos among the first `beam`."""
    where = ends[:, :beam].nonzero().tolist()
    if not where:
        return
    i_s, j_s = zip(*where, strict=True)
    i_t = torch.tensor(i_s, device=tokens.device)
    j_t = torch.tensor(j_s, device=tokens.device)
    rows = offsets[i_t, 0] + top_rows[i_t, j_t]
    prefixes = tokens.index_select(0, rows)[:, 1:].tolist()
    logprobs = top_scores[i_t, j_t].tolist()
    for i, prefix, logprob in zip(i_s, prefixes, logprobs, strict=True):
        found = ended[i]
        if early_stop and len(found) >= beam:
            continue
        found.append(
            Hypothesis(tuple(prefix), length_penalized(logprob, step + 1, lenpen), logprob)
        )
        if not early_stop:
            found.sort(key=lambda h: -h.score)
            del found[beam:]


def _done(
    ended: list[list[Hypothesis]],
    live_scores: Tensor,
    limit: Tensor,
    step: int,
    beam: int,
    lenpen: float,
    early_stop: bool,
) -> list[bool]:
    """Which live sentences stop: at their length limit, with no live row of finite score, or
    with `beam` finished hypotheses that no live row can beat (fairseq's rule with
    `early_stop`, the exact bound without)."""
    best = live_scores.max(dim=1).values
    done = (limit.le(step) | best.isinf()).tolist()
    if early_stop:
        bounds = [math.inf] * len(ended)  # unused: `beam` finished hypotheses suffice
    elif lenpen > 0:  # the best a live row can reach: its score at the longest length
        bounds = (best / (limit + 1).to(best.dtype) ** lenpen).tolist()
    else:
        bounds = (best / float(step + 2) ** lenpen).tolist()
    for i, found in enumerate(ended):
        if len(found) >= beam and (early_stop or found[-1].score >= bounds[i]):
            done[i] = True
    return done


def beam_search(
    model: Seq2Seq,
    src: Tensor,
    *,
    beam: int = BEAM,
    lenpen: float = LENPEN,
    max_len_a: float = MAX_LEN_A,
    max_len_b: int = MAX_LEN_B,
    min_len: int = MIN_LEN,
    early_stop: bool = True,
    use_cache: bool = True,
    compile: bool = False,
) -> list[list[int]]:
    """The best hypothesis of `search` for each source row (see `search` for the arguments).

    **Returns:** one list of token ids per source row, without bos, eos or pad.
    """
    found = search(
        model,
        src,
        beam=beam,
        lenpen=lenpen,
        max_len_a=max_len_a,
        max_len_b=max_len_b,
        min_len=min_len,
        early_stop=early_stop,
        use_cache=use_cache,
        compile=compile,
    )
    return [list(hypotheses[0].tokens) for hypotheses in found]


def greedy(
    model: Seq2Seq,
    src: Tensor,
    *,
    max_len_a: float = MAX_LEN_A,
    max_len_b: int = MAX_LEN_B,
    min_len: int = MIN_LEN,
    use_cache: bool = True,
    compile: bool = False,
) -> list[list[int]]:
    """Greedy decoding: the most likely next token at each step (equal to `beam=1`, faster).

    **Arguments:** as `search`.

    **Returns:** one list of token ids per source row, without bos, eos or pad.
    """
    check_options(max_len_a=max_len_a, max_len_b=max_len_b, min_len=min_len)
    with evaluating(model):
        batch, device = src.shape[0], src.device
        memory, padding = encode(model, src)
        limit = max_lengths(model, src, max_len_a, max_len_b)
        decoder = Decoder(model, memory, padding, cache_wanted(model, use_cache), compile)
        sentences = list(range(batch))
        tokens = torch.full((batch, 1), BOS, dtype=torch.long, device=device)
        out: list[list[int]] = [[] for _ in range(batch)]
        step = 0
        while sentences:
            logits = mask_tokens(decoder.logits(tokens), step, limit, min_len, model.pad_index)
            chosen = logits.argmax(dim=1)
            done = chosen.eq(EOS) | limit.le(step)
            if bool(done.any()):
                ended = done.nonzero().flatten()
                for i, ids in zip(ended.tolist(), tokens[ended, 1:].tolist(), strict=True):
                    out[sentences[i]] = ids
                keep = (~done).nonzero().flatten()
                sentences = [sentences[i] for i in keep.tolist()]
                if not sentences:
                    break
                decoder.select(keep, keep)
                tokens, chosen, limit = tokens[keep], chosen[keep], limit[keep]
            tokens = torch.cat([tokens, chosen.unsqueeze(1)], dim=1)
            step += 1
        return out


__all__ = ["Hypothesis", "beam_search", "greedy", "length_penalized", "search"]
