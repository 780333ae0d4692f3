"""The sweep over every causal LM of the installed transformers: each built tiny
(`causal_lm.tiny_causal_lm`), read with no configuration, round-tripped, rewired to its own
method (the original's tokens with the KV cache, greedy and sampled with a seed), to Strang
(the MLP's half steps around the attention, Macaron's layer) and to the explicit midpoint
method on the whole block (two calls of each block per step: the cache is turned off), each
rewired model trained one step and generating, and the Strang model (or, where Strang does not
fit the block, the first block's reading on every block) saved and loaded back.

`sweep_one(model_type)` returns a `SweepRow`: what was read (or why it was refused), and for
each step `"ok"`, `"refused: <the one-line reason>"` (a `ButcherflowError`) or
`"traceback: <exception>"` (anything else: a defect of butcherflow, goal 0). A silent cache
mismatch (a rewired model generating other tokens with the cache than without, or its own
method other tokens than the original) is `"mismatch: ..."` (goal 0).
"""

from __future__ import annotations

import contextlib
import copy
import tempfile
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, final

import torch
from torch import nn

from ..errors import ButcherflowError
from ..extraction import ExtractedModel, extract, load_pretrained
from ..extraction.model.read import describe
from .causal_lm import architectures, tiny_causal_lm, tiny_ids

STEPS = ("own", "strang", "midpoint", "reload")
NEW_TOKENS = 4


@final
@dataclass
class SweepRow:
    """One architecture's sweep: `model_type`, `architecture` (the class), `built` ("ok" or
    why not), `read` ("ok", "refused: ..." or "traceback: ..."), what was read (`integrator`,
    `order`, `depth`, `round_trip`), each of `STEPS`' outcome, and seconds per phase."""

    model_type: str
    architecture: str
    built: str = "ok"
    read: str = ""
    integrator: str = ""
    order: str = ""
    depth: str = ""
    round_trip: float | None = None
    steps: dict[str, str] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def outcomes(self) -> list[str]:
        return [self.read, *self.steps.values()]

    def count(self, kind: str) -> int:
        return sum(o.startswith(kind) for o in self.outcomes)


def _outcome(run: Callable[[], str | None]) -> str:
    try:
        said = run()
    except ButcherflowError as refusal:
        return "refused: " + str(refusal).replace("\n", " ")
    except Exception as error:  # a defect: recorded, never hidden
        return f"traceback: {type(error).__name__}: {str(error).splitlines()[0][:300]}"
    return said or "ok"


