"""Whether (and how) a declaration becomes a layer, decided from the declaration alone.

The analysis stage sits left of the compiler, so it cannot ask the compiler; instead this states
the compiler's rules, and a test checks every catalog entry against what `bf.compile` does.
"""

from __future__ import annotations

from ..methods import ButcherTableau, ContinuousDynamics, LinearMultistep, Method, Splitting


def layer_verdict(method: Method) -> tuple[bool, str]:
    """**Returns:** `(compiles, how or why not)` for `bf.compile` / `bf.compile_stack`."""
    if isinstance(method, ButcherTableau):
        if method.symbols:
            return False, (
                "not compiled as declared: a family with free symbols; compile a member "
                "(tableau.subs({...})) or a concrete tableau with coefficients='learned', "
                "'gated' or 'tanh'"
            )
        if method.is_implicit:
            sweeps = method.iterations or "iterations="
            return (
                True,
                f"bf.compile: one shared field, stages solved by {sweeps} fixed-point sweeps",
            )
        return True, "bf.compile: one shared field, one call per used stage"
    if isinstance(method, Splitting):
        if method.substep is None:
            return False, (
                "not compiled: exact sub-flows have no layer; declare a Runge-Kutta sub-step "
                "(e.g. substep = 'euler')"
            )
        return True, f"bf.compile(fields=...): one field per step, {method.substep.name} sub-steps"
    if isinstance(method, LinearMultistep):
        if not method.is_explicit:
            return False, (
                "not compiled: implicit (beta_k != 0): f at the new state belongs to the next "
                "layer's field"
            )
        if method.symbols:
            return True, (
                "bf.compile_stack with coefficients='learned' and init={...}: the symbols become "
                "per-layer parameters"
            )
        return True, "bf.compile_stack: a stack reusing every earlier state and field output"
    if isinstance(method, ContinuousDynamics):
        if method.grid == "positions":
            return False, (
                "not compiled as a block: position dynamics (grid = 'positions') are a position "
                "encoder; use position = 'floater' in a recipe's [embedding]"
            )
        if method.adaptive:
            return True, (
                f"bf.compile: a continuous-depth block, one field called wherever {method.method} "
                "steps (a data-dependent count); no incremental decoding"
            )
        return True, (
            "bf.compile: a continuous-depth block, one field called at every stage of "
            "every fixed step, each call with its own decoding-cache slot"
        )
    return False, "unknown family"  # pragma: no cover
