"""`s3bulk rm URL`: delete every object under URL, in batches of 1,000 keys, journaled."""

from __future__ import annotations

import shlex
import sys
from typing import TYPE_CHECKING, Optional

import typer

from ...errors import S3BulkError
from .. import shell
from ..options import (Endpoint, Exclude, FilterOptions, Include, JournalPath, MaxRps, NoJournal, NoSign,
                       PathStyle, Profile, Region, Report, Retries, S3Connection)
from ..options import (ExcludeFrom, ExcludeIfPresent, FilterFrom, IncludeFrom, MaxAge, MaxDepth, MaxSize,  # filters
                       MinAge, MinSize)
from ..shell import quiet_broken_pipe
from ..options import Metrics, MetricsLinger  # --metrics (cli/metrics.py)
from ..options import BackupDir, MaxDelete, MaxDeleteSize, Suffix  # guarded deletes
from ..options import LogRequests, LogRequestsHeaders  # --log-requests (http/requestlog.py)

if TYPE_CHECKING:
    from ...engine.actions.rm import RmRequest, RmResult
    from ..render import KeyLines


def rm_command(
    url: str = typer.Argument(..., metavar="URL", help="s3://BUCKET/PREFIX/ (everything under it), s3://BUCKET/KEY, or a local directory"),
    all_objects: bool = typer.Option(False, "--all", help="allow URL to be a whole bucket (every object in it)"),
    dry_run: bool = typer.Option(False, "--dry-run", help="print what would be deleted and how many requests it would take; delete nothing"),
    include: Include = None, exclude: Exclude = None,
    include_from: IncludeFrom = None, exclude_from: ExcludeFrom = None, filter_from: FilterFrom = None,
    max_depth: MaxDepth = None, exclude_if_present: ExcludeIfPresent = None,
    min_size: MinSize = None, max_size: MaxSize = None, min_age: MinAge = None, max_age: MaxAge = None,
    json_out: bool = typer.Option(False, "--json", help="one JSON object per line"),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="one line per deleted key"),
    concurrency: int = typer.Option(8, "--concurrency", "-c", metavar="N", min=1, help="DeleteObjects requests (1,000 keys each) in flight"),
    resume: bool = typer.Option(False, "--resume", help="continue an interrupted rm from its journal: list only what it had not deleted (no journal, or nothing left: runs as usual, exit 0)"),
    journal: JournalPath = None, no_journal: NoJournal = False, report: Report = None,
    retries: Retries = 5, max_rps: MaxRps = 0.0,
    all_versions: bool = typer.Option(False, "--all-versions", help="delete every version and delete marker for good (without it a versioned bucket keeps them and gets delete markers, as S3 does)"),
    incomplete_uploads: bool = typer.Option(False, "--incomplete-uploads", help="instead of objects, abort the multipart uploads left open under URL (by a killed run or another tool: no listing shows them, and their parts are billed); with --dry-run, list them"),
    endpoint_url: Endpoint = None, profile: Profile = None, region: Region = None,
    no_sign_request: NoSign = False, path_style: PathStyle = False,
    metrics: Metrics = None, metrics_linger: MetricsLinger = 0.0,
    max_delete: MaxDelete = None, max_delete_size: MaxDeleteSize = None, backup_dir: BackupDir = None,
    suffix: Suffix = "",
    log_requests: LogRequests = None, log_requests_headers: LogRequestsHeaders = False,
) -> None:
    """Delete every object under URL (or the one object it names), in batches of 1,000 keys.

    Keys the server refuses inside a DeleteObjects answer are reported one by one (exit 1). The
    deleted key ranges are journaled: an interrupted rm run again with --resume lists only the rest."""
    from ...engine.actions.rm import RmRequest
    from ..render import KeyLines

    s3 = S3Connection(endpoint_url, profile, region, no_sign_request, path_style).options()
    if incomplete_uploads:
        from ..uploads import rm_incomplete_uploads

        chosen = FilterOptions(include, exclude, include_from, exclude_from, filter_from, max_depth,
                               exclude_if_present, min_size, max_size, min_age, max_age)
        others = next((o for o, given in (("--all-versions", all_versions), ("--resume", resume),
                                          ("a filter (--include, --max-size, ...)", chosen.given), ("--max-delete", max_delete),
                                          ("--max-delete-size", max_delete_size), ("--backup-dir", backup_dir))
                       if given), None)
        return rm_incomplete_uploads(url, s3, all_objects=all_objects, dry_run=dry_run, json_out=json_out,
                                     verbose=verbose, retries=retries, max_rps=max_rps, others=others)
    filters = FilterOptions(include, exclude, include_from, exclude_from, filter_from, max_depth, exclude_if_present,
                            min_size, max_size, min_age, max_age).filters(shell.ARGV)
    request = RmRequest(url, s3, filters, dry_run=dry_run,
                        all_objects=all_objects, concurrency=concurrency, journal=None if no_journal else journal,
                        default_journal=not no_journal, resume=resume, max_rps=max_rps, retries=retries,
                        all_versions=all_versions, report=report, max_delete=max_delete,
                        max_delete_size=max_delete_size, backup_dir=backup_dir, suffix=suffix)
    lines = KeyLines(json_out=json_out, verbose=verbose or dry_run)
    lines.start("rm", url)
    result = _run(request, lines, metrics, no_journal)
    _summary(lines, request, result)
    if lines.metrics is not None:  # after the summary: a scraper may wait for it before the last scrape
        lines.metrics.close(metrics_linger)
    if result.failures:
        raise typer.Exit(shell.EXIT_FAILED)


