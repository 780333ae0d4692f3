"""Probes: run a module with the outputs of its field sub-modules replaced by random values.

A field is a chain of sub-modules named by attribute paths (`("input_layernorm", "self_attn")`):
the chain's first member reads the stage value, its last member returns the field value. PyTorch
forward hooks (public API) do the work: a forward-pre-hook on the first member records the stage
value, a forward hook on the last member records the field value or replaces it by a random
float64 tensor. Sub-modules named `frozen` (those through which per-token coefficients read the
state, e.g. a hyper-connection's input norm) return, in a probe run, the values they returned in
the reference run, so that the coefficients stay those of the module's own input.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, final

import torch
from torch import Tensor, nn
from torch.overrides import TorchFunctionMode

from ..errors import ExtractionError

# Keywords under which a layer gets a KV cache: it grows with every call, so a layer called
# more than once per step with it (extraction's probe runs, a rewired field run twice) breaks
CACHE_KEYWORDS = ("cache", "past_key_value", "past_key_values", "layer_past")

# Where a call's tensor input sits: ("arg", position) or ("kw", keyword).
Where = tuple[str, Any]
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


@final
@dataclass(frozen=True)
class Chain:
    """One field: its name and the attribute paths of its sub-modules, in call order."""

    name: str
    paths: tuple[str, ...]


@final
@dataclass(frozen=True)
class Call:
    """How a member of a chain was called: its arguments, with the stage value at `where`."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    where: Where


@dataclass
class Run:
    """What one run of the module recorded, in the order of the field calls.

    - `stage_inputs`, `values`: per call, the chain's input and its field value (random in a
      probe run).
    - `labels`: per call, the field's name.
    - `output`: the module's output (its first tensor).
    - `trail`: ("start" | "field", field name) and ("module", path) events in call order, to name
      the sub-modules between two field calls when linearity breaks.
    """

    stage_inputs: list[Tensor] = field(default_factory=list)
    values: list[Tensor] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    output: Tensor = field(default_factory=lambda: torch.empty(0))
    trail: list[tuple[str, str]] = field(default_factory=list)
    kinds: list[tuple[str, str]] = field(default_factory=list)  # (path, class) of `trail`
    structure: Any = None  # the module's output as returned (for `with_output`)


def module_name(module: nn.Module) -> str:
    return type(module).__name__


def parse_fields(module: nn.Module, fields: Any) -> tuple[Chain, ...]:
    """The field chains, each path checked to name a sub-module of `module`.

    **Arguments:**

    - `module`: the module extracted.
    - `fields`: field name -> attribute path, or a sequence of paths (a chain).

    **Returns:** one `Chain` per field; raises `ExtractionError` naming a bad name or path.
    """
    who = module_name(module)
    if not isinstance(fields, Mapping) or not fields:
        raise ExtractionError(
            f"{who}: fields must be a non-empty mapping of field name to sub-module path "
            f"(got {fields!r}); e.g. fields={{'attn': ('input_layernorm', 'self_attn')}}"
        )
    chains = []
    for name, spec in fields.items():
        if not isinstance(name, str) or not _NAME.match(name):
            raise ExtractionError(
                f"{who}: field name {name!r} is not an identifier; valid: e.g. 'attn', 'mlp'"
            )
        paths = (spec,) if isinstance(spec, str) else tuple(spec)
        if not paths or not all(isinstance(p, str) for p in paths):
            raise ExtractionError(
                f"{who}: field '{name}' must be a sub-module path or a sequence of paths "
                f"(got {spec!r})"
            )
        for path in paths:
            _submodule(module, path, f"field '{name}'")
        chains.append(Chain(name, paths))
    return tuple(chains)


