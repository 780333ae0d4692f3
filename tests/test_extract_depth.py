"""Whole models written by hand whose depth connections are known: the stream across the stack
read as one declaration (`found.depth`), a second state a block takes (modded-nanogpt's x0),
a legacy tuple KV cache, blocks of different kinds, and one clear line for every bad input."""

from __future__ import annotations

import pytest
import sympy
import torch
from torch import nn

import butcherflow as bf
from butcherflow.extraction.model.read import describe
from butcherflow.extraction.result import ROUND_TRIP

D, VOCAB = 16, 32


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


def _ids(length: int = 6) -> torch.Tensor:
    return torch.randint(0, VOCAB, (2, length), generator=torch.Generator().manual_seed(1))


class Attention(nn.Module):
    """Causal self-attention with a legacy (keys, values) tuple cache, as nanoGPT's forks."""

    def __init__(self) -> None:
        super().__init__()
        self.qkv, self.proj, self.heads = nn.Linear(D, 3 * D), nn.Linear(D, D), 2

    def forward(self, x: torch.Tensor, layer_past: tuple | None = None) -> tuple:
        b, t, _ = x.shape
        q, k, v = (
            z.view(b, t, self.heads, D // self.heads).transpose(1, 2)
            for z in self.qkv(x).split(D, dim=2)
        )
        if layer_past is not None:
            k, v = torch.cat([layer_past[0], k], 2), torch.cat([layer_past[1], v], 2)
        offset = k.shape[2] - t
        mask = torch.ones(t, k.shape[2], dtype=torch.bool).tril(offset)
        y = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.proj(y.transpose(1, 2).reshape(b, t, D)), (k, v)


def _mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(D, 2 * D), nn.GELU(), nn.Linear(2 * D, D))


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ln_1, self.attn, self.ln_2, self.mlp = (
            nn.LayerNorm(D),
            Attention(),
            nn.LayerNorm(D),
            _mlp(),
        )

    def forward(self, x: torch.Tensor, layer_past: tuple | None = None) -> tuple:
        a, present = self.attn(self.ln_1(x), layer_past=layer_past)
        x = x + a
        return x + self.mlp(self.ln_2(x)), present


class NanoGPT(nn.Module):
    """Karpathy's GPT with a tuple cache: `forward(idx, past)` returns (logits, presents)."""

    def __init__(self, layers: int = 3) -> None:
        super().__init__()
        self.wte, self.wpe = nn.Embedding(VOCAB, D), nn.Embedding(32, D)
        self.h = nn.ModuleList(Block() for _ in range(layers))
        self.ln_f, self.head = nn.LayerNorm(D), nn.Linear(D, VOCAB)

    def forward(self, idx: torch.Tensor, past: tuple | None = None) -> tuple:
        start = 0 if past is None else past[0][0].shape[2]
        x = self.wte(idx) + self.wpe(torch.arange(start, start + idx.shape[1]))
        presents = []
        for i, block in enumerate(self.h):
            x, present = block(x, layer_past=None if past is None else past[i])
            presents.append(present)
        return self.head(self.ln_f(x)), tuple(presents)


def _greedy(model: nn.Module, idx: torch.Tensor, steps: int, cache: bool) -> torch.Tensor:
    past = None
    tokens = idx
    with torch.no_grad():
        for _ in range(steps):
            feed = tokens if past is None or not cache else tokens[:, -1:]
            logits, presents = model(feed, past=past if cache else None)
            past = presents if cache else None
            tokens = torch.cat([tokens, logits[:, -1].argmax(-1, keepdim=True)], 1)
    return tokens


def test_a_nanogpt_is_read_as_euler_across_lie_trotter_layers() -> None:
    found = bf.extract(NanoGPT().eval(), _ids())
    assert isinstance(found, bf.ExtractedModel) and found.stack == "h"
    assert found.readout == "ln_f"
    assert all(layer.method.steps[0][0] == "attn" for layer in found.layers)
    assert found.depth.method.to_table()["alpha"] == ["-1", 1]
    assert found.verify() < ROUND_TRIP


def test_a_legacy_tuple_cache_is_passed_on_by_the_rewired_blocks() -> None:
    model = NanoGPT().eval()
    new = bf.extract(model, _ids()).rewire()
    expected = _greedy(model, _ids(3), 5, cache=True)
    assert torch.equal(_greedy(new, _ids(3), 5, cache=True), expected)
    assert torch.equal(_greedy(new, _ids(3), 5, cache=False), expected)


