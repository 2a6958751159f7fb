"""The Python API: the same operations as the command line, without any terminal output.

Every operation has a synchronous form and an `*_async` twin for use inside a running event loop
(Jupyter, an async application): `copy` / `copy_async`, `sync` / `sync_async`, `watch` /
`watch_async`, `move` / `move_async`, `check` / `check_async`, `check_report` /
`check_report_async`, `ls` / `ls_async`, `ls_pages` / `ls_pages_async`, `du` / `du_async`, `rm` /
`rm_async`, `upload_stream` / `upload_stream_async`, `download_stream` / `download_stream_async`.
Each returns a typed result (Summary, CheckResult, ReceiptResult, DuResult, RmResult, PipeResult,
or ObjectInfo per object). Nothing here prints: what a run has to say goes to its subscriber as
events, and the command line (cli/) prints them. Keyword names and defaults are the command
line's (config/defaults.py holds the ones both use); an older keyword kept for one release goes
through `_deprecated`, and docs/reference/api.md lists it.

A run's events (progress, failures, dry-run actions, differences, ...) reach a `Subscriber`
(engine/events.py) passed as `subscriber=`. The work itself happens in the engine: engine/run/orchestrate.py runs copy / sync / mv / check,
engine/actions/rm.py deletes, engine/actions/ls.py lists; this module checks arguments and documents them.
"""

from __future__ import annotations

import asyncio
import os
import threading
import warnings
from datetime import datetime, timedelta
from typing import (IO, Any, AsyncIterator, Awaitable, Callable, Generator, Iterator, Literal, ParamSpec, Sequence,
                    TypeVar, cast, overload)

from .config.defaults import LIST_CONCURRENCY
from .engine.events import (Copied, Deleted, Difference, DryRunAction, Event, Notice, Progress, Relay, Restarted,
                            Skipped, Stopping, Subscriber, WatchStatus)
from .engine.actions.ls import DuResult, level_rows, list_levels, list_pages, list_rendered, stepped
from .engine.transfer.pipes import PipeResult
from .engine.job import Job, JournalChoice, Manifest
from .engine.plan import Compare, TransferOptions
from .engine.actions.rm import RmResult
from .errors import UsageError
from .config.filters import Filters
from .model import Counters, Failure, ObjectInfo, Summary, WorkUnit
from .config.urls import S3Options
from .engine.actions.versions import VersionsResult
from .engine.actions.receipt import ReceiptResult

__all__ = [
    "copy", "copy_async", "sync", "sync_async", "watch", "watch_async", "move", "move_async", "check",
    "check_async", "check_report", "check_report_async", "ls", "ls_async", "ls_pages", "ls_pages_async",
    "ls_rendered", "ls_rendered_async",
    "du", "du_async", "du_groups", "rm", "rm_async",
    "upload_stream", "upload_stream_async", "download_stream", "download_stream_async", "copy_versions",
    "Summary", "CheckResult", "ReceiptResult", "DuResult", "RmResult", "PipeResult", "VersionsResult", "ObjectInfo",
    "TransferOptions", "S3Options", "FilterRules",
    "Subscriber", "Event", "Progress", "Failure", "Stopping", "Notice", "Copied", "Deleted", "Restarted",
    "DryRunAction", "Difference", "WatchStatus", "Skipped",
]

FilterRules = Sequence[tuple[str, str]]  # ("include" | "exclude", glob), in order; the last match wins
AgeLimit = str | datetime | timedelta  # "7d", "90m", "2026-11-01"; a timedelta back from now; a datetime (naive: UTC)
RuleFiles = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]  # one rules file, or several
P = ParamSpec("P")
R = TypeVar("R")


def copy(src: str, dst: str, *, options: TransferOptions | None = None,
         src_s3: S3Options | None = None, dst_s3: S3Options | None = None,
         subscriber: Subscriber | None = None,
         max_memory: int | str | None = None, start: WorkUnit | None = None,
         should_stop: Callable[[], bool] | None = None, journal: str | None = None, resume: bool = False,
         files_from: str | None = None, files_from_format: str = "auto", include: Sequence[str] = (),
         exclude: Sequence[str] = (), filters: FilterRules | None = None,
         min_size: int | str | None = None, max_size: int | str | None = None, min_age: AgeLimit | None = None,
         max_age: AgeLimit | None = None, include_from: RuleFiles = (), exclude_from: RuleFiles = (),
         filter_from: RuleFiles = (), max_depth: int | None = None, exclude_if_present: str | None = None,
         cluster: object = None,
         move: bool = False, report_objects: bool = False, report: str | None = None, dry_run: bool = False,
         no_clobber: bool = False, update: bool = False, max_transfer: int | str | None = None,
         max_duration: float | str | None = None, backup_dir: str | None = None, suffix: str = "") -> Summary:
    """Copy SRC to DST (see `s3bulk copy --help` for the URL forms). Raises S3BulkError when
    nothing could start (bad URL, bad option: UsageError, missing bucket, ...); per-object failures
    are in the Summary.

    options: TransferOptions (sizes as numbers or strings such as "8MiB"; checked when built).
    max_memory: stay under this much RSS, bytes or "128MiB" (workers, transfers and parts are derived).
    start / should_stop: continue from a unit an earlier run returned as `summary.resume`; stop
    taking new work once should_stop() is true (the summary then says where to resume).
    journal / resume: keep a resume journal in this file (none by default in the API; the command
    line keeps one by default); resume=True continues the interrupted run it records (UsageError
    when there is none, or it belongs to another run). A complete run removes its journal.
    files_from: copy the keys this manifest names instead of listing SRC (see `--files-from`).
    include / exclude / filters: as `--include` / `--exclude` (filters keeps their order).
    move: deprecated (it goes in the next release; a DeprecationWarning says so): call `move`.
    cluster: run the work units as tasks on a Dask cluster: a scheduler address (tcp://host:8786),
    "local" / "local:N" (a LocalCluster of N worker processes), or a distributed.Client (left open).
    Needs `pip install 's3bulk[dask]'` (UsageError otherwise).
    subscriber: a Subscriber whose methods receive the run's events (on_progress with Progress,
    on_failure with Failure, on_stopping, on_notice, on_restarted; for sync(dry_run=True) on_dry_run
    per key). report_objects=True adds on_copied (and on_deleted for a move or sync --delete) per
    object, as `--json -v` prints them: a message per object from each worker, so off by default.
    report: a file (.csv or .jsonl) that gets one row per object as the run goes (`--report`:
    outcome, source, destination, size, ETag, error); resume=True continues the same file, so it
    names every object of the job with its final outcome.
    dry_run: plan the run without writing or deleting anything: the subscriber's on_dry_run gets
    each would-be copy (a DryRunAction: `event.line()` is the command line's line for it) and the
    summary the estimate of its requests (`summary.estimate()`). Nothing is printed.
    no_clobber: never replace what DST has (conditional writes: race-free); update: skip keys whose
    DST copy is newer; both count such keys in `counters.kept` (and skipped).
    max_transfer (bytes or "50GiB") / max_duration (seconds or "10m"): stop gracefully once reached,
    as Ctrl-C does, with `summary.capped` naming the cap; with a journal, resume=True goes on.
    backup_dir (a URL: an S3 prefix or a local directory, not inside DST or around it, nor
    overlapping SRC) and suffix: an object DST already holds is first copied there (same key
    relative to DST, + suffix) before it is overwritten, found by one HEAD per object; one whose
    backup failed is not overwritten (a failure; with move, its source stays).
    Ctrl-C (in the main thread) stops gracefully: the summary comes back with interrupted=True.
    Inside a running event loop (Jupyter, an async app) use `copy_async`."""
    if move:
        _deprecated("copy(move=True)", "move()")
    rules = _filters(include, exclude, filters, min_size=min_size, max_size=max_size, min_age=min_age,
                     max_age=max_age, include_from=include_from, exclude_from=exclude_from,
                     filter_from=filter_from, max_depth=max_depth, exclude_if_present=exclude_if_present)
    return _copy("mv" if move else "copy", src, dst, options=options, src_s3=src_s3, dst_s3=dst_s3,
                 subscriber=subscriber, max_memory=max_memory, start=start, should_stop=should_stop,
                 journal=journal, resume=resume, files_from=files_from, files_from_format=files_from_format,
                 filters=rules, cluster=cluster,
                 report_objects=report_objects,
                 report=report, dry_run=dry_run, no_clobber=no_clobber, update=update, max_transfer=max_transfer,
                 max_duration=max_duration, backup_dir=backup_dir, suffix=suffix)


