"""The order search every family shares: judge the conditions order by order until one fails.

An order is established when every condition up to it is met. The first order with a failing
condition bounds the order for certain; undetermined conditions (a numeric declaration whose
digits cannot decide them, `methods/entries/precision.py`) leave the order open between the two,
and the search looks two orders further for a failure before it reports them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, final

from ..methods.entries.precision import Judgement, Verdict
from .budget import Deadline

Item = TypeVar("Item")


@final
@dataclass
class Search(Generic[Item]):
    """What an order search established.

    - `order`: every condition of order ≤ `order` is met.
    - `upper`: a certain upper bound (a condition of order `upper + 1` fails), None if none found.
    - `failing`, `undetermined`: the judged conditions of order `order + 1` that fail / stay open.
    - `stopped`: why the search ended without a failing condition (`"max_order"`,
      `"time budget"`), or None.
    """

    order: int
    upper: int | None
    failing: list[tuple[Item, Judgement]] = field(default_factory=list)
    undetermined: list[tuple[Item, Judgement]] = field(default_factory=list)
    stopped: str | None = None

    @property
    def decided(self) -> bool:
        return self.upper == self.order

    @property
    def is_lower_bound(self) -> bool:
        return self.upper != self.order


def search_order(
    judged_at: Callable[[int], Sequence[tuple[Item, Judgement]]],
    *,
    limit: int,
    deadline: Deadline,
    bound: int | None = None,
    capped: bool = False,
) -> Search[Item]:
    """Judge the conditions of orders 1, 2, ... up to the first failure, `limit` or `deadline`.

    **Arguments:**

    - `judged_at`: the judged conditions of one order.
    - `limit`: the last order examined.
    - `deadline`: the report's `Deadline`; past it the search reports what it established.
    - `bound`: the highest order the method can have (a barrier): conditions beyond it that look
      met only show that the precision cannot decide them, so they count as undetermined.
    - `capped`: `limit` is the caller's own (`max_order`): stopping there is `"max_order"`.

    **Returns:** a `Search`.
    """
    found: Search[Item] | None = None
    for n in range(1, limit + 1):
        if deadline.passed():
            return _stopped(found, n - 1, "time budget")
        judged = list(judged_at(n))
        failing = [(x, j) for x, j in judged if j.verdict is Verdict.FAILS]
        if bound is not None and n > bound and not failing:
            judged = [(x, _open(j)) for x, j in judged]
        undetermined = [(x, j) for x, j in judged if j.verdict is Verdict.UNDETERMINED]
        if found is None and (failing or undetermined):
            found = Search(n - 1, None, failing, undetermined)
        if failing:
            assert found is not None
            found.upper = n - 1
            return found
        if found is not None and n >= found.order + 3:
            return found  # two orders beyond the first open one, and still no failure
    return _stopped(found, limit, "max_order" if capped else None)


def _open(judgement: Judgement) -> Judgement:
    if judgement.verdict is Verdict.MET:
        return Judgement(Verdict.UNDETERMINED, judgement.residual, judgement.bound)
    return judgement


def _stopped(found: Search[Any] | None, examined: int, why: str | None) -> Search[Any]:
    if found is None:
        return Search(examined, None, stopped=why)
    found.stopped = found.stopped or why
    return found
