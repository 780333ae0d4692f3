"""`butcherflow bench streams` (also run by `bench block`): what do hyper-connections cost?

A stack of L `san+ffn` layers compiled from `hyper-connections-4` (n = 4 streams) under each
coefficient policy, against the residual stack y ← y + Fₘ(y) over the very same field modules,
forward + backward; eagerly, and under `torch.compile` (inductor: the stream mixing takes its
fused form, `nn/streams.py`) against the residual stack compiled too. All policies, both modes
and their residual stacks are timed in one interleaved run (median of the repeats), so that
every ratio sees the same load on a shared machine. Targets, compiled against compiled: ≤ 1.05×
for exact and learned coefficients, ≤ 1.10× for per-token ones (mHC reports 1.067× at n = 4
with fused kernels). A compiled row that misses its target says where the extra time goes: one
profiled step of the stack beside one of its residual stack.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import final

import torch
from torch import Tensor, nn
from torch.profiler import ProfilerActivity, profile

from ..compiler import GeneralLinearStack, compile_stack
from ..devices import compile_problem, resolve_device
from ..nn import Context
from . import write_section
from .block import BATCH, D_FFN, D_MODEL, LENGTH, N_HEADS, side_by_side
from .order import machine

LAYERS = 6
POLICIES = ("exact", "learned", "dynamic", "sinkhorn")
TARGETS = {"exact": 1.05, "learned": 1.05, "dynamic": 1.10, "sinkhorn": 1.10}  # compiled
MODES = ("eager", "compiled")


@final
@dataclass(frozen=True)
class StreamRow:
    """One policy in one mode: seconds per forward + backward of the stack and of its
    residual stack; `where`: for a compiled row past its target, where the time goes."""

    policy: str
    mode: str
    stack: float
    residual: float
    where: str = ""

    @property
    def ratio(self) -> float:
        return self.stack / self.residual

    @property
    def target(self) -> float | None:
        return TARGETS[self.policy] if self.mode == "compiled" else None

    @property
    def passed(self) -> bool | None:
        return None if self.target is None else self.ratio <= self.target


def residual_stack(stack: GeneralLinearStack) -> Callable[[Tensor, Context], Tensor]:
    """y ← y + Fₘ(y) over the stack's own field modules (the same weights, the same calls)."""
    fields: list[nn.Module] = [
        stack.program.get_submodule(f"layer{m}") for m in range(stack.layers)
    ]

    def run(y: Tensor, ctx: Context) -> Tensor:
        for m, field in enumerate(fields):
            y = y + field(y, ctx, m)
        return y

    return run


def _step(run: Callable[[], Tensor], device: torch.device) -> Callable[[], None]:
    def step() -> None:
        run().square().mean().backward()
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    return step


def _steps(policy: str, device: torch.device, compiled: bool) -> tuple[Callable[[], None], ...]:
    """(stack step, residual step) for `policy`, eager or compiled."""
    stack = compile_stack(
        "hyper-connections-4",
        ["san+ffn"] * LAYERS,
        coefficients=policy,
        d_model=D_MODEL,
        n_heads=N_HEADS,
        d_ffn=D_FFN,
    ).to(device)
    assert isinstance(stack, GeneralLinearStack)
    residual = residual_stack(stack)
    run_stack: Callable[..., Tensor] = torch.compile(stack) if compiled else stack
    run_residual = torch.compile(residual) if compiled else residual
    y = torch.randn(BATCH, LENGTH, D_MODEL, device=device, requires_grad=True)
    ctx = Context()
    return (
        _step(lambda: run_stack(y, ctx=ctx, check=False), device),
        _step(lambda: run_residual(y, ctx), device),
    )


def bench_streams(repeats: int, device: torch.device, compiled: bool) -> list[StreamRow]:
    """Every policy's stack and its residual stack, eager and (with `compiled`) compiled,
    interleaved in one `side_by_side` run; the first (untimed) call of each compiles it."""
    modes = MODES if compiled else MODES[:1]
    pairs = {(p, m): _steps(p, device, m == "compiled") for m in modes for p in POLICIES}
    times = side_by_side(*(s for pair in pairs.values() for s in pair), repeats=repeats)
    rows = []
    for k, ((policy, mode), (stack, residual)) in enumerate(pairs.items()):
        row = StreamRow(policy, mode, times[2 * k], times[2 * k + 1])
        if row.passed is False:
            row = StreamRow(policy, mode, row.stack, row.residual, where(stack, residual, device))
        rows.append(row)
    return rows