def _copy(command: Literal["copy", "mv"], src: str, dst: str, *, options: TransferOptions | None, src_s3: S3Options | None,
          dst_s3: S3Options | None, subscriber: Subscriber | None, max_memory: int | str | None,
          start: WorkUnit | None, should_stop: Callable[[], bool] | None, journal: str | None, resume: bool,
          files_from: str | None, files_from_format: str, filters: Filters, cluster: object, report_objects: bool, report: str | None, dry_run: bool,
          no_clobber: bool, update: bool, max_transfer: int | str | None, max_duration: float | str | None,
          backup_dir: str | None, suffix: str) -> Summary:
    """The one body of `copy` and `move` (command "copy" or "mv"): their keywords as one Job, run."""
    options = _guarded(options, dry_run=dry_run, no_clobber=no_clobber, update=update,
                       max_transfer=max_transfer, max_duration=max_duration, backup_dir=backup_dir, suffix=suffix)
    job = Job(command, src, dst, options=options or TransferOptions(), src_s3=src_s3,
              dst_s3=dst_s3, filters=filters,
              manifest=None if files_from is None else Manifest(files_from, files_from_format),
              journal=JournalChoice(path=None if dry_run else journal, resume=resume), max_memory=max_memory,
              start=start, report=report, report_objects=report_objects)
    return run_job(job, _subscriber(subscriber), should_stop=should_stop, cluster=cluster)


def sync(src: str, dst: str, *, delete: bool = False, dry_run: bool = False, compare: str = "default",
         hash_cache: str | None = None, options: TransferOptions | None = None,
         src_s3: S3Options | None = None, dst_s3: S3Options | None = None,
         subscriber: Subscriber | None = None,
         max_memory: int | str | None = None, journal: str | None = None, resume: bool = False,
         include: Sequence[str] = (), exclude: Sequence[str] = (), filters: FilterRules | None = None,
         min_size: int | str | None = None, max_size: int | str | None = None, min_age: AgeLimit | None = None,
         max_age: AgeLimit | None = None, include_from: RuleFiles = (), exclude_from: RuleFiles = (),
         filter_from: RuleFiles = (), max_depth: int | None = None, exclude_if_present: str | None = None,
         cluster: object = None, report_objects: bool = False, report: str | None = None,
         watch: bool = False, stop: StopHandle = None, watch_queue: str | None = None,
         watch_interval: float = 60.0, reconcile_every: float = 6 * 3600.0, no_clobber: bool = False,
         update: bool = False, max_transfer: int | str | None = None,
         max_duration: float | str | None = None, delete_during: bool = False,
         allow_empty_source: bool = False, max_delete: int | str | None = None,
         max_delete_size: int | str | None = None, backup_dir: str | None = None, suffix: str = "") -> Summary:
    """Make DST hold what SRC holds, as `s3bulk sync`: copy what is missing or different, skip
    what is equal, and with delete=True remove DST keys SRC lacks (not those filtered out).
    compare: "default" (size, or SRC newer), "size-only", "exact-timestamps" or "checksum".
    dry_run changes nothing: the subscriber's on_dry_run gets each would-be copy and delete as a
    DryRunAction (`event.line()` is the command line's line for it); nothing is printed.
    watch=True keeps DST equal to SRC after the sync until `stop` says so: see `watch` (stop,
    watch_queue, watch_interval and reconcile_every are its arguments).
    Deletes happen once every copy succeeded, and not at all when one failed (the summary's notice
    says how many were not done); delete_during=True deletes each unit's keys once its own copies
    are done instead. A SRC that lists nothing while DST holds objects is refused (UsageError)
    unless allow_empty_source=True. max_delete (a count, or "P%" of DST's objects seen) and
    max_delete_size (bytes or "10GiB"): a run that would delete more deletes nothing (summary.fatal,
    exit code 4). backup_dir (a URL) and suffix: what is deleted or overwritten is first copied there.
    The other arguments are as for `copy`."""
    from .engine.plan import SyncOptions

    options = _guarded(options, no_clobber=no_clobber, update=update, max_transfer=max_transfer,
                       max_duration=max_duration)
    if watch and (dry_run or resume or cluster is not None or report is not None):
        raise UsageError("watch=True cannot be used with dry_run, resume, cluster or report")
    checked = _compare(compare)
    if resume and dry_run:
        raise UsageError("resume needs the journal, which a dry run does not keep")
    rules = _filters(include, exclude, filters, min_size=min_size, max_size=max_size, min_age=min_age,
                     max_age=max_age, include_from=include_from, exclude_from=exclude_from,
                     filter_from=filter_from, max_depth=max_depth, exclude_if_present=exclude_if_present)
    events = _subscriber(subscriber)
    sync_options = SyncOptions(delete=delete, dry_run=dry_run, compare=checked, hash_cache=hash_cache,
                               **_delete_guards(delete, delete_during, allow_empty_source, max_delete,
                                                max_delete_size, backup_dir, suffix))
    job = Job("sync", src, dst, options=options or TransferOptions(), sync=sync_options, src_s3=src_s3,
              dst_s3=dst_s3, filters=rules, journal=JournalChoice(path=None if dry_run else journal, resume=resume),
              max_memory=max_memory, report=report, report_objects=report_objects)
    if watch:
        return _watched(job, events, stop, queue=watch_queue, interval=watch_interval,
                        reconcile_every=reconcile_every)
    return run_job(job, events, cluster=cluster)


