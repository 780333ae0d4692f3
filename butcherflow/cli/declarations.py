"""`butcherflow check`, `list` and `show`: the catalog's declarations and the model recipes."""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from ..analysis import check
from ..assemble import count_parameters, load_recipe, recipe_names, side_order
from ..assemble.floater import describe_dynamics
from ..assemble.positions import FLOATER
from ..assemble.recipe import Side, method_name
from ..compiler import compile, example_fields, stream_bounds
from ..methods import catalog
from ..methods.files import read_toml
from ..savedir.checkpoint import read_commit
from ..savedir.layout import BEST, CONFIG
from ..savedir.trained import load_trained
from ..tasks import LANGUAGE_MODEL, TRANSLATION, task_of_model, task_of_recipe
from .readback import blocks, describe

# A corpus each task trains on out of the box, for the train command `show RECIPE` suggests.
EXAMPLE_DATA = {TRANSLATION.name: "bible:de-en", LANGUAGE_MODEL.name: "bible:en"}


def cmd_show(args: argparse.Namespace) -> int:
    """A catalog method compiled at the given sizes, and/or a model recipe, explained.

    Some names are both (the `leapfrog` integrator and the `leapfrog` architecture): both are
    shown, the method first.
    """
    if (Path(args.name) / CONFIG).is_file():
        _show_run(args.name)
        return 0
    kind = _file_kind(args.name)
    is_recipe = args.name in recipe_names() or kind == "recipe"
    is_method = args.name in catalog or kind == "method"
    if not (is_recipe or is_method):
        catalog.resolve(args.name)  # raises the unknown-name error with suggestions
    if is_method:
        _show_method(args)
    if is_recipe:
        if is_method:
            print("\n" + "=" * 72 + "\n")
        _show_recipe(args)
    return 0


def _file_kind(name: str) -> str | None:
    """What a .toml file declares, read from its content wherever it lies: `"method"` (it has a
    `family`, or is no recipe), `"recipe"` (`sizes`, `encoder` or `decoder` tables), or None
    for a name that is no .toml file. A file that does not exist is a method, whose loader
    says so."""
    if not name.endswith(".toml"):
        return None
    if not Path(name).is_file():
        return "method"
    data = read_toml(name)
    if "family" not in data and any(key in data for key in ("sizes", "encoder", "decoder")):
        return "recipe"
    return "method"


def _show_method(args: argparse.Namespace) -> None:
    method = catalog.resolve(args.name)
    sizes = {"d_model": args.d_model, "n_heads": args.n_heads, "d_ffn": args.d_ffn}
    flow = method.position_flow
    if flow is not None:
        d_model, hidden = args.d_model, None
        if args.name in recipe_names():  # also a recipe: explain the encoder at its sizes
            recipe = load_recipe(args.name)
            if recipe.floater is not None:  # a FLOATER recipe: the flow at its sizes
                d_model, hidden = int(recipe.sizes["d_model"]), recipe.floater_hidden
        print(describe_dynamics(flow, d_model, hidden))
        print(
            "  (a position encoder, not a block: recipes use it with [embedding] "
            f"position = '{FLOATER.name}', floater = '{flow.name}')\n"
        )
        print(check(flow))
        return
    field = args.field
    if field and "=" in field:  # a splitting's fields: A=ffn,B=san
        field = dict(part.split("=", 1) for part in field.split(","))
    fields = example_fields(method, field, args.layers)
    given = next(iter(fields.values()))
    if isinstance(given, dict):
        shown = ", ".join(f"{k}={v}" for k, v in given.items())
    elif isinstance(given, list):
        shown = f"{given[0]} x {len(given)} layers"
    else:
        shown = str(given)
    report = check(method)
    print(f"{method.name}: {method.title}")
    if not method.layer.compiles:
        print(f"({method.name} is {method.layer.how}; see the report)")
    else:
        block = compile(method, **fields, **sizes)
        print(
            f"compiled with {shown} at d_model={args.d_model}, n_heads={args.n_heads}, "
            f"d_ffn={args.d_ffn}"
        )
        flops = block.flops_per_token(64)
        print(
            f"parameters: {block.num_parameters:,}   field calls: "
            f"{'chosen at run time' if block.field_calls is None else block.field_calls}   "
            f"FLOPs/token (length 64): {'data-dependent' if flops is None else f'{flops:,}'}"
        )
        print(f"order of the block as it trains: {report.block_order_text}")
        print(f"\n{block.code}")
    print(report)


def _show_run(save_dir: str) -> None:
    """A trained run (a translation model or a language model): its model, parameters, each
    side's layers and their proved order, for general linear stacks whether each layer's
    learned V is still power-bounded, and what each compiled block computes now (its learned
    coefficients read back by `bf.extract`, beside the declaration it started from)."""
    checkpoint = "last" if read_commit(Path(save_dir), BEST) is None else "best"
    model, _, _ = load_trained(save_dir, checkpoint)
    task, recipe = task_of_model(model), model.recipe
    print(f"{save_dir}: {recipe.name} ({recipe.title}), {task.title}, checkpoint {checkpoint}")
    for where, (side, stack) in model.sides().items():
        causal = all(getattr(block, "causal", False) for block in stack)
        print(
            f"{side.layers} {'causal ' if causal else ''}layer(s) of {method_name(side.method)} "
            f"({where} side of the recipe); order of its blocks as they train: {side_order(side)}"
        )
    print(f"parameters: {model.num_parameters:,}")
    bounds = stream_bounds(model)
    if not bounds:
        print("no general linear stack: no learned stream-mixing matrix V to report")
    for bound in bounds:
        print(f"  {bound}")
    d_model = int(model.recipe.sizes["d_model"])
    for where, index, block, memory in blocks(model):
        print("\n" + "\n".join(describe(where, index, block, memory, d_model)))


def _side_text(side: Side) -> str:
    """`san+ffn`, or `fields A = ffn, B = san`, then the side's options if it has any."""
    fields = side.fields or {}
    what = side.field or "fields " + ", ".join(f"{k} = {v}" for k, v in fields.items())
    options = ", ".join(f"{k} = {v}" for k, v in side.options.items())
    return what + (f" ({options})" if options else "")


def _show_recipe(args: argparse.Namespace) -> None:
    recipe = load_recipe(args.name)
    task = task_of_recipe(recipe)
    with torch.device("meta"):
        model = task.model.from_recipe(recipe, args.vocab)
    print(f"{recipe.name}: {recipe.title} ({recipe.reference})")
    print(
        f"a {task.title}; train it with: butcherflow train {args.name} --data "
        f"{EXAMPLE_DATA[task.name]} --save-dir runs/{recipe.name}"
    )
    print(model.recipe.description)
    for where, (side, _) in model.sides().items():
        print(f"{where}: {side.layers} x {side.method} with {_side_text(side)}")
        print(f"  order of its blocks as they train: {side_order(side)}")
    print(f"parameters: {model.num_parameters:,} (vocabulary {args.vocab:,})")
    if recipe.name != task.baseline:
        baseline = count_parameters(load_recipe(task.baseline), args.vocab)
        print(f"  beside {task.baseline}: {baseline:,} ({model.num_parameters / baseline:.4f}×)")
    if model.floater is not None:
        print(model.floater.describe())
    where, (_, stack) = next(iter(model.sides().items()))
    first = stack[0]
    print(f"\nfirst {where} block ({type(first).__name__}):\n\n{first.code}", end="")
