"""`butcherflow extract FACTORY`: a module named by a factory, extracted and verified; a bad
factory name is one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from butcherflow.cli import main

# A user's own file: a pre-norm block y + F(y) + ½·G(y + F(y)) built from torch alone.
USER_FILE = """
import functools

import torch
from torch import nn
from butcherflow.extraction.target import Target


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(8), nn.LayerNorm(8)
        self.f, self.g = nn.Linear(8, 8), nn.Linear(8, 8)

    def forward(self, y):
        y = y + self.f(self.norm1(y))
        return y + 0.5 * self.g(self.norm2(y))


def make():
    torch.manual_seed(0)
    fields = {"f": ("norm1", "f"), "g": ("norm2", "g")}
    return Target(Block().eval(), (torch.randn(2, 3, 8),), fields)


def not_a_target():
    return 3


def takes_an_argument(seed):
    return make()


def _supplied(factory):
    @functools.wraps(factory)
    def wrapper():
        return factory(0)

    return wrapper


supplied = _supplied(takes_an_argument)
"""


@pytest.fixture
def user_file(tmp_path: Path) -> Path:
    path = tmp_path / "mine.py"
    path.write_text(USER_FILE, encoding="utf-8")
    return path


def test_a_factory_in_a_file_is_extracted_and_verified(
    user_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["extract", f"{user_file}:make", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["declaration"]["family"] == "splitting"
    assert data["declaration"]["steps"] == [["f", "1"], ["g", "1/2"]]
    assert data["round_trip"] < 1e-13


def test_fields_on_the_command_line_replace_the_targets(
    user_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["extract", f"{user_file}:make", "--fields", "first=norm1,f", "second=norm2,g"])
    assert code == 0
    out = capsys.readouterr().out
    assert "field first: norm1 -> f" in out and "round trip" in out


def test_markdown_names_the_fields(user_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["extract", f"{user_file}:make", "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert "- field f: norm1 -> f" in out and out.rstrip().endswith("(float64)")


@pytest.mark.parametrize(
    "factory, says",
    [
        ("no_such_package.layers:make", "no module named 'no_such_package'"),
        ("butcherflow.extraction.target:no_such_callable", "has no callable named"),
        ("justaname", "is not of the form X:callable"),
        ("missing/file.py:make", "no file missing/file.py"),
    ],
)
def test_a_bad_factory_is_one_line(
    factory: str, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["extract", factory]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and says in err and "Traceback" not in err


def test_a_factory_returning_no_target_is_one_line(
    user_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["extract", f"{user_file}:not_a_target"]) == 1
    assert "returned int, not a Target" in capsys.readouterr().err


def test_a_malformed_field_is_one_line(user_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["extract", f"{user_file}:make", "--fields", "attn"]) == 1
    assert "--fields: 'attn' is not a field" in capsys.readouterr().err


def test_streams_folded_into_the_batch_on_the_command_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    pytest.importorskip("hyper_connections")
    factory = "butcherflow.zoo:hyper_connections_init"
    assert main(["extract", factory, "--streams", "batch:4", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["declaration"]["V"] == [[str(int(i == j)) for j in range(4)] for i in range(4)]


def test_bad_streams_are_one_line(user_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["extract", f"{user_file}:make", "--streams", "batch:x"]) == 1
    assert "--streams: 'batch:x' is neither an axis nor batch:R" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("axis", "message"),
    [("-1", "streams=-1 does not fit the state"), ("0", "field 'f' reads 48 numbers")],
)
def test_a_streams_axis_that_does_not_hold_the_streams_is_one_line(
    user_file: Path, capsys: pytest.CaptureFixture[str], axis: str, message: str
) -> None:
    assert main(["extract", f"{user_file}:make", "--streams", axis]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and message in err


def test_a_factory_that_needs_arguments_is_one_line(
    user_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["extract", f"{user_file}:takes_an_argument"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot be called without arguments" in err
    assert main(["extract", f"{user_file}:supplied", "--format", "json"]) == 0  # a decorator


def test_bf_extract_is_callable_after_importing_its_subpackage_first() -> None:
    # Python binds an imported subpackage as an attribute of its package, over bf.extract.
    code = (
        "import butcherflow.extraction.target, butcherflow as bf, torch\n"
        "lin = torch.nn.Linear(4, 4).eval()\n"
        "class B(torch.nn.Module):\n"
        "    def __init__(s): super().__init__(); s.f = lin\n"
        "    def forward(s, y): return y + s.f(y)\n"
        "print(bf.extract(B().eval(), torch.randn(2, 3, 4), fields={'f': 'f'}).method.name)\n"
    )
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=root,
        check=False,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    assert done.returncode == 0, done.stderr
    assert "extracted" in done.stdout