def run_job(job: Job, subscriber: Subscriber | None = None, *, should_stop: Callable[[], bool] | None = None,
            cluster: object = None) -> Summary:
    """Run a copy, mv, sync or check built as one `Job` (engine/job.py): the one run under `copy`,
    `move`, `sync` and `check`, and the Lambda handler's. `cluster` as for `copy`: its runner is
    made here, so the job stays plain data (no connection, no credentials)."""
    from .engine.run.orchestrate import run

    runner = None
    if cluster is not None:  # the Dask driver is imported only for a cluster run
        from .cluster.driver import runner_for

        runner = runner_for(cluster)
    return run(job, subscriber=subscriber, should_stop=should_stop, runner=runner)


def _compare(compare: str) -> Compare:
    """sync's `compare=`, checked."""
    if compare in ("default", "size-only", "exact-timestamps", "checksum"):
        return cast(Compare, compare)
    raise UsageError(f"compare must be default, size-only, exact-timestamps or checksum, not {compare!r}")


StopHandle = Callable[[], bool] | threading.Event | None


def _delete_guards(delete: bool, delete_during: bool, allow_empty_source: bool, max_delete: int | str | None,
                   max_delete_size: int | str | None, backup_dir: str | None, suffix: str) -> dict[str, Any]:
    """sync's guarded-delete keywords, checked as the command line checks them, as SyncOptions fields."""
    from .config.delete_caps import parse_max_delete
    from .config.sizes import parse_size

    if not delete and (delete_during or allow_empty_source or max_delete is not None or max_delete_size is not None):
        raise UsageError("delete_during, allow_empty_source, max_delete and max_delete_size go with delete=True")
    if delete_during and (max_delete is not None or max_delete_size is not None):
        raise UsageError("max_delete and max_delete_size need the deletes at the end of the run, not delete_during")
    if suffix and not backup_dir:
        raise UsageError("suffix goes with backup_dir")
    size = parse_size(max_delete_size, "max_delete_size") if isinstance(max_delete_size, str) else max_delete_size
    return {"delete_during": delete_during, "allow_empty_source": allow_empty_source,
            "max_delete": parse_max_delete(max_delete), "max_delete_size": size, "backup_dir": backup_dir,
            "suffix": suffix}


def watch(src: str, dst: str, *, stop: StopHandle = None, delete: bool = False, compare: str = "default",
          hash_cache: str | None = None, watch_queue: str | None = None, watch_interval: float = 60.0,
          reconcile_every: float = 6 * 3600.0, options: TransferOptions | None = None,
          src_s3: S3Options | None = None, dst_s3: S3Options | None = None,
          subscriber: Subscriber | None = None,
          max_memory: int | str | None = None, journal: str | None = None, include: Sequence[str] = (),
          exclude: Sequence[str] = (), filters: FilterRules | None = None,
          min_size: int | str | None = None, max_size: int | str | None = None, min_age: AgeLimit | None = None,
          max_age: AgeLimit | None = None, include_from: RuleFiles = (), exclude_from: RuleFiles = (),
          filter_from: RuleFiles = (), max_depth: int | None = None, exclude_if_present: str | None = None,
          report_objects: bool = True, delete_during: bool = False, allow_empty_source: bool = False,
          max_delete: int | str | None = None, max_delete_size: int | str | None = None,
          backup_dir: str | None = None, suffix: str = "", queue: str | None = None,
          interval: float | None = None) -> Summary:
    """Keep DST equal to SRC, as `s3bulk sync SRC DST --watch`: one full sync, then a sync narrowed
    to each batch of changes, until `stop` (a threading.Event, or a callable returning True) says
    so; returns the totals of every sync, `interrupted=True` once stopped. See the Watch guide.

    A local SRC is watched through filesystem events; an S3 SRC through `watch_queue` (the URL of
    the SQS queue its bucket's event notifications go to) or, without one, by a full sync every
    `watch_interval` seconds (the names `sync(watch=True)` and `--watch-queue` / `--watch-interval`
    use; `queue` and `interval` are their deprecated older names, which warn and go in the next
    release). Every `reconcile_every` seconds (0: never) a full sync catches whatever
    the events missed. The subscriber receives a WatchStatus (lag, changes handled, queue depth)
    about once a second, and with report_objects (the default here) a Copied or Deleted per object.
    Stopping lets the sync in flight finish (a full sync lists through one chain when a stop
    handle is given, so it can stop between pages). The other arguments are as for `sync`."""
    from .engine.plan import SyncOptions

    if queue is not None:
        _deprecated("watch(queue=)", "watch_queue=")
        watch_queue = queue
    if interval is not None:
        _deprecated("watch(interval=)", "watch_interval=")
        watch_interval = interval
    checked = _compare(compare)
    sync_options = SyncOptions(delete=delete, compare=checked, hash_cache=hash_cache,
                               **_delete_guards(delete, delete_during, allow_empty_source, max_delete,
                                                max_delete_size, backup_dir, suffix))
    rules = _filters(include, exclude, filters, min_size=min_size, max_size=max_size, min_age=min_age,
                     max_age=max_age, include_from=include_from, exclude_from=exclude_from,
                     filter_from=filter_from, max_depth=max_depth, exclude_if_present=exclude_if_present)
    job = Job("sync", src, dst, options=options or TransferOptions(), sync=sync_options, src_s3=src_s3,
              dst_s3=dst_s3, filters=rules, journal=JournalChoice(path=journal),
              max_memory=max_memory, report_objects=report_objects)
    return _watched(job, _subscriber(subscriber), stop, queue=watch_queue, interval=watch_interval,
                    reconcile_every=reconcile_every)


def _watched(job: Job, events: Subscriber | None, stop: StopHandle, *, queue: str | None, interval: float,
             reconcile_every: float) -> Summary:
    """`job`, a sync, kept up until `stop` says so (engine/watch/watcher.py)."""
    from .engine.watch.watcher import WatchOptions, watch as engine_watch

    should_stop = stop.is_set if isinstance(stop, threading.Event) else stop
    return engine_watch(job, subscriber=events, should_stop=should_stop,
                        watch_options=WatchOptions(queue_url=queue, interval=interval,
                                                   reconcile_every=reconcile_every))


def move(src: str, dst: str, *, options: TransferOptions | None = None,
         src_s3: S3Options | None = None, dst_s3: S3Options | None = None,
         subscriber: Subscriber | None = None,
         max_memory: int | str | None = None, start: WorkUnit | None = None,
         should_stop: Callable[[], bool] | None = None, journal: str | None = None, resume: bool = False,
         files_from: str | None = None, files_from_format: str = "auto", include: Sequence[str] = (),
         exclude: Sequence[str] = (), filters: FilterRules | None = None,
         min_size: int | str | None = None, max_size: int | str | None = None, min_age: AgeLimit | None = None,
         max_age: AgeLimit | None = None, include_from: RuleFiles = (), exclude_from: RuleFiles = (),
         filter_from: RuleFiles = (), max_depth: int | None = None, exclude_if_present: str | None = None,
         cluster: object = None,
         report_objects: bool = False, report: str | None = None, dry_run: bool = False,
         no_clobber: bool = False, update: bool = False, max_transfer: int | str | None = None,
         max_duration: float | str | None = None, backup_dir: str | None = None, suffix: str = "") -> Summary:
    """`s3bulk mv`: `copy`, every argument as for it, and each source object is deleted
    once its copy has landed; a copy that failed or was interrupted, or a key DST kept (no_clobber,
    update), never deletes its source. backup_dir and suffix: what DST holds under a key is first
    copied there before it is overwritten; a failed backup overwrites nothing and deletes no source."""
    rules = _filters(include, exclude, filters, min_size=min_size, max_size=max_size, min_age=min_age,
                     max_age=max_age, include_from=include_from, exclude_from=exclude_from,
                     filter_from=filter_from, max_depth=max_depth, exclude_if_present=exclude_if_present)
    return _copy("mv", src, dst, options=options, src_s3=src_s3, dst_s3=dst_s3, subscriber=subscriber,
                 max_memory=max_memory, start=start, should_stop=should_stop, journal=journal,
                 resume=resume, files_from=files_from, files_from_format=files_from_format,
                 filters=rules,
                 cluster=cluster, report_objects=report_objects,
                 report=report, dry_run=dry_run, no_clobber=no_clobber, update=update, max_transfer=max_transfer,
                 max_duration=max_duration, backup_dir=backup_dir, suffix=suffix)


