"""Declared parameters: a family's symbols become the parameters of the layer that trains, and
the proof is about that very layer (`rk2-gated` is the trained RK2-gated block, not a family
that `bf.compile` refuses). Also: each family's compile options are validated against its own
option class, and every stage has a dispatch entry for every family."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from closeness import assert_close

import butcherflow as bf
from butcherflow.analysis import ANALYSES, trained_order
from butcherflow.analysis.convergence import CURVES
from butcherflow.assemble import recipe_from_dict, side_order
from butcherflow.compiler import COMPILERS, StageGate
from butcherflow.gallery.families import PAGES
from butcherflow.methods.files import FAMILIES, load, read_toml
from butcherflow.nn import Context

SIZES = {"d_model": 8, "n_heads": 2, "d_ffn": 16}
HEUN = bf.catalog["heun"]

# What today's (pre-declaration) implementation computes: heun with coefficients=<policy>,
# seed 0, float64, 5 Adam steps (`trained` below), recorded on main at commit cf3516b:
# (the last output's sum, the sum of every trained parameter), as float.hex.
RECORDED = {
    "gated": ("0x1.3fe70b89436b2p+3", "0x1.29251556aa412p+4"),
    "learned": ("-0x1.761d82b831580p+2", "0x1.31ed4d183a1e7p+4"),
    "unit": ("-0x1.052ccbd43ea9cp+3", "0x1.14d3dcedfe69ep+4"),
}
DECLARED = {"gated": "rk2-gated", "learned": "rk2-learned", "unit": "rk2-unit"}


def trained(method: object, **options: object) -> tuple[bf.CompiledBlock, torch.Tensor]:
    """A block built from seed 0 in float64 (dropout on) after 5 Adam steps, and its last output."""
    dtype = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        torch.manual_seed(0)
        block = bf.compile(method, field="san+ffn", dropout=0.1, **SIZES, **options)
        optimizer = torch.optim.Adam(block.parameters(), lr=1e-2)
        for _ in range(5):
            y = block(torch.randn(3, 5, 8))
            optimizer.zero_grad()
            (y**2).mean().backward()
            optimizer.step()
    finally:
        torch.set_default_dtype(dtype)
    return block, y.detach()


# -- the trained block is the declaration ----------------------------------------------------


@pytest.mark.parametrize("policy", sorted(DECLARED))
def test_declared_blocks_train_exactly_as_the_policies_did(policy: str) -> None:
    """`rk2-gated` (and -learned, -unit) is heun + coefficients=<policy>: the same state_dict
    keys and parameter order (so trained checkpoints load), and bit for bit the same numbers
    at initialisation and after training, as the recorded pre-declaration implementation."""
    declared, y = trained(DECLARED[policy])
    applied, y_applied = trained("heun", coefficients=policy)
    assert list(declared.state_dict()) == list(applied.state_dict())
    assert [n for n, _ in declared.named_parameters()] == [n for n, _ in applied.named_parameters()]
    assert torch.equal(y, y_applied)
    pairs = zip(declared.state_dict().items(), applied.state_dict().values(), strict=True)
    for (name, a), b in pairs:
        assert torch.equal(a, b), name
    total = float(sum(p.detach().sum() for p in declared.parameters()))
    output, parameters = (float.fromhex(x) for x in RECORDED[policy])
    # against the record, to BLAS rounding: CPUs with other vector units differ by about 1e-12
    # after five Adam steps (the unit policy's sum by 1.6e-12 on this project's Xeon machines)
    assert math.isclose(float(y.sum()), output, rel_tol=1e-9)
    assert math.isclose(total, parameters, rel_tol=1e-9)


def test_rk2_gated_is_eq_25_26_and_starts_as_heun() -> None:
    block = bf.compile("rk2-gated", field="san+ffn", **SIZES).double().eval()
    heun = bf.compile("heun", field=block.field, d_model=8).double().eval()
    y = torch.randn(2, 5, 8, dtype=torch.float64)
    assert_close(block(y), heun(y))  # W = 0, g = 1/2
    proj = block.program.gate.proj
    with torch.no_grad():
        proj.weight.normal_(0.0, 0.5)
    f, ctx = block.field, Context()
    f1 = f(y, ctx, 0)
    f2 = f(y + f1, ctx, 1)
    g = torch.sigmoid(torch.cat([f1, f2], dim=-1) @ proj.weight.T + proj.bias)
    assert float(g.detach().std()) > 1e-3
    assert_close(block(y), y + g * f1 + (1 - g) * f2)


def test_a_gate_starts_at_its_declared_value() -> None:
    tableau = bf.ButcherTableau(
        [[0, 0], [1, 0]], ["g", "1 - g"], parameters={"g": {"kind": "gate", "init": "1/4"}}
    )
    block = bf.compile(tableau, field="ffn", **SIZES).double()
    ralston_like = bf.ButcherTableau([[0, 0], [1, 0]], ["1/4", "3/4"])
    exact = bf.compile(ralston_like, field=block.field, d_model=8).double()
    y = torch.randn(2, 3, 8, dtype=torch.float64)
    assert_close(block(y), exact(y))
    assert block.program.gate.start.tolist() == [math.log(0.25 / 0.75)]


def test_recipes_point_at_the_declarations_that_train() -> None:
    """The RK2-gated and -unit recipes name `rk2-gated` and `rk2-unit`, and build the blocks
    the old recipes (heun + coefficients) built: same keys, so their checkpoints load."""
    for name, method, policy in (
        ("ode-transformer-rk2-gated", "rk2-gated", "gated"),
        ("ode-transformer-rk2-unit", "rk2-unit", "unit"),
    ):
        recipe = bf.load_recipe(name)
        assert recipe.encoder is not None
        assert recipe.encoder.method == method and "coefficients" not in recipe.encoder.options
        old = read_toml(bf.catalog.directory.parent / "models" / f"{name}.toml")
        old["encoder"] = {**old["encoder"], "method": "heun", "coefficients": policy}
        torch.manual_seed(0)
        new_model = bf.Seq2Seq(recipe, 40)
        torch.manual_seed(0)
        old_model = bf.Seq2Seq(recipe_from_dict(old), 40)
        assert list(new_model.state_dict()) == list(old_model.state_dict())
        old_model.load_state_dict(new_model.state_dict())  # strict
        for a, b in zip(new_model.parameters(), old_model.parameters(), strict=True):
            assert torch.equal(a, b)


# -- the proof is about the block that trains ------------------------------------------------


def test_the_report_states_the_order_as_the_block_trains() -> None:
    report = bf.check("rk2-gated")
    assert report.order == 1 and report.initial_order == 2  # type: ignore[attr-defined]
    assert report.block_order_text == "1 for every g (2 at initialisation, g = 1/2)"
    assert "order at initialisation" in str(report)
    assert "g: a per-token sigmoid gate, starting at 1/2" in str(report)
    # a policy applied to an exact tableau is proved as the declaration it compiles to
    assert trained_order(HEUN, "gated") == report.block_order_text
    assert trained_order(HEUN) == "2"
    assert trained_order(HEUN, "unit") == "0"
    learned = trained_order(HEUN, "learned")
    assert learned == "0 for every b1, b2 (2 at initialisation, b1 = 1/2, b2 = 1/2)"
    assert bf.check("rk2-learned").block_order_text.startswith("0 for every g1, g2 (2 at")


def test_softmax_weights_are_proved_summing_to_one() -> None:
    """RK4 with a softmax gate is consistent for every gate value (the weights sum to 1), and
    fourth order where it starts."""
    gated = bf.catalog["rk4"].with_coefficients("gated")
    report = bf.check(gated)
    assert report.order == 1 and report.initial_order == 4  # type: ignore[attr-defined]
    assert any("sum to 1" in note for note in report.notes)


def test_a_numeric_family_is_refused_with_one_line_not_a_key_error() -> None:
    """Ball arithmetic judges numbers: a numeric tableau with symbols (a policy applied to a
    tableau of floats) gets a DeclarationError naming a numeric entry, where it raised
    KeyError('g')."""
    numeric = bf.ButcherTableau([[0, 0], [0.5, 0]], [0.0, 1.0], name="numeric")
    for family in (numeric.with_coefficients("gated"), numeric.with_weights(["g", "1 - g"])):
        with pytest.raises(bf.DeclarationError, match="numeric family") as info:
            bf.check(family)
        assert (info.value.key, info.value.value) == ("A[1][0]", 0.5)
    bf.compile(numeric.with_coefficients("gated"), field="ffn", **SIZES)  # it still compiles


def test_recipe_sides_state_the_order_of_their_blocks() -> None:
    recipe = bf.load_recipe("ode-transformer-rk2-gated")
    assert recipe.encoder is not None and recipe.decoder is not None
    assert side_order(recipe.encoder) == "1 for every g (2 at initialisation, g = 1/2)"
    assert side_order(recipe.decoder) == "1"
    macaron = bf.load_recipe("dlcl")
    assert macaron.encoder is not None and "DLCL" in side_order(macaron.encoder)


def test_a_declared_multistep_family_reports_its_order_at_initialisation() -> None:
    assert bf.check("lm-resnet").block_order_text == "0 for every k (1 at initialisation, k = 1)"


# -- declaring parameters: files, Python, errors ---------------------------------------------


def test_parameters_round_trip_through_a_declaration_file(tmp_path: Path) -> None:
    method = bf.catalog["rk2-gated"]
    table = method.to_table()
    assert table["parameters"] == {"g": {"kind": "gate", "init": "1/2"}}
    lines = [f"{k} = {v!r}".replace("'", '"') for k, v in table.items() if k != "parameters"]
    text = "\n".join(lines) + '\n[parameters]\ng = { kind = "gate", init = "1/2" }\n'
    path = tmp_path / "mine.toml"
    path.write_text(text.replace('name = "rk2-gated"', 'name = "mine"'), encoding="utf-8")
    again = load(path)
    assert isinstance(again, bf.ButcherTableau)
    assert again.parameters == method.parameters


def test_python_declarations_take_a_kind_or_a_table() -> None:
    short = bf.ButcherTableau([[0, 0], [1, 0]], ["g", "1 - g"], parameters={"g": "gate"})
    long = bf.ButcherTableau(
        [[0, 0], [1, 0]], ["g", "1 - g"], parameters={"g": {"kind": "gate", "init": "1/2"}}
    )
    assert bf.check(short).block_order_text == bf.check(long).block_order_text
    member = long.subs({"g": "1/2"})
    assert not member.parameters and bf.check(member).order == 2


@pytest.mark.parametrize(
    ("parameters", "fragments"),
    [
        ({"h": "gate"}, ("parameters.h", "no such symbol", "symbols are ['g']")),
        ({"g": "gated"}, ("parameters.g.kind", "unknown kind", "learned, gate, tanh, softmax")),
        ({"g": {"kind": "gate", "init": 2}}, ("parameters.g.init", "between 0 and 1")),
        ({"g": {"kind": "tanh", "init": -1}}, ("parameters.g.init", "between -1 and 1")),
        ({"g": {"kind": "learned"}}, ("parameters.g.init", "needs its initial value")),
        ({"g": {"kind": "gate", "start": 1}}, ("parameters.g", "malformed parameter")),
        ({"g": {"kind": "gate", "init": "x"}}, ("parameters.g.init", "a number")),
        ("g", ("parameters", "table of symbols")),
    ],
)
def test_bad_parameters_get_one_clear_error(parameters: object, fragments: tuple[str, ...]) -> None:
    with pytest.raises(bf.DeclarationError) as info:
        bf.ButcherTableau([[0, 0], [1, 0]], ["g", "1 - g"], parameters=parameters)
    message = str(info.value)
    assert "\n" not in message and all(f in message for f in fragments), message


def test_gates_only_weight_stages() -> None:
    with pytest.raises(bf.DeclarationError, match=r"parameters\.a.*only in the weights b"):
        bf.ButcherTableau([[0, 0], ["a", 0]], ["1/2", "1/2"], parameters={"a": "gate"})
    learned = bf.ButcherTableau(
        [[0, 0], ["a", 0]], ["1/2", "1/2"], parameters={"a": {"kind": "learned", "init": 1}}
    )
    block = bf.compile(learned, field="ffn", **SIZES)
    assert block.program.weights.tolist() == [1.0] and "a = weights[0]" in block.code
    with pytest.raises(bf.DeclarationError, match="one kind of gate"):
        bf.ButcherTableau([[0, 0], [1, 0]], ["g", "t"], parameters={"g": "gate", "t": "tanh"})
    with pytest.raises(bf.DeclarationError, match="sum to 1"):
        bf.ButcherTableau(
            [[0, 0], [1, 0]],
            ["p", "q"],
            parameters={
                "p": {"kind": "softmax", "init": "1/2"},
                "q": {"kind": "softmax", "init": 1},
            },
        )
    with pytest.raises(bf.DeclarationError, match="cannot be compiled in this family"):
        bf.LinearMultistep(["k - 1", "-k", 1], [0, 1, 0], parameters={"k": "gate"})


def test_a_shared_gate_must_be_one_of_the_declarations_gates() -> None:
    gate = StageGate(8, 2, "gate", (0.5,))
    first = bf.compile("rk2-gated", field="ffn", gate=gate, **SIZES)
    second = bf.compile("heun", field="ffn", coefficients="gated", gate=gate, **SIZES)
    assert first.program.gate is gate is second.program.gate
    with pytest.raises(bf.DeclarationError, match=r"gate.*tanh gate over 2 stages"):
        bf.compile("rk2-gated", field="ffn", gate=StageGate(8, 2, "tanh", (0, 0)), **SIZES)


# -- per-family options ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "arguments", "option", "takes"),
    [
        ("rk4", {"field": "ffn", "share": True}, "share", "field, coefficients, step_size"),
        ("rk4", {"field": "ffn", "init": {"k": 1}}, "init", "iterations, gate, causal"),
        ("strang", {"fields": {"A": "ffn", "B": "ffn"}, "gate": None}, "gate", "share, post_norm"),
        ("strang", {"fields": {"A": "ffn", "B": "ffn"}, "iterations": 2}, "iterations", "fields"),
        (
            "neural-ode-rk4",
            {"field": "ffn", "coefficients": "exact"},
            "coefficients",
            "field, causal",
        ),
        ("neural-ode-rk4", {"field": "ffn", "step_size": 0.5}, "step_size", "field, causal"),
        ("leapfrog", {"fields": ["ffn"] * 3, "share": True}, "share", "starter, init"),
    ],
)
def test_an_option_that_does_not_apply_names_the_option_the_family_and_what_it_takes(
    method: str, arguments: dict[str, object], option: str, takes: str
) -> None:
    family = bf.catalog[method].family
    with pytest.raises(bf.DeclarationError) as info:
        bf.compile(method, **arguments, **SIZES)
    message = str(info.value)
    assert f"key '{option}': {option} does not apply to a {family} declaration" in message
    assert takes in message
    assert "the field's options d_model, n_heads, d_ffn, dropout, activation, stage" in message


def test_the_public_call_keeps_working() -> None:
    block = bf.compile(
        HEUN, field="san+ffn", d_model=16, n_heads=4, d_ffn=32, coefficients="exact", dropout=0.1
    )
    assert isinstance(block, bf.CompiledBlock) and block.method is HEUN


def test_a_recipe_option_that_does_not_apply_names_the_recipe_key() -> None:
    data = read_toml(bf.catalog.directory.parent / "models" / "ode-transformer-rk2.toml")
    data["encoder"] = {**data["encoder"], "share": True}
    with pytest.raises(bf.DeclarationError, match=r"key 'encoder\.share': share does not apply"):
        bf.Seq2Seq(recipe_from_dict(data), 40)


# -- one dispatch entry per family and stage -----------------------------------------------------


def test_every_family_has_an_analysis_a_compiler_and_a_page() -> None:
    """Explicit tables, no registration by import: a family missing from one is caught here."""
    for family in FAMILIES:
        assert family in ANALYSES and family in COMPILERS and family in PAGES
        assert family in CURVES
        assert family.keys and set(family.required) <= set(family.keys)


@pytest.mark.parametrize(
    ("init", "text", "row"),
    [
        # a decimal init keeps its rounding: 0.6667 is 2/3 only to within 5e-5, so order 2 at
        # initialisation is undetermined, not refuted (as if 6667/10000 were exact)
        ("0.6667", "1 for every a (1+ at initialisation, a = 0.6667)", "1+"),
        ("2/3", "1 for every a (2 at initialisation, a = 2/3)", "2"),
        ("1/2", "1 for every a", "1"),
    ],
)
def test_the_order_at_initialisation_judges_a_decimal_init_at_its_digits(
    init: str, text: str, row: str
) -> None:
    ralston = bf.ButcherTableau(
        [[0, 0], ["a", 0]], ["1/4", "3/4"], parameters={"a": {"kind": "learned", "init": init}}
    )
    report = bf.check(ralston)
    assert report.block_order_text == text
    assert dict(report.rows())["order at initialisation"] == row
    multistep = bf.LinearMultistep(
        [0, -1, 1], [0, "1 - 3*a/4", "3*a/4"], parameters={"a": {"kind": "learned", "init": init}}
    )
    expected = {"0.6667": "1 for every a (1+ at initialisation, a = 0.6667)"}
    expected["2/3"] = "1 for every a (2 at initialisation, a = 2/3)"
    # the same rule for multistep (order 2 at a = 2/3)
    assert bf.check(multistep).block_order_text == expected.get(init, "1 for every a")