def test_heun_on_the_block_refuses_the_tuple_cache_before_running() -> None:
    new = bf.rewire(NanoGPT().eval(), "heun", _ids())
    assert _greedy(new, _ids(3), 2, cache=False).shape == (2, 5)
    with pytest.raises(bf.ExtractionError, match=r"calls field 'attn' 2 times .*use_cache=False"):
        _greedy(new, _ids(3), 2, cache=True)


class Norm(nn.RMSNorm):
    def __init__(self) -> None:
        super().__init__(D, elementwise_affine=False)


class SpeedrunBlock(nn.Module):
    """modded-nanogpt's block: x = λ₀x + λ₁x₀ first (x₀ the embedding, an argument)."""

    def __init__(self) -> None:
        super().__init__()
        self.lambdas = nn.Parameter(torch.tensor([0.75, 0.25]))
        self.norm_1, self.attn = Norm(), nn.Sequential(nn.Linear(D, D), nn.Tanh())
        self.norm_2, self.mlp = Norm(), _mlp()

    def forward(self, x: torch.Tensor, x0: torch.Tensor) -> torch.Tensor:
        x = self.lambdas[0] * x + self.lambdas[1] * x0
        x = x + self.attn(self.norm_1(x))
        return x + self.mlp(self.norm_2(x))


class Speedrun(nn.Module):
    """modded-nanogpt's stack: x₀ = norm(embedding); U-net skips pair layer i with L−1−i."""

    def __init__(self, layers: int = 4) -> None:
        super().__init__()
        self.embed, self.norm = nn.Embedding(VOCAB, D), Norm()
        self.blocks = nn.ModuleList(SpeedrunBlock() for _ in range(layers))
        self.skip_weights = nn.Parameter(torch.tensor([0.5, 2.0]))
        self.head = nn.Linear(D, VOCAB)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = x0 = self.norm(self.embed(idx))
        skips, n = [], len(self.blocks) // 2
        for i, block in enumerate(self.blocks):
            if i >= n:
                x = x + self.skip_weights[i - n] * skips.pop()
            x = block(x, x0)
            if i < n:
                skips.append(x)
        return self.head(self.norm(x))


def test_a_block_that_mixes_the_embedding_reads_it_as_a_second_state() -> None:
    found = bf.extract(Speedrun().eval(), _ids())
    layer = found.layers[1]  # layer 0 gets x₀ itself as its state
    assert layer.seconds == ("x0",) and isinstance(layer.method, bf.GeneralLinear)
    quarter, three = sympy.Rational(1, 4), sympy.Rational(3, 4)
    assert ((three, quarter), (0, 1)) == layer.method.V  # x₀ carried unchanged
    assert layer.method.U[0] == (three, quarter)
    assert layer.verify() < ROUND_TRIP


def test_u_net_skips_are_read_as_the_stack_as_one_step() -> None:
    found = bf.extract(Speedrun().eval(), _ids())
    rows = found.depth.rows
    assert rows is not None and isinstance(found.depth.method, bf.GeneralLinear)
    # block 1 keeps ¾ of its state (λ₀; its λ₁x₀ is in its increment K₁), and layer 2 reads
    # 1 + ½ times block 1's output ¾(x₀ + K₀) + K₁ (the skip pops the last output)
    assert rows[2].tolist() == [1.125, 1.125, 1.5, 0.0, 0.0]
    assert "no recurrence" in found.depth.notes[0]
    assert found.round_trips["depth"] < ROUND_TRIP


class Stack(nn.Module):
    """Pre-norm blocks joined by the parent's own code `join(x, k, history)`."""

    def __init__(self, join: str, layers: int = 6) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D)
        self.layers = nn.ModuleList(nn.Sequential(nn.LayerNorm(D), _mlp()) for _ in range(layers))
        self.norm, self.head, self.join = nn.LayerNorm(D), nn.Linear(D, VOCAB), join
        self.alpha = nn.Parameter(torch.rand(layers + 1, layers + 1))

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = x0 = self.embed(idx)
        previous, outputs = None, [x0]
        for i, layer in enumerate(self.layers):
            k = layer(x)
            if self.join == "ab2":
                x = x + k if previous is None else x + 1.5 * k - 0.5 * previous
            elif self.join == "embedding":
                x = x + k + 0.5 * x0
            elif self.join == "denseformer":
                outputs.append(x + k)
                x = sum(self.alpha[i, j] * o for j, o in enumerate(outputs))
            else:
                x = x + k
            previous = k
        return self.head(self.norm(x))


