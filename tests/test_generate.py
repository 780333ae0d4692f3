"""Beam search, greedy decoding, translation and scoring (butcherflow.generate).

Tiny random models in float64: the incremental (cached) search must give exactly the tokens and
scores of the search that recomputes every prefix, for decoders with one field call per block
(euler), four (an RK4 decoder) and splittings (macaron's Strang decoder).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import sacrebleu
import torch
from tiny_run import TINY
from torch import Tensor, nn
from torch._dynamo.utils import counters

import butcherflow as bf
from butcherflow.generate import (
    Hypothesis,
    Scores,
    beam_search,
    evaluate,
    greedy,
    length_penalized,
    score,
    search,
    translate,
)
from butcherflow.generate.decoding import BOS, EOS
from butcherflow.generate.evaluate import token_batches
from butcherflow.nn import DecodeCache

VOCAB = 40
PAD = 0


def tiny(name: str, decoder_method: str | None = None) -> bf.Recipe:
    """A catalog recipe at d_model 16 (same methods and fields), optionally another decoder."""
    recipe = bf.load_recipe(name)
    recipe = replace(
        recipe,
        sizes={**recipe.sizes, "d_model": 16, "n_heads": 2, "d_ffn": 32, "dropout": 0.0},
        param_budget=None,
    )
    assert recipe.encoder is not None and recipe.decoder is not None
    recipe = replace(
        recipe, encoder=replace(recipe.encoder, layers=2), decoder=replace(recipe.decoder, layers=2)
    )
    if decoder_method is not None:
        recipe = replace(recipe, decoder=replace(recipe.decoder, method=decoder_method))
    return recipe


class EosBiased(nn.Module):
    """A Seq2Seq whose logits get a bias on eos, so that hypotheses end at various lengths."""

    def __init__(self, inner: bf.Seq2Seq, eos_bias: float = 2.5) -> None:
        super().__init__()
        self.inner = inner
        self.pad_index = inner.pad_index
        self.embedding = inner.embedding
        self.bias = torch.zeros(inner.vocab_size, dtype=torch.float64)
        self.bias[EOS] = eos_bias

    @property
    def supports_cache(self) -> bool:
        return self.inner.supports_cache

    def encode(self, src: Tensor) -> tuple[Tensor, Tensor]:
        return self.inner.encode(src)

    def decode(
        self,
        tgt: Tensor,
        memory: Tensor,
        padding: Tensor,
        cache: DecodeCache | None = None,
        *,
        last_only: bool = False,
    ) -> Tensor:
        return self.inner.decode(tgt, memory, padding, cache, last_only=last_only) + self.bias

    def forward(self, src: Tensor, tgt: Tensor) -> Tensor:
        memory, padding = self.encode(src)
        return self.decode(tgt, memory, padding)


def model_for(
    name: str, decoder_method: str | None = None, seed: int = 0, eos_bias: float = 2.5
) -> EosBiased:
    torch.manual_seed(seed)
    return EosBiased(bf.Seq2Seq(tiny(name, decoder_method), VOCAB).double().eval(), eos_bias)


def sources(seed: int = 1) -> Tensor:
    """Three right-padded source rows of lengths 6, 3 and 5."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, VOCAB, (3, 6), generator=g)
    src[1, 3:] = PAD
    src[2, 5:] = PAD
    return src


def assert_same(a: list[list[Hypothesis]], b: list[list[Hypothesis]], tol: float = 1e-9) -> None:
    assert [[h.tokens for h in row] for row in a] == [[h.tokens for h in row] for row in b]
    for row_a, row_b in zip(a, b, strict=True):
        for h, k in zip(row_a, row_b, strict=True):
            assert h.score == pytest.approx(k.score, abs=tol)
            assert h.logprob == pytest.approx(k.logprob, abs=tol)


