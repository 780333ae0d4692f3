"""`stage = "layer"`: stages that store the whole layer L(y) = y + F(y), as the ODE Transformer's
released code does. The recipe `ode-transformer-rk2-code` trains that code's RK2 block; its
block is checked against a hand computation, against the audit page's declaration of the code
(a general linear method in F), and its order is proved as that declaration's."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import sympy
import torch

import butcherflow as bf
from butcherflow.assemble import load_recipe, side_order
from butcherflow.gallery.audit import CODE_GATED, CODE_RK2, CODE_RK4
from butcherflow.methods import GeneralLinear, catalog
from butcherflow.nn import Context, make_field

RECIPE = "ode-transformer-rk2-code"
SIZES = {"d_model": 8, "n_heads": 2, "d_ffn": 16}


def _encoder_block(recipe: str) -> bf.CompiledBlock:
    loaded = load_recipe(recipe)
    small = replace(loaded, sizes={**loaded.sizes, **SIZES, "dropout": 0.0})
    torch.manual_seed(0)
    model = bf.Seq2Seq(small, 30).double().eval()
    block = model.encoder[0]
    assert isinstance(block, bf.CompiledBlock)
    return block


def test_the_code_recipe_is_heun_on_layer_stages_beside_the_paper_recipe() -> None:
    code, paper = load_recipe(RECIPE), load_recipe("ode-transformer-rk2")
    assert code.encoder is not None and paper.encoder is not None
    assert code.encoder.method == paper.encoder.method == "heun"
    assert code.encoder.options == {"stage": "layer"} and "stage" not in paper.encoder.options
    assert code.decoder == paper.decoder and code.sizes == paper.sizes


def test_its_block_is_y_plus_half_of_l_y_and_l_of_y_plus_l_y() -> None:
    """By hand, in float64, from the block's own sublayers: y + ½(L(y) + L(y + L(y)))."""
    block = _encoder_block(RECIPE)
    parts = block.field.parts
    ctx = Context(causal=False)

    def layer(x: torch.Tensor) -> torch.Tensor:  # the pre-norm encoder layer, written out
        x = x + parts["san"](x, ctx, 0)
        return x + parts["ffn"](x, ctx, 0)

    y = torch.randn(2, 5, SIZES["d_model"], dtype=torch.float64, generator=torch.Generator())
    l1 = layer(y)
    expected = y + 0.5 * (l1 + layer(y + l1))
    torch.testing.assert_close(block(y, ctx=ctx), expected, rtol=1e-12, atol=1e-12)
    branch = _encoder_block("ode-transformer-rk2")  # same seed, same weights: the paper's Heun
    f1 = l1 - y
    paper = y + 0.5 * (f1 + (layer(y + f1) - (y + f1)))
    torch.testing.assert_close(branch(y, ctx=ctx), paper, rtol=1e-12, atol=1e-12)
    assert (block(y, ctx=ctx) - branch(y, ctx=ctx)).abs().max() > 1.0  # the two really differ


