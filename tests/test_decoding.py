"""Incremental decoding: a compiled decoder block fed one token (or a few) at a time with a
`DecodeCache` equals the full causal forward, for every catalog Runge-Kutta method, every
splitting with Runge-Kutta sub-steps, every explicit multistep stack and every fixed-step
continuous block, each with every decoder field, and every general linear stack under every
coefficient policy; `DecodeCache.reorder` (beam search), the static
layout (keys written in place, capacity doubled, one `index_select` per reorder) and the protocol
errors.

Every method is decoded twice: in eager mode, and in the mode `torch.compile` traces (the
`traced` fixture makes `torch.compiler.is_compiling()` true, so the cache keeps no Python count,
attention reads the whole preallocated time axis and masks it by position), run eagerly so that
the whole catalog stays cheap; tests/test_compile.py runs real compiled decoding.

Protocol: the caller passes only the new tokens to every block, then calls `cache.advance(n)`
once. Everything runs in float64.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import pytest
import torch
from catalog_sweep import sweep
from torch import Tensor, nn

import butcherflow as bf
from butcherflow.nn import Context, DecodeCache

DOUBLE = torch.float64
D, H, DFF = 8, 2, 16
SIZES: dict = {"d_model": D, "n_heads": H, "d_ffn": DFF}
BATCH, T, SOURCE = 2, 5, 4
TOLERANCE = 1e-10

RUNGE_KUTTA = [
    n
    for n in sorted(bf.catalog)
    if bf.catalog[n].family == "runge-kutta" and not bf.catalog[n].symbols
]
SPLITTINGS = [
    n
    for n in sorted(bf.catalog)
    if bf.catalog[n].family == "splitting" and bf.catalog[n].substep is not None
]
DECODER_FIELDS = ["san+ca+ffn", "san+ca", "san"]
MULTISTEP = [  # compile_stack takes explicit methods (and DLCL); lm-resnet needs its k
    n
    for n in sorted(bf.catalog)
    if bf.catalog[n].family == "multistep" and bf.catalog[n].is_explicit
] + ["dlcl"]
CONTINUOUS = [
    n
    for n in sorted(bf.catalog)
    if bf.catalog[n].family == "continuous"
    and bf.catalog[n].grid == "interval"
    and not bf.catalog[n].adaptive
]
GENERAL_LINEAR = [n for n in sorted(bf.catalog) if bf.catalog[n].family == "general-linear"]
# Sinkhorn needs a doubly stochastic V (hyper-connections-4's identity)
GLM_POLICIES = [(n, p) for n in GENERAL_LINEAR for p in ("exact", "learned", "dynamic")]
GLM_POLICIES.append(("hyper-connections-4", "sinkhorn"))


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


def randn(*shape: int, seed: int) -> Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=DOUBLE)


def rk_block(name: str, field: str) -> bf.CompiledBlock:
    method = bf.catalog[name]
    iterations = 2 if method.is_implicit else None
    block = bf.compile(name, field=field, causal=True, iterations=iterations, **SIZES)
    return block.to(DOUBLE).eval()


def stack_block(name: str, field: str, layers: int = 3) -> bf.CompiledBlock:
    learned = {"coefficients": "learned", "init": {"k": 0.5}}  # lm-resnet's free k
    options = learned if name == "lm-resnet" else {}
    block = bf.compile_stack(name, [field] * layers, causal=True, **options, **SIZES)
    return block.to(DOUBLE).eval()


def continuous_block(name: str, field: str) -> bf.CompiledBlock:
    return bf.compile(name, field=field, causal=True, **SIZES).to(DOUBLE).eval()


def glm_stack(name: str, policy: str) -> bf.CompiledBlock:
    """A three-layer decoder stack of the general linear method `name`, its coefficients moved
    off the declared start so that the streams differ."""
    stack = bf.compile_stack(name, ["san+ca+ffn"] * 3, coefficients=policy, **SIZES)
    stack = stack.to(DOUBLE).eval()
    with torch.no_grad():
        for p in stack.parameters():
            p.add_(0.05 * torch.randn_like(p))
    return stack


@pytest.fixture
def traced(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run the code path `torch.compile` traces, eagerly (see the module docstring)."""
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)


def splitting_fields(name: str) -> dict[str, str]:
    fields = {"A": "ffn", "B": "san+ca", "C": "ca"}
    return {op: fields[op] for op in bf.catalog[name].operators}