CACHED_MODELS = [
    ("transformer-small", None),
    ("ode-transformer-rk4", "rk4"),  # an RK4 decoder: one cache per stage
    ("ode-transformer-rk2-gated", "heun"),
    ("macaron", None),  # a Strang splitting decoder
]


@pytest.mark.parametrize(("name", "decoder"), CACHED_MODELS, ids=[n for n, _ in CACHED_MODELS])
def test_beam_with_cache_equals_beam_without(name: str, decoder: str | None) -> None:
    model = model_for(name, decoder)
    src = sources()
    options = {"beam": 4, "lenpen": 1.0, "max_len_b": 9}
    cached = search(model, src, **options)
    recomputed = search(model, src, **options, use_cache=False)
    assert_same(cached, recomputed)
    assert all(len(row) == 4 for row in cached)
    lengths = {len(h.tokens) for row in cached for h in row}
    assert len(lengths) > 2, "the eos bias should end hypotheses at several lengths"


def test_an_rk4_decoder_keeps_one_cache_per_stage() -> None:
    """The RK4 decoder's cache holds 4 self-attention slots per block: the stages differ."""
    model = model_for("ode-transformer-rk4", "rk4")
    memory, padding = model.encode(sources())
    cache = DecodeCache()
    model.decode(torch.full((3, 1), BOS), memory, padding, cache)
    slots = {slot for slot, _ in cache.slots}
    assert slots == {0, 1, 2, 3}
    assert len(cache.slots) == 4 * 2  # 4 stages x 2 decoder blocks


def test_the_exhaustive_stop_is_cached_alike_and_never_worse() -> None:
    model = model_for("transformer-small")
    src = sources(seed=4)
    fairseq = search(model, src, beam=3, lenpen=1.5, max_len_b=10)
    exhaustive = search(model, src, beam=3, lenpen=1.5, max_len_b=10, early_stop=False)
    assert_same(
        exhaustive,
        search(model, src, beam=3, lenpen=1.5, max_len_b=10, early_stop=False, use_cache=False),
    )
    for quick, full in zip(fairseq, exhaustive, strict=True):
        assert full[0].score >= quick[0].score - 1e-12


@pytest.mark.parametrize("use_cache", [True, False], ids=["cache", "no-cache"])
@pytest.mark.parametrize("name", ["transformer-small", "macaron"])
def test_greedy_equals_beam_one(name: str, use_cache: bool) -> None:
    model = model_for(name, seed=2, eos_bias=3.5)
    src = sources(seed=2)
    expected = beam_search(model, src, beam=1, max_len_b=9, use_cache=use_cache)
    assert greedy(model, src, max_len_b=9, use_cache=use_cache) == expected
    assert len({len(t) for t in expected}) > 1  # not all cut at the maximum length


def test_hypotheses_are_sorted_and_scored_by_the_full_forward() -> None:
    model = model_for("ode-transformer-rk4", "rk4", seed=3)
    src = sources(seed=3)
    lenpen = 0.7
    found = search(model, src, beam=4, lenpen=lenpen, max_len_b=8)
    for row, hypotheses in enumerate(found):
        scores = [h.score for h in hypotheses]
        assert scores == sorted(scores, reverse=True)
        for h in hypotheses:
            prev = torch.tensor([[BOS, *h.tokens]])
            target = torch.tensor([[*h.tokens, EOS]])
            with torch.no_grad():
                logits = model(src[row : row + 1][:, src[row].ne(PAD)], prev)
            logprob = logits.log_softmax(-1).gather(-1, target.unsqueeze(-1)).sum().item()
            assert h.logprob == pytest.approx(logprob, abs=1e-9)
            assert h.score == pytest.approx(logprob / (len(h.tokens) + 1) ** lenpen, abs=1e-12)
            assert PAD not in h.tokens and BOS not in h.tokens and EOS not in h.tokens


