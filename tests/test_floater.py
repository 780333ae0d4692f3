"""FLOATER position biases: warm start, positions, caching, decoding, training, bad input.

Tiny models (d_model 16); exactness tests run in float64.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import Tensor, nn

import butcherflow as bf
from butcherflow.assemble import FloaterInjection, recipe_from_dict
from butcherflow.cli import main
from butcherflow.nn import DecodeCache, FloaterPositions

floater_module = __import__("butcherflow.nn.floater", fromlist=["solve"])

DOUBLE = torch.float64
VOCAB, PAD = 40, 0
SIZES = {"d_model": 16, "n_heads": 2, "d_ffn": 32, "dropout": 0.0}


def _declaration(name: str) -> bf.ContinuousDynamics:
    found = bf.catalog[name]
    assert isinstance(found, bf.ContinuousDynamics)
    return found


FLOATER = _declaration("floater")


def flows(model: bf.Seq2Seq | bf.LanguageModel) -> dict[str, FloaterPositions]:
    assert model.floater is not None
    return {name: flow for name, flow in model.floater.flows.items()}  # type: ignore[misc]


def recipe(
    position: str = "floater", decoder: str = "euler", layers: int = 2, **embedding: Any
) -> bf.Recipe:
    table: dict[str, Any] = {"position": position, **embedding}
    if position == "floater":
        table.setdefault("floater", "floater")
    return recipe_from_dict(
        {
            "name": "tiny",
            "sizes": SIZES,
            "encoder": {"layers": layers, "method": "euler", "field": "san+ffn"},
            "decoder": {"layers": layers, "method": decoder, "field": "san+ca+ffn"},
            "embedding": table,
        }
    )


def randomise(module: nn.Module, scale: float = 0.3, seed: int = 1) -> None:
    """Non-zero flows (the default start is exactly zero biases)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype) * scale)


def tokens(batch: int, length: int, seed: int) -> Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(1, VOCAB, (batch, length), generator=g)


def floater_model(decoder: str = "euler", **embedding: Any) -> bf.Seq2Seq:
    torch.manual_seed(0)
    model = bf.Seq2Seq(recipe(decoder=decoder, **embedding), VOCAB, PAD).to(DOUBLE)
    assert model.floater is not None
    randomise(model.floater)
    return model.eval()