def splitting_block(name: str, share: bool = False) -> bf.CompiledBlock:
    block = bf.compile(name, fields=splitting_fields(name), share=share, **SIZES)
    return block.to(DOUBLE).eval()


def decode(
    blocks: Sequence[nn.Module],
    x: Tensor,
    memory: Tensor | None,
    chunks: Sequence[int] = (1,) * T,
    padding: Tensor | None = None,
    memory_padding: Tensor | None = None,
    cache: DecodeCache | None = None,
) -> Tensor:
    """Feed `x` through the stack `blocks` chunk by chunk (new tokens only), advancing the
    cache once per chunk after every block ran. The default cache starts with room for two
    positions, so every test also doubles it; a traced step cannot grow it, so room is reserved
    first (as `generate.search` does)."""
    cache = DecodeCache(capacity=2) if cache is None else cache
    outputs, start = [], 0
    for n in chunks:
        if torch.compiler.is_compiling():
            cache.reserve(start + n)
        h = x[:, start : start + n]
        mask = None if padding is None else padding[:, : start + n]
        for block in blocks:
            h = block(
                h,
                key_padding_mask=mask,
                memory=memory,
                memory_key_padding_mask=memory_padding,
                cache=cache,
            )
        cache.advance(n)
        outputs.append(h)
        start += n
    assert start == x.shape[1]
    return torch.cat(outputs, dim=1)


def full(
    blocks: Sequence[nn.Module],
    x: Tensor,
    memory: Tensor | None,
    padding: Tensor | None = None,
    memory_padding: Tensor | None = None,
) -> Tensor:
    for block in blocks:
        x = block(
            x, key_padding_mask=padding, memory=memory, memory_key_padding_mask=memory_padding
        )
    return x


def assert_close(actual: Tensor, expected: Tensor, tol: float = TOLERANCE) -> None:
    error = (actual - expected).abs().max().item()
    assert error <= tol, f"max |error| = {error:.3g} > {tol:.1g}"


def inputs(seed: int = 1) -> tuple[Tensor, Tensor]:
    return randn(BATCH, T, D, seed=seed), randn(BATCH, SOURCE, D, seed=seed + 100)


def test_the_catalog_has_every_kind_decoded_here() -> None:
    kinds = {bf.catalog[n].kind for n in RUNGE_KUTTA}
    assert kinds == {"explicit", "diagonally implicit", "implicit"}
    substeps = {bf.catalog[n].substep.name for n in SPLITTINGS}
    assert {"euler", "rk4"} <= substeps
    assert any(len(bf.catalog[n].operators) == 3 for n in SPLITTINGS)


# -- every method, one token at a time ------------------------------------------------------


@pytest.mark.parametrize("field", DECODER_FIELDS)
@pytest.mark.parametrize("name", sweep(RUNGE_KUTTA))
def test_runge_kutta_decoding_equals_the_full_causal_forward(name: str, field: str) -> None:
    block = rk_block(name, field)
    assert block.causal
    x, memory = inputs()
    if "ca" not in field:
        memory = None
    expected = full([block], x, memory)
    assert_close(decode([block], x, memory), expected)
    # causal: a later token does not change an earlier output
    changed = x.clone()
    changed[:, -1] += 1.0
    assert_close(full([block], changed, memory)[:, :-1], expected[:, :-1], 1e-12)


@pytest.mark.parametrize("share", [False, True], ids=["separate", "shared"])
@pytest.mark.parametrize("name", sweep(SPLITTINGS))
def test_splitting_decoding_equals_the_full_causal_forward(name: str, share: bool) -> None:
    block = splitting_block(name, share)
    assert block.causal  # a field cross-attends: a decoder
    x, memory = inputs()
    assert_close(decode([block], x, memory), full([block], x, memory))


@pytest.mark.parametrize("field", DECODER_FIELDS)
@pytest.mark.parametrize("name", sweep(MULTISTEP))
def test_multistep_stack_decoding_equals_the_full_causal_forward(name: str, field: str) -> None:
    """A stack reuses earlier layers' field outputs: each layer's calls keep their own slots."""
    block = stack_block(name, field)
    x, memory = inputs()
    if "ca" not in field:
        memory = None
    assert_close(decode([block], x, memory), full([block], x, memory))


@pytest.mark.parametrize("field", DECODER_FIELDS)
@pytest.mark.parametrize("name", sweep(CONTINUOUS))
def test_continuous_decoding_equals_the_full_causal_forward(name: str, field: str) -> None:
    block = continuous_block(name, field)
    x, memory = inputs()
    if "ca" not in field:
        memory = None
    assert_close(decode([block], x, memory), full([block], x, memory))