def test_a_batch_gives_what_one_sentence_at_a_time_gives() -> None:
    """Padding (and the other sentences) do not change a sentence's hypotheses."""
    model = model_for("macaron", seed=5)
    src = sources(seed=5)
    options = {"beam": 3, "lenpen": 1.2, "max_len_a": 0.5, "max_len_b": 6}
    batched = search(model, src, **options)
    alone = [search(model, row[row.ne(PAD)].unsqueeze(0), **options)[0] for row in src]
    assert_same(batched, alone)
    left = torch.stack([torch.cat([row[row.eq(PAD)], row[row.ne(PAD)]]) for row in src])
    assert_same(search(model, left, **options), batched)  # left padding: the same


def test_max_len_a_and_b_bound_each_sentence() -> None:
    model = model_for("transformer-small", seed=6)
    src = sources(seed=6)  # lengths 6, 3, 5
    a, b = 1.5, 2
    limits = [int(a * n + b) for n in (6, 3, 5)]
    forced = beam_search(model, src, beam=2, max_len_a=a, max_len_b=b, min_len=100)
    assert [len(t) for t in forced] == limits  # eos suppressed: each stops at its own limit
    assert [len(t) for t in greedy(model, src, max_len_a=a, max_len_b=b, min_len=100)] == limits
    free = search(model, src, beam=3, max_len_a=a, max_len_b=b)
    for hypotheses, limit in zip(free, limits, strict=True):
        assert all(len(h.tokens) <= limit for h in hypotheses)
    assert [len(t) for t in beam_search(model, src, beam=2, max_len_b=0)] == [0, 0, 0]


def test_min_len_delays_eos() -> None:
    model = model_for("transformer-small", seed=7)
    src = sources(seed=7)
    assert min(len(t) for t in beam_search(model, src, beam=3, max_len_b=12)) < 4
    assert min(len(t) for t in beam_search(model, src, beam=3, max_len_b=12, min_len=4)) >= 4


class Bigram(nn.Module):
    """A 'model' whose next-token distribution depends only on the last token (a table)."""

    def __init__(self, table: dict[int, dict[int, float]], vocab: int = 6) -> None:
        super().__init__()
        self.pad_index = PAD
        self.logits = torch.full((vocab, vocab), -math.inf, dtype=torch.float64)
        for prev, nexts in table.items():
            for token, p in nexts.items():
                self.logits[prev, token] = math.log(p)

    def encode(self, src: Tensor) -> tuple[Tensor, Tensor]:
        return torch.zeros(*src.shape, 1, dtype=torch.float64), src.eq(PAD)

    def decode(
        self,
        tgt: Tensor,
        memory: Tensor,
        padding: Tensor,
        cache: DecodeCache | None = None,
        *,
        last_only: bool = False,
    ) -> Tensor:
        if cache is not None:
            cache.advance(tgt.shape[1])
        return self.logits[tgt[:, -1:] if last_only else tgt]


# from bos: token 4; after 4: eos (0.55) or 5 (0.45); after 5: eos. Hypotheses: [4] with
# log-prob log 0.55 over 2 tokens, [4, 5] with log 0.45 over 3 tokens.
BIGRAM = {BOS: {4: 1.0}, 4: {EOS: 0.55, 5: 0.45}, 5: {EOS: 1.0}}


@pytest.mark.parametrize("use_cache", [True, False], ids=["cache", "no-cache"])
def test_lenpen_decides_between_a_short_and_a_long_hypothesis(use_cache: bool) -> None:
    model, src = Bigram(BIGRAM), torch.tensor([[4, 4]])
    short, long = math.log(0.55), math.log(0.45)
    assert short / 2**0 > long / 3**0 and short / 2**1 < long / 3**1
    for lenpen, best in [(0.0, [4]), (1.0, [4, 5])]:
        found = search(model, src, beam=2, lenpen=lenpen, use_cache=use_cache)[0]
        assert list(found[0].tokens) == best
        assert {h.tokens for h in found} == {(4,), (4, 5)}
    assert length_penalized(long, 3, 1.0) == pytest.approx(long / 3)
    assert length_penalized(short, 2, 0.0) == pytest.approx(short)


