"""Architecture recipes (`models/*.toml`): an architecture is a declared object, not flags.

```toml
name = "macaron"
reference = "Lu et al. (2019)"
param_budget = "transformer-small"   # size d_ffn so the parameter count matches that recipe
[sizes]
d_model = 256
n_heads = 4
d_ffn = 1024
dropout = 0.1
[encoder]
layers = 3
method = "strang"
fields = { A = "ffn", B = "san" }
[decoder]
layers = 3
method = "strang"
fields = { A = "ffn", B = "san+ca" }
[embedding]
position = "sinusoidal"              # or "learned" (with max_len), or "floater":
# floater = "floater"                # FLOATER's flow declaration (catalog name or .toml file)
# floater_blocks = "all"             # "all" blocks, or "input" (the first block of each side)
# floater_hidden = 256               # hidden width of the flow's MLP (default d_model)
```
A side (`[encoder]`/`[decoder]`) takes `method` and either `field` (Runge-Kutta methods,
multistep stacks, DLCL) or `fields` (splittings), plus `coefficients`, `step_size`,
`iterations`, `share`, `share_gate`, `starter`, `init` and `stage` (what each stage of a block
stores: `"branch"` F(y), the default, or `"layer"` y + F(y), as the ODE Transformer's released
code does; `models/ode-transformer-rk2-code.toml`).

A method (`method`, `starter`, `floater`) is named by a catalog name, a declaration file (a
relative path is read from the recipe's folder), or given inline as a declaration table
(`method = { name = "mine", family = "runge-kutta", A = [...], b = [...] }`): a run's save dir
stores its recipe so, as `recipe.toml`, every method resolved (`declarations.pinned`).
"""

from __future__ import annotations

import dataclasses
import difflib
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, final

import tomli_w

from ..compiler.options import check_dropout
from ..errors import ButcherflowWarning, DeclarationError, UnknownNameError
from ..methods import ContinuousDynamics, Method
from ..methods.base import check_flag, check_name, check_text
from ..methods.files import catalog_dir, check_keys, from_dict, read_toml
from ..nn import check_stage
from .positions import MAX_LEN, POSITIONS, Position, check_keys_of, count, position_named

TOP_KEYS = (
    "name",
    "title",
    "reference",
    "description",
    "param_budget",
    "sizes",
    "encoder",
    "decoder",
    "embedding",
)
SIZE_KEYS = ("d_model", "n_heads", "d_ffn", "dropout", "activation")
SIDE_KEYS = (
    "layers",
    "method",
    "field",
    "fields",
    "coefficients",
    "step_size",
    "iterations",
    "share",
    "share_gate",
    "starter",
    "init",
    "stage",
)
EMBEDDING_KEYS = (
    "position",
    "share_embeddings",
    "scale",
    *(key for position in POSITIONS.values() for key in position.keys),
)
# A recipe's sizes that a run may override (`butcherflow train --d-model ...`, `with_overrides`).
OVERRIDES = ("d_model", "n_heads", "d_ffn", "dropout", "encoder_layers", "decoder_layers")


@final
@dataclass(frozen=True)
class Side:
    """One side (encoder or decoder) of a recipe; `method` (and a `starter` in `options`) is a
    name, a file or a declaration (see the module docstring)."""

    layers: int
    method: str | Method
    field: str | None = None
    fields: Mapping[str, str] | None = None
    options: Mapping[str, Any] = dataclasses.field(default_factory=dict)


