"""One worker: one event loop, its own store clients, a bounded number of transfers in flight.

A worker takes a work unit, lists one page of it, and at once hands the rest of
the unit back to the coordinator so that another worker lists on while this one
copies the page: listing and copying overlap. It holds at most `pages_ahead` pages, and
`concurrency` transfer tasks pull objects from a bounded queue, so memory does not
depend on how many objects the source has. What leaves the worker: the rest of
each unit, "unit done" notes, and counters aggregated over a quarter second.

Messages to the coordinator are the typed records of engine/messages.py (Listed, UnitDone, Abandoned,
UploadStarted/UploadEnded, ProgressReport, Planned, ObjectsReported, Fatal, Exited). A worker never writes to
stdout: a dry run's lines travel as events (engine/events.py) for the coordinator's subscribers.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import os
import resource
import signal
import threading
import time
from typing import Any, Callable, Protocol, cast

from ...errors import RUN_STOPPERS, BucketMissing, ConnectFailed, S3BulkError, StoreError
from ...config.filters import CompiledFilters
from .peak_rss import peak_rss_bytes
from ...model import Counters, Failure, ObjectInfo, WorkUnit
from ...config.urls import Location
from ...stores import Store, StoreOptions, Writer, open_store
from ...stores.requests import counted_by, merge as merge_requests, take as take_requests
from ...errors import DestinationExists
from ..journal.units import ObjectLog, page_skipped
from ..events import Difference, DryRunAction, Notice, PlannedEvent
from ..messages import (Abandoned, Deletes, Exited, Fatal, Listed, ObjectNote, ObjectsReported, Planned,
                        ProgressReport, UnitDone, WorkerMessage)
from .deletes import KeySpool, delete_batch
from ..loop import install_loop_policy, new_loop, plain_loop_for
from .inflight import TICK, InFlight
from .open_uploads import OpenUploads
from ..plan import Plan
from ...errors import LandingRefused
from ...stores.files.landing import allow_landing, remove_open_temps, stop_landing, writes_in_threads
from ..transfer.notes import TransferListener, UploadNote
from ..transfer.one_object import ByteBudget, ResumeTerms, Stopped, Transfer, holds_files
from ..listing.units import split_unit

FLUSH_SECONDS = 0.25
QUEUE_AHEAD = 64  # Deletes messages a worker lets wait unread before it sends more (_queue_room)
_STOP = object()
# _sort_now's answers: the object is sorted, or what _sort_later must still do for it
SETTLED, ASK, SAVE = "settled", "ask", "save"


class _UnitState:
    __slots__ = ("remaining", "done", "failed", "incomplete", "copied_bytes", "log", "moved", "landed")

    def __init__(self, remaining: int, log: ObjectLog | None = None) -> None:
        self.remaining = remaining
        self.moved: list[str] = []  # `mv`: source keys whose copy landed, deleted when the page ends
        self.landed: dict[str, tuple[int, str | None]] = {}  # mv with a report: key -> (size, source ETag)
        self.log = log  # where finished objects are recorded at once (resume skips them)
        self.failed = 0
        self.copied_bytes = 0
        self.incomplete = False  # some objects were dropped because a stop was requested
        self.done = asyncio.Event()
        if remaining == 0:
            self.done.set()

    def finished(self, n: int = 1) -> None:
        self.remaining -= n
        if self.remaining == 0:
            self.done.set()

    def drop(self, n: int = 1) -> None:
        self.incomplete = True
        self.finished(n)


class StoreKeeper(Protocol):
    """Where a worker's stores come from when its caller keeps them open across runs (a Dask
    task's thread: cluster/driver.py _TaskThread)."""

    async def open(self, role: str, location: Location, options: StoreOptions) -> Any: ...

    def keeps(self, store: Store) -> bool: ...


class _Page:
    """One listed page of a unit on its way through the worker's stages (Worker._unit): what the
    listing gave, what is left to copy, and what the unit's report will say."""

    __slots__ = ("unit", "rest", "pieces", "entries", "problems", "gone", "listed", "copied_before", "objects",
                 "nbytes", "deletes", "not_copied", "spared")

    def __init__(self, unit: WorkUnit, rest: WorkUnit | None, pieces: list[WorkUnit], entries: list[ObjectInfo],
                 problems: tuple[tuple[str, str], ...], gone: tuple[str, ...]) -> None:
        self.unit, self.rest, self.pieces = unit, rest, pieces  # the rest of the unit, cut for the coordinator
        self.entries = entries  # the objects still to go: narrowed stage by stage
        self.problems, self.gone = problems, gone  # keys the listing could not give; keys SRC no longer has
        self.listed: list[ObjectInfo] = entries  # the filtered page as sync compares it
        self.copied_before: list[str] = []  # keys an interrupted run copied (resume)
        self.objects = 0  # objects of the page (filtered), as UnitDone counts them
        self.nbytes = 0  # their bytes, without the ones copied before
        self.deletes: KeySpool | None = None  # sync --delete: DST-only keys, spooled
        self.not_copied = 0  # failed before any copy: listing problems, path conflicts, failed backups
        self.spared: frozenset[str] = frozenset()  # sync --delete: SRC keys a size or age rule left out


class ResumeInfo:
    """What workers need from the journal: where to log finished objects and open uploads
    (`log_dir`), and for a resumed run the pages already done (token-paged sources, as sorted
    (first, last) runs), the objects finished inside unfinished pages (`done_keys`, source key ->
    size) and the S3 multipart uploads left open, by destination key. `journaled`: a journal is
    kept, so a big download's temporary file outlives a stop; `resumed`: this run continues the
    ones a stopped run left (stores/files/partfile.py). `keep_uploads`: a journal hears of the uploads
    this run opens, so one a stop cuts short stays open for --resume (else it is aborted)."""

    __slots__ = ("skip_pages", "uploads", "log_dir", "done_keys", "journaled", "resumed", "keep_uploads")

    def __init__(self, skip_pages: tuple[tuple[int, int], ...] = (), uploads: dict | None = None,
                 log_dir: str | None = None, done_keys: dict[str, int] | None = None, *,
                 journaled: bool = False, resumed: bool = False, keep_uploads: bool = False) -> None:
        self.skip_pages = skip_pages
        self.uploads = uploads or {}
        self.log_dir = log_dir
        self.done_keys = done_keys or {}
        self.journaled, self.resumed, self.keep_uploads = journaled, resumed, keep_uploads

    def terms(self) -> ResumeTerms:
        """What a Transfer may keep for --resume, and continue (engine/transfer/one_object.py)."""
        return ResumeTerms(self.uploads, keep_partial=self.journaled, resume_partial=self.resumed,
                           keep_uploads=self.keep_uploads, uploads_logged=self.keep_uploads and self.log_dir is not None)


class _Listener(TransferListener):
    """What the worker's Transfer tells it (engine/transfer/notes.py), handed to the worker."""

    __slots__ = ("worker",)

    def __init__(self, worker: Worker) -> None:
        self.worker = worker

    def stopping(self) -> bool:
        return self.worker.stopping

    def on_upload(self, note: UploadNote) -> None:
        self.worker.uploads.note(note)

    def on_part_bytes(self, n: int) -> None:
        self.worker.counters.part_bytes += n

    def on_restarted(self, key: str, why: str) -> None:
        self.worker._restarted(key, why)

    def on_left_open(self, key: str, upload_id: str) -> None:
        self.worker._left_open(key, upload_id)


