"""`butcherflow check`, `list` and `show`: the catalog's declarations and the model recipes."""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from ..analysis import check
from ..assemble import (
    LanguageModel,
    count_parameters,
    load_recipe,
    model_class,
    recipe_names,
    side_order,
)
from ..assemble.floater import describe_dynamics
from ..assemble.recipe import Side
from ..compiler import compile, example_fields, stream_bounds
from ..methods import catalog
from ..methods.files import read_toml
from ..savedir.checkpoint import read_commit
from ..savedir.layout import BEST, CONFIG, read_config
from ..savedir.trained import load_language_model, load_model
from .readback import blocks, describe


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
            if recipe.position == "floater":
                d_model, hidden = int(recipe.sizes["d_model"]), recipe.floater_hidden
        print(describe_dynamics(flow, d_model, hidden))
        print(
            "  (a position encoder, not a block: recipes use it with [embedding] "
            f"position = 'floater', floater = '{flow.name}')\n"
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


BASELINE = "transformer-small"  # the residual model every recipe's size is shown beside
LM_BASELINE = "lm-residual"  # the same for decoder-only recipes


def _show_run(save_dir: str) -> None:
    """A trained run (a translation model or a language model): its model, parameters, for
    general linear stacks whether each layer's learned V is still power-bounded, and what each
    compiled block computes now (its learned coefficients read back by `bf.extract`, beside the
    declaration it started from)."""
    checkpoint = "last" if read_commit(Path(save_dir), BEST) is None else "best"
    language_model = read_config(save_dir).get("task") == "language_model"
    load = load_language_model if language_model else load_model
    model, _, _ = load(save_dir, checkpoint)
    kind = "language model" if language_model else "translation model"
    recipe = model.recipe
    print(f"{save_dir}: {recipe.name} ({recipe.title}), {kind}, checkpoint {checkpoint}")
    if isinstance(model, LanguageModel):
        side = recipe.decoder if model.side == "decoder" else recipe.encoder
        assert side is not None
        method = getattr(side.method, "name", side.method)  # a run stores the declaration
        print(
            f"{side.layers} causal layer(s) of {method} ({model.side} side of the "
            f"recipe); order of its blocks as they train: {side_order(side)}"
        )
    print(f"parameters: {model.num_parameters:,}")
    bounds = stream_bounds(model)
    if not bounds:
        print("no general linear stack: no learned stream-mixing matrix V to report")
    for bound in bounds:
        print(f"  {bound}")
    d_model = int(model.recipe.sizes["d_model"])
    for where, index, block in blocks(model):
        print("\n" + "\n".join(describe(where, index, block, d_model)))


def _side_text(side: Side) -> str:
    """`san+ffn`, or `fields A = ffn, B = san`, then the side's options if it has any."""
    fields = side.fields or {}
    what = side.field or "fields " + ", ".join(f"{k} = {v}" for k, v in fields.items())
    options = ", ".join(f"{k} = {v}" for k, v in side.options.items())
    return what + (f" ({options})" if options else "")


def _show_recipe(args: argparse.Namespace) -> None:
    recipe = load_recipe(args.name)
    language_model = model_class(recipe) is LanguageModel
    baseline_name = LM_BASELINE if language_model else BASELINE
    with torch.device("meta"):
        model = model_class(recipe).from_recipe(recipe, args.vocab)
    print(f"{recipe.name}: {recipe.title} ({recipe.reference})")
    if language_model:
        print(
            f"a decoder-only language model: butcherflow train {recipe.name} --task language_model"
        )
    print(model.recipe.description)
    for where, side in (("encoder", recipe.encoder), ("decoder", recipe.decoder)):
        if side is not None:
            print(f"{where}: {side.layers} x {side.method} with {_side_text(side)}")
            print(f"  order of its blocks as they train: {side_order(side)}")
    print(f"parameters: {model.num_parameters:,} (vocabulary {args.vocab:,})")
    if recipe.name != baseline_name:
        baseline = count_parameters(load_recipe(baseline_name), args.vocab)
        print(f"  beside {baseline_name}: {baseline:,} ({model.num_parameters / baseline:.4f}×)")
    if model.floater is not None:
        print(model.floater.describe())
    where = "decoder" if language_model else "encoder"
    first = model.blocks[0] if isinstance(model, LanguageModel) else model.encoder[0]
    print(f"\nfirst {where} block ({type(first).__name__}):\n\n{first.code}", end="")
