"""The one --device resolver every command uses (butcherflow.devices)."""

from __future__ import annotations

import pytest
import torch

from butcherflow import DeclarationError
from butcherflow.devices import resolve_device


@pytest.mark.parametrize("name", ["tpu", "cuda:", "cuda:x", "cpu:0", "auto:1", "", "mps"])
def test_unknown_names_are_refused_with_the_valid_ones(name: str) -> None:
    with pytest.raises(DeclarationError, match=r"--device.*auto, cpu, cuda or cuda:N"):
        resolve_device(name)


def test_cpu_and_auto_resolve_here() -> None:
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device(torch.device("cpu")) == torch.device("cpu")
    expected = "cuda:0" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto") == torch.device(expected)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
@pytest.mark.parametrize("name", ["cuda", "cuda:1"])
def test_a_gpu_without_cuda_names_the_key(name: str) -> None:
    with pytest.raises(DeclarationError, match=r"key 'device'.*CUDA is not available"):
        resolve_device(name, key="device")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_is_this_process_gpu() -> None:
    assert resolve_device("cuda", local_rank=0) == torch.device("cuda:0")
    assert resolve_device("cuda:0") == torch.device("cuda:0")