def _guarded(options: TransferOptions | None, *, dry_run: bool = False, no_clobber: bool = False,
             update: bool = False, max_transfer: int | str | None = None,
             max_duration: float | str | None = None, backup_dir: str | None = None,
             suffix: str = "") -> TransferOptions | None:
    """`options` with the keywords copy, sync and move take beside it (each only when given, so
    what `options` says stands otherwise); durations as seconds or "10m". backup_dir and suffix
    are copy's and move's (sync's go in its SyncOptions)."""
    import dataclasses

    given: dict[str, Any] = {}
    if suffix and not backup_dir:
        raise UsageError("suffix goes with backup_dir")
    if backup_dir:
        given["backup_dir"], given["backup_suffix"] = backup_dir, suffix
    if dry_run:
        given["dry_run"] = True
    if no_clobber:
        given["no_clobber"] = True
    if update:
        given["update"] = True
    if max_transfer is not None:
        given["max_transfer"] = max_transfer
    if max_duration is not None:
        from .config.sizes import parse_duration

        given["max_duration"] = parse_duration(max_duration, "max_duration") if isinstance(max_duration, str) \
            else float(max_duration)
    if not given:
        return options
    return dataclasses.replace(options or TransferOptions(), **given)


def check(src: str, dst: str, *, checksum: bool = False, one_way: bool = False,
          hash_cache: str | None = None, options: TransferOptions | None = None,
          src_s3: S3Options | None = None, dst_s3: S3Options | None = None,
          subscriber: Subscriber | None = None, include: Sequence[str] = (),
          exclude: Sequence[str] = (), filters: FilterRules | None = None,
          min_size: int | str | None = None, max_size: int | str | None = None, min_age: AgeLimit | None = None,
          max_age: AgeLimit | None = None, include_from: RuleFiles = (), exclude_from: RuleFiles = (),
          filter_from: RuleFiles = (), max_depth: int | None = None, exclude_if_present: str | None = None,
          report: str | None = None,
          json_lines: bool | None = None) -> CheckResult:
    """`s3bulk check`: compare SRC with DST as `sync` would, changing nothing (a sync dry run that
    names each difference). By size, or with checksum=True by content too; one_way=True leaves out
    keys only in DST. The subscriber's on_difference gets each difference as a Difference as it
    comes (`event.line()` is the command line's line for it, `event.json_fields()` its JSON), so
    memory stays flat however many there are; nothing is printed. The counts come back in a
    CheckResult. report: a file (.csv or .jsonl) with a row per key: same, differs, missing (only
    in SRC) or extra (only in DST). json_lines: deprecated and without effect (it chose how
    differences were printed); it warns, and goes in the next release."""
    from .engine.plan import SyncOptions

    if json_lines is not None:
        _deprecated("check(json_lines=)", "a subscriber's on_difference (event.json_fields())")

    rules = _filters(include, exclude, filters, min_size=min_size, max_size=max_size, min_age=min_age,
                     max_age=max_age, include_from=include_from, exclude_from=exclude_from,
                     filter_from=filter_from, max_depth=max_depth, exclude_if_present=exclude_if_present)
    opts = SyncOptions(delete=not one_way, dry_run=True, compare="checksum" if checksum else "size-only",
                       hash_cache=hash_cache, check=True)
    job = Job("check", src, dst, options=options or TransferOptions(), sync=opts, src_s3=src_s3, dst_s3=dst_s3,
              filters=rules, report=report)
    return CheckResult(run_job(job, _subscriber(subscriber)))


def check_report(report: str, dst: str, *, s3: S3Options | None = None, concurrency: int = 64,
                 subscriber: Subscriber | None = None) -> ReceiptResult:
    """`s3bulk check --against-report REPORT DST`: read a report a copy, sync or mv wrote (`report=`,
    `--report`) as the list of what must be at DST, and look each object up there (one HEAD each,
    `concurrency` at once): every object whose last row is copied, skipped, moved or same must be
    there with the recorded size (and ETag, where both are plain MD5s). The subscriber's
    on_difference gets each one missing (`only-in-src`) or changed (`differs`); the counts come back
    in a ReceiptResult (`ok`, `checked`, `same`, `differs`, `missing`). UsageError when the report
    names objects outside DST."""
    from .engine.actions.receipt import check_receipt

    to = _subscriber(subscriber)
    return check_receipt(report, dst, s3, concurrency=concurrency, subscriber=to)


class CheckResult:
    """What `check` found: `identical` (no difference and no failure), the counts of keys `same`,
    `differ`, `only_in_src`, `only_in_dst` (and the older `identical_objects`,
    `only_in_src_or_differs`), and the run's Summary (whose `ok` is False when anything differs)."""

    __slots__ = ("summary",)

    def __init__(self, summary: Summary) -> None:
        self.summary = summary

    @property
    def same(self) -> int:
        return self.summary.counters.skipped

    @property
    def differ(self) -> int:
        return self.summary.counters.differ

    @property
    def only_in_src(self) -> int:
        c = self.summary.counters
        return c.done - c.differ

    @property
    def identical_objects(self) -> int:
        return self.summary.counters.skipped

    @property
    def only_in_src_or_differs(self) -> int:
        return self.summary.counters.done

    @property
    def only_in_dst(self) -> int:
        return self.summary.counters.deleted

    @property
    def identical(self) -> bool:
        c = self.summary.counters
        return not (c.done or c.deleted or c.failed) and not self.summary.fatal

    def __repr__(self) -> str:
        return (f"CheckResult(identical={self.identical}, same={self.same}, differ={self.differ}, "
                f"only_in_src={self.only_in_src}, only_in_dst={self.only_in_dst})")


