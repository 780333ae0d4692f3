"""Stage 6, generate: beam search and greedy decoding, translation and sacreBLEU evaluation,
a language model's perplexity and its text (greedy or sampled: `sample`, `complete`)."""

from .evaluate import (
    Evaluation,
    Perplexity,
    Scores,
    evaluate,
    evaluate_perplexity,
    score,
    translate,
)
from .sample import Sampling, complete, sample
from .search import Hypothesis, beam_search, greedy, length_penalized, search

__all__ = [
    "Evaluation",
    "Hypothesis",
    "Perplexity",
    "Sampling",
    "Scores",
    "beam_search",
    "complete",
    "evaluate",
    "evaluate_perplexity",
    "greedy",
    "length_penalized",
    "sample",
    "score",
    "search",
    "translate",
]
