"""Bring what `docs/gpu/run.sh` left in $OUT into the repository, from the repository root:

    python docs/gpu/merge.py FOLDER     # the folder $OUT came back to

- `benchmarks.md` (that machine's copy of docs/benchmarks.md): its GPU sections, the keys with
  `-cuda`, replace the same sections of docs/benchmarks.md (placeholders until measured); the
  CPU sections here stay as they are.
- `test-gpu.log` (with `machine.txt`): the `make test-gpu` summary becomes the section
  `test-gpu`.
- `NAME.md`, `NAME.json`, `NAME.png`, `index.md`: into docs/experiments/gpu/, beside the CPU
  results, never over them.
- `NAME-results.tgz`: into .gpu/results/, so that the next lease continues the experiment.
- `quick.txt` (`run.sh quick`: each step's outcome) is printed; `profile.tgz` (Chrome traces
  and operator tables of one step per model) is unpacked into .gpu/profile/, outside git: the
  section names the largest kernels. The logs (`bench.log`, `test-gpu.xml`) stay where they
  came back.

Then the README's GPU figures (its section `gpu-figures`) are rewritten from docs/benchmarks.md
by `headline`, so that they always say what the benchmarks file holds.
"""

from __future__ import annotations

import re
import shutil
import sys
import tarfile
from pathlib import Path

from butcherflow.bench import read_section, table_rows, write_section

SECTION = re.compile(r"<!-- bench:([\w.+-]+):start -->\n(.*?)\n<!-- bench:\1:end -->", re.S)
SUMMARY = re.compile(r"^=+ (.*\d+ (?:passed|failed|skipped|errors?).*?) =+$", re.M)
DEVICE = re.compile(r"torch [^,;]+, ([^,;]+), \d+ torch thread")
RESULT = re.compile(r"Result: `([^`]+)`")
# issue 28's targets for transformer-base, compiled in bf16
TARGET_RATIO, TARGET_MFU = 1.0, 0.40
QUICK = "bash docs/gpu/run.sh quick"


def merge_benchmarks(returned: Path, into: Path) -> list[str]:
    """Copy every GPU section of `returned` into `into`; return their keys."""
    keys = []
    for key, body in SECTION.findall(returned.read_text(encoding="utf-8")):
        if "-cuda" in key:
            write_section(into, key, body)
            keys.append(key)
    return keys


def merge_tests(log: Path, machine: Path | None, into: Path) -> str:
    """Write the `test-gpu` section from a `make test-gpu` log; return pytest's summary line."""
    text = log.read_text(encoding="utf-8", errors="replace")
    found = SUMMARY.findall(text)
    summary = found[-1] if found else "no pytest summary: the run was cut short, see the log"
    problems = [line for line in text.splitlines() if line.startswith(("FAILED", "ERROR"))]
    where = machine.read_text(encoding="utf-8").strip() if machine and machine.is_file() else "?"
    lines = [
        "## GPU tests (`make test-gpu`)",
        "",
        f"Command: `bash docs/gpu/run.sh test` (`make test-gpu`: the tests marked `cuda`, "
        f"tests/test_gpu.py). Machine: {where}. Result: `{summary}`.",
    ]
    if problems:
        lines += ["", *(f"- `{line}`" for line in problems)]
    write_section(into, "test-gpu", "\n".join(lines))
    return summary


def _train_row(
    text: str, recipe: str, key: str | None = None
) -> tuple[dict[str, str], str] | None:
    """The row of `recipe` in its compiled GPU section (or in the section `key`) and the device
    named there."""
    body = read_section(text, key or f"train-cuda-compiled-{recipe}") or ""
    rows = [row for row in table_rows(body) if row.get("model") == recipe]
    device = DEVICE.search(body)
    return (rows[0], device.group(1)) if rows and device else None


def _percent(cell: str) -> float | None:
    return float(cell.rstrip("%")) / 100 if cell.endswith("%") else None


def _met(value: float | None, target: float) -> str:
    return "n/a" if value is None else ("met" if value >= target else "missed")


