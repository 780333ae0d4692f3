"""The compiled block of a gallery page: a declaration compiled at transformer-base sizes, its
parameters and FLOPs, its data-flow diagram and its generated code."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, final

from ..analysis import Report
from ..compiler import CompiledBlock, compile, example_fields, spans_layers
from ..methods import Method
from .diagram import block_svg
from .families import page_for
from .text import Attempt, fence, save_figure, table

D_MODEL, N_HEADS, D_FFN = 512, 8, 2048  # transformer-base
BASE: dict[str, Any] = {"d_model": D_MODEL, "n_heads": N_HEADS, "d_ffn": D_FFN}
LENGTH = 64  # sequence length of the FLOPs/token figures (attention grows with it)
STACK_LAYERS = 6  # multistep stacks are compiled as the 6 layers of a transformer-base encoder


@final
@dataclass(frozen=True)
class Built:
    """A block compiled for the gallery, how it was compiled, and its size per layer."""

    block: CompiledBlock
    how: str
    layers: int = 1

    @property
    def params(self) -> int:
        return round(self.block.num_parameters / self.layers)

    @property
    def flops(self) -> int | None:
        """Per layer; None when the count depends on the data (adaptive solvers)."""
        total: int | None = self.block.flops_per_token(LENGTH)
        return None if total is None else round(total / self.layers)

    @property
    def calls(self) -> int | None:
        """Field calls per layer; None when the data decides (adaptive solvers)."""
        total: int | None = self.block.field_calls
        return None if total is None else round(total / self.layers)


def build_block(method: Method) -> Built:
    """Compile a declaration at transformer-base sizes the way the gallery shows it: with the
    family's example fields (`example_fields`, as `butcherflow show`: `"san+ffn"` for one
    field; A = ffn, B = san, C = ca for a splitting; a 6-layer `"san+ffn"` stack for a method
    that spans layers), its declared parameters as declared.

    **Raises:** whatever `bf.compile` raises for a declaration that has no layer.
    """
    fields = example_fields(method, layers=STACK_LAYERS)
    block = compile(method, **fields, **BASE)
    sizes = ", ".join(f"{k}={v}" for k, v in BASE.items())
    if spans_layers(method):
        how = f"bf.compile_stack({method.name!r}, ['san+ffn'] * {STACK_LAYERS}, {sizes})"
        return Built(block, how, STACK_LAYERS)
    shown = ", ".join(f"{k}={v!r}" for k, v in fields.items())
    return Built(block, f"bf.compile({method.name!r}, {shown}, {sizes})")


def block_section(
    report: Report | None, built: Built | None, attempt: Attempt, assets: Path, name: str
) -> list[str]:
    """The page's "Compiled block" section: how the block was compiled, its size and cost, its
    data-flow diagram (saved under `assets`) and its generated code, or why there is no block.

    **Arguments:**

    - `report`: the declaration's proved report (None when it could not be checked).
    - `built`: the compiled block (None when it has no layer or compiling failed).
    - `attempt`: collects the problems of the diagram's steps.
    - `assets`: the page's figure folder.
    - `name`: the catalog name.

    **Returns:** the section's markdown lines.
    """
    md = ["## Compiled block", ""]
    if report is None:
        md += ["Not compiled: the declaration could not be checked (see the problems below).", ""]
        return md
    if built is None:
        reason = report.layer.how if not report.layer.compiles else "compiling failed (see below)"
        md += [f"Not compiled: {reason}", ""]
        return md
    per = f" (a stack of {built.layers} layers; per layer in the index)" if built.layers > 1 else ""
    block = built.block
    md += [
        fence(built.how, "python"),
        "",
        table(
            ("field calls", "parameters", f"FLOPs per token (length {LENGTH})"),
            [
                (
                    _maybe(block.field_calls),
                    f"{block.num_parameters:,}",
                    _maybe(block.flops_per_token(LENGTH)),
                )
            ],
            "rrr",
        ),
        "",
        f"Sizes: transformer-base (d_model 512, 8 heads, d_ffn 2048){per}. FLOPs count 2 per "
        "multiply-add of every linear layer and attention product, plus one axpy per term of "
        "every weighted sum.",
        "",
    ]
    program, caption = page_for(block.method).diagram(block, attempt)
    svg = None
    if program is not None:
        title = f"{name}: {caption or 'data flow'}"
        svg = attempt.run("the block diagram", lambda: block_svg(program, title))
    if svg is not None:
        md += [
            "### Data flow",
            "",
            save_figure(assets, "block.svg", svg, f"Data flow of the {name} block"),
            "",
            "Coloured boxes are field calls (one colour per module: one colour for all stages "
            "means one shared field), grey boxes the weighted sums; lines on the left carry "
            "states, lines on the right field outputs.",
            "",
        ]
    md += ["### Generated code", "", fence(block.code.strip("\n"), "python"), ""]
    return md


def _maybe(value: int | None) -> str:
    return "depends on the data" if value is None else f"{value:,}"