def ls_pages_async(url: str, *, s3: S3Options | None = None, page_size: int = 1000,
                   concurrency: int = LIST_CONCURRENCY, ordered: bool = True,
                   include: Sequence[str] = (), exclude: Sequence[str] = (),
                   filters: FilterRules | None = None,
                   min_size: int | str | None = None, max_size: int | str | None = None,
                   min_age: AgeLimit | None = None, max_age: AgeLimit | None = None, include_from: RuleFiles = (),
                   exclude_from: RuleFiles = (), filter_from: RuleFiles = (), max_depth: int | None = None,
                   exclude_if_present: str | None = None) -> AsyncIterator[list[ObjectInfo]]:
    """Every object URL names, a page at a time, in key order. URL is read as `copy` reads SRC:
    s3://BUCKET/NAME is the object NAME if there is one, else everything under NAME/ (NotFound when
    neither exists). The key space is split into ranges listed `concurrency` at a time
    (engine/listing/split.py); 1 lists through a single chain. Pages listed ahead of the output wait in
    temporary files under $TMPDIR (engine/listing/spill.py; at most LS_SPILL_BYTES of engine/actions/ls.py, removed as
    they are yielded and when the listing ends), so memory stays flat. `ordered=False` yields pages
    as they arrive (each in key order within itself): faster, nothing held. The filter keywords
    (include ... exclude_if_present, as for `copy`): only the objects they keep; a page they leave
    empty is not yielded."""
    rules = _filters(include, exclude, filters, min_size=min_size, max_size=max_size, min_age=min_age,
                     max_age=max_age, include_from=include_from, exclude_from=exclude_from,
                     filter_from=filter_from, max_depth=max_depth, exclude_if_present=exclude_if_present)
    return list_pages(url, s3=s3, page_size=page_size, concurrency=concurrency, ordered=ordered,
                      filters=rules or None)


LsRow = ObjectInfo | str
"""A row of `ls(url, recursive=False)`: an object directly under URL (ObjectInfo), or a prefix
below it (str: the whole key prefix, ending in "/", as S3's CommonPrefixes give it)."""


@overload
def ls_async(url: str, *, recursive: Literal[True] = True, s3: S3Options | None = None, page_size: int = 1000,
             concurrency: int = LIST_CONCURRENCY, ordered: bool = True,
             include: Sequence[str] = (), exclude: Sequence[str] = (),
             filters: FilterRules | None = None, min_size: int | str | None = None, max_size: int | str | None = None,
             min_age: AgeLimit | None = None, max_age: AgeLimit | None = None, include_from: RuleFiles = (),
             exclude_from: RuleFiles = (), filter_from: RuleFiles = (), max_depth: int | None = None,
             exclude_if_present: str | None = None) -> AsyncIterator[ObjectInfo]: ...
@overload
def ls_async(url: str, *, recursive: bool, s3: S3Options | None = None,
             page_size: int = 1000) -> AsyncIterator[LsRow]: ...
async def ls_async(url: str, *, recursive: bool = True, s3: S3Options | None = None, page_size: int = 1000,
                   concurrency: int = LIST_CONCURRENCY, ordered: bool = True,
                   include: Sequence[str] = (), exclude: Sequence[str] = (),
                   filters: FilterRules | None = None,
                   min_size: int | str | None = None, max_size: int | str | None = None,
                   min_age: AgeLimit | None = None, max_age: AgeLimit | None = None, include_from: RuleFiles = (),
                   exclude_from: RuleFiles = (), filter_from: RuleFiles = (), max_depth: int | None = None,
                   exclude_if_present: str | None = None) -> AsyncIterator[LsRow]:
    """Every object URL names, in key order unless `ordered=False` (see `ls_pages_async`; the
    filter keywords as for it). recursive=False lists one level, as `s3bulk ls --no-recursive`
    and `aws s3 ls` do: the objects directly under URL (ObjectInfo) and the prefixes below it (str,
    the whole key prefix ending in "/", e.g. "photos/2026/"), merged in key order, through one
    chain of delimiter listings; UsageError with a filter keyword, which a one-level listing does
    not take."""
    if not recursive:
        rules = _filters(include, exclude, filters, min_size=min_size, max_size=max_size, min_age=min_age,
                         max_age=max_age, include_from=include_from, exclude_from=exclude_from,
                         filter_from=filter_from, max_depth=max_depth, exclude_if_present=exclude_if_present)
        if rules:
            raise UsageError("a one-level listing (recursive=False) takes no filters: list it recursively")
        async for page in list_levels(url, s3=s3, page_size=page_size):
            for row in level_rows(page):
                yield row
        return
    async for entries in ls_pages_async(url, s3=s3, page_size=page_size, concurrency=concurrency, ordered=ordered,
                                        include=include, exclude=exclude, filters=filters, min_size=min_size,
                                        max_size=max_size, min_age=min_age, max_age=max_age,
                                        include_from=include_from, exclude_from=exclude_from,
                                        filter_from=filter_from, max_depth=max_depth,
                                        exclude_if_present=exclude_if_present):
        for entry in entries:
            yield entry


def ls_pages(url: str, *, s3: S3Options | None = None, page_size: int = 1000,
             concurrency: int = LIST_CONCURRENCY, ordered: bool = True,
             include: Sequence[str] = (), exclude: Sequence[str] = (),
             filters: FilterRules | None = None, min_size: int | str | None = None, max_size: int | str | None = None,
             min_age: AgeLimit | None = None, max_age: AgeLimit | None = None, include_from: RuleFiles = (),
             exclude_from: RuleFiles = (), filter_from: RuleFiles = (), max_depth: int | None = None,
             exclude_if_present: str | None = None) -> Iterator[list[ObjectInfo]]:
    """Synchronous form of `ls_pages_async`: runs its own event loop, one step per page."""
    rules = _filters(include, exclude, filters, min_size=min_size, max_size=max_size, min_age=min_age,
                     max_age=max_age, include_from=include_from, exclude_from=exclude_from,
                     filter_from=filter_from, max_depth=max_depth, exclude_if_present=exclude_if_present)
    return stepped(list_pages(url, s3=s3, page_size=page_size, concurrency=concurrency, ordered=ordered,
                              filters=rules or None))


@overload
def ls(url: str, *, recursive: Literal[True] = True, s3: S3Options | None = None, page_size: int = 1000,
       concurrency: int = LIST_CONCURRENCY, ordered: bool = True,
       include: Sequence[str] = (), exclude: Sequence[str] = (),
       filters: FilterRules | None = None, min_size: int | str | None = None, max_size: int | str | None = None,
       min_age: AgeLimit | None = None, max_age: AgeLimit | None = None, include_from: RuleFiles = (),
       exclude_from: RuleFiles = (), filter_from: RuleFiles = (), max_depth: int | None = None,
       exclude_if_present: str | None = None) -> Iterator[ObjectInfo]: ...