class Worker:
    """One worker's loop (module docstring). A unit goes through named stages (_unit): listed a
    page at a time (_list_page), skipped when an earlier run finished it (_done_before), admitted
    (_admit: listing failures, gone keys, filters, keys a stopped run copied), decided (_decide:
    path conflicts, dry run, sync's comparison, archived objects), queued for the transfer tasks
    (_queue, _consume), then settled (_settle_unit: mv's deletes, sync's deletes, the report)."""

    def __init__(self, plan: Plan, wid: int, units_q: Any, events_q: Any, body_bytes: int,
                 parent_pid: int | None = None, resume: ResumeInfo | None = None, stores: StoreKeeper | None = None,
                 unreachable: Callable[[StoreError], str] | None = None) -> None:
        self.plan = plan
        # a Dask task's (cluster/driver.py run_units): a request that could not connect to its endpoint (after
        # its retries) stops the run with this one line naming the Dask worker and the endpoint,
        # rather than failing every object that machine takes (it alone may be cut off)
        self.unreachable = unreachable
        # where the stores come from: opened here and closed at the end (None), or kept open by
        # the caller across runs of this worker (cluster/driver.py _TaskThread: open(role, loc, opts), keeps())
        self.store_keeper = stores
        self.resume = resume or ResumeInfo()
        self.stopping = False  # set by request_stop(): take no new objects, finish those in flight
        self.parent_pid = parent_pid
        self.wid = wid
        self.units_q = units_q
        self.events_q = events_q
        # bytes of object bodies held at once (not RSS: --max-memory is engine/memory_budget.py's)
        self.bodies = ByteBudget(body_bytes)
        self.counters = Counters()
        self.failures: list[Failure] = []
        self.objects: list[ObjectNote] = []  # plan.report_objects: sent with each flush
        self.fatal: tuple[str, int] | None = None
        # set in run(), once the stores are open in this process
        self.transfer: Transfer
        self.filters: CompiledFilters | None = None
        self.comparator: Any = None
        self._stores: tuple[Any, ...] = ()  # both stores, as wrapped (their stats and limiter, when they have them)
        self._dst: Store  # DST as a store (self.transfer.dst is it as a Writer)
        self._reported_concurrency = 0
        self._active = 0  # transfers running now (--metrics' gauge)
        self._reported = (0, 0, 0)  # transfers in flight, body bytes held, their budget: as last reported
        self._transfers = plan.options.concurrency  # consumer tasks running (engine/run/inflight.py may add some)
        self._finished = 0  # objects this worker finished (copied or failed): what inflight.py measures
        # what the two stores are, asked of their features once they are open (_sides)
        self._server_copies = self._skips_archived = self._src_files = self._src_s3 = self._dst_s3 = False
        self._took = 0.0  # seconds the objects copied took in all (inflight.py: mean against the shortest)
        self._shortest = 0.0  # the least one took (0: none yet)
        self._logs = 0  # per-page object logs opened by this worker (for their names)
        self._terminating = False  # a forced stop: see terminate()
        # the multipart uploads of this worker's transfers: logged, told to the coordinator, and
        # aborted by a forced stop that no journal records them for
        self.uploads = OpenUploads(wid, self._send, self.resume.log_dir, self.resume.keep_uploads)
        self._keeps = plan.options.no_clobber or plan.options.update  # sync: DST's copy may be kept (_kept_at_dst)
        self.backup: Any = None  # --backup-dir (engine/transfer/backup.py): overwrites, and --delete-during's deletes
        # (copy and mv: the overwrites their Transfer backs up)
        self._backups_reported = 0  # backup.saved as last sent to the coordinator

    def _send(self, msg: WorkerMessage) -> None:
        self.events_q.put(msg)

    def request_stop(self) -> None:
        """Graceful stop (the coordinator's first Ctrl-C): transfers in flight finish (multipart
        uploads finish the parts in flight and stay open for a resume), the rest is handed back."""
        self.stopping = True

    def terminate(self, then: Any) -> None:
        """A forced stop (a second Ctrl-C), on the worker's loop: no file may land any more, the
        writes running in threads come back (bounded wait), every object that landed is counted and
        reported, then `then()` ends the worker. Without this, objects landed in the last quarter
        second before the kill were on disk but not in the summary."""
        if self._terminating:
            return
        self._terminating = self.stopping = True
        stop_landing()
        asyncio.ensure_future(self._report_landed_then(then))

    async def _report_landed_then(self, then: Any) -> None:
        loop = asyncio.get_running_loop()
        until = loop.time() + 5.0
        while writes_in_threads() and loop.time() < until:
            await asyncio.sleep(0.01)
        if self.uploads.unrecorded():
            await self.uploads.abort_all(self.transfer.dst, until)
        self._flush()
        then()

    def _collect_store_stats(self) -> None:
        """Retries and throttling seen by the wrapped stores, and this worker's request concurrency
        (sent as the change since the last report, so the coordinator's sum is the current total)."""
        c = self.counters
        limiter = None
        for store in self._stores:
            stats = getattr(store, "stats", None)
            if stats is not None:
                c.retries += stats.retries
                c.throttled += stats.throttled
                stats.retries = stats.throttled = 0
                limiter = store.limiter  # the destination's when both have one: it is the one written to
            _take_requests(store, c.requests)
        if self.backup is not None:  # --backup-dir: the requests of the backups (its own store) count too
            _take_requests(self.backup.target, c.requests)
        # the gauges, as changes since the last report (their sum over workers is the run's now)
        used, limit = self.bodies.used, self.bodies.limit
        c.in_flight += self._active - self._reported[0]
        c.buffer_bytes += used - self._reported[1]
        c.buffer_limit += limit - self._reported[2]
        self._reported = (self._active, used, limit)
        if limiter is not None:
            # requests in flight allowed: the limiter's share, or fewer when fewer transfers run
            now = min(limiter.limit(), self._transfers + self.plan.options.part_concurrency)
            c.concurrency += now - self._reported_concurrency
            self._reported_concurrency = now

    def _flush(self) -> None:
        self._collect_store_stats()
        if self.counters or self.failures:
            self._send(ProgressReport(self.wid, self.counters.take(), self.failures))
            self.failures = []
        if self.objects:
            self._send(ObjectsReported(self.wid, self.objects))
            self.objects = []

    async def run(self) -> None:
        """The worker's life: its stores opened, its Transfer made, units taken until the
        coordinator's None, and whatever happens, its last counts sent and its stores closed."""
        src: Store | None = None
        dst: Store | None = None
        allow_landing()
        self._on_signals()
        try:
            src, dst = await self._open_stores()
            await self._prepare(src, dst)
            await self._loop(src)
        except S3BulkError as exc:
            self._send(Fatal(self.wid, self._why_not_reached(exc) or str(exc), exc.exit_code))
        except Exception as exc:  # a bug: say so rather than hang the run
            self._send(Fatal(self.wid, f"internal error in worker: {type(exc).__name__}: {exc}", 3))
        finally:
            self._flush()
            self.uploads.close()
            for store in (src, dst):
                if store is not None:
                    await self._close_store(store)
            if self.backup is not None:
                await self.backup.close()

    def _on_signals(self) -> None:
        """A worker process wakes its loop at once on SIGUSR1 (a graceful stop), and takes SIGTERM
        (the coordinator's forced stop) on the loop too: between two steps of the transfers, so
        each file that landed is counted before the worker exits."""
        if self.parent_pid is None:
            return
        try:
            loop = asyncio.get_running_loop()
            loop.add_signal_handler(signal.SIGUSR1, self.request_stop)
            loop.add_signal_handler(signal.SIGTERM, self.terminate,
                                    functools.partial(_exit_terminated, self.wid, self.events_q))
        except (NotImplementedError, RuntimeError, ValueError):
            pass

    async def _open_stores(self) -> tuple[Store, Store]:
        """SRC (read through its manifest when there is one) and DST, which must take writes."""
        opts = self.plan.options
        src: Store = await self._open_store("src", self.plan.src, opts.store_options())
        if self.plan.manifest is not None:
            from ..listing.manifest import ManifestSource

            src = ManifestSource(src, self.plan.manifest, self.plan.manifest_format, self.plan.src.prefix)
        dst: Store = await self._open_store("dst", self.plan.dst, opts.store_options())
        self._stores = (src, dst)
        self._dst = dst
        if not isinstance(dst, Writer):
            raise S3BulkError(f"{self.plan.dst.display} cannot be written to")
        return src, dst

    async def _prepare(self, src: Store, dst: Store) -> None:
        """The Transfer, the filters, --backup-dir's backup and sync's comparator."""
        plan, opts = self.plan, self.plan.options
        assert isinstance(dst, Writer)
        self.transfer = Transfer(src, dst, plan.keymap, opts, self.bodies, listener=_Listener(self),
                                 resume=self.resume.terms(), one_object=plan.single_key is not None,
                                 first_read=plan.single_read, first_head=plan.single_head)
        self._sides(src, dst)
        # --update: a copy or mv asks DST's time per object; sync has it from its listing (_sort_now)
        self.transfer.update_by_head = opts.update and plan.sync is None
        self.filters = plan.filters.compiled() if plan.filters else None
        if plan.backup is not None and plan.sync is not None and not plan.sync.dry_run:
            from ..transfer.backup import open_backup

            self.backup = await open_backup(dst, plan.dst, plan.backup, plan.sync.suffix, opts)
        elif plan.backup is not None and plan.sync is None and not opts.dry_run and not opts.no_clobber:
            from ..transfer.backup import open_backup, replaced_side

            # copy / mv --backup-dir: what each copy would overwrite (--no-clobber overwrites nothing)
            self.backup = await open_backup(dst, replaced_side(plan), plan.backup, opts.backup_suffix, opts)
            self.transfer.backup = self.backup
        if plan.sync is not None:
            from ..sync.march import Comparator

            self.comparator = Comparator(plan.sync.compare, src, dst, plan.sync.hash_cache)
            self.comparator.record = plan.report_objects

    def _sides(self, src: Store, dst: Store) -> None:
        """What the worker decides by the kind of each store, from their features: S3's (its
        properties are S3's headers) and a local tree's (a store of files: holds_files)."""
        self._src_s3, self._dst_s3 = src.features.props == "s3", dst.features.props == "s3"
        self._src_files = holds_files(src)
        # a copy "server-side" only where a server did it: between two local paths it is the kernel
        # (the summary's server_side_copies would tell of a server there is none of)
        self._server_copies = not holds_files(dst)
        # GLACIER / DEEP_ARCHIVE objects not restored are skipped unless --force-archived (S3 sources)
        self._skips_archived = self._src_s3 and not self.plan.options.force_archived

    async def _open_store(self, role: str, location: Any, options: Any) -> Any:
        if self.store_keeper is not None:
            return await self.store_keeper.open(role, location, options)
        return await open_store(location, options)

    async def _close_store(self, store: Store) -> None:
        """Close a store this worker opened; one its keeper keeps open (unwrapped from a manifest
        source too) stays open for the keeper's next use."""
        if self.store_keeper is not None:
            from ..listing.manifest import ManifestSource

            if self.store_keeper.keeps(store.inner if isinstance(store, ManifestSource) else store):
                return
        try:
            await store.close()
        except Exception:
            pass

    async def _loop(self, src: Store) -> None:
        opts = self.plan.options
        loop = asyncio.get_running_loop()
        objects: asyncio.Queue[Any] = asyncio.Queue(maxsize=opts.concurrency * 2)
        slots = asyncio.Semaphore(opts.pages_ahead)
        get_async = getattr(self.units_q, "get_async", None)  # an in-process worker's LoopQueue: no thread
        getter = None if get_async is not None else concurrent.futures.ThreadPoolExecutor(
            1, thread_name_prefix="s3bulk-units")
        consumers = [asyncio.create_task(self._consume(objects)) for _ in range(opts.concurrency)]
        flusher = asyncio.create_task(self._flush_periodically())
        grower = asyncio.create_task(self._grow(objects, consumers))
        units: set[asyncio.Task[None]] = set()
        try:
            while self.fatal is None:
                await slots.acquire()
                if get_async is not None:
                    unit = await get_async()
                else:
                    unit = await loop.run_in_executor(getter, self.units_q.get)
                if unit is None:
                    break
                if self.stopping:  # keep reading until the coordinator's None: no unit may be lost
                    self._send(Abandoned(self.wid, unit, False))
                    slots.release()
                    continue
                task = asyncio.create_task(self._unit(src, unit, objects, slots))
                units.add(task)
                task.add_done_callback(units.discard)
            if units:
                await asyncio.gather(*units)
            grower.cancel()  # no consumer may start after the stop marks are queued
            for _ in consumers:
                await objects.put(_STOP)
            await asyncio.gather(*consumers)
        finally:
            for task in (*consumers, *units, flusher, grower):
                task.cancel()  # no-ops after a normal end; on cancellation, stop every transfer
            await asyncio.gather(*consumers, *units, return_exceptions=True)
            if getter is not None:
                getter.shutdown(wait=False)

    async def _grow(self, objects: asyncio.Queue, consumers: list[asyncio.Task[None]]) -> None:
        """More transfers in flight while requests, not the CPU, hold the worker back (inflight.py)."""
        opts = self.plan.options
        plan = InFlight(opts.concurrency, opts.concurrency_ceiling())
        seen, seen_took = 0, 0.0
        while not plan.fixed:
            await asyncio.sleep(TICK)
            limits = [store.limiter.limit() for store in self._stores if getattr(store, "limiter", None) is not None]
            room = min(limits) - opts.part_concurrency if limits else None
            n = self._finished - seen
            mean = (self._took - seen_took) / n if n else 0.0
            seen, seen_took = self._finished, self._took
            target = plan.tick(seen, objects.qsize() > 0, room, mean, self._shortest)
            while len(consumers) < target and not self.stopping:
                consumers.append(asyncio.create_task(self._consume(objects)))
            self._transfers = len(consumers)

    async def _flush_periodically(self) -> None:
        while True:
            await asyncio.sleep(FLUSH_SECONDS)
            self._flush()
            if self.parent_pid is not None and os.getppid() != self.parent_pid:
                _stop_now(signal.SIGTERM)  # the coordinator is gone: nobody will collect our work

    async def _unit(self, src: Store, unit: WorkUnit, objects: asyncio.Queue, slots: asyncio.Semaphore) -> None:
        """One unit through the worker's stages: one page listed (the rest handed on at once), the
        keys an earlier run finished skipped, the rest filtered and decided (conflicts, a dry run,
        sync's comparison, archived objects), queued for the transfers, then the unit's moves,
        deletes and report once they are done."""
        try:
            page = await self._list_page(src, unit)
            if page is None or self._done_before(src, page):
                return
            await self._admit(page)
            if not await self._decide(src, page):
                return
            state = await self._queue(page, objects)
            await self._settle_unit(src, page, state)
        except Exception as exc:  # a bug: a unit task's exception would go unseen and the run wait forever
            self._die(f"internal error in worker: {type(exc).__name__}: {exc}", 3)
        finally:
            slots.release()

    async def _list_page(self, src: Store, unit: WorkUnit) -> _Page | None:
        """The unit's first page, and what it did not cover cut into pieces for the coordinator
        (listed in parallel where the source is ordered); None when a stop or a failure ended it."""
        plan = self.plan
        prefix = plan.single_key if plan.single_key is not None else plan.src.prefix
        if self.stopping:
            self._send(Abandoned(self.wid, unit, False))
            return None
        found = plan.found
        if found is not None:  # the planner's request found it: nothing to list; its cost is the run's
            c = self.counters
            c.retries += found.retries
            merge_requests(c.requests, found.requests)
            return _Page(unit, None, [], [found.info], (), ())
        try:
            page = await src.list_page(prefix, unit, plan.options.page_size)
        except S3BulkError as exc:
            self._die(self._why_not_reached(exc) or f"listing failed: {exc}", exc.exit_code)
            return None
        entries = page.entries
        rest = unit.rest(page)
        if plan.single_key is not None:
            entries = [e for e in entries if e.key == plan.single_key]
            rest = None
        if rest is None:
            pieces: list[WorkUnit] = []
        elif src.ordered and plan.options.split_listing:
            pieces = split_unit(rest, prefix, [e.key for e in entries])  # listed in parallel
        else:
            pieces = [rest]
        return _Page(unit, rest, pieces, entries, page.problems, page.gone)

    def _done_before(self, src: Store, page: _Page) -> bool:
        """A token-paged page an interrupted run finished: listed and done at once."""
        if not (page_skipped(self.resume.skip_pages, page.unit.seq) and not src.ordered):
            return False
        self._send(Listed(self.wid, page.unit, page.pieces))
        self._send(UnitDone(self.wid, page.unit, page.rest, 0, 0, 0, None))  # done by an earlier run
        return True

    async def _admit(self, page: _Page) -> None:
        """The page's listing failures counted, keys SRC no longer has (a narrowed sync) spooled for
        deletion, the filters applied, the keys an interrupted run finished set aside; then its
        counts, and the word that it is listed, go to the coordinator."""
        plan, c = self.plan, self.counters
        for name, why in page.problems:
            c.failed += 1
            self.failures.append(Failure("list", plan.src.url_for(name), "", why, "ListError"))
        sync = plan.sync
        page.deletes = KeySpool() if sync is not None and sync.delete and not sync.dry_run else None
        if page.gone and page.deletes is not None:
            await self._delete_gone(page.gone, page.deletes)
        entries = page.entries
        if self.filters is not None:
            cut = len(plan.src.prefix)
            kept = self.filters.select(entries, cut)
            if self.filters.by_entry and sync is not None and sync.delete and len(kept) != len(entries):
                # left out by their size or time: their DST keys are not SRC-only, so not deleted
                names = {e.key for e in kept}
                page.spared = frozenset(e.key[cut:] for e in entries if e.key not in names)
            entries = kept
        page.nbytes = 0
        for e in entries:
            page.nbytes += e.size or 0
        page.objects = len(entries)
        page.listed = entries  # sync compares the whole page: a key done before is still in SRC
        done_keys = self.resume.done_keys
        if done_keys:  # finished by an interrupted run, inside a page it did not finish
            kept = [e for e in entries if e.key not in done_keys]
            if len(kept) != len(entries):
                for e in entries:
                    if e.key in done_keys:
                        c.resumed += 1
                        c.resumed_bytes += e.size if e.size is not None else done_keys[e.key]
                        page.copied_before.append(e.key)  # `mv`: its source may not be deleted yet
                entries = kept
                page.nbytes = sum(e.size or 0 for e in entries)
        page.entries = entries
        c.listed += len(entries)
        c.listed_bytes += page.nbytes
        # the page's counts go before the word that it is listed (one queue, in order): a
        # progress event never says the listing is done while its counts are still on the way
        self._send(ProgressReport(self.wid, c.take(), self.failures))
        self.failures = []
        self._send(Listed(self.wid, page.unit, page.pieces))

    async def _decide(self, src: Store, page: _Page) -> bool:
        """What of the page is copied: path conflicts dropped, a dry run told (not done), sync's
        comparison with DST, archived objects skipped. False when the run died meanwhile."""
        plan = self.plan
        entries, conflicting = await self._drop_conflicts(src, page.entries)
        if plan.sync is None and plan.options.dry_run:  # copy / mv --dry-run: told and estimated, not done
            entries = self._dry_copy(entries)
        unsaved = 0  # --backup-dir: objects not overwritten because their backup failed
        if plan.sync is not None:
            done = frozenset(page.copied_before)
            if done:  # the page as the march must see it: what is copied now, and what was before
                keep = done.union(e.key for e in entries)
                listed = [e for e in page.listed if e.key in keep]
            else:
                listed = entries
            try:
                entries, unsaved = await self._compare(src, page.unit, page.rest, listed, page.deletes, done,
                                                       page.spared)
            except S3BulkError as exc:
                self._die(self._why_not_reached(exc) or f"listing the destination failed: {exc}", exc.exit_code)
                return False
        if entries and self._skips_archived:
            entries = await self._skip_archived(src, entries)
        page.entries = entries
        page.not_copied = len(page.problems) + conflicting + unsaved
        return True

    async def _queue(self, page: _Page, objects: asyncio.Queue) -> _UnitState:
        """The page's objects handed to the transfers (_consume), until they are all done or dropped."""
        entries = page.entries
        state = _UnitState(len(entries), self._object_log())
        state.failed = page.not_copied
        if self.plan.move:
            state.moved.extend(page.copied_before)
        for i, e in enumerate(entries):
            if self.stopping:
                state.drop(len(entries) - i)
                break
            await objects.put((e, state))
        await state.done.wait()
        return state

    async def _settle_unit(self, src: Store, page: _Page, state: _UnitState) -> None:
        """After the copies: mv's sources deleted, sync's deletes settled, then the unit reported
        done, or handed back when a stop dropped some of its objects."""
        if state.moved:
            state.failed += await self._delete_moved(src, state.moved, state.landed)
        # the unit's keys reach the coordinator (Deletes, naming the unit) before its UnitDone
        if page.deletes is not None:
            await self._settle_deletes(page.deletes, state, page.unit)
        elif self.backup is not None and self.backup.saved > self._backups_reported:  # overwrites backed up
            self._send(Deletes(self.wid, [], backed_up=self._backups_since()))
        log = state.log
        if log is not None:
            log.close()
        unit, rest = page.unit, page.rest
        if state.incomplete:
            # back to the coordinator as the range this page covered (the rest was handed on)
            if src.ordered:
                unit = WorkUnit(after=unit.after, until=rest.after if rest is not None else unit.until, seq=unit.seq)
            self._send(Abandoned(self.wid, unit, True))
            return
        if self.objects:  # a report's rows of this unit reach the coordinator before its UnitDone
            self._send(ObjectsReported(self.wid, self.objects))
            self.objects = []
        self._send(UnitDone(self.wid, unit, rest, page.objects, page.nbytes or state.copied_bytes,
                            state.failed, log.path if log is not None and log.used else None))

    async def _drop_conflicts(self, src: Store, entries: list[ObjectInfo]) -> tuple[list[ObjectInfo], int]:
        """Keys that are also a directory's name at a local DST (`a` beside `a/b`): reported, not
        copied, whatever order the writes would come in (engine/transfer/path_conflicts.py); returns
        the rest and the count."""
        from ..transfer import path_conflicts as conflicts

        if not entries or not conflicts.applies(self.plan, src):
            return entries, 0
        found = await conflicts.find(src, entries)
        plan = self.plan
        for key, other in found.items():
            self.counters.failed += 1
            self.failures.append(Failure("copy", plan.src.url_for(key), plan.dst.url_for(plan.keymap(key)),
                                         conflicts.message(key, other), "PathConflict"))
        return ([e for e in entries if e.key not in found] if found else entries), len(found)

    def _object_log(self) -> ObjectLog | None:
        """A new per-page object log under the journal's directory (None without a journal)."""
        d = self.resume.log_dir
        if d is None:
            return None
        self._logs += 1
        return ObjectLog(os.path.join(d, f"{os.getpid()}-{self.wid}-{self._logs}.keys"))

    def _why_not_reached(self, exc: Exception) -> str:
        """The line that stops the run when `exc` says this worker cannot reach an endpoint and it
        runs as a Dask task (`unreachable`); "" otherwise."""
        if self.unreachable is None or not isinstance(exc, ConnectFailed):
            return ""
        return self.unreachable(exc)

    def _die(self, message: str, code: int) -> None:
        self.fatal = (message, code)
        self._send(Fatal(self.wid, message, code))

    async def _settle_deletes(self, deletes: KeySpool, state: _UnitState, unit: WorkUnit) -> None:
        """A unit's DST-only keys once its copies are done (engine/run/deletes.py): none deleted when an
        object of it failed; with --delete-during deleted now (backed up first with --backup-dir),
        else sent to the coordinator (Deletes messages, then the UnitDone) for the delete phase."""
        sync = self.plan.sync
        assert sync is not None
        try:
            if state.incomplete:
                return  # handed back: whoever redoes the unit finds its keys again
            if state.failed:
                self._send(Deletes(self.wid, [], deletes.seen, deletes.count, self._backups_since()))
                return
            if sync.delete_during:
                notes = self.objects if self.plan.report_objects else None
                for batch in deletes.batches():
                    state.failed += await delete_batch(self.transfer.dst, batch, self.backup, self.plan.dst.url_for,
                                                       self.counters, self.failures, notes)
                self._send(Deletes(self.wid, [], deletes.seen, 0, self._backups_since()))
                return
            for rows in deletes.messages():
                self._send(Deletes(self.wid, rows, unit=unit))
                await self._queue_room()
            self._send(Deletes(self.wid, [], deletes.seen, 0, self._backups_since()))
        finally:
            deletes.close()

    async def _queue_room(self) -> None:
        """Wait while the coordinator has many of this run's messages unread: a unit's keys are sent
        no faster than they are spooled, so none pile up in this worker's memory (a queue without a
        size, as a Dask task's, is not waited on)."""
        size = getattr(self.events_q, "qsize", None)
        if size is None:
            return
        try:
            while size() > QUEUE_AHEAD and not self._terminating:
                await asyncio.sleep(0.005)
        except NotImplementedError:  # macOS: no sem_getvalue
            return

    def _backups_since(self) -> int:
        """Objects backed up (--backup-dir) since the last Deletes message said how many."""
        if self.backup is None:
            return 0
        new = self.backup.saved - self._backups_reported
        self._backups_reported = self.backup.saved
        return new

    async def _compare(self, src: Store, unit: WorkUnit, rest: WorkUnit | None, entries: list[ObjectInfo],
                       deletes: KeySpool | None, done: frozenset[str] = frozenset(),
                       spared: frozenset[str] = frozenset()) -> tuple[list[ObjectInfo], int]:
        """Sync: what of this page must be copied, and how many objects were not because their
        --backup-dir copy failed; counts the equal ones, spools the keys only DST has into `deletes`
        (a dry run prints them instead). `done`: keys of the page an interrupted run copied (a resume):
        neither copied again nor, being in SRC, deleted at DST. `spared`: relative keys of SRC objects
        a size or age rule left out: their DST objects stay, as does a DST object those rules leave out."""
        from ..sync.march import Decision, March, dst_range

        plan, opts = self.plan, self.plan.sync
        assert opts is not None
        dst = self._dst
        dst_key = plan.keymap  # sync plans are never single-object: this maps a source key to its DST key
        to_copy: list[ObjectInfo] = []
        absent: set[str] = set()  # source keys DST lacks (the rest of to_copy differs)
        unsaved = [0]
        if not src.ordered:  # token-paged source: look each key up at DST
            for s in entries:
                if s.key in done:
                    continue
                d = await self._head_or_none(dst, dst_key(s.key))
                if d is not None and s.size is None:
                    s = await self._head_or_none(src, s.key) or s
                pending = self._sort_now(s, d, to_copy, absent)
                if pending is not SETTLED:
                    assert d is not None
                    await self._sort_later(s, d, pending, to_copy, unsaved)
            return self._dry(await self._dry_archived(src, to_copy), [], absent), unsaved[0]
        page_end = rest.after if rest is not None else unit.until
        doomed: list[str] = []
        dst_keys = dst_range(dst, plan.dst.prefix, None if unit.after is None else dst_key(unit.after),
                             None if page_end is None else dst_key(page_end), plan.options.page_size)
        march = March(entries, plan.src.prefix, plan.dst.prefix, delete=opts.delete,
                      allows=self.filters.allows if self.filters is not None else None,
                      keeps=self._dst_keeps(spared), has_folder=dst_keys.has_folder)

        later = [SETTLED]  # what _sort_now left for the step act stopped at

        def act(decisions: list[Decision], start: int = 0) -> int:
            """The decisions from `start` on, in plain calls (no coroutine a key: a re-sync's every
            object passes here); the index of the first one _sort_now could not settle (what is
            left for it in `later`), or -1."""
            for i in range(start, len(decisions)):
                step = decisions[i]
                if step.step == "delete":
                    assert step.dst is not None
                    if deletes is not None:
                        deletes.add(step.dst.key, step.dst.size or 0)
                    else:
                        doomed.append(step.dst.key)  # a dry run: printed (and counted) below
                else:
                    assert step.src is not None
                    if step.src.key in done:
                        continue
                    pending = self._sort_now(step.src, step.dst, to_copy, absent)
                    if pending is not SETTLED:
                        later[0] = pending
                        return i
            return -1

        async def finish(decisions: list[Decision], i: int) -> None:
            """What act stopped at, decisions[i]: _sort_later's request for it, then act on from
            there, in the decisions' order."""
            while i >= 0:
                step = decisions[i]
                assert step.src is not None and step.dst is not None
                await self._sort_later(step.src, step.dst, later[0], to_copy, unsaved)
                i = act(decisions, i + 1)

        seen = 0
        while page := await dst_keys.next_page():  # a page at a time: no awaited __anext__ a key
            seen += len(page)
            for d in page:
                decisions = march.dst(d)
                if decisions and (i := act(decisions)) >= 0:
                    await finish(decisions, i)
        decisions = march.end()
        if (i := act(decisions)) >= 0:
            await finish(decisions, i)
        if deletes is not None:
            deletes.seen += seen
        return self._dry(await self._dry_archived(src, to_copy), doomed, absent), unsaved[0]

    def _dst_keeps(self, spared: frozenset[str]) -> Callable[[ObjectInfo, str], bool] | None:
        """With a size or age rule: whether sync --delete may delete the DST-only object (the rule
        keeps it, and SRC holds no object of its name that the rules left out)."""
        filters = self.filters
        if filters is None or not filters.by_entry:
            return None
        keeps = filters.keeps
        return lambda d, rel: rel not in spared and keeps(d, rel)

    async def _dry_archived(self, src: Store, to_copy: list[ObjectInfo]) -> list[ObjectInfo]:
        """A sync dry run skips (and counts) the archived objects the real run would skip; `check`
        reports every difference, archived or not."""
        opts = self.plan.sync
        if not to_copy or not self._skips_archived or opts is None or not opts.dry_run or opts.check:
            return to_copy
        return await self._skip_archived(src, to_copy)

    async def _skip_archived(self, src: Store, entries: list[ObjectInfo]) -> list[ObjectInfo]:
        """The entries without the archived objects not restored (engine/transfer/archived.py),
        counted as skipped (archived). Where the restore check itself fails, they are kept and
        tried: their own failure then says why."""
        from ..transfer.archived import RestoreStatus, split_archived

        try:
            kept, skipped = await split_archived(cast(RestoreStatus, src), entries)  # _skips_archived: an S3 store
        except S3BulkError:
            return entries
        c = self.counters
        for e in skipped:
            c.archived += 1
            c.archived_bytes += e.size or 0
        return kept

    async def _delete_gone(self, gone: tuple[str, ...], deletes: KeySpool) -> None:
        """A narrowed sync (`sync --watch`, engine/listing/manifest.py CHANGES): delete at DST the
        keys SRC no longer has, and, when SRC is a directory, what DST holds under such a key as a
        folder (a directory removed or renamed away is one filesystem event), as --delete and the
        filters allow. Deleting what is already gone is harmless: events may come twice."""
        from ..sync.march import dst_range

        plan = self.plan
        dst = self._dst
        src_cut, dst_cut = len(plan.src.prefix), len(plan.dst.prefix)
        filters = self.filters
        allows = filters.allows if filters is not None else (lambda rel: True)
        keeps = filters.keeps if filters is not None else (lambda d, rel: True)
        for key in gone:
            rel = key[src_cut:]
            target = plan.keymap(key)
            if allows(rel):
                there = await self._head_or_none(dst, target)
                if there is not None and keeps(there, rel):
                    deletes.add(target, there.size or 0)
            if self._src_files and not os.path.isdir(os.path.join(plan.src.root, key)):
                async for d in dst_range(dst, target + "/", None, None, plan.options.page_size):
                    if keeps(d, d.key[dst_cut:]):
                        deletes.add(d.key, d.size or 0)

    def _sort_now(self, s: ObjectInfo, d: ObjectInfo | None, to_copy: list[ObjectInfo], absent: set[str]) -> str:
        """Sort s against its DST entry where no request is needed, in no coroutine of its own (a
        re-sync's per-object path): DST lacks it, --no-clobber or --update keep DST's copy, or
        sizes, times and a download's mark decide. The one decision for every sync path: SETTLED
        (queued, counted same or kept), or what _sort_later must still do, ASK (the comparison
        needs a request: --checksum, a file without its mark) or SAVE (it differs, and --backup-dir
        must keep DST's copy first). differs_now runs once an object: its mark is read once."""
        if d is None:
            absent.add(s.key)
            to_copy.append(s)
            return SETTLED
        if self._keeps and self._kept_at_dst(s, d):  # --no-clobber, --update: DST's copy stays
            return SETTLED
        differ = self.comparator.differs_now(s, d)
        if differ is None:
            return ASK
        if not differ:
            self._count_same(s)
            return SETTLED
        if self.backup is not None:
            return SAVE
        to_copy.append(s)
        return SETTLED

    async def _sort_later(self, s: ObjectInfo, d: ObjectInfo, pending: str, to_copy: list[ObjectInfo],
                          unsaved: list[int]) -> None:
        """What _sort_now left `pending`: the comparison's request (ASK), then, for an object that
        differs, its --backup-dir copy (SAVE) before it is queued (not copied over, a failure,
        when its backup fails: `unsaved`)."""
        if pending == ASK and not await self.comparator.differs_later(s, d):
            self._count_same(s)
            return
        if self.backup is not None:
            lost = await self.backup.save([d.key])
            if lost:
                unsaved[0] += 1
                self.counters.failed += 1
                self.failures.append(Failure("copy", self.plan.src.url_for(s.key), self.plan.dst.url_for(d.key),
                                             f"not overwritten: its backup failed: {lost[0][1]}", "BackupFailed"))
                return
        to_copy.append(s)

    def _count_same(self, s: ObjectInfo) -> None:
        """An object DST holds the same: counted skipped, and reported with the checksum that proved it."""
        self.counters.skipped += 1
        self.counters.skipped_bytes += s.size or 0
        if self.plan.report_objects:
            plan = self.plan
            self.objects.append(("skipped", plan.src.url_for(s.key), plan.dst.url_for(plan.keymap(s.key)),
                                 s.size, s.etag, self.comparator.checksums.pop(s.key, None)))

    def _kept_at_dst(self, s: ObjectInfo, d: ObjectInfo) -> bool:
        """sync --no-clobber (DST has the key) or --update (DST's copy is newer), from the DST
        listing: the key is skipped, counted as kept (engine/transfer/guards.py)."""
        from ..transfer import guards

        opts = self.plan.options
        if opts.no_clobber:
            why = guards.REASONS[guards.DestinationExists]
        elif opts.update and guards.newer(s, d):
            why = guards.REASONS[guards.DestinationNewer]
        else:
            return False
        self._count_kept(s, why)
        return True

    def _count_kept(self, info: ObjectInfo, why: str) -> None:
        """An object skipped because DST keeps its own copy: counted skipped and kept, and reported
        as a "kept" note whose last field is the reason (a report's `skipped` row gives it)."""
        c = self.counters
        c.skipped += 1
        c.skipped_bytes += info.size or 0
        c.kept += 1
        if self.plan.report_objects:
            plan = self.plan
            self.objects.append(("kept", plan.src.url_for(info.key), plan.dst.url_for(plan.keymap(info.key)),
                                 info.size, info.etag, why))

    @staticmethod
    async def _head_or_none(store: Store, key: str) -> ObjectInfo | None:
        from ...errors import NotFound

        try:
            return await store.head(key)
        except NotFound:
            return None

    async def _delete_moved(self, src: Store, keys: list[str], landed: dict[str, tuple[int, str | None]]) -> int:
        """`mv`: delete the source keys whose copy landed (each was written whole and checked by the
        destination: CRC32 on S3 PUTs and parts, the byte count before a local rename); returns how
        many could not be deleted (reported as failures, so the unit is redone on resume)."""
        failed = 0
        for i in range(0, len(keys), 1000):
            try:
                refused = await cast(Writer, src).delete_many(keys[i:i + 1000])  # mv: SRC takes writes (planner)
            except S3BulkError as exc:
                refused = [(k, str(exc)) for k in keys[i:i + 1000]]
            self.counters.deleted += len(keys[i:i + 1000]) - len(refused)
            if self.plan.report_objects:
                self._report_moved(keys[i:i + 1000], refused, landed)
            for key, why in refused:
                failed += 1
                self.counters.failed += 1
                self.failures.append(Failure("delete", self.plan.src.url_for(key), "",
                                             f"copied, but the source could not be deleted: {why}",
                                             "DeleteFailed"))
        return failed

    def _report_moved(self, keys: list[str], refused: list[tuple[str, str]],
                      landed: dict[str, tuple[int, str | None]]) -> None:
        """mv: one "moved" note per source key deleted once its copy landed (with where it landed,
        its size and ETag: None for one an interrupted run had copied)."""
        plan = self.plan
        gone = {k for k, _ in refused}
        self.objects.extend(("moved", plan.src.url_for(k), plan.dst.url_for(plan.keymap(k)),
                             *landed.get(k, (None, None)), None) for k in keys if k not in gone)

    def _dry_copy(self, entries: list[ObjectInfo]) -> list[ObjectInfo]:
        """copy or mv --dry-run: each object as a DryRunAction ("move" for mv), and the requests
        the real run would send for it (engine/transfer/estimate.py; mv's DeleteObjects of its
        sources too); nothing is copied (returns [])."""
        from ..transfer.estimate import plan_copy, plan_deletes

        plan, c = self.plan, self.counters
        events: list[PlannedEvent | Notice] = self._egress_notice(entries)
        for e in entries:
            plan_copy(self.transfer, e, c.planned)
            events.append(DryRunAction("move" if plan.move else "copy", plan.src.url_for(e.key),
                                       plan.dst.url_for(plan.keymap(e.key))))
            c.done += 1
            c.done_bytes += e.size or 0
        if plan.move:
            plan_deletes(len(entries), c.planned, self._src_s3)
            c.deleted += len(entries)
        if events:
            self._send(Planned(self.wid, events))
        return []

    def _egress_notice(self, to_copy: list[ObjectInfo]) -> list[PlannedEvent | Notice]:
        """A dry run between two S3 endpoints (or accounts, or regions: another endpoint) that
        cannot copy server-side: one line saying the bytes will stream through this machine,
        egress the source's provider charges for."""
        plan = self.plan
        if not to_copy or self.transfer.server_side or not (self._src_s3 and self._dst_s3):
            return []
        return [Notice(f"{plan.src.display} and {plan.dst.display} are on different S3 endpoints or "
                       "credentials: the bytes will be downloaded and uploaded again through this machine "
                       "(egress the source's provider may charge for), not copied server-side")]

    def _dry(self, to_copy: list[ObjectInfo], doomed: list[str], absent: set[str]) -> list[ObjectInfo]:
        """In a dry run, tell the coordinator what would happen (engine/events.py; its subscribers print it)
        and do nothing. For `check`, each event names the difference: only in SRC, differs, only in DST."""
        opts = self.plan.sync
        if opts is None or not opts.dry_run:
            return to_copy
        plan = self.plan
        events: list[PlannedEvent | Notice] = [] if opts.check else self._egress_notice(to_copy)
        if not opts.check:  # what the real run's copies and deletes would send (the summary's estimate)
            from ..transfer.estimate import plan_copy, plan_deletes

            for e in to_copy:
                plan_copy(self.transfer, e, self.counters.planned)
            plan_deletes(len(doomed), self.counters.planned, self._dst_s3)
        for e in to_copy:
            src_url, dst_url = plan.src.url_for(e.key), plan.dst.url_for(plan.keymap(e.key))
            if opts.check:
                events.append(Difference("only-in-src" if e.key in absent else "differs", src_url, dst_url))
                if e.key not in absent:
                    self.counters.differ += 1
            else:
                events.append(DryRunAction("copy", src_url, dst_url))
            self.counters.done += 1
            self.counters.done_bytes += e.size or 0
        for key in doomed:
            url = plan.dst.url_for(key)
            events.append(Difference("only-in-dst", None, url) if opts.check else DryRunAction("delete", None, url))
            self.counters.deleted += 1
        if events:
            self._send(Planned(self.wid, events))
        return []

    async def _consume(self, objects: asyncio.Queue) -> None:
        """One transfer task: objects from the queue, one at a time, until the stop mark."""
        transfer = self.transfer
        clock = time.monotonic  # not uvloop's loop.time(): whole milliseconds, and a nearby server answers in less
        while True:
            item = await objects.get()
            if item is _STOP:
                return
            info, state = item
            if self.stopping:
                state.drop()
                continue
            self._active += 1
            try:
                began = clock()
                try:
                    size, server_side = await transfer.copy(info)
                finally:
                    self._active -= 1
                self._copied(info, state, size, server_side, clock() - began)
            except asyncio.CancelledError:
                raise
            except (Stopped, LandingRefused):
                state.drop()
            except DestinationExists as exc:  # --no-clobber, --update: DST's copy stays (guards.py)
                from ..transfer.guards import reason

                self._count_kept(info, reason(exc))
                self._finished += 1
                state.finished()
            except Exception as exc:
                self._not_copied(info, state, exc)

    def _copied(self, info: ObjectInfo, state: _UnitState, size: int, server_side: bool, took: float) -> None:
        """An object landed: counted, timed (inflight.py), logged for --resume, reported."""
        c = self.counters
        self._took += took
        if 0 < took < self._shortest or not self._shortest:
            self._shortest = took
        c.done += 1
        c.done_bytes += size
        if server_side and self._server_copies:
            c.server_side += 1
        state.copied_bytes += size
        self._finished += 1
        if self.plan.report_objects:
            self._report_copied(info, size)
        if state.log is not None:
            state.log.add(info.key, size)
        if self.plan.move:
            state.moved.append(info.key)
            if self.plan.report_objects:
                state.landed[info.key] = (size, info.etag)
        state.finished()

    def _not_copied(self, info: ObjectInfo, state: _UnitState, exc: Exception) -> None:
        """An object that failed: a failure of its own, or the reason the whole run stops."""
        if self._terminating:  # cut short by the forced stop: not copied, not a failure
            state.drop()
            return
        unreached = self._why_not_reached(exc)
        if isinstance(exc, RUN_STOPPERS) or unreached:
            # reported once, as the reason the run stops (not as a failure per object); this
            # object and the rest count as not attempted and are left for --resume
            state.drop()
            if self.fatal is None:
                self.stopping = True  # take no more objects: each would fail the same way
                self._die(unreached or _stop_message(exc), 3)
            return
        self._record_failure(info, exc)
        self._finished += 1
        state.failed += 1
        state.finished()

    def _restarted(self, key: str, why: str) -> None:
        """An object started over because its source changed while it was read: always told
        (a "restarted" event), not only with -v."""
        plan = self.plan
        self.objects.append(("restarted", plan.src.url_for(key), plan.dst.url_for(plan.keymap(key)), 0, None, None))

    def _report_copied(self, info: ObjectInfo, size: int) -> None:
        plan = self.plan
        self.objects.append(("copied", plan.src.url_for(info.key), plan.dst.url_for(plan.keymap(info.key)), size,
                             info.etag, None))

    def _left_open(self, dst_key: str, upload_id: str) -> None:
        """An upload aborted but still listed by the server after every try: one line, not an object
        failed (its object's failure is reported already); it stays in the journal."""
        where = self.plan.dst.url_for(dst_key)
        self.failures.append(Failure(
            "abort multipart upload", f"{where}?uploadId={upload_id}", "",
            "still listed by the server after every abort: kept in the journal, whose next run aborts it "
            f"(as does `s3bulk rm --incomplete-uploads {where}`)", LEFT_OPEN))

    def _record_failure(self, info: ObjectInfo, exc: Exception) -> None:
        plan = self.plan
        self.counters.failed += 1
        src_url = plan.src.url_for(info.key)
        try:
            dst_url = plan.dst.url_for(plan.keymap(info.key))
        except Exception:
            dst_url = ""
        if isinstance(exc, StoreError):
            op = exc.op or "copy"
            msg = exc.message
        else:
            op, msg = "copy", f"{type(exc).__name__}: {exc}"
        self.failures.append(Failure(op, src_url, dst_url, msg, type(exc).__name__))


