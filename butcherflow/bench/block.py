"""`butcherflow bench block`: does the compiler add anything to the cost of the method itself?

Two measurements, each forward + backward, timed side by side (interleaved repeats, median):

1. every explicit catalog tableau and every splitting with RK sub-steps: the compiled block vs a
   hand-written PyTorch loop of the same method around the same field module (target ≤ 1.05);
2. the same block vs s × one field evaluation, s = its field calls (target ≤ 1.1).

`TorchTransformer` (`torch.nn.Transformer` with the same embeddings and tied output as a
`Seq2Seq`) lives here for `bench train`, the one home of the assembled models' throughput beside
`torch.nn.Transformer`.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from ..assemble import Seq2Seq
from ..compiler import CompiledBlock, RungeKuttaBlock, compile
from ..methods import ButcherTableau, Method, Splitting, catalog
from ..nn import Context
from . import write_section
from .order import machine

D_MODEL, N_HEADS, D_FFN = 256, 4, 1024
BATCH, LENGTH = 16, 32


def _timed(step: Callable[[], None]) -> float:
    start = time.perf_counter()
    step()
    return time.perf_counter() - start


def side_by_side(*steps: Callable[[], None], repeats: int) -> list[float]:
    """Median seconds of each step, interleaved so that load on the machine hits all alike."""
    for step in steps:
        step()  # warm-up
    times: list[list[float]] = [[] for _ in steps]
    for _ in range(repeats):
        for step, bucket in zip(steps, times, strict=True):
            bucket.append(_timed(step))
    return [statistics.median(bucket) for bucket in times]


def hand_written(method: ButcherTableau, field: nn.Module) -> Callable[[Tensor, Context], Tensor]:
    """The method as one would write it by hand: a loop over stages, zeros skipped."""
    A = [[float(x) for x in row] for row in method.A]
    b = [float(x) for x in method.b]

    def step(y: Tensor, ctx: Context) -> Tensor:
        stages: list[Tensor] = []
        for i in range(method.stages):
            value = y
            for j in range(i):
                if A[i][j] != 0.0:
                    value = value + A[i][j] * stages[j]
            stages.append(field(value, ctx, i))
        out = y
        for i, weight in enumerate(b):
            if weight != 0.0:
                out = out + weight * stages[i]
        return out

    return step


def hand_written_splitting(
    method: Splitting, fields: dict[str, nn.Module]
) -> Callable[[Tensor, Context], Tensor]:
    sub = method.substep
    assert sub is not None
    steps = [(f"{op}{k}", float(c)) for k, (op, c) in enumerate(method.steps)]

    def step(y: Tensor, ctx: Context) -> Tensor:
        slot = 0
        for target, c in steps:
            stages: list[Tensor] = []
            for i in range(sub.stages):
                value = y
                for j in range(i):
                    if float(sub.A[i][j]) != 0.0:
                        value = value + c * float(sub.A[i][j]) * stages[j]
                stages.append(fields[target](value, ctx, slot))
                slot += 1
            for i in range(sub.stages):
                if float(sub.b[i]) != 0.0:
                    y = y + c * float(sub.b[i]) * stages[i]
        return y

    return step


@dataclass
class BlockRow:
    """`calls_time`: the sum over the block's field calls of one call of that field alone."""

    name: str
    calls: int
    block: float
    hand: float
    calls_time: float

    @property
    def vs_hand(self) -> float:
        return self.block / self.hand

    @property
    def vs_calls(self) -> float:
        return self.block / self.calls_time


def _backward(run: Callable[[], Tensor]) -> Callable[[], None]:
    def go() -> None:
        run().square().mean().backward()

    return go


Hand = Callable[[Tensor, Context], Tensor]


def _tableau_pair(method: ButcherTableau) -> tuple[CompiledBlock, Hand]:
    rk = compile(method, field="san+ffn", d_model=D_MODEL, n_heads=N_HEADS, d_ffn=D_FFN)
    assert isinstance(rk, RungeKuttaBlock)
    return rk, hand_written(method, rk.field)


def _splitting_pair(method: Splitting) -> tuple[CompiledBlock, Hand]:
    fields = {op: "san" if op == "B" else "ffn" for op in method.operators}
    block = compile(method, fields=fields, d_model=D_MODEL, n_heads=N_HEADS, d_ffn=D_FFN)
    return block, hand_written_splitting(method, _called_modules(block))


@dataclass(frozen=True)
class Benched:
    """How a family's catalog entries are timed: which of them (`chosen`), and the compiled
    block beside its hand-written loop (`pair`)."""

    chosen: Callable[[Any], bool]
    pair: Callable[[Any], tuple[CompiledBlock, Hand]]


# The families this benchmark times; a family adds its line here.
BENCHED: dict[type[Method], Benched] = {
    ButcherTableau: Benched(lambda m: m.is_explicit and not m.symbols, _tableau_pair),
    Splitting: Benched(lambda m: m.substep is not None, _splitting_pair),
}