def _every_block() -> list[tuple[str, str, object]]:
    """(id, catalog entry, maker) for every catalog method with every decoder field (splittings:
    their own; general linear stacks: san+ca+ffn under every coefficient policy)."""
    makers: list[tuple[str, str, object]] = []
    for field in DECODER_FIELDS:
        makers += [(f"{n}-{field}", n, lambda n=n, f=field: rk_block(n, f)) for n in RUNGE_KUTTA]
        makers += [(f"{n}-{field}", n, lambda n=n, f=field: stack_block(n, f)) for n in MULTISTEP]
        makers += [
            (f"{n}-{field}", n, lambda n=n, f=field: continuous_block(n, f)) for n in CONTINUOUS
        ]
    makers += [(n, n, lambda n=n: splitting_block(n)) for n in SPLITTINGS]
    makers += [(f"{n}-{p}", n, lambda n=n, p=p: glm_stack(n, p)) for n, p in GLM_POLICIES]
    return makers


EVERY_BLOCK = _every_block()
_TRACED = sweep(
    [make for _, _, make in EVERY_BLOCK],
    entries=[n for _, n, _ in EVERY_BLOCK],
    ids=[i for i, _, _ in EVERY_BLOCK],
)


@pytest.mark.usefixtures("traced")
@pytest.mark.parametrize("make", _TRACED)
def test_traced_decoding_equals_the_full_causal_forward(make: object) -> None:
    """The compiled step's semantics: no Python counts, the whole preallocated time axis read
    and masked by position (left padding included), in chunks of 1 and 2 tokens."""
    block = make()  # type: ignore[operator]
    x, memory = inputs(seed=4)
    if not any(isinstance(m, bf.nn.CrossAttentionSublayer) for m in block.modules()):
        memory = None
    padding = torch.tensor([[True, False, False, False, False], [False] * T])
    expected = full([block], x, memory, padding)
    cache = DecodeCache(capacity=8)
    assert_close(decode([block], x, memory, (1, 2, 1, 1), padding, cache=cache), expected)
    assert cache.length == T  # read back from the device position


@pytest.mark.parametrize(
    ("name", "policy"), sweep(GLM_POLICIES, entries=[n for n, _ in GLM_POLICIES])
)
def test_general_linear_stack_decoding_equals_the_full_causal_forward(
    name: str, policy: str
) -> None:
    """The streams are mixed per token (dynamic and Sinkhorn coefficients too), so a stack
    decoded token by token equals its full causal forward."""
    stack = glm_stack(name, policy)
    assert stack.causal
    x, memory = inputs()
    assert_close(decode([stack], x, memory), full([stack], x, memory))
    assert_close(decode([stack], x, memory, chunks=(2, 3)), full([stack], x, memory))


def test_macaron_decoder_with_its_own_fields() -> None:
    """FFN(½), causal SAN, CA, FFN(½) (Macaron's decoder)."""
    fields = {"A": "ffn", "B": "san", "C": "ca"}
    block = bf.compile("macaron-decoder", fields=fields, **SIZES).to(DOUBLE).eval()
    assert block.causal
    x, memory = inputs()
    assert_close(decode([block], x, memory), full([block], x, memory))


def test_every_stage_has_its_own_self_attention_cache() -> None:
    """Sharing one cache slot between the stages of rk4 would attend to the wrong keys: the
    decoding only matches because each field call keeps its own keys."""
    block = rk_block("rk4", "san")
    x, _ = inputs()
    expected = full([block], x, None)
    program = block.program

    class OneSlot(nn.Module):  # the same field, every call forced into slot 0
        def __init__(self) -> None:
            super().__init__()
            self.inner = program.field

        def forward(self, y: Tensor, ctx: Context, slot: int) -> Tensor:
            return self.inner(y, ctx, 0)

    original = program.field
    program.field = OneSlot()
    try:
        with pytest.raises(RuntimeError, match="slot"):
            decode([block], x, None)
    finally:
        program.field = original
    assert_close(decode([block], x, None), expected)