@final
@dataclass(frozen=True)
class Recipe:
    """A validated architecture recipe (see the module docstring for the file layout)."""

    name: str
    title: str
    reference: str
    description: str
    sizes: Mapping[str, Any]
    encoder: Side | None
    decoder: Side | None
    position: str = "sinusoidal"  # a key of `positions.POSITIONS` (`positions` is the object)
    max_len: int = MAX_LEN
    share_embeddings: bool = True
    scale_embeddings: bool = True
    param_budget: str | None = None
    source: str | None = None
    floater: str | ContinuousDynamics | None = None  # position = "floater": the flow
    floater_blocks: str = "all"
    floater_hidden: int | None = None

    @property
    def positions(self) -> Position:
        """The recipe's kind of position encoding (`assemble.positions`)."""
        return position_named(self.position, self.source)

    @property
    def max_positions(self) -> int | None:
        """The longest sequence the recipe's positions encode (learned: `max_len`); None: any
        length."""
        return self.positions.max_positions(self)

    def with_overrides(self, run: Mapping[str, Any] | None = None, **sizes: Any) -> Recipe:
        """This recipe at a run's sizes: its size overrides applied (what `butcherflow train
        --d-model ...` does).

        **Arguments:**

        - `run`: a run's sizes, e.g. `savedir.run_sizes(savedir.read_recipe(save_dir))` or
          `TrainConfig.to_json()`: its keys in `OVERRIDES` (`d_model`, `n_heads`, `d_ffn`,
          `dropout`, `encoder_layers`, `decoder_layers`) are applied, other keys ignored.
        - `sizes`: overrides given by name (any key outside `OVERRIDES` is an error).

        A value of None keeps the recipe's. A recipe whose d_ffn comes from `param_budget` takes
        no `d_ffn`; `train` matches it to its budget recipe at the same overrides.

        **Returns:** the resized recipe, e.g. `bf.load_recipe("floater").with_overrides(sizes)`
        is FLOATER at the sizes of a run, `sizes = run_sizes(read_recipe(save_dir))` (for
        `bf.warm_start`).
        """
        for key in sizes:
            if key not in OVERRIDES:
                raise DeclarationError(
                    "not a size a run overrides",
                    key=key,
                    value=sizes[key],
                    valid="one of " + ", ".join(OVERRIDES),
                    source=self.source,
                )
        given = {k: v for k, v in {**dict(run or {}), **sizes}.items() if k in OVERRIDES}
        given = {k: v for k, v in given.items() if v is not None}
        if "d_ffn" in given and self.param_budget is not None:
            raise DeclarationError(
                f"recipe '{self.name}' sizes d_ffn itself (param_budget = '{self.param_budget}')",
                key="d_ffn",
                value=given["d_ffn"],
                valid="leave d_ffn out for this recipe",
                source=self.source,
            )
        for key, value in given.items():
            if key == "dropout":
                check_dropout(value, key, self.source)
            else:
                count(value, key, self.source)
        changes: dict[str, Any] = {
            "sizes": {**self.sizes, **{k: v for k, v in given.items() if k in SIZE_KEYS}}
        }
        for where in ("encoder", "decoder"):
            side, layers = getattr(self, where), given.get(f"{where}_layers")
            if layers is not None and side is not None:
                changes[where] = dataclasses.replace(side, layers=layers)
        return dataclasses.replace(self, **changes)


def _reference(value: Any, key: str, source: str | None, folder: Path | None) -> str | Method:
    """A method named in a recipe: a declaration as it is, a declaration table built, a
    relative file path read from the recipe's `folder`, a catalog name as it is."""
    if isinstance(value, Method):
        return value
    if isinstance(value, Mapping):
        return from_dict(value, source=source)
    if not isinstance(value, str) or not value:
        raise DeclarationError(
            "missing method",
            key=key,
            value=value,
            valid="a catalog name such as 'rk4', 'strang' or 'dlcl', a declaration file, or a "
            "declaration table",
            source=source,
        )
    if folder is not None and _is_file(value):
        return str(folder / value)
    return value


def _is_file(name: str) -> bool:
    """A relative path (as the catalog tells names from files); absolute paths stay as given."""
    return (name.endswith(".toml") or "/" in name) and not Path(name).is_absolute()


def _side(data: Any, where: str, source: str | None, folder: Path | None) -> Side:
    if not isinstance(data, Mapping):
        raise DeclarationError("expected a table", key=where, value=data, source=source)
    check_keys(data, SIDE_KEYS, source, where=f"{where}.")
    layers = count(data.get("layers"), f"{where}.layers", source)
    method = _reference(data.get("method"), f"{where}.method", source, folder)
    single, several = data.get("field"), data.get("fields")
    if (single is None) == (several is None):
        raise DeclarationError(
            "give exactly one of field and fields",
            key=f"{where}.field",
            value=single,
            valid="field = 'san+ffn' (one field) or fields = { A = 'ffn', B = 'san' } "
            "(a splitting)",
            source=source,
        )
    if single is not None and not isinstance(single, str):
        raise DeclarationError(
            "field must be a name", key=f"{where}.field", value=single, source=source
        )
    if several is not None and (
        not isinstance(several, Mapping) or not all(isinstance(v, str) for v in several.values())
    ):
        raise DeclarationError(
            "fields must map operators to field names",
            key=f"{where}.fields",
            value=several,
            source=source,
        )
    options = {k: v for k, v in data.items() if k not in ("layers", "method", "field", "fields")}
    if "stage" in options:
        check_stage(options["stage"], f"{where}.stage", source)
    if "starter" in options:
        options["starter"] = _reference(options["starter"], f"{where}.starter", source, folder)
    return Side(layers, method, single, several, options)


