"""`rm`: delete every object a URL names, in DeleteObjects batches of 1,000 keys, journaled.

The listing is the parallel one `ls` uses (engine/listing/split.py); each batch is deleted as soon as it is full,
`concurrency` batches at once. A batch whose every key went records its key range (after, until]
in the rm journal (engine/journal/rm.py), so an interrupted rm run again with resume=True lists only what
is left. A key the server refuses inside DeleteObjects' 200 answer is reported, not counted.
With all_versions=True every version and delete marker goes instead (engine/actions/versions.py; no journal).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable, cast

from ...errors import NotFound, UsageError
from ...config.filters import Filters
from ...model import Counters, ObjectInfo, WorkUnit, dry_run_estimate
from ...config.urls import S3Options, parse_location

__all__ = ["RmResult", "rm"]

OnKey = Callable[[str, "str | None"], None]  # (url, None) deleted (or, in a dry run, to be); (url, why) failed
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


def rm(url: str, s3: S3Options | None, rules: Filters, *, dry_run: bool = False, all_objects: bool = False,
       on_key: OnKey | None = None, concurrency: int = 8, journal: str | None = None, resume: bool = False,
       default_journal: bool = False, on_notice: Callable[[str], None] | None = None, max_rps: float = 0.0,
       retries: int = 5, all_versions: bool = False, report: str | None = None,
       on_progress: Callable[[Counters], None] | None = None, max_delete: str | None = None,
       max_delete_size: int | None = None, backup_dir: str | None = None, suffix: str = "") -> RmResult:
    """Delete what URL names, in an event loop of its own (api.rm says what each argument means).
    `on_progress` gets the counts so far about four times a second and once at the end.
    `max_delete` / `max_delete_size`: the whole listing is counted first (one more listing, nothing
    held in memory) and a run over the cap deletes nothing (TooManyDeletes). `backup_dir`, `suffix`:
    each batch is copied there first (engine/transfer/backup.py); a key whose backup failed stays."""
    from ...config.delete_caps import parse_max_delete

    max_delete = parse_max_delete(max_delete)
    if all_versions and (max_delete is not None or max_delete_size is not None or backup_dir is not None):
        raise UsageError("--max-delete, --max-delete-size and --backup-dir do not go with --all-versions")
    if suffix and backup_dir is None:
        raise UsageError("--suffix goes with --backup-dir")
    if report is not None:
        from ..report import check_report_path

        check_report_path(report)
        if dry_run or all_versions:
            raise UsageError("--report goes with a real rm, not --dry-run or --all-versions")
    if all_versions:
        if resume:
            raise UsageError("--all-versions keeps no journal: run it again instead of --resume")
        return _rm_versions(url, s3, rules, dry_run, all_objects, on_key)
    if resume and (dry_run or (journal is None and not default_journal)):
        raise UsageError("--resume needs the journal (not with --no-journal or --dry-run; "
                         "in the API: journal=PATH)")
    return asyncio.run(_rm(url, s3, rules, dry_run, all_objects, on_key, concurrency,
                           None if dry_run else journal, resume, default_journal and not dry_run,
                           on_notice or (lambda line: None), max_rps, retries, report, on_progress,
                           _Guards(max_delete, max_delete_size, backup_dir, suffix)))


@dataclass(frozen=True, slots=True)
class _Guards:
    """rm's --max-delete, --max-delete-size, --backup-dir and --suffix."""

    max_delete: str | None = None
    max_delete_size: int | None = None
    backup_dir: str | None = None
    suffix: str = ""


def _rm_versions(url: str, s3: S3Options | None, rules: Filters, dry_run: bool, all_objects: bool,
                 on_key: OnKey | None) -> RmResult:
    """rm(all_versions=True): every version and delete marker for good (engine/actions/versions.py); on_key gets
    each one's URL with ?versionId=."""
    from .versions import rm_versions

    done = asyncio.run(rm_versions(url, s3=s3, filters=rules, dry_run=dry_run, all_objects=all_objects,
                                   on_key=on_key))
    return RmResult(dry_run, deleted=done.versions + done.markers, failures=done.failures)