# -- chunks, masks, stacks ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda: rk_block("rk4", "san+ca+ffn"),
        lambda: rk_block("sdirk-2", "san+ca+ffn"),
        lambda: rk_block("gauss-legendre-2", "san+ca"),
        lambda: splitting_block("strang-rk4"),
        lambda: splitting_block("macaron-decoder", share=True),
    ],
    ids=["rk4", "sdirk-2", "gauss-legendre-2", "strang-rk4", "macaron-decoder"],
)
@pytest.mark.parametrize("chunks", [(2, 1, 2), (1, 3, 1), (5,)])
def test_decoding_in_chunks_with_padding(make: object, chunks: tuple[int, ...]) -> None:
    block = make()  # type: ignore[operator]
    x, memory = inputs(seed=3)
    padding = torch.tensor([[True, False, False, False, False], [False] * T])  # left padding
    memory_padding = torch.tensor([[False] * SOURCE, [False, False, True, True]])
    expected = full([block], x, memory, padding, memory_padding)
    actual = decode([block], x, memory, chunks, padding, memory_padding)
    assert_close(actual, expected)
    # the masks matter: without them the result differs
    assert (full([block], x, memory) - expected).abs().max() > 1e-6


def test_a_stack_of_blocks_shares_one_cache() -> None:
    """A model passes one cache to every block, then advances it once per step."""
    blocks = [
        rk_block("rk4", "san+ca+ffn"),
        splitting_block("strang"),
        rk_block("radau-iia-3", "san+ca"),
        rk_block("euler", "san+ca+ffn"),
    ]
    x, memory = inputs(seed=5)
    assert_close(decode(blocks, x, memory, chunks=(1, 2, 1, 1)), full(blocks, x, memory))


def test_context_with_a_cache_equals_the_keyword_arguments() -> None:
    block = rk_block("heun", "san+ca+ffn")
    x, memory = inputs()
    cache = DecodeCache()
    outputs = []
    for t in range(T):
        ctx = Context(causal=True, memory=memory, cache=cache)
        outputs.append(block(x[:, t : t + 1], ctx=ctx))
        cache.advance(1)
    assert_close(torch.cat(outputs, dim=1), full([block], x, memory))


# -- beam search: reorder -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [lambda: rk_block("rk4", "san+ca+ffn"), lambda: splitting_block("macaron-decoder")],
    ids=["rk4", "macaron-decoder"],
)
def test_reorder_selects_batch_rows(make: object) -> None:
    block = make()  # type: ignore[operator]
    x, memory = inputs(seed=7)
    memory_padding = torch.tensor([[False] * SOURCE, [False, False, False, True]])
    index = torch.tensor([1, 0, 1])  # beams: row 1 twice, row 0 once
    cache = DecodeCache()
    first = decode([block], x[:, :2], memory, (1, 1), None, memory_padding, cache)
    assert cache.length == 2
    cache.reorder(index)
    # continue with the reordered rows only: new tokens of the selected beams
    later = decode([block], x[index, 2:], memory[index], (1, 2), None, memory_padding[index], cache)
    assert cache.length == T
    expected = full([block], x[index], memory[index], None, memory_padding[index])
    assert_close(first[index], expected[:, :2])
    assert_close(later, expected[:, 2:])


def test_reorder_keeps_the_cache_consistent_for_a_new_row_order() -> None:
    block = rk_block("dormand-prince-5", "san+ca+ffn")
    x, memory = inputs(seed=8)
    index = torch.tensor([1, 0])  # swap the two rows
    cache = DecodeCache()
    decode([block], x[:, :3], memory, (1, 1, 1), cache=cache)
    cache.reorder(index)
    later = decode([block], x[index, 3:], memory[index], (1, 1), cache=cache)
    assert_close(later, full([block], x[index], memory[index])[:, 3:])
    # without the reorder the swapped rows would see the other row's keys
    stale = DecodeCache()
    decode([block], x[:, :3], memory, (1, 1, 1), cache=stale)
    wrong = decode([block], x[index, 3:], memory[index], (1, 1), cache=stale)
    assert (wrong - later).abs().max() > 1e-6


# -- the static layout ------------------------------------------------------------------------