LEFT_OPEN = "UploadLeftOpen"  # the kind of a Failure naming an upload still listed after its aborts


def _take_requests(store: object, into: dict) -> None:
    """Add the requests `store` counted since the last time to `into` (stores/requests.py)."""
    counted = counted_by(store)
    if counted:
        take_requests(counted, into)


def _stop_message(exc: Exception) -> str:
    """One line for a failure that stops the run (the rest would fail alike)."""
    what = "the bucket is gone" if isinstance(exc, BucketMissing) else "the destination refuses writes"
    return (f"stopped: {what} ({exc}); objects not yet copied were not attempted; "
            "fix it and run the same command with --resume")


def _usage() -> tuple[int, float]:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return peak_rss_bytes(), ru.ru_utime + ru.ru_stime



def _exit_terminated(wid: int, events_q: Any) -> None:
    """The end of a forced stop in a worker process, once its last counts are queued: temporary
    files go, the coordinator gets the exit note, the process ends as SIGTERM would end it."""
    threading.Timer(5.0, os._exit, (128 + signal.SIGTERM,)).start()  # if the queue cannot be flushed
    remove_open_temps()
    rss, cpu = _usage()
    events_q.put(Exited(wid, rss, cpu))
    events_q.close()
    events_q.join_thread()
    os._exit(128 + signal.SIGTERM)


