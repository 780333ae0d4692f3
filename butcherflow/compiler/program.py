"""A small builder of torch.fx graphs: the compiler symbolically executes a method through it.

Every field call becomes one `call_module` node and every linear combination a chain of
`torch.add(acc, k, alpha=c)` nodes (one fused axpy per term), so the generated forward reads
like the method itself. Terms with a zero coefficient are never emitted, stages nobody uses are
never computed, and torch.fx's code generator releases each stage tensor (`k1 = None`) right
after its last use, so memory does not grow with unused stages.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any, final

import sympy
import torch
import torch.fx as fx
from torch import Tensor, nn

from ..errors import DeclarationError
from ..nn import Context, CrossAttentionSublayer, DecodeCache, Field, MultiheadAttention

Coefficient = float | fx.Node  # a constant folded into the graph, or a node (learned, gated)


@final
class ProgramBuilder:
    """Builds the graph of `forward(y, ctx)` for one block.

    **Arguments:**

    - `root`: the module that owns every submodule the graph calls (fields, gates, parameters).
    """

    def __init__(self, root: nn.Module) -> None:
        self.root = root
        self.graph = fx.Graph()
        self.y = self.graph.placeholder("y")
        self.ctx = self.graph.placeholder("ctx")
        self.slots = 0

    def call_field(self, target: str, value: fx.Node, name: str) -> fx.Node:
        """K = self.<target>(value, ctx, slot): each call gets its own decoding-cache slot."""
        slot = self.slots
        self.slots += 1
        return self.graph.create_node("call_module", target, (value, self.ctx, slot), name=name)

    def call_module(self, target: str, args: tuple[Any, ...], name: str) -> fx.Node:
        return self.graph.create_node("call_module", target, args, name=name)

    def attribute(self, target: str, name: str) -> fx.Node:
        return self.graph.create_node("get_attr", target, (), name=name)

    def item(self, value: fx.Node, index: Any, name: str) -> fx.Node:
        return self.graph.create_node("call_function", operator.getitem, (value, index), name=name)

    def combine(
        self, base: fx.Node | None, terms: Sequence[tuple[Coefficient, fx.Node]], name: str
    ) -> fx.Node:
        """base + Σ c·k, skipping zero constants and folding repeated stages (a fixed-point
        sweep starting from K⁽⁰⁾ = F(y) reads the same node several times); the last node
        gets `name`."""
        folded: dict[fx.Node, float] = {}
        others: list[tuple[Coefficient, fx.Node]] = []
        for c, k in terms:
            if isinstance(c, float):
                folded[k] = folded.get(k, 0.0) + c
            else:
                others.append((c, k))
        merged = [(c, k) for k, c in folded.items()] + others
        live = [(c, k) for c, k in merged if not (isinstance(c, float) and c == 0.0)]
        if base is None:
            if not live:
                raise ValueError("empty combination")  # pragma: no cover - callers guard it
            (c, k), live = live[0], live[1:]
            acc = k if c == 1.0 else self._scale(c, k, name if not live else "scaled")
        else:
            acc = base
        for index, (c, k) in enumerate(live):
            last = index == len(live) - 1
            node_name = name if last else f"{name}_part"
            if isinstance(c, float):
                args: tuple[Any, ...] = (acc, k)
                kwargs: dict[str, Any] = {} if c == 1.0 else {"alpha": c}
                acc = self.graph.create_node(
                    "call_function", torch.add, args, kwargs, name=node_name
                )
            else:
                term = self._scale(c, k, "weighted")
                acc = self.graph.create_node(
                    "call_function", operator.add, (acc, term), name=node_name
                )
        return acc

    def expression(
        self,
        expr: sympy.Expr,
        value_of: Callable[[sympy.Symbol], fx.Node],
        name: str | None = None,
    ) -> Coefficient:
        """A coefficient that is an expression in a declaration's parameters, as fx arithmetic
        on their nodes (`value_of(symbol)`): `1 - g` becomes `b2 = 1.0 - g`. Constants fold
        to floats; +, −, × and integer powers are what parameters combine by."""
        if not expr.free_symbols:
            return float(expr)
        if isinstance(expr, sympy.Symbol):
            return value_of(expr)
        if isinstance(expr, sympy.Add):
            constant, terms = expr.as_coeff_add()
            acc: Any = None if constant == 0 else float(constant)
            for k, term in enumerate(terms):
                negative = term.could_extract_minus_sign()
                value = self.expression(-term if negative else term, value_of)
                last = name if k == len(terms) - 1 else None
                if acc is None:
                    acc = self._call(operator.neg, (value,), last) if negative else value
                else:
                    acc = self._call(operator.sub if negative else operator.add, (acc, value), last)
            return acc
        if isinstance(expr, sympy.Mul):
            coefficient, factors = expr.as_coeff_mul()
            acc = None
            for k, factor in enumerate(factors):
                value = self.expression(factor, value_of)
                last = name if k == len(factors) - 1 and coefficient == 1 else None
                acc = value if acc is None else self._call(operator.mul, (acc, value), last)
            return (
                acc
                if coefficient == 1
                else self._call(operator.mul, (float(coefficient), acc), name)
            )
        if isinstance(expr, sympy.Pow) and expr.exp.is_Integer:
            base = self.expression(expr.base, value_of)
            return self._call(operator.pow, (base, int(expr.exp)), name)
        raise DeclarationError(
            f"cannot compile the coefficient {expr}",
            key="parameters",
            value=str(expr),
            valid="coefficients combine their parameters by +, -, * and integer powers",
        )

    def _call(self, function: Any, args: tuple[Any, ...], name: str | None) -> fx.Node:
        return self.graph.create_node("call_function", function, args, name=name)

    def _scale(self, c: Coefficient, k: fx.Node, name: str) -> fx.Node:
        return self.graph.create_node("call_function", operator.mul, (c, k), name=name)

    def finish(self, output: fx.Node, class_name: str) -> fx.GraphModule:
        self.graph.output(output)
        module = fx.GraphModule(self.root, self.graph, class_name=class_name)
        module.graph.eliminate_dead_code()
        module.graph.lint()
        module.recompile()
        return module


def _linear_flops(module: nn.Module) -> int:
    return sum(
        2 * m.in_features * m.out_features for m in module.modules() if isinstance(m, nn.Linear)
    )


def call_flops(module: nn.Module, length: int, memory_length: int) -> tuple[int, int]:
    """Forward FLOPs of one call of `module`, per token of its input and per token of the
    encoder memory.

    Per input token: 2 per multiply-add of its linear layers, except the key/value projections
    of cross-attention, plus attention's quadratic part, 4·d_model per key (the scores QKᵀ and
    the weighted sum of the values, 2·d_model each): `memory_length` keys for cross-attention,
    `length` for any other attention. A causal query is counted with every key, as SDPA's dense
    kernels compute them (the convention of PaLM's and nanoGPT's MFU). Per memory token: the
    key/value projections of every cross-attention (2·d_model·2·d_model each), which a call
    without a `DecodeCache` computes afresh.
    """
    cross = [m.attention for m in module.modules() if isinstance(m, CrossAttentionSublayer)]
    ids = {id(m) for m in cross}
    per_token = _linear_flops(module) + sum(
        4 * (memory_length if id(m) in ids else length) * m.d_model
        for m in module.modules()
        if isinstance(m, MultiheadAttention)
    )
    per_memory = sum(2 * m.d_model * 2 * m.d_model for m in cross)
    return per_token - per_memory, per_memory


class CompiledBlock(nn.Module):
    """A method compiled into a layer: `y_next = block(y, ...)`.

    Subclasses are final and set `method`, `program` (the fx GraphModule), `causal`,
    `field_calls` and `policy`; `incremental` is False where a `DecodeCache` cannot be used.

    **Attributes:**

    - `code`: the generated forward, readable Python.
    - `num_parameters`: trainable parameters of the block (shared fields counted once).
    """

    method: Any
    program: fx.GraphModule
    causal: bool
    policy: str
    incremental: bool = True  # decodes token by token with a DecodeCache (see ContinuousBlock)

    @property
    def field_calls(self) -> int | None:
        """Field evaluations per forward, counted in the final graph (after dead-code removal);
        None where the count is chosen at run time (adaptive ODE solvers)."""
        return sum(
            1
            for node in self.program.graph.nodes
            if node.op == "call_module"
            and isinstance(self.program.get_submodule(str(node.target)), Field)
        )

    @property
    def code(self) -> str:
        """The generated forward, as Python source (see `tidy_code`)."""
        return tidy_code(self.program.code)

    @property
    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters() if p.requires_grad)

    def flops(self, length: int, memory_length: int) -> tuple[int, int] | None:
        """Estimated forward FLOPs, per token of the input at sequence `length` and per token
        of an encoder memory of `memory_length` tokens (cross-attention's key/value
        projections): every module call's `call_flops` and one axpy (2·d_model) per term of
        every linear combination; None where the number of field calls is chosen at run time
        (adaptive ODE solvers). Norms, activations and softmax are not counted."""
        per_token = per_memory = 0
        for node in self.program.graph.nodes:
            if node.op == "call_module":
                module = self.program.get_submodule(str(node.target))
                token, memory = call_flops(module, length, memory_length)
                per_token, per_memory = per_token + token, per_memory + memory
            elif node.op == "call_function" and node.target in (torch.add, operator.add):
                per_token += 2 * self.width()
        return per_token, per_memory

    def width(self) -> int:
        """d_model, known from the first call when the field has no parameters."""
        if self.d_model is None:
            raise DeclarationError(
                "the width of a field without parameters is read from the block's first input",
                key="d_model",
                value=None,
                valid="call the block once, or compile it with d_model=...",
            )
        return self.d_model

    def flops_per_token(self, length: int = 64) -> int | None:
        """Estimated forward FLOPs per token at sequence `length`, a decoder's memory of the
        same length (`flops`, both parts)."""
        counts = self.flops(length, length)
        return None if counts is None else sum(counts)

    # None until the first call for a field without parameters (`field_width`)
    d_model: int | None

    def forward(
        self,
        x: Tensor,
        key_padding_mask: Tensor | None = None,
        memory: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        cache: DecodeCache | None = None,
        *,
        ctx: Context | None = None,
        check: bool = True,
    ) -> Tensor:
        """Advance the state by one step of the method.

        **Arguments:**

        - `x`: `(batch, length, d_model)` (when decoding with a cache: the new tokens only).
        - `key_padding_mask`: `(batch, length)` bool, True at padding.
        - `memory`, `memory_key_padding_mask`: the encoder output for cross-attention fields.
        - `cache`: a `DecodeCache` for incremental decoding (decoder blocks).
        - `ctx`: a prepared `Context` (models pass one for all blocks); overrides the above.
        - `check`: refuse non-finite inputs with a clear error (one reduction per call).

        **Returns:** `(batch, length, d_model)`.
        """
        if check and not torch.compiler.is_compiling():
            for name, value in (("x", x), ("memory", memory)):
                if value is not None and not bool(torch.isfinite(value).all()):
                    raise ValueError(
                        f"{type(self).__name__}({self.method.name}): input {name} contains "
                        "NaN or inf"
                    )
        if ctx is None:
            ctx = Context(
                key_padding_mask=key_padding_mask,
                causal=self.causal,
                memory=memory,
                memory_key_padding_mask=memory_key_padding_mask,
                cache=cache,
            )
        if self.d_model is None and not torch.compiler.is_compiling():
            self.d_model = int(x.shape[-1])
        out: Tensor = self.program(x, ctx)
        return out


def tidy_code(code: str) -> str:
    """Generated source as a reader gets it: no blank lines before the first line (torch.fx
    starts its code with several), no trailing spaces, one newline at the end."""
    lines = [line.rstrip() for line in code.splitlines()]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n"


def class_name(method_name: str) -> str:
    """The generated module's class name: `dormand-prince-5` -> `DormandPrince5Block`."""
    return "".join(part.capitalize() for part in method_name.split("-")) + "Block"