def test_keys_are_written_in_place_and_the_capacity_doubles() -> None:
    """Position t's keys sit at index t of one preallocated tensor; its storage changes only
    when a step needs more than the capacity, which then doubles."""
    cache = DecodeCache(capacity=2)
    keys = [randn(BATCH, H, 1, D // H, seed=20 + t) for t in range(5)]
    storages, capacities = [], []
    for key in keys:
        held, values = cache.append_self(0, "attention", key, -key)
        cache.advance(1)
        storages.append(held.untyped_storage().data_ptr())
        capacities.append(cache.capacity)
        assert held.shape[2] == cache.length  # eager: a view of the written part only
    assert capacities == [2, 2, 4, 4, 8]
    assert [a == b for a, b in itertools.pairwise(storages)] == [True, False, True, False]
    assert torch.equal(held, torch.cat(keys, dim=2))
    assert torch.equal(values, -held)


def test_reserve_makes_room_ahead() -> None:
    cache = DecodeCache(capacity=3)
    cache.reserve(3)
    assert cache.capacity == 3
    cache.reserve(4)
    assert cache.capacity == 6
    cache.reserve(20)
    assert cache.capacity == 20


class _Calls(torch.overrides.TorchFunctionMode):
    """Counts the torch functions and Tensor methods called under it, by name."""

    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        self.names.append(getattr(func, "__name__", str(func)))
        return func(*args, **(kwargs or {}))


def test_reorder_is_one_index_select_per_kind_of_keys() -> None:
    """An RK4 decoder stack of three blocks holds 3 x 4 self-attention slots and 3 cross
    caches; beam search re-indexes all of them with two index_selects (self, cross)."""
    blocks = [rk_block("rk4", "san+ca+ffn") for _ in range(3)]
    x, memory = inputs(seed=21)
    cache = DecodeCache()
    decode(blocks, x[:, :2], memory, (1, 1), cache=cache)
    assert len(cache.slots) == 12
    index = torch.tensor([1, 1])
    with _Calls() as calls:
        cache.reorder(index)
    assert calls.names == ["index_select", "index_select"]
    later = decode(blocks, x[[1, 1], 2:], memory[[1, 1]], (1, 1, 1), cache=cache)
    assert_close(later, full(blocks, x[[1, 1]], memory[[1, 1]])[:, 2:])


def test_after_traced_steps_eager_steps_continue(monkeypatch: pytest.MonkeyPatch) -> None:
    """Traced steps advance only the device position; the next eager call reads it back."""
    block = rk_block("heun", "san+ca+ffn")
    x, memory = inputs(seed=22)
    cache = DecodeCache(capacity=8)
    with monkeypatch.context() as patch:
        patch.setattr(torch.compiler, "is_compiling", lambda: True)
        first = decode([block], x[:, :3], memory, (2, 1), cache=cache)
    later = decode([block], x[:, 3:], memory, (1, 1), cache=cache)
    assert cache.length == T
    assert_close(torch.cat([first, later], dim=1), full([block], x, memory))


def test_a_cache_refuses_a_bad_capacity_and_mismatched_keys() -> None:
    with pytest.raises(ValueError, match="capacity must be a positive int, got 0"):
        DecodeCache(capacity=0)
    cache = DecodeCache()
    cache.append_self(0, "a", randn(BATCH, 2, 1, 4, seed=23), randn(BATCH, 2, 1, 4, seed=24))
    with pytest.raises(ValueError, match="same heads, head width"):
        cache.append_self(0, "b", randn(BATCH, 4, 1, 2, seed=25), randn(BATCH, 4, 1, 2, seed=26))


# -- protocol errors ------------------------------------------------------------------------


def test_forgetting_advance_is_caught() -> None:
    block = rk_block("heun", "san+ca+ffn")
    x, memory = inputs()
    cache = DecodeCache()
    block(x[:, :1], memory=memory, cache=cache)
    with pytest.raises(RuntimeError, match="advance"):
        block(x[:, 1:2], memory=memory, cache=cache)


def test_clear_starts_a_new_sequence() -> None:
    block = rk_block("rk4", "san")
    x, _ = inputs()
    cache = DecodeCache()
    decode([block], x, None, cache=cache)
    cache.clear()
    assert cache.length == 0
    assert_close(decode([block], x, None, cache=cache), full([block], x, None))


def test_advance_refuses_a_negative_count() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        DecodeCache().advance(-1)


def test_a_cache_needs_a_causal_block() -> None:
    block = bf.compile("rk4", field="san", causal=False, **SIZES).to(DOUBLE)
    x, _ = inputs()
    with pytest.raises(ValueError, match="causal"):
        block(x[:, :1], cache=DecodeCache())


def test_padding_mask_must_cover_the_cached_keys() -> None:
    block = rk_block("heun", "san")
    x, _ = inputs()
    cache = DecodeCache()
    block(x[:, :1], cache=cache)
    cache.advance(1)
    with pytest.raises(ValueError, match="cached keys"):
        block(x[:, 1:2], key_padding_mask=torch.zeros(BATCH, 1, dtype=torch.bool), cache=cache)
