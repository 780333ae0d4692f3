"""The glue between the training loop and `torch.distributed` (launched by `torchrun`).

`torchrun --nproc-per-node N -m butcherflow train ...` sets `RANK`, `WORLD_SIZE`, `LOCAL_RANK`,
`MASTER_ADDR` and `MASTER_PORT`; `init` reads them and joins the process group (NCCL on GPUs,
gloo on CPUs). Without them the run is a single process and every helper here is a no-op, so the
loop has one code path. DDP itself (gradient all-reduce, `no_sync`) is PyTorch's.
"""

from __future__ import annotations

import gc
import os
from dataclasses import dataclass
from typing import final

import torch
import torch.distributed as dist
from torch.distributed.tensor import _collective_utils, _redistribute, debug

from ..errors import ButcherflowError


@final
@dataclass(frozen=True)
class Process:
    """This process's place in the job: `rank` of `world_size`, `local_rank` on its node, and
    the process group's `backend` (`"nccl"`, `"gloo"`; None when it joined none)."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    backend: str | None = None

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        """In a process group, hence trained through DDP (torchrun, even with one process)."""
        return self.backend is not None


def _env_int(name: str, default: int) -> int:
    text = os.environ.get(name)
    if text is None:
        return default
    try:
        return int(text)
    except ValueError:
        raise ButcherflowError(f"environment variable {name}={text!r} is not an integer") from None


def init(device_type: str) -> Process:
    """Join the process group described by torchrun's environment variables (if any).

    **Arguments:**

    - `device_type`: `"cuda"` (NCCL backend) or `"cpu"` (gloo backend).

    **Returns:** this process's `Process`; a single process, in no group, without torchrun.
    A job torchrun launched joins a group even with one process (`--nproc-per-node 1`), so that
    it runs the very DDP and NCCL code of a larger job.
    """
    world_size = _env_int("WORLD_SIZE", 1)
    launched = world_size > 1 or "TORCHELASTIC_RUN_ID" in os.environ  # set by torchrun
    if not launched:
        return Process(_env_int("RANK", 0), world_size, _env_int("LOCAL_RANK", 0))
    backend = "nccl" if device_type == "cuda" else "gloo"
    process = Process(_env_int("RANK", 0), world_size, _env_int("LOCAL_RANK", 0), backend)
    if not dist.is_initialized():
        if device_type == "cuda":
            torch.cuda.set_device(process.local_rank)
        dist.init_process_group(backend=backend, rank=process.rank, world_size=world_size)
    return process


def is_main() -> bool:
    """True on rank 0 (and in a single-process run)."""
    return not dist.is_initialized() or dist.get_rank() == 0


def all_reduce_sum(values: list[float], device: torch.device) -> list[float]:
    """Element-wise sums of `values` over all processes (float64, so token counts stay exact)."""
    if not dist.is_initialized():
        return list(values)
    tensor = torch.tensor(values, dtype=torch.float64, device=device)
    dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    return [float(x) for x in tensor.tolist()]


def any_process(flag: bool, device: torch.device) -> bool:
    """True when `flag` is true on any process (a stop decision all ranks must share)."""
    if not dist.is_initialized():
        return flag
    tensor = torch.tensor([1.0 if flag else 0.0], device=device)
    dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
    return bool(tensor.item() > 0)


def barrier() -> None:
    """Wait for every process (no-op in a single-process run)."""
    if dist.is_initialized():
        dist.barrier()


def cleanup() -> None:
    """Leave the process group (no-op when none was joined), and free it.

    `destroy_process_group` only forgets the group; its backend (gloo's worker and socket
    threads) lives while anything holds it. Under FSDP, DTensor's module-level caches hold
    the device mesh, hence the group, to the end of the process: gloo's threads would then
    outlive the interpreter's finalization and run through `exit()`, where a rank can abort
    ("terminate called without an active exception"). With the caches cleared (and the
    model dropped by the caller) the group is freed here and its threads joined."""
    if not dist.is_initialized():
        return
    _clear_dtensor_caches()
    gc.collect()  # the sharded model's reference cycles, which hold the mesh
    dist.destroy_process_group()


def _clear_dtensor_caches() -> None:
    """Empty DTensor's caches, which key on device meshes (private torch APIs: each is
    skipped where this torch lacks it)."""
    for clear in (
        getattr(debug, "_clear_sharding_prop_cache", None),
        getattr(_redistribute, "clear_redistribute_planner_cache", None),
        getattr(getattr(_redistribute, "_gen_transform_infos", None), "cache_clear", None),
        getattr(
            getattr(getattr(_collective_utils, "MeshTopoInfo", None), "build_from_mesh", None),
            "cache_clear",
            None,
        ),
    ):
        if clear is not None:
            clear()
