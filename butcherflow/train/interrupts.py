"""Ctrl-C (SIGINT) and SIGTERM during training: finish the update, commit, say how to resume.

While `train` runs, `Interrupts` replaces Python's handlers of both signals. Before the loop
starts (the corpus, the vocabulary, the model) a signal raises `Interrupted` at once: nothing
has been trained, so there is nothing to save. Once the loop runs, a signal is only recorded:
the loop finishes the current update, commits `checkpoint_last` at it (atomically, as every
save) and stops; the command then exits 128 + the signal number (130 for SIGINT, 143 for
SIGTERM), as a shell reports a process killed by it. A second signal while that checkpoint is
being written is noted and changes nothing, so it cannot leave half a checkpoint. The previous
handlers are restored when `train` returns.
"""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType, TracebackType

from ..errors import ButcherflowError

SIGNALS = (signal.SIGINT, signal.SIGTERM)


def exit_code(signum: int) -> int:
    """The exit status of a command stopped by signal `signum` (a shell's 128 + N)."""
    return 128 + signum


class Interrupted(ButcherflowError):
    """A signal stopped the command: before the first update (`update` None: nothing was
    trained, nothing is saved), or, raised by a caller that goes on after `train` (an
    experiment), at `update` of the run in `save_dir`, whose `checkpoint_last` is committed."""

    def __init__(self, signum: int, update: int | None = None, save_dir: str = "") -> None:
        self.signum = signum
        name = signal.Signals(signum).name
        super().__init__(
            f"interrupted ({name}) before the first update; nothing was trained: rerun the "
            "same command to start"
            if update is None
            else f"interrupted ({name}) at update {update} of {save_dir}; its checkpoint_last "
            "is committed: rerun the same command to resume"
        )


class Interrupts:
    """The signals received while training (`with Interrupts() as interrupts: ...`).

    - `received`: the first signal's number, or None.
    - `looping`: set by the loop when updates start; from then on a signal is recorded
      instead of raising `Interrupted`.
    - `saving`: what the loop is doing when a second signal arrives (said to the user).
    """

    def __init__(self) -> None:
        self.received: int | None = None
        self.looping = False
        self.saving = "finishing the update and saving a checkpoint"
        self._previous: dict[int, object] = {}

    def __enter__(self) -> Interrupts:
        if threading.current_thread() is threading.main_thread():  # handlers live there only
            for signum in SIGNALS:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if not self.looping:
            raise Interrupted(signum)
        if self.received is None:
            self.received = signum
            return
        print(
            f"{signal.Signals(signum).name} again: still {self.saving}; it is atomic, "
            "so waiting a moment loses nothing",
            file=sys.stderr,
            flush=True,
        )
