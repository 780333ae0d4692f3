"""Models assembled from recipes: every recipe builds, decodes incrementally, and is validated."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import butcherflow as bf
from butcherflow.assemble import count_parameters, load_recipe, model_class, recipe_names
from butcherflow.cli import main
from butcherflow.errors import ButcherflowWarning
from butcherflow.nn import DecodeCache

RECIPES = recipe_names()
VOCAB = 40


def _small(name: str) -> bf.Recipe:
    """The recipe at tiny sizes (same methods and fields) so the suite stays fast."""
    from dataclasses import replace

    recipe = load_recipe(name)
    return replace(
        recipe,
        sizes={**recipe.sizes, "d_model": 16, "n_heads": 2, "d_ffn": 32, "dropout": 0.0},
        param_budget=None,
    )


def test_the_issue_recipes_exist() -> None:
    wanted = {
        "transformer-base",
        "transformer-small",
        "ode-transformer-rk2",
        "ode-transformer-rk2-unit",
        "ode-transformer-rk2-gated",
        "ode-transformer-rk4",
        "macaron",
        "leapfrog",
        "dlcl",
    }
    assert wanted <= set(RECIPES)


@pytest.mark.parametrize("name", RECIPES)
def test_incremental_decoding_equals_the_full_forward(name: str) -> None:
    torch.manual_seed(0)
    if model_class(_small(name)) is bf.LanguageModel:  # a decoder-only recipe (models/lm-*)
        lm = bf.LanguageModel(_small(name), VOCAB).double().eval()
        tokens, cache = torch.randint(1, VOCAB, (2, 6)), DecodeCache()
        steps = torch.cat([lm(tokens[:, :2], cache), lm(tokens[:, 2:3], cache)], dim=1)
        steps = torch.cat([steps, *(lm(tokens[:, t : t + 1], cache) for t in range(3, 6))], 1)
        torch.testing.assert_close(steps, lm(tokens), rtol=1e-9, atol=1e-9)
        return
    model = bf.Seq2Seq(_small(name), VOCAB).double().eval()
    src = torch.randint(1, VOCAB, (2, 6))
    src[1, 4:] = 0
    tgt = torch.randint(1, VOCAB, (2, 5))
    full = model(src, tgt)
    memory, padding = model.encode(src)
    cache = DecodeCache()
    steps = [model.decode(tgt[:, t : t + 1], memory, padding, cache) for t in range(5)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name", ["transformer-small", "ode-transformer-rk4", "macaron"])
def test_padding_side_does_not_shift_positions(name: str) -> None:
    torch.manual_seed(0)
    model = bf.Seq2Seq(_small(name), VOCAB).double().eval()
    tokens = torch.randint(1, VOCAB, (1, 4))
    right = torch.cat([tokens, torch.zeros(1, 2, dtype=torch.long)], dim=1)
    left = torch.cat([torch.zeros(1, 2, dtype=torch.long), tokens], dim=1)
    memory_right, _ = model.encode(right)
    memory_left, _ = model.encode(left)
    torch.testing.assert_close(memory_right[:, :4], memory_left[:, 2:], rtol=1e-9, atol=1e-9)


def test_training_step_reaches_every_parameter() -> None:
    model = bf.Seq2Seq(_small("ode-transformer-rk2-gated"), VOCAB)
    src, tgt = torch.randint(1, VOCAB, (2, 5)), torch.randint(1, VOCAB, (2, 4))
    model(src, tgt).logsumexp(-1).sum().backward()
    missing = [n for n, p in model.named_parameters() if p.grad is None]
    assert not missing


def test_macaron_budget_matches_the_transformer() -> None:
    model = bf.Seq2Seq.from_recipe("macaron", 8000)
    target = count_parameters(load_recipe("transformer-small"), 8000)
    assert abs(model.num_parameters - target) / target < 0.001
    assert model.recipe.sizes["d_ffn"] == 512  # the paper's halved FFN
    assert "param_budget" in model.recipe.description


def test_transformer_base_has_the_published_size() -> None:
    # Vaswani et al.: about 60M parameters with a ~32k shared vocabulary (counted on meta).
    assert 59e6 < count_parameters(load_recipe("transformer-base"), 32000) < 62e6


def test_language_model_decodes_incrementally() -> None:
    torch.manual_seed(0)
    lm = bf.LanguageModel(_small("ode-transformer-rk4"), VOCAB).double().eval()
    tokens = torch.randint(1, VOCAB, (2, 6))
    cache = DecodeCache()
    steps = torch.cat([lm(tokens[:, t : t + 1], cache) for t in range(6)], dim=1)
    torch.testing.assert_close(steps, lm(tokens), rtol=1e-9, atol=1e-9)


def _write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "recipe.toml"
    path.write_text('name = "mine"\n[sizes]\nd_model = 16\nn_heads = 2\nd_ffn = 32\n' + body)
    return path


GOOD_SIDES = (
    '[encoder]\nlayers = 1\nmethod = "euler"\nfield = "san+ffn"\n'
    '[decoder]\nlayers = 1\nmethod = "euler"\nfield = "san+ca+ffn"\n'
)


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (GOOD_SIDES + "[embedding]\nposition = 'rotary'\n", "embedding.position"),
        (GOOD_SIDES + "[embedding]\nmax_len = 10\n", "max_len applies to learned"),
        (GOOD_SIDES.replace("layers = 1\nmethod", "layres = 1\nmethod", 1), "did you mean"),
        (
            GOOD_SIDES.replace('field = "san+ffn"', 'fields = { A = "ffn" }\nfield = "san"'),
            "exactly one of field and fields",
        ),
        (GOOD_SIDES.replace("san+ca+ffn", "san+ffn"), "never attend to the encoder"),
        (GOOD_SIDES.replace('method = "euler"', 'method = "strang"', 1), "splitting"),
        (GOOD_SIDES + "[sizes2]\n", "unknown key"),
        ("", "needs an [encoder] or a [decoder]"),
        (GOOD_SIDES.replace('"san+ffn"', '"san+ca+ffn"'), "encoder.field': the encoder's fields"),
        (
            GOOD_SIDES.replace(
                'layers = 1\nmethod = "euler"', 'layers = 2\nmethod = "rk4"', 1
            ).replace('field = "san+ffn"', 'field = "san+ffn"\nshare_gate = true'),
            "encoder.share_gate': share_gate shares a per-token stage gate",
        ),
        (
            GOOD_SIDES.replace('field = "san+ffn"', 'field = "san+ffn"\nshare_gate = "no"'),
            "encoder.share_gate': encoder.share_gate must be true or false",
        ),
        (GOOD_SIDES + "[embedding]\nscale = 'no'\n", "embedding.scale must be true or false"),
        (
            GOOD_SIDES.replace('field = "san+ffn"', 'field = "san+ffn"\ndropout = 1'),
            "unknown key",
        ),
    ],
)
def test_bad_recipes_are_refused(tmp_path: Path, body: str, fragment: str) -> None:
    path = _write(tmp_path, body)
    with pytest.raises(bf.DeclarationError, match=fragment.replace("[", r"\[")):
        bf.Seq2Seq(path, VOCAB)


COMPILE_ERRORS = [
    (  # an option the compiler refuses: the recipe file and the recipe's key
        GOOD_SIDES.replace('field = "san+ffn"', 'field = "san+ffn"\ncoefficients = "dynamic"'),
        bf.Seq2Seq,
        "key 'encoder.coefficients': unknown coefficient policy (got 'dynamic')",
    ),
    (  # a size the compiler refuses: the key is the recipe's [sizes] key
        GOOD_SIDES + "[sizes]\n",  # marker: n_heads = 3 below
        bf.Seq2Seq,
        "key 'sizes.n_heads': d_model=16 must be a positive multiple of n_heads=3",
    ),
    (  # a language model built from the [encoder]: the error names [encoder], not [decoder]
        '[encoder]\nlayers = 1\nmethod = "euler"\nfield = "san+ffn"\ncoefficients = "x"\n',
        bf.LanguageModel,
        "key 'encoder.coefficients': unknown coefficient policy (got 'x')",
    ),
]


@pytest.mark.parametrize(("body", "model", "message"), COMPILE_ERRORS)
def test_compile_errors_name_the_recipe_file_and_key(
    tmp_path: Path, body: str, model: type[torch.nn.Module], message: str
) -> None:
    path = _write(tmp_path, body.removesuffix("[sizes]\n"))
    if body.endswith("[sizes]\n"):
        path.write_text(path.read_text().replace("n_heads = 2", "n_heads = 3"))
    with pytest.raises(bf.DeclarationError) as caught:
        model(path, VOCAB)
    assert str(caught.value).startswith(f"{path}: {message}")


def test_a_compile_error_in_the_method_names_the_method_file(tmp_path: Path) -> None:
    """The compiler's refusal of the method's own V named the recipe (key 'V' of recipe.toml)."""
    method = tmp_path / "glm.toml"
    method.write_text(
        'name = "halving"\nfamily = "general-linear"\nA = [[0]]\nU = [[1]]\nB = [[1]]\n'
        'V = [["1/2"]]\n'
    )
    path = _write(tmp_path, GOOD_SIDES.replace('method = "euler"', f'method = "{method}"', 1))
    with pytest.raises(bf.DeclarationError) as caught:
        bf.Seq2Seq(path, VOCAB)
    assert str(caught.value).startswith(f"{method}: key 'V': 'halving' is not preconsistent")


def test_unknown_recipe_name_suggests() -> None:
    with pytest.raises(bf.UnknownNameError, match="macaron"):
        load_recipe("macarom")


def test_show_prints_code_cost_and_report(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "rk4", "--d-model", "16", "--n-heads", "2", "--d-ffn", "32"]) == 0
    out = capsys.readouterr().out
    assert "self.field(y, ctx, 0)" in out and "FLOPs/token" in out and "order" in out


def test_show_a_name_that_is_both_method_and_recipe(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "leapfrog", "--d-model", "16", "--n-heads", "2", "--d-ffn", "32"]) == 0
    out = capsys.readouterr().out
    assert "multistep" in out and "Leapfrog stack" in out and "parameters" in out


def test_show_states_the_order_of_the_blocks_as_they_train(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["show", "ode-transformer-rk2-gated"]) == 0
    out = capsys.readouterr().out
    assert "encoder: 3 x rk2-gated with san+ffn" in out
    assert "order of its blocks as they train: 1 for every g (2 at initialisation, g = 1/2)" in out
    assert main(["show", "rk2-gated", "--d-model", "16", "--n-heads", "2", "--d-ffn", "32"]) == 0
    out = capsys.readouterr().out
    assert "gates = self.gate(k1, k2)" in out and "order at initialisation" in out


def test_show_names_a_splittings_fields_and_no_empty_options(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["show", "macaron"]) == 0
    out = capsys.readouterr().out
    assert "encoder: 3 x strang with fields A = ffn, B = san\n" in out
    assert "decoder: 3 x strang with fields A = ffn, B = san+ca\n" in out
    assert "{" not in out.split("first encoder block")[0]
    code = out.split("first encoder block (SplittingBlock):\n\n")[1]
    assert code.startswith("def forward(self, y, ctx):\n")


@pytest.mark.parametrize("name", recipe_names())
def test_every_recipe_counts_its_parameters_on_the_meta_device(name: str) -> None:
    # Gates computed their starting logits with .item() once, which the meta device refuses.
    kind = model_class(load_recipe(name))
    with torch.device("cpu"):
        expected = kind.from_recipe(name, 64).num_parameters
    assert count_parameters(kind.from_recipe(name, 64).recipe, 64) == expected


def test_decode_last_only_is_the_last_row_of_the_full_decode() -> None:
    torch.manual_seed(0)
    model = bf.Seq2Seq("transformer-small", 50).double().eval()
    src, tgt = torch.randint(4, 50, (2, 6)), torch.randint(4, 50, (2, 5))
    memory, padding = model.encode(src)
    full = model.decode(tgt, memory, padding)
    last = model.decode(tgt, memory, padding, last_only=True)
    assert last.shape == (2, 1, 50)
    torch.testing.assert_close(last, full[:, -1:], rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    ("name", "policy"),
    [
        ("hyper-connections", "learned"),
        ("hyper-connections-dynamic", "dynamic"),
        ("mhc", "sinkhorn"),
        ("denseformer", "learned"),
        ("pcformer", "learned"),
    ],
)
def test_general_linear_recipes_are_shown_beside_transformer_small(
    name: str, policy: str, capsys: pytest.CaptureFixture[str]
) -> None:
    small = bf.Seq2Seq.from_recipe("transformer-small", 8000).num_parameters
    model = bf.Seq2Seq.from_recipe(name, 8000)
    stacks = [m for m in model.modules() if isinstance(m, bf.compiler.GeneralLinearStack)]
    assert len(stacks) == 1 and stacks[0].policy == policy  # the encoder; decoders are residual
    assert abs(model.num_parameters / small - 1) < 0.01  # a few coefficients on top
    assert main(["show", name, "--vocab", "8000"]) == 0
    out = capsys.readouterr().out
    assert f"beside transformer-small: {small:,}" in out


def test_a_title_that_is_no_text_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "recipe.toml"
    path.write_text('name = "mine"\ntitle = []\n' + _write(tmp_path, GOOD_SIDES).read_text()[14:])
    with pytest.raises(bf.DeclarationError, match="key 'title': expected a string"):
        load_recipe(path)


def test_untied_embeddings_are_said_to_be_tied(tmp_path: Path) -> None:
    """share_embeddings = false, which recipes and save dirs written before it was checked
    hold, builds the tied model they were trained as, with a warning."""
    path = _write(tmp_path, GOOD_SIDES + "[embedding]\nshare_embeddings = false\n")
    with pytest.warns(ButcherflowWarning, match="share_embeddings = false is not implemented"):
        recipe = load_recipe(path)
    assert recipe.share_embeddings is True


def test_numpy_sizes_and_a_starter_file_compile() -> None:
    np = pytest.importorskip("numpy")
    sizes = {"d_model": np.int64(16), "n_heads": np.int64(2), "d_ffn": np.int64(32)}
    block = bf.compile("rk4", field="san+ffn", causal=np.bool_(False), **sizes)
    assert block(torch.randn(2, 3, 16)).shape == (2, 3, 16)
    starter = Path(bf.catalog["heun"].source)
    stack = bf.compile_stack("adams-bashforth-2", ["san+ffn"] * 3, starter=starter, **sizes)
    assert stack(torch.randn(2, 3, 16)).shape == (2, 3, 16)
