"""What a change feed hands the watcher: the keys that changed, never the work itself.

A feed (filesystem events for a local directory, an SQS queue of S3 event notifications, or a
re-listing at an interval) only narrows what the next sync must compare: the watcher turns a batch
of `Change`s into the keys (a work unit narrowed to them) and compares each against SRC's *current*
state and DST, as a sync does, so a late, repeated or reordered event can never undo a newer
change. A feed's message is acknowledged (`ChangeFeed.ack`) only after its change has landed at DST:
delivery is at least once, the action idempotent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

__all__ = ["Change", "ChangeFeed"]


@dataclass(frozen=True, slots=True)
class Change:
    """One reported change of one key, relative to SRC's root (the prefix or directory watched).

    `kind` says what the event claimed ("put": created or overwritten; "delete": removed); the
    watcher still checks SRC before acting. `sequencer` is S3's per-key event order (hex, compare
    after left-padding to equal length; None where the feed has none). `etag`, `version_id` and
    `size` are what the event reported, when it did. `token` is the feed's own handle for
    acknowledging the message the change came in (several changes may share one)."""

    key: str
    kind: Literal["put", "delete"]
    sequencer: str | None = None
    etag: str | None = None
    version_id: str | None = None
    size: int | None = None
    token: Any = None


class ChangeFeed(Protocol):
    """A bounded source of changes. `next_batch` returns at most `max_changes` (an empty list after
    `timeout` seconds without any); `ack` tells the feed these changes have landed (an SQS feed
    deletes their messages then, not before); `depth` is how many changes wait at the source, when
    it can say (an SQS queue's ApproximateNumberOfMessages), for the live display and metrics."""

    async def next_batch(self, max_changes: int, timeout: float) -> list[Change]: ...

    async def ack(self, changes: list[Change]) -> None: ...

    async def depth(self) -> int | None: ...

    async def release(self, changes: list[Change]) -> None:
        """Hand these changes out again (they did not land): in the next batch, not lost."""
        ...

    def needs_full_sync(self) -> bool:
        """True when changes were dropped (more than the feed keeps): only a full sync covers them."""
        ...

    async def aclose(self) -> None: ...