def field_width(
    module: nn.Module, d_model: int | None = None, needed_for: str | None = None
) -> int | None:
    """The state width d_model of a block built around `module`.

    **Arguments:**

    - `module`: the (first) field.
    - `d_model`: the width the caller gave, if any.
    - `needed_for`: why the block needs the width while it is built (weights that are
      d_model wide), or None when it can wait for the first call.

    **Returns:** `d_model` when given, else the last dimension of the module's first
    parameter; for a field without parameters, None (the block reads the width from its first
    input), unless `needed_for` says why it cannot wait, which is an error.
    """
    if d_model is not None:
        return d_model
    for p in module.parameters():
        return int(p.shape[-1]) if p.dim() else 1
    if needed_for is None:
        return None
    raise DeclarationError(
        f"a field without parameters does not show its width, and {needed_for} before the "
        "first call",
        key="d_model",
        value=None,
        valid="pass d_model=... (the width of y)",
    )


def exact_parameter(values: list[float]) -> nn.Parameter:
    """A trainable vector of coefficients kept in float64, so that it starts exactly at the
    declared values whatever the model's dtype (0-dim entries do not promote activations)."""
    return nn.Parameter(torch.tensor(values, dtype=torch.float64))


# The largest h: h·aᵢⱼ is a float32 factor of the layer's additions (torch.add's alpha), which
# overflows past float32's 3.4e38; √ of it leaves coefficients up to 1.8e19 representable.
MAX_STEP_SIZE = float(torch.finfo(torch.float32).max) ** 0.5


def check_step_size(step: Any) -> None:
    """h must be a positive number up to `MAX_STEP_SIZE`, or 'learned'."""
    ok = step == "learned" or (
        isinstance(step, (int, float)) and not isinstance(step, bool) and 0 < step <= MAX_STEP_SIZE
    )
    require(
        ok,
        f"step_size must be a positive number up to {MAX_STEP_SIZE:.3g} or 'learned'",
        key="step_size",
        value=step,
        valid="e.g. step_size=1.0 or step_size='learned'",
    )


def step_coefficient(holder: nn.Module, builder: ProgramBuilder, step: float | str) -> Coefficient:
    """h as a program reads it (checked): the float, or a float64 parameter `h` from 1."""
    check_step_size(step)
    if step == "learned":
        holder.h = exact_parameter([1.0])
        return builder.item(builder.attribute("h", name="h_vector"), 0, name="h")
    return float(step)


def require(condition: bool, problem: str, *, key: str, value: Any, valid: str) -> None:
    """Raise a `DeclarationError` for a bad compile option unless `condition` holds."""
    if not condition:
        raise DeclarationError(problem, key=key, value=value, valid=valid)