def test_a_beam_wider_than_the_possible_continuations() -> None:
    """Only 2 hypotheses exist: the other beam rows are dead and never finish."""
    for table in (BIGRAM, {**BIGRAM, EOS: {4: 1.0}}):  # even if the model goes on after eos
        for use_cache in (True, False):
            found = search(Bigram(table), torch.tensor([[4]]), beam=5, use_cache=use_cache)[0]
            assert [h.tokens for h in found] == [(4, 5), (4,)]
            assert all(math.isfinite(h.score) for h in found)


def test_a_model_without_cache_support_is_decoded_by_recomputation() -> None:
    class NoCache(EosBiased):
        supports_cache = False

        def decode(
            self,
            tgt: Tensor,
            memory: Tensor,
            padding: Tensor,
            cache: DecodeCache | None = None,
            *,
            last_only: bool = False,
        ) -> Tensor:
            assert cache is None, "the search must not pass a cache to this model"
            return super().decode(tgt, memory, padding, cache, last_only=last_only)

    torch.manual_seed(0)
    inner = bf.Seq2Seq(tiny("transformer-small"), VOCAB).double().eval()
    model, reference = NoCache(inner), EosBiased(inner)
    src = sources()
    assert_same(
        search(model, src, beam=3, max_len_b=7), search(reference, src, beam=3, max_len_b=7)
    )
    assert greedy(model, src, max_len_b=7) == greedy(reference, src, max_len_b=7)


def test_an_adaptive_ode_decoder_is_searched_without_a_cache() -> None:
    """A decoder of adaptive Dormand-Prince blocks cannot decode incrementally (its steps depend
    on the whole prefix): the model says so and the search recomputes every prefix."""
    torch.manual_seed(0)
    inner = bf.Seq2Seq(tiny("transformer-small", "neural-ode-dopri5"), VOCAB).double().eval()
    assert inner.supports_cache is False
    model, src = EosBiased(inner), sources()
    found = search(model, src, beam=2, max_len_b=4)  # use_cache=True is overridden
    assert_same(found, search(model, src, beam=2, max_len_b=4, use_cache=False))
    assert greedy(model, src, max_len_b=4) == beam_search(model, src, beam=1, max_len_b=4)


def test_the_search_restores_training_mode() -> None:
    torch.manual_seed(0)
    model = bf.Seq2Seq(
        replace(
            tiny("transformer-small"), sizes={**tiny("transformer-small").sizes, "dropout": 0.5}
        ),
        VOCAB,
    ).double()
    model.train()
    src = sources()
    first = beam_search(model, src, beam=2, max_len_b=5)
    assert model.training
    assert beam_search(model, src, beam=2, max_len_b=5) == first  # dropout was off


# -- compiled decoding -----------------------------------------------------------------------------


@pytest.fixture
def fresh_dynamo() -> Iterator[None]:
    """Every compiled test starts and ends with dynamo's caches empty: graphs of `decode` are
    kept per model, and dynamo's recompile limit counts them for all models together."""
    torch.compiler.reset()
    counters.clear()
    yield
    torch.compiler.reset()


def assert_same_search(model: nn.Module, src: Tensor, **options: object) -> None:
    """Greedy and beam search give the same tokens (and scores) compiled and eager."""
    eager_greedy = greedy(model, src, max_len_b=12)
    assert greedy(model, src, max_len_b=12, compile=True) == eager_greedy
    eager = search(model, src, beam=3, max_len_b=12)
    assert_same(search(model, src, beam=3, max_len_b=12, compile=True), eager, tol=1e-4)
    lengths = {len(t) for t in eager_greedy} | {len(h.tokens) for row in eager for h in row}
    assert len(lengths) > 1, "sentences should end at several lengths (the batch shrinks)"