async def _rm(url: str, s3: S3Options | None, rules: Filters, dry_run: bool, all_objects: bool,
              on_key: OnKey | None, concurrency: int, journal_path: str | None,
              resume: bool, default_journal: bool, notice: Callable[[str], None], max_rps: float = 0.0,
              retries: int = 5, report: str | None = None,
              on_progress: Callable[[Counters], None] | None = None, guards: _Guards = _Guards()) -> RmResult:
    from ...stores import StoreOptions, Writer, open_store
    from ...stores.resilient import ResilienceOptions
    from ..listing.split import ListingLimits, list_in_order
    from ..transfer.estimate import plan_deletes
    from ..planner import _as_dir, names_nothing, resolve_source
    from ..journal.rm import open_rm_journal

    result = RmResult(dry_run)
    keep_journal = journal_path is not None or default_journal
    try:
        src, single = await resolve_source(url, s3)
    except NotFound as exc:
        if not (resume and names_nothing(exc)):
            raise
        # the same `rm ... --resume` line run again after it completed: nothing is left, which is done
        loc = parse_location(url, s3)
        j = open_rm_journal(loc.with_prefix(_as_dir(loc.prefix)), rules, journal_path, resume=True)
        j.finish(complete=True)
        notice(f"nothing left to delete under {url}")
        result.nothing_left = True
        return result
    if src.kind == "http":
        raise UsageError("a list/get server is read-only: nothing can be deleted there")
    if single is None and not src.prefix and not all_objects:
        raise UsageError(f"{url} is a whole bucket: add --all to delete every object in it")
    run_journal = None
    if keep_journal and single is None:
        run_journal = open_rm_journal(src, rules, journal_path, resume=resume)
        result.journal = run_journal.path
        if run_journal.nothing_to_resume:
            notice(f"nothing to resume (no journal at {run_journal.path}): starting from the beginning")
        elif run_journal.resumed:
            result.resumed_deleted = run_journal.done_totals()[0]
    rows = None
    if report is not None:  # a resumed rm continues its report; a row goes out before its key's delete does
        from ..report import ReportWriter, outside

        outside(report, src)
        rows = ReportWriter(report, "rm", resume=run_journal is not None and run_journal.resumed)
    store_options = StoreOptions(resilience=ResilienceOptions(retries=retries, max_rps=max_rps))
    backup = None
    if guards.backup_dir is not None and not dry_run:
        backup = _backup_location(guards.backup_dir, src, s3, rules)
    if not dry_run and (guards.max_delete is not None or guards.max_delete_size is not None):
        await _check_caps(src, single, s3, rules, guards, store_options,
                          run_journal.resume_units() if run_journal is not None and run_journal.resumed else None)
    store = await open_store(src, store_options)
    counted = getattr(store, "requests", None)  # the store's own count (stores/requests.py)
    if counted is not None:
        result.requests = counted
    ticker = asyncio.ensure_future(_tick(result, on_progress)) if on_progress is not None else None
    note = on_key or (lambda u, why: None)
    allowed = rules.compiled().allows if rules else None
    window = asyncio.Semaphore(concurrency)
    tasks: set[asyncio.Task[None]] = set()

    async def delete(batch: list[str], after: str | None, until: str | None) -> None:
        if rows is not None and batch:
            # written before the request: a kill while it is on the wire (the keys may be gone, the
            # range not journaled, so a resume would never list them again) leaves them named
            for key in batch:
                rows.row("deleted", "", src.url_for(key))
            rows.flush()
        try:
            writer = cast(Writer, store)  # checked below, before the first batch
            unsaved: dict[str, str] = {}
            if saver is not None and batch:  # --backup-dir: only what was kept elsewhere goes
                unsaved = {k: f"not deleted: its backup failed: {why}" for k, why in await saver.save(batch)}
            doomed = [k for k in batch if k not in unsaved] if unsaved else batch
            failed = dict(await writer.delete_many(doomed)) if not dry_run and doomed else {}
            failed.update(unsaved)
            if dry_run:
                plan_deletes(len(batch), result.planned, src.kind == "s3")
        except BaseException as exc:
            if rows is not None and batch and not isinstance(exc, asyncio.CancelledError):
                for key in batch:
                    rows.row("failed", "", src.url_for(key), error=str(exc))
                rows.flush()
            raise
        finally:
            window.release()
        if rows is not None and failed:  # the later row wins: refused, not deleted
            for refused, reason in failed.items():
                rows.row("failed", "", src.url_for(refused), error=reason)
            rows.flush()
        for key in batch:
            why = failed.get(key)
            if why is None:
                result.deleted += 1
            else:
                result.failures.append((src.url_for(key), why))
            note(src.url_for(key), why)
        if run_journal is not None and not failed:
            # every key of (after, until] is gone: a resume need not list it again
            run_journal.unit_done(WorkUnit(after=after, until=until), None, len(batch), 0)
            run_journal.commit()

    async def launch(batch: list[str], after: str | None, until: str | None) -> None:
        await window.acquire()
        tasks.add(asyncio.ensure_future(delete(batch, after, until)))

    complete = False
    saver = None
    try:
        if not isinstance(store, Writer):
            raise UsageError(f"{url} cannot be written to")
        if backup is not None:
            from ..transfer.backup import open_backup
            from ..plan import TransferOptions

            saver = await open_backup(store, src, backup, guards.suffix, TransferOptions(retries=retries))
        units = run_journal.resume_units() if run_journal is not None and run_journal.resumed else [WorkUnit()]
        cut = len(src.prefix)
        for unit in units:
            pages = (_one(single, store) if single is not None
                     else list_in_order(store, src.prefix, ListingLimits(page_size=BATCH, concurrency=16), start=unit))
            batch: list[str] = []
            after = unit.after  # the batch being filled covers (after, its last listed key]
            last = after
            async for page in pages:
                result.listed += len(page)
                for obj in page:
                    last = obj.key
                    if allowed is None or allowed(obj.key[cut:]):
                        batch.append(obj.key)
                    if len(batch) == BATCH:
                        await launch(batch, after, last)
                        batch, after = [], last
            if batch or after != unit.until:
                await launch(batch, after, unit.until)
        if tasks:
            await asyncio.gather(*tasks)
        complete = not result.failures
    finally:
        for t in tasks:
            t.cancel()
        if ticker is not None:
            ticker.cancel()
        if saver is not None:
            await saver.close()
            if saver.saved:
                notice(f"{saver.saved:,} objects backed up to {backup.raw if backup else ''} before they were deleted")
        await store.close()
        if rows is not None:
            rows.close()
        result.requests = dict(result.requests)  # no longer the store's, which is closed
        if on_progress is not None:
            on_progress(result.counters())
        if run_journal is not None:
            run_journal.finish(complete=complete)
            if complete:
                result.journal = None
    return result


