"""A save dir owns its run: the declarations of its methods and where its corpus is.

Editing a catalog file or a user's declaration file after training changes neither the trained
model nor what resume accepts silently; relative paths in a recipe are read from the recipe's
folder; evaluate works from any directory; the recipe is the save dir's own `recipe.toml`, which
resume compares as a recipe (sizes, declarations, fields), not as text.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from tiny_run import TINY

import butcherflow as bf
from butcherflow import DeclarationError
from butcherflow.assemble import model_class, recipe_from_dict, recipe_names, recipe_to_toml
from butcherflow.assemble.declarations import by_name, pinned
from butcherflow.generate import evaluate
from butcherflow.savedir import CheckpointError, load_model, read_config, read_recipe, run_sizes
from butcherflow.train import TrainConfig, train

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SOLVERS = Path(__file__).parents[1] / "solvers"
SIZES: dict[str, Any] = {
    "d_model": 16,
    "n_heads": 2,
    "d_ffn": 32,
    "encoder_layers": 1,
    "decoder_layers": 1,
    "vocab_size": 200,
    "max_tokens": 2048,
    "warmup_updates": 2,
    "lr": 2e-3,
    "dropout": 0.0,
}
MINE = """
name = "mine3"
family = "runge-kutta"
order = 3
A = [[0, 0, 0], ["1/2", 0, 0], [-1, 2, 0]]
b = ["1/6", "2/3", "1/6"]
"""

pytestmark = pytest.mark.usefixtures("vocab_cache")  # conftest.py


def run(recipe: str, data: str, save_dir: Path, **changes: Any) -> TrainConfig:
    config = TrainConfig(recipe, data, str(save_dir), **{**SIZES, "max_update": 2, **changes})
    train(config)
    return config


def outputs(save_dir: Path) -> torch.Tensor:
    """The trained model's logits on a fixed batch (what 'the model' computes)."""
    model, _, _ = load_model(save_dir, "last")
    src = torch.tensor([[5, 6, 7, 8]])
    with torch.no_grad():
        return model(src, torch.tensor([[2, 9, 10]]))


@pytest.fixture
def edited_catalog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of `solvers/` that the catalog reads from (edit its files to change the catalog,
    as installing another butcherflow would)."""
    folder = tmp_path / "solvers"
    shutil.copytree(SOLVERS, folder)
    monkeypatch.setattr(bf.catalog, "_directory", folder)
    monkeypatch.setattr(bf.catalog, "_cache", {})
    return folder


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A user's folder: a recipe whose encoder runs their own tableau file `decl/mine3.toml`,
    named relative to the recipe, and a corpus `data/copy`."""
    folder = tmp_path / "project"
    (folder / "decl").mkdir(parents=True)
    (folder / "decl" / "mine3.toml").write_text(MINE)
    recipe = tomllib.loads((SOLVERS.parent / "models" / "transformer-small.toml").read_text())
    recipe["name"] = "mine"
    recipe["encoder"]["method"] = "decl/mine3.toml"
    (folder / "mine.toml").write_text(recipe_to_toml(recipe_from_dict(recipe)))
    shutil.copytree(TINY, folder / "data" / "copy")
    return folder


def test_editing_the_catalog_changes_neither_the_model_nor_resume(
    tmp_path: Path, edited_catalog: Path
) -> None:
    save_dir = tmp_path / "run"
    config = run("ode-transformer-rk2", f"{TINY}:de-en", save_dir)
    before = outputs(save_dir)
    heun = edited_catalog / "heun.toml"
    heun.write_text(heun.read_text().replace('b = ["1/2", "1/2"]', 'b = ["1/4", "3/4"]'))
    bf.catalog._cache.clear()
    assert bf.catalog["heun"].to_table()["b"] == ["1/4", "3/4"]  # the catalog did change
    torch.testing.assert_close(outputs(save_dir), before, rtol=0, atol=0)
    with pytest.raises(DeclarationError) as info:
        train(TrainConfig(**{**config.to_json(), "max_update": 3}))
    message = str(info.value)
    assert "'heun'" in message and "encoder.method" in message
    assert "entry 'b[0]' was '1/2', is now '1/4'" in message


