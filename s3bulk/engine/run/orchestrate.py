"""The one orchestration path under every caller of a copy, sync, mv or check: the command line,
the Python API (api.py), the Lambda handler (which goes through the API) and a cluster run.

`run` takes the request as one value (engine/job.py `Job`), fits its options to a memory budget,
spools a manifest read from stdin or an S3 Inventory report, builds the plan (engine/planner.py),
opens the resume journal (engine/journal/units.py) and runs the plan (launch.py `run_plan`),
handing every event to one Subscriber (engine/events.py). Callers differ only in what they do
around it: the CLI renders and maps the summary to an exit code, the API returns it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
from typing import TYPE_CHECKING, Any, Callable, ContextManager

from ...errors import NotFound, UsageError
from ...model import Summary
from ...config.urls import S3Options
from ..events import Notice, Subscriber
from ..job import Job, Manifest
from ..plan import sharing_cores
from .handles import Runner

if TYPE_CHECKING:
    from ..journal.units import Journal
    from ..plan import Plan

__all__ = ["run"]


def run(job: Job, *, subscriber: Subscriber | None = None, should_stop: Callable[[], bool] | None = None,
        around_run: Callable[[], ContextManager[Any]] | None = None, runner: Runner | None = None) -> Summary:
    """Run `job` (a copy, mv, sync or check from SRC to DST) and return its summary.

    `should_stop()`: once true, the run takes no new units and its summary says where to resume.
    `around_run()` is a context entered just around the run itself (the CLI's display and signal
    handling). `runner`: where the units run instead of this machine's worker processes
    (handles.py; s3bulk.cluster.runner_for makes a Dask one). A job's `report` file gets one row
    per object (engine/report.py); a resumed run appends to it, so the file names every object of
    the job with its final outcome. Raises S3BulkError for anything that stops the run from
    starting."""
    from .launch import run_plan

    events = subscriber if subscriber is not None else Subscriber()
    job = _fitted(job)
    _refuse_misfits(job)
    job, spooled = _spooled(job)
    try:
        plan = _planned(job, events)
        if plan is None:
            return Summary()
        if runner is None:  # this machine's workers: fewer where the server shares their cores (plan.py)
            plan = dataclasses.replace(plan, options=sharing_cores(plan.options, plan.src, plan.dst))
        run_journal = _opened_journal(job, plan, events)
        with contextlib.ExitStack() as stack:
            if job.report is not None:
                events = stack.enter_context(_open_report(job, plan, run_journal, events))
            stack.enter_context(around_run() if around_run is not None else contextlib.nullcontext())
            summary = run_plan(plan, events, start=job.start, should_stop=should_stop, journal=run_journal,
                               runner=runner)
    finally:
        if spooled:
            os.unlink(spooled)
    summary.dry_run = job.dry_run
    summary.check = job.check
    return summary


def _fitted(job: Job) -> Job:
    """The job with its options fitted to its memory budget (engine/memory_budget.py), if it has one."""
    if job.max_memory is None:
        return job
    from ...config.sizes import parse_size
    from ..memory_budget import fit_to_memory

    given = job.max_memory
    max_rss = parse_size(given, "max_memory") if isinstance(given, str) else int(given)
    return dataclasses.replace(job, options=fit_to_memory(job.options, max_rss, job.src, job.dst))


def _refuse_misfits(job: Job) -> None:
    """What cannot go together, refused before anything is read: a resume without a journal, a
    report of a dry run (check's excepted), a report file that cannot be written."""
    if job.journal.resume and (job.dry_run or not job.journal.kept):
        raise UsageError("--resume needs the journal (not with --no-journal or --dry-run; "
                         "in the API: journal=PATH)")
    if job.report is not None:
        from ..report import check_report_path

        check_report_path(job.report)
        if job.dry_run and not job.check:
            raise UsageError("--report goes with a real run, not --dry-run")


def _spooled(job: Job) -> tuple[Job, str | None]:
    """The job reading its keys from a local file, and that file when it is a spooled copy (of
    stdin or an S3 Inventory report) the run must remove."""
    given = job.manifest
    if given is None:
        return job, None
    path, name = spool_manifest(given.path, given.format, job.src_s3)
    if path == given.path:
        return dataclasses.replace(job, manifest=Manifest(given.path, given.format, name)), None
    assert path is not None
    spooled_format = "lines" if given.path == "-" else "csv"
    return dataclasses.replace(job, manifest=Manifest(path, spooled_format, name)), path


def _planned(job: Job, events: Subscriber) -> Plan | None:
    """The plan (engine/planner.py), or None when a resumed `mv` finds nothing left to move."""
    from ..planner import build_plan, names_nothing

    try:
        plan = asyncio.run(build_plan(job))
    except NotFound as exc:
        if not (job.move and job.journal.resume and names_nothing(exc)):
            raise
        # `mv ... --resume` run again after it completed: the sources are gone, which is done
        events.notify(Notice(f"nothing left to move under {job.src}"))
        return None
    if job.report_objects or job.report is not None:
        plan = dataclasses.replace(plan, report_objects=True)
    return plan


def _opened_journal(job: Job, plan: Plan, events: Subscriber) -> Journal | None:
    """The run's resume journal (engine/journal/units.py), opened or resumed; None without one
    (asked for none, or a dry run)."""
    choice = job.journal
    if job.dry_run or not choice.kept:
        return None
    from ..journal.units import Journal, default_path, prune_stale

    path = os.path.abspath(os.path.expanduser(choice.path)) if choice.path else \
        default_path(plan, job.command, choice.directory)
    run_journal = Journal.open(path, plan, job.command, resume=choice.resume)
    if not choice.path:
        prune_stale(os.path.dirname(path), keep=path)
    if run_journal.nothing_to_resume:
        events.notify(Notice(f"nothing to resume (no journal at {path}): starting from the beginning"))
    return run_journal


def _open_report(job: Job, plan: Any, journal: Any, then: Subscriber) -> Any:
    """The run's ReportWriter (engine/report.py) in front of its subscriber: appending when the
    journal resumes a stopped run (with a row for each object that run finished but had not written
    yet), written before every journal commit."""
    from ..report import ReportWriter, outside

    assert job.report is not None
    if plan.single_key is None:  # (one object: its directory may hold the report)
        outside(job.report, plan.src, plan.dst)
    resumed = journal is not None and journal.resumed
    writer = ReportWriter(job.report, job.command, resume=resumed, then=then, pass_objects=job.report_objects)
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
