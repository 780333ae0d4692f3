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
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

from butcherflow.bench import write_section

SECTION = re.compile(r"<!-- bench:([\w.+-]+):start -->\n(.*?)\n<!-- bench:\1:end -->", re.S)
SUMMARY = re.compile(r"^=+ (.*\d+ (?:passed|failed|skipped|errors?).*?) =+$", re.M)


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
        elif path.suffix in (".md", ".json", ".png"):
            (docs / "experiments" / "gpu").mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, docs / "experiments" / "gpu" / path.name)
            print(f"{path}: docs/experiments/gpu/{path.name}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[1].strip(), file=sys.stderr)
        sys.exit(2)
    sys.exit(main(Path(sys.argv[1])))