def _generate(
    model: nn.Module, ids: torch.Tensor, sample: bool, cache: bool | None
) -> torch.Tensor:
    options: dict[str, Any] = {"max_new_tokens": NEW_TOKENS, "do_sample": sample}
    if cache is not None:
        options["use_cache"] = cache
    if sample:
        options |= {"top_k": 0, "top_p": 1.0, "temperature": 1.0}
    torch.manual_seed(7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        generate: Any = model.generate
        out: torch.Tensor = generate(ids, pad_token_id=0, **options)
    return out


def _same_tokens(new: nn.Module, reference: nn.Module, ids: torch.Tensor) -> str | None:
    for sample in (False, True):
        expected = _generate(reference, ids, sample, None)
        got = _generate(new, ids, sample, None)
        if not torch.equal(got, expected):
            kind = "sampled" if sample else "greedy"
            return f"mismatch: {kind} tokens {got[0].tolist()} against {expected[0].tolist()}"
    return None


def _cache_agrees(model: nn.Module, ids: torch.Tensor) -> str | None:
    """Greedy tokens with the model's default cache setting against none."""
    with_default = _generate(model, ids, False, None)
    without = _generate(model, ids, False, False)
    if not torch.equal(with_default, without):
        return f"mismatch: cached tokens {with_default[0].tolist()} against {without[0].tolist()}"
    return None


def _train_step(model: nn.Module, ids: torch.Tensor) -> None:
    work = copy.deepcopy(model).train()
    optimiser = torch.optim.SGD([p for p in work.parameters() if p.requires_grad], lr=1e-3)
    out = work(input_ids=ids, labels=ids, use_cache=False)
    loss = out.loss
    if loss is None or not torch.isfinite(loss):
        raise RuntimeError(f"training loss {loss}")
    loss.backward()
    optimiser.step()


def _rewired(
    found: ExtractedModel,
    method: str,
    fields: dict[str, str] | None,
    ids: torch.Tensor,
    field: str | None = None,
) -> str | None:
    new = found.rewire(method, fields=fields, field=field)
    _train_step(new, ids)
    return _cache_agrees(new.eval(), ids[:, :3])


def _macaron(found: ExtractedModel) -> dict[str, str]:
    """Strang's A (half steps) on the block's last field, B on its first (attention once)."""
    names = list(found.layers[0].fields)
    if len(names) != 2:
        return {}
    return {"A": names[1], "B": names[0]}


def _reload(found: ExtractedModel, model: nn.Module, ids: torch.Tensor) -> str | None:
    """Strang (Macaron's) saved and loaded back; for a block it does not fit (one field,
    streams), the first block's reading put on every block."""
    try:
        new = found.rewire("strang", fields=_macaron(found) or None)
    except ButcherflowError:
        new = found.rewire(found.layers[0].method)
    with tempfile.TemporaryDirectory() as folder:
        save: Any = new.save_pretrained
        save(folder)
        back = load_pretrained(folder)
        with torch.no_grad():
            a = new(input_ids=ids, use_cache=False).logits
            b = back(input_ids=ids, use_cache=False).logits
    if torch.equal(a, b):
        return None
    differ, own = float((a - b).abs().max()), _plain_reload(model, ids)
    if differ <= own:  # transformers' own reload of the original differs as much
        return f"ok (logits within {differ:.1g}, as transformers' own reload of the original)"
    return f"mismatch: reloaded logits differ by {differ:.2g} (the original's reload: {own:.2g})"


def _plain_reload(model: nn.Module, ids: torch.Tensor) -> float:
    """How far transformers' own save and reload of the original moves its logits (a buffer
    it recomputes on loading, such as some rotary tables, can move them by round-off)."""
    with tempfile.TemporaryDirectory() as folder:
        save: Any = model.save_pretrained
        save(folder)
        load: Any = type(model).from_pretrained  # type: ignore[attr-defined]
        back = load(folder).eval()
        with torch.no_grad():
            a = model(input_ids=ids, use_cache=False).logits
            b = back(input_ids=ids, use_cache=False).logits
    return float((a - b).abs().max())


def sweep_one(model_type: str) -> SweepRow:
    """Build, read, round-trip, rewire, train, generate, save and reload one architecture."""
    row = SweepRow(model_type, architectures()[model_type])
    start = time.perf_counter()
    ids = tiny_ids()
    try:
        model = tiny_causal_lm(model_type)
        with torch.no_grad():
            model(input_ids=ids)  # the tiny configuration runs as transformers builds it
    except Exception as error:  # transformers' own: this architecture does not run tiny
        text = str(error).splitlines()[0][:200] if str(error).strip() else ""
        row.built = f"{type(error).__name__}: {text}" if text else type(error).__name__
        return row
    row.seconds["build"] = time.perf_counter() - start
    found: list[ExtractedModel] = []

    def read() -> str | None:
        reading = extract(model, input_ids=ids)
        assert isinstance(reading, ExtractedModel)
        found.append(reading)
        row.integrator = "; ".join(sorted({describe(layer.method) for layer in reading.layers}))
        row.order = ", ".join(sorted({str(layer.report.order) for layer in reading.layers}))
        row.depth = describe(reading.depth.method)
        row.round_trip = reading.verify()
        if row.round_trip > reading.tolerance:
            return f"mismatch: round trip {row.round_trip:.2g}"
        return None

    start = time.perf_counter()
    row.read = _outcome(read)
    row.seconds["read"] = time.perf_counter() - start
    if not found:
        return row
    reading = found[0]
    plans: dict[str, Callable[[], str | None]] = {
        "own": lambda: _same_tokens(reading.rewire(), model, ids[:, :3]),
        "strang": lambda: _rewired(reading, "strang", _macaron(reading) or None, ids),
        "midpoint": lambda: _rewired(reading, "midpoint", None, ids, field="layer"),
        "reload": lambda: _reload(reading, model, ids),
    }
    for name, plan in plans.items():
        start = time.perf_counter()
        row.steps[name] = _outcome(plan)
        row.seconds[name] = time.perf_counter() - start
    return row


def sweep(model_types: Iterable[str] | None = None) -> list[SweepRow]:
    """`sweep_one` over `model_types` (default: one model type per causal LM class), on one
    CPU thread (a tiny model's kernels are microseconds: threads only add waiting)."""
    chosen = list(model_types) if model_types is not None else one_per_class()
    with one_thread():
        return [sweep_one(t) for t in chosen]


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def one_per_class() -> list[str]:
    """The first model type of each causal LM class transformers lists."""
    seen: dict[str, str] = {}
    for model_type, name in architectures().items():
        seen.setdefault(name, model_type)
    return list(seen.values())


def tally(rows: Sequence[SweepRow]) -> dict[str, int]:
    """The sweep's counts: classes, built tiny, read, refused with a reason (the reading, and
    the steps after it), tracebacks (goal 0) and silent mismatches (goal 0)."""
    built = [r for r in rows if r.built == "ok"]
    return {
        "classes": len(rows),
        "built": len(built),
        "read": sum(r.read == "ok" for r in built),
        "refused": sum(r.read.startswith("refused") for r in built),
        "steps refused": sum(o.startswith("refused") for r in built for o in r.steps.values()),
        "tracebacks": sum(r.count("traceback") for r in built),
        "mismatches": sum(r.count("mismatch") for r in built),
    }


def counts_line(rows: Sequence[SweepRow]) -> str:
    """The counts in one sentence (the docs and the benchmark state it)."""
    c = tally(rows)
    return (
        f"{c['classes']} causal LM classes; {c['built']} build from a tiny configuration and "
        f"run on CPU; {c['read']} read with no configuration, {c['refused']} refused with a "
        f"reason; of their rewirings, reloads and generations {c['steps refused']} refused "
        f"with a reason; tracebacks {c['tracebacks']} (goal 0), silent mismatches "
        f"{c['mismatches']} (goal 0)."
    )


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ").replace("[", "\\[").replace("]", "\\]")


def sweep_table(rows: Sequence[SweepRow]) -> str:
    """The sweep as markdown: one row per architecture that builds (what was read, or why it
    was refused, and each step's outcome), then the classes that do not build tiny."""
    head = ["architecture", "integrator", "order", "depth method", "round trip", *STEPS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        if r.built != "ok":
            continue
        if r.read != "ok":
            cells = [r.architecture, r.read, "—", "—", "—", *("—" for _ in STEPS)]
        else:
            trip = "—" if r.round_trip is None else f"{r.round_trip:.1e}"
            outcomes = [r.steps.get(s, "—") for s in STEPS]
            cells = [r.architecture, r.integrator, r.order, r.depth, trip, *outcomes]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    missing = [f"`{r.architecture}` ({_cell(r.built)})" for r in rows if r.built != "ok"]
    if missing:
        lines += ["", "Not built from a tiny configuration (transformers' own errors): "]
        lines[-1] += "; ".join(missing) + "."
    return "\n".join(lines) + "\n"
