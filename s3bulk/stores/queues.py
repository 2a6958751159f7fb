"""A queue of a bucket's change events as the watcher reads it (`sync --watch --watch-queue`),
whatever serves it: the limits it keeps, one received message, and the methods the watcher calls.

Why apart from stores/s3/queue.py: the engine's QueueFeed (engine/watch/queue_feed.py) may not
import an adapter; it holds an `EventQueue` that `stores.open_event_queue` opens. The limits are
SQS's, which every queue the watcher reads keeps (LocalStack's and ElasticMQ's too)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, Sequence

if TYPE_CHECKING:
    from dataclasses import dataclass
else:  # the same classes at less compiling (quick_dataclass.py says why)
    from ..quick_dataclass import dataclass

__all__ = ["EventQueue", "Message", "MAX_BATCH", "MAX_VISIBILITY", "MAX_WAIT"]

MAX_WAIT = 20    # seconds: SQS's longest long poll
MAX_BATCH = 10   # messages per ReceiveMessage, entries per *Batch request
MAX_VISIBILITY = 43200  # seconds (12 hours): SQS's longest visibility timeout


@dataclass(frozen=True, slots=True)
class Message:
    """One received message: its id (the same every time it is received), the receipt handle of
    this receipt (what deletes it, or changes its visibility), its body, how often SQS has handed
    it out, and when it was sent (SentTimestamp, milliseconds since the epoch; None if unknown)."""

    id: str
    receipt: str
    body: str
    receive_count: int = 1
    sent_ms: int | None = None


class EventQueue(Protocol):
    """What the watcher asks of a queue (stores/s3/queue.py's SqsQueue says what each does)."""

    url: str

    async def depth(self) -> int: ...

    async def receive(self, max_messages: int = MAX_BATCH, wait: float = MAX_WAIT,
                      visibility_timeout: int | None = None) -> list[Message]: ...

    async def delete(self, messages: Sequence[Message]) -> list[Message]: ...

    async def change_visibility(self, messages: Sequence[Message], seconds: int) -> list[Message]: ...

    async def aclose(self) -> None: ...
