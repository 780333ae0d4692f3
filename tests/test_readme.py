"""Every ```python block of the README runs as written, each in its own namespace (every example
is self-contained: a reader copies one block, not the page). Outputs are ```text blocks and are
not run. A block that imports a package the environment lacks (the `audit` extra's
transformers and x-transformers) is skipped with the package's name; `make test` installs it.
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


def blocks(language: str) -> list[str]:
    text = README.read_text(encoding="utf-8")
    return [body for lang, body in FENCE.findall(text) if lang == language]


def imported(source: str) -> set[str]:
    """The top-level packages a block imports."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


PYTHON = blocks("python")
NEEDS = {  # what `butcherflow.gallery.audit.libraries` imports when its factories are called
    "transformers_llama": "transformers",
    "x_transformers_default": "x_transformers",
}


def test_the_readme_has_its_examples_and_no_untyped_fences() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(PYTHON) >= 3
    # an opening fence without a language: an output must say ```text, code ```python
    openings = [lang for lang, _ in FENCE.findall(text)]
    assert "" not in openings, "a README fence without a language (```text for outputs)"


@pytest.mark.parametrize("number", range(len(PYTHON)))
def test_readme_python_block_runs(number: int) -> None:
    source = PYTHON[number]
    needed = imported(source) | {m for name, m in NEEDS.items() if name in source}
    for module in sorted(needed):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"README block {number + 1} needs {module} (the audit extra)")
    with contextlib.redirect_stdout(io.StringIO()) as out:
        exec(compile(source, f"README.md python block {number + 1}", "exec"), {})
    assert out.getvalue().strip(), "a README example prints what its comments promise"
