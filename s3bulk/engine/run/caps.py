"""`--max-transfer SIZE` and `--max-duration DURATION`: a run that stops by itself.

When the bytes copied (objects finished plus the parts of those still moving) reach
--max-transfer, or the run has lasted --max-duration, the coordinator stops the run as a first
Ctrl-C does (coordinator.py DRAINING): no new object starts, the transfers in flight finish
(given DRAIN_SECONDS, as after Ctrl-C; then they are cut as a second Ctrl-C cuts them: nothing
lands half-written, a multipart upload stays open in the journal for the resume), and the journal
keeps what is not done, so the same command with --resume goes on. The run ends with its own exit
code (cli/shell.py: 8 for --max-transfer and 10 for --max-duration, rclone's), and one line that
names the cap and how to resume.

The bytes are counted from the workers' reports (every quarter second), so a run moves at least
--max-transfer and a little more: what the transfers in flight carry when the cap is seen.
"""

from __future__ import annotations

import time

from ...model import Counters
from ..plan import Plan

MAX_TRANSFER, MAX_DURATION = "max-transfer", "max-duration"


class Caps:
    """The caps of one run; `reached(counters)` names the first one reached, or None."""

    __slots__ = ("max_transfer", "max_duration", "started")

    def __init__(self, max_transfer: int, max_duration: float, started: float | None = None) -> None:
        self.max_transfer, self.max_duration = max_transfer, max_duration
        self.started = time.monotonic() if started is None else started

    @classmethod
    def of(cls, plan: Plan, started: float) -> "Caps | None":
        """The caps the plan's options set; None without any, and in a dry run (copy's, mv's or
        sync's: what it counts would be copied, it moves nothing) or `check`."""
        options = plan.options
        max_transfer, max_duration = int(options.max_transfer or 0), float(options.max_duration or 0.0)
        if options.dry_run or (plan.sync is not None and plan.sync.dry_run) or (max_transfer <= 0 and max_duration <= 0):
            return None
        return cls(max_transfer, max_duration, started)

    def reached(self, counters: Counters) -> str | None:
        if self.max_transfer > 0 and counters.moved_bytes >= self.max_transfer:
            return MAX_TRANSFER
        if self.max_duration > 0 and time.monotonic() - self.started >= self.max_duration:
            return MAX_DURATION
        return None