def test_a_stack_joined_by_adams_bashforth_reads_as_the_catalog_method() -> None:
    found = bf.extract(Stack("ab2").eval(), _ids())
    assert describe(found.depth.method).endswith("= catalog 'adams-bashforth-2'")
    assert found.depth.report.order == 2 and found.depth.report.zero_stable
    assert found.round_trips["depth"] < ROUND_TRIP


def test_an_embedding_skip_between_blocks_is_a_general_linear_method_proved_unstable() -> None:
    found = bf.extract(Stack("embedding").eval(), _ids())
    method = found.depth.method
    assert isinstance(method, bf.GeneralLinear) and ((1, sympy.Rational(1, 2)), (0, 1)) == method.V
    assert found.depth.report.zero_stable is False  # x₀/2 added at every layer grows with depth


def test_denseformer_averages_are_read_with_their_weights() -> None:
    model = Stack("denseformer").eval()
    found = bf.extract(model, _ids())
    rows = found.depth.rows
    assert rows is not None
    with torch.no_grad():
        alpha = model.alpha
        # layer 1's input: α₀₀ x₀ + α₀₁ (x₀ + K₀)
        expected = [float(alpha[0, 0]) + float(alpha[0, 1]), float(alpha[0, 1])]
    assert rows[1, :2].tolist() == pytest.approx(expected, abs=1e-12)
    assert found.round_trips["depth"] < ROUND_TRIP


class Hybrid(nn.Module):
    """Blocks of two kinds in one list (attention-free MLP blocks and pre-norm blocks)."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D)
        self.layers = nn.ModuleList([Block(), MlpBlock(), Block()])

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.embed(idx)
        for layer in self.layers:
            out = layer(x)
            x = out[0] if isinstance(out, tuple) else out
        return x


class MlpBlock(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm, self.mlp = nn.LayerNorm(D), _mlp()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + 0.5 * self.mlp(self.norm(x))


def test_blocks_of_different_kinds_are_read_layer_by_layer() -> None:
    found = bf.extract(Hybrid().eval(), _ids())
    assert [layer.module for layer in found.layers] == ["Block", "MlpBlock", "Block"]
    assert found.layers[1].method.b == (sympy.Rational(1, 2),)
    assert len(found.table()) == 3


class Gate(nn.Module):
    """Skips block 1 when its input is large: the reading's random increments are."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D)
        self.layers = nn.ModuleList(MlpBlock() for _ in range(3))

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = 1e-3 * self.embed(idx)
        for i, layer in enumerate(self.layers):
            if i == 2 and float(x.abs().max()) > 1.0:
                continue  # early exit on the data
            x = layer(x)
        return x


def test_control_flow_on_the_data_is_refused_in_one_line() -> None:
    model = Gate().eval()
    with torch.no_grad():
        model.layers[1].mlp[2].weight.zero_()  # its own outputs stay small: all blocks run
        model.layers[0].mlp[2].weight.zero_()
    with pytest.raises(
        bf.ExtractionError, match=r"blocks a forward runs change with their outputs"
    ):
        bf.extract(model, _ids())


def test_a_model_without_a_repeated_block_is_one_line() -> None:
    model = nn.Sequential(nn.Embedding(VOCAB, D), nn.Linear(D, VOCAB)).eval()
    with pytest.raises(bf.ExtractionError) as caught:
        bf.extract(model, _ids())
    text = str(caught.value)
    assert "no list of modules is a stack of blocks" in text and "\n" not in text


class UnknownCache(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D)
        self.layers = nn.ModuleList(CacheBlock() for _ in range(2))

    def forward(self, idx: torch.Tensor, cache: object = None) -> torch.Tensor:
        x = self.embed(idx)
        for layer in self.layers:
            x = layer(x, cache=cache)
        return x


class CacheBlock(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm, self.mlp = nn.LayerNorm(D), _mlp()

    def forward(self, x: torch.Tensor, cache: object = None) -> torch.Tensor:
        return x + self.mlp(self.norm(x))


def test_a_cache_of_an_unknown_type_is_refused_naming_it() -> None:
    model = UnknownCache().eval()
    new = bf.rewire(model, "euler", _ids())
    with pytest.raises(bf.ExtractionError, match=r"cache=dict, a cache bf.rewire does not know"):
        new(_ids(), cache={"keys": []})


def test_a_layer_extracted_with_no_fields_discovers_them() -> None:
    block = MlpBlock().eval()
    found = bf.extract(block, torch.randn(2, 5, D))
    assert isinstance(found, bf.Extracted) and found.fields == {"mlp": ("norm", "mlp")}
    assert found.method.b == (sympy.Rational(1, 2),)