@overload
def ls(url: str, *, recursive: bool, s3: S3Options | None = None, page_size: int = 1000) -> Iterator[LsRow]: ...
def ls(url: str, *, recursive: bool = True, s3: S3Options | None = None, page_size: int = 1000,
       concurrency: int = LIST_CONCURRENCY, ordered: bool = True,
       include: Sequence[str] = (), exclude: Sequence[str] = (),
       filters: FilterRules | None = None, min_size: int | str | None = None, max_size: int | str | None = None,
       min_age: AgeLimit | None = None, max_age: AgeLimit | None = None, include_from: RuleFiles = (),
       exclude_from: RuleFiles = (), filter_from: RuleFiles = (), max_depth: int | None = None,
       exclude_if_present: str | None = None) -> Iterator[LsRow]:
    """Every object URL names, in key order unless `ordered=False` (see `ls_pages_async`), from an
    event loop of its own; inside a running event loop use `ls_async`. The filter keywords
    (include ... exclude_if_present) as for `copy`: only the objects they keep.
    recursive=False: one level, as `s3bulk ls --no-recursive` and `aws s3 ls` list it: the objects
    directly under URL (ObjectInfo) and the prefixes below it (str, the whole key prefix ending in
    "/", e.g. "photos/2026/"), merged in key order (a row is `isinstance(row, str)` for a prefix);
    no filter keywords then (UsageError)."""
    rules = _filters(include, exclude, filters, min_size=min_size, max_size=max_size, min_age=min_age,
                     max_age=max_age, include_from=include_from, exclude_from=exclude_from,
                     filter_from=filter_from, max_depth=max_depth, exclude_if_present=exclude_if_present)
    if not recursive:
        if rules:
            raise UsageError("a one-level listing (recursive=False) takes no filters: list it recursively")
        for page in stepped(list_levels(url, s3=s3, page_size=page_size)):
            yield from level_rows(page)
        return
    for entries in stepped(list_pages(url, s3=s3, page_size=page_size, concurrency=concurrency, ordered=ordered,
                                      filters=rules or None)):
        yield from entries


def ls_rendered_async(url: str, render: Callable[[list[ObjectInfo]], str], *, s3: S3Options | None = None,
                      concurrency: int = LIST_CONCURRENCY, ordered: bool = True,
                      include: Sequence[str] = (), exclude: Sequence[str] = (),
                      filters: FilterRules | Filters | None = None,
                      min_size: int | str | None = None, max_size: int | str | None = None,
                      min_age: AgeLimit | None = None, max_age: AgeLimit | None = None, include_from: RuleFiles = (),
                      exclude_from: RuleFiles = (), filter_from: RuleFiles = (), max_depth: int | None = None,
                      exclude_if_present: str | None = None) -> AsyncIterator[str]:
    """`ls_pages_async`, each page turned into text by `render` as soon as it is listed (the CLI's
    `ls`): a page listed ahead of the output then waits as its text, not as objects. The filter
    keywords as for `copy` (or filters= a Filters the command line built)."""
    rules = _filters(include, exclude, filters, min_size=min_size, max_size=max_size, min_age=min_age,
                     max_age=max_age, include_from=include_from, exclude_from=exclude_from,
                     filter_from=filter_from, max_depth=max_depth, exclude_if_present=exclude_if_present)
    return list_rendered(url, render, s3=s3, concurrency=concurrency, ordered=ordered, filters=rules or None)


def ls_rendered(url: str, render: Callable[[list[ObjectInfo]], str], *, s3: S3Options | None = None,
                concurrency: int = LIST_CONCURRENCY, ordered: bool = True,
                include: Sequence[str] = (), exclude: Sequence[str] = (),
                filters: FilterRules | Filters | None = None,
                min_size: int | str | None = None, max_size: int | str | None = None,
                min_age: AgeLimit | None = None, max_age: AgeLimit | None = None, include_from: RuleFiles = (),
                exclude_from: RuleFiles = (), filter_from: RuleFiles = (), max_depth: int | None = None,
                exclude_if_present: str | None = None) -> Generator[str, None, None]:
    """Synchronous form of `ls_rendered_async`: runs its own event loop, one step per page."""
    rules = _filters(include, exclude, filters, min_size=min_size, max_size=max_size, min_age=min_age,
                     max_age=max_age, include_from=include_from, exclude_from=exclude_from,
                     filter_from=filter_from, max_depth=max_depth, exclude_if_present=exclude_if_present)
    return stepped(list_rendered(url, render, s3=s3, concurrency=concurrency, ordered=ordered, filters=rules or None))


def du_groups(url: str, *, s3: S3Options | None = None, depth: int = 0, concurrency: int = 16,
              classes: dict[str, list[int]] | None = None, unsized: list[int] | None = None,
              include: Sequence[str] = (), exclude: Sequence[str] = (),
              filters: FilterRules | Filters | None = None,
              min_size: int | str | None = None, max_size: int | str | None = None,
              min_age: AgeLimit | None = None, max_age: AgeLimit | None = None, include_from: RuleFiles = (),
              exclude_from: RuleFiles = (), filter_from: RuleFiles = (), max_depth: int | None = None,
              exclude_if_present: str | None = None) -> Iterator[tuple[str | None, int, int]]:
    """(prefix, objects, bytes) for each prefix `depth` levels below URL, in key order, then
    (None, objects, bytes) for everything, one running total at a time whatever the number of
    prefixes. `classes`, when given, is filled with storage class -> [objects, bytes] (S3 sources)
    by the time the total comes; `unsized` ([0]) counts objects listed without a size (a list/get
    server lists none), whose bytes are in no total. The filter keywords as for `copy`: only the
    objects they keep are counted (or filters= a Filters the command line built)."""
    from .engine.actions.ls import du_groups as groups

    rules = _filters(include, exclude, filters, min_size=min_size, max_size=max_size, min_age=min_age,
                     max_age=max_age, include_from=include_from, exclude_from=exclude_from,
                     filter_from=filter_from, max_depth=max_depth, exclude_if_present=exclude_if_present)
    return groups(url, s3=s3, depth=depth, concurrency=concurrency, classes=classes, unsized=unsized,
                  filters=rules or None)


def du(url: str, *, s3: S3Options | None = None, depth: int = 0, concurrency: int = 16,
       include: Sequence[str] = (), exclude: Sequence[str] = (),
       filters: FilterRules | None = None, min_size: int | str | None = None, max_size: int | str | None = None,
       min_age: AgeLimit | None = None, max_age: AgeLimit | None = None, include_from: RuleFiles = (),
       exclude_from: RuleFiles = (), filter_from: RuleFiles = (), max_depth: int | None = None,
       exclude_if_present: str | None = None) -> DuResult:
    """`s3bulk du`: the objects and bytes under URL (read as `copy` reads SRC), from the parallel
    listing; with depth=N also per prefix N '/'-separated levels below URL (kept in a list: use
    `du_groups` to stream them when there are very many). The filter keywords as for `copy`: only
    the objects they keep are counted."""
    from .engine.actions.ls import du as count

    rules = _filters(include, exclude, filters, min_size=min_size, max_size=max_size, min_age=min_age,
                     max_age=max_age, include_from=include_from, exclude_from=exclude_from,
                     filter_from=filter_from, max_depth=max_depth, exclude_if_present=exclude_if_present)
    return count(url, s3=s3, depth=depth, concurrency=concurrency, filters=rules or None)


