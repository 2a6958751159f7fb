"""`rm`: delete every object a URL names, in DeleteObjects batches of 1,000 keys, journaled.

The listing is the parallel one `ls` uses (engine/listing/split.py); each batch is deleted as soon as it is full,
`concurrency` batches at once. A batch whose every key went records its key range (after, until]
in the rm journal (engine/journal/rm.py), so an interrupted rm run again with resume=True lists only what
is left. A key the server refuses inside DeleteObjects' 200 answer is reported, not counted.
With all_versions=True every version and delete marker goes instead (engine/actions/versions.py; no journal).
What happens per key goes to the run's Subscriber (engine/events.py) as typed events.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, AsyncIterator, cast

from ...errors import NotFound, UsageError
from ...config.filters import Filters
from ...model import Counters, ObjectInfo, WorkUnit, dry_run_estimate
from ...config.urls import Location, S3Options, parse_location
from ..events import Notice, Progress, Subscriber, deletion
from ...stores.requests import counts_of

if TYPE_CHECKING:
    from ...stores.base import Store
    from ..journal.units import Journal
    from ..report import ReportWriter
    from ..transfer.backup import Backup

__all__ = ["RmRequest", "RmResult", "rm"]

BATCH = 1000  # keys per DeleteObjects request (S3's limit)


@dataclass(slots=True, repr=False)
class RmResult:
    """What `rm` did: `deleted` keys, and (url, why) for each key that could not be deleted.
    `resumed_deleted`: keys an interrupted run had deleted (from its journal, with resume=True);
    `nothing_left`: resume=True found the prefix already empty (a completed run, run again);
    `journal`: the journal kept for resuming (None once a run completed, or when none was kept)."""

    dry_run: bool = False
    deleted: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)
    resumed_deleted: int = 0
    nothing_left: bool = False
    journal: str | None = None
    listed: int = 0
    # requests sent, {(operation, status class): n} (stores/requests.py); a dry run's planned DELETEs
    requests: dict[tuple[str, str], int] = field(default_factory=dict)
    planned: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failures

    def estimate(self) -> dict[str, object] | None:
        """A dry run's estimate of the real run: {"requests": {operation: n}, "bytes": 0} (the
        listing it sent itself, and one DELETE per 1,000 keys); None for a real run."""
        return dry_run_estimate(self.requests, self.planned, 0) if self.dry_run else None

    def counters(self) -> Counters:
        """The counts so far as a run's Counters (what --metrics serves)."""
        return Counters(listed=self.listed, deleted=self.deleted, failed=len(self.failures),
                        requests=dict(self.requests), planned=dict(self.planned))

    def __repr__(self) -> str:
        return f"RmResult(deleted={self.deleted}, failed={len(self.failures)}, dry_run={self.dry_run})"


@dataclass(frozen=True, slots=True)
class RmRequest:
    """What one `rm` run is asked to do (api.rm says what each field means): built once by the
    CLI or the API, then read by each step of the run."""

    url: str
    s3: S3Options | None = None
    filters: Filters = Filters()
    dry_run: bool = False
    all_objects: bool = False
    concurrency: int = 8
    journal: str | None = None       # a path; None: the default journal when default_journal, else none
    resume: bool = False
    default_journal: bool = False
    max_rps: float = 0.0
    retries: int = 5
    all_versions: bool = False
    report: str | None = None
    max_delete: str | None = None    # a count or "P%" (checked by parse_max_delete)
    max_delete_size: int | str | None = None  # bytes, or a size such as "10GiB"
    backup_dir: str | None = None
    suffix: str = ""

    @property
    def capped(self) -> bool:
        return self.max_delete is not None or self.max_delete_size is not None


def rm(request: RmRequest, subscriber: Subscriber | None = None) -> RmResult:
    """Delete what the request names, in an event loop of its own. The subscriber gets Deleted
    (or, dry, DryRunAction "delete") per key, Failure "delete" per key refused, Notice, and Progress
    about four times a second and once at the end. With max_delete / max_delete_size the whole
    listing is counted first (one more listing, nothing held in memory) and a run over the cap
    deletes nothing (TooManyDeletes). backup_dir, suffix: each batch is copied there first
    (engine/transfer/backup.py); a key whose backup failed stays."""
    request = _checked(request)
    to = subscriber if subscriber is not None else Subscriber()
    if request.all_versions:
        return _rm_versions(request, to)
    return asyncio.run(_RmRun(request, to).run())


