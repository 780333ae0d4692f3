"""Where a model runs: the `--device` of every command, resolved in one place.

`auto` is this process's GPU when CUDA works, else the CPU; `cuda` is this process's GPU (its
`LOCAL_RANK` under torchrun, else GPU 0); `cuda:N` is GPU N; `cpu` is the CPU. Training,
generation, the experiments and the benchmarks all resolve their device here.
"""

from __future__ import annotations

import torch

from .errors import DeclarationError

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