@pytest.mark.slow  # inductor's C++ code generation: about a minute on 2 cores
@pytest.mark.usefixtures("fresh_dynamo")
def test_compiled_decoding_with_inductor_gives_the_eager_tokens() -> None:
    """torch.compile's default backend (inductor: generated C++ on CPU) on a small model, with
    sentences leaving the batch and beams reordered; a handful of graphs serve every step."""
    model = model_for("transformer-small", seed=2, eos_bias=3.0).float()
    assert_same_search(model, sources(seed=2))
    assert counters["stats"]["unique_graphs"] <= 6  # not one per step (about 2 x 12 steps)


@pytest.mark.usefixtures("fresh_dynamo")
@pytest.mark.parametrize(
    ("name", "decoder"),
    [("ode-transformer-rk4", "rk4"), ("macaron", None)],
    ids=["rk4-decoder", "macaron"],
)
def test_compiled_decoding_of_multi_slot_decoders(
    name: str, decoder: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Decoders with several caches per block, traced by dynamo (its graphs run eagerly, which
    keeps the test fast: code generation and the functionalised in-place cache writes are the
    inductor test's)."""
    compile_ = torch.compile
    monkeypatch.setattr(torch, "compile", lambda f, **k: compile_(f, backend="eager", **k))
    model = model_for(name, decoder, seed=2, eos_bias=3.0)
    assert_same_search(model, sources(seed=2))


@pytest.mark.usefixtures("fresh_dynamo")
def test_compiled_decoding_does_not_recompile_per_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """40 greedy steps of a fixed batch: one graph for the first step (it registers the cache's
    slots), one for all the others; growing the time axis past 64 adds one."""
    compile_ = torch.compile
    monkeypatch.setattr(torch, "compile", lambda f, **k: compile_(f, backend="eager", **k))
    model = model_for("transformer-small", eos_bias=-50.0)  # never ends early
    src = sources()
    assert greedy(model, src, max_len_b=40, compile=True) == greedy(model, src, max_len_b=40)
    assert counters["stats"]["unique_graphs"] == 2
    greedy(model, src, max_len_b=70, compile=True)  # the same graphs, then a longer axis
    assert counters["stats"]["unique_graphs"] == 3


# -- translate ---------------------------------------------------------------------------------


class WordVocab:
    """A stand-in `Vocabulary`: one id per known word (4 + its index), unknown words -> unk."""

    pad, unk, bos, eos = 0, 1, 2, 3

    def __init__(self, size: int) -> None:
        self.words = [f"w{i}" for i in range(size - 4)]

    def __len__(self) -> int:
        return len(self.words) + 4

    def encode(self, text: str) -> list[int]:
        return [4 + self.words.index(w) if w in self.words else 1 for w in text.split()]

    def decode(self, ids: list[int]) -> str:
        return " ".join(self.words[i - 4] for i in ids if i >= 4)


SENTENCES = ["w1 w2 w3", "w4", "", "w5 w6 w7 w8 w9 w10", "   ", "w3 w1", "w7 w7 w7 w7"]


def test_translate_restores_the_input_order_whatever_the_batches() -> None:
    model, vocab = model_for("transformer-small", seed=8), WordVocab(VOCAB)

    def run(sentences: list[str], beam: int = 3, max_tokens: int = 4096) -> list[str]:
        return translate(model, vocab, sentences, beam=beam, max_len_b=6, max_tokens=max_tokens)

    whole = run(SENTENCES)
    assert whole == [run([s])[0] for s in SENTENCES]
    assert run(SENTENCES, max_tokens=8) == whole  # other batches, same translations
    assert whole[2] == "" and whole[4] == ""  # empty and blank lines
    assert len(set(whole)) > 2
    assert run(SENTENCES, beam=1) == [run([s], beam=1)[0] for s in SENTENCES]  # greedy


def test_token_batches_cover_every_sentence_within_the_budget() -> None:
    lengths = [3, 9, 1, 4, 4, 12, 2]
    batches = token_batches(lengths, 10)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    for b in batches:
        assert max(lengths[i] for i in b) * len(b) <= 10 or len(b) == 1
    assert [5] in batches  # longer than the budget: alone


# -- score -------------------------------------------------------------------------------------

HYPS = ["The cat sat on the mat.", "He read the book, slowly.", "It rains today"]
REFS = ["The cat sat on a mat.", "He read the book slowly.", "Today it is raining"]


def test_score_matches_sacrebleu() -> None:
    scores = score(HYPS, REFS)
    assert isinstance(scores, Scores)
    assert scores.bleu == pytest.approx(sacrebleu.corpus_bleu(HYPS, [REFS]).score)
    assert scores.chrf == pytest.approx(sacrebleu.corpus_chrf(HYPS, [REFS]).score)
    assert scores.n == 3
    assert "tok:13a" in scores.bleu_signature and "version:" in scores.bleu_signature
    assert "nc:6" in scores.chrf_signature
    text = str(scores)
    assert text.startswith(f"BLEU = {scores.bleu:.2f} (nrefs:1|")
    assert f"/ chrF = {scores.chrf:.2f} (" in text
    assert score(REFS, REFS).bleu == pytest.approx(100.0)


# -- bad inputs --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"beam": 0}, "key 'beam'"),
        ({"beam": 2.0}, "key 'beam'"),
        ({"lenpen": math.nan}, "key 'lenpen'"),
        ({"lenpen": math.inf}, "key 'lenpen'"),
        ({"max_len_a": -1.0}, "key 'max_len_a'"),
        ({"max_len_b": -3}, "key 'max_len_b'"),
        ({"min_len": -1}, "key 'min_len'"),
    ],
)
def test_bad_search_options_are_named(options: dict, fragment: str) -> None:
    model = model_for("transformer-small")
    with pytest.raises(bf.DeclarationError) as info:
        search(model, sources(), **options)
    assert fragment in str(info.value)
    assert repr(next(iter(options.values()))) in str(info.value)


