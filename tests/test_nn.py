"""Building blocks: attention against a hand-written reference and torch's layers, decoding caches,
projection-bias hook, fields, positions."""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence

import pytest
import torch
from torch import Tensor, nn

import butcherflow as bf
from butcherflow.nn import (
    FIELD_NAMES,
    AttentionBiasHook,
    Context,
    DecodeCache,
    FeedForward,
    Field,
    LearnedPositions,
    ModuleField,
    MultiheadAttention,
    ProjectionBias,
    SinusoidalPositions,
    make_field,
    token_positions,
)

D, H, DFF = 16, 4, 32
DOUBLE = torch.float64


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


def field(name: str, **kwargs: object) -> Field:
    sizes: dict = {"d_model": D, "n_heads": H, "d_ffn": DFF, **kwargs}
    return make_field(name, **sizes).to(DOUBLE).eval()


def randn(*shape: int) -> Tensor:
    return torch.randn(*shape, dtype=DOUBLE)


def padding(lengths: Sequence[int], total: int, left: bool = False) -> Tensor:
    """`(batch, total)` bool, True at padding."""
    index = torch.arange(total)
    real = torch.stack([index >= total - n if left else index < n for n in lengths])
    return ~real


def reference_attention(
    att: MultiheadAttention,
    query: Tensor,
    kv: Tensor,
    allowed: Tensor,
    extra: ProjectionBias | None = None,
) -> Tensor:
    """Softmax attention written out; `allowed`: `(batch, q_len, k_len)`, True = attend."""
    d, h = att.d_model, att.n_heads
    w, b = att.in_proj.weight, att.in_proj.bias
    extra = extra or ProjectionBias()
    projected = []
    for i, (x, more) in enumerate(((query, extra.q), (kv, extra.k), (kv, extra.v))):
        y = x @ w[i * d : (i + 1) * d].T + b[i * d : (i + 1) * d]
        y = y if more is None else y + more
        projected.append(y.view(x.shape[0], x.shape[1], h, d // h).transpose(1, 2))
    q, k, v = projected
    scores = q @ k.transpose(-1, -2) / math.sqrt(d // h)
    scores = scores.masked_fill(~allowed[:, None], float("-inf"))
    out = torch.softmax(scores, dim=-1) @ v
    return att.out_proj(out.transpose(1, 2).reshape(query.shape))


def causal_allowed(length: int) -> Tensor:
    return torch.ones(length, length, dtype=torch.bool).tril()


# ---------------------------------------------------------------- attention


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("padded", [False, True])
def test_self_attention_matches_reference(causal: bool, padded: bool) -> None:
    att = MultiheadAttention(D, H).to(DOUBLE)
    x = randn(3, 7, D)
    pad = padding([7, 5, 2], 7) if padded else None
    out = att(x, x, Context(key_padding_mask=pad, causal=causal), 0, self_attention=True)
    allowed = torch.ones(3, 7, 7, dtype=torch.bool)
    if pad is not None:
        allowed = allowed & ~pad[:, None, :]
    if causal:
        allowed = allowed & causal_allowed(7)
    torch.testing.assert_close(out, reference_attention(att, x, x, allowed))


def test_cross_attention_matches_reference() -> None:
    att = MultiheadAttention(D, H).to(DOUBLE)
    x, memory = randn(3, 4, D), randn(3, 6, D)
    pad = padding([6, 3, 1], 6)
    ctx = Context(memory=memory, memory_key_padding_mask=pad)
    out = att(x, memory, ctx, 0, self_attention=False)
    allowed = (~pad[:, None, :]).expand(3, 4, 6)
    torch.testing.assert_close(out, reference_attention(att, x, memory, allowed))


def test_padded_keys_are_ignored() -> None:
    att = MultiheadAttention(D, H).to(DOUBLE)
    x = randn(2, 6, D)
    pad = padding([6, 3], 6)
    ctx = Context(key_padding_mask=pad)
    changed = x.clone()
    changed[1, 3:] = randn(3, D) * 100
    out, out_changed = (att(y, y, ctx, 0, self_attention=True) for y in (x, changed))
    torch.testing.assert_close(out[~pad], out_changed[~pad], rtol=0, atol=0)


def test_causal_ignores_the_future() -> None:
    f = field("san+ffn")
    x = randn(2, 6, D)
    changed = x.clone()
    changed[:, 4:] = randn(2, 2, D)
    ctx = Context(causal=True)
    torch.testing.assert_close(f(x, ctx, 0)[:, :4], f(changed, ctx, 0)[:, :4], rtol=0, atol=0)


def test_rows_with_every_key_masked_give_zeros_not_nan() -> None:
    att = MultiheadAttention(D, H)
    x = torch.randn(2, 5, D, requires_grad=True)
    pad = padding([5, 2], 5, left=True)  # row 1: causal queries 0..2 see only padding
    out = att(x, x, Context(key_padding_mask=pad, causal=True), 0, self_attention=True)
    assert torch.isfinite(out).all()
    assert (out[1, :3] == 0).all()
    assert (out[1, 3:] != 0).any()
    out.sum().backward()
    assert x.grad is not None and torch.isfinite(x.grad).all()
    memory = torch.randn(2, 3, D)
    ctx = Context(memory=memory, memory_key_padding_mask=torch.tensor([[False] * 3, [True] * 3]))
    cross = att(x, memory, ctx, 0, self_attention=False)
    assert torch.isfinite(cross).all() and (cross[1] == 0).all()


def test_d_model_not_divisible_by_n_heads() -> None:
    with pytest.raises(ValueError, match=r"d_model=10.*n_heads=3") as info:
        MultiheadAttention(10, 3)
    assert isinstance(info.value, bf.DeclarationError)
    with pytest.raises(ValueError, match="n_heads=3"):
        make_field("san+ffn", d_model=10, n_heads=3, d_ffn=8)


def test_attention_dropout_only_in_training() -> None:
    att = MultiheadAttention(D, H, dropout=0.5).to(DOUBLE).eval()
    x = randn(2, 5, D)
    ctx = Context()
    assert torch.equal(
        att(x, x, ctx, 0, self_attention=True), att(x, x, ctx, 0, self_attention=True)
    )
    att.train()
    torch.manual_seed(1)
    first = att(x, x, ctx, 0, self_attention=True)
    torch.manual_seed(1)
    assert torch.equal(first, att(x, x, ctx, 0, self_attention=True))
    assert not torch.allclose(first, att.eval()(x, x, ctx, 0, self_attention=True))


# ---------------------------------------------------------------- projection-bias hook


def test_projection_bias_equals_a_shifted_projection_bias() -> None:
    att = MultiheadAttention(D, H).to(DOUBLE)
    bq, bk, bv = randn(D), randn(D), randn(D)
    shifted = copy.deepcopy(att)
    with torch.no_grad():
        shifted.in_proj.bias += torch.cat([bq, bk, bv])
    x, memory = randn(2, 5, D), randn(2, 3, D)
    bias = ProjectionBias(q=bq, k=bk, v=bv)
    plain = Context(memory=memory)
    for self_attention, kv in ((True, x), (False, memory)):
        ctx = plain.replace(attention_bias={"self" if self_attention else "cross": bias})
        got = att(x, kv, ctx, 0, self_attention=self_attention)
        torch.testing.assert_close(got, shifted(x, kv, plain, 0, self_attention=self_attention))
        other = plain.replace(attention_bias={"cross" if self_attention else "self": bias})
        torch.testing.assert_close(
            att(x, kv, other, 0, self_attention=self_attention),
            att(x, kv, plain, 0, self_attention=self_attention),
        )
    with pytest.raises(ValueError, match="'self' and/or 'cross'"):
        Context(attention_bias={"query": bias})


def per_position_bias(batch: int, tgt: int, src: int) -> dict[str, ProjectionBias]:
    return {
        "self": ProjectionBias(
            q=randn(batch, tgt, D), k=randn(batch, tgt, D), v=randn(batch, tgt, D)
        ),
        "cross": ProjectionBias(
            q=randn(batch, tgt, D), k=randn(batch, src, D), v=randn(batch, src, D)
        ),
    }


def test_per_position_bias_hook_matches_reference_and_decoding() -> None:
    f = field("san+ca+ffn")
    x, memory = randn(2, 5, D), randn(2, 3, D)
    biases = per_position_bias(2, 5, 3)
    seen: list[tuple[nn.Module, bool]] = []

    def hook(start: int, stop: int) -> AttentionBiasHook:
        def bias(attention: nn.Module, self_attention: bool) -> ProjectionBias:
            seen.append((attention, self_attention))
            b = biases["self" if self_attention else "cross"]
            assert b.q is not None and b.k is not None and b.v is not None
            if self_attention:
                return ProjectionBias(
                    q=b.q[:, start:stop], k=b.k[:, start:stop], v=b.v[:, start:stop]
                )
            return ProjectionBias(q=b.q[:, start:stop], k=b.k, v=b.v)

        return bias

    full = f(x, Context(causal=True, memory=memory, attention_bias=hook(0, 5)), 0)
    assert {(id(m), s) for m, s in seen} == {
        (id(f.parts["san"].attention), True),
        (id(f.parts["ca"].attention), False),
    }
    assert not torch.allclose(full, f(x, Context(causal=True, memory=memory), 0))
    # Self-attention alone against the hand-written reference with the biases added.
    att = f.parts["san"].attention
    h = randn(2, 5, D)
    got = att(h, h, Context(causal=True, attention_bias=biases), 0, self_attention=True)
    allowed = causal_allowed(5).expand(2, 5, 5)
    torch.testing.assert_close(got, reference_attention(att, h, h, allowed, biases["self"]))
    # Decoding with the new tokens' slices of the biases equals the full forward.
    cache, steps = DecodeCache(), []
    for t in range(5):
        ctx = Context(causal=True, memory=memory, cache=cache, attention_bias=hook(t, t + 1))
        steps.append(f(x[:, t : t + 1], ctx, 0))
        cache.advance()
    torch.testing.assert_close(torch.cat(steps, 1), full)


# ---------------------------------------------------------------- torch's own layers


def copy_attention(ours: MultiheadAttention, theirs: nn.MultiheadAttention) -> None:
    theirs.in_proj_weight.copy_(ours.in_proj.weight)
    theirs.in_proj_bias.copy_(ours.in_proj.bias)
    theirs.out_proj.load_state_dict(ours.out_proj.state_dict())


@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_euler_san_ffn_is_a_pre_norm_encoder_layer(activation: str) -> None:
    f = field("san+ffn", activation=activation)
    layer = nn.TransformerEncoderLayer(
        D,
        H,
        DFF,
        dropout=0.0,
        activation=activation,
        batch_first=True,
        norm_first=True,
        dtype=DOUBLE,
    )
    with torch.no_grad():
        copy_attention(f.parts["san"].attention, layer.self_attn)
        layer.norm1.load_state_dict(f.parts["san"].norm.state_dict())
        layer.norm2.load_state_dict(f.parts["ffn"].norm.state_dict())
        layer.linear1.load_state_dict(f.parts["ffn"].ffn.linear1.state_dict())
        layer.linear2.load_state_dict(f.parts["ffn"].ffn.linear2.state_dict())
    layer.train()  # dropout is 0; train mode keeps torch off its nested-tensor fast path
    x = randn(3, 7, D)
    pad = padding([7, 4, 1], 7)
    ours = x + f(x, Context(key_padding_mask=pad), 0)
    torch.testing.assert_close(ours, layer(x, src_key_padding_mask=pad))
    torch.testing.assert_close(x + f(x, Context(), 0), layer(x))


def test_euler_san_ca_ffn_is_a_pre_norm_decoder_layer() -> None:
    f = field("san+ca+ffn")
    layer = nn.TransformerDecoderLayer(
        D, H, DFF, dropout=0.0, batch_first=True, norm_first=True, dtype=DOUBLE
    )
    with torch.no_grad():
        copy_attention(f.parts["san"].attention, layer.self_attn)
        copy_attention(f.parts["ca"].attention, layer.multihead_attn)
        for i, part in enumerate(("san", "ca", "ffn"), start=1):
            getattr(layer, f"norm{i}").load_state_dict(f.parts[part].norm.state_dict())
        layer.linear1.load_state_dict(f.parts["ffn"].ffn.linear1.state_dict())
        layer.linear2.load_state_dict(f.parts["ffn"].ffn.linear2.state_dict())
    x, memory = randn(3, 6, D), randn(3, 5, D)
    tgt_pad, src_pad = padding([6, 4, 2], 6), padding([5, 5, 2], 5)
    ctx = Context(
        causal=True, key_padding_mask=tgt_pad, memory=memory, memory_key_padding_mask=src_pad
    )
    expected = layer(
        x,
        memory,
        tgt_mask=~causal_allowed(6),
        tgt_key_padding_mask=tgt_pad,
        memory_key_padding_mask=src_pad,
    )
    torch.testing.assert_close(x + f(x, ctx, 0), expected)


def test_composite_field_is_the_sum_of_its_branches() -> None:
    f = field("san+ca")
    x, memory = randn(2, 4, D), randn(2, 3, D)
    ctx = Context(memory=memory)
    a = f.parts["san"](x, ctx, 0)
    b = f.parts["ca"](x + a, ctx, 0)
    torch.testing.assert_close(f(x, ctx, 0), a + b, rtol=0, atol=0)


# ---------------------------------------------------------------- incremental decoding


def decode(f: Field, x: Tensor, memory: Tensor | None, chunks: Sequence[int]) -> Tensor:
    cache, outs, start = DecodeCache(), [], 0
    for n in chunks:
        ctx = Context(causal=True, memory=memory, cache=cache)
        outs.append(f(x[:, start : start + n], ctx, 3))
        cache.advance(n)
        start += n
    assert cache.length == x.shape[1]
    return torch.cat(outs, 1)


@pytest.mark.parametrize("name", ["san", "san+ffn", "san+ca", "san+ca+ffn", "ca", "ffn"])
@pytest.mark.parametrize("chunks", [[1] * 6, [3, 1, 2]])
def test_incremental_decoding_equals_the_causal_forward(name: str, chunks: list[int]) -> None:
    f = field(name)
    x = randn(2, 6, D)
    memory = randn(2, 4, D) if f.needs_memory else None
    full = f(x, Context(causal=True, memory=memory), 3)
    torch.testing.assert_close(decode(f, x, memory, chunks), full)


def test_decoding_with_a_padded_prefix() -> None:
    f = field("san+ffn")
    x = randn(2, 5, D)
    pad = padding([5, 3], 5, left=True)
    full = f(x, Context(causal=True, key_padding_mask=pad), 0)
    cache, outs = DecodeCache(), []
    for t in range(5):
        ctx = Context(causal=True, key_padding_mask=pad[:, : t + 1], cache=cache)
        outs.append(f(x[:, t : t + 1], ctx, 0))
        cache.advance()
    torch.testing.assert_close(torch.cat(outs, 1), full)
    with pytest.raises(ValueError, match="cover the cached keys"):
        f(x[:, :1], Context(causal=True, key_padding_mask=pad[:, :1], cache=cache), 0)


def test_slots_keep_separate_caches() -> None:
    f = field("san+ca+ffn")
    memory = randn(2, 4, D)
    inputs = {0: randn(2, 5, D), 1: randn(2, 5, D)}
    full = {s: f(x, Context(causal=True, memory=memory), s) for s, x in inputs.items()}
    cache, outs = DecodeCache(), {0: [], 1: []}
    for t in range(5):
        ctx = Context(causal=True, memory=memory, cache=cache)
        for s, x in inputs.items():
            outs[s].append(f(x[:, t : t + 1], ctx, s))
        cache.advance()
    for s in inputs:
        torch.testing.assert_close(torch.cat(outs[s], 1), full[s])


def test_reorder_selects_beams() -> None:
    f = field("san+ca+ffn")
    x, memory = randn(3, 6, D), randn(3, 4, D)
    index = torch.tensor([2, 0, 0, 1])
    cache, outs = DecodeCache(), []
    for t in range(6):
        if t == 3:
            cache.reorder(index)
            x, memory = x[index], memory[index]
        ctx = Context(causal=True, memory=memory, cache=cache)
        outs.append(f(x[:, t : t + 1], ctx, 0))
        cache.advance()
    full = f(x, Context(causal=True, memory=memory), 0)
    torch.testing.assert_close(torch.cat(outs[3:], 1), full[:, 3:])


def test_cache_misuse_is_caught() -> None:
    f = field("san")
    x = randn(1, 2, D)
    cache = DecodeCache()
    ctx = Context(causal=True, cache=cache)
    f(x[:, :1], ctx, 0)
    with pytest.raises(RuntimeError, match="advance"):
        f(x[:, 1:], ctx, 0)  # no cache.advance() in between
    with pytest.raises(ValueError, match="causal"):
        Context(cache=DecodeCache())
    with pytest.raises(ValueError):
        cache.advance(-1)
    cache.clear()
    assert cache.length == 0


# ---------------------------------------------------------------- fields


@pytest.mark.parametrize("name", FIELD_NAMES)
def test_gradients_reach_every_parameter(name: str) -> None:
    f = make_field(name, d_model=D, n_heads=H, d_ffn=DFF, dropout=0.1).train()
    x = torch.randn(2, 5, D, requires_grad=True)
    memory = torch.randn(2, 3, D) if f.needs_memory else None
    f(
        x, Context(causal=True, memory=memory, key_padding_mask=padding([5, 3], 5)), 0
    ).square().sum().backward()
    for pname, p in f.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), pname
        assert p.grad.abs().sum() > 0, pname
    assert f.needs_memory == ("ca" in name)
    assert f.has_self_attention == ("san" in name)


def test_field_errors() -> None:
    with pytest.raises(ValueError, match=r"unknown field.*'attn'.*san, ffn, ca, san\+ffn") as info:
        make_field("attn", d_model=D, n_heads=H, d_ffn=DFF)
    assert isinstance(info.value, bf.DeclarationError)
    with pytest.raises(ValueError, match="needs d_ffn"):
        make_field("san+ffn", d_model=D, n_heads=H)
    with pytest.raises(ValueError, match="activation"):
        FeedForward(D, DFF, activation="swish")
    with pytest.raises(ValueError, match="memory"):
        field("ca")(randn(1, 2, D), Context(), 0)


def _compiled_ffn_gradients(ffn: FeedForward, x: Tensor) -> tuple[list[Tensor], set[torch.dtype]]:
    """The gradients of x and of every parameter through `torch.compile(ffn)`, and the dtypes
    of the tensors its compiled forward saves for the backward."""
    saved: set[torch.dtype] = set()

    def pack(t: Tensor) -> Tensor:
        saved.add(t.dtype)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = torch.compile(ffn)(x)
    out.square().sum().backward()
    return [x.grad, *(p.grad for p in ffn.parameters())], saved


def test_a_compiled_relu_saves_no_boolean_mask_and_has_relu_s_gradient() -> None:
    torch.compiler.reset()
    ffn = FeedForward(D, DFF).to(DOUBLE)
    x = randn(3, 5, D)
    x[0, 0] = 0.0  # zero pre-activations (the biases aside): sign(0) = 0 as relu's
    eager_x = x.clone().requires_grad_()
    ffn(eager_x).square().sum().backward()
    eager = [eager_x.grad, *(p.grad for p in ffn.parameters())]
    ffn.zero_grad()
    compiled, saved = _compiled_ffn_gradients(ffn, x.clone().requires_grad_())
    assert torch.bool not in saved, saved
    for got, want in zip(compiled, eager, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)


def test_module_field() -> None:
    linear = nn.Linear(D, D)
    f = make_field(linear)
    assert isinstance(f, ModuleField) and make_field(f) is f
    assert not f.needs_memory and not f.has_self_attention
    x = torch.randn(2, 3, D)
    torch.testing.assert_close(f(x, Context(), 0), linear(x))
    with pytest.raises(ValueError, match="same shape"):
        make_field(nn.Linear(D, 2))(x, Context(), 0)


def test_named_fields_are_fresh_modules() -> None:
    a, b = field("ffn"), field("ffn")
    assert all(p is not q for p, q in zip(a.parameters(), b.parameters(), strict=True))
    assert a.name == "ffn" and "ffn" in repr(a)


# ---------------------------------------------------------------- positions


def test_sinusoidal_positions_match_the_formula() -> None:
    pe = SinusoidalPositions(6, dtype=DOUBLE)
    positions = torch.tensor([[0, 1, 5], [7, 100_000, 2]])
    got = pe(positions)
    assert got.shape == (2, 3, 6)
    for (b, t), pos in zip(
        [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)], positions.flatten().tolist(), strict=True
    ):
        for i in range(3):
            angle = pos / 10000 ** (2 * i / 6)
            assert got[b, t, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-10)
            assert got[b, t, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-10)
    assert SinusoidalPositions(5)(positions).shape == (2, 3, 5)
    assert SinusoidalPositions(8)(positions).dtype == torch.get_default_dtype()


def test_learned_positions_stop_at_max_len() -> None:
    pe = LearnedPositions(4, D)
    assert pe(torch.tensor([[0, 3]])).shape == (1, 2, D)
    with pytest.raises(ValueError, match=r"max_len=4.*position 4"):
        pe(torch.tensor([[3, 4]]))


def test_token_positions_ignore_padding() -> None:
    right, left = padding([3, 1], 4), padding([3, 1], 4, left=True)
    assert token_positions(right).tolist() == [[0, 1, 2, 0], [0, 0, 0, 0]]
    assert token_positions(left).tolist() == [[0, 0, 1, 2], [0, 0, 0, 0]]
    assert token_positions(left, offset=5)[0, 1:].tolist() == [5, 6, 7]
