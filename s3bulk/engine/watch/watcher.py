"""`sync --watch`: keep DST equal to SRC, a thin caller of the one orchestration path.

The shape: open the change feed first (filesystem events, an SQS queue of S3 notifications), then
run one full sync (engine/run/orchestrate.py `run`), then loop: take a bounded batch of changes
from the feed, coalesce them per key, and run a sync narrowed to those keys (a manifest in the
internal "changes" format, engine/listing/manifest.py: each key is compared against SRC's current
state and DST, a key SRC no longer has is deleted at DST with --delete). Only once that sync has
returned are the batch's changes acknowledged to the feed (an SQS message is deleted then): at
least once, and idempotent, since the sync decides from what SRC holds now, so a late, repeated
or reordered event cannot undo a newer change. A source without a feed is synced in full every
`interval` seconds (the parallel lister and the previous listing's hints make that a cheap
re-list when little changed). Every `reconcile_every` seconds, and whenever a feed says it lost
changes, a full sync catches whatever the events missed.

Restart safety needs no state of the watcher's own: every start begins with a full sync, which
copies what changed while nothing watched (whatever stopped it, SIGKILL included) and skips what
is equal at DST; unacknowledged queue messages come back by themselves.

Memory is bounded whatever the event rate: a batch holds at most `batch` changes, a feed keeps
its backlog at the source (SQS) or coalesced per key up to a bound (local_feed.py), and every
narrowed sync runs under the same limits as any run (--max-rps, bandwidth, AIMD, --max-memory).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import os
import queue
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Callable, Coroutine

from ...errors import S3BulkError, UsageError
from ...model import Failure, Summary
from ..events import Event, Notice, Progress, Subscriber, WatchStatus
from ..job import Job, JournalChoice, Manifest
from .feed import Change, ChangeFeed
from .loop_thread import LoopThread, T

__all__ = ["WatchOptions", "watch"]

STATUS_SECONDS = 1.0    # a WatchStatus about once a second
WAIT_SECONDS = 20.0     # the longest wait for a batch (SQS's longest long poll)
DEPTH_SECONDS = 5.0     # how often the feed's depth is asked for (an SQS request each time)


@dataclass(frozen=True)
class WatchOptions:
    """How `sync --watch` learns of changes. `queue_url`: an SQS queue of SRC's bucket's event
    notifications (S3 SRC); `interval`: seconds between full syncs of a SRC without events (an S3
    SRC without a queue); `reconcile_every`: seconds between full syncs that catch what events
    missed (0: never); `batch`: changes per narrowed sync; `settle`: seconds a local file must stay
    unchanged before it is copied."""

    queue_url: str | None = None
    interval: float = 60.0
    reconcile_every: float = 6 * 3600.0
    batch: int = 1000
    settle: float = 1.0

    def __post_init__(self) -> None:
        if self.interval <= 0:
            raise UsageError("--watch-interval must be more than 0 seconds")
        if self.reconcile_every < 0:
            raise UsageError("--reconcile-every must be 0 (never) or a duration")
        if self.batch < 1:
            raise UsageError("the watch batch must hold at least one change")


class _Relay(Subscriber):
    """Hands every event of the runs on to the caller's subscriber, keeps the failures of the
    current run (their changes are not acknowledged) and adds a WatchStatus about once a second."""

    def __init__(self, inner: Subscriber, status: Callable[[], WatchStatus]) -> None:
        self.inner, self.status = inner, status
        self.failed: list[Failure] = []
        self.collect = False  # keep the failures: during a narrowed sync (a batch's worth at most)
        self._last_status = 0.0
        # remarks of a feed (Notice events), made on its own thread: handed on from this one, in order
        self.notices: queue.SimpleQueue[Event] = queue.SimpleQueue()
        self.from_feed = _Queued(self.notices)

    def notify(self, event: Event) -> None:
        if isinstance(event, Failure) and self.collect:
            self.failed.append(event)
        self.inner.notify(event)
        if isinstance(event, Progress):
            self.tick()

    def tick(self, force: bool = False) -> None:
        while not self.notices.empty():
            self.inner.notify(self.notices.get())
        now = time.monotonic()
        if force or now - self._last_status >= STATUS_SECONDS:
            self._last_status = now
            self.inner.notify(self.status())


class _Queued(Subscriber):
    """A feed's events, made on the feed's thread, queued for the run's thread to hand on."""

    def __init__(self, into: "queue.SimpleQueue[Event]") -> None:
        self.into = into

    def notify(self, event: Event) -> None:
        self.into.put(event)


