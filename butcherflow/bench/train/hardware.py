"""What a device can do at best, and what a run used: dense peaks for MFU, peak memory.

MFU (model FLOPs utilisation, PaLM's definition) divides the FLOPs a model needs by the time
taken and by the device's peak. The peaks below are NVIDIA's dense (no 2:4 sparsity) tensor-core
figures for bf16 inputs with fp32 accumulation, from each product's datasheet; boost clocks, so a
sustained matrix product reaches somewhat less (one H100 SXM here ran an 8192³ bf16 product at
about 800 of its 989 TFLOP/s). The V100 has no bf16: its row is the fp16 peak, and says so.
"""

from __future__ import annotations

import re
import resource
import sys
from dataclasses import dataclass
from typing import final

import torch

MIB = 1024 * 1024  # bytes in a MiB, the unit of every memory column


@final
@dataclass(frozen=True)
class Peak:
    """A device's dense tensor-core peak.

    **Arguments:**

    - `pattern`: a regular expression matched against `torch.cuda.get_device_name()`.
    - `name`: the product, as the table shows it.
    - `tflops`: dense peak in TFLOP/s.
    - `precision`: the input precision of that peak (`"bf16"`; the V100's is `"fp16"`).
    """

    pattern: str
    name: str
    tflops: float
    precision: str = "bf16"


# First match wins: the more specific names come first (L40S before L40 before L4, A100 before
# A10, the PCIe/NVL variants before the SXM default).
PEAKS: tuple[Peak, ...] = (
    Peak(r"H100.*(PCIe|PCIE)", "H100 PCIe", 756.0),
    Peak(r"H100.*NVL", "H100 NVL", 835.0),
    Peak(r"H100", "H100 SXM", 989.0),
    Peak(r"H200.*NVL", "H200 NVL", 835.0),
    Peak(r"H200", "H200 SXM", 989.0),
    Peak(r"A100", "A100", 312.0),
    Peak(r"L40S", "L40S", 362.0),
    Peak(r"L40\b", "L40", 181.0),
    Peak(r"\bL4\b", "L4", 121.0),
    Peak(r"\bA10\b", "A10", 125.0),
    Peak(r"V100.*(PCIe|PCIE)", "V100 PCIe", 112.0, "fp16"),
    Peak(r"V100", "V100 SXM2", 125.0, "fp16"),
    Peak(r"RTX 4090", "GeForce RTX 4090", 165.2),
    Peak(r"RTX 3090(?! Ti)", "GeForce RTX 3090", 71.0),
)


def peak_of(device_name: str) -> Peak | None:
    """The peak of the device named `device_name` (as `torch.cuda.get_device_name` spells it:
    "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", ...), or None for a device not listed."""
    for peak in PEAKS:
        if re.search(peak.pattern, device_name):
            return peak
    return None


def device_peak(device: torch.device) -> Peak | None:
    """The peak of a CUDA device; None on the CPU (no tensor-core peak) and for unlisted GPUs."""
    if device.type != "cuda":
        return None
    return peak_of(torch.cuda.get_device_name(device))


def process_peak_rss() -> int:
    """The largest resident set size this process has had, in bytes (Linux: KiB, macOS: bytes)."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(rss) if sys.platform == "darwin" else int(rss) * 1024


def resident_bytes(model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> int:
    """Bytes a model keeps between steps: its parameters and buffers, and the optimizer's state
    (AdamW: two moments per parameter); gradients are freed after each step."""
    tensors = [*model.parameters(), *model.buffers()]
    tensors += [
        v for state in optimizer.state.values() for v in state.values() if torch.is_tensor(v)
    ]
    return sum(t.numel() * t.element_size() for t in tensors)


def device_notes(target: torch.device, peak: Peak | None) -> tuple[str, str]:
    """What the MFU is measured against and what the peak memory counts, on `target`: the two
    clauses of a training benchmark's section."""
    if target.type == "cuda":
        peak_text = (
            f"MFU against the {peak.name}'s dense {peak.precision} peak of {peak.tflops:g} TFLOP/s"
            if peak is not None
            else "MFU n/a: this GPU is not in bench.train.hardware.PEAKS"
        )
        total = torch.cuda.get_device_properties(target).total_memory
        memory_text = (
            "peak memory per model (parameters + AdamW state + its step's peak), "
            f"of the device's {total / MIB:,.0f} MiB"
        )
        return peak_text, memory_text
    memory_text = (
        f"peak resident set of the whole process (all models): {process_peak_rss() / MIB:,.0f} MiB"
    )
    return "MFU n/a on a CPU (no tensor-core peak)", memory_text


__all__ = [
    "MIB",
    "PEAKS",
    "Peak",
    "device_notes",
    "device_peak",
    "peak_of",
    "process_peak_rss",
    "resident_bytes",
]
