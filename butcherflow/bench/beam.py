"""`butcherflow bench beam`: beam search with incremental caches (eager and compiled) vs
recomputing every prefix.

Sentences per second of `generate.search` (beam 5) over the same batch of random sources, three
ways, timed side by side (interleaved repeats, median): *eager cached*, one `DecodeCache` for
the whole batch × beam; *compiled cached*, the same with every decoding step run by
`torch.compile(model.decode)` (the static cache layout: two graphs serve all steps; compilation
happens in the untimed warm-up); *recomputed*, `use_cache=False` (the decoder reruns the whole
prefix at each step). Every output is forced to 50 tokens (`min_len = max_len_b = 50`: eos
suppressed until step 50, then forced), so all paths do the same number of steps whatever the
random weights. The models are randomly initialised at transformer-small sizes (d_model 256,
4 heads, d_ffn 1024, 3 + 3 layers) in float32, as `butcherflow evaluate` decodes: the plain
Transformer, macaron (a Strang splitting decoder: several self-attention caches per block) and
ode-transformer-rk4 with an RK4 decoder (four stages, four caches per block). Target: cached
≥ 3× recomputed at 50-token outputs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import torch

from ..assemble import Recipe, Seq2Seq, load_recipe
from ..devices import resolve_device
from ..generate.decoding import BEAM
from ..generate.search import search
from . import write_section
from .block import side_by_side
from .order import machine

# (label, recipe, decoder method replacing the recipe's; None keeps it)
MODELS: tuple[tuple[str, str, str | None], ...] = (
    ("transformer-small", "transformer-small", None),
    ("macaron (Strang decoder)", "macaron", None),
    ("ode-transformer-rk4 + RK4 decoder", "ode-transformer-rk4", "rk4"),
)
LENGTH, TARGET = 50, 3.0  # the beam is generation's default (BEAM, fairseq's 5)


@dataclass(frozen=True)
class BeamRow:
    """Seconds per batch of `sentences`: cached (eager and compiled) and recomputed."""

    label: str
    calls: int
    cached: float
    compiled: float
    recomputed: float
    sentences: int

    @property
    def speedup(self) -> float:
        """Eager cached over recomputed: what the cache alone buys."""
        return self.recomputed / self.cached

    @property
    def compiled_speedup(self) -> float:
        """Compiled over eager, both cached."""
        return self.cached / self.compiled


def bench_recipe(
    recipe: Recipe,
    *,
    sentences: int,
    src_len: int,
    length: int,
    repeats: int,
    vocab: int = 8000,
    device: torch.device | None = None,
) -> tuple[float, float, float, int]:
    """Median seconds of one beam search over `sentences` random sources, three ways.

    **Returns:** `(eager cached, compiled cached, recomputed seconds, field calls per decoder
    block)`.
    """
    torch.manual_seed(0)
    model = Seq2Seq.from_recipe(recipe, vocab).eval()  # macaron: d_ffn sized by its budget
    model.to(device or torch.device("cpu"))
    src = torch.randint(4, vocab, (sentences, src_len), device=device)

    def run(use_cache: bool, compile: bool = False) -> Callable[[], None]:
        def go() -> None:
            found = search(
                model,
                src,
                beam=BEAM,
                max_len_b=length,
                min_len=length,
                use_cache=use_cache,
                compile=compile,
            )
            assert all(len(h[0].tokens) == length for h in found)

        return go

    torch.compiler.reset()  # dynamo keeps a bounded number of graphs for all models together
    cached, compiled, recomputed = side_by_side(
        run(True), run(True, compile=True), run(False), repeats=repeats
    )
    calls = int(getattr(model.decoder[0], "field_calls", 1))
    return cached, compiled, recomputed, calls


def run_beam(
    output: str,
    repeats: int,
    command: str,
    *,
    sentences: int = 8,
    src_len: int = 20,
    length: int = LENGTH,
    models: Sequence[tuple[str, str, str | None]] = MODELS,
    sizes: dict[str, int] | None = None,
    device: str = "auto",
) -> list[BeamRow]:
    """Run the benchmark, print the table and write the `beam` section of `output`.

    **Arguments:**

    - `output`: the markdown file (`docs/benchmarks.md`).
    - `repeats`: timings are the median of this many interleaved repeats.
    - `command`: the command line shown in the section.
    - `sentences`, `src_len`, `length`: batch size, source length and the forced output length.
    - `models`: `(label, recipe, decoder method or None)` triples.
    - `sizes`: overrides of the recipes' sizes and layers (tests and quick checks only:
      `d_model`, `n_heads`, `d_ffn`, `layers`).
    - `device`: `auto`, `cpu`, `cuda` or `cuda:N`.

    **Returns:** one `BeamRow` per model.
    """
    target = resolve_device(device)
    rows: list[BeamRow] = []
    for label, name, decoder in models:
        recipe = _sized(load_recipe(name), decoder, sizes)
        cached, compiled, recomputed, calls = bench_recipe(
            recipe,
            sentences=sentences,
            src_len=src_len,
            length=length,
            repeats=repeats,
            device=target,
        )
        r = BeamRow(label, calls, cached, compiled, recomputed, sentences)
        print(
            f"{label:<34} cached {sentences / cached:7.2f} sent/s  compiled "
            f"{sentences / compiled:7.2f} sent/s  recomputed {sentences / recomputed:7.2f} "
            f"sent/s  speedup {r.speedup:.2f}x  compiled/eager {r.compiled_speedup:.2f}x",
            flush=True,
        )
        rows.append(r)
        # after every model, so that a run stopped at a time limit keeps the models it timed
        body = _section(rows, command, target, repeats, sentences, src_len, length, models, sizes)
        write_section(output, "beam" if target.type == "cpu" else f"beam-{target.type}", body)
    print(body)
    return rows


def _section(
    rows: Sequence[BeamRow],
    command: str,
    target: torch.device,
    repeats: int,
    sentences: int,
    src_len: int,
    length: int,
    models: Sequence[tuple[str, str, str | None]],
    sizes: dict[str, int] | None,
) -> str:
    """The section's markdown for the models timed so far."""
    recipe = _sized(load_recipe(models[0][1]), None, sizes)
    d, h, f = (int(recipe.sizes[k]) for k in ("d_model", "n_heads", "d_ffn"))
    layers = recipe.decoder.layers if recipe.decoder else 0
    gpu = f", {torch.cuda.get_device_name(target)}" if target.type == "cuda" else ""
    lines = [
        "## Beam search with and without caches (`butcherflow bench beam`)",
        "",
        f"Command: `{command}` ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}). "
        f"Machine: {machine()}; torch {torch.__version__}, {torch.get_num_threads()} thread(s)"
        f"; device {target}{gpu}. "
        f"Beam {BEAM} over a batch of {sentences} random sources of {src_len} tokens, every "
        f"output forced to {length} tokens (`min_len = max_len_b = {length}`); randomly "
        f"initialised models at d_model={d}, n_heads={h}, d_ffn={f}, {layers} decoder layers, "
        "vocabulary 8000, float32. *Eager cached*: one `DecodeCache` for the batch × beam, "
        "reordered at each step; *compiled cached*: the same, each step run by "
        "`torch.compile(model.decode)` (default mode; compiled in the untimed warm-up); "
        "*recomputed*: `use_cache=False`, `model.decode` reruns the whole prefix at each step "
        "and projects only its last position onto the vocabulary, so the gap is the cache's "
        f"alone. Median of {repeats} interleaved repeats"
        + ("." if len(rows) == len(models) else f"; {len(rows)} of {len(models)} models so far.")
        + (
            ""
            if length == LENGTH
            else f" The target is set at {LENGTH}-token outputs (the recomputed prefix grows "
            f"with the length): at {length} tokens the ratio is shown without a verdict."
        ),
        "",
        "| model | field calls per decoder block | eager cached (sentences/s) "
        "| compiled cached (sentences/s) | recomputed (sentences/s) "
        f"| cached / recomputed (target ≥ {TARGET:g}×) | compiled / eager |",
        "|---|--:|--:|--:|--:|--:|--:|",
    ]
    for r in rows:
        verdict = ("PASS" if r.speedup >= TARGET else "FAIL") if length == LENGTH else ""
        lines.append(
            f"| {r.label} | {r.calls} | {r.sentences / r.cached:.2f} | "
            f"{r.sentences / r.compiled:.2f} | {r.sentences / r.recomputed:.2f} | "
            f"{r.speedup:.2f}× {verdict} | "
            f"{r.compiled_speedup:.2f}× |"
        )
    return "\n".join(lines)


def _sized(recipe: Recipe, decoder: str | None, sizes: dict[str, int] | None) -> Recipe:
    recipe = replace(recipe, sizes={**recipe.sizes, "dropout": 0.0})
    if decoder is not None and recipe.decoder is not None:
        recipe = replace(recipe, decoder=replace(recipe.decoder, method=decoder))
    if sizes:
        layers = sizes.get("layers")
        rest = {k: v for k, v in sizes.items() if k != "layers"}
        recipe = replace(recipe, sizes={**recipe.sizes, **rest}, param_budget=None)
        if layers is not None and recipe.encoder and recipe.decoder:
            recipe = replace(
                recipe,
                encoder=replace(recipe.encoder, layers=layers),
                decoder=replace(recipe.decoder, layers=layers),
            )
    return recipe
