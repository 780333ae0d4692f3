"""Where the time of one training step goes: `butcherflow bench train --profile DIR`.

One more step of a timed model runs under `torch.profiler` (CPU and, on a GPU, CUDA activity).
Its Chrome trace (`NAME.json.gz`, for chrome://tracing or Perfetto) and the profiler's table of
operators (`NAME.txt`) go to DIR; the operators that took the largest share of the step's device
time (CPU time on a CPU) come back as the summary a benchmark section states beside a figure.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import final

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile


@final
@dataclass(frozen=True)
class Hotspot:
    """One operator's share of a profiled step.

    **Arguments:**

    - `name`: the operator or kernel (`aten::mm`, a Triton kernel's name, ...).
    - `share`: its self time over the step's total self time, in [0, 1].
    """

    name: str
    share: float


def file_stem(name: str) -> str:
    """`name` (a row label such as `torch.nn.Transformer (512/8/2048, 6+6 layers)`) as a file
    name: runs of other characters than letters, digits, `.`, `-` and `_` become one `_`."""
    return re.sub(r"[^\w.-]+", "_", name).strip("_")


def profile_step(
    step: Callable[[], None], device: torch.device, folder: Path, name: str, top: int = 5
) -> list[Hotspot]:
    """Run `step` once under the profiler and write its trace and table.

    **Arguments:**

    - `step`: one training step (already warmed up and compiled).
    - `device`: where it runs: on a CUDA device, kernels are timed on the device.
    - `folder`: where `STEM.json.gz` (Chrome trace) and `STEM.txt` (operator table) go, STEM
      being `file_stem(name)`.
    - `name`: the model's row label.
    - `top`: how many operators the summary keeps.

    **Returns:** the `top` operators by self time (on a GPU: the kernels by device time),
    largest first.
    """
    cuda = device.type == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        step()
        if cuda:
            torch.cuda.synchronize(device)
    folder.mkdir(parents=True, exist_ok=True)
    stem = file_stem(name)
    prof.export_chrome_trace(str(folder / f"{stem}.json.gz"))
    key = "self_device_time_total" if cuda else "self_cpu_time_total"
    events = prof.key_averages()
    table = events.table(sort_by=key, row_limit=25)
    (folder / f"{stem}.txt").write_text(f"{name}: one training step\n\n{table}\n", encoding="utf-8")
    # on a GPU, the kernels themselves: an operator's self device time would count them again
    kernels = [e for e in events if not cuda or e.device_type == DeviceType.CUDA]
    times = [(e.key, float(getattr(e, key))) for e in kernels or events]
    total = sum(t for _, t in times)
    ranked = sorted(times, key=lambda item: -item[1])[:top]
    return [Hotspot(k, t / total) for k, t in ranked if total > 0]


def describe(hotspots: list[Hotspot]) -> str:
    """`aten::mm 41%, aten::bmm 12%, ...`: a profiled step's summary in a sentence."""
    return ", ".join(f"`{h.name[:60]}` {h.share:.0%}" for h in hotspots)


__all__ = ["Hotspot", "describe", "file_stem", "profile_step"]