def _checked(request: RmRequest) -> RmRequest:
    """The request with --max-delete checked, or a UsageError for options that do not go together."""
    from ...config.delete_caps import parse_max_delete
    from ...config.sizes import parse_size

    size = request.max_delete_size
    size = parse_size(size, "max_delete_size") if isinstance(size, str) else size
    request = replace(request, max_delete_size=size, max_delete=parse_max_delete(request.max_delete))
    if request.all_versions and (request.capped or request.backup_dir is not None):
        raise UsageError("--max-delete, --max-delete-size and --backup-dir do not go with --all-versions")
    if request.suffix and request.backup_dir is None:
        raise UsageError("--suffix goes with --backup-dir")
    if request.report is not None:
        from ..report import check_report_path

        check_report_path(request.report)
        if request.dry_run or request.all_versions:
            raise UsageError("--report goes with a real rm, not --dry-run or --all-versions")
    if request.all_versions and request.resume:
        raise UsageError("--all-versions keeps no journal: run it again instead of --resume")
    if not request.all_versions and request.resume and (
            request.dry_run or (request.journal is None and not request.default_journal)):
        raise UsageError("--resume needs the journal (not with --no-journal or --dry-run; "
                         "in the API: journal=PATH)")
    if request.dry_run:  # a dry run keeps no journal
        request = replace(request, journal=None, default_journal=False)
    return request


def _rm_versions(request: RmRequest, to: Subscriber) -> RmResult:
    """rm(all_versions=True): every version and delete marker for good (engine/actions/versions.py);
    each one's event names its URL with ?versionId=."""
    from .versions import rm_versions

    done = asyncio.run(rm_versions(request.url, s3=request.s3, filters=request.filters, dry_run=request.dry_run,
                                   all_objects=request.all_objects, subscriber=to))
    return RmResult(request.dry_run, deleted=done.versions + done.markers, failures=done.failures)


def _whole_store(src: Location) -> bool:
    """Whether a URL with no prefix names all a store holds, which only `all_objects` may delete: a
    bucket, or the filesystem's root. A local directory is a prefix of the filesystem, as
    s3://bucket/dir/ is of a bucket, so it needs no --all."""
    import os.path

    return src.is_bucket or (src.is_local and os.path.dirname(src.root) == src.root)


