"""Every option of a recipe side, on methods of every family, given values of every type: each
recipe builds a model that runs a forward pass, or fails with one `ButcherflowError` line, never a
traceback from inside the compiler or the model (a fuzz of 2,200 recipes found a dozen).

The sweep is methods × options × values; the default run takes a seeded sample of it, `-m slow`
the whole of it.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import tomli_w
import torch

import butcherflow as bf
from butcherflow.errors import ButcherflowError

FIELDS: dict[str, dict[str, Any]] = {
    "euler": {"field": "san+ffn"},
    "rk4": {"field": "san+ffn"},
    "rk2-gated": {"field": "san+ffn"},
    "backward-euler": {"field": "san+ffn"},
    "strang": {"fields": {"A": "ffn", "B": "san"}},
    "lm-resnet": {"field": "san+ffn"},
    "adams-bashforth-3": {"field": "san+ffn"},
    "dlcl": {"field": "san+ffn"},
    "hyper-connections-4": {"field": "san+ffn"},
    "neural-ode-rk4": {"field": "san+ffn"},
}
OPTIONS = ("coefficients", "step_size", "iterations", "share", "share_gate", "starter", "init")
VALUES: list[Any] = [7, -1, 0, 1.5, "x", True, [1], {"k": "x"}, 1e300, 10**30]
CASES = [(m, o, v) for m in FIELDS for o in OPTIONS for v in VALUES]
SAMPLE = set(random.Random(0).sample(range(len(CASES)), 24))
PARAMS = [
    pytest.param(*case, marks=() if i in SAMPLE else pytest.mark.slow)
    for i, case in enumerate(CASES)
]


def _recipe(method: str, option: str, value: Any) -> dict[str, Any]:
    """A tiny translation recipe whose encoder runs `method` with `option = value`."""
    encoder = {"layers": 2, "method": method, **FIELDS[method], option: value}
    decoder = {"layers": 1, "method": "euler", "field": "san+ca+ffn"}
    sizes = {"d_model": 16, "n_heads": 2, "d_ffn": 32}
    return {"name": "fuzzed", "sizes": sizes, "encoder": encoder, "decoder": decoder}


@pytest.mark.parametrize(("method", "option", "value"), PARAMS)
def test_a_fuzzed_option_builds_and_runs_or_is_one_line(
    tmp_path: Path, method: str, option: str, value: Any
) -> None:
    path = tmp_path / "recipe.toml"
    path.write_text(tomli_w.dumps(_recipe(method, option, value)), encoding="utf-8")
    try:
        model = bf.Seq2Seq(path, 20)
        tokens = torch.randint(3, 20, (2, 5))
        model(tokens, tokens)
    except ButcherflowError as error:
        assert "\n" not in str(error) and str(path) in str(error), str(error)
