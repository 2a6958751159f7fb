"""`rm --incomplete-uploads`: list and abort the multipart uploads left open under a prefix (what a
run killed without a journal, or another tool, left behind: they show in no listing and are billed
until aborted). Kept apart from cli/__init__.py; the work is engine/leftover_uploads.py's."""

from __future__ import annotations

import asyncio
import json
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
    from ..stores.base import OpenUpload
    from .render import plural, printable

    dumps = json.JSONEncoder(ensure_ascii=False).encode

    def on_upload(upload: OpenUpload, where: str, why: Optional[str]) -> None:
        if why is not None:
            if json_out:
                print(dumps({"event": "failure", "op": "abort multipart upload", "src": where, "error": why,
                             "v": 1}), flush=True)
            else:
                print(printable(f"ERROR abort {where}: {why}"), file=sys.stderr, flush=True)
        elif json_out:
            print(dumps({"event": "dryrun" if dry_run else "aborted", "action": "abort", "dst": where,
                         "key": upload.key, "upload_id": upload.upload_id, "initiated": upload.initiated, "v": 1}),
                  flush=True)
        elif dry_run or verbose:
            print(printable(f"{'(dryrun) ' if dry_run else ''}abort: {where}"), flush=True)

    summary: dict[str, Any] = {"event": "summary", "command": "rm", "src": url, "ok": False, "aborted": 0,
                               "failed": 0, "dry_run": dry_run, "fatal": None}
    if json_out:
        print(dumps({"event": "start", "command": "rm", "src": url, "dst": None, "v": 1}), flush=True)
    try:
        if others:
            raise UsageError(f"{others} does not go with --incomplete-uploads")
        options = StoreOptions(resilience=ResilienceOptions(retries=retries, max_rps=max_rps))
        result = asyncio.run(abort_incomplete(url, s3=s3, dry_run=dry_run, all_objects=all_objects,
                                              options=options, on_upload=on_upload))
    except S3BulkError as exc:
        if json_out:
            print(dumps({"event": "error", "error": str(exc), "v": 1}))
            print(dumps(summary | {"fatal": str(exc), "v": 1}))
        print(printable(f"s3bulk: error: {exc}"), file=sys.stderr)
        raise typer.Exit(exc.exit_code)
    except KeyboardInterrupt:
        print("s3bulk: interrupted; run the same command again to abort the rest", file=sys.stderr, flush=True)
        raise typer.Exit(130)
    if json_out:
        print(dumps(summary | {"ok": not result.failures, "aborted": result.aborted, "failed": len(result.failures),
                               "v": 1}))
    else:
        tail = f", {plural(len(result.failures), 'failure')}" if result.failures else ""
        verb = "would abort" if dry_run else "aborted"
        print(f"{verb} {plural(result.aborted, 'incomplete upload')}{tail}", file=sys.stderr)
    if result.failures:
        raise typer.Exit(1)