def benched_names() -> list[str]:
    """The catalog entries `run_block` times: explicit tableaux without symbols, splittings
    with Runge-Kutta sub-steps."""
    return [
        n
        for n in catalog
        if (how := BENCHED.get(type(m := catalog[n]))) is not None and how.chosen(m)
    ]


def bench_method(name: str, repeats: int) -> BlockRow:
    method = catalog[name]
    y = torch.randn(BATCH, LENGTH, D_MODEL, requires_grad=True)
    ctx = Context()
    block, hand = BENCHED[type(method)].pair(method)
    modules = _called_modules(block)
    calls = [str(n.target) for n in block.program.graph.nodes if n.op == "call_module"]
    singles = [_backward(_call(m, y, ctx)) for m in modules.values()]
    t_block, t_hand, *t_single = side_by_side(
        _backward(lambda: block(y, ctx=ctx, check=False)),
        _backward(lambda: hand(y, ctx)),
        *singles,
        repeats=repeats,
    )
    per_module = dict(zip(modules, t_single, strict=True))
    field_calls = block.field_calls
    assert field_calls is not None  # None only for adaptive ODE solvers, never benchmarked here
    return BlockRow(name, field_calls, t_block, t_hand, sum(per_module[c] for c in calls))


def _call(module: nn.Module, y: Tensor, ctx: Context) -> Callable[[], Tensor]:
    def run() -> Tensor:
        out: Tensor = module(y, ctx, 0)
        return out

    return run


def _called_modules(block: CompiledBlock) -> dict[str, nn.Module]:
    """The distinct field modules the block's graph calls, by target name."""
    return {
        str(n.target): block.program.get_submodule(str(n.target))
        for n in block.program.graph.nodes
        if n.op == "call_module"
    }


class TorchTransformer(nn.Module):
    """torch.nn.Transformer with the same embeddings, positions and tied output as Seq2Seq."""

    SIDES = ("core.encoder.layers", "core.decoder.layers")  # its blocks (`compile_blocks`)

    def __init__(self, reference: Seq2Seq) -> None:
        super().__init__()
        recipe = reference.recipe
        d, heads, ffn = (int(recipe.sizes[k]) for k in ("d_model", "n_heads", "d_ffn"))
        assert recipe.encoder is not None and recipe.decoder is not None
        self.embedding = reference.embedding.__class__(
            recipe, reference.vocab_size, reference.pad_index
        )
        self.core = nn.Transformer(
            d,
            heads,
            recipe.encoder.layers,
            recipe.decoder.layers,
            ffn,
            float(recipe.sizes["dropout"]),
            batch_first=True,
            norm_first=True,
        )
        self.pad_index = reference.pad_index

    def forward(self, src: Tensor, tgt: Tensor) -> Tensor:
        pad = src.eq(self.pad_index)
        mask = nn.Transformer.generate_square_subsequent_mask(
            tgt.shape[1], device=tgt.device, dtype=torch.bool
        )
        out = self.core(
            self.embedding(src, pad),
            self.embedding(tgt, None),
            tgt_mask=mask,
            src_key_padding_mask=pad,
            memory_key_padding_mask=pad,
            tgt_is_causal=True,
        )
        return out @ self.embedding.tokens.weight.T


def run_block(output: str, repeats: int, command: str) -> None:
    names = benched_names()
    rows = []
    for name in names:
        rows.append(bench_method(name, repeats))
        r = rows[-1]
        print(
            f"{name:<22} calls {r.calls:>2}  block {r.block * 1e3:7.1f} ms  hand "
            f"{r.hand * 1e3:7.1f} ms  ratio {r.vs_hand:.3f}  vs s*field {r.vs_calls:.3f}",
            flush=True,
        )
    lines = [
        "## Compiled blocks (`butcherflow bench block`)",
        "",
        f"Command: `{command}` ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}). "
        f"Machine: {machine()}. Each time is the median of {repeats} interleaved repeats of "
        f"forward + backward on a ({BATCH}, {LENGTH}, {D_MODEL}) input, field "
        f"`san+ffn` at d_model={D_MODEL}, n_heads={N_HEADS}, "
        f"d_ffn={D_FFN} (splittings: A=ffn, B=san, C=ffn). The last column divides by the sum, "
        "over the block's field calls, of one call of that field alone (timed in the same "
        "interleaved loop).",
        "",
        "| method | field calls s | block (ms) | hand-written loop (ms) | block / hand (≤ 1.05) "
        "| block / (s field calls) (≤ 1.1) |",
        "|---|--:|--:|--:|--:|--:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.name} | {r.calls} | {r.block * 1e3:.1f} | {r.hand * 1e3:.1f} | "
            f"{r.vs_hand:.3f} {'PASS' if r.vs_hand <= 1.05 else 'FAIL'} | "
            f"{r.vs_calls:.3f} {'PASS' if r.vs_calls <= 1.1 else 'FAIL'} |"
        )
    lines += [
        "",
        "The assembled models' training throughput beside `torch.nn.Transformer` has one "
        "home: the *Training throughput* section (`butcherflow bench train`).",
    ]
    body = "\n".join(lines)
    print(body)
    write_section(output, "block", body)