def _self_times(step: Callable[[], None], device: torch.device, steps: int) -> dict[str, float]:
    """Self time per operator (ms), the least over `steps` profiled steps (the load of a shared
    machine only adds); every inductor graph's own code (its fused C++ or Triton loops) counts
    as one entry, `fused kernels`."""
    cuda = device.type == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    key = "self_device_time_total" if cuda else "self_cpu_time_total"
    least: dict[str, float] = {}
    for _ in range(steps):
        with profile(activities=activities) as prof:
            step()
        found: dict[str, float] = {}
        for event in prof.key_averages():
            fused = "CompiledFxGraph" in event.key or "triton" in event.key
            name = "fused kernels" if fused else event.key
            found[name] = found.get(name, 0.0) + float(getattr(event, key)) / 1e3
        least = {k: min(v, least.get(k, v)) for k, v in found.items()}
    return least


def where(stack: Callable[[], None], residual: Callable[[], None], device: torch.device) -> str:
    """Where the stack's time beyond its residual stack's goes: the operators whose self time
    grew most, per step (the least of 5 profiled steps of each)."""
    ours, theirs = _self_times(stack, device, 5), _self_times(residual, device, 5)
    extra = {k: v - theirs.get(k, 0.0) for k, v in ours.items()}
    total = sum(ours.values()) - sum(theirs.values())
    grown = sorted((item for item in extra.items() if item[1] > 0), key=lambda kv: -kv[1])[:3]
    parts = ", ".join(f"`{name[:40]}` +{ms:.1f} ms" for name, ms in grown)
    return f"profiled, per step: {total:+.1f} ms in all ({parts})"


def run_streams(output: str, repeats: int, command: str, device: str = "auto") -> None:
    target = resolve_device(device)
    load = os.getloadavg()[0]  # the machine's business, which every stack shared (interleaved)
    problem = compile_problem(target.type)
    if problem is not None:
        print(f"torch.compile cannot compile on {target.type}: {problem}; eager rows only")
    rows = bench_streams(repeats, target, compiled=problem is None)
    for r in rows:
        print(
            f"{r.policy:<9} {r.mode:<8} stack {r.stack * 1e3:7.1f} ms  "
            f"residual {r.residual * 1e3:7.1f} ms  ratio {r.ratio:.3f}",
            flush=True,
        )
    body = "\n".join(_section(rows, repeats, command, target, problem, load))
    print(body)
    write_section(output, "streams", body)


def _section(
    rows: list[StreamRow],
    repeats: int,
    command: str,
    device: torch.device,
    problem: str | None,
    load: float,
) -> list[str]:
    gpu = f", {torch.cuda.get_device_name(device)}" if device.type == "cuda" else ""
    lines = [
        "## Hyper-connection stacks vs the residual stack (`butcherflow bench streams`)",
        "",
        f"Command: `{command}` ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}). "
        f"Machine: {machine()}; torch {torch.__version__}, device {device}{gpu}, "
        f"{torch.get_num_threads()} torch thread(s); load average {load:.1f} at start, "
        f"{os.getloadavg()[0]:.1f} at the end. Each time is the median of {repeats} "
        f"repeats of forward + backward on a ({BATCH}, {LENGTH}, {D_MODEL}) input through "
        f"{LAYERS} `san+ffn` layers (d_model={D_MODEL}, n_heads={N_HEADS}, d_ffn={D_FFN}): "
        "the `hyper-connections-4` stack (n = 4 streams) under each coefficient policy, "
        "against y ← y + F(y) over the same field modules, eager against eager and "
        "`torch.compile` (inductor) against `torch.compile`; every stack interleaved in one "
        "run. Compiled, the stream mixing is fused (`butcherflow/nn/streams.py`). Targets, "
        "compiled: ≤ 1.05× for exact and learned, ≤ 1.10× for dynamic and sinkhorn (mHC "
        "reports 1.067× at n = 4 with fused kernels); eager rows are the unfused reference.",
        "",
        "| policy | mode | GLM stack (ms) | residual stack (ms) | ratio | target | "
        "where the time goes |",
        "|---|---|--:|--:|--:|--:|---|",
    ]
    for r in rows:
        verdict = "—" if r.target is None else f"≤ {r.target:.2f} {'PASS' if r.passed else 'FAIL'}"
        lines.append(
            f"| {r.policy} | {r.mode} | {r.stack * 1e3:.1f} | {r.residual * 1e3:.1f} | "
            f"{r.ratio:.3f} | {verdict} | {r.where} |"
        )
    compiled = [r for r in rows if r.mode == "compiled"]
    if compiled:
        worst = max(compiled, key=lambda r: r.ratio / (r.target or 1.0))
        lines += ["", f"Worst compiled case: `{worst.policy}`, {worst.ratio:.3f}×."]
    else:
        lines += ["", f"No compiled rows: torch.compile cannot compile here ({problem})."]
    return lines