class _Watcher:
    def __init__(self, job: Job, subscriber: Subscriber, should_stop: Callable[[], bool], options: WatchOptions,
                 full_sync_stops: bool) -> None:
        self.job, self.options, self.should_stop = job, options, should_stop
        self.full_sync_stops = full_sync_stops
        self.relay = _Relay(subscriber, self._status)
        self.total = Summary()
        self.handled = 0
        self.behind_since: float | None = None
        self.depth: int | None = None
        self._depth_at = 0.0
        self.started = time.monotonic()
        self.last_full: float | None = None  # when the last full sync began
        self.stopped = False

    # --- the status ---------------------------------------------------------------------------
    def _status(self) -> WatchStatus:
        lag = 0.0 if self.behind_since is None else time.monotonic() - self.behind_since
        return WatchStatus(lag, self.handled, self.depth)

    # --- runs -----------------------------------------------------------------------------------
    def _run(self, *, narrowed_to: str | None = None) -> Summary:
        from ..run.orchestrate import run

        job, should_stop = self.job, None
        if narrowed_to is not None:
            # a handful of keys: one worker on a thread of this process starts in milliseconds
            job = dataclasses.replace(job, options=dataclasses.replace(job.options, workers=1),
                                      manifest=Manifest(narrowed_to, "changes"), journal=JournalChoice())
            should_stop = self.should_stop
        elif self.full_sync_stops:
            should_stop = self.should_stop
        if self.last_full is not None:  # SRC was found once: emptied since, it is synced as empty
            job = dataclasses.replace(job, empty_source_ok=True)
        self.relay.failed = []
        self.relay.collect = narrowed_to is not None
        summary = run(job, subscriber=self.relay, should_stop=should_stop)
        self._add(summary)
        return summary

    def _add(self, summary: Summary) -> None:
        t = self.total
        t.counters.add(summary.counters)
        room = 1000 - len(t.failures)
        t.failures.extend(summary.failures[:max(0, room)])
        t.failures_dropped += summary.failures_dropped + max(0, len(summary.failures) - max(0, room))
        t.cpu_seconds += summary.cpu_seconds
        t.peak_rss_bytes = max(t.peak_rss_bytes, summary.peak_rss_bytes)
        t.workers = max(t.workers, summary.workers)
        if summary.fatal:
            t.fatal, t.fatal_code = summary.fatal, summary.fatal_code

    def _ended(self, summary: Summary) -> bool:
        """Whether this run ends the watch: a signal or the stop handle drained it, or it could not
        go on (a fatal error: the bucket went away, the disk is full)."""
        if summary.interrupted or self.should_stop():
            self.stopped = True
        return self.stopped or summary.fatal is not None

    def full_sync(self, why: str) -> bool:
        """A full sync; False when the watch must end."""
        if self.should_stop():  # a stop that came between two syncs: none begins
            self.stopped = True
            return False
        self.relay.inner.notify(Notice(f"watch: full sync ({why})"))
        began = time.monotonic()
        if self.behind_since is None:
            self.behind_since = began
        summary = self._run()
        if self._ended(summary):
            return False
        self.handled += summary.counters.done + summary.counters.deleted
        self.behind_since = None
        self.last_full = began
        self.relay.tick(force=True)
        return True

    # --- the loops ------------------------------------------------------------------------------
    @staticmethod
    def _feed(feed_loop: LoopThread, call: Coroutine[Any, Any, T] | concurrent.futures.Future[T],
              timeout: float | None = None) -> T:
        """A call into the feed (or the result of one submitted before); what it raises that is not
        already one of ours becomes one line (a feed retries what is worth retrying itself). A
        wait longer than `timeout` raises concurrent.futures.TimeoutError, the call going on."""
        try:
            if isinstance(call, concurrent.futures.Future):
                return call.result(timeout)
            return feed_loop.call(call, timeout)
        except (S3BulkError, concurrent.futures.TimeoutError):
            raise
        except Exception as exc:
            raise S3BulkError(f"the change feed failed: {type(exc).__name__}: {exc}") from exc

    def _wait(self, seconds: float) -> bool:
        """Sleep up to `seconds`, telling the status each second; False when asked to stop."""
        end = time.monotonic() + seconds
        while not self.should_stop():
            left = end - time.monotonic()
            if left <= 0:
                return True
            time.sleep(min(STATUS_SECONDS, left))
            self.relay.tick()
        self.stopped = True
        return False

    def _reconcile_due(self) -> bool:
        every = self.options.reconcile_every
        return every > 0 and self.last_full is not None and time.monotonic() - self.last_full >= every

    def by_interval(self) -> None:
        """No feed: a full sync every `interval` seconds (the parallel lister, the last hints)."""
        while self.full_sync("first" if self.last_full is None else "interval"):
            assert self.last_full is not None
            if not self._wait(self.last_full + self.options.interval - time.monotonic()):
                return

    def by_feed(self, feed: ChangeFeed, feed_loop: LoopThread) -> None:
        if not self.full_sync("first: catching up with SRC"):
            return
        with tempfile.TemporaryDirectory(prefix="s3bulk-watch-") as tmp:
            manifest = os.path.join(tmp, "changes.txt")
            while not self.should_stop():
                if feed.needs_full_sync():
                    if not self.full_sync("more changes than the feed keeps"):
                        return
                    continue
                if self._reconcile_due():
                    if not self.full_sync("reconcile"):
                        return
                    continue
                batch = self._next_batch(feed, feed_loop)
                if batch is None:
                    break  # asked to stop while waiting
                self._refresh_depth(feed, feed_loop)
                if not batch:
                    if not self.depth:
                        self.behind_since = None
                    self.relay.tick()
                    continue
                if self.behind_since is None:
                    self.behind_since = time.monotonic()
                if not self._land(batch, manifest, feed, feed_loop):
                    return
            self.stopped = True

    def _next_batch(self, feed: ChangeFeed, feed_loop: LoopThread) -> list[Change] | None:
        """The next batch, waiting up to WAIT_SECONDS for one (an SQS long poll: an idle watcher
        asks the queue three times a minute, not every second), the status told and the stop
        handle looked at every second meanwhile; None when asked to stop."""
        wait = WAIT_SECONDS
        if self.options.reconcile_every > 0 and self.last_full is not None:  # not past the next reconcile
            wait = min(wait, max(0.1, self.last_full + self.options.reconcile_every - time.monotonic()))
        pending = feed_loop.submit(feed.next_batch(self.options.batch, wait))
        while True:
            try:
                return self._feed(feed_loop, pending, STATUS_SECONDS)
            except concurrent.futures.TimeoutError:
                if self.should_stop():
                    pending.cancel()  # the feed's aclose makes what it received visible again
                    return None
                self.relay.tick()

    def _land(self, batch: list[Change], manifest: str, feed: ChangeFeed, feed_loop: LoopThread) -> bool:
        """One narrowed sync of the batch's keys (coalesced: a key named by several changes is
        compared once), then the acknowledgement of the changes that landed."""
        from ..listing.manifest import write_changes

        keys = list(dict.fromkeys(c.key for c in batch))
        write_changes(manifest, keys)
        summary = self._run(narrowed_to=manifest)
        if summary.interrupted or summary.fatal is not None:
            self._ended(summary)
            return False  # nothing acknowledged: an SQS message comes back; a restart syncs in full
        failed = [f.src for f in self.relay.failed]
        landed = [c for c in batch if not any(url.endswith("/" + c.key) or url == c.key for url in failed)] \
            if failed else batch
        if landed:
            self._feed(feed_loop, feed.ack(landed))
        if len(landed) < len(batch):  # hand out again what did not land
            self._feed(feed_loop, feed.release([c for c in batch if c not in landed]))
        self.handled += len({c.key for c in landed})
        self._refresh_depth(feed, feed_loop, force=True)
        if len(batch) < self.options.batch and not self.depth:
            self.behind_since = None
        self.relay.tick()
        return not self._ended(summary)

    def _refresh_depth(self, feed: ChangeFeed, feed_loop: LoopThread, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._depth_at >= DEPTH_SECONDS:
            self._depth_at = now
            try:
                self.depth = feed_loop.call(feed.depth(), timeout=30)
            except Exception:
                self.depth = None


def watch(job: Job, *, subscriber: Subscriber | None, should_stop: Callable[[], bool] | None,
          watch_options: WatchOptions, full_sync_stops: bool = True) -> Summary:
    """Keep the job's DST equal to its SRC until `should_stop()` turns true or a SIGINT/SIGTERM
    drains a run (the summary then says `interrupted`); returns the totals of every run. `job` (a
    sync: options, S3 settings, filters, max_memory, journal, ...) is what every sync runs, narrowed
    to a batch's keys for each batch. `full_sync_stops`: full syncs also watch `should_stop` (a stop handle from the API; a
    run given one lists through one chain, so the command line, stopped by signals, passes False)."""
    from ...config.urls import parse_location

    if job.sync is None or job.sync.dry_run:
        raise UsageError("--watch cannot be used with --dry-run")
    if job.manifest is not None:
        raise UsageError("--watch cannot be used with --files-from (it watches the whole SRC)")
    if job.journal.resume:
        raise UsageError("--watch cannot be used with --resume (every watch begins with a full sync)")
    stop = should_stop or (lambda: False)
    events = subscriber if subscriber is not None else Subscriber()
    src = job.src
    loc = parse_location(src, job.src_s3)
    w = _Watcher(job, events, stop, watch_options, full_sync_stops and should_stop is not None)
    feed: ChangeFeed | None = None
    feed_loop: LoopThread | None = None
    try:
        if watch_options.queue_url is not None:
            if not loc.is_s3:
                raise UsageError("--watch-queue goes with an s3:// SRC (its bucket's event notifications)")
            feed_loop = LoopThread()
            prefix = loc.prefix if not loc.prefix or loc.prefix.endswith("/") else loc.prefix + "/"
            feed = feed_loop.call(_open_queue(watch_options.queue_url, f"s3://{loc.bucket}/{prefix}", job,
                                              w.relay.from_feed))
        elif loc.is_local:
            from .local_feed import LocalFeed

            if not os.path.isdir(loc.root):
                raise UsageError(f"--watch of a local SRC needs a directory: {src!r}")
            filters = job.filters.located(loc)  # --exclude-if-present looks in SRC's directories
            compiled = filters.compiled() if filters else None
            feed_loop = LoopThread()
            feed = feed_loop.call(LocalFeed.open(loc.root, compiled.allows if compiled is not None else None,
                                                 settle=watch_options.settle))
        try:
            if feed is not None and feed_loop is not None:
                w.by_feed(feed, feed_loop)
            else:
                w.by_interval()
        except KeyboardInterrupt:  # Ctrl-C between two syncs, in an API caller's main thread
            w.stopped = True
    finally:
        if feed is not None and feed_loop is not None:
            try:
                feed_loop.call(feed.aclose(), timeout=30)
            except Exception:
                pass
        if feed_loop is not None:
            feed_loop.close()
    total = w.total
    total.elapsed = time.monotonic() - w.started
    total.interrupted = w.stopped and total.fatal is None
    return total


async def _open_queue(queue_url: str, src_root: str, job: Job, events: Subscriber) -> ChangeFeed:
    """The SQS feed (queue_feed.py), imported only when a queue is named; `src_root` is
    s3://bucket/prefix/ as a sync reads SRC (a prefix always ends in "/"), its changes' keys
    relative to it."""
    from .queue_feed import QueueFeed  # the SQS client: imported only when a queue is named

    feed: ChangeFeed = await QueueFeed.open(queue_url, src_root, job.filters, job.src_s3, events=events)
    return feed