class _RmRun:
    """One rm run's steps, in order: resolve URL (or find a completed run's resume), open the
    journal, the report, the backup and the caps' count, then list and delete in batches, then
    close all of it. What the steps share is held here instead of in one long function's locals."""

    def __init__(self, request: RmRequest, to: Subscriber) -> None:
        self.request, self.to = request, to
        self.result = RmResult(request.dry_run)
        self.began = time.monotonic()
        self.src: Location | None = None
        self.single: str | None = None
        self.journal: Journal | None = None
        self.rows: ReportWriter | None = None
        self.backup: Location | None = None
        self.saver: Backup | None = None
        self.store: Any = None
        self.window = asyncio.Semaphore(request.concurrency)
        self.tasks: set[asyncio.Task[None]] = set()

    def notice(self, text: str) -> None:
        self.to.notify(Notice(text))

    def progress(self) -> None:
        self.to.notify(Progress(self.result.counters(), False, time.monotonic() - self.began, 1))

    async def run(self) -> RmResult:
        if not await self.resolve():
            return self.result
        await self.open()
        ticker = asyncio.ensure_future(self.tick())
        complete = False
        try:
            await self.open_backup()
            await self.delete_all()
            complete = not self.result.failures
        finally:
            for t in self.tasks:
                t.cancel()
            ticker.cancel()
            await self.close(complete)
        return self.result

    async def resolve(self) -> bool:
        """SRC resolved and checked; False when a resumed run finds nothing left (a completed run,
        run again), which is done."""
        from ..planner import _as_dir, names_nothing, resolve_source
        from ..journal.rm import open_rm_journal

        r = self.request
        r.filters.check_source(parse_location(r.url, r.s3))
        try:
            self.src, self.single = await resolve_source(r.url, r.s3)
            self.request = r = replace(r, filters=r.filters.located(self.src))
        except NotFound as exc:
            if not (r.resume and names_nothing(exc)):
                raise
            # the same `rm ... --resume` line run again after it completed: nothing is left, which is done
            loc = parse_location(r.url, r.s3)
            j = open_rm_journal(loc.with_prefix(_as_dir(loc.prefix)), r.filters, r.journal, resume=True)
            j.finish(complete=True)
            self.notice(f"nothing left to delete under {r.url}")
            self.result.nothing_left = True
            return False
        if not self.src.writable:
            raise UsageError("a list/get server is read-only: nothing can be deleted there")
        if self.single is None and not self.src.prefix and not r.all_objects and _whole_store(self.src):
            raise UsageError(f"{r.url} is a whole {'bucket' if self.src.is_bucket else 'filesystem'}: "
                             "add --all to delete every object in it")
        return True

    async def open(self) -> None:
        """The journal (resumed or new), the report, the backup's location, the caps checked, the store."""
        from ...stores import StoreOptions, open_store
        from ...stores.resilient import ResilienceOptions
        from ..journal.rm import open_rm_journal

        r, src = self.request, self.src
        assert src is not None
        if (r.journal is not None or r.default_journal) and self.single is None:
            self.journal = open_rm_journal(src, r.filters, r.journal, resume=r.resume)
            self.result.journal = self.journal.path
            if self.journal.nothing_to_resume:
                self.notice(f"nothing to resume (no journal at {self.journal.path}): starting from the beginning")
            elif self.journal.resumed:
                self.result.resumed_deleted = self.journal.done_totals()[0]
        if r.report is not None:  # a resumed rm continues its report; a row goes out before its key's delete does
            from ..report import ReportWriter, outside

            outside(r.report, src)
            self.rows = ReportWriter(r.report, "rm", resume=self.journal is not None and self.journal.resumed)
        store_options = StoreOptions(resilience=ResilienceOptions(retries=r.retries, max_rps=r.max_rps))
        if r.backup_dir is not None and not r.dry_run:
            self.backup = _backup_location(r.backup_dir, src, r.s3, r.filters)
        if not r.dry_run and r.capped:
            await _check_caps(src, self.single, r, store_options, self.units() if self.resumed else None)
        self.store = await open_store(src, store_options)
        counted = counts_of(self.store)  # the store's own count (stores/requests.py)
        if counted is not None:
            self.result.requests = counted

    @property
    def resumed(self) -> bool:
        return self.journal is not None and self.journal.resumed

    def units(self) -> list[WorkUnit]:
        return self.journal.resume_units() if self.journal is not None and self.journal.resumed else [WorkUnit()]

    async def open_backup(self) -> None:
        """The store must take deletes; with --backup-dir, the backup each batch is copied to first."""
        from ...stores import Writer

        if not isinstance(self.store, Writer):
            raise UsageError(f"{self.request.url} cannot be written to")
        if self.backup is not None and self.src is not None:
            from ..transfer.backup import open_backup
            from ..plan import TransferOptions

            self.saver = await open_backup(self.store, self.src, self.backup, self.request.suffix,
                                           TransferOptions(retries=self.request.retries))

    async def delete_all(self) -> None:
        """List each unit (the resumed journal's gaps, or everything) and delete it a batch at a time,
        `concurrency` batches at once; a batch covers the key range (after, its last listed key]."""
        from ..listing.split import ListingLimits, list_in_order

        src = self.src
        assert src is not None
        kept = self.request.filters.compiled() if self.request.filters else None
        cut = len(src.prefix)
        for unit in self.units():
            pages = (_one(self.single, self.store) if self.single is not None
                     else list_in_order(self.store, src.prefix, ListingLimits(page_size=BATCH, concurrency=16), start=unit))
            batch: list[str] = []
            after = unit.after
            last = after
            async for page in pages:
                self.result.listed += len(page)
                for obj in page:
                    last = obj.key
                    if kept is None or kept.keeps(obj, obj.key[cut:]):
                        batch.append(obj.key)
                    if len(batch) == BATCH:
                        await self.launch(batch, after, last)
                        batch, after = [], last
            if batch or after != unit.until:
                await self.launch(batch, after, unit.until)
        if self.tasks:
            await asyncio.gather(*self.tasks)

    async def launch(self, batch: list[str], after: str | None, until: str | None) -> None:
        await self.window.acquire()
        self.tasks.add(asyncio.ensure_future(self.delete(batch, after, until)))

    async def delete(self, batch: list[str], after: str | None, until: str | None) -> None:
        """One batch: its report rows first, its backup, the DeleteObjects request, then each key's
        event and, when every key went, the range journaled."""
        try:
            self.report(batch, "deleted", None)
            failed = await self.send(batch)
        except BaseException as exc:
            if not isinstance(exc, asyncio.CancelledError):
                self.report(batch, "failed", str(exc))
            raise
        finally:
            self.window.release()
        if failed:  # the later row wins: refused, not deleted
            self.report(failed, "failed", failed)
        src, result, dry_run = self.src, self.result, self.request.dry_run
        assert src is not None
        for key in batch:
            why = failed.get(key)
            url = src.url_for(key)
            if why is None:
                result.deleted += 1
            else:
                result.failures.append((url, why))
            self.to.notify(deletion(url, why, dry_run))
        if self.journal is not None and not failed:
            # every key of (after, until] is gone: a resume need not list it again
            self.journal.unit_done(WorkUnit(after=after, until=until), None, len(batch), 0)
            self.journal.commit()

    async def send(self, batch: list[str]) -> dict[str, str]:
        """The batch backed up (--backup-dir: only what was kept elsewhere goes) and deleted; the keys
        not deleted, with why. A dry run sends nothing and counts the requests it would."""
        from ...stores import Writer
        from ..transfer.estimate import plan_deletes

        writer = cast(Writer, self.store)  # checked by open_backup, before the first batch
        unsaved: dict[str, str] = {}
        if self.saver is not None and batch:
            unsaved = {k: f"not deleted: its backup failed: {why}" for k, why in await self.saver.save(batch)}
        doomed = [k for k in batch if k not in unsaved] if unsaved else batch
        failed = dict(await writer.delete_many(doomed)) if not self.request.dry_run and doomed else {}
        failed.update(unsaved)
        if self.request.dry_run:
            assert self.src is not None
            plan_deletes(len(batch), self.result.planned, self.src.is_s3)
        return failed

    def report(self, keys: "list[str] | dict[str, str]", outcome: str, why: "str | dict[str, str] | None") -> None:
        """--report's rows for `keys`, flushed: written before the request, so a kill while it is on
        the wire (the keys may be gone, the range not journaled, so a resume would never list them
        again) leaves them named. `why`: one reason for all, or each key's own."""
        if self.rows is None or not keys:
            return
        assert self.src is not None
        for key in keys:
            error = why.get(key) if isinstance(why, dict) else why
            if error is None:
                self.rows.row(outcome, "", self.src.url_for(key))
            else:
                self.rows.row(outcome, "", self.src.url_for(key), error=error)
        self.rows.flush()

    async def tick(self) -> None:
        """Progress (the counts so far) about four times a second, on the run's loop."""
        while True:
            self.progress()
            await asyncio.sleep(0.25)

    async def close(self, complete: bool) -> None:
        """The backup, the store and the report closed, the last Progress, the journal finished
        (removed when the run is complete)."""
        if self.saver is not None:
            await self.saver.close()
            if self.saver.saved:
                where = self.backup.raw if self.backup else ""
                self.notice(f"{self.saver.saved:,} objects backed up to {where} before they were deleted")
        await self.store.close()
        if self.rows is not None:
            self.rows.close()
        self.result.requests = dict(self.result.requests)  # no longer the store's, which is closed
        self.progress()
        if self.journal is not None:
            self.journal.finish(complete=complete)
            if complete:
                self.result.journal = None


