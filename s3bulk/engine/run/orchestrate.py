"""The one orchestration path under every caller of a copy, sync, mv or check: the command line,
the Python API (api.py), the Lambda handler (which goes through the API) and a cluster run.

`run` fits the options to a memory budget, spools a manifest read from stdin or an S3 Inventory
report, builds the plan (engine/planner.py), opens the resume journal (engine/journal/units.py) and runs the plan
(launch.py `run_plan`), handing every event to one Subscriber (engine/events.py). Callers differ only in what
they do around it: the CLI renders and maps the summary to an exit code, the API returns it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
from typing import TYPE_CHECKING, Any, Callable, ContextManager

from ...errors import NotFound, UsageError
from ...config.filters import Filters
from ...model import Summary, WorkUnit
from ...config.urls import S3Options
from ..events import Notice, Subscriber
from ..plan import TransferOptions
from .handles import Runner

if TYPE_CHECKING:
    from ..plan import SyncOptions

__all__ = ["run"]


def run(command: str, src: str, dst: str, sync_options: SyncOptions | None, *, options: TransferOptions | None,
        src_s3: S3Options | None, dst_s3: S3Options | None, subscriber: Subscriber | None,
        max_memory: int | str | None, journal: str | None, resume: bool, filters: Filters,
        start: WorkUnit | None = None, should_stop: Callable[[], bool] | None = None,
        files_from: str | None = None, files_from_format: str = "auto", default_journal: bool = False,
        around_run: Callable[[], ContextManager[Any]] | None = None, runner: Runner | None = None, move: bool = False,
        report_objects: bool = False, journal_dir: str | None = None, report: str | None = None,
        empty_source_ok: bool = False) -> Summary:
    """Run `command` ("copy", "mv", "sync" or "check") from SRC to DST and return its summary.

    `sync_options` is None for a copy or mv. `default_journal`: keep a journal at the per-run
    default path when `journal` is None, as the CLI does; `journal_dir` is where default journals
    live (stale ones there are pruned: engine/journal/units.py prune_stale). `report_objects`: the subscriber also
    receives Copied and Deleted per object (`--json -v`). `around_run()` is a context entered just
    around the run itself (the CLI's display and signal handling). `runner`: where the units run
    instead of this machine's worker processes (handles.py; s3bulk.cluster.runner_for makes a Dask one).
    `report`: a file (.csv or .jsonl) that gets one row per object (engine/report.py); a resumed run
    appends to it, so the file names every object of the job with its final outcome.
    `empty_source_ok`: an S3 SRC prefix holding nothing is synced as empty rather than refused as a
    typo (`sync --watch` once its first sync found it). Raises S3BulkError for anything that stops
    the run from starting."""
    from ..planner import build_plan, names_nothing
    from .launch import run_plan

    events = subscriber if subscriber is not None else Subscriber()
    options = options or TransferOptions()
    if max_memory is not None:
        from ...config.sizes import parse_size
        from ..memory_budget import fit_to_memory

        max_rss = parse_size(max_memory, "max_memory") if isinstance(max_memory, str) else int(max_memory)
        options = fit_to_memory(options, max_rss, src, dst)
    dry_run = bool(sync_options is not None and sync_options.dry_run) or options.dry_run  # copy/mv: options
    if resume and (dry_run or (journal is None and not default_journal)):
        raise UsageError("--resume needs the journal (not with --no-journal or --dry-run; "
                         "in the API: journal=PATH)")
    if report is not None:
        from ..report import check_report_path

        check_report_path(report)
        if dry_run and not (sync_options is not None and sync_options.check):
            raise UsageError("--report goes with a real run, not --dry-run")
    manifest, manifest_name = spool_manifest(files_from, files_from_format, src_s3)
    spooled = manifest if manifest != files_from else None
    if spooled:
        files_from_format = "lines" if files_from == "-" else "csv"
    try:
        try:
            plan = asyncio.run(build_plan(src, dst, src_s3=src_s3, dst_s3=dst_s3, options=options, filters=filters,
                                          sync=sync_options, files_from=manifest,
                                          files_from_format=files_from_format,
                                          files_from_name=manifest_name, move=move,
                                          empty_source_ok=empty_source_ok))
        except NotFound as exc:
            if not (move and resume and names_nothing(exc)):
                raise
            # `mv ... --resume` run again after it completed: the sources are gone, which is done
            events.notify(Notice(f"nothing left to move under {src}"))
            return Summary()
        if report_objects or report is not None:
            plan = dataclasses.replace(plan, report_objects=True)
        run_journal = None
        if not dry_run and (journal is not None or default_journal):
            from ..journal.units import Journal, default_path, prune_stale

            path = os.path.abspath(os.path.expanduser(journal)) if journal else \
                default_path(plan, command, journal_dir)
            run_journal = Journal.open(path, plan, command, resume=resume)
            if not journal:
                prune_stale(os.path.dirname(path), keep=path)
            if run_journal.nothing_to_resume:
                events.notify(Notice(f"nothing to resume (no journal at {path}): starting from the beginning"))
        with contextlib.ExitStack() as stack:
            if report is not None:
                events = stack.enter_context(_open_report(report, command, plan, run_journal, events,
                                                          report_objects))
            stack.enter_context(around_run() if around_run is not None else contextlib.nullcontext())
            summary = run_plan(plan, events, start=start, should_stop=should_stop, journal=run_journal,
                               runner=runner)
    finally:
        if spooled:
            os.unlink(spooled)
    summary.dry_run = dry_run
    summary.check = sync_options is not None and sync_options.check
    return summary


def _open_report(path: str, command: str, plan: Any, journal: Any, then: Subscriber,
                 report_objects: bool) -> Any:
    """The run's ReportWriter (engine/report.py) in front of its subscriber: appending when the
    journal resumes a stopped run (with a row for each object that run finished but had not written
    yet), written before every journal commit."""
    from ..report import ReportWriter, outside

    if plan.single_key is None:  # (one object: its directory may hold the report)
        outside(path, plan.src, plan.dst)
    resumed = journal is not None and journal.resumed
    writer = ReportWriter(path, command, resume=resumed, then=then, pass_objects=report_objects)
    try:
        if resumed:
            writer.catch_up(journal.done_keys, plan.src.url_for, lambda key: plan.dst.url_for(plan.keymap(key)))
        if journal is not None:
            journal.before_commit = writer.flush
    except BaseException:
        writer.close()
        raise
    return writer


def spool_manifest(files_from: str | None, fmt: str, s3: S3Options | None) -> tuple[str | None, str | None]:
    """(the file the run reads its keys from, the name its journal knows the manifest by): stdin
    and S3 Inventory reports are spooled into a local file first (engine/listing/manifest.py,
    engine/listing/inventory.py)."""
    if files_from is None:
        return None, None
    if files_from == "-":
        from ..listing.manifest import spool_stdin

        return spool_stdin(), "-"
    from ..listing.inventory import is_inventory, spool_local, spool_s3

    if not is_inventory(files_from, fmt):
        return files_from, None
    if files_from.lower().startswith("s3://"):
        return asyncio.run(spool_s3(files_from, s3)), files_from
    return spool_local(files_from), os.path.abspath(files_from)
