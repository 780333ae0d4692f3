"""How the trained model is laid over the processes: `parallelize(model, process, ...)`, one
function (torchtitan's shape), and the full state dicts a sharded model saves and resumes from.

- Default (`fsdp=False`): the model (with `--compile`, a view of it whose blocks are compiled
  one by one: `assemble.compile_blocks`), wrapped in DDP under torchrun (every process holds
  all the weights and the optimizer state).
- `--fsdp` (FSDP2, `torch.distributed.fsdp.fully_shard`, under torchrun): each block (a layer of
  the stack: `LanguageModel.blocks`, `Seq2Seq.encoder` and `.decoder`) is compiled first when
  `--compile` (the order torchtitan uses), then sharded over the processes; the root module is
  sharded last (embedding, final norms). Parameters, gradients and AdamW's moments are split
  over the processes; each forward gathers one block's weights at a time.

A sharded run saves the same save-dir files as any other (`savedir/checkpoint.py`): the full
weights and the full optimizer state, gathered with `torch.distributed.checkpoint.state_dict`
(`get_model_state_dict`, `get_optimizer_state_dict`, `full_state_dict=True`), written by rank 0
in the layout of an unsharded `optimizer.state_dict()` (parameters by index). So a checkpoint
resumes sharded or not, on any process count, and `evaluate`, `export` and `show` read it as any.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import Tensor, nn
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_optimizer_state_dict,
    set_model_state_dict,
    set_optimizer_state_dict,
)
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.nn.parallel import DistributedDataParallel as DDP

from ..assemble import compile_blocks
from ..errors import DeclarationError
from ..savedir.layout import CheckpointError
from .distributed import Process

FULL = StateDictOptions(full_state_dict=True, cpu_offload=True)


def blocks(model: nn.Module) -> list[nn.Module]:
    """The model's blocks, in order: what FSDP shards one by one."""
    stacks = [getattr(model, name, None) for name in ("blocks", "encoder", "decoder")]
    return [block for stack in stacks if stack is not None for block in stack]


def require_process_group(process: Process) -> None:
    """`--fsdp` shards over a process group: a one-line error in a process that joined none."""
    if not process.distributed:
        raise DeclarationError(
            "FSDP shards over the processes of a process group, and this process is in none",
            key="--fsdp",
            valid="torchrun --nproc-per-node N -m butcherflow train ... --fsdp (or leave "
            "--fsdp out: one process holds the whole model)",
        )


def parallelize(
    model: nn.Module, process: Process, device: torch.device, *, compile: bool, fsdp: bool
) -> nn.Module:
    """The module the updates run (module docstring); with `fsdp`, `model` itself is sharded
    in place (build its optimizer after this call).

    **Arguments:**

    - `model`: the bare model, on `device`.
    - `process`: this process's place in the job; `fsdp` needs a process group (torchrun).
    - `compile`: `torch.compile` each block (`assemble.compile_blocks`, or each block in
      place before it is sharded).
    - `fsdp`: shard with FSDP2 instead of replicating with DDP.

    **Returns:** the module to call in training (`model` itself under FSDP).
    """
    if fsdp:
        require_process_group(process)
        mesh = init_device_mesh(device.type, (process.world_size,))
        for block in blocks(model):
            if compile:
                block.compile()
            fully_shard(block, mesh=mesh)
        fully_shard(model, mesh=mesh)
        return model
    run = compile_blocks(model) if compile else model  # a view sharing the parameters
    if process.distributed:
        run = DDP(run, device_ids=[device.index] if device.type == "cuda" else None)
    return run


def sharded(model: nn.Module) -> bool:
    """Whether `parallelize` sharded `model` with FSDP."""
    return any(isinstance(p, torch.distributed.tensor.DTensor) for p in model.parameters())


def full_state(
    model: nn.Module, optimizer: torch.optim.Optimizer
) -> tuple[nn.Module | dict[str, Tensor], dict[str, Any]]:
    """What a checkpoint holds: the weights (the model itself, or under FSDP its gathered
    tensors) and the optimizer state in the layout of an unsharded `optimizer.state_dict()`.
    Under FSDP every process must call it (it gathers); only rank 0's result is complete."""
    if not sharded(model):
        return model, optimizer.state_dict()
    weights: Any = get_model_state_dict(model, options=FULL)
    by_name: Any = get_optimizer_state_dict(model, optimizer, options=FULL)
    if not by_name:  # ranks other than 0 hold nothing with cpu_offload
        return weights, {}
    order = [name for group in by_name["param_groups"] for name in group["params"]]
    index = {name: i for i, name in enumerate(order)}
    return weights, {
        "state": {index[name]: value for name, value in by_name["state"].items()},
        "param_groups": [
            {**group, "params": [index[name] for name in group["params"]]}
            for group in by_name["param_groups"]
        ],
    }


def with_aliases(
    model: nn.Module, tensors: Mapping[str, Tensor], source: object
) -> dict[str, Tensor]:
    """The tensors of a weights file under every name of `model`'s state dict: a parameter
    that several modules share is stored once (`save_model`), its other names are filled from
    it; a missing or unexpected name is a `CheckpointError` naming it (another architecture)."""
    full = dict(tensors)
    shared: dict[int, list[str]] = {}
    for name, parameter in model.named_parameters(remove_duplicate=False):
        shared.setdefault(id(parameter), []).append(name)
    for names in shared.values():
        stored = [name for name in names if name in full]
        for name in names if stored else ():
            full.setdefault(name, full[stored[0]])
    expected = set(model.state_dict())
    for key in sorted(expected ^ set(full)):
        where = "is not in this model" if key in full else "is missing"
        raise CheckpointError(
            f"{source}: tensor '{key}' {where} (trained with another recipe or other sizes?)"
        )
    return full


def load_full_state(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    weights: Mapping[str, Tensor],
    state: Mapping[str, Any],
) -> None:
    """Load full weights (every name, aliases included) and an unsharded optimizer state into
    a sharded model and its optimizer (every process, each with the whole checkpoint)."""
    names = [name for name, _ in model.named_parameters()]
    set_model_state_dict(model, dict(weights), options=StateDictOptions(full_state_dict=True))
    groups, start = [], 0
    for group in state["param_groups"]:
        count = len(group["params"])
        groups.append({**group, "params": names[start : start + count]})
        start += count
    by_name: Any = {
        "state": {names[int(i)]: value for i, value in state["state"].items()},
        "param_groups": groups,
    }
    set_optimizer_state_dict(
        model, optimizer, by_name, options=StateDictOptions(full_state_dict=True)
    )