def test_a_users_declaration_file_is_read_beside_the_recipe_and_owned_by_the_run(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # `decl/mine3.toml` is relative to the recipe, not to here
    save_dir = tmp_path / "run"
    config = run(str(project / "mine.toml"), f"{project / 'data' / 'copy'}:de-en", save_dir)
    assert "mine3" in (save_dir / "recipe.toml").read_text()
    before = outputs(save_dir)
    (project / "decl" / "mine3.toml").write_text(MINE.replace('"2/3"', '"1/3"'))
    torch.testing.assert_close(outputs(save_dir), before, rtol=0, atol=0)
    with pytest.raises(DeclarationError, match=r"'mine3'.*entry 'b\[1\]' was '2/3', is now '1/3'"):
        train(TrainConfig(**{**config.to_json(), "max_update": 3}))
    shutil.rmtree(project / "decl")  # the file is gone: the run still loads
    torch.testing.assert_close(outputs(save_dir), before, rtol=0, atol=0)


def test_evaluate_works_from_any_directory(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)
    save_dir = tmp_path / "run"
    run("transformer-small", "data/copy:de-en", save_dir)  # relative, as typed
    monkeypatch.chdir(tmp_path)
    result = evaluate(save_dir, "test", beam=1, max_len_b=3, checkpoint="last")
    assert result.scores.n == 30
    # a config of the 0.1.0 format (no corpus_spec): one error naming config.json, not --data
    config = read_config(save_dir)
    del config["corpus_spec"]
    (save_dir / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError) as info:
        evaluate(save_dir, "test", beam=1, max_len_b=3, checkpoint="last")
    message = str(info.value)
    assert "config.json" in message and "'corpus_spec'" in message and "0.1.0" in message
    assert "--data" not in message


def test_the_save_dir_holds_its_recipe_once_and_resume_compares_it_as_a_recipe(
    tmp_path: Path,
) -> None:
    save_dir = tmp_path / "run"
    config = run("ode-transformer-rk2", f"{TINY}:de-en", save_dir, d_model=24)
    recipe = read_recipe(save_dir)
    assert run_sizes(recipe)["d_model"] == 24 and recipe.sizes["d_ffn"] == 32
    assert not {"d_model", "n_heads", "d_ffn", "recipe_toml"} & set(read_config(save_dir))
    # the file rewritten with other text (a comment, other spacing): the same recipe resumes
    path = save_dir / "recipe.toml"
    text = path.read_text()
    path.write_text("# edited by hand\n" + text.replace("d_model = 24", "d_model   =   24"))
    with pytest.raises(DeclarationError, match="--d-model 24"):
        train(TrainConfig(**{**config.to_json(), "d_model": 16, "max_update": 3}))
    assert train(TrainConfig(**{**config.to_json(), "max_update": 3}))["updates"] == 3
    path.write_text(text.replace("scale = true", "scale = false"))
    with pytest.raises(DeclarationError, match="in its 'scale"):
        train(TrainConfig(**{**config.to_json(), "max_update": 4}))


def test_a_save_dir_without_its_recipe_gets_one_clear_error(tmp_path: Path) -> None:
    save_dir = tmp_path / "run"
    config = run("ode-transformer-rk2", f"{TINY}:de-en", save_dir)
    path = save_dir / "recipe.toml"
    text = path.read_text()
    path.unlink()
    for attempt in (
        lambda: load_model(save_dir, "last"),
        lambda: train(TrainConfig(**{**config.to_json(), "max_update": 3})),
    ):
        with pytest.raises(CheckpointError) as info:
            attempt()
        message = str(info.value)
        assert str(path) in message and "0.1.0" in message and "\n" not in message
    old = tomllib.loads(text)
    old["encoder"]["method"] = old["encoder"]["method"]["name"]  # what 0.1.0 stored: a name
    path.write_text(recipe_to_toml(recipe_from_dict(old)))
    with pytest.raises(CheckpointError, match=r"names encoder\.method 'heun' instead of declaring"):
        load_model(save_dir, "last")
    path.write_text(text)
    settings = read_config(save_dir)
    del settings["seed"], settings["task"]  # what a config of the 0.1.0 format lacked
    (save_dir / "config.json").write_text(json.dumps(settings))
    with pytest.raises(CheckpointError, match=r"config\.json has no 'seed', 'task' \(a save dir"):
        train(TrainConfig(**{**config.to_json(), "max_update": 3}))
    with pytest.raises(CheckpointError, match=r"config\.json: 'task' is None, not one of"):
        load_model(save_dir, "last")


def test_inline_declarations_round_trip_through_a_recipe_file() -> None:
    recipe = bf.load_recipe("floater")
    fixed = pinned(recipe)
    assert by_name(recipe) and not by_name(fixed)
    back = recipe_from_dict(tomllib.loads(recipe_to_toml(fixed)))
    assert recipe_to_toml(back) == recipe_to_toml(fixed)
    assert isinstance(back.floater, bf.ContinuousDynamics) and back.floater.name == "floater"


def test_paths_in_a_recipe_are_read_from_its_folder(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    text = (project / "mine.toml").read_text()
    stack = text.replace(
        '[decoder]\nlayers = 3\nmethod = "euler"',
        '[decoder]\nlayers = 3\nmethod = "adams-bashforth-2"\nstarter = "decl/mine3.toml"',
    )
    (project / "stack.toml").write_text(f'param_budget = "mine.toml"\n{stack}')
    recipe = bf.load_recipe(project / "stack.toml")
    assert recipe.encoder is not None and recipe.decoder is not None
    assert recipe.encoder.method == str(project / "decl" / "mine3.toml")
    assert recipe.decoder.options["starter"] == str(project / "decl" / "mine3.toml")
    assert recipe.param_budget == str(project / "mine.toml")
    fixed = pinned(recipe)
    assert fixed.decoder is not None and fixed.decoder.options["starter"].name == "mine3"


@pytest.mark.parametrize("name", recipe_names())
def test_every_recipe_pins_and_builds_the_same_model(name: str) -> None:
    recipe = bf.load_recipe(name)
    fixed = pinned(recipe)
    text = recipe_to_toml(fixed)
    back = recipe_from_dict(tomllib.loads(text))
    assert recipe_to_toml(back) == text and not by_name(back)
    with torch.device("meta"):
        sizes = [model_class(r).from_recipe(r, 64).num_parameters for r in (recipe, back)]
    assert sizes[0] == sizes[1]