def _submodule(module: nn.Module, path: str, role: str) -> nn.Module:
    """The sub-module at `path`; `role` (`"field 'attn'"`, `"frozen"`) names it in errors."""
    try:
        found = module.get_submodule(path)
    except AttributeError:
        children = ", ".join(n for n, _ in module.named_children()) or "none"
        raise ExtractionError(
            f"{module_name(module)}: {role} names '{path}', which is not a "
            f"sub-module; valid paths start from its children: {children}"
        ) from None
    if found is module:
        raise ExtractionError(
            f"{module_name(module)}: {role} names the module itself; name a "
            "sub-module (an attention, an MLP, a norm before it)"
        )
    return found


def tensor_input(args: Sequence[Any], kwargs: Mapping[str, Any], who: str) -> Where:
    """Where the tensor a call reads sits: its first positional argument, or (a call by
    keywords only) `hidden_states` (transformers' name), else its first tensor keyword
    argument."""
    if args:
        if not isinstance(args[0], Tensor):
            raise ExtractionError(
                f"{who} is called with {type(args[0]).__name__} as its first input; a field "
                "reads the state as a tensor (name sub-modules called on the hidden states)"
            )
        return ("arg", 0)
    if isinstance(kwargs.get("hidden_states"), Tensor):
        return ("kw", "hidden_states")
    for key, value in kwargs.items():
        if isinstance(value, Tensor):
            return ("kw", key)
    raise ExtractionError(
        f"{who} is called without a tensor input; a field reads the state as a tensor"
    )


def read(args: Sequence[Any], kwargs: Mapping[str, Any], where: Where) -> Tensor:
    value = args[where[1]] if where[0] == "arg" else kwargs[where[1]]
    assert isinstance(value, Tensor)
    return value