def rm(url: str, *, s3: S3Options | None = None, include: Sequence[str] = (), exclude: Sequence[str] = (),
       filters: FilterRules | None = None,
       min_size: int | str | None = None, max_size: int | str | None = None, min_age: AgeLimit | None = None,
       max_age: AgeLimit | None = None, include_from: RuleFiles = (), exclude_from: RuleFiles = (),
       filter_from: RuleFiles = (), max_depth: int | None = None, exclude_if_present: str | None = None,
       dry_run: bool = False, all_objects: bool = False,
       subscriber: Subscriber | None = None, on_key: Callable[[str, str | None], None] | None = None,
       concurrency: int = 8, journal: str | None = None, resume: bool = False, default_journal: bool = False,
       on_notice: Callable[[str], None] | None = None, max_rps: float = 0.0, retries: int = 5,
       all_versions: bool = False, report: str | None = None,
       on_progress: Callable[[Counters], None] | None = None, max_delete: int | str | None = None,
       max_delete_size: int | str | None = None, backup_dir: str | None = None, suffix: str = "") -> RmResult:
    """Delete every object URL names (read as `copy` reads SRC: one object, or everything under a
    prefix), listing in parallel and deleting in batches of 1,000 keys (S3 DeleteObjects), `concurrency`
    batches at once. A key the server refuses (an error inside DeleteObjects' 200 answer) is reported,
    not counted as deleted. Emptying a whole bucket needs all_objects=True, so a typo cannot do it.
    subscriber: on_deleted (Deleted, side "dst") per key deleted, or in a dry run on_dry_run
    (DryRunAction "delete") per key to be deleted; on_failure (Failure, op "delete") per key that
    could not be; on_notice for remarks. on_key(url, None) / on_key(url, why) and on_notice(line)
    are the older callback forms of the same.
    journal / resume: record the deleted key ranges in this file (engine/journal/rm.py; the CLI keeps
    one by default: default_journal=True); resume=True lists only what the interrupted run it
    records had not deleted. With resume=True and no journal the run starts from the beginning, and
    a prefix already empty is no error (the same line run again after it completed): a notice says
    so. A complete run removes its journal.
    max_rps / retries: as `--max-rps` / `--retries` (requests per second, listing included; retries of
    a throttled or failed request, with AIMD on SlowDown as for copy).
    all_versions: delete every version and delete marker too (engine/actions/versions.py; no journal).
    report: a file (.csv or .jsonl) that gets a `deleted` or `failed` row per key (engine/report.py),
    continued by a resumed run.
    on_progress: gets the counts so far (Counters: listed, deleted, failed, requests) about four
    times a second and once at the end; a subscriber gets them as Progress events.
    The RmResult's `requests` counts the requests sent by operation and status class; a dry run's
    `estimate()` is what the real run would send (its listing, and a DELETE per 1,000 keys).
    max_delete (a count, or "P%" of the objects under URL) and max_delete_size (bytes or "10GiB"):
    the keys are counted first, and a run over a cap deletes nothing (TooManyDeletes, exit 4).
    backup_dir (a URL) and suffix: each object is first copied there, under its key relative to URL
    (+ suffix); one whose backup failed is not deleted (a failure)."""
    from .engine.actions import rm as engine

    if subscriber is not None and (on_key is not None or on_notice is not None):
        raise UsageError("give subscriber or on_key / on_notice, not both")
    to = subscriber if subscriber is not None else _Callbacks(key=on_key, notice=on_notice)
    if on_progress is not None:
        to = _Callbacks(progress=on_progress, then=to)
    rules = _filters(include, exclude, filters, min_size=min_size, max_size=max_size, min_age=min_age,
                     max_age=max_age, include_from=include_from, exclude_from=exclude_from,
                     filter_from=filter_from, max_depth=max_depth, exclude_if_present=exclude_if_present)
    request = engine.RmRequest(url, s3, rules, dry_run=dry_run,
                               all_objects=all_objects, concurrency=concurrency, journal=journal, resume=resume,
                               default_journal=default_journal, max_rps=max_rps, retries=retries,
                               all_versions=all_versions, report=report,
                               max_delete=None if max_delete is None else str(max_delete),
                               max_delete_size=max_delete_size, backup_dir=backup_dir, suffix=suffix)
    return engine.rm(request, to)


class _Callbacks(Relay):
    """rm's and copy_versions' callback arguments as the subscriber the engine reports to:
    key(url, why) per key deleted or not, notice(line), progress(counts), version(src, dst, why)
    per version copied or not; every event is then passed on to `then`."""

    def __init__(self, *, key: Callable[[str, str | None], None] | None = None,
                 notice: Callable[[str], None] | None = None, progress: Callable[[Counters], None] | None = None,
                 version: Callable[[str, str, str | None], None] | None = None, then: Subscriber | None = None) -> None:
        super().__init__(then)
        self.key, self.notice, self.progress, self.version = key, notice, progress, version

    def notify(self, event: Event) -> None:
        if self.progress is not None and isinstance(event, Progress):
            self.progress(event.counters)  # the callback instead of `then`, as before
            return
        super().notify(event)

    def on_deleted(self, event: Deleted) -> None:
        if self.key is not None:
            self.key(event.url, None)

    def on_dry_run(self, event: DryRunAction) -> None:
        if self.key is not None:
            self.key(event.dst, None)

    def on_failure(self, event: Failure) -> None:
        if self.key is not None:
            self.key(event.src, event.error)
        if self.version is not None:
            self.version(event.src, event.dst, event.error)

    def on_copied(self, event: Copied) -> None:
        if self.version is not None:
            self.version(event.src, event.dst, None)

    def on_notice(self, event: Notice) -> None:
        if self.notice is not None:
            self.notice(event.message)


def copy_versions(src: str, dst: str, *, version_id: str | None = None, include_delete_markers: bool = False,
                  options: TransferOptions | None = None, src_s3: S3Options | None = None,
                  dst_s3: S3Options | None = None, include: Sequence[str] = (), exclude: Sequence[str] = (),
                  filters: FilterRules | None = None,
                  min_size: int | str | None = None, max_size: int | str | None = None, min_age: AgeLimit | None = None,
                  max_age: AgeLimit | None = None, include_from: RuleFiles = (), exclude_from: RuleFiles = (),
                  filter_from: RuleFiles = (), max_depth: int | None = None, exclude_if_present: str | None = None,
                  on_version: Callable[[str, str, str | None], None] | None = None,
                  as_of: float | None = None, journal: str | None = None, resume: bool = False) -> VersionsResult:
    """`copy --version-id` (SRC names one key), `copy --all-versions` or `copy --as-of` (epoch
    seconds): see engine/actions/versions.py copy_versions. journal=PATH records the versions that land there, and
    resume=True skips those an earlier run with that journal copied (engine/journal/versions.py)."""
    from .engine.actions.versions import VersionsCopy, copy_versions as run

    rules = _filters(include, exclude, filters, min_size=min_size, max_size=max_size, min_age=min_age,
                     max_age=max_age, include_from=include_from, exclude_from=exclude_from,
                     filter_from=filter_from, max_depth=max_depth, exclude_if_present=exclude_if_present)
    run_journal = None
    if journal is not None:
        from .engine.journal.versions import VersionsRun, open_for

        run_journal = open_for(VersionsRun(src, dst, src_s3, dst_s3, include_delete_markers=include_delete_markers,
                                           as_of=as_of, filters=rules), path=journal, resume=resume)
    complete = False
    try:
        request = VersionsCopy(src, dst, src_s3, dst_s3, options, version_id, include_delete_markers, rules,
                               as_of=as_of)
        result = asyncio.run(run(request, _Callbacks(version=on_version), journal=run_journal))
        complete = not result.failures and not result.interrupted
    finally:
        if run_journal is not None:
            run_journal.close(complete=complete)
    return result


