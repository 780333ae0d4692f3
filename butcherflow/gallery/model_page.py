"""One gallery page per model recipe (`models/*.toml`): the recipe, its sides, size and code."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ..assemble import (
    LanguageModel,
    Recipe,
    Seq2Seq,
    apply_param_budget,
    load_recipe,
    model_class,
    side_order,
)
from ..assemble.recipe import Side, method_name
from ..compiler import CompiledBlock
from ..methods.files import catalog_dir, read_toml
from .diagram import block_svg
from .solver_block import LENGTH
from .solver_page import IndexRow
from .text import Attempt, Measured, fence, flops, save_figure, table, write_page

VOCAB = 32_000  # the vocabulary of the parameter counts (as `butcherflow show`)


def build_model(recipe: Recipe) -> Seq2Seq | LanguageModel:
    """The recipe's model (a `Seq2Seq`, or a `LanguageModel` for a one-sided recipe) at
    `VOCAB`, built on the meta device (no memory) when every module allows it."""
    kind = model_class(recipe)
    try:
        with torch.device("meta"):
            return kind(recipe, VOCAB)
    except RuntimeError:  # a module that computes from its initial values needs real tensors
        return kind(recipe, VOCAB)


def _blocks(model: Seq2Seq | LanguageModel, where: str) -> list[CompiledBlock]:
    _, stack = model.sides().get(where, (None, ()))
    return [b for b in stack if isinstance(b, CompiledBlock)]


def _params(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def _linked(value: Any, rows: Mapping[str, IndexRow]) -> str:
    """A catalog name as a link to its page, anything else as code."""
    if isinstance(value, str) and value in rows:
        return f"[{value}](../solvers/{value}.md)"
    return f"`{value}`"


def _side_rows(
    side: Side, order: str | None, rows: Mapping[str, IndexRow]
) -> list[tuple[str, str]]:
    fields = side.field if side.field is not None else dict(side.fields or {})
    out = [
        ("layers", str(side.layers)),
        ("method", _linked(method_name(side.method), rows)),
        ("proved order of the block as it trains", order or "—"),
        ("field" if side.field is not None else "fields", f"`{fields}`"),
    ]
    out += [(key, f"`{value}`") for key, value in side.options.items()]
    return out


def _overview(
    recipe: Recipe, orders: Mapping[str, str | None], rows: Mapping[str, IndexRow]
) -> str:
    """One sentence per side: how many blocks of which method and field, the order of those
    blocks as they train, and the positions."""
    parts = []
    for where, side in (("encoder", recipe.encoder), ("decoder", recipe.decoder)):
        if side is None:
            continue
        fields = (
            side.field
            if side.field is not None
            else ", ".join(f"{op} = {f}" for op, f in (side.fields or {}).items())
        )
        known = orders.get(where)
        order = f", order {known}" if known else ""
        options = "".join(f", {k} = {v}" for k, v in side.options.items())
        parts.append(
            f"the {where} is {side.layers} layer(s) of {_linked(method_name(side.method), rows)} "
            f"(field `{fields}`{order}{options})"
        )
    text = "; ".join(parts)
    positions = recipe.positions.describe(recipe, lambda value: _linked(value, rows))
    return text[0].upper() + text[1:] + f"; {positions}." if text else positions


def model_page(
    name: str,
    folder: Path,
    measured: Mapping[str, Sequence[Measured]],
    rows: Mapping[str, IndexRow],
) -> IndexRow:
    """Write `folder/NAME.md` (figures under `folder/NAME/`) for one model recipe.

    **Arguments:**

    - `name`: the recipe's name (`models/NAME.toml`).
    - `folder`: the gallery's `models/` folder.
    - `measured`: benchmark rows by entry name.
    - `rows`: the solver pages' index rows by name (for links and proved orders).

    **Returns:** the recipe's `IndexRow`.
    """
    attempt = Attempt([])
    path = catalog_dir("models") / f"{name}.toml"
    source = path.read_text(encoding="utf-8")
    data = attempt.run("reading the file", lambda: read_toml(path)) or {}
    recipe = attempt.run("loading the recipe", lambda: load_recipe(name))
    sized = (
        attempt.run("param_budget", lambda: apply_param_budget(recipe, VOCAB)) if recipe else None
    )
    model = attempt.run("building the model", lambda: build_model(sized)) if sized else None
    assets = folder / name
    assets.mkdir(parents=True, exist_ok=True)
    title = recipe.title if recipe is not None else str(data.get("title", name))

    orders = _side_orders(recipe, attempt)
    md = _summary(name, title, data, recipe, orders, rows, model)
    md += ["## Recipe", "", fence(source, "toml"), ""]
    if recipe is not None and sized is not None:
        md += _architecture(recipe, sized, data, orders, rows)
    total = flops_total = calls_total = None
    if model is not None:
        total = _params(model)
        blocks_md, calls_total, flops_total = _parts_and_blocks(name, model, assets, attempt)
        md += blocks_md

    write_page(folder / f"{name}.md", md, measured.get(name, []), attempt.problems)
    return _index_row(name, title, recipe, total, calls_total, flops_total, attempt.problems)


def _side_orders(recipe: Recipe | None, attempt: Attempt) -> dict[str, str | None]:
    """The proved order of each side's block as it trains (None where it failed)."""
    orders: dict[str, str | None] = {}
    for where in ("encoder", "decoder"):
        side = None if recipe is None else getattr(recipe, where)
        if side is not None:
            orders[where] = attempt.run(f"the {where}'s order", functools.partial(side_order, side))
    return orders