@pytest.fixture
def solves(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Counts the ODE solves of FLOATER flows (their length, one entry per solve)."""
    calls: list[int] = []
    real = floater_module.solve

    def counted(func: Any, y0: Tensor, times: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        calls.append(times.numel())
        out: Tensor = real(func, y0, times, *args, **kwargs)
        return out

    monkeypatch.setattr(floater_module, "solve", counted)
    yield calls


# --------------------------------------------------------------------------- warm start


def test_warm_start_computes_the_transformer_exactly(tmp_path: Path) -> None:
    torch.manual_seed(0)
    transformer = bf.Seq2Seq(recipe("sinusoidal", decoder="heun"), VOCAB, PAD).to(DOUBLE).eval()
    src = tokens(3, 7, seed=1)
    src[0, :3] = PAD  # left padding
    src[1, 5:] = PAD  # right padding
    tgt = tokens(3, 6, seed=2)
    expected = transformer(src, tgt)
    from safetensors.torch import save_file

    path = tmp_path / "transformer.safetensors"
    save_file(transformer.state_dict(), str(path))
    for checkpoint in (transformer, transformer.state_dict(), path, str(path)):
        model = floater_model(decoder="heun")
        assert not torch.allclose(model(src, tgt), expected, atol=1e-6)  # biases matter
        assert bf.warm_start(model, checkpoint) is model
        torch.testing.assert_close(model(src, tgt), expected, rtol=1e-13, atol=1e-13)
    # the warm-started model trains its flows: the output layer and initial values get gradient
    model.train()
    model(src, tgt).pow(2).sum().backward()
    for flow in flows(model).values():
        assert flow.initial.grad is not None and flow.initial.grad.abs().sum() > 0
        grad = flow.dynamics.outer.weight.grad
        assert grad is not None and grad.abs().sum() > 0


def test_fresh_floater_model_starts_at_its_transformer() -> None:
    torch.manual_seed(0)
    model = bf.Seq2Seq(recipe(), VOCAB, PAD).to(DOUBLE).eval()
    src, tgt = tokens(2, 5, seed=3), tokens(2, 4, seed=4)
    plain = bf.Seq2Seq(recipe("sinusoidal"), VOCAB, PAD).to(DOUBLE).eval()
    state = {k: v for k, v in model.state_dict().items() if not k.startswith("floater.")}
    plain.load_state_dict(state)
    torch.testing.assert_close(model(src, tgt), plain(src, tgt), rtol=0, atol=0)


def test_warm_start_names_missing_unexpected_and_mismatched_keys(tmp_path: Path) -> None:
    model = floater_model()
    deeper = bf.Seq2Seq(recipe("sinusoidal", layers=3), VOCAB, PAD)
    with pytest.raises(bf.DeclarationError, match=r"unexpected key 'decoder\.2\..*\(48, 16\)"):
        bf.warm_start(model, deeper)
    shallow = bf.Seq2Seq(recipe("sinusoidal", layers=1), VOCAB, PAD)
    with pytest.raises(bf.DeclarationError, match=r"missing key 'decoder\.1\..*\(\d+"):
        bf.warm_start(model, shallow)
    wider = recipe_from_dict(
        {
            "name": "wide",
            "sizes": {**SIZES, "d_ffn": 48},
            "encoder": {"layers": 2, "method": "euler", "field": "san+ffn"},
            "decoder": {"layers": 2, "method": "euler", "field": "san+ca+ffn"},
        }
    )
    with pytest.raises(bf.DeclarationError, match=r"checkpoint \(48, 16\) vs model \(32, 16\)"):
        bf.warm_start(model, bf.Seq2Seq(wider, VOCAB, PAD))
    learned = bf.Seq2Seq(recipe("learned", max_len=64), VOCAB, PAD)
    with pytest.raises(bf.DeclarationError, match=r"embedding\.positions\.embedding\.weight"):
        bf.warm_start(model, learned)
    with pytest.raises(bf.DeclarationError, match="already a FLOATER model"):
        bf.warm_start(model, floater_model())
    with pytest.raises(bf.DeclarationError, match="needs a FLOATER model"):
        bf.warm_start(shallow, shallow)
    with pytest.raises(bf.DeclarationError, match=r"\.safetensors"):
        bf.warm_start(model, tmp_path / "weights.pt")
    with pytest.raises(bf.DeclarationError, match=r"no such \.safetensors file"):
        bf.warm_start(model, tmp_path / "missing.safetensors")


# --------------------------------------------------------------------------- positions


def test_padding_side_never_shifts_positions() -> None:
    model = floater_model()
    real = [tokens(1, 5, seed=5)[0], tokens(1, 3, seed=6)[0]]
    right = torch.full((2, 6), PAD)
    left = torch.full((2, 6), PAD)
    for row, seq in enumerate(real):
        right[row, : len(seq)] = seq
        left[row, 6 - len(seq) :] = seq
    tgt = tokens(2, 4, seed=7)
    torch.testing.assert_close(model(right, tgt), model(left, tgt), rtol=1e-12, atol=1e-12)
    # and a single unpadded row gives the same as its padded version
    alone = model(real[1][None], tgt[1:])
    torch.testing.assert_close(alone, model(left, tgt)[1:], rtol=1e-12, atol=1e-12)


def test_length_extrapolation_and_prefix_stability() -> None:
    torch.manual_seed(0)
    flow = FloaterPositions(FLOATER, 16, 3).to(DOUBLE)
    randomise(flow)
    long = flow(600)  # beyond any length seen in training, beyond the official code's 255
    assert long.shape == (3, 600, 16) and bool(torch.isfinite(long).all())
    for n in (1, 2, 37, 256):
        torch.testing.assert_close(flow(n), long[:, :n], rtol=0, atol=0)
    torch.testing.assert_close(long[:, 0], flow.initial, rtol=0, atol=0)
    assert not torch.allclose(long[:, 599], long[:, 0])  # the flow moved
    model = floater_model()
    src, tgt = tokens(1, 300, seed=8), tokens(1, 3, seed=9)
    assert bool(torch.isfinite(model(src, tgt)).all())


def test_adjoint_and_adaptive_flows() -> None:
    torch.manual_seed(0)
    direct = FloaterPositions(FLOATER, 8, 2).to(DOUBLE)
    randomise(direct)
    adjoint = FloaterPositions(bf.ContinuousDynamics("rk4", grid="positions", adjoint=True), 8, 2)
    adjoint = adjoint.to(DOUBLE)
    adjoint.load_state_dict(direct.state_dict())
    for flow in (direct, adjoint):
        flow(12).pow(2).sum().backward()
    for (name, a), b in zip(direct.named_parameters(), adjoint.parameters(), strict=True):
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-6, atol=1e-8, msg=name)
    adaptive = FloaterPositions(
        bf.ContinuousDynamics("dopri5", grid="positions", rtol=1e-10, atol=1e-12), 8, 2
    ).to(DOUBLE)
    adaptive.load_state_dict(direct.state_dict())
    torch.testing.assert_close(adaptive(12), direct(12), rtol=1e-7, atol=1e-9)


# --------------------------------------------------------------------------- cost control


def test_eval_cache_reused_and_longer_requests_resolve(solves: list[int]) -> None:
    model = floater_model()
    evaluations = [0]
    for flow in flows(model).values():  # count evaluations of the wrapped dynamics h
        flow.dynamics.register_forward_hook(
            lambda *_: evaluations.__setitem__(0, evaluations[0] + 1)
        )
    src, tgt = tokens(2, 5, seed=10), tokens(2, 4, seed=11)
    with torch.no_grad():
        first = model(src, tgt)
        once = evaluations[0]
        assert once == 2 * 63 * 4  # two flows, 64 cached positions, 4 RK4 stages per gap
        for _ in range(3):
            torch.testing.assert_close(model(src, tgt), first, rtol=0, atol=0)
    assert evaluations[0] == once and len(solves) == 2  # one solve per flow, then reused
    flow = flows(model)["source"]
    with torch.no_grad():
        flow(64)
        assert len(solves) == 2  # covered by the cached 64 positions
        flow(65)
        assert solves[-1] == 128  # a longer request re-solves, to the next power of two
        flow(100)
    assert len(solves) == 3


def _fresh(flow: FloaterPositions, length: int) -> Tensor:
    with torch.enable_grad():
        return flow(length).detach()  # with gradients, always a fresh solve


def test_cache_invalidated_by_every_parameter_change(solves: list[int]) -> None:
    torch.manual_seed(0)
    flow = FloaterPositions(FLOATER, 8, 2).to(DOUBLE)
    randomise(flow)

    def optimizer_step() -> None:
        optimizer = torch.optim.SGD(flow.parameters(), lr=0.1)
        flow(10).pow(2).sum().backward()
        optimizer.step()

    def load_state() -> None:
        state = {k: v + 0.01 for k, v in flow.state_dict().items()}
        flow.load_state_dict(state)

    def in_place() -> None:
        with torch.no_grad():
            flow.dynamics.inner.weight.add_(1)

    def through_data() -> None:  # bypasses the version counter: caught by the snapshot
        flow.dynamics.outer.bias.data.add_(0.5)

    def adam_foreach() -> None:
        optimizer = torch.optim.Adam(flow.parameters(), lr=0.1, foreach=True)
        flow(10).pow(2).sum().backward()
        optimizer.step()

    for change in (optimizer_step, load_state, in_place, through_data, adam_foreach):
        with torch.no_grad():
            before = flow(10)
            count = len(solves)
            torch.testing.assert_close(flow(10), before, rtol=0, atol=0)
            assert len(solves) == count, change.__name__
        change()
        with torch.no_grad():
            after = flow(10)
        assert len(solves) > count, change.__name__
        assert not torch.equal(after, before), change.__name__
        torch.testing.assert_close(after, _fresh(flow, 10), rtol=0, atol=0, msg=change.__name__)
    flow.float()  # a new dtype (and new storage)
    with torch.no_grad():
        assert flow(10).dtype == torch.float32


def test_training_solves_each_flow_once_per_forward(solves: list[int]) -> None:
    model = floater_model()
    model.train()
    src, tgt = tokens(2, 6, seed=12), tokens(2, 5, seed=13)
    model(src, tgt).sum().backward()
    assert len(solves) == 2  # source (encoder + cross k/v) and target, shared by all blocks
    assert sorted(solves) == [5, 6]
    model(src, tgt).sum().backward()
    assert len(solves) == 4  # training never reuses a graph


# --------------------------------------------------------------------------- decoding


def test_incremental_decoding_equals_the_full_forward() -> None:
    model = floater_model(decoder="heun")  # an RK2 decoder: two field calls per block
    src = tokens(2, 6, seed=14)
    src[0, :2] = PAD
    tgt = tokens(2, 7, seed=15)
    with torch.no_grad():
        full = model(src, tgt)
        memory, padding = model.encode(src)
        cache = DecodeCache()
        steps = [model.decode(tgt[:, :3], memory, padding, cache)]
        steps += [model.decode(tgt[:, i : i + 1], memory, padding, cache) for i in range(3, 7)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, rtol=1e-12, atol=1e-12)


def test_language_model_with_floater() -> None:
    torch.manual_seed(0)
    lm = bf.LanguageModel(recipe(), VOCAB, PAD).to(DOUBLE).eval()
    assert lm.floater is not None and set(lm.floater.flows) == {"target"}
    randomise(lm.floater)
    text = tokens(2, 6, seed=16)
    with torch.no_grad():
        full = lm(text)
        cache = DecodeCache()
        steps = [lm(text[:, i : i + 1], cache) for i in range(6)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- training


def test_gradients_reach_dynamics_and_initial_values() -> None:
    model = floater_model()
    model.train()
    model(tokens(2, 5, seed=17), tokens(2, 4, seed=18)).pow(2).mean().backward()
    assert model.floater is not None
    for name, p in model.floater.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_training_steps_reduce_the_loss() -> None:
    torch.manual_seed(0)
    model = bf.Seq2Seq(recipe(decoder="heun"), VOCAB, PAD)
    src, tgt = tokens(4, 6, seed=19), tokens(4, 5, seed=20)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(12):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(src, tgt).reshape(-1, VOCAB), tgt.reshape(-1))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]
    assert flows(model)["target"].dynamics.outer.weight.abs().sum() > 0


def test_input_blocks_only() -> None:
    model = bf.Seq2Seq(recipe(floater_blocks="input", layers=3), VOCAB, PAD)
    everywhere = bf.Seq2Seq(recipe(layers=3), VOCAB, PAD)
    assert model.floater is not None and everywhere.floater is not None
    assert model.floater.flows["source"].n_values == 3 + 2  # encoder block 0 q/k/v + cross k/v
    assert model.floater.flows["target"].n_values == 3 + 1  # decoder block 0 q/k/v + cross q
    assert everywhere.floater.flows["source"].n_values == 3 * 3 + 3 * 2
    assert everywhere.floater.flows["target"].n_values == 3 * 3 + 3


@pytest.mark.parametrize("name", ["floater", "floater-input"])
def test_catalog_recipes_keep_transformer_small_sizes(name: str) -> None:
    small, ours = bf.load_recipe("transformer-small"), bf.load_recipe(name)
    assert ours.position == "floater" and ours.floater == "floater"
    assert dict(ours.sizes) == dict(small.sizes)
    assert ours.encoder == small.encoder and ours.decoder == small.decoder


def test_floater_on_a_multistep_stack() -> None:
    stack = recipe_from_dict(
        {
            "name": "stack",
            "sizes": SIZES,
            "encoder": {"layers": 3, "method": "adams-bashforth-2", "field": "san+ffn"},
            "decoder": {"layers": 2, "method": "euler", "field": "san+ca+ffn"},
            "embedding": {"position": "floater", "floater": "floater"},
        }
    )
    model = bf.Seq2Seq(stack, VOCAB, PAD)
    assert model.floater is not None
    assert model.floater.flows["source"].n_values == 3 * 3 + 2 * 2  # every layer of the stack


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("delta", [0, "-1/100", float("inf"), float("nan"), "inf"])
def test_bad_delta(delta: Any) -> None:
    with pytest.raises(bf.DeclarationError, match="key 'delta'"):
        bf.ContinuousDynamics("rk4", grid="positions", delta=delta)


def test_bad_delta_in_a_floater_file(write_toml: Callable[..., Path]) -> None:
    path = write_toml(
        """
        name = "my-flow"
        family = "continuous"
        method = "rk4"
        grid = "positions"
        delta = 0
        """,
        name="my-flow.toml",
    )
    with pytest.raises(bf.DeclarationError, match=r"my-flow\.toml.*key 'delta'.*got 0"):
        recipe(floater=str(path))


def test_unknown_solver_names() -> None:
    with pytest.raises(bf.DeclarationError, match="unknown solver 'rk99'"):
        bf.ContinuousDynamics("rk99", grid="positions")
    with pytest.raises(bf.DeclarationError, match=r"embedding\.floater.*nosuch"):
        recipe(floater="nosuch")


@pytest.mark.parametrize(
    ("embedding", "pattern"),
    [
        ({"floater_blocks": "middle"}, r"embedding\.floater_blocks.*'middle'.*'all'"),
        ({"floater": "rk4"}, r"embedding\.floater.*'rk4' is not a position flow"),
        ({"floater": "neural-ode-rk4"}, r"embedding\.floater.*grid = 'interval'"),
        ({"floater": 3}, r"embedding\.floater.*got 3"),
        ({"floater_hidden": 0}, r"embedding\.floater_hidden.*got 0"),
    ],
)
def test_bad_floater_options(embedding: dict[str, Any], pattern: str) -> None:
    with pytest.raises(bf.DeclarationError, match=pattern):
        recipe(**embedding)


def test_floater_position_without_declaration() -> None:
    with pytest.raises(bf.DeclarationError, match=r"key 'embedding\.floater'.*needs the flow"):
        recipe_from_dict(
            {
                "name": "x",
                "sizes": SIZES,
                "encoder": {"layers": 1, "method": "euler", "field": "san+ffn"},
                "embedding": {"position": "floater"},
            }
        )


@pytest.mark.parametrize(
    ("position", "key", "value"),
    [
        ("learned", "floater", "floater"),
        ("sinusoidal", "floater_blocks", "all"),
        ("sinusoidal", "floater_hidden", 8),
    ],
)
def test_options_that_cancel_each_other(position: str, key: str, value: Any) -> None:
    with pytest.raises(bf.DeclarationError, match=rf"embedding\.{key}.*position = 'floater'"):
        recipe(position, **{key: value})


def test_flow_needs_a_positions_grid_and_an_attention_module() -> None:
    with pytest.raises(bf.DeclarationError, match=r"key 'floater'.*grid = 'positions'"):
        FloaterPositions(bf.catalog["neural-ode-rk4"], 8, 1)  # type: ignore[arg-type]
    with pytest.raises(bf.DeclarationError, match=r"floater_blocks.*'middle'"):
        FloaterInjection("floater", 8, blocks="middle")
    ffn_only = nn.ModuleList([bf.compile("euler", field="ffn", d_model=8, d_ffn=16)])
    with pytest.raises(bf.DeclarationError, match="no attention module"):
        FloaterInjection("floater", 8, encoder=ffn_only)


def test_non_finite_solution_is_an_error() -> None:
    flow = FloaterPositions(FLOATER, 8, 2)
    with torch.no_grad():
        flow.dynamics.outer.bias.fill_(float("inf"))
    with pytest.raises(bf.ButcherflowError, match="not finite"):
        flow(5)


# --------------------------------------------------------------------------- CLI and bench


def test_show_floater_explains_the_encoder(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "floater"]) == 0
    out = capsys.readouterr().out
    for fragment in (
        "solver: rk4 (fixed steps), proved order 4",
        "Δ = 1/100",
        "1 step(s) × 4 stages = 4",
        "backpropagation through the solver",
        "dynamics parameters (d_model=256, hidden=256): 131,840",
        "15 initial values × 256 = 3,840",  # the recipe: 3 encoder blocks × q/k/v + 3 × cross k/v
        "decoder block 2: self-attention (q←target k←target v←target); cross-attention",
    ):
        assert fragment in out, fragment
    assert main(["show", "floater-input"]) == 0
    out = capsys.readouterr().out
    assert "the input block of each side" in out and "5 initial values × 256" in out
    assert "solver rk4 (order 4)" in out


def test_bench_floater_writes_its_section(tmp_path: Path) -> None:
    from butcherflow.bench.floater import run_floater

    output = tmp_path / "benchmarks.md"
    kept = "<!-- bench:block:start -->\nkept\n<!-- bench:block:end -->\n"
    output.write_text("# Benchmarks\n\n" + kept)
    small = {"d_model": 16, "n_heads": 2, "d_ffn": 32}
    run_floater(str(output), 1, "bench", batch=2, length=4, vocab=20, sizes=small)
    text = output.read_text()
    assert "kept" in text and "<!-- bench:floater:start -->" in text
    for name in ("transformer-small", "floater", "floater-input"):
        assert f"| {name} |" in text
    assert "| transformer-small | " in text and "| 1.000 |" in text