def headline(text: str) -> str:
    """The README's GPU figures, from the content of docs/benchmarks.md.

    **Arguments:**

    - `text`: docs/benchmarks.md as it stands.

    **Returns:** the markdown of the README's `gpu-figures` section: the measured bf16 rows of
    transformer-base and ode-transformer-rk2-gated beside `torch.nn.Transformer` (compiled where
    that was measured, else eager: quick's first figure) with issue 28's targets, the compiled
    beam search and `make test-gpu`'s result; or, while none is measured, which figures are
    missing and the one command that measures them.
    """
    base, base_how = _train_row(text, "transformer-base"), " (compiled)"
    if base is None:
        base, base_how = _train_row(text, "transformer-base", "train-cuda"), " (eager)"
    if base is None:
        return (
            "**GPU figures: not yet measured.** Training throughput, TFLOP/s, MFU and peak memory "
            "of transformer-base and ode-transformer-rk2-gated beside `torch.nn.Transformer` "
            "(eager and compiled block by block, bf16), `make test-gpu` and compiled beam search "
            f"come from one command on one H100 or H200, `{QUICK}` (under 7 minutes; "
            "[docs/benchmarks.md](docs/benchmarks.md#on-the-gpu))."
        )
    row, device = base
    ratio = float(row["vs torch.nn.Transformer"] or "nan")
    mfu = _percent(row["MFU"])
    parts = [
        f"transformer-base{base_how} trains {row['target tokens/s']} target tokens/s, "
        f"{ratio:.2f}× `torch.nn.Transformer` (target ≥ {TARGET_RATIO:g}×: "
        f"{_met(ratio, TARGET_RATIO)}) at {row['MFU']} MFU (target ≥ {TARGET_MFU:.0%}: "
        f"{_met(mfu, TARGET_MFU)}), {row['TFLOP/s']} TFLOP/s, peak memory "
        f"{row['peak memory (MiB)']} MiB"
    ]
    # quick compiles transformer-base alone; the gated recipe's eager row stands in until its
    # own compiled run (run.sh bench-train-compiled) is merged
    gated, how = _train_row(text, "ode-transformer-rk2-gated"), " (compiled)"
    if gated is None:
        gated, how = _train_row(text, "ode-transformer-rk2-gated", "train-cuda"), " (eager)"
    if gated is not None:
        g = gated[0]
        parts.append(
            f"ode-transformer-rk2-gated{how} {g['target tokens/s']} tokens/s, "
            f"{g['vs torch.nn.Transformer']}× `torch.nn.Transformer` at {g['MFU']} MFU"
        )
    beam = [r for r in table_rows(read_section(text, "beam-cuda") or "") if "compiled / eager" in r]
    if beam:
        parts.append(
            f"compiled static-cache beam search {beam[0]['compiled / eager']} eager cached "
            f"decoding ({beam[0]['model']})"
        )
    tests = RESULT.search(read_section(text, "test-gpu") or "")
    parts.append(f"`make test-gpu`: `{tests.group(1)}`" if tests else "`make test-gpu`: not run")
    return (
        f"**GPU figures** ({device}, bf16, transformer-base sizes; `{QUICK}`, "
        "[docs/benchmarks.md](docs/benchmarks.md#on-the-gpu)): " + "; ".join(parts) + "."
    )


def main(folder: Path) -> int:
    docs = Path("docs")
    if not (docs / "benchmarks.md").is_file():
        print("error: run from the repository root (docs/benchmarks.md not found)", file=sys.stderr)
        return 1
    for path in sorted(folder.iterdir()):
        if path.name == "benchmarks.md":
            print(f"{path}: sections {merge_benchmarks(path, docs / 'benchmarks.md')}")
        elif path.name == "test-gpu.log":
            summary = merge_tests(path, folder / "machine.txt", docs / "benchmarks.md")
            print(f"{path}: {summary}")
        elif path.name.endswith("-results.tgz"):
            Path(".gpu/results").mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, Path(".gpu/results") / path.name)
            print(f"{path}: kept in .gpu/results/ for the next lease")
        elif path.name == "quick.txt":
            print(f"{path}:\n{path.read_text(encoding='utf-8').rstrip()}")
        elif path.name == "profile.tgz":
            Path(".gpu").mkdir(exist_ok=True)
            with tarfile.open(path) as archive:  # one folder, profile/, of plain files
                archive.extractall(".gpu", filter="data")
            print(f"{path}: traces in .gpu/profile/")
        elif path.suffix in (".md", ".json", ".png"):
            (docs / "experiments" / "gpu").mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, docs / "experiments" / "gpu" / path.name)
            print(f"{path}: docs/experiments/gpu/{path.name}")
    readme = Path("README.md")
    if readme.is_file():
        write_section(readme, "gpu-figures", headline((docs / "benchmarks.md").read_text("utf-8")))
        print("README.md: GPU figures rewritten from docs/benchmarks.md")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[1].strip(), file=sys.stderr)
        sys.exit(2)
    sys.exit(main(Path(sys.argv[1])))
