"""The command line's versions options: `ls --all-versions`, `copy --version-id`, `copy
--all-versions [--include-delete-markers]` (rm --all-versions renders as rm does). Kept apart from
cli/run.py: they run engine/actions/versions.py's own path, not the worker pool."""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Optional

import typer

from ..errors import S3BulkError, UsageError
from ..config.urls import S3Options

if TYPE_CHECKING:
    from ..engine.actions.versions import VersionsResult
    from .render import KeyLines


def ls_versions(url: str, s3: S3Options, json_out: bool) -> None:
    """One line per version or delete marker: time, size (DELETE for a marker), version id, whether
    it is the latest, key."""
    from ..engine.actions.versions import ls_version_pages
    from .render import plural, printable

    dumps = json.JSONEncoder(ensure_ascii=False).encode
    count = markers = 0
    for page in ls_version_pages(url, s3=s3):
        lines = []
        for v in page:
            count += 1
            markers += v.delete_marker
            if json_out:
                lines.append(dumps({"key": v.key, "version_id": v.version_id, "size": v.size, "mtime": v.mtime,
                                    "etag": v.etag, "latest": v.latest, "delete_marker": v.delete_marker}))
            else:
                when = datetime.fromtimestamp(v.mtime, timezone.utc).strftime("%Y-%m-%d %H:%M:%S") \
                    if v.mtime is not None else "-"
                size = "DELETE" if v.delete_marker else v.size
                lines.append(printable(f"{when} {size:>12} {v.version_id} {'latest' if v.latest else '      '} {v.key}"))
        if lines:
            sys.stdout.write("\n".join(lines) + "\n")
    if not json_out:
        print(f"{plural(count - markers, 'version')}, {plural(markers, 'delete marker')}", file=sys.stderr)


def copy_versions(src: str, dst: str, *, version_id: Optional[str], all_versions: bool,
                  include_delete_markers: bool, src_s3: S3Options, dst_s3: S3Options, options: Any,
                  filters: Any, json_out: bool, quiet: bool, verbose: bool, as_of: Optional[str] = None,
                  resume: bool = False, journal: Optional[str] = None, no_journal: bool = False,
                  journal_dir: Optional[str] = None, argv: Optional[list[str]] = None) -> None:
    """copy --version-id / --all-versions: run engine/actions/versions.py copy_versions, one line per version with
    --verbose (or a JSON event each with --json), a summary, exit 1 when any version failed.
    --all-versions and --as-of keep a journal (engine/journal/versions.py) unless --no-journal: a first
    Ctrl-C or SIGTERM lets the versions in flight land, records them and exits 130/143 saying how
    to resume; a second stops at once."""
    import asyncio

    from ..engine.actions.versions import VersionsCopy, copy_versions as run
    from .render import KeyLines

    if version_id is not None and all_versions:
        raise UsageError("give --version-id or --all-versions, not both")
    if include_delete_markers and not all_versions:
        raise UsageError("--include-delete-markers goes with --all-versions")
    when = parse_time(as_of) if as_of is not None else None
    if when is not None and version_id is not None:
        raise UsageError("give --version-id or --as-of, not both")
    lines = KeyLines(json_out=json_out, verbose=verbose)
    request = VersionsCopy(src, dst, src_s3, dst_s3, options, version_id, include_delete_markers, filters, as_of=when)
    run_journal = None
    try:
        if resume and (no_journal or version_id is not None):
            raise UsageError("--resume needs the journal (not with --no-journal, nor for one --version-id)")
        if journal is not None and journal_dir is not None:
            raise UsageError("give --journal PATH or --journal-dir DIR, not both")
        if version_id is None and not no_journal:
            run_journal = _open_journal(src, dst, src_s3, dst_s3, include_delete_markers, when, filters,
                                        journal, journal_dir, resume)
        with _Stopping() as stopping:
            result = asyncio.run(run(request, lines, journal=run_journal, should_stop=stopping.requested))
    except S3BulkError as exc:
        if run_journal is not None:
            run_journal.close(complete=False)
        lines.error(str(exc))
        raise typer.Exit(exc.exit_code)
    if run_journal is not None:
        run_journal.close(complete=not result.failures and not result.interrupted)
    _summary(lines, result, quiet)
    if result.interrupted:
        _interrupted(result, run_journal is not None, argv, stopping.signum)
    if result.failures:
        raise typer.Exit(1)


