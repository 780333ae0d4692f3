"""Where a model runs: the `--device` and `--threads` of every command, in one place.

`auto` is this process's GPU when CUDA works, else the CPU; `cuda` is this process's GPU (its
`LOCAL_RANK` under torchrun, else GPU 0); `cuda:N` is GPU N; `cpu` is the CPU. `--threads` sets
torch's CPU threads. Training, generation, the experiments and the benchmarks all resolve their
device and threads here, and ask `compile_problem` whether `--compile` can work on the device.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch

from .errors import DeclarationError, count_problem

DEVICES = "auto, cpu, cuda or cuda:N"


def check_device(device: str | torch.device, key: str = "--device") -> None:
    """Refuse a device name that is not `auto`, `cpu`, `cuda` or `cuda:N` (whether or not this
    machine has the GPU: that is `resolve_device`'s question)."""
    head, colon, index = str(device).partition(":")
    if not (
        (head in ("auto", "cpu") and not colon)
        or (head == "cuda" and (not colon or index.isdigit()))
    ):
        raise DeclarationError("unknown device", key=key, value=str(device), valid=DEVICES)


def resolve_device(
    device: str | torch.device = "auto", *, local_rank: int = 0, key: str = "--device"
) -> torch.device:
    """The `torch.device` that `device` names on this machine.

    **Arguments:**

    - `device`: `"auto"`, `"cpu"`, `"cuda"`, `"cuda:N"` or a `torch.device`.
    - `local_rank`: the GPU that `"auto"` and `"cuda"` mean (this process's under torchrun).
    - `key`: the option named in errors.

    **Returns:** the device. **Raises:** `DeclarationError` naming `key` for an unknown name, or a
    GPU on a machine where CUDA is not available.
    """
    check_device(device, key)
    text = str(device)
    if text == "auto":
        text = "cuda" if torch.cuda.is_available() else "cpu"
    if text == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise DeclarationError(
            "CUDA is not available on this machine",
            key=key,
            value=str(device),
            valid=f"{key} cpu or auto",
        )
    return torch.device(text if ":" in text else f"cuda:{local_rank}")


def set_threads(threads: int | None) -> int:
    """Set torch's intra-op CPU threads (`--threads`); None leaves torch's default.

    torch's default is `OMP_NUM_THREADS` when set, else the number of physical cores. On a
    machine shared with other work, that many threads oversubscribe the cores and small models
    run several times slower than with one (each thread waits for the busiest core).

    **Arguments:**

    - `threads`: an integer >= 1, or None.

    **Returns:** the thread count torch uses from now on (to print and record).
    """
    check_threads(threads)
    if threads is not None:
        torch.set_num_threads(threads)
    return torch.get_num_threads()


def check_threads(threads: Any) -> None:
    """`--threads` is None (torch's default) or an integer >= 1."""
    if threads is None:
        return
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise DeclarationError(
            count_problem(threads),
            key="--threads",
            value=threads,
            valid="an integer >= 1, or leave it out for torch's default "
            f"({torch.get_num_threads()} here)",
        )


def threads_note(threads: int | None) -> str:
    """`"1 torch thread (--threads 1)"` or `"2 torch threads (torch's default)"`, to print."""
    count = torch.get_num_threads()
    plural = "" if count == 1 else "s"
    why = f"--threads {threads}" if threads is not None else "torch's default"
    return f"{count} torch thread{plural} ({why})"


def _probe(x: torch.Tensor) -> torch.Tensor:
    return torch.tanh(x) * 2 + 1


@functools.cache
def compile_problem(device_type: str) -> str | None:
    """Why `torch.compile`'s default backend (inductor) cannot compile on this device type
    (`"cpu"`, `"cuda"`), in one line, or None when it can: a three-op function is compiled and
    run once (inductor needs a C++ compiler for the CPU and Triton for a GPU; their absence
    only shows when something is compiled). Asked once per process and device type; callers
    run eagerly, saying so, instead of failing with the compiler's traceback.

    **Arguments:** `device_type`: `torch.device.type`.

    **Returns:** None, or the failure as `"ErrorType: first line of its message"`.
    """
    try:
        compiled = torch.compile(_probe, backend="inductor", fullgraph=True, dynamic=False)
        compiled(torch.ones(4, device=device_type))
    except Exception as error:  # whatever the backend raises: it is reported, not re-raised
        message = str(error).strip().splitlines()
        return f"{type(error).__name__}: {message[0] if message else 'no message'}"
    return None


def can_compile(device_type: str, say: Callable[[str], None] = print) -> bool:
    """Whether `--compile` can work on `device_type` (`compile_problem`); if not, say so in
    one line through `say` (the caller then runs eagerly).

    **Arguments:** `device_type`: where the model runs (`torch.device.type`); `say`: prints the
    fall-back line.

    **Returns:** True when inductor compiles there.
    """
    problem = compile_problem(device_type)
    if problem is not None:
        say(
            f"--compile: torch.compile cannot compile on {device_type} ({problem}); running eagerly"
        )
    return problem is None