def recipe_from_dict(
    data: Mapping[str, Any], source: str | Path | None = None, *, folder: str | Path | None = None
) -> Recipe:
    """Validate the content of a recipe file.

    **Arguments:**

    - `data`: the parsed file.
    - `source`: where it came from (named in errors).
    - `folder`: where relative declaration files are read from (a recipe file's folder; None:
      the working directory).
    """
    src = None if source is None else str(source)
    base = None if folder is None else Path(folder)
    check_keys(data, TOP_KEYS, src)
    sizes = data.get("sizes", {})
    if not isinstance(sizes, Mapping):
        raise DeclarationError("expected a table", key="sizes", value=sizes, source=src)
    check_keys(sizes, SIZE_KEYS, src, where="sizes.")
    for key in ("d_model", "n_heads", "d_ffn"):
        if key not in sizes:
            raise DeclarationError(f"missing sizes.{key}", key=f"sizes.{key}", source=src)
        count(sizes[key], f"sizes.{key}", src)
    check_dropout(sizes.get("dropout", 0.0), "sizes.dropout", src)
    encoder = _side(data["encoder"], "encoder", src, base) if "encoder" in data else None
    decoder = _side(data["decoder"], "decoder", src, base) if "decoder" in data else None
    if encoder is None and decoder is None:
        raise DeclarationError("a recipe needs an [encoder] or a [decoder] table", source=src)
    embedding = data.get("embedding", {})
    if not isinstance(embedding, Mapping):
        raise DeclarationError("expected a table", key="embedding", value=embedding, source=src)
    check_keys(embedding, EMBEDDING_KEYS, src, where="embedding.")
    position = position_named(embedding.get("position", "sinusoidal"), src)
    check_keys_of(position, embedding, src)
    options = position.options(embedding, src, lambda v, key: _reference(v, key, src, base))
    budget = data.get("param_budget")
    if budget is not None and not isinstance(budget, str):
        raise DeclarationError(
            "param_budget names another recipe",
            key="param_budget",
            value=budget,
            valid="e.g. param_budget = 'transformer-base'",
            source=src,
        )
    if budget is not None and base is not None and _is_file(budget):
        budget = str(base / budget)  # a recipe file, read from this recipe's folder too
    return Recipe(
        name=check_name(data.get("name"), src),
        title=check_text(data.get("title"), "title", src) or str(data.get("name", "")),
        reference=check_text(data.get("reference"), "reference", src),
        description=check_text(data.get("description"), "description", src),
        sizes={"dropout": 0.0, "activation": "relu", **sizes},
        encoder=encoder,
        decoder=decoder,
        position=position.name,
        share_embeddings=_tied(embedding.get("share_embeddings", True), src),
        scale_embeddings=check_flag(embedding.get("scale", True), "embedding.scale", src),
        param_budget=budget,
        source=src,
        **options,
    )


def _tied(value: Any, source: str | None) -> bool:
    """`share_embeddings`: true, the one layout built (source, target and output projection
    share one matrix). False is said in a warning, not an error: recipes and save dirs written
    before it was checked hold it, and their models were built tied all the same."""
    if check_flag(value, "embedding.share_embeddings", source) is not True:
        warnings.warn(
            f"{source or 'recipe'}: share_embeddings = false is not implemented: the source "
            "and target embeddings and the output projection share one matrix, as in every "
            "butcherflow model",
            ButcherflowWarning,
            stacklevel=2,
        )
    return True


def recipe_to_toml(recipe: Recipe) -> str:
    """The recipe as a TOML recipe file: `recipe_from_dict` of its parse gives it back (the
    serialiser of `recipe_from_dict`; a save dir's `recipe.toml` is a run's recipe so)."""
    data: dict[str, Any] = {
        "name": recipe.name,
        "title": recipe.title,
        "reference": recipe.reference,
        "description": recipe.description,
    }
    if recipe.param_budget is not None:
        data["param_budget"] = recipe.param_budget
    data["sizes"] = dict(recipe.sizes)
    for where in ("encoder", "decoder"):
        side = getattr(recipe, where)
        if side is None:
            continue
        table: dict[str, Any] = {"layers": side.layers, "method": _table(side.method)}
        if side.field is not None:
            table["field"] = side.field
        if side.fields is not None:
            table["fields"] = dict(side.fields)
        table.update({k: _table(v) if k == "starter" else v for k, v in side.options.items()})
        data[where] = table
    data["embedding"] = {
        "position": recipe.position,
        "share_embeddings": recipe.share_embeddings,
        "scale": recipe.scale_embeddings,
        **recipe.positions.table(recipe),
    }
    return tomli_w.dumps(data)


def method_name(reference: str | Method) -> str:
    """How a recipe's method is called: a declaration's name, else the name or path given."""
    return reference.name if isinstance(reference, Method) else reference


def _table(reference: Any) -> Any:
    """A declaration as its table (a name or a path stays as it is)."""
    return reference.to_table() if isinstance(reference, Method) else reference


def recipe_names() -> list[str]:
    return sorted(p.stem for p in catalog_dir("models").glob("*.toml"))


def load_recipe(recipe: str | Path | Recipe) -> Recipe:
    """A `Recipe`, the name of a built-in one, or the path of a recipe file -> `Recipe`."""
    if isinstance(recipe, Recipe):
        return recipe
    text = str(recipe)
    if isinstance(recipe, Path) or text.endswith(".toml") or "/" in text:
        return recipe_from_dict(read_toml(text), source=text, folder=Path(text).parent)
    path = catalog_dir("models") / f"{text}.toml"
    if not path.is_file():
        close = difflib.get_close_matches(text, recipe_names(), n=3)
        hint = f"did you mean {', '.join(close)}? " if close else ""
        raise UnknownNameError(
            f"no recipe named '{text}'; {hint}recipes: " + ", ".join(recipe_names())
        )
    return recipe_from_dict(read_toml(path), source=path, folder=path.parent)
