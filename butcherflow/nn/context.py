"""What a field needs besides its input: masks, encoder memory, a decoding cache, position biases.

A compiled block calls its field several times per forward (once per stage), always with the same
`Context`; the `slot` argument of each call tells the calls apart, so that incremental decoding can
keep one key/value cache per self-attention call.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any, final

import torch
from torch import Tensor, nn


@final
@dataclass(frozen=True, eq=False)  # tensors do not compare to a bool
class ProjectionBias:
    """Additive biases for the query, key and value projections of one attention call.

    They are added after the projection (`q = x W_qᵀ + b_q + bias.q`), before the heads are
    split, which is how FLOATER injects its position encodings at every block. Each tensor must
    match the inputs of *this* call: during incremental decoding, only the new tokens' rows.

    **Arguments:**

    - `q`: `(batch, q_len, d_model)` or anything broadcastable to it; `None` for no bias.
    - `k`: `(batch, kv_len, d_model)`, or broadcastable; `None` for no bias.
    - `v`: `(batch, kv_len, d_model)`, or broadcastable; `None` for no bias.
    """

    q: Tensor | None = None
    k: Tensor | None = None
    v: Tensor | None = None


# The hook: `hook(attention_module, self_attention)` returns the biases of that call, or None.
AttentionBiasHook = Callable[[nn.Module, bool], ProjectionBias | None]


@final
class DecodeCache:
    """Keys and values kept between the steps of incremental (token by token) decoding.

    Self-attention keys/values are stored per `(slot, attention_id)`: `slot` numbers the field
    calls inside a block (each Runge-Kutta stage is its own slot, since the stage inputs, hence
    the keys, differ) and `attention_id` names the attention module. Cross-attention keys/values
    depend only on `memory` and the weights, so they are computed once per attention module and
    shared by every slot.

    The layout is static, so that a `torch.compile`d decoding step sees the same shapes at every
    step and reads no Python number that changes between steps:

    - every self-attention slot is one row of a preallocated tensor
      `(batch, rows, 2, heads, capacity, head_dim)` (keys, values); the keys of position `t` sit
      at index `t` of the time axis, written in place at positions taken from a device tensor
      (`position()`, advanced in place), not from a Python int;
    - when `length + new` exceeds `capacity`, the time axis doubles (one copy);
    - cross-attention keys/values are rows of a `(batch, rows, 2, heads, src_len, head_dim)`
      tensor;
    - `reorder(index)` (beam search) is one `index_select` per tensor, along the batch axis,
      which comes first so that the selection copies contiguous blocks (along an inner axis
      the same selection is an order of magnitude slower on a CPU).

    Under `torch.compile`, attention reads a slot's whole time axis (a static shape) and the causal
    mask, built from the positions, hides the keys not written yet; in eager mode it reads only
    the written part. Slots are registered at the first decoding step. The attention modules
    sharing a cache have the same heads, head width, dtype and device.

    The owner of the cache (the model) runs all blocks on the new tokens, then calls
    `advance(n)`; `length` is the number of tokens decoded so far, hence the position of the next
    token. In eager mode a self-attention call checks that its slot holds exactly `length` keys,
    which catches a forgotten `advance` and two calls sharing one slot. Inside `torch.compile`
    the cache keeps no Python count (a count read there is a constant that changes at every
    step, hence a recompilation): the check and the growth are skipped, so the caller makes room
    beforehand with `reserve(length + new)`, and `length` is read back from the device when next
    asked. Keys are written in place: decoding is inference, gradients do not flow through a
    cache.

    **Arguments:**

    - `capacity`: positions allocated per slot at first (doubled whenever a step needs more).
    """

    def __init__(self, capacity: int = 64) -> None:
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
            raise ValueError(f"DecodeCache: capacity must be a positive int, got {capacity!r}")
        self._capacity = capacity
        self._length = 0
        self._stale = False  # compiled steps advanced `_position` but not the counts
        self._rows: dict[tuple[int, Hashable], int] = {}  # (slot, attention_id) -> row
        self._filled: list[int] = []  # keys held by each row (eager bookkeeping)
        self._self: Tensor | None = None  # (batch, rows, 2, heads, capacity, head_dim)
        self._cross_rows: dict[Hashable, int] = {}
        self._cross: Tensor | None = None  # (batch, rows, 2, heads, src_len, head_dim)
        self._position: Tensor | None = None  # 0-dim long: `length`, on the device

    @property
    def length(self) -> int:
        """Tokens decoded so far (the position offset of the next call's first query)."""
        if self._stale:
            assert self._position is not None
            self._length = int(self._position)
            self._filled = [self._length] * len(self._filled)
            self._stale = False
        return self._length

    @property
    def capacity(self) -> int:
        """Positions allocated per slot."""
        return self._capacity

    @property
    def slots(self) -> list[tuple[int, Hashable]]:
        """The `(slot, attention_id)` pairs holding self-attention keys, in registration order."""
        return list(self._rows)

    def position(self, device: torch.device | str) -> Tensor:
        """`length` as a 0-dim LongTensor on `device`, kept there and advanced in place."""
        if self._position is None or self._position.device != torch.device(device):
            self._position = torch.tensor(self.length, device=device)
        return self._position

    def advance(self, n: int = 1) -> None:
        """Record that `n` more tokens went through every block."""
        if n < 0:
            raise ValueError(f"DecodeCache.advance: n must be non-negative, got {n}")
        if self._position is not None:
            self._position.add_(n)
        if torch.compiler.is_compiling():
            self._stale = True
        else:
            self._length = self.length + n

    def reserve(self, end: int) -> None:
        """Make room for positions `0 .. end - 1` (doubling the capacity as often as needed);
        a compiled step, which cannot grow the cache, needs this before it runs."""
        if end > self._capacity:
            self._capacity = max(end, 2 * self._capacity)
            if self._self is not None:
                self._self = _resized(self._self, 4, self._capacity)

    def append_self(
        self, slot: int, attention_id: Hashable, key: Tensor, value: Tensor
    ) -> tuple[Tensor, Tensor]:
        """Write the new tokens' keys and values at their positions; return the slot's.

        **Arguments:**

        - `slot`, `attention_id`: which field call and which attention module.
        - `key`, `value`: `(batch, heads, new, head_dim)`.

        **Returns:** keys and values `(batch, heads, time, head_dim)`: positions
        `0 .. length + new - 1` hold keys. `time` is `length + new` in eager mode (views of the
        written part) and `capacity` under `torch.compile` (a static shape; the unwritten tail is
        zero and the causal mask hides it).
        """
        row = self._rows.get((slot, attention_id))
        new = key.shape[2]
        if not torch.compiler.is_compiling():
            length = self.length  # first: after traced steps it brings the counts up to date
            held = 0 if row is None else self._filled[row]
            if held != length:
                raise RuntimeError(
                    f"DecodeCache: slot {slot} of attention {attention_id!r} holds {held} keys "
                    f"but cache.length is {length}; call cache.advance(n) once per decoding "
                    "step, after every block ran, and give each field call of a block its own slot"
                )
            self.reserve(length + new)
        if row is None:
            row = self._rows[(slot, attention_id)] = len(self._filled)
            self._filled.append(0)
            self._self = self._with_row(self._self, row, key, self._capacity)
        assert self._self is not None
        at = self.position(key.device) + torch.arange(new, device=key.device)
        self._self[:, row, 0].index_copy_(2, at, key)
        self._self[:, row, 1].index_copy_(2, at, value)
        keys, values = self._self[:, row, 0], self._self[:, row, 1]
        if torch.compiler.is_compiling():
            return keys, values
        end = self._filled[row] = self.length + new
        return keys[:, :, :end], values[:, :, :end]  # eager: no work on the unwritten tail

    def cross(
        self, attention_id: Hashable, compute: Callable[[], tuple[Tensor, Tensor]]
    ) -> tuple[Tensor, Tensor]:
        """The cross-attention keys and values of a module, computed by `compute()` once."""
        row = self._cross_rows.get(attention_id)
        if row is None:
            key, value = compute()
            row = self._cross_rows[attention_id] = len(self._cross_rows)
            self._cross = self._with_row(self._cross, row, key, key.shape[2])
            self._cross[:, row, 0].copy_(key)
            self._cross[:, row, 1].copy_(value)
        assert self._cross is not None
        return self._cross[:, row, 0], self._cross[:, row, 1]

    def reorder(self, index: Tensor) -> None:
        """Select batch rows (beam search): every cached tensor becomes `tensor[index]`.

        **Arguments:**

        - `index`: `(new_batch,)` LongTensor of rows of the current batch.
        """
        if self._self is not None:
            self._self = self._self.index_select(0, index)
        if self._cross is not None:
            self._cross = self._cross.index_select(0, index)

    def clear(self) -> None:
        """Forget everything (a new sequence); the capacity reached is kept."""
        self._rows.clear()
        self._filled.clear()
        self._cross_rows.clear()
        self._self = self._cross = self._position = None
        self._length, self._stale = 0, False

    @staticmethod
    def _with_row(stack: Tensor | None, row: int, like: Tensor, time: int) -> Tensor:
        """`stack` with room for row `row` of keys shaped like `like` (rows double when full)."""
        batch, heads, _, head_dim = like.shape
        if stack is None:
            return like.new_zeros(batch, 4, 2, heads, time, head_dim)
        held = (stack.shape[0], *stack.shape[3:])  # (batch, heads, time, head_dim)
        fits = held == (batch, heads, time, head_dim)
        if not fits or stack.dtype != like.dtype or stack.device != like.device:
            raise ValueError(
                f"DecodeCache: keys {tuple(like.shape)} {like.dtype} on {like.device} do not fit "
                f"the cache's (batch, heads, time, head_dim) = {held} {stack.dtype} on "
                f"{stack.device}; every attention module sharing a cache needs the same heads, "
                "head width, dtype and device (and cross-attention one memory)"
            )
        return stack if row < stack.shape[1] else _resized(stack, 1, 2 * stack.shape[1])


def _resized(tensor: Tensor, dim: int, size: int) -> Tensor:
    """A zero tensor of `size` along `dim` (≥ the current size) holding `tensor` at its start."""
    shape = list(tensor.shape)
    old, shape[dim] = shape[dim], size
    grown = tensor.new_zeros(shape)
    grown.narrow(dim, 0, old).copy_(tensor)
    return grown


@final
@dataclass(frozen=True, eq=False)
class Context:
    """Everything a field call reads besides its input `y`.

    **Arguments:**

    - `key_padding_mask`: `(batch, length)` bool, True at padding; masks self-attention keys.
      With a `cache`, it covers every key attended to: `(batch, cache.length + new)`.
    - `causal`: self-attention sees only earlier positions (decoders).
    - `memory`: `(batch, src_len, d_model)`, the encoder output for cross-attention.
    - `memory_key_padding_mask`: `(batch, src_len)` bool, True at padding of `memory`.
    - `cache`: a `DecodeCache` for incremental decoding (requires `causal`).
    - `attention_bias`: per-call projection biases (FLOATER's hook): a mapping
      `{"self": ProjectionBias, "cross": ProjectionBias}` used by every attention module of the
      block, or a callable `hook(attention_module, self_attention) -> ProjectionBias | None` for
      finer control. The caller builds one per block (biases differ between blocks).
    """

    key_padding_mask: Tensor | None = None
    causal: bool = False
    memory: Tensor | None = None
    memory_key_padding_mask: Tensor | None = None
    cache: DecodeCache | None = None
    attention_bias: Mapping[str, ProjectionBias] | AttentionBiasHook | None = None

    def __post_init__(self) -> None:
        if self.cache is not None and not self.causal:
            raise ValueError(
                "Context: a DecodeCache needs causal=True (incremental decoding only equals the "
                "full forward for causal self-attention)"
            )
        if self.memory_key_padding_mask is not None and self.memory is None:
            raise ValueError("Context: memory_key_padding_mask given without memory")
        if isinstance(self.attention_bias, Mapping):
            unknown = set(self.attention_bias) - {"self", "cross"}
            if unknown:
                raise ValueError(
                    f"Context: attention_bias keys must be 'self' and/or 'cross', "
                    f"got {sorted(unknown)}"
                )

    def projection_bias(self, attention: nn.Module, self_attention: bool) -> ProjectionBias | None:
        """The projection biases for a call of `attention` (None when there are none)."""
        hook = self.attention_bias
        if hook is None:
            return None
        if isinstance(hook, Mapping):
            return hook.get("self" if self_attention else "cross")
        return hook(attention, self_attention)

    def replace(self, **changes: Any) -> Context:
        """A copy with some fields changed (e.g. a per-block `attention_bias`)."""
        return dataclasses.replace(self, **changes)