def _run(request: RmRequest, lines: KeyLines, metrics: Optional[str], no_journal: bool) -> RmResult:
    """The rm run, its events to `lines` (through --metrics when asked); an interruption or an
    error said as rm always said them, then the exit code."""
    from ...engine.actions.rm import rm

    try:
        if metrics is not None:
            from ..metrics import serve_metrics

            lines.metrics = serve_metrics(metrics, "rm")
        return rm(request, lines)
    except KeyboardInterrupt:
        argv = [a for a in (shell.ARGV or ["rm", request.url]) if a != "--resume"]
        how = ("resume with: " + shlex.join(["s3bulk", *argv, "--resume"])) if not no_journal and not request.dry_run \
            else "no journal was kept, so a new run lists everything again"
        print(f"s3bulk: interrupted; {how}", file=sys.stderr, flush=True)
        raise typer.Exit(shell.EXIT_INTERRUPTED)
    except S3BulkError as exc:
        if lines.metrics is not None:
            lines.metrics.close()
        lines.error(str(exc), {"command": "rm", "src": request.url, "ok": False, "deleted": 0, "failed": 0,
                               "dry_run": request.dry_run, "resumed_deleted": 0, "fatal": str(exc)})
        raise typer.Exit(exc.exit_code)
    except BrokenPipeError:
        quiet_broken_pipe()
        raise typer.Exit(0)


def _summary(lines: KeyLines, request: RmRequest, result: RmResult) -> None:
    """The `summary` JSON line, or the one line on stderr saying what was deleted."""
    from ..render import estimate_text, plural

    if lines.json_out:
        lines.summary({"command": "rm", "src": request.url, "ok": result.ok, "deleted": result.deleted,
                       "failed": len(result.failures), "dry_run": request.dry_run,
                       "resumed_deleted": result.resumed_deleted, "fatal": None,
                       "requests": result.counters().requests_by_operation(), "estimate": result.estimate()})
        return
    verb = "would delete" if request.dry_run else "deleted"
    tail = f", {plural(len(result.failures), 'failure')}" if result.failures else ""
    if (estimate := result.estimate()) is not None:
        tail += f"; would send {estimate_text(estimate, moving=False)}"
    if result.resumed_deleted:
        tail += f" ({result.resumed_deleted:,} deleted before the interruption)"
    if result.journal and result.failures:
        tail += "; after fixing the cause, the same command with --resume retries the rest"
    print(f"{verb} {plural(result.deleted, 'object')}{tail}", file=sys.stderr)


EXAMPLES = (
    ("Print what would be deleted under a prefix, and the requests it would take, deleting nothing",
     "s3bulk rm s3://bucket/tmp/ --dry-run"),
    ("Delete every object under it",
     "s3bulk rm s3://bucket/tmp/"),
    ("Delete only the .tmp objects, one line per key",
     "s3bulk rm s3://bucket/work/ --exclude '*' --include '*.tmp' -v"),
    ("Delete what was last modified over 30 days ago, printing it first",
     "s3bulk rm s3://bucket/tmp/ --min-age 30d --dry-run"),
    ("Empty a whole bucket, every version and delete marker too",
     "s3bulk rm s3://bucket --all --all-versions"),
    ("Continue an interrupted rm",
     "s3bulk rm s3://bucket/tmp/ --resume"),
    ("Delete nothing if more than 500 objects would go; keep a copy of each one that does",
     "s3bulk rm s3://bucket/tmp/ --max-delete 500 --backup-dir s3://bucket/trash/"),
    ("Keep a row per key, deleted or failed, as evidence of what went",
     "s3bulk rm s3://bucket/tmp/ --report rm.csv"),
    ("List the multipart uploads left open under a prefix (a killed run's), then abort them",
     "s3bulk rm s3://bucket/backups/ --incomplete-uploads --dry-run"),
)
