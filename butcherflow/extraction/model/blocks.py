"""A whole model's repeated blocks, each block's call, and each block's fields, found from one
observed forward (PyTorch forward hooks, public API).

- The blocks: of the model's `nn.ModuleList`s and `nn.Sequential`s of two entries or more,
  those whose every entry is called exactly once per forward, in order, on a tensor of the
  shape it returns (the residual stream); the longest (ties: the outermost) is the stack.
- A block's call: the arguments its parent passed (a forward-pre-hook with `with_kwargs`), so
  a block is read as its own model calls it (masks, position embeddings).
- A block's fields (`discover`): the chains of sub-module calls whose outputs reach the
  block's output through its own code. Among the calls of the block's descendants that no
  other such call encloses (a call that runs a sibling's module is a wrapper, seen through),
  a call whose input is an earlier call's output (the same storage) continues that call's
  chain, and any other call starts a chain; a chain ends at a call whose output no later call
  reads, and is a field when that output has its start's input shape. Dropout (the identity
  in eval mode) is left out of chains; a call that also receives the residual stream as a
  second argument (a residual module, or an attention that adds its residual itself) ends
  the chain before it. A field is named after its member with the most parameters
  (`self_attn`, `mlp`).
"""

from __future__ import annotations

import contextlib
import inspect
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, final

import torch
from torch import Tensor, nn

from ...errors import ExtractionError
from ..probe import first_output, module_name, same_tokens, tensor_input

FieldPaths = dict[str, tuple[str, ...]]


class NoStack(ExtractionError):
    """A model without a stack of blocks (it may still be one layer)."""


@final
@dataclass
class Seen:
    """One call of a block's descendant: its path (relative to the block), its first tensor
    input and output (None when it has none), its other tensor arguments, when it ran
    (`start`, `end`: event counters, to tell enclosing calls), and the call itself."""

    path: str
    input: Tensor | None
    output: Tensor | None
    others: tuple[Tensor, ...]
    start: int
    end: int = -1
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    returned: Any = None  # the output as returned