def test_an_all_padding_source_row_is_refused() -> None:
    src = sources()
    src[1] = PAD
    with pytest.raises(bf.DeclarationError, match=r"only padding.*rows \[1\]"):
        greedy(model_for("transformer-small"), src)


def test_score_refuses_mismatched_inputs() -> None:
    with pytest.raises(bf.DeclarationError, match="3 hypotheses for 2 references"):
        score(HYPS, REFS[:2])
    with pytest.raises(bf.DeclarationError, match="nothing to score"):
        score([], [])


def test_evaluate_needs_a_save_dir(tmp_path: Path) -> None:
    missing = f"{tmp_path}/nowhere"
    with pytest.raises(bf.ButcherflowError, match=r"nowhere.*does not exist"):
        evaluate(missing)
    with pytest.raises(bf.DeclarationError, match=r"key 'subset'.*'train'"):
        evaluate(missing, subset="train")


# -- the benchmark, at toy sizes ---------------------------------------------------------------


def test_the_beam_benchmark_writes_its_section(
    benchmarks_md: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from butcherflow.bench.beam import run_beam

    compile_ = torch.compile  # dynamo only: inductor's code generation is another test's
    monkeypatch.setattr(torch, "compile", lambda f, **k: compile_(f, backend="eager", **k))
    output = benchmarks_md
    rows = run_beam(
        str(output),
        1,
        "butcherflow bench beam --repeats 1",
        sentences=2,
        src_len=4,
        length=6,
        models=[("rk4 decoder", "ode-transformer-rk4", "rk4")],
        sizes={"d_model": 16, "n_heads": 2, "d_ffn": 32, "layers": 1},
    )
    assert len(rows) == 1 and rows[0].calls == 4
    assert rows[0].cached > 0 and rows[0].compiled > 0 and rows[0].recomputed > 0
    text = output.read_text()
    assert "kept" in text
    section = text[text.index("<!-- bench:beam:start -->") : text.index("<!-- bench:beam:end -->")]
    assert "| rk4 decoder | 4 |" in section and "compiled cached" in section
    assert "device cpu" in section
    assert "PASS" not in section and "FAIL" not in section  # the target is set at 50 tokens
    assert "at 6 tokens the ratio is shown without a verdict" in section
    assert "`butcherflow bench beam --repeats 1`" in section


@pytest.mark.parametrize("recomputed, verdict", [(3.5, "3.50× PASS"), (2.0, "2.00× FAIL")])
def test_the_beam_section_judges_its_target_at_50_tokens(recomputed: float, verdict: str) -> None:
    from butcherflow.bench.beam import LENGTH, MODELS, BeamRow, _section

    row = BeamRow("transformer-small", 1, 1.0, 0.5, recomputed, 8)
    body = _section([row], "c", torch.device("cpu"), 1, 8, 20, LENGTH, MODELS[:1], None)
    assert f"| {verdict} |" in body


def test_the_beam_benchmark_refuses_an_empty_output(tmp_path: Path) -> None:
    from butcherflow.bench import run_benchmark
    from butcherflow.cli import build_parser

    args = build_parser().parse_args(
        ["bench", "beam", "--length", "0", "--output", str(tmp_path / "b.md")]
    )
    with pytest.raises(bf.DeclarationError, match=r"key '--length'.*got 0.*positive"):
        run_benchmark(args)
    assert not (tmp_path / "b.md").exists()


def test_the_cli_knows_the_generation_commands() -> None:
    from butcherflow.cli import build_parser

    parser = build_parser()
    args = parser.parse_args(["bench", "beam"])
    assert args.what == "beam"
    args = parser.parse_args(
        [
            "evaluate",
            "DIR",
            "--subset",
            "valid",
            "--beam",
            "4",
            "--lenpen",
            "0.6",
            "--checkpoint",
            "avg:2",
            "--print-samples",
            "3",
        ]
    )
    assert (
        args.save_dir,
        args.subset,
        args.beam,
        args.lenpen,
        args.checkpoint,
        args.print_samples,
    ) == ("DIR", "valid", 4, 0.6, "avg:2", 3)
    args = parser.parse_args(["translate", "DIR", "--max-len-a", "1.2", "--max-len-b", "10"])
    assert (args.max_len_a, args.max_len_b, args.beam) == (1.2, 10, 5)


# -- end to end through the CLI: train 3 updates, evaluate, translate -----------------------------


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from butcherflow.cli import main

    save_dir = tmp_path_factory.mktemp("run") / "save"
    flags = "--d-model 16 --n-heads 2 --d-ffn 32 --encoder-layers 1 --decoder-layers 1"
    argv = [
        "train", "transformer-small", "--data", str(TINY), "--save-dir", str(save_dir),
        "--max-update", "3", "--max-tokens", "512", "--vocab-size", "200", "--device", "cpu",
        "--warmup-updates", "1", "--save-interval-updates", "1", "--validate-bleu", "4",
        *flags.split(),
    ]  # fmt: skip
    assert main(argv) == 0
    return save_dir


def test_cli_evaluate_prints_detokenized_sacrebleu_and_chrf(
    trained: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from butcherflow.cli import main

    capsys.readouterr()
    argv = ["evaluate", str(trained), "--subset", "valid", "--beam", "2", "--max-len-b", "8"]
    assert main([*argv, "--print-samples", "2", "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    last = out.strip().splitlines()[-1]
    assert last.startswith("BLEU = ") and " / chrF = " in last
    assert "(nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:" in last
    assert "valid (30 sentences)" in out and "S-1\t" in out and "H-1\t" in out
    assert "S-2\t" not in out
    result = evaluate(trained, "valid", beam=2, max_len_b=8)
    assert result.references == tuple(
        (TINY / "valid.en").read_text(encoding="utf-8").splitlines()
    )  # scored against the raw references
    assert last == str(score(result.hypotheses, result.references))
    assert main([*argv, "--checkpoint", "avg:2"]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("BLEU = ")
    # each evaluation is kept in the run's log, so a quoted figure has its record
    from butcherflow.savedir import read_commit, read_log

    best, averaged = [e for e in read_log(trained / "log.jsonl") if e["kind"] == "evaluate"][-2:]
    assert best["update"] == read_commit(trained, "checkpoint_best")["update"]  # type: ignore[index]
    assert (best["checkpoint"], best["subset"], best["beam"], best["sentences"]) == (
        "best",
        "valid",
        2,
        30,
    )
    assert last == f"BLEU = {best['bleu']:.2f} ({best['bleu_signature']}) / " + (
        f"chrF = {best['chrf']:.2f} ({best['chrf_signature']})"
    )
    assert averaged["checkpoint"] == "avg:2" and averaged["update"] is None


def test_cli_translate_reads_stdin_and_keeps_the_lines(
    trained: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    from butcherflow.cli import main
    from butcherflow.savedir import load_model

    lines = [
        "Im Anfang schuf Gott die Himmel und die Erde.",
        "",
        "Und Gott sprach: Es werde Licht!",
    ]
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(lines) + "\n"))
    capsys.readouterr()
    assert main(["translate", str(trained), "--checkpoint", "last", "--max-len-b", "6"]) == 0
    out = capsys.readouterr().out
    model, vocab, _ = load_model(trained, "last")
    assert out == "".join(line + "\n" for line in translate(model, vocab, lines, max_len_b=6))
    assert out.split("\n")[1] == ""  # the empty line stays empty and in place
    assert len(out.splitlines()) == 3


def test_cli_translate_says_how_many_input_pieces_were_unknown(
    trained: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Characters the tiny German corpus never had (Chinese) become unknown pieces; translate
    still answers every line, and says on stderr how many pieces it could not read."""
    import io

    from butcherflow.cli import main
    from butcherflow.savedir import load_model

    lines = ["Und Gott sprach: 漢字 Licht!", "Und Gott sprach."]
    _, vocab, _ = load_model(trained, "last")
    ids = [vocab.encode(line) for line in lines]
    unknown = sum(i == vocab.unk for row in ids for i in row)
    assert unknown > 0 and all(i != vocab.unk for i in ids[1])
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(lines) + "\n"))
    capsys.readouterr()
    assert main(["translate", str(trained), "--checkpoint", "last", "--max-len-b", "4"]) == 0
    captured = capsys.readouterr()
    assert len(captured.out.splitlines()) == 2
    total = sum(map(len, ids))
    assert f"note: {unknown} of {total} input pieces (in 1 of 2 line(s)) are unknown" in (
        captured.err
    )
    monkeypatch.setattr("sys.stdin", io.StringIO(lines[1] + "\n"))
    assert main(["translate", str(trained), "--checkpoint", "last", "--max-len-b", "4"]) == 0
    assert "unknown" not in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--checkpoint", "newest"], "key '--checkpoint': no such checkpoint (got 'newest')"),
        (["--checkpoint", "avg:0"], "avg:N with N >= 1"),
        (["--beam", "0"], "key 'beam'"),
    ],
)
def test_cli_evaluate_bad_options(
    trained: Path, capsys: pytest.CaptureFixture[str], argv: list[str], fragment: str
) -> None:
    from butcherflow.cli import main

    capsys.readouterr()
    assert main(["evaluate", str(trained), "--device", "cpu", *argv]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and fragment in err and "Traceback" not in err


def test_cli_evaluate_a_missing_save_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from butcherflow.cli import main

    assert main(["evaluate", str(tmp_path / "nowhere")]) == 1
    assert "nowhere' does not exist" in capsys.readouterr().err
    assert main(["translate", str(tmp_path)]) == 1  # a folder, but no run in it
    assert "config.json" in capsys.readouterr().err
