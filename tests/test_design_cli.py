"""`butcherflow design ...`: each design from the command line, a catalog file it writes, and
one line for a mistake; like `check`, it loads no torch."""

from __future__ import annotations

import subprocess
import sys

import pytest

import butcherflow as bf
from butcherflow.cli import main


def test_design_polynomial_prints_the_proved_step(capsys):
    assert (
        main(["design", "polynomial", "--stages", "2", "--order", "1", "--spectrum", "real:-1,0"])
        == 0
    )
    out = capsys.readouterr().out
    assert "proved step   7.9999" in out and "float step" in out


def test_design_ssp_writes_a_catalog_file_that_loads_and_proves(tmp_path, capsys):
    path = tmp_path / "ssp.toml"
    assert (
        main(
            [
                "design",
                "ssp",
                "--stages",
                "3",
                "--order",
                "3",
                "--format",
                "toml",
                "--output",
                str(path),
            ]
        )
        == 0
    )
    method = bf.load(path)
    assert bf.check(method).order == 3
    assert "butcherflow design ssp --stages 3 --order 3" in method.reference
    assert not list(tmp_path.glob(".*tmp"))  # written to a temporary file and renamed


def test_design_depth_prints_json(capsys):
    assert main(["design", "depth", "--streams", "2", "--order", "2", "--format", "json"]) == 0
    assert '"V": [' in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv,fragment",
    [
        (
            ["design", "polynomial", "--stages", "2", "--order", "1", "--spectrum", "real:0,1"],
            "right half-plane",
        ),
        (
            ["design", "polynomial", "--stages", "2", "--order", "1", "--spectrum", "imag:x"],
            "not a finite real number",
        ),
        (["design", "low-error", "--stages", "3", "--order", "2"], "allow order 3"),
        (
            [
                "design",
                "polynomial",
                "--stages",
                "2",
                "--order",
                "1",
                "--spectrum",
                "imag:1",
                "--format",
                "toml",
            ],
            "no declaration",
        ),
    ],
)
def test_a_mistake_is_one_line_and_exit_code_1(argv, fragment, capsys):
    assert main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and fragment in err and "\n" not in err


def test_design_loads_no_torch():
    code = (
        "import sys; from butcherflow.cli import main; "
        "main(['design', 'depth', '--streams', '1', '--order', '1']); "
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().endswith("False")
