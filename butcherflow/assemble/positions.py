"""How a recipe encodes positions (`[embedding] position = NAME`): one object per kind.

A `Position` states in one place what its kind is: the `[embedding]` keys it takes (and
validates), the encoding added to the token embeddings, the attention biases it injects (FLOATER
only), the longest sequence it covers, the declarations it uses (pinned into a run's recipe),
and how it is described. `POSITIONS` holds the three kinds; `Recipe.positions` is a recipe's.

- `sinusoidal`: Vaswani et al.'s fixed encoding, any length.
- `learned`: one learned vector per position up to `max_len` (BERT, fairseq).
- `floater`: Liu et al. (2020): the sinusoidal input encoding plus q/k/v biases from a neural
  ODE over positions at every block (`assemble.floater`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, final

from torch import nn

from ..errors import DeclarationError
from ..methods import Method
from ..nn import LearnedPositions, SinusoidalPositions
from .floater import FLOATER_BLOCKS, FloaterInjection, resolve_floater

if TYPE_CHECKING:  # the recipe a position belongs to, for the types only (recipe.py uses this)
    from .recipe import Recipe

MAX_LEN = 1024  # fairseq's max_source_positions / max_target_positions


class Position(ABC):
    """A kind of position encoding; three final implementations (module docstring).

    - `name`: the value of `[embedding] position`.
    - `keys`: the other `[embedding]` keys it takes (a key of another kind is refused).
    """

    name: ClassVar[str]
    keys: ClassVar[tuple[str, ...]]

    @abstractmethod
    def options(
        self, embedding: Mapping[str, Any], source: str | None, resolve: Callable[..., Any]
    ) -> dict[str, Any]:
        """Its `[embedding]` keys, validated, as `Recipe` fields (`resolve(value, key)` reads a
        declaration named in the recipe)."""

    @abstractmethod
    def encoding(self, recipe: Recipe, d_model: int) -> nn.Module:
        """The encoding added to the token embeddings: `(batch, length)` positions ->
        `(batch, length, d_model)`."""

    def injection(
        self, recipe: Recipe, encoder: nn.ModuleList | None, decoder: nn.ModuleList
    ) -> FloaterInjection | None:
        """The attention biases it adds at the blocks, or None."""
        return None

    def max_positions(self, recipe: Recipe) -> int | None:
        """The longest sequence it encodes; None: any length."""
        return None

    def methods(self, recipe: Recipe) -> dict[str, Any]:
        """The declarations it uses, by where the recipe names them (`embedding.floater`)."""
        return {}

    def pinned(self, recipe: Recipe) -> dict[str, Any]:
        """The `Recipe` fields that name a declaration, each replaced by the declaration read
        now (`declarations.pinned`)."""
        return {}

    def table(self, recipe: Recipe) -> dict[str, Any]:
        """Its `[embedding]` keys as a recipe file holds them (`recipe_to_toml`)."""
        return {}

    def describe(self, recipe: Recipe, link: Callable[[Any], str] = str) -> str:
        """In words, for `show` and the gallery (`link` renders a declaration's name)."""
        return f"{self.name} positions"

    def explain(self) -> str:
        """What it does, for a recipe's page in the gallery ("" when its name says it)."""
        return ""


@final
class Sinusoidal(Position):
    name = "sinusoidal"
    keys = ()

    def options(
        self, embedding: Mapping[str, Any], source: str | None, resolve: Callable[..., Any]
    ) -> dict[str, Any]:
        return {}

    def encoding(self, recipe: Recipe, d_model: int) -> nn.Module:
        return SinusoidalPositions(d_model)


@final
class Learned(Position):
    name = "learned"
    keys = ("max_len",)

    def options(
        self, embedding: Mapping[str, Any], source: str | None, resolve: Callable[..., Any]
    ) -> dict[str, Any]:
        return {"max_len": count(embedding.get("max_len", MAX_LEN), "embedding.max_len", source)}

    def encoding(self, recipe: Recipe, d_model: int) -> nn.Module:
        return LearnedPositions(recipe.max_len, d_model)

    def max_positions(self, recipe: Recipe) -> int | None:
        return recipe.max_len

    def table(self, recipe: Recipe) -> dict[str, Any]:
        return {"max_len": recipe.max_len}


@final
class Floater(Position):
    name = "floater"
    keys = ("floater", "floater_blocks", "floater_hidden")

    def options(
        self, embedding: Mapping[str, Any], source: str | None, resolve: Callable[..., Any]
    ) -> dict[str, Any]:
        name = embedding.get("floater")
        if name is None:
            raise DeclarationError(
                "position = 'floater' needs the flow's declaration",
                key="embedding.floater",
                valid="floater = 'floater' (a continuous-dynamics declaration with grid = "
                "'positions': a catalog name or a .toml file)",
                source=source,
            )
        if isinstance(name, (str, Mapping)):
            name = resolve(name, "embedding.floater")
        flow = resolve_floater(name, key="embedding.floater", source=source)
        if isinstance(name, Method):
            name = flow
        blocks = embedding.get("floater_blocks", "all")
        if blocks not in FLOATER_BLOCKS:
            raise DeclarationError(
                "unknown FLOATER placement",
                key="embedding.floater_blocks",
                value=blocks,
                valid="'all' (every block) or 'input' (the first block of each side)",
                source=source,
            )
        hidden = embedding.get("floater_hidden")
        if hidden is not None:
            hidden = count(hidden, "embedding.floater_hidden", source)
        return {"floater": name, "floater_blocks": blocks, "floater_hidden": hidden}

    def encoding(self, recipe: Recipe, d_model: int) -> nn.Module:
        return SinusoidalPositions(d_model)  # FLOATER keeps the input encoding

    def injection(
        self, recipe: Recipe, encoder: nn.ModuleList | None, decoder: nn.ModuleList
    ) -> FloaterInjection | None:
        assert recipe.floater is not None  # options() requires the flow
        return FloaterInjection(
            recipe.floater,
            int(recipe.sizes["d_model"]),
            encoder=encoder,
            decoder=decoder,
            blocks=recipe.floater_blocks,
            hidden=recipe.floater_hidden,
        )

    def methods(self, recipe: Recipe) -> dict[str, Any]:
        return {} if recipe.floater is None else {"embedding.floater": recipe.floater}

    def pinned(self, recipe: Recipe) -> dict[str, Any]:
        flow = recipe.floater
        if flow is None:
            return {}
        return {"floater": resolve_floater(flow, key="embedding.floater", source=recipe.source)}

    def table(self, recipe: Recipe) -> dict[str, Any]:
        found = {k: getattr(recipe, k) for k in self.keys}
        tables = {k: v.to_table() if isinstance(v, Method) else v for k, v in found.items()}
        return {k: v for k, v in tables.items() if v is not None}

    def describe(self, recipe: Recipe, link: Callable[[Any], str] = str) -> str:
        where = "every block" if recipe.floater_blocks == "all" else "the first block of each side"
        return f"sinusoidal positions plus FLOATER biases at {where} (flow {link(recipe.floater)})"

    def explain(self) -> str:
        return (
            "FLOATER positions: a neural ODE over positions (dynamics shared by every block, one "
            "learned initial value per attention module and q/k/v) adds position-aware biases "
            "to the query, key and value projections; see the flow's page for its solver and "
            "accuracy."
        )


SINUSOIDAL, LEARNED, FLOATER = Sinusoidal(), Learned(), Floater()
POSITIONS: Mapping[str, Position] = MappingProxyType(
    {p.name: p for p in (SINUSOIDAL, LEARNED, FLOATER)}
)


def position_named(name: object, source: str | Path | None = None) -> Position:
    """The kind called `name`; an unknown one is a `DeclarationError` naming
    `embedding.position`."""
    found = POSITIONS.get(name) if isinstance(name, str) else None
    if found is None:
        raise DeclarationError(
            "unknown position encoding",
            key="embedding.position",
            value=name,
            valid=f"one of {', '.join(POSITIONS)}",
            source=None if source is None else str(source),
        )
    return found


def check_keys_of(position: Position, embedding: Mapping[str, Any], source: str | None) -> None:
    """Refuse an `[embedding]` key that belongs to another kind of position."""
    for other in POSITIONS.values():
        for key in other.keys:
            if key in embedding and key not in position.keys:
                raise DeclarationError(
                    f"{key} applies to {other.name} positions only",
                    key=f"embedding.{key}",
                    value=embedding[key],
                    valid=f"remove it, or set position = '{other.name}' (position is "
                    f"'{position.name}')",
                    source=source,
                )


def count(value: Any, key: str, source: str | None) -> int:
    """`value`, refused unless it is an integer >= 1 (a recipe's `key`, read from `source`)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise DeclarationError(
            f"{key} must be an integer >= 1", key=key, value=value, source=source
        )
    return value