def _stop_now(signum: int, frame: Any = None) -> None:
    """Stop at once, removing our unfinished temporary files (S3 uploads left open are aborted
    by the store's lifecycle rules or a later resume)."""
    remove_open_temps()
    os._exit(128 + signum)


def worker_process(plan: Plan, wid: int, units_q: Any, events_q: Any, body_bytes: int,
                   parent_pid: int | None = None, resume: ResumeInfo | None = None) -> None:
    """Entry point of a worker process. SIGUSR1 from the coordinator asks for a graceful stop,
    SIGTERM stops at once."""
    worker = Worker(plan, wid, units_q, events_q, body_bytes, parent_pid, resume)
    signal.signal(signal.SIGUSR1, lambda signum, frame: worker.request_stop())
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the coordinator decides what Ctrl-C means
    signal.signal(signal.SIGTERM, _stop_now)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR1})  # blocked while we were spawned
    install_loop_policy()
    try:
        asyncio.run(worker.run())
    finally:
        rss, cpu = _usage()
        events_q.put(Exited(wid, rss, cpu))
        events_q.close()
        events_q.join_thread()


class ThreadHandle:
    """The same worker inside this process (one worker, no pool), looking like a Process to the pool."""

    def __init__(self, plan: Plan, wid: int, units_q: Any, events_q: Any, body_bytes: int,
                 resume: ResumeInfo | None = None) -> None:
        self._args = (plan, wid, units_q, events_q, body_bytes)
        self.worker = Worker(plan, wid, units_q, events_q, body_bytes, None, resume)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._ready = threading.Event()
        self.thread = threading.Thread(target=self._main, name=f"s3bulk-worker-{wid}", daemon=True)
        self.thread.start()
        self._ready.wait()

    def _main(self) -> None:
        plan, wid, units_q, events_q, body_bytes = self._args
        try:
            loop = self._loop = new_loop(plain_loop_for(plan))
            self._task = loop.create_task(self.worker.run())
            self._ready.set()
            try:
                loop.run_until_complete(self._task)
            except asyncio.CancelledError:
                pass
            finally:
                loop.close()
        finally:
            self._ready.set()
            events_q.put(Exited(wid, 0, 0.0))

    def request_stop(self) -> None:
        """Graceful stop (first Ctrl-C), as SIGUSR1 does for a worker process."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(self.worker.request_stop)
            except RuntimeError:
                pass

    def terminate(self) -> None:
        """Cancel everything the worker is doing (second Ctrl-C in single-process mode), once
        what landed is counted (Worker.terminate)."""
        loop, task = self._loop, self._task
        if loop is not None and task is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(self.worker.terminate, task.cancel)
            except RuntimeError:
                pass  # the loop closed meanwhile

    def is_alive(self) -> bool:
        return self.thread.is_alive()

    def join(self, timeout: float | None = None) -> None:
        self.thread.join(timeout)

    def kill(self) -> None:
        loop, task = self._loop, self._task
        if loop is not None and task is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(task.cancel)
            except RuntimeError:
                pass

    @property
    def exitcode(self) -> int | None:
        return None if self.thread.is_alive() else 0