def _backup_location(text: str, src: Any, s3: S3Options | None, rules: Filters) -> Any:
    """--backup-dir resolved and checked: not inside (nor around) what rm deletes."""
    from ..planner import _as_dir
    from ..transfer.backup import check_backup_location

    backup = parse_location(text, s3)
    if backup.kind == "http":
        raise UsageError("--backup-dir must be writable: an S3 prefix or a local directory")
    if backup.kind == "s3":
        backup = backup.with_prefix(_as_dir(backup.prefix))
    check_backup_location(backup, src, None, rules.compiled().allows if rules else None)
    return backup


async def _check_caps(src: Any, single: str | None, s3: S3Options | None, rules: Filters, guards: _Guards,
                      options: Any, units: list[WorkUnit] | None) -> None:
    """rm --max-delete / --max-delete-size: count what would go (one listing, counts only), then
    refuse the whole run (TooManyDeletes) when it is over a cap. P% is of the objects under URL."""
    from ...config.delete_caps import check_caps
    from ...stores import open_store
    from ..listing.split import ListingLimits, list_in_order

    store = await open_store(src, options)
    allowed = rules.compiled().allows if rules else None
    cut = len(src.prefix)
    seen = count = nbytes = 0
    try:
        for unit in units or [WorkUnit()]:
            pages = (_one(single, store) if single is not None
                     else list_in_order(store, src.prefix, ListingLimits(page_size=BATCH, concurrency=16), start=unit))
            async for page in pages:
                for obj in page:
                    seen += 1
                    if allowed is None or allowed(obj.key[cut:]):
                        count += 1
                        nbytes += obj.size or 0
    finally:
        await store.close()
    check_caps("rm", count, nbytes, seen, guards.max_delete, guards.max_delete_size)


async def _tick(result: RmResult, on_progress: Callable[[Counters], None]) -> None:
    """on_progress(the counts so far) about four times a second, on the run's loop."""
    while True:
        on_progress(result.counters())
        await asyncio.sleep(0.25)


async def _one(key: str, store: Any) -> AsyncIterator[list[ObjectInfo]]:
    yield [await store.head(key)]
