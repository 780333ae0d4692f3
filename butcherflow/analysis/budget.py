"""The time budget of a report: one `Deadline` shared by every row of it.

`bf.check(..., time_budget=)` (and `--time-budget`) bounds the whole report, not only the order
search: each family's report makes one `Deadline` when it starts and hands the same object to
every stage that can take long (the order search, root isolation for the stability intervals,
the enclosures of a numeric declaration). Those stages check it cooperatively, between units of
work small enough to take well under a second, and raise `OutOfTime` past it; the row being
computed then says `NOT_DECIDED` with what was established, and the report returns.
"""

from __future__ import annotations

import math
import numbers
import time
from dataclasses import dataclass
from typing import Any, final

from ..errors import DeclarationError

DEFAULT_TIME_BUDGET = 300.0  # seconds a whole report may take before it says what it has
NOT_DECIDED = "not decided within the time budget"


def check_time_budget(seconds: Any) -> float:
    """A report's `time_budget`: seconds >= 0 (0 decides only what needs no search; `math.inf`
    sets no deadline)."""
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, numbers.Real)
        or not float(seconds) >= 0
    ):
        raise DeclarationError(
            "the time budget must be a number of seconds >= 0",
            key="time_budget",
            value=seconds,
            valid=f"e.g. {DEFAULT_TIME_BUDGET:g} (the default), or math.inf for no deadline",
        )
    return float(seconds)


class OutOfTime(Exception):
    """Raised by `Deadline.check` past the deadline; caught by the report row that was being
    computed (never reaches the user: the row says `NOT_DECIDED` instead)."""


@final
@dataclass(frozen=True)
class Deadline:
    """A `time.monotonic()` instant past which a report stops computing.

    **Arguments:**

    - `at`: the instant (`math.inf`: never).
    - `seconds`: the budget it was made from, for the report's notes.
    """

    at: float
    seconds: float

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        """The deadline `seconds` from now (a negative or zero budget has passed already)."""
        return cls(time.monotonic() + seconds, seconds)

    @classmethod
    def never(cls) -> Deadline:
        """No deadline: for analyses run outside a report (tests, one-off calls)."""
        return cls(math.inf, math.inf)

    def left(self) -> float:
        """Seconds until the deadline (0 once it has passed; inf for `never`)."""
        return max(self.at - time.monotonic(), 0.0)

    def passed(self) -> bool:
        """True once the instant is behind us."""
        return time.monotonic() > self.at

    def check(self, ahead: float = 0.0) -> None:
        """Raise `OutOfTime` once the deadline has passed, or when a step expected to take
        `ahead` seconds (a step that cannot be interrupted: a call into flint) would end
        past it."""
        if time.monotonic() + ahead > self.at:
            raise OutOfTime(f"the time budget of {self.seconds:g} s is spent")

    @property
    def note(self) -> str:
        """What the report says about rows it did not decide."""
        return (
            f"rows marked '{NOT_DECIDED}' were not decided before the budget of "
            f"{self.seconds:g} s was spent; `time_budget=` or --time-budget gives them longer."
        )
