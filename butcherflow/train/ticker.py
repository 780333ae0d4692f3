"""What a run shows while it trains: progress and an ETA toward the stop rule that will end it.

On a terminal, one tqdm bar for the whole run (not per epoch): `update / total` of the stop rule
that comes first (`--max-update`, or `--max-epoch` counted in this epoch's updates), its ETA,
and what is left of `--time-budget`. When stderr is not a terminal (nohup, CI, `2> log`), a
plain line every `--log-interval` updates instead of carriage-return redraws.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO, final

from tqdm import tqdm

from .config import TrainConfig
from .resume import Progress


def updates_to_stop(
    config: TrainConfig, progress: Progress, left_in_epoch: int, per_epoch: int
) -> int | None:
    """The update at which the first update-counted stop rule ends the run, or None (only
    `--time-budget`, `--patience` or nothing bounds it).

    **Arguments:**

    - `left_in_epoch`: updates left in the epoch being trained; `per_epoch`: updates per epoch.
    """
    ends = []
    if config.max_update:
        ends.append(config.max_update)
    if config.max_epoch:
        later = max(config.max_epoch - progress.epoch, 0) * per_epoch
        ends.append(progress.update + left_in_epoch + later)
    return min(ends) if ends else None


def duration(seconds: float) -> str:
    """`3h05m`, `4m10s`, `12s`."""
    seconds = max(int(seconds), 0)
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{seconds:02d}s" if minutes else f"{seconds}s"


@final
class Ticker:
    """The progress of one `train` call (main process only; `shown=False` shows nothing).

    **Arguments:**

    - `config`, `progress`: the run's settings and its progress (read at every `tick`).
    - `started`: `time.monotonic()` when the command started (for `--time-budget`).
    - `shown`: whether this process shows anything (the main process).
    - `stream`: where it shows it (default: stderr); a bar when it is a terminal.
    """

    def __init__(
        self,
        config: TrainConfig,
        progress: Progress,
        started: float,
        shown: bool,
        stream: TextIO | None = None,
    ) -> None:
        self.config, self.progress, self.started = config, progress, started
        self.stream = sys.stderr if stream is None else stream
        self.shown = shown
        self.terminal = self.stream.isatty()
        self.began, self.first = time.monotonic(), progress.update
        self.total: int | None = None
        self.written = -1  # the update of the last plain line
        self.bar = tqdm(
            initial=progress.update,
            unit="update",
            file=self.stream,
            disable=not (shown and self.terminal),
            dynamic_ncols=True,
            leave=False,
        )

    def epoch(self, left_in_epoch: int, per_epoch: int) -> None:
        """A new epoch starts with `left_in_epoch` of its `per_epoch` updates to do."""
        self.total = updates_to_stop(self.config, self.progress, left_in_epoch, per_epoch)
        self.bar.total = self.total
        self.bar.set_description(f"epoch {self.progress.epoch:03d}")
        self.bar.refresh()

    def eta(self) -> float | None:
        """Seconds until the stop rule ends the run, at this command's pace so far."""
        done = self.progress.update - self.first
        left = []
        if self.total is not None and done > 0:
            left.append(
                (self.total - self.progress.update) * (time.monotonic() - self.began) / done
            )
        if self.config.time_budget is not None:
            left.append(self.config.time_budget - (time.monotonic() - self.started))
        return min(left) if left else None

    def tick(self, epoch: int, loss: float, lr: float, tokens_per_s: float) -> None:
        """Update `progress.update` of `epoch` done: redraw the bar, or write a line every
        `log_interval` updates."""
        eta = self.eta()
        shown = {"loss": f"{loss:.3f}", "lr": f"{lr:.2e}", "tok_s": f"{tokens_per_s:,.0f}"}
        if self.config.time_budget is not None:
            spent = time.monotonic() - self.started
            shown["budget_left"] = duration(self.config.time_budget - spent)
        update = self.progress.update
        self.bar.update(update - self.bar.n)  # a skipped step (non-finite loss) moves nothing
        self.bar.set_postfix(shown, refresh=False)
        due = update % self.config.log_interval == 0 and update != self.written
        if self.shown and not self.terminal and due:
            self.written = update
            of = f"/{self.total}" if self.total is not None else ""
            parts = [f"epoch {epoch:03d}", f"update {update}{of}"]
            parts += [f"{key} {value}" for key, value in shown.items()]
            parts.append(f"eta {duration(eta)}" if eta is not None else "no stop rule")
            print(" | ".join(parts), file=self.stream, flush=True)

    def close(self) -> None:
        self.bar.close()