def _summary(lines: "KeyLines", result: "VersionsResult", quiet: bool) -> None:
    """The `summary` JSON line, or (unless quiet) the one line on stderr saying what was copied."""
    from .render import plural

    if lines.json_out:
        lines.summary({"command": "copy", "ok": result.ok and not result.interrupted,
                       "versions": result.versions, "bytes": result.bytes, "delete_markers": result.markers,
                       "failed": len(result.failures), "held": result.held, "resumed": result.resumed,
                       "interrupted": result.interrupted}, flush=False)
    elif not quiet:
        tail = f", {plural(len(result.failures), 'failure')}" if result.failures else ""
        if result.held:
            tail += f" ({plural(result.held, 'newer version')} held back behind them: rerun with --resume)"
        before = f" ({plural(result.resumed, 'more')} copied before --resume)" if result.resumed else ""
        print(f"copied {plural(result.versions, 'version')} ({plural(result.bytes, 'byte')}), "
              f"{plural(result.markers, 'delete marker')}{tail}{before}", file=sys.stderr)


def _interrupted(result: "VersionsResult", journaled: bool, argv: Optional[list[str]], signum: Optional[int]) -> None:
    """A first Ctrl-C or SIGTERM stopped the copy: how to resume, and exit 130 (143 for SIGTERM)."""
    import shlex
    import signal

    from .render import plural

    if journaled:
        how = "resume with: " + shlex.join(["s3bulk", *[a for a in (argv or []) if a != "--resume"], "--resume"])
    else:
        how = "no journal was kept, so a new run starts over"
    print(f"s3bulk: interrupted: {plural(result.versions + result.markers, 'version')} copied in this run; {how}",
          file=sys.stderr, flush=True)
    raise typer.Exit(143 if signum == signal.SIGTERM else 130)


def _open_journal(src: str, dst: str, src_s3: S3Options, dst_s3: S3Options, include_delete_markers: bool,
                  when: Optional[float], filters: Any, path: Optional[str], directory: Optional[str],
                  resume: bool) -> Any:
    """The run's versions journal: --journal PATH, or the default one for this command line."""
    from ..engine.journal.versions import VersionsRun, open_for

    opened = open_for(VersionsRun(src, dst, src_s3, dst_s3, include_delete_markers=include_delete_markers, as_of=when,
                                  filters=filters), path=path, directory=directory, resume=resume)
    if opened.nothing_to_resume:
        print(f"s3bulk: nothing to resume (no journal at {opened.path}): starting from the beginning",
              file=sys.stderr, flush=True)
    return opened


class _Stopping:
    """SIGINT/SIGTERM while versions are copied: the first asks the copy to stop starting
    versions (those in flight land and are journaled), the second stops at once (KeyboardInterrupt)."""

    def __init__(self) -> None:
        self.signum: Optional[int] = None
        self._old: dict[int, Any] = {}

    def requested(self) -> bool:
        return self.signum is not None

    def _handle(self, signum: int, frame: Any) -> None:
        import signal

        if self.signum is not None:
            for s, old in self._old.items():
                signal.signal(s, old)
            raise KeyboardInterrupt
        self.signum = signum
        print("s3bulk: stopping: finishing the versions in flight and writing the journal "
              "(Ctrl-C again to stop at once)", file=sys.stderr, flush=True)

    def __enter__(self) -> "_Stopping":
        import signal
        import threading

        if threading.current_thread() is threading.main_thread():
            for s in (signal.SIGINT, signal.SIGTERM):
                self._old[s] = signal.signal(s, self._handle)
        return self

    def __exit__(self, *exc: Any) -> None:
        import signal

        for s, old in self._old.items():
            signal.signal(s, old)


def parse_time(text: str) -> float:
    """--as-of: ISO 8601 (2026-11-23T04:00:00Z; no zone means UTC) or seconds since the epoch."""
    try:
        return float(text)
    except ValueError:
        pass
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise UsageError(f"--as-of {text!r}: expected a time such as 2026-11-23T04:00:00Z or epoch seconds") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.timestamp()
