"""Every ```python block of the README runs as written, each in its own namespace (every example
is self-contained: a reader copies one block, not the page). Outputs are ```text blocks and are
not run; a ```text block right after a ```python block is what that code prints: each of its
lines is a line of the printed output, where `...` stands for text left out. A block that
imports a package the environment lacks (the `audit` extra's transformers and
x-transformers) is skipped with the package's name; `make test` installs it.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import io
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def examples() -> list[tuple[str, str | None]]:
    """Each python block with the text block that follows it (its output), if one does."""
    text = README.read_text(encoding="utf-8")
    fences = list(FENCE.finditer(text))
    found = []
    for i, fence in enumerate(fences):
        if fence.group(1) != "python":
            continue
        after = fences[i + 1] if i + 1 < len(fences) else None
        printed = None
        if after and after.group(1) == "text" and not text[fence.end() : after.start()].strip():
            printed = after.group(2)
        found.append((fence.group(2), printed))
    return found


def shown(expected: str, printed: list[str]) -> bool:
    """Whether a README output line is a printed line: its pieces around `...`, in order."""
    pieces = [piece.strip() for piece in expected.split("...") if piece.strip()]
    for line in printed:
        at = 0
        for piece in pieces:
            at = line.find(piece, at)
            if at < 0:
                break
            at += len(piece)
        else:
            return True
    return not pieces


def imported(source: str) -> set[str]:
    """The top-level packages a block imports."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


EXAMPLES = examples()
NEEDS = {  # what `butcherflow.zoo` imports when its factories are called
    "transformers_llama": "transformers",
    "x_transformers_default": "x_transformers",
}


def test_the_readme_has_its_examples_and_no_untyped_fences() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(EXAMPLES) >= 3 and any(printed for _, printed in EXAMPLES)
    # an opening fence without a language: an output must say ```text, code ```python
    openings = [lang for lang, _ in FENCE.findall(text)]
    assert "" not in openings, "a README fence without a language (```text for outputs)"


@pytest.mark.parametrize("number", range(len(EXAMPLES)))
def test_readme_python_block_runs_and_prints_what_the_readme_shows(number: int) -> None:
    source, expected = EXAMPLES[number]
    needed = imported(source) | {m for name, m in NEEDS.items() if name in source}
    for module in sorted(needed):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"README block {number + 1} needs {module} (the audit extra)")
    with contextlib.redirect_stdout(io.StringIO()) as out:
        exec(compile(source, f"README.md python block {number + 1}", "exec"), {})
    printed = [line.strip() for line in out.getvalue().splitlines()]
    assert any(printed), f"README block {number + 1} prints nothing"
    missing = [e for e in (expected or "").splitlines() if not shown(e, printed)]
    assert missing == [], f"README block {number + 1} does not print these lines"