def _summary(
    name: str,
    title: str,
    data: Mapping[str, Any],
    recipe: Recipe | None,
    orders: Mapping[str, str | None],
    rows: Mapping[str, IndexRow],
    model: Seq2Seq | LanguageModel | None,
) -> list[str]:
    """The page's title, description, reference, one-line overview and parameter count."""
    md = [f"# {name}: {title}", ""]
    if data.get("description"):
        md += [f"> {data['description']}", ""]
    md += [f"**Reference:** {data.get('reference') or '—'} · **file:** `models/{name}.toml`", ""]
    if recipe is not None:
        md += [_overview(recipe, orders, rows), ""]
    if model is not None:
        total = _params(model)
        embedding = _params(getattr(model, "embedding", nn.Module()))
        md += [
            f"**{total:,} parameters** at a vocabulary of {VOCAB:,} "
            f"({total - embedding:,} outside the shared embedding), "
            f"built as `{type(model).__name__}`.",
            "",
        ]
    return md


def _architecture(
    recipe: Recipe,
    sized: Recipe,
    data: Mapping[str, Any],
    orders: Mapping[str, str | None],
    rows: Mapping[str, IndexRow],
) -> list[str]:
    """The sizes (and how `param_budget` set d_ffn), each side, the embedding and positions."""
    md = ["## Architecture", ""]
    sizes = [(k, f"`{v}`") for k, v in sized.sizes.items()]
    if recipe.param_budget:
        md += [
            f'`param_budget = "{recipe.param_budget}"`: d_ffn is sized to '
            f"{sized.sizes['d_ffn']} so that the model has the parameters of "
            f"[{recipe.param_budget}]({recipe.param_budget}.md) at this vocabulary.",
            "",
        ]
    md += [table(("size", "value"), sizes), ""]
    for where in ("encoder", "decoder"):
        side = getattr(recipe, where)
        if side is not None:
            side_rows = _side_rows(side, orders.get(where), rows)
            md += [f"### {where.capitalize()}", "", table(("", ""), side_rows), ""]
    embedding_data = data.get("embedding", {})
    if isinstance(embedding_data, Mapping) and embedding_data:
        shown = [(k, _linked(v, rows)) for k, v in embedding_data.items()]
        md += ["### Embedding and positions", "", table(("", ""), shown), ""]
        explained = recipe.positions.explain()
        if explained:
            md += [explained, ""]
    return md


def _side_costs(blocks: Sequence[CompiledBlock]) -> tuple[int | None, int | None]:
    """One side's field calls and FLOPs per token (None where a block's is not known)."""
    calls = [b.field_calls for b in blocks]
    side_calls = None if None in calls else sum(c or 0 for c in calls)
    counts = [b.flops_per_token(LENGTH) for b in blocks]
    known = [c for c in counts if c is not None]
    side_flops = sum(known) if len(known) == len(counts) else None
    return side_calls, side_flops


def _parts_and_blocks(
    name: str, model: Seq2Seq | LanguageModel, assets: Path, attempt: Attempt
) -> tuple[list[str], int | None, int | None]:
    """The parameters by part and each side's first block (diagram and code), with the
    model's field calls and FLOPs per token (None where some block's is not known)."""
    parts = [(n, f"{_params(m):,}") for n, m in model.named_children()]
    md = ["## Parameters by part", "", table(("module", "parameters"), parts, "lr"), ""]
    calls_total: int | None = 0
    flops_total: int | None = 0
    for where in ("encoder", "decoder"):
        blocks = _blocks(model, where)
        if not blocks:
            continue
        side_calls, side_flops = _side_costs(blocks)
        calls_total = (
            None if calls_total is None or side_calls is None else calls_total + side_calls
        )
        flops_total = (
            None if flops_total is None or side_flops is None else flops_total + side_flops
        )
        md += _first_block(name, where, blocks, assets, attempt)
    return md, calls_total, flops_total


def _first_block(
    name: str, where: str, blocks: Sequence[CompiledBlock], assets: Path, attempt: Attempt
) -> list[str]:
    """A side's section: its block count, the first block's size, cost, diagram and code."""
    first = blocks[0]
    md = [
        f"## {where.capitalize()} blocks",
        "",
        f"{len(blocks)} compiled block(s) `{type(first).__name__}`; the first has "
        f"{first.num_parameters:,} parameters and "
        + (
            f"{flops(first.flops_per_token(LENGTH))}FLOPs per token (length {LENGTH})."
            if first.flops_per_token(LENGTH) is not None
            else "a data-dependent cost."
        ),
        "",
    ]
    draw = functools.partial(block_svg, first.program, f"{name}: first {where} block")
    svg = attempt.run(f"the {where} diagram", draw)
    if svg is not None:
        alt = f"Data flow of the first {where} block"
        md += [save_figure(assets, f"{where}.svg", svg, alt), ""]
    md += [fence(first.code.strip("\n"), "python"), ""]
    return md


def _index_row(
    name: str,
    title: str,
    recipe: Recipe | None,
    params: int | None,
    calls: int | None,
    flops_total: int | None,
    problems: Sequence[str],
) -> IndexRow:
    """The recipe's row in the gallery's index."""
    stages = "—"
    if recipe is not None:
        stages = " + ".join(str(s.layers) for s in (recipe.encoder, recipe.decoder) if s)
    return IndexRow(
        name=name,
        kind="model",
        page=f"models/{name}.md",
        family="model",
        title=title,
        stages=stages,
        calls="—" if calls is None else str(calls),
        order="—",
        substep_order="—",
        interval="—",
        params=params,
        flops=flops_total,
        problem="; ".join(problems),
    )