def replace_input(
    args: Sequence[Any], kwargs: Mapping[str, Any], where: Where, value: Tensor
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The call's arguments with `value` at `where`."""
    new_args, new_kwargs = list(args), dict(kwargs)
    if where[0] == "arg":
        new_args[where[1]] = value
    else:
        new_kwargs[where[1]] = value
    return tuple(new_args), new_kwargs


def first_output(out: Any, who: str) -> Tensor:
    """A module's output tensor: the output itself, or the first entry of a tuple or list."""
    if isinstance(out, Tensor):
        return out
    if isinstance(out, (tuple, list)) and out and isinstance(out[0], Tensor):
        return out[0]
    if isinstance(out, Mapping) and out and isinstance(next(iter(out.values())), Tensor):
        return next(iter(out.values()))  # a transformers ModelOutput: its first field
    raise ExtractionError(
        f"{who} returns {type(out).__name__}; a field's last sub-module must return a tensor "
        "(or a tuple whose first entry is one)"
    )


def replace_output(out: Any, value: Tensor) -> Any:
    """The output with its first tensor replaced by `value` (same structure)."""
    if isinstance(out, Tensor):
        return value
    if isinstance(out, Mapping):
        first = next(iter(out))
        return type(out)(**{**out, first: value})
    return type(out)((value, *out[1:]))


def with_output(template: Any, value: Tensor) -> Any:
    """`value` in the structure of a module's output `template` (a tensor, or a tuple whose
    other entries become None: a rewired layer has no attention weights of its own)."""
    if isinstance(template, Tensor):
        return value
    if isinstance(template, Mapping):
        first = next(iter(template))
        return type(template)(**{first: value})
    return type(template)((value, *([None] * (len(template) - 1))))


@final
class Probe:
    """Runs a (float64) module with hooks on its field chains and frozen sub-modules.

    **Arguments:**

    - `module`: the module (extraction runs on a float64 copy of the user's module).
    - `chains`: the fields.
    - `frozen`: paths of sub-modules replayed from the reference run in probe runs.
    - `seed`: of the random field values.
    """

    def __init__(
        self, module: nn.Module, chains: Sequence[Chain], frozen: Sequence[str], seed: int
    ) -> None:
        self.module, self.chains = module, tuple(chains)
        if isinstance(frozen, str):
            frozen = (frozen,)
        self.frozen = {path: _submodule(module, path, "frozen") for path in frozen}
        self.generator = torch.Generator().manual_seed(seed)
        self.replay: dict[str, list[Any]] = {path: [] for path in self.frozen}
        self.templates: dict[str, list[Call]] = {}  # per field, each member's first call
        members = {p for c in chains for p in c.paths}
        # dropout is the identity in eval mode: never where linearity breaks
        self.watched = [
            (name, m)
            for name, m in module.named_modules()
            if name
            and not isinstance(m, nn.modules.dropout._DropoutNd)
            and not any(name == p or name.startswith(p + ".") for p in members)
        ]

    def run(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], probing: bool, reference: bool
    ) -> Run:
        """One forward of the module. `probing`: field values become random; `reference`:
        record the members' calls (templates) and the frozen sub-modules' outputs."""
        run = Run()
        pending: dict[str, list[Tensor]] = {c.name: [] for c in self.chains}
        handles = []
        try:
            for chain in self.chains:
                handles += self._hook_chain(chain, run, pending, probing, reference)
            for path, module in self.frozen.items():
                handles.append(module.register_forward_hook(self._freezer(path, reference)))
            for name, module in self.watched:
                handles.append(module.register_forward_hook(_trail(run, name)))
                run.kinds.append((name, module_name(module)))
            out = self.module(*args, **kwargs)
        finally:
            for handle in handles:
                handle.remove()
        run.output = first_output(out, module_name(self.module)).detach().clone()
        run.structure = out if not isinstance(out, Tensor) else run.output
        for name, left in pending.items():
            if left:
                chain = next(c for c in self.chains if c.name == name)
                raise ExtractionError(
                    f"{module_name(self.module)}: field '{name}': '{chain.paths[0]}' was called "
                    f"{len(left)} more time(s) than '{chain.paths[-1]}'; a chain starts where the "
                    "stage value enters and ends where the field value leaves, once per call"
                )
        return run

    def _hook_chain(
        self, chain: Chain, run: Run, pending: dict[str, list[Tensor]], probing: bool, ref: bool
    ) -> list[Any]:
        members = [self.module.get_submodule(p) for p in chain.paths]
        who = f"{module_name(self.module)}.{chain.paths[0]} (field '{chain.name}')"
        calls: list[Call] = []
        if ref:
            self.templates[chain.name] = calls

        def start(module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            where = tensor_input(args, kwargs, who)
            pending[chain.name].append(read(args, kwargs, where).detach().clone())
            run.trail.append(("start", chain.name))

        def record(index: int) -> Any:
            def hook(module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
                if len(calls) == index:
                    place = f"{module_name(self.module)}.{chain.paths[index]}"
                    calls.append(Call(args, dict(kwargs), tensor_input(args, kwargs, place)))

            return hook

        def finish(module: nn.Module, args: Any, kwargs: Any, out: Any) -> Any:
            value = first_output(out, f"{module_name(self.module)}.{chain.paths[-1]}")
            if not pending[chain.name]:
                raise ExtractionError(
                    f"{module_name(self.module)}: field '{chain.name}': '{chain.paths[-1]}' "
                    f"returned before '{chain.paths[0]}' read a stage value; list the chain in "
                    "call order"
                )
            stage = pending[chain.name].pop(0)
            if stage.dim() == value.dim() + 1 and stage.shape[1:] == value.shape:
                raise ExtractionError(
                    f"{module_name(self.module)}: field '{chain.name}' reads {stage.shape[0]} "
                    f"stage values at once (shape {tuple(stage.shape)}) and returns one of shape "
                    f"{tuple(value.shape)}: a branch whose inputs (queries, keys, values) are "
                    "different states, as x-transformers' integrate_layers and "
                    "qkv_receive_diff_residuals feed its attentions, is a field of several "
                    "states, which no declaration holds; valid: a field called on one state"
                )
            if value.shape != stage.shape:
                raise ExtractionError(
                    f"{module_name(self.module)}: field '{chain.name}' ends in "
                    f"'{chain.paths[-1]}', which returns shape {tuple(value.shape)} for a stage "
                    f"value of shape {tuple(stage.shape)}; end the chain where the branch is back "
                    "at the stage value's shape (e.g. after its output projection)"
                )
            run.stage_inputs.append(stage)
            run.labels.append(chain.name)
            run.trail.append(("field", chain.name))
            if not probing:
                run.values.append(value.detach().clone())
                return None
            noise = torch.randn(value.shape, dtype=torch.float64, generator=self.generator)
            run.values.append(noise)
            return replace_output(out, noise.clone())  # the module may update it in place

        handles = [members[0].register_forward_pre_hook(start, with_kwargs=True)]
        if ref:
            handles += [
                m.register_forward_pre_hook(record(i), with_kwargs=True)
                for i, m in enumerate(members)
            ]
        handles.append(members[-1].register_forward_hook(finish, with_kwargs=True))
        return handles

    def _freezer(self, path: str, reference: bool) -> Any:
        seen = self.replay[path]
        count = [0]

        def hook(module: nn.Module, args: Any, out: Any) -> Any:
            if reference:
                seen.append(_detached(out))
                return None
            if count[0] >= len(seen):
                raise ExtractionError(
                    f"{module_name(self.module)}: frozen sub-module '{path}' was called more "
                    "often than in the reference run"
                )
            count[0] += 1
            return _detached(seen[count[0] - 1])

        return hook


def _trail(run: Run, name: str) -> Any:
    def hook(module: nn.Module, args: Any, out: Any) -> None:
        run.trail.append(("module", name))

    return hook


def _detached(out: Any) -> Any:
    if isinstance(out, Tensor):
        return out.detach().clone()
    if isinstance(out, (tuple, list)):
        return type(out)(_detached(x) for x in out)
    return out


SINGLE_THREAD_NUMEL = 1 << 20  # CPU states up to this size are probed on one thread


@contextlib.contextmanager
def small_on_one_thread(state: Tensor | None) -> Iterator[None]:
    """Run a small CPU computation on one intra-op thread, then restore the setting: on small
    float64 tensors threading costs more than the work (a (2, 5, 16) float64 LayerNorm: 6 µs
    on one thread, milliseconds on two threads of a loaded machine)."""
    threads = torch.get_num_threads()
    small = (
        state is not None and state.device.type == "cpu" and state.numel() <= SINGLE_THREAD_NUMEL
    )
    if small:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        if small:
            torch.set_num_threads(threads)


def to_float64(value: Any) -> Any:
    """Floating tensors (in tuples, lists and dicts too) as float64; everything else as is."""
    if isinstance(value, Tensor):
        return value.detach().to(torch.float64) if value.is_floating_point() else value
    if isinstance(value, tuple):
        return tuple(to_float64(x) for x in value)
    if isinstance(value, list):
        return [to_float64(x) for x in value]
    if isinstance(value, dict):
        return {k: to_float64(x) for k, x in value.items()}
    return value


class _FloatTypes(TorchFunctionMode):
    """Records the floating-point dtypes of the tensors torch functions compute from tensors
    (factories such as `torch.empty` take their dtype from defaults, not from the data)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[torch.dtype] = set()

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        inputs = [*args, *(kwargs or {}).values()]
        if any(isinstance(a, Tensor) for a in inputs):  # computed from tensors, not a factory
            items = list(out) if isinstance(out, (tuple, list)) else [out]
            self.seen.update(
                t.dtype for t in items if isinstance(t, Tensor) and t.is_floating_point()
            )
        return out


def computes_below_float64(call: Callable[[], Any]) -> bool:
    """Whether `call()` (a forward on float64 inputs and weights) produces a floating-point
    tensor narrower than float64 anywhere (a `.float()` cast, as mHC's mixing)."""
    recorder = _FloatTypes()
    with torch.no_grad(), recorder:
        call()
    return any(t.itemsize < 8 for t in recorder.seen)
