"""`rm --incomplete-uploads`: list and abort the multipart uploads left open under a prefix (what a
run killed without a journal, or another tool, left behind: they show in no listing and are billed
until aborted). Kept apart from cli/__init__.py; the work is engine/leftover_uploads.py's."""

from __future__ import annotations

import asyncio
import sys
from typing import Any, Optional

import typer

from ..errors import S3BulkError, UsageError
from ..config.urls import S3Options


def rm_incomplete_uploads(url: str, s3: S3Options, *, all_objects: bool, dry_run: bool, json_out: bool,
                          verbose: bool, retries: int, max_rps: float, others: Optional[str] = None) -> None:
    """Abort every multipart upload open under URL (--dry-run: list them): one line per upload
    with --dry-run or -v (a JSON event each with --json), a summary, exit 1 when one could not be
    aborted. `others` names an option given that does not go with it (a one-line usage error)."""
    from ..engine.leftover_uploads import abort_incomplete
    from ..stores import ResilienceOptions, StoreOptions
    from .render import KeyLines, plural

    lines = KeyLines(json_out=json_out, verbose=verbose)
    summary: dict[str, Any] = {"command": "rm", "src": url, "ok": False, "aborted": 0, "failed": 0,
                               "dry_run": dry_run, "fatal": None}
    lines.start("rm", url)
    try:
        if others:
            raise UsageError(f"{others} does not go with --incomplete-uploads")
        options = StoreOptions(resilience=ResilienceOptions(retries=retries, max_rps=max_rps))
        result = asyncio.run(abort_incomplete(url, s3=s3, dry_run=dry_run, all_objects=all_objects,
                                              options=options, subscriber=lines))
    except S3BulkError as exc:
        lines.error(str(exc), summary | {"fatal": str(exc)})
        raise typer.Exit(exc.exit_code)
    except KeyboardInterrupt:
        print("s3bulk: interrupted; run the same command again to abort the rest", file=sys.stderr, flush=True)
        raise typer.Exit(130)
    if json_out:
        lines.summary(summary | {"ok": not result.failures, "aborted": result.aborted, "failed": len(result.failures)},
                      flush=False)
    else:
        tail = f", {plural(len(result.failures), 'failure')}" if result.failures else ""
        verb = "would abort" if dry_run else "aborted"
        print(f"{verb} {plural(result.aborted, 'incomplete upload')}{tail}", file=sys.stderr)
    if result.failures:
        raise typer.Exit(1)
