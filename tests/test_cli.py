"""The command line: reports, the catalog table, and one-line errors with exit code 1."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import butcherflow as bf
from butcherflow.cli import main


def test_check_prints_the_report(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "rk4"]) == 0
    out = capsys.readouterr().out
    assert "order" in out and "z**4/24" in out


def test_check_json_is_valid(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "heun", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["order"] == 2 and data["claim_holds"] is True


def test_check_markdown(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "euler", "--format", "markdown"]) == 0
    assert "| order | 1 |" in capsys.readouterr().out


def test_unknown_name_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "rk5"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "rk5" in err and "rk4" in err


def test_bad_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "bad"\nfamily = "runge-kutta"\nA = [[0, 0], [1]]\nb = [1, 1]\n')
    assert main(["check", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bad.toml" in err and "A[1]" in err


def test_wrong_claim_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wrong = tmp_path / "wrong.toml"
    wrong.write_text(
        'name = "wrong"\nfamily = "runge-kutta"\norder = 3\nA = [[0, 0], [1, 0]]\n'
        'b = ["1/2", "1/2"]\n'
    )
    assert main(["check", str(wrong)]) == 1
    captured = capsys.readouterr()
    assert "claimed 3 but proved 2" in captured.err


# Four decimals leave a condition of order p + 1 open in every family: its claim of p + 1 is
# not proved, and `check` says so and exits 1 as for any wrong claim (a GLM, splitting or
# multistep method exited 0 with no claim line: a lower bound was taken to contradict nothing).
FOUR_DIGIT_CLAIMS = {
    "runge-kutta": 'A = [[0, 0], ["0.6667", 0]]\nb = ["0.25", "0.75"]\norder = 2\n',
    "general-linear": 'A = [[0, 0], ["0.6667", 0]]\nU = [[1], [1]]\nB = [["0.25", "0.75"]]\n'
    'V = [[1]]\nstart = ["y(x)"]\norder = 2\n',
    "splitting": 'steps = [["A", "0.6756"], ["B", "1.3512"], ["A", "-0.1756"], '
    '["B", "-1.7024"], ["A", "-0.1756"], ["B", "1.3512"], ["A", "0.6756"]]\n'
    'substep = "exact"\norder = 4\n',
    "multistep": 'alpha = [0, 0, -1, 1]\nbeta = ["0.4167", "-1.333", "1.917", 0]\norder = 3\n',
}


@pytest.mark.parametrize("family", FOUR_DIGIT_CLAIMS)
def test_a_claim_the_digits_leave_open_exits_1_in_every_family(
    family: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "open.toml"
    path.write_text(f'name = "open"\nfamily = "{family}"\n' + FOUR_DIGIT_CLAIMS[family])
    report = bf.check(str(path))
    proved, claimed = report.order, report.method.order
    count, _stopped = report.search_end("order")
    assert claimed is not None and proved < claimed and count
    assert main(["check", str(path)]) == 1
    out, err = capsys.readouterr()
    line = (
        f"open: order is claimed {claimed} but proved {proved} (established {proved}; "
        f"{count} condition(s) of order {proved + 1} undetermined at the "
        "precision of the entries)"
    )
    assert err == f"error: {path}: {line}\n"
    assert f"FAILS: {path}: {line}" in out


def test_check_needs_a_method_or_all(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check"]) == 1
    assert "--all" in capsys.readouterr().err


def test_list_filters_by_family(capsys: pytest.CaptureFixture[str]) -> None:
    main(["list", "--family", "runge-kutta"])
    out = capsys.readouterr().out
    assert "rk4" in out and "splitting" not in out


def _modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter has loaded after running `code`."""
    probe = f"{code}\nimport sys\nprint('\\n'.join(sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    return set(out.split())


@pytest.mark.parametrize(
    "code",
    [
        "import butcherflow.methods, butcherflow.analysis",
        "import butcherflow as bf; bf.check(bf.catalog['rk4']); bf.check('adams-bashforth-3')",
        "from butcherflow.cli import main; main(['check', 'rk4']); main(['list'])",
    ],
)
def test_declarations_and_proofs_do_not_load_torch(code: str) -> None:
    """Issue 15: a proof waits for nothing it does not use (torch is seconds on a busy machine)."""
    loaded = _modules_after(code)
    assert "butcherflow.analysis" in loaded
    assert "torch" not in loaded


@pytest.mark.parametrize(
    ("code", "unloaded"),
    [
        # a base install has no cvxpy (the design extra): compiling must not need it
        ("import butcherflow.nn, butcherflow.compiler", {"butcherflow.design", "cvxpy"}),
        # transformers' reload of an exported folder imports the model classes alone
        ("import butcherflow.export.hf", {"butcherflow.train", "butcherflow.generate"}),
        # a command imports the module that declares it, not the benchmarks or the optimisers
        (
            "from butcherflow.cli import build_parser; build_parser('export')",
            {"butcherflow.bench", "butcherflow.design", "butcherflow.experiments"},
        ),
    ],
)
def test_a_stage_loads_only_what_it_uses(code: str, unloaded: set[str]) -> None:
    """Issue 36: an export and its reload in under 10 s are mostly imports."""
    assert not unloaded & _modules_after(code)


def test_the_names_that_need_torch_load_it_on_first_use() -> None:
    loaded = _modules_after("import butcherflow as bf; bf.compile; bf.Seq2Seq; bf.nn")
    assert {"torch", "butcherflow.compiler", "butcherflow.assemble"} <= loaded
    with pytest.raises(AttributeError, match="no attribute 'compiel'"):
        bf.compiel  # type: ignore[attr-defined]  # noqa: B018
    assert {"compile", "Seq2Seq", "check"} <= set(dir(bf))
