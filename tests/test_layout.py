"""The folder tree is the pipeline: no module imports a stage to its right, and every import of
another stage is at the top of its module (`butcherflow.stages` states the order once)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from butcherflow.stages import OUTSIDE, STAGES, stage_of

PACKAGE = Path(__file__).resolve().parents[1] / "butcherflow"
README = PACKAGE.parent / "README.md"


def _top_level(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """True when no function or class encloses `node` (module-level `if`/`try` blocks, such as
    `if TYPE_CHECKING:`, still count as the top of the module)."""
    parent = parents.get(node)
    while parent is not None:
        if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            return False
        parent = parents.get(parent)
    return True


def _targets(node: ast.Import | ast.ImportFrom, package: list[str]) -> list[str]:
    """The parts of butcherflow (`"train"`, `"errors"`, `""` for the package itself) an import
    statement reaches. `package`: the importing module's package, e.g. `["butcherflow", "nn"]`."""
    if isinstance(node, ast.Import):
        dotted = [alias.name for alias in node.names]
    elif node.level == 0:
        dotted = [node.module or ""]
    else:
        base = package[: len(package) - node.level + 1]
        head = ".".join(base + ([node.module] if node.module else []))
        # `from .. import nn` names modules; `from ..nn import Field` names one module
        dotted = [f"{head}.{alias.name}" for alias in node.names] if not node.module else [head]
    found = []
    for name in dotted:
        parts = name.split(".")
        if parts[0] == "butcherflow":
            found.append(parts[1] if len(parts) > 1 else "")
    return found


def violations(source: str, module: str) -> list[str]:
    """What breaks the import rule in one module's source.

    **Arguments:** `source`: the module's text; `module`: its dotted name
    (`butcherflow.train.loop`; a package's `__init__` is named by the package itself).

    **Returns:** one line per bad import: an arrow to a stage on the right, an import of the
    package's top (which sits above every stage), or another stage imported inside a function.
    """
    parts = module.split(".")
    own, package = stage_of(parts[1]), parts[:-1]
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        for target in _targets(node, package):
            where = f"{module}:{node.lineno}"
            if target == "" or target in OUTSIDE:
                found.append(f"{where} imports butcherflow's top, which sits above every stage")
                continue
            other = stage_of(target)
            if other > own:
                found.append(f"{where} imports {target}, a stage to the right of {parts[1]}")
            elif other != own and not _top_level(node, parents):
                found.append(f"{where} imports {target} inside a function (move it to the top)")
    return found


def _modules() -> list[tuple[str, Path]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE.parent).with_suffix("")
        name = ".".join(relative.parts)
        if relative.parts[1] not in OUTSIDE and relative.parts[1] != "__init__":
            found.append((name, path))
    return found


@pytest.mark.parametrize("name,path", _modules(), ids=[name for name, _ in _modules()])
def test_no_module_imports_a_stage_to_its_right(name: str, path: Path) -> None:
    assert violations(path.read_text(encoding="utf-8"), name) == []


def test_every_part_of_the_package_has_a_stage() -> None:
    parts = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()}
    parts = {p for p in parts if not p.startswith((".", "__pycache__")) and p not in OUTSIDE}
    placed = {name for names in STAGES for name in names}
    assert parts - placed == set(), "add new parts of butcherflow to butcherflow.stages.STAGES"
    assert placed - parts == set(), "butcherflow.stages.STAGES names parts that do not exist"


@pytest.mark.parametrize(
    "source,fragment",
    [
        ("from ..train import train\n", "a stage to the right of data"),
        ("def f():\n    from ..assemble import Seq2Seq\n", "inside a function"),
        (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..generate import x\n",
            "a stage to the right",
        ),
        ("import butcherflow.cli\n", "a stage to the right"),
        ("from .. import train\n", "a stage to the right"),
        ("import butcherflow as bf\n", "butcherflow's top"),
    ],
)
def test_the_rule_catches_arrows_to_the_right(source: str, fragment: str) -> None:
    found = violations(source, "butcherflow.data.corpus")
    assert len(found) == 1 and fragment in found[0]


def test_the_rule_allows_arrows_to_the_left_and_lazy_imports_inside_a_stage() -> None:
    source = (
        "from ..assemble import Seq2Seq\nfrom ..errors import DeclarationError\n"
        "from . import bible\ndef f():\n    from .vocab import Vocabulary\n"
    )
    assert violations(source, "butcherflow.data.corpus") == []
    assert violations("from . import corpus\n", "butcherflow.data.__init__") == []


def test_the_readme_layout_follows_the_stages() -> None:
    text = README.read_text(encoding="utf-8")
    block = text.split("## Layout", 1)[1].split("```", 2)[1]
    listed = re.findall(r"^butcherflow/(\w+)/", block, flags=re.MULTILINE)
    packages = [n for names in STAGES for n in names if (PACKAGE / n).is_dir()]
    assert listed == packages


# analysis/ by family and by concern: what every family shares sits at the top or in exact/ and
# enclosure/, each family's proofs in its own folder
ANALYSIS_SHARED = {"check", "report", "search", "budget", "convergence", "global_error"}
ANALYSIS_FOLDERS = {
    "exact",
    "enclosure",
    "runge_kutta",
    "splitting",
    "multistep",
    "general_linear",
    "continuous",
    "bseries",
    "additive",
}


def test_analysis_is_laid_out_by_family_and_concern() -> None:
    analysis = PACKAGE / "analysis"
    modules = {p.stem for p in analysis.glob("*.py")} - {"__init__"}
    folders = {p.name for p in analysis.iterdir() if (p / "__init__.py").is_file()}
    assert modules == ANALYSIS_SHARED
    assert folders == ANALYSIS_FOLDERS


def test_no_folder_is_a_pile_of_flat_files() -> None:
    """A folder of thirty flat files wants sub-folders: none holds more than 16 modules."""
    crowded = {
        str(folder.relative_to(PACKAGE)): n
        for folder in PACKAGE.rglob("*")
        if folder.is_dir() and (n := len(list(folder.glob("*.py")))) > 16
    }
    assert crowded == {}


def _family_checks(source: str, families: set[str]) -> list[int]:
    """The lines of `source` that call isinstance (or issubclass) on a declaration family."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("isinstance", "issubclass")
            and len(node.args) == 2
        ):
            named = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
            named |= {n.attr for n in ast.walk(node.args[1]) if isinstance(n, ast.Attribute)}
            if named & families:
                lines.append(node.lineno)
    return lines


def _declaration_families() -> set[str]:
    """The classes below `Method` (isinstance(x, Method) itself asks "a declaration or a name?",
    which is no switch between families)."""
    from butcherflow.methods import Method

    found, todo = set(), [Method]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub.__module__.startswith("butcherflow."):
                found.add(sub.__name__)
                todo.append(sub)
    return found


def test_no_module_switches_on_a_declaration_family() -> None:
    # a capability is a family method or a table keyed by type(method) (ANALYSES, COMPILERS,
    # PAGES, ...): never an isinstance chain (issue 34)
    families = _declaration_families()
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{line}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line in _family_checks(path.read_text(encoding="utf-8"), families)
    ]
    assert found == []


def test_the_family_rule_catches_a_switch() -> None:
    source = "if isinstance(m, (ButcherTableau, x.Splitting)):\n    pass\n"
    assert _family_checks(source, {"ButcherTableau", "Splitting"}) == [1]
