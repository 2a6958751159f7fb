"""`QueueFeed`: the changes of an S3 SRC from the SQS queue its event notifications go to (directly,
through SNS, or through EventBridge), as a `ChangeFeed` (feed.py).

What it promises the watcher, and why:

- **Bounded.** `next_batch(n, ...)` receives only while fewer than `n` changes wait, at most 10
  messages a request, so the feed never holds more than `n` changes plus one receive's worth;
  a burst of a million events stays in the queue, not in memory.
- **Newest per key.** Changes of one key waiting together are handed out once, as the one with the
  highest `sequencer` (S3's per-key order; where it cannot tell, as between the copies of one
  event or from a server that writes none or always the same, the message sent later wins, then
  the one received later), and the change's
  token covers every message it stands for. A change older than one already handed out for that
  key (a late or repeated event: S3 delivers at least once, in no particular order) is not handed
  out again. The watcher still compares SRC's current state before acting, so even an event that
  slips through can never undo a newer change.
- **Deleted only after landing.** A message is deleted from the queue only through `ack` of the
  changes it holds, once all of them are acked (a message with several records), and once. What
  concerns no key of SRC (the test event, another bucket, a key outside the prefix or excluded by
  the filters, other kinds of S3 event, a stale change) is deleted at once: nothing to land.
- **Kept invisible while in hand.** Messages are received with a visibility timeout
  (`visibility_timeout`, 60 s by default) and extended by a background task while their changes
  are waiting or being handled, so a long copy does not make them reappear. If the process dies
  they reappear after at most that timeout; `aclose` makes the un-acked ones visible again at
  once, for the next start.
- **What is not an S3 event** is left in the queue (a dead-letter queue, if the queue has a redrive
  policy, collects it after its receive count), hidden for 12 hours so it does not crowd the
  feed, and told once as a notice.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import Iterator

from ...config.filters import CompiledFilters, Filters
from ...config.urls import S3Options, parse_location
from ...errors import StoreError, UsageError
from ...stores import open_event_queue
from ...stores.queues import MAX_BATCH, MAX_VISIBILITY, MAX_WAIT, EventQueue, Message
from ..events import Notice, Subscriber
from .feed import Change
from .s3_events import Scope, newer, parse_body

__all__ = ["QueueFeed"]

_log = logging.getLogger("s3bulk.watch")

_Order = tuple[str | None, int | None]  # (sequencer, the message's SentTimestamp): what orders two changes of one key

_NEWEST_KEYS = 65536   # keys whose newest sequencer is remembered (the oldest forgotten first)
_DEPTH_EVERY = 5.0     # seconds a depth read is reused: SQS's count is approximate and lags anyway
_NOTICED = 4096        # message ids already told about (each not-understood message: one notice)


@dataclass(eq=False, slots=True)
class _Ticket:
    """A handed-out change's token: the ids of the messages it stands for, one entry per change of
    each (a message id twice when two of its records were coalesced)."""

    ids: tuple[str, ...]
    acked: bool = False


def _settle(changes: list[Change]) -> Iterator[str]:
    """The message ids (one per change they carry) of the changes not settled yet, each change
    marked settled as it is walked: acked and released changes are settled once, whichever comes first."""
    for change in changes:
        ticket = change.token
        if not isinstance(ticket, _Ticket) or ticket.acked:
            continue
        ticket.acked = True
        yield from ticket.ids


@dataclass(slots=True)
class _Held:
    """A received message not yet deleted: its latest receipt, how many of its changes are not
    acked yet, and when it becomes visible again unless extended."""

    message: Message
    outstanding: int
    visible_until: float


@dataclass(slots=True)
class _Waiting:
    """The change of one key waiting to be handed out, and the messages it stands for."""

    change: Change
    order: _Order
    ids: list[str] = field(default_factory=list)


def _after(a: _Order, b: _Order) -> bool:
    """Whether a change ordered `a` is strictly after one ordered `b` (the same key): by sequencer,
    and where the sequencers cannot tell (equal, or one missing), by the time SQS got the message."""
    if newer(a[0], b[0]):
        return True
    if newer(b[0], a[0]):
        return False
    return a[1] is not None and b[1] is not None and a[1] > b[1]


class QueueFeed:
    """A ChangeFeed over an SQS queue (module docstring). Make one with `open`."""

    def __init__(self, queue: EventQueue, scope: Scope, *, visibility_timeout: int = 60,
                 events: Subscriber | None = None) -> None:
        self.queue = queue
        self.scope = scope
        self.visibility_timeout = max(1, min(MAX_VISIBILITY, int(visibility_timeout)))
        self._events = events
        self._held: dict[str, _Held] = {}
        self._waiting: OrderedDict[str, _Waiting] = OrderedDict()
        self._newest: OrderedDict[str, _Order] = OrderedDict()
        self._noticed: OrderedDict[str, None] = OrderedDict()
        self._undeleted: list[Message] = []   # acked, whose delete failed for a reason that may pass
        self._keeper: asyncio.Task[None] | None = None
        self._closed = False
        self._depth: tuple[float, int] | None = None  # (when, the depth read then)
        self.extensions = 0   # visibility extensions made (the live display and tests can see the keeper work)
        self.deleted = 0      # messages deleted

    @classmethod
    async def open(cls, queue_url: str, src_root: str, filters: Filters | CompiledFilters | None,
                   s3_options: S3Options | None = None, *, visibility_timeout: int = 60,
                   events: Subscriber | None = None) -> "QueueFeed":
        """The feed of SRC `src_root` (`s3://bucket/prefix`, read as sync reads it: the prefix with a
        "/" added) from the queue at `queue_url` (its URL or ARN), reached with SRC's S3 options
        (their settled settings when the run's driver settled them). `filters`: the run's
        --include/--exclude. `events` receives one-line remarks for the user as Notice events, on
        the feed's thread (without it: the "s3bulk.watch" logger). Raises UsageError or a StoreError (one line) when the queue cannot
        be read."""
        src = parse_location(src_root, s3_options)
        if not src.is_s3:
            raise UsageError(f"--watch-queue needs an S3 source (s3://bucket/prefix), not {src_root!r}")
        queue = await open_event_queue(queue_url, src)
        return cls(queue, Scope.of(src.bucket, src.prefix, filters), visibility_timeout=visibility_timeout,
                   events=events)

    def _tell(self, text: str) -> None:
        if self._events is None:
            _log.warning(text)
        else:
            self._events.notify(Notice(text))

    @property
    def in_hand(self) -> int:
        """Messages received and not deleted yet (their changes waiting, or handed out and not acked)."""
        return len(self._held)

    # ------------------------------------------------------------------ ChangeFeed

    async def next_batch(self, max_changes: int, timeout: float) -> list[Change]:
        """Up to `max_changes` changes: waits (long polls) up to `timeout` seconds for the first,
        then takes what the queue has at once, and returns. An empty list after `timeout`."""
        if self._closed:
            raise RuntimeError("the feed is closed")
        max_changes = max(1, max_changes)
        self._start_keeper()
        await self._retry_deletes()
        deadline = time.monotonic() + max(0.0, timeout)
        while len(self._waiting) < max_changes:
            remaining = deadline - time.monotonic()
            wait = 0 if self._waiting else max(0, min(MAX_WAIT, int(remaining + 0.5)))
            got = await self.queue.receive(min(MAX_BATCH, max_changes - len(self._waiting)), wait,
                                           self.visibility_timeout)
            await self._take(got)
            if self._waiting and len(got) < MAX_BATCH:
                break  # the queue had no more at once
            if not got and (wait == 0 or time.monotonic() >= deadline - 0.5):
                break  # waited the whole timeout (a long poll waits whole seconds)
        return self._hand_out(max_changes)

    async def ack(self, changes: list[Change]) -> None:
        """These changes landed: delete each message whose changes are all acked now."""
        done: list[Message] = []
        for mid in _settle(changes):
            held = self._held.get(mid)
            if held is None:
                continue
            held.outstanding -= 1
            if held.outstanding <= 0:
                done.append(self._held.pop(mid).message)
        await self._delete(done)

    def needs_full_sync(self) -> bool:
        """Never: what the feed does not hold stays in the queue (the feed is bounded by receiving
        less, not by dropping)."""
        return False

    async def release(self, changes: list[Change]) -> None:
        """These changes could not land: their messages are made visible again now, so they are
        received, and the changes handed out, again. Without it a change that never lands keeps its
        message hidden while the feed lives (its next start, or a full sync, catches it)."""
        back: list[Message] = []
        for mid in _settle(changes):
            held = self._held.pop(mid, None)
            if held is not None:
                back.append(held.message)
        if back:
            await self.queue.change_visibility(back, 0)

    async def depth(self) -> int | None:
        """The queue's ApproximateNumberOfMessages, asked at most every 5 s (None when SQS cannot be
        asked just now)."""
        now = time.monotonic()
        if self._depth is not None and now - self._depth[0] < _DEPTH_EVERY:
            return self._depth[1]
        try:
            depth = await self.queue.depth()
        except StoreError as exc:
            if not exc.retryable:
                raise
            return None
        self._depth = (now, depth)
        return depth

    async def aclose(self) -> None:
        """Stop: deletes still owed are tried once more, and the messages whose changes did not
        land are made visible again at once (the next start receives them)."""
        if self._closed:
            return
        self._closed = True
        if self._keeper is not None:
            self._keeper.cancel()
            try:
                await self._keeper
            except (asyncio.CancelledError, Exception):
                pass
        try:
            await self._retry_deletes()
            if self._held:
                await self.queue.change_visibility([h.message for h in self._held.values()], 0)
        except StoreError as exc:
            _log.debug("queue: closing: %s", exc)
        finally:
            self._held.clear()
            self._waiting.clear()
            await self.queue.aclose()

    # ------------------------------------------------------------------ inside

    async def _take(self, messages: list[Message]) -> None:
        """Parse received messages into waiting changes; delete at once what concerns no key."""
        now = time.monotonic()
        nothing: list[Message] = []
        for msg in messages:
            held = self._held.get(msg.id)
            if held is not None:  # received again (its visibility ran out): its changes are already here
                held.message = msg
                held.visible_until = now + self.visibility_timeout
                continue
            parsed = parse_body(msg.body, self.scope)
            if not parsed.understood:
                await self._leave(msg, parsed.why)
                continue
            kept = 0
            for change in parsed.changes:
                order = (change.sequencer, msg.sent_ms)
                if self._stale(change.key, order):
                    continue
                kept += 1
                self._wait(change, order, msg.id)
            if kept == 0:
                nothing.append(msg)
            else:
                self._held[msg.id] = _Held(msg, kept, now + self.visibility_timeout)
        await self._delete(nothing)

    def _stale(self, key: str, order: _Order) -> bool:
        """Whether a later change of this key was seen already (then this one is dropped); else
        remember this one as the latest."""
        seen = self._newest.get(key)
        if seen is not None and _after(seen, order):
            self._newest.move_to_end(key)
            return True
        self._newest[key] = order
        self._newest.move_to_end(key)
        while len(self._newest) > _NEWEST_KEYS:
            self._newest.popitem(last=False)
        return False

    def _wait(self, change: Change, order: _Order, mid: str) -> None:
        """Add a change to those waiting: a key already waiting keeps the later change of the two
        (where nothing tells: the one received later) and both messages."""
        waiting = self._waiting.get(change.key)
        if waiting is None:
            self._waiting[change.key] = _Waiting(change, order, [mid])
            return
        waiting.ids.append(mid)
        if not _after(waiting.order, order):
            waiting.change, waiting.order = change, order

    def _hand_out(self, max_changes: int) -> list[Change]:
        out: list[Change] = []
        while self._waiting and len(out) < max_changes:
            _, waiting = self._waiting.popitem(last=False)
            out.append(replace(waiting.change, token=_Ticket(tuple(waiting.ids))))
        return out

    async def _leave(self, msg: Message, why: str) -> None:
        """A message that is not an S3 event: told once, hidden for 12 hours, never deleted."""
        if msg.id not in self._noticed:
            self._noticed[msg.id] = None
            while len(self._noticed) > _NOTICED:
                self._noticed.popitem(last=False)
            self._tell(f"queue {self.queue.url}: message {msg.id} is {why}; left in the queue "
                         "(hidden for 12 hours; a dead-letter queue collects it after its receive count)")
        try:
            await self.queue.change_visibility([msg], MAX_VISIBILITY)
        except StoreError as exc:
            _log.debug("queue: could not hide message %s: %s", msg.id, exc)

    async def _delete(self, messages: list[Message]) -> None:
        """Delete messages; a failure that may pass (throttling, the network) is kept and tried
        again on the next call, any other is raised (the watcher cannot go on without deleting)."""
        if not messages:
            return
        try:
            failed = await self.queue.delete(messages)
        except StoreError as exc:
            if not exc.retryable:
                raise
            _log.debug("queue: delete failed, tried again later: %s", exc)
            self._undeleted.extend(messages)
            return
        self.deleted += len(messages) - len(failed)
        for msg in failed:  # its receipt is no longer current: it comes back, and is handled again
            _log.debug("queue: message %s was not deleted (received again since)", msg.id)

    async def _retry_deletes(self) -> None:
        owed, self._undeleted = self._undeleted, []
        await self._delete(owed)

    def _start_keeper(self) -> None:
        if self._keeper is None:
            self._keeper = asyncio.get_running_loop().create_task(self._keep_invisible())

    async def _keep_invisible(self) -> None:
        """Extend the visibility of every message in hand whose timeout is less than half left, a
        few times per timeout, so a message reappears only when this process is gone."""
        period = max(0.25, self.visibility_timeout / 4)
        while True:
            await asyncio.sleep(period)
            now = time.monotonic()
            due = [h for h in self._held.values() if h.visible_until - now < self.visibility_timeout / 2]
            if not due:
                continue
            try:
                failed = await self.queue.change_visibility([h.message for h in due], self.visibility_timeout)
            except StoreError as exc:
                _log.debug("queue: could not extend visibility: %s", exc)
                continue
            lost = {m.id for m in failed}
            for h in due:
                if h.message.id not in lost:
                    h.visible_until = now + self.visibility_timeout
            self.extensions += len(due) - len(lost)