@final
@dataclass
class BlockCall:
    """A block's call in one forward: its arguments, its output, and its descendants' calls."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    output: Any = None
    seen: list[Seen] = field(default_factory=list)

    @property
    def state(self) -> Tensor:
        where = tensor_input(self.args, self.kwargs, "a block")
        value = self.args[0] if where[0] == "arg" else self.kwargs[where[1]]
        assert isinstance(value, Tensor)
        return value


@final
@dataclass(frozen=True)
class Blocks:
    """A model's stack: the path of its block list, the blocks, and where the stream leaves it
    (`readout`: the path of the first module called after the last block on a tensor of the
    stream's shape, the final norm or the head; None when there is none)."""

    path: str
    modules: tuple[nn.Module, ...]
    readout: str | None

    def names(self) -> list[str]:
        return [f"{self.path}.{i}" if self.path else str(i) for i in range(len(self.modules))]

    def on(self, model: nn.Module) -> Blocks:
        """The same stack in a copy of the model (the same paths)."""
        parent = model.get_submodule(self.path) if self.path else model
        return Blocks(self.path, tuple(parent), self.readout)  # type: ignore[arg-type]

    def put(self, model: nn.Module, index: int, block: nn.Module) -> None:
        """Replace block `index` of this stack in `model` (a copy of the model read)."""
        parent = model.get_submodule(self.path) if self.path else model
        assert isinstance(parent, (nn.ModuleList, nn.Sequential))
        parent[index] = block

    def get(self, model: nn.Module, index: int) -> nn.Module:
        """Block `index` of this stack in `model`."""
        return model.get_submodule(f"{self.path}.{index}" if self.path else str(index))


def _candidates(model: nn.Module) -> list[tuple[str, Sequence[nn.Module]]]:
    return [
        (name, list(m))
        for name, m in model.named_modules()
        if isinstance(m, (nn.ModuleList, nn.Sequential))
        and len(m) >= 2
        and all(e is not None for e in m)  # x-transformers' norms hold None for "no norm"
    ]


@contextlib.contextmanager
def hooks(pairs: Sequence[tuple[nn.Module, Any, Any]], with_kwargs: bool = True) -> Iterator[None]:
    """Each (module, pre, post) hook pair registered for the block (a None is none), removed
    after it; `with_kwargs`: the pre hooks take and return the call's keywords too."""
    handles = []
    try:
        for module, pre, post in pairs:
            if pre is not None:
                handles.append(module.register_forward_pre_hook(pre, with_kwargs=with_kwargs))
            if post is not None:
                handles.append(module.register_forward_hook(post))
        yield
    finally:
        for handle in handles:
            handle.remove()


def _first_tensor(value: Any) -> Tensor | None:
    try:
        return first_output(value, "")
    except ExtractionError:
        return None


def find_blocks(model: nn.Module, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Blocks:
    """The model's stack (see the module's docstring); raises `ExtractionError` naming the
    longest list and what it does wrong when no list is a stack."""
    who = module_name(model)
    candidates = _candidates(model)
    if not candidates:
        raise NoStack(
            f"{who} has no repeated block (no nn.ModuleList or nn.Sequential of two modules or "
            "more); valid: a model whose layers sit in a list, or bf.extract(layer, x, "
            "fields=...) on one layer"
        )
    calls: dict[int, list[tuple[str, int, Tensor | None, Tensor | None]]] = {}
    order: list[tuple[str, Any]] = []  # ("block", id) and ("module", path) in call order
    pairs: list[tuple[nn.Module, Any, Any]] = []
    for list_path, entries in candidates:
        for index, entry in enumerate(entries):

            def pre(m: nn.Module, a: tuple, k: dict, key: Any = (list_path, index)) -> None:
                x = _first_tensor(list(a) + list(k.values()))
                calls.setdefault(id(m), []).append((key[0], key[1], x, None))

            def post(m: nn.Module, a: tuple, out: Any) -> None:
                entry_calls = calls[id(m)]
                path, i, x, _ = entry_calls[-1]
                entry_calls[-1] = (path, i, x, _first_tensor(out))
                order.append(("block", id(m)))

            pairs.append((entry, pre, post))
    named = dict(model.named_modules())
    for path, module in named.items():
        if path:
            pairs.append((module, None, _recorder(order, path)))
    with hooks(pairs), torch.no_grad():
        model(*args, **kwargs)
    ranked = []
    reasons = []
    for list_path, entries in candidates:
        reason = _not_a_stack(list_path, entries, calls)
        if reason is None:
            ranked.append((len(entries), list_path, entries))
        else:
            reasons.append((len(entries), reason))
    if not ranked:
        reasons.sort(key=lambda r: -r[0])
        raise NoStack(
            f"{who}: no list of modules is a stack of blocks ({reasons[0][1]}); valid: a model "
            "whose layers, in an nn.ModuleList, are each called once per forward, in order, on "
            "the residual stream (or bf.extract(layer, x) on one layer)"
        )
    best = max(ranked, key=lambda r: r[0])  # max keeps the first of equals: the outermost
    path, entries = best[1], best[2]
    return Blocks(path, tuple(entries), _readout(order, entries, path, named))


def _recorder(order: list[tuple[str, Any]], path: str) -> Any:
    def hook(module: nn.Module, args: tuple, out: Any) -> None:
        order.append(("module", (path, args)))

    return hook


def _not_a_stack(path: str, entries: Sequence[nn.Module], calls: Mapping[int, list]) -> str | None:
    counts = [len(calls.get(id(e), [])) for e in entries]
    if any(c != 1 for c in counts):
        bad = next(i for i, c in enumerate(counts) if c != 1)
        return f"{path}.{bad} is called {counts[bad]} time(s) per forward"
    for i, entry in enumerate(entries):
        _, _, x, out = calls[id(entry)][0]
        if x is None or out is None or x.shape != out.shape or not x.is_floating_point():
            return f"{path}.{i} does not map a stream to a stream of its shape"
    return None


def _readout(
    order: list[tuple[str, Any]], entries: Sequence[nn.Module], path: str, named: dict
) -> str | None:
    """The first module called after the last block (outside the blocks) on a tensor of the
    stream's shape."""
    last = id(entries[-1])
    ends = [i for i, (kind, key) in enumerate(order) if kind == "block" and key == last]
    if not ends:
        return None
    prefix = f"{path}." if path else ""
    for kind, key in order[ends[-1] + 1 :]:
        if kind != "module":
            continue
        module_path, args = key
        if module_path.startswith(prefix) or module_path == path:
            continue
        if isinstance(named[module_path], (nn.ModuleList, nn.Sequential)):
            continue
        x = _first_tensor(list(args))
        if x is not None and x.is_floating_point():
            return str(module_path)
    return None


def capture(
    model: nn.Module,
    blocks: Blocks,
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
    descendants: bool = True,
    run: Callable[[], Any] | None = None,
) -> list[BlockCall]:
    """Each block's call in one forward of `model(*args, **kwargs)` (no gradients), with the
    calls of its descendants (`descendants`); `run`: what to run instead (`generate`, whose
    first forward passes the cache generation uses): the first call of each block is kept."""
    found: list[BlockCall] = []
    clock = [0]
    running: dict[int, list[Seen]] = {}  # module id -> its calls in progress
    pairs: list[tuple[nn.Module, Any, Any]] = []
    active = [True]
    for block in blocks.modules:

        def pre(m: nn.Module, a: tuple, k: dict) -> None:
            if len(found) == len(blocks.modules):
                active[0] = False
            if active[0]:
                found.append(BlockCall(a, dict(k)))

        def post(m: nn.Module, a: tuple, out: Any) -> None:
            if active[0]:
                found[-1].output = out

        pairs.append((block, pre, post))
        if not descendants:
            continue
        for path, sub in block.named_modules():
            if not path:
                continue

            def sub_pre(m: nn.Module, a: tuple, k: dict, p: str = path) -> None:
                if not active[0]:
                    return
                first, others = _input_of(a, k)
                seen = Seen(p, first, None, others, clock[0], -1, a, dict(k))
                clock[0] += 1
                found[-1].seen.append(seen)
                running.setdefault(id(m), []).append(seen)

            def sub_post(m: nn.Module, a: tuple, out: Any) -> None:
                seen = running[id(m)].pop() if running.get(id(m)) else None
                if seen is not None:
                    seen.output, seen.returned = _first_tensor(out), out
                    seen.end = clock[0]
                    clock[0] += 1

            pairs.append((sub, sub_pre, sub_post))
    with hooks(pairs), torch.no_grad():
        if run is None:
            model(*args, **kwargs)
        else:
            run()
    if len(found) != len(blocks.modules):
        raise ExtractionError(
            f"{module_name(model)}: {len(found)} block calls in a forward where the stack "
            f"{blocks.path} has {len(blocks.modules)} blocks; the blocks a forward runs must "
            "not depend on the data"
        )
    return found


def model_kwargs(model: nn.Module, kwargs: Mapping[str, Any], cache: bool) -> dict[str, Any]:
    """The model's call with `use_cache` set (when its forward takes it and the caller did not
    say): off for reading (probes call every block several times), on to see the cache."""
    given = dict(kwargs)
    try:
        parameters = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        parameters = {}  # type: ignore[assignment]
    passes_on = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    configured = hasattr(getattr(model, "config", None), "use_cache")
    takes = "use_cache" in parameters or (passes_on and configured)
    if takes and "use_cache" not in given:
        given["use_cache"] = cache
    return given


def _input_of(args: tuple, kwargs: dict) -> tuple[Tensor | None, tuple[Tensor, ...]]:
    """A call's input as extraction reads it (`probe.tensor_input`: the first positional
    argument, else `hidden_states`, else the first tensor keyword) and its other tensors."""
    tensors = [v for v in (*args, *kwargs.values()) if isinstance(v, Tensor)]
    try:
        where = tensor_input(args, kwargs, "")
    except ExtractionError:
        return None, tuple(tensors)
    first = args[where[1]] if where[0] == "arg" else kwargs[where[1]]
    return first, tuple(t for t in tensors if t is not first)


_IDENTIFIER = re.compile(r"[^A-Za-z0-9_]")


def _same(a: Tensor, b: Tensor) -> bool:
    """The same values in the same memory (an output passed on as is, or viewed)."""
    return a is b or (
        a.numel() == b.numel()
        and a.dtype == b.dtype
        and a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
        and a.storage_offset() == b.storage_offset()
    )


def _top(seen: list[Seen]) -> list[Seen]:
    """Calls that no other call encloses, seeing through wrappers (a call during which a module
    outside its own sub-tree runs)."""
    top: list[Seen] = []
    for call in seen:
        parents = [o for o in seen if o.start < call.start and call.end < o.end]
        if all(_wrapper(p, seen) for p in parents):
            top.append(call)
    return [c for c in top if not _wrapper(c, seen)]


def _wrapper(call: Seen, seen: list[Seen]) -> bool:
    inside = [o for o in seen if call.start < o.start and o.end < call.end]
    return any(not o.path.startswith(call.path + ".") for o in inside)


def discover(block: nn.Module, call: BlockCall) -> FieldPaths:
    """The fields of one block from its observed call (see the module's docstring).

    **Returns:** field name -> chain of sub-module paths, in call order; raises
    `ExtractionError` when the block has none.
    """
    state = call.state
    named = dict(block.named_modules())
    chains: list[list[Seen]] = []
    outputs: list[tuple[Tensor, int]] = []  # a call's output and the chain it ends
    read: set[int] = set()  # chains whose end a later call of a chain reads

    def source(x: Tensor) -> int | None:
        return next((k for out, k in reversed(outputs) if _same(x, out)), None)

    for c in _top([s for s in call.seen if s.input is not None]):
        assert c.input is not None
        k = source(c.input)
        if isinstance(named[c.path], (nn.modules.dropout._DropoutNd, nn.Identity)):
            if k is not None and c.output is not None:  # the identity in eval mode
                outputs.append((c.output, k))
            continue
        if any(_stream(o, state) and not _same(o, c.input) for o in c.others):
            if any(True for _ in named[c.path].parameters()):
                _refuse_inner_residual(block, c, named[c.path])
            continue  # a residual module (x + residual): the chain before it ends
        if k is not None:
            read.add(k)
        chains.append([*(chains[k] if k is not None else []), c])
        if c.output is not None:
            outputs.append((c.output, len(chains) - 1))
    fields: FieldPaths = {}
    for k, chain in enumerate(chains):
        start, end = chain[0], chain[-1]
        if k in read or start.input is None or end.output is None:
            continue
        back = end.output.shape == start.input.shape or same_tokens(end.output, start.input)
        if not back or not start.input.is_floating_point():
            continue
        paths = tuple(s.path for s in chain)
        if paths not in fields.values():  # a field called several times (a half step twice)
            fields[_name(chain, named, fields)] = paths
    if not fields:
        raise ExtractionError(
            f"{module_name(block)}: no sub-module call's output reaches the block's output (no "
            "field found among the calls of its sub-modules); valid: a block that adds the "
            "outputs of sub-modules (attention, MLP) to its state, or fields={...} naming them"
        )
    return fields


def _refuse_inner_residual(block: nn.Module, call: Seen, module: nn.Module) -> None:
    raise ExtractionError(
        f"{module_name(block)}: {call.path} ({module_name(module)}) takes the residual stream "
        "as a second tensor argument and adds it itself (a residual inside a branch, or a norm "
        "on the residual sum), so no sub-module's output is a branch the block adds to its "
        "state: no field of an integrator; valid: a block whose own code adds its branches' "
        "outputs to the state (pre-norm), or fields={...} naming chains that do"
    )


def stage_shape_of(block_fields: FieldPaths, call: BlockCall) -> torch.Size:
    """The shape of the first field's stage value (its chain's first input) in the call."""
    first = block_fields[next(iter(block_fields))][0]
    seen = next(s for s in call.seen if s.path == first and s.input is not None)
    assert seen.input is not None
    return seen.input.shape


def stream_axis(state: torch.Size, stage: torch.Size) -> int | None:
    """The axis of the state that holds its streams, when a field's stage value is the state
    without one axis (DeepSeek-V4's (batch, time, streams, d) around (batch, time, d)); None
    when they have the same shape; raises for any other mismatch."""
    if state == stage:
        return None
    for axis in range(len(state) - 1):
        if state[:axis] + state[axis + 1 :] == stage:
            return axis
    raise ExtractionError(
        f"a block's state has shape {tuple(state)} and its first field reads shape "
        f"{tuple(stage)}; valid: a field that reads the state, or one stream of it"
    )


def _stream(value: Tensor, state: Tensor) -> bool:
    """A second argument that is the residual stream: the block's state, or a tensor of its
    shape computed from it."""
    return value is state or (value.shape == state.shape and value.is_floating_point())


def _name(chain: list[Seen], named: Mapping[str, nn.Module], taken: Mapping[str, Any]) -> str:
    weights = [sum(p.numel() for p in named[s.path].parameters()) for s in chain]
    main = max(range(len(chain)), key=lambda i: (weights[i], i))
    base = _IDENTIFIER.sub("_", chain[main].path.split(".")[-1]) or "field"
    if not base[0].isalpha():
        base = "f_" + base
    name, n = base, 2
    while name in taken:
        name, n = f"{base}{n}", n + 1
    return name