def upload_stream(stream: IO[bytes] | int, dst: str, *, s3: S3Options | None = None,
                  options: TransferOptions | None = None, max_memory: int | str | None = None,
                  expected_size: int | str | None = None) -> PipeResult:
    """`s3bulk copy - DST`: everything `stream` yields (a binary file object, or a file descriptor)
    becomes the one object DST names; one PUT when it fits a part, else a multipart upload that is
    aborted on any failure or Ctrl-C. Returns a PipeResult (url, bytes, parts)."""
    from .engine.transfer.pipes import pipe_options, run_pipe, stream_reader

    opts = pipe_options(options or TransferOptions(), max_memory=_size(max_memory, "max_memory"),
                        expected_size=_size(expected_size, "expected_size"), upload=True, src="-", dst=dst)
    return run_pipe(dst, s3, opts, read=stream_reader(stream))


def download_stream(src: str, stream: IO[bytes] | int, *, s3: S3Options | None = None,
                    options: TransferOptions | None = None, max_memory: int | str | None = None) -> PipeResult:
    """`s3bulk copy SRC -`: the one object SRC names, written to `stream` (a binary file object, or
    a file descriptor) in order, its parts fetched in parallel. Returns a PipeResult."""
    from .engine.transfer.pipes import pipe_options, run_pipe, stream_writer

    opts = pipe_options(options or TransferOptions(), max_memory=_size(max_memory, "max_memory"),
                        expected_size=None, upload=False, src=src, dst="-")
    return run_pipe(src, s3, opts, write=stream_writer(stream))


# --- the *_async twins -------------------------------------------------------------------------------

def _in_thread(fn: Callable[P, R]) -> Callable[P, Awaitable[R]]:
    """`fn` for use inside a running event loop: the call goes on in a thread of its own (a run's
    workers are processes or that thread's own event loop; a stream's blocking reads and writes stay
    off the caller's loop), so the caller's loop stays free. Same arguments, same result."""

    async def in_thread(*args: P.args, **kwargs: P.kwargs) -> R:
        return await asyncio.to_thread(fn, *args, **kwargs)

    _named_after(in_thread, fn, fn.__name__ + "_async",
                 f"`{fn.__name__}` awaited inside a running event loop (it runs in a thread of its own, so the "
                 "loop stays free). Same arguments, same result.")
    return in_thread


def _named_after(wrapper: Callable[..., object], fn: Callable[..., object], name: str, doc: str) -> None:
    """Give `wrapper` `fn`'s parameters and result (for help(), IDEs and the API reference: an
    `async def` is annotated with what awaiting it gives) under `name`."""
    import inspect

    setattr(wrapper, "__signature__", inspect.signature(fn))
    wrapper.__annotations__ = dict(fn.__annotations__)
    wrapper.__name__ = wrapper.__qualname__ = name
    wrapper.__module__ = fn.__module__
    wrapper.__doc__ = doc


copy_async = _in_thread(copy)
sync_async = _in_thread(sync)
watch_async = _in_thread(watch)
move_async = _in_thread(move)
check_async = _in_thread(check)
check_report_async = _in_thread(check_report)
du_async = _in_thread(du)
rm_async = _in_thread(rm)
upload_stream_async = _in_thread(upload_stream)
download_stream_async = _in_thread(download_stream)


# --- helpers -------------------------------------------------------------------------------------------

def _deprecated(old: str, new: str) -> None:
    """One warning for a keyword kept for one release under its older name (the API page lists them)."""
    warnings.warn(f"{old} is deprecated and goes in the next release: use {new}", DeprecationWarning, stacklevel=3)


def _subscriber(subscriber: Subscriber | None) -> Subscriber | None:
    """The run's subscriber, refused in one line when it is not a Subscriber (a plain function, say)."""
    if subscriber is not None and not isinstance(subscriber, Subscriber):
        raise UsageError("subscriber must be an s3bulk.Subscriber (a subclass with on_* methods)")
    return subscriber


def _filters(include: Sequence[str], exclude: Sequence[str], rules: FilterRules | Filters | None, *,
             min_size: int | str | None = None, max_size: int | str | None = None,
             min_age: AgeLimit | None = None, max_age: AgeLimit | None = None,
             include_from: RuleFiles = (), exclude_from: RuleFiles = (), filter_from: RuleFiles = (),
             max_depth: int | None = None, exclude_if_present: str | None = None) -> Filters:
    """The filter keywords every filtering call takes, as one Filters (config/filter_options.py
    build_filters, as the command line builds them: rule files read now, a bad value a UsageError
    naming its option). `rules` may be a Filters already built (the command line's `ls` and `du`
    pass theirs): it is then the filters, and no other keyword may be given."""
    if isinstance(rules, Filters):
        if include or exclude or _filter_given(min_size, max_size, min_age, max_age, include_from, exclude_from,
                                              filter_from, max_depth, exclude_if_present):
            raise UsageError("filters= as a Filters value goes alone, without the other filter keywords")
        return rules
    if isinstance(include, str) or isinstance(exclude, str):
        raise UsageError("include and exclude take lists of globs")
    out = [(True, g) for g in include] + [(False, g) for g in exclude]
    for kind, glob in rules or ():
        if kind not in ("include", "exclude"):
            raise UsageError(f"filters are ('include' | 'exclude', glob) pairs, not {kind!r}")
        out.append((kind == "include", glob))
    if not _filter_given(min_size, max_size, min_age, max_age, include_from, exclude_from, filter_from, max_depth,
                         exclude_if_present):
        return Filters(tuple(out))
    from .config.filter_options import build_filters

    return build_filters(out, include_from=_paths(include_from), exclude_from=_paths(exclude_from),
                         filter_from=_paths(filter_from), max_depth=max_depth, exclude_if_present=exclude_if_present,
                         min_size=min_size, max_size=max_size, min_age=_age(min_age, "min_age"),
                         max_age=_age(max_age, "max_age"))


def _filter_given(*values: object) -> bool:
    return any(v is not None and v != () and v != [] for v in values)


def _paths(files: RuleFiles) -> list[str]:
    """A rule-file keyword (one path, or several) as the list of paths build_filters reads."""
    if isinstance(files, (str, os.PathLike)):
        return [os.fspath(files)]
    return [os.fspath(f) for f in files]


def _age(value: AgeLimit | None, what: str) -> str | None:
    """An age keyword as the command line's text: a timedelta as seconds, a datetime as ISO 8601
    (one without a zone is UTC, as "2026-11-01" is on the command line)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, timedelta):
        return repr(value.total_seconds())
    if isinstance(value, datetime):
        return value.isoformat()
    raise UsageError(f"{what} takes a duration (\"7d\", a timedelta) or a time (\"2026-11-01\", a datetime), "
                     f"not {type(value).__name__}")


def _size(value: int | str | None, what: str) -> int | None:
    from .config.sizes import parse_size

    return parse_size(value, what) if isinstance(value, str) else value


_stepped = stepped  # tests/test_ls_spill_cli.py drives a listing with it
