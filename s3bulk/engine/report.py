"""`--report FILE`: one row per object of a job, written as the run goes, that survives a kill.

An operator who must prove afterwards what happened to every object of a migration gets a file
with one row per object (CSV with a header for `.csv`, JSON Lines for `.jsonl`): the outcome, the
source, the destination, the size, the source's ETag, and the error of a failure. The columns are
`COLUMNS`; docs/reference/report.md is their schema.

The writer is a Subscriber (`ReportWriter`, a Relay in front of the caller's): the coordinator
already turns the workers' batched per-object notes into typed events (Copied, Skipped, Deleted,
Failure, Difference), so a report costs one row's formatting per object in the coordinator and
nothing per object across processes. Rows are buffered and written whole with os.write (never a
row torn by a kill), at least four times a second, whenever 1,000 are waiting (bounded memory),
and always before the resume journal commits: the journal's `before_commit` hook. That order is
what makes a resumed report whole:

- a unit the journal records as done had every row of its objects written first (the worker sends
  its notes before the unit's UnitDone, engine/run/worker.py), so a resume that skips the unit
  needs no rows for it;
- an object finished inside a unit that was not finished is in the journal's `done_keys` (its
  per-page log is written as it lands, before its row may be); a resume looks those keys up in
  the report (`catch_up`, one pass over the file, memory bounded by done_keys) and writes a
  `copied` row for each the stopped run had not written. So every object gets a row, and an
  object gets two only when it was sent again.

A resumed run appends to the same file (a torn last line, from a power cut, is cut off first);
a fresh run replaces it.
"""

from __future__ import annotations

import csv
import json
import os
from typing import Any, Callable, Iterable, Iterator

from ..config.urls import Location
from ..errors import UsageError
from ..model import Failure
from .events import (Copied, Deleted, Difference, Event, Progress, Relay, Skipped, Subscriber)

__all__ = ["COLUMNS", "ReportWriter", "check_report_path", "outside", "read_rows"]

COLUMNS = ("outcome", "src", "version_id", "dst", "size", "etag", "checksum", "error")
FLUSH_ROWS = 1000  # rows held before they are written (memory stays flat however big the job)
_DIFFERENCE = {"only-in-src": "missing", "differs": "differs", "only-in-dst": "extra"}


def check_report_path(path: str) -> str:
    """The report's format from its name ("csv" or "jsonl"); anything else is a one-line UsageError."""
    low = path.lower()
    if low.endswith(".csv"):
        return "csv"
    if low.endswith(".jsonl"):
        return "jsonl"
    raise UsageError(f"--report {path}: the name must end in .csv (CSV with a header) or .jsonl (JSON Lines)")


def outside(path: str, *locations: Location) -> None:
    """Refuse (UsageError) a report inside a local SRC or DST: a sync --delete would delete it as a
    key SRC lacks, a copy would copy it while it grows."""
    report = os.path.realpath(os.path.abspath(os.path.expanduser(path)))
    for loc in locations:
        if not loc.is_local:
            continue
        root = os.path.realpath(os.path.join(loc.root, loc.prefix))
        if report == root or report.startswith(root.rstrip(os.sep) + os.sep):
            raise UsageError(f"--report {path} is inside {loc.display}: keep the report outside SRC and DST")