def test_the_block_computes_the_audit_declaration_of_the_code() -> None:
    """Heun with stage = 'layer' is the audit's general linear method in F, evaluated from its
    matrices (the GLM compiler refuses it: not preconsistent): Yᵢ = Uᵢy + Σ A'ᵢⱼF(Yⱼ),
    y' = Vy + Σ BⱼF(Yⱼ)."""
    torch.manual_seed(1)
    block = bf.compile("heun", field="san+ffn", **SIZES, stage="layer").double().eval()
    parts, ctx = block.field.parts, Context(causal=False)

    def field(x: torch.Tensor) -> torch.Tensor:  # F = L − id, summed as the branch
        a = parts["san"](x, ctx, 0)
        return a + parts["ffn"](x + a, ctx, 0)

    y = torch.randn(1, 4, SIZES["d_model"], dtype=torch.float64)
    A, U, B, V = CODE_RK2.A, CODE_RK2.U, CODE_RK2.B, CODE_RK2.V
    slopes: list[torch.Tensor] = []
    for i in range(len(A)):
        stage = float(U[i][0]) * y + sum(float(A[i][j]) * slopes[j] for j in range(i))
        slopes.append(field(stage))
    expected = float(V[0][0]) * y + sum(float(B[0][j]) * k for j, k in enumerate(slopes))
    torch.testing.assert_close(block(y, ctx=ctx), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    ("name", "declared"), [("heun", CODE_RK2), ("rk2-gated", CODE_GATED), ("rk4", CODE_RK4)]
)
def test_from_layer_stages_gives_the_audited_declarations(
    name: str, declared: GeneralLinear
) -> None:
    derived = GeneralLinear.from_layer_stages(catalog[name])
    for key in ("A", "U", "B", "V"):
        ours, theirs = sympy.Matrix(getattr(derived, key)), sympy.Matrix(getattr(declared, key))
        difference = (ours - theirs).subs({s: sympy.Symbol(s.name) for s in ours.free_symbols})
        difference = difference.subs({s: sympy.Symbol(s.name) for s in theirs.free_symbols})
        assert sympy.simplify(difference) == sympy.zeros(*ours.shape), key


def test_its_order_is_proved_on_what_it_computes() -> None:
    code, paper = load_recipe(RECIPE).encoder, load_recipe("ode-transformer-rk2").encoder
    assert code is not None and paper is not None
    assert side_order(paper) == "2"
    assert side_order(code).startswith("0 in F (not preconsistent)")


def test_a_bad_stage_is_one_line_naming_file_key_and_value(tmp_path: Path) -> None:
    text = (Path(load_recipe(RECIPE).source or "")).read_text(encoding="utf-8")
    path = tmp_path / "bad.toml"
    path.write_text(text.replace('stage = "layer"', 'stage = "layers"'), encoding="utf-8")
    with pytest.raises(bf.DeclarationError) as caught:
        load_recipe(path)
    message = str(caught.value)
    assert "\n" not in message
    assert str(path) in message and "encoder.stage" in message and "'layers'" in message
    assert "'branch'" in message and "'layer'" in message


def test_the_field_refuses_what_it_cannot_mean() -> None:
    with pytest.raises(bf.DeclarationError, match="stage"):
        make_field("san+ffn", **SIZES, stage="whole")
    with pytest.raises(bf.DeclarationError, match="named field only"):
        make_field(torch.nn.Linear(8, 8), stage="layer")


def test_post_norm_would_cancel_a_layer_stage() -> None:
    """LN(y + L(y)) = LN(y + F(y)/2): the two options together are refused, not compiled."""
    fields = {"A": "ffn", "B": "san"}
    bf.compile("lie-trotter", fields=fields, **SIZES, post_norm=True)
    with pytest.raises(bf.DeclarationError, match="post_norm after a layer stage"):
        bf.compile("lie-trotter", fields=fields, **SIZES, post_norm=True, stage="layer")


def test_a_tableau_whose_layer_stages_are_undetermined_is_refused() -> None:
    # Backward Euler with Y = y + (Y + F(Y)) says only F(Y) = -y: I - A is singular.
    implicit = catalog["backward-euler"]
    with pytest.raises(bf.DeclarationError, match="I - A is singular") as caught:
        GeneralLinear.from_layer_stages(implicit)
    assert "'stage'" in str(caught.value) and "\n" not in str(caught.value)
    with pytest.raises(bf.DeclarationError, match="I - A is singular"):
        bf.compile("backward-euler", field="ffn", **SIZES, iterations=2, stage="layer")
    # the implicit midpoint rule (a = 1/2) stores layers well: Y = 2y + F(Y)
    assert GeneralLinear.from_layer_stages(catalog["implicit-midpoint"]).U[0][0] == 2
    bf.compile("implicit-midpoint", field="ffn", **SIZES, iterations=2, stage="layer")