def _backup_location(text: str, src: Location, s3: S3Options | None, rules: Filters) -> Location:
    """--backup-dir resolved and checked: not inside (nor around) what rm deletes."""
    from ..planner import _as_dir
    from ..transfer.backup import check_backup_location

    backup = parse_location(text, s3)
    if not backup.writable:
        raise UsageError("--backup-dir must be writable: an S3 prefix or a local directory")
    if backup.is_s3:
        backup = backup.with_prefix(_as_dir(backup.prefix))
    check_backup_location(backup, src, None, rules.compiled().allows if rules else None)
    return backup


async def _check_caps(src: Location, single: str | None, request: RmRequest, options: Any,
                      units: list[WorkUnit] | None) -> None:
    """rm --max-delete / --max-delete-size: count what would go (one listing, counts only), then
    refuse the whole run (TooManyDeletes) when it is over a cap. P% is of the objects under URL."""
    from ...config.delete_caps import check_caps
    from ...stores import open_store
    from ..listing.split import ListingLimits, list_in_order

    store = await open_store(src, options)
    kept = request.filters.compiled() if request.filters else None
    cut = len(src.prefix)
    seen = count = nbytes = 0
    try:
        for unit in units or [WorkUnit()]:
            pages = (_one(single, store) if single is not None
                     else list_in_order(store, src.prefix, ListingLimits(page_size=BATCH, concurrency=16), start=unit))
            async for page in pages:
                for obj in page:
                    seen += 1
                    if kept is None or kept.keeps(obj, obj.key[cut:]):
                        count += 1
                        nbytes += obj.size or 0
    finally:
        await store.close()
    check_caps("rm", count, nbytes, seen, request.max_delete, cast("int | None", request.max_delete_size))


async def _one(key: str, store: Store) -> AsyncIterator[list[ObjectInfo]]:
    yield [await store.head(key)]