class ReportWriter(Relay):
    """Writes a row per object event, then passes events on to `then`.

    `command` names the outcome of an unchanged object: `skipped` (sync) or `same` (check).
    `pass_objects`: per-object events (Copied, Skipped, Deleted) also reach `then` (the caller
    asked for them: `--json -v`); else they stop here, so a report does not make a display
    print a line per object."""

    def __init__(self, path: str, command: str, *, resume: bool = False, then: Subscriber | None = None,
                 pass_objects: bool = False) -> None:
        super().__init__(then)
        self.path = os.path.abspath(os.path.expanduser(path))
        self.format = check_report_path(path)
        self.command = command
        self.pass_objects = pass_objects
        self._lines: list[str] = []
        self._csv = csv.writer(_Appender(self._lines), lineterminator="\n") if self.format == "csv" else None
        self._fd = _open(self.path, append=resume)
        if self.format == "csv" and os.fstat(self._fd).st_size == 0:
            self._row_csv(COLUMNS)
        self.rows = 0  # rows this run wrote
        self._skip_outcome = "same" if command == "check" else "skipped"
        self._dispatch: dict[type, Callable[[Any], None]] = {
            Copied: self._copied, Skipped: self._skipped, Deleted: self._deleted, Failure: self._failed,
            Difference: self._difference, Progress: lambda e: self.flush()}

    # --- events to rows ------------------------------------------------------------------------
    def notify(self, event: Event) -> None:
        kind = type(event)
        row = self._dispatch.get(kind)
        if row is not None:
            row(event)
            if not self.pass_objects and kind in (Copied, Skipped, Deleted):
                return
        self.then.notify(event)

    def _copied(self, e: Copied) -> None:
        if self.command != "mv":  # mv's row is written once the source is gone: `moved`
            self.row("copied", e.src, e.dst, e.size, e.etag)

    def _skipped(self, e: Skipped) -> None:
        # a copy kept at DST (--no-clobber, --update) says why in `error`
        self.row(self._skip_outcome, e.src, e.dst, e.size, e.etag, e.checksum, error=e.reason)

    def _deleted(self, e: Deleted) -> None:
        if e.side == "src":  # mv: the source went once its copy landed
            self.row("moved", e.url, e.moved_to or "", e.size, e.etag)
        else:
            self.row("deleted", "", e.url)

    def _failed(self, e: Failure) -> None:
        error = f"{e.kind}: {e.error}" if e.kind else e.error
        if e.op == "delete" and self.command == "sync":  # sync --delete: the key it could not delete is DST's
            self.row("failed", "", e.src, error=error)
        else:
            self.row("failed", e.src, e.dst, error=error)

    def _difference(self, e: Difference) -> None:
        self.row(_DIFFERENCE[e.kind], e.src or "", e.dst)

    def row(self, outcome: str, src: str, dst: str, size: int | None = None, etag: str | None = None,
            checksum: str | None = None, error: str | None = None, version_id: str | None = None) -> None:
        """One row, in COLUMNS' order; written with the next flush."""
        if self._csv is not None:
            self._csv.writerow((outcome, src, version_id or "", dst, "" if size is None else size, etag or "",
                                checksum or "", error or ""))
        else:
            self._lines.append(json.dumps({"outcome": outcome, "src": src, "version_id": version_id, "dst": dst,
                                           "size": size, "etag": etag, "checksum": checksum, "error": error},
                                          ensure_ascii=False) + "\n")
        self.rows += 1
        if len(self._lines) >= FLUSH_ROWS:
            self.flush()

    def _row_csv(self, values: Iterable[Any]) -> None:
        assert self._csv is not None
        self._csv.writerow(values)

    # --- writing ---------------------------------------------------------------------------------
    def flush(self) -> None:
        """Write the rows held, whole, with os.write: what a kill leaves is whole rows."""
        if not self._lines or self._fd < 0:
            return
        data = "".join(self._lines).encode("utf-8", "backslashreplace")
        self._lines.clear()
        view = memoryview(data)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]

    def close(self) -> None:
        self.flush()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> "ReportWriter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # --- resuming --------------------------------------------------------------------------------
    def catch_up(self, done: dict[str, int], src_url: Callable[[str], str], dst_url: Callable[[str], str]) -> int:
        """A resumed run: objects a stopped run finished inside its unfinished units (`done`, source
        key -> size: the journal's done_keys) that have no row yet get a `copied` row now. Returns
        how many. One pass over the report; memory is that of `done`."""
        if not done:
            return 0
        self.flush()
        wanted = {src_url(k): k for k in done}
        for row in read_rows(self.path):
            wanted.pop(row.get("src") or "", None)
            if not wanted:
                break
        for url, key in wanted.items():
            self.row("copied", url, dst_url(key), done[key])
        self.flush()
        return len(wanted)


class _Appender:
    """What csv.writer writes each row to: the writer's list of lines."""

    __slots__ = ("write",)

    def __init__(self, lines: list[str]) -> None:
        self.write = lines.append


def _open(path: str, *, append: bool) -> int:
    """The report's file descriptor, for appending. A fresh run starts it empty; a resumed one keeps
    it, cut back to its last whole line (a line torn by a power cut is dropped, so the rows this
    run adds start on a line of their own)."""
    parent = os.path.dirname(path)
    try:
        if parent:
            os.makedirs(parent, exist_ok=True)
        if not append:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND | os.O_CLOEXEC, 0o644)
            return fd
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
        size = os.fstat(fd).st_size
        if size:
            tail = os.pread(fd, min(size, 1 << 20), max(0, size - (1 << 20)))
            cut = tail.rfind(b"\n")
            keep = (size - len(tail) + cut + 1) if cut >= 0 else (size - len(tail))
            if keep != size:
                os.ftruncate(fd, keep)
        return fd
    except OSError as exc:
        raise UsageError(f"cannot write --report {path}: {exc.strerror or exc}") from None


def read_rows(path: str) -> Iterator[dict[str, Any]]:
    """The rows of a report (CSV or JSON Lines, by its name), as dicts of COLUMNS, one at a time;
    `size` as an int or None. A line that cannot be read is skipped (a report written by hand may
    have one); a missing file is a UsageError."""
    fmt = check_report_path(path)
    try:
        f = open(path, encoding="utf-8", errors="surrogateescape", newline="")
    except OSError as exc:
        raise UsageError(f"cannot read report {path}: {exc.strerror or exc}") from None
    with f:
        if fmt == "csv":
            for rec in csv.DictReader(f):
                yield _typed(dict(rec))
        else:
            for line in f:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if isinstance(rec, dict):
                    yield _typed(rec)


def _typed(rec: dict[str, Any]) -> dict[str, Any]:
    size = rec.get("size")
    if isinstance(size, str):
        rec["size"] = int(size) if size.isdigit() else None
    for k in ("version_id", "etag", "checksum", "error"):
        if rec.get(k) == "":
            rec[k] = None
    return rec
