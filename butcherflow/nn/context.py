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
    shared by every slot. Every tensor has the layout `(batch, heads, time, head_dim)`.

    The owner of the cache (the model) runs all blocks on the new tokens, then calls
    `advance(n)`; `length` is the number of tokens decoded so far, hence the position of the next
    token. A self-attention call checks that its slot holds exactly `length` keys, which catches
    a forgotten `advance` and two calls sharing one slot.
    """

    def __init__(self) -> None:
        self._self: dict[tuple[int, Hashable], tuple[Tensor, Tensor]] = {}
        self._cross: dict[Hashable, tuple[Tensor, Tensor]] = {}
        self._length = 0

    @property
    def length(self) -> int:
        """Tokens decoded so far (the position offset of the next call's first query)."""
        return self._length

    def advance(self, n: int = 1) -> None:
        """Record that `n` more tokens went through every block."""
        if n < 0:
            raise ValueError(f"DecodeCache.advance: n must be non-negative, got {n}")
        self._length += n

    def append_self(
        self, slot: int, attention_id: Hashable, key: Tensor, value: Tensor
    ) -> tuple[Tensor, Tensor]:
        """Append the new tokens' keys and values and return all of them.

        **Arguments:**

        - `slot`, `attention_id`: which field call and which attention module.
        - `key`, `value`: `(batch, heads, new, head_dim)`.

        **Returns:** keys and values `(batch, heads, length + new, head_dim)`.
        """
        past = self._self.get((slot, attention_id))
        held = 0 if past is None else past[0].shape[2]
        if held != self._length:
            raise RuntimeError(
                f"DecodeCache: slot {slot} of attention {attention_id!r} holds {held} keys but "
                f"cache.length is {self._length}; call cache.advance(n) once per decoding step, "
                "after every block ran, and give each field call of a block its own slot"
            )
        if past is not None:
            key = torch.cat([past[0], key], dim=2)
            value = torch.cat([past[1], value], dim=2)
        self._self[(slot, attention_id)] = (key, value)
        return key, value

    def cross(
        self, attention_id: Hashable, compute: Callable[[], tuple[Tensor, Tensor]]
    ) -> tuple[Tensor, Tensor]:
        """The cross-attention keys and values of a module, computed by `compute()` once."""
        cached = self._cross.get(attention_id)
        if cached is None:
            cached = compute()
            self._cross[attention_id] = cached
        return cached

    def reorder(self, index: Tensor) -> None:
        """Select batch rows (beam search): every cached tensor becomes `tensor[index]`.

        **Arguments:**

        - `index`: `(new_batch,)` LongTensor of rows of the current batch.
        """

        def pick(kv: tuple[Tensor, Tensor]) -> tuple[Tensor, Tensor]:
            return kv[0].index_select(0, index), kv[1].index_select(0, index)

        self._self = {name: pick(kv) for name, kv in self._self.items()}
        self._cross = {name: pick(kv) for name, kv in self._cross.items()}

    def clear(self) -> None:
        """Forget everything (a new sequence)."""
        self._self.clear()
        self._cross.clear()
        self._length = 0


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
