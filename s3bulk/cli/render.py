"""Turning engine events into what the user sees: a live display, JSON lines, or nothing.

A renderer is the run's Subscriber (engine/events.py): the engine hands it Progress a few times a
second, each Failure as it happens, Copied / Deleted per object with -v, Restarted, Stopping and
Notice, and in a dry run or `check` a DryRunAction or Difference per key; the renderer turns them
into output and has no say in what is transferred.
"""

from __future__ import annotations

import json
import os
import sys
import time
from functools import cached_property
from dataclasses import asdict
from json.encoder import encode_basestring
from typing import TYPE_CHECKING, Any, TextIO

from ..engine.events import (Copied, Deleted, Difference, DryRunAction, Notice, PlannedEvent, Progress, Restarted,
                             Stopping, Subscriber, UploadAborted, UploadFound, WatchStatus,
                             write_line)
from ..model import Failure, Summary
from ..config.sizes import human_bytes, human_duration

if TYPE_CHECKING:
    from .metrics import MetricsServer

JSON_VERSION = 1  # the --json schema (docs/reference/json-lines.md); bumped when a field changes meaning

MAX_FAILURE_LINES = 50


def summary_dict(summary: Summary, command: str, src: str | None, dst: str | None) -> dict[str, Any]:
    """The `summary` event. `check` has its own fields (it copies and deletes nothing: what a copy's
    would say of it would be about a run that never happens): same, differ, only_in_src, only_in_dst."""
    c = summary.counters
    if summary.check:
        return {
            "event": "summary", "command": command, "src": src, "dst": dst, "ok": summary.ok,
            "listed": c.listed, **summary.check_counts(), "failed": c.failed,
            "elapsed_seconds": round(summary.elapsed, 3), "cpu_seconds": round(summary.cpu_seconds, 3),
            "peak_rss_bytes": summary.peak_rss_bytes, "workers": summary.workers,
            "fatal": summary.fatal, "interrupted": summary.interrupted,
            "retries": c.retries, "throttled": c.throttled, "final_concurrency": c.concurrency,
            "failures_not_shown": summary.failures_dropped, "requests": c.requests_by_operation(),
        }
    return {
        "event": "summary", "command": command, "src": src, "dst": dst, "ok": summary.ok,
        "listed": c.listed, "copied": c.done, "copied_bytes": c.done_bytes, "failed": c.failed,
        "skipped": c.skipped, "skipped_bytes": c.skipped_bytes, "skipped_archived": c.archived,
        "deleted": c.deleted, "dry_run": summary.dry_run,
        "server_side_copies": c.server_side, "elapsed_seconds": round(summary.elapsed, 3),
        "objects_per_second": round(c.done / summary.elapsed, 1) if summary.elapsed else 0.0,
        "bytes_per_second": round(c.done_bytes / summary.elapsed, 1) if summary.elapsed else 0.0,
        "cpu_seconds": round(summary.cpu_seconds, 3),
        "cpu_us_per_object": round(summary.cpu_seconds * 1e6 / c.done, 1) if c.done else None,
        "peak_rss_bytes": summary.peak_rss_bytes, "workers": summary.workers,
        "fatal": summary.fatal, "interrupted": summary.interrupted,
        "resumed_skipped": summary.resumed_skipped, "resumed_skipped_bytes": summary.resumed_skipped_bytes,
        "journal": summary.journal, "open_uploads": summary.open_uploads,
        "retries": c.retries, "throttled": c.throttled, "final_concurrency": c.concurrency,
        "kept": c.kept, "capped": summary.capped,  # --no-clobber / --update; --max-transfer / --max-duration
        "failures_not_shown": summary.failures_dropped,
        "requests": c.requests_by_operation(),
        "estimate": summary.estimate(),
    }


class Renderer(Subscriber):
    """Base: quiet but for what every renderer shows: a dry run's or `check`'s lines on stdout
    (`planned`), notices and the stopping line on stderr. Subclasses draw the rest."""

    def __init__(self, command: str, src: str | None, dst: str | None) -> None:
        # None: a JSON stream's start that names no SRC or DST (the run could not read them)
        self.command, self.src, self.dst = command, src, dst

    def __enter__(self) -> "Renderer":
        return self

    def __exit__(self, *exc: Any) -> None:
        pass

    def on_progress(self, event: Progress) -> None:
        sys.stdout.flush()  # the dry run's lines so far (written unflushed)

    def on_dry_run(self, event: DryRunAction) -> None:
        self.planned(event)

    def on_difference(self, event: Difference) -> None:
        self.planned(event)

    def on_notice(self, event: Notice) -> None:
        print(f"s3bulk: {event.message}", file=sys.stderr, flush=True)

    def on_stopping(self, event: Stopping) -> None:
        print("s3bulk: stopping: finishing the transfers in flight and writing the journal "
              "(Ctrl-C again to stop at once)", file=sys.stderr, flush=True)

    def planned(self, event: PlannedEvent) -> None:
        """A dry run's action or a difference `check` found: one line on stdout, whatever else
        the renderer shows (the lines are the command's output)."""
        write_line(sys.stdout, event.line())

    def finish(self, summary: Summary) -> None:
        pass

    def error(self, message: str, code: int = 3) -> None:
        print(f"s3bulk: error: {printable(message)}", file=sys.stderr, flush=True)


class QuietRenderer(Renderer):
    """--quiet: no progress and no summary; errors (and the first failures) on stderr."""

    def __init__(self, command: str, src: str, dst: str) -> None:
        super().__init__(command, src, dst)
        self._shown = 0

    def on_failure(self, event: Failure) -> None:
        self._shown += 1
        if self._shown <= MAX_FAILURE_LINES:
            print(_failure_line(event), file=sys.stderr, flush=True)

    def finish(self, summary: Summary) -> None:
        if summary.fatal:
            self.error(summary.fatal)


class JsonRenderer(Renderer):
    """--json: newline-delimited JSON on stdout: start, progress (1/s), failure, (with -v) copied and
    deleted, summary. `start` and `summary` are always there, even when the run cannot start: a
    script reading the stream can rely on its first and last lines."""

    def __init__(self, command: str, src: str | None, dst: str | None, out: TextIO = sys.stdout) -> None:
        super().__init__(command, src, dst)
        self.out = out
        self._last = 0.0
        self.started = self.summarized = self._errored = False

    def _write(self, obj: dict[str, Any]) -> None:
        obj["v"] = JSON_VERSION  # last, so every line still begins {"event": ...}
        self.out.write(json.dumps(obj, ensure_ascii=False) + "\n")
        self.out.flush()

    def __enter__(self) -> "JsonRenderer":
        self.start()
        return self

    def start(self) -> None:
        if not self.started:
            self.started = True
            self._write({"event": "start", "command": self.command, "src": self.src, "dst": self.dst})

    def on_failure(self, event: Failure) -> None:
        self._write({"event": "failure", **asdict(event)})

    # copied / deleted (-v, one a key): each line made by hand as _write would make it from the
    # event's json_fields(), byte for byte, at a fifth of its CPU (json's own C string escaper, an
    # int as json writes it), and not flushed one by one: on_progress (4 a second) and the next
    # _write flush them in order with the rest

    def on_copied(self, event: Copied) -> None:
        quote = encode_basestring
        self.out.write(f'{{"event": "copied", "action": "copy", "src": {quote(event.src)}, "dst": {quote(event.dst)}, '
                       f'"size": {event.size}, "v": {JSON_VERSION}}}\n')

    def on_deleted(self, event: Deleted) -> None:
        self.out.write(f'{{"event": "deleted", "action": "delete", "{event.side}": {encode_basestring(event.url)}, '
                       f'"v": {JSON_VERSION}}}\n')

    def on_restarted(self, event: Restarted) -> None:
        self._write(event.json_fields())

    def on_watch_status(self, event: WatchStatus) -> None:
        self._write(event.json_fields())

    def on_progress(self, event: Progress) -> None:
        super().on_progress(event)
        self.out.flush()  # the copied / deleted lines since the last one
        now = time.monotonic()
        if now - self._last >= 1.0:
            self._last = now
            c = event.counters
            if self.command == "check":  # differences so far, in check's words (it copies nothing)
                self._write({"event": "progress", "listed": c.listed, "listed_bytes": c.listed_bytes,
                             "same": c.skipped, "differ": c.differ, "only_in_src": c.done - c.differ,
                             "only_in_dst": c.deleted, "failed": c.failed, "listing_done": event.listing_done,
                             "elapsed_seconds": round(event.elapsed, 3)})
                return
            self._write({"event": "progress", "listed": c.listed, "listed_bytes": c.listed_bytes,
                         "copied": c.done, "copied_bytes": c.done_bytes, "moved_bytes": c.moved_bytes,
                         "skipped": c.skipped, "skipped_bytes": c.skipped_bytes, "deleted": c.deleted,
                         "failed": c.failed, "listing_done": event.listing_done,
                         "elapsed_seconds": round(event.elapsed, 3)})

    def planned(self, event: PlannedEvent) -> None:
        fields = event.json_fields()
        fields["v"] = JSON_VERSION
        write_line(self.out, json.dumps(fields, ensure_ascii=False))

    def finish(self, summary: Summary) -> None:
        self.start()
        if summary.fatal and not self._errored:  # the run had to stop (disk full, bucket gone, ...)
            self._errored = True
            self._write({"event": "error", "error": summary.fatal})
            super().error(summary.fatal)
        self.summarized = True
        self._write(summary_dict(summary, self.command, self.src, self.dst))

    def error(self, message: str, code: int = 3) -> None:
        """The run could not start or go on: start (if not yet), error, and a summary saying so."""
        self.start()
        self._errored = True
        self._write({"event": "error", "error": message})
        super().error(message)
        if not self.summarized:
            self.finish(Summary(workers=0, fatal=message, fatal_code=code, check=self.command == "check"))


class _Rows:
    """The summary's rows (label, value) as the row functions add them."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, str]] = []

    def add_row(self, label: str, value: str) -> None:
        self.rows.append((label, value))


# what makes rich treat stdout as a terminal, or size its console, other than the file itself
_RICH_ENVIRON = ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "JUPYTER_COLUMNS", "JUPYTER_LINES")


def _console_width() -> int:
    """The width rich gives a console (rich.console.Console.size): the first standard stream that
    is a terminal, COLUMNS over it, else 80."""
    width = 0
    for fd in (0, 1, 2):
        try:
            width = os.get_terminal_size(fd).columns
        except (AttributeError, ValueError, OSError):
            continue
        break
    columns = os.environ.get("COLUMNS")
    if columns is not None and columns.isdigit():
        width = int(columns)
    return width or 80


def _grid_text(rows: list[tuple[str, str]]) -> str | None:
    """The summary as rich prints `Table.grid(padding=(0, 2))` of two columns to a file that is
    not a terminal (no styles: each cell padded to its column's width, two spaces between), byte
    for byte (tests/test_render_plain.py holds the two equal), without importing rich; None where
    rich could print it otherwise: stdout a terminal (or said to be one), a cell that is not
    printable ASCII (rich measures cells, wraps and escapes), a row wider than the console (rich
    wraps or cuts it)."""
    if sys.stdout.isatty() or any(name in os.environ for name in _RICH_ENVIRON) or "ipykernel" in sys.modules:
        return None
    if not all(a.isascii() and a.isprintable() and b.isascii() and b.isprintable() for a, b in rows):
        return None
    left = max((len(a) for a, _ in rows), default=0)
    right = max((len(b) for _, b in rows), default=0)
    if not left or not right or left + 2 + right > _console_width():
        return None
    return "".join(f"{a.ljust(left)}  {b.ljust(right)}\n" for a, b in rows)


class HumanRenderer(Renderer):
    """A live one-screen display on a terminal (rich), failures as lines, a summary at the end."""

    def __init__(self, command: str, src: str, dst: str, *, live: bool, verbose: bool = False) -> None:
        super().__init__(command, src, dst)
        self.verbose = verbose
        self.live_enabled = live
        # --progress with stderr not a terminal (a log file, a CI job): a plain status line about
        # once a second, which a log keeps readable, instead of a display redrawn in place
        self.plain_progress = live and not self.err.is_terminal
        self._last_line = 0.0
        self._live: Any = None
        self._progress: Progress | None = None
        self._failures_shown = 0
        self._rate_window: list[tuple[float, int, int]] = []
        self._watch: WatchStatus | None = None

    @cached_property
    def out(self) -> Any:
        """rich's console on stdout, made when first needed: a run whose summary prints as plain
        text (_grid_text) never imports rich (~25 ms of a one-object copy's start)."""
        from rich.console import Console

        return Console(highlight=False)

    @cached_property
    def err(self) -> Any:
        from rich.console import Console

        return Console(stderr=True, highlight=False)

    def __enter__(self) -> "HumanRenderer":
        if self.live_enabled and not self.plain_progress:
            from rich.live import Live

            self._live = Live(self._render(), console=self.err, refresh_per_second=4, transient=True,
                              get_renderable=self._render)
            self._live.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._live is not None:
            self._live.__exit__(*exc)
            self._live = None

    def on_progress(self, event: Progress) -> None:
        super().on_progress(event)
        self._progress = event
        c = event.counters
        # bytes as they move (parts of big objects included), so one big object shows a rate
        self._rate_window.append((event.elapsed, c.done + c.skipped, c.moved_bytes))
        while len(self._rate_window) > 2 and event.elapsed - self._rate_window[0][0] > 5:
            self._rate_window.pop(0)
        if self.plain_progress and (not self._last_line or time.monotonic() - self._last_line >= 1.0):
            self._last_line = time.monotonic()
            self.err.print(self._status_line(), markup=False, soft_wrap=True, highlight=False)

    def on_watch_status(self, event: WatchStatus) -> None:
        """sync --watch: its own row of the live display; as plain lines (a log), a line when the
        figures moved or a minute passed, so an idle watch does not write a line a second."""
        before, self._watch = self._watch, event
        if not self.plain_progress:
            return
        now = time.monotonic()
        moved = before is None or event.lag > 0 or (event.handled, event.queue_depth) != \
            (before.handled, before.queue_depth)
        if (moved and now - self._last_line >= 1.0) or now - self._last_line >= 60.0:
            self._last_line = now
            self.err.print(self._watch_line(), markup=False, soft_wrap=True, highlight=False)

    def _watch_line(self) -> str:
        w = self._watch
        assert w is not None
        depth = "" if w.queue_depth is None else f", {w.queue_depth:,} waiting"
        return f"watching: lag {w.lag:.1f} s, {plural(w.handled, 'change')} handled{depth}"

    def on_copied(self, event: Copied) -> None:
        if self.verbose:  # -v: a line per object, as aws-cli prints
            self.out.print(printable(f"copy: {event.src} -> {event.dst}"), markup=False, soft_wrap=True)

    def on_deleted(self, event: Deleted) -> None:
        if self.verbose:
            self.out.print(printable(f"delete: {event.url}"), markup=False, soft_wrap=True)

    def on_restarted(self, event: Restarted) -> None:
        self.err.print(printable(f"restarted: {event.src} ({event.reason})"), markup=False, soft_wrap=True)

    def on_failure(self, event: Failure) -> None:
        self._failures_shown += 1
        if self._failures_shown <= MAX_FAILURE_LINES:
            self.err.print(_failure_line(event), markup=False, soft_wrap=True)
        elif self._failures_shown == MAX_FAILURE_LINES + 1:
            self.err.print("... more failures; the summary has the count", markup=False)

    def _rates(self) -> tuple[float, float]:
        if len(self._rate_window) < 2:
            return 0.0, 0.0
        (t0, n0, b0), (t1, n1, b1) = self._rate_window[0], self._rate_window[-1]
        dt = t1 - t0
        return ((n1 - n0) / dt, (b1 - b0) / dt) if dt > 0 else (0.0, 0.0)

    def _status_line(self) -> str:
        """The live display's figures on one line: 'progress: 120 / 3,000 objects, ...'."""
        p = self._progress
        assert p is not None
        c = p.counters
        objs, rate_b = self._rates()
        more = "" if p.listing_done else "+"
        return (f"progress: {c.done + c.skipped:,} / {c.listed:,}{more} objects, "
                f"{human_bytes(c.moved_bytes + c.skipped_bytes)} / {human_bytes(c.listed_bytes)}{more}, "
                f"{objs:,.0f} objects/s, {human_bytes(rate_b)}/s"
                + (f", {c.failed:,} failed" if c.failed else "") + f", elapsed {human_duration(p.elapsed)}")

    def _render(self) -> Any:
        from rich.table import Table

        p = self._progress
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="bold")
        grid.add_column()
        grid.add_row(self.command, f"{self.src} -> {self.dst}")
        if self._watch is not None:
            grid.add_row("watching", self._watch_line().removeprefix("watching: "))
        if p is None:
            grid.add_row("", "starting...")
            return grid
        c = p.counters
        objs, rate_b = self._rates()
        listed = f"{c.listed:,}" + ("" if p.listing_done else "+ (listing)")
        handled = c.done + c.skipped  # sync: objects found equal are handled too
        if self.command == "check":  # what it found so far, in its own words
            grid.add_row("objects", f"{handled:,} / {listed}   same {c.skipped:,}   differ {c.differ:,}   "
                         f"only in SRC {c.done - c.differ:,}   only in DST {c.deleted:,}"
                         + (f"   failed {c.failed:,}" if c.failed else ""))
        else:
            grid.add_row("objects", f"{handled:,} / {listed}" + (f"   ({c.skipped:,} equal)" if c.skipped else "")
                         + (f"   deleted {c.deleted:,}" if c.deleted else "")
                         + (f"   failed {c.failed:,}" if c.failed else ""))
        grid.add_row("bytes", f"{human_bytes(c.moved_bytes + c.skipped_bytes)} / {human_bytes(c.listed_bytes)}"
                     + ("" if p.listing_done else "+"))
        grid.add_row("rate", f"{objs:,.0f} objects/s   {human_bytes(rate_b)}/s")
        eta = "after listing"
        if p.listing_done:
            # the slower of the two estimates: objects left at the object rate (many small ones),
            # bytes left at the byte rate (one big one)
            left = max(0, c.listed - handled - c.failed)
            left_bytes = max(0, c.listed_bytes - c.moved_bytes - c.skipped_bytes)
            guesses = [left / objs if objs > 0 else None, left_bytes / rate_b if rate_b > 0 else None]
            known = [g for g in guesses if g is not None]
            eta = human_duration(max(known)) if known and (left or left_bytes) else ("-" if left else human_duration(0))
        grid.add_row("elapsed", f"{human_duration(p.elapsed)}   ETA {eta}   workers {p.workers}")
        return grid

    def finish(self, summary: Summary) -> None:
        self.__exit__(None, None, None)
        if self.plain_progress and self._progress is not None:
            self.err.print(self._status_line(), markup=False, soft_wrap=True, highlight=False)  # the final figures
        d = summary_dict(summary, self.command, self.src, self.dst)
        t = _Rows()
        if summary.check:
            self._check_rows(t, summary, d)
        else:
            self._copy_rows(t, summary, d)
        if d["failed"]:
            t.add_row("failed", plural(d["failed"], "object"))
        if summary.open_uploads:
            t.add_row("left open", f"{plural(len(summary.open_uploads), 'multipart upload')} still listed after "
                      f"every abort (kept in the journal: the next run aborts them; so does "
                      f"`s3bulk rm --incomplete-uploads {self.dst}`)")
        if c_retries := d["retries"]:
            t.add_row("retried", f"{plural(c_retries, 'request')} ({d['throttled']:,} throttled; requests in "
                      f"flight at the end: {d['final_concurrency']:,})")
        if summary.check or summary.dry_run:  # nothing moved: a rate would count what was only planned
            t.add_row("time", f"{summary.elapsed:.2f} s")
        else:
            t.add_row("time", f"{summary.elapsed:.2f} s   {d['objects_per_second']:,.0f} objects/s   "
                      f"{human_bytes(d['bytes_per_second'])}/s")
        if self.verbose:  # figures for whoever tunes s3bulk, not for every run (always in --json)
            cpu = f"{summary.cpu_seconds:.2f} s"
            if d.get("cpu_us_per_object") is not None:
                cpu += f"   {d['cpu_us_per_object']:,.0f} us/object"
            t.add_row("cpu", cpu)
            t.add_row("peak RSS", f"{human_bytes(summary.peak_rss_bytes)} (all "
                      f"{plural(summary.workers, 'worker')} and the coordinator, each at its peak)")
        text = _grid_text(t.rows)
        if text is not None:
            sys.stdout.write(text)
            sys.stdout.flush()
        else:
            from rich.table import Table

            grid = Table.grid(padding=(0, 2))
            grid.add_column(style="bold")
            grid.add_column()
            for row in t.rows:
                grid.add_row(*row)
            self.out.print(grid, markup=False)
        if summary.fatal:
            self.error(summary.fatal)

    def _check_rows(self, t: Any, summary: Summary, d: dict[str, Any]) -> None:
        """`check` in its own words: what is the same, what differs, what is on one side only."""
        status = "identical" if summary.ok else ("interrupted" if summary.interrupted else
                                                 "FAILED" if summary.fatal or d["failed"] else "different")
        t.add_row(self.command, f"{self.src} -> {self.dst}   [{status}]")
        t.add_row("same", f"{plural(d['same'], 'object')}, {human_bytes(summary.counters.skipped_bytes)}")
        t.add_row("differ", plural(d["differ"], "object"))
        t.add_row("only in SRC", plural(d["only_in_src"], "object"))
        t.add_row("only in DST", plural(d["only_in_dst"], "object"))

    def _copy_rows(self, t: Any, summary: Summary, d: dict[str, Any]) -> None:
        status = "done" if summary.ok else (f"stopped: --{summary.capped}" if summary.capped else
                                            "interrupted" if summary.interrupted else "FAILED")
        t.add_row(self.command, f"{self.src} -> {self.dst}   [{status}]")
        verb = "would copy" if summary.dry_run else "copied"
        server_side = d["server_side_copies"]  # (counted only where a server did the copying)
        t.add_row(verb, f"{plural(d['copied'], 'object')}, {human_bytes(d['copied_bytes'])}"
                  + (f" ({server_side:,} server-side)" if server_side else ""))
        if self.command == "sync":
            t.add_row("equal", f"{plural(d['skipped'], 'object')}, {human_bytes(d['skipped_bytes'])} (skipped)")
            t.add_row("would delete" if summary.dry_run else "deleted", plural(d["deleted"], "object"))
        elif self.command == "mv":  # each source deleted once its copy landed
            t.add_row("would delete" if summary.dry_run else "deleted",
                      f"{plural(d['deleted'], 'source object')}" + ("" if summary.dry_run else " (moved)"))
        if d["kept"]:  # --no-clobber, --update: counted in skipped too
            t.add_row("kept", f"{plural(d['kept'], 'object')} already at DST (not replaced)")
        if d["skipped_archived"]:
            t.add_row("archived", f"{plural(d['skipped_archived'], 'object')}, "
                      f"{human_bytes(summary.counters.archived_bytes)} skipped (GLACIER or DEEP_ARCHIVE, not "
                      f"restored: --force-archived tries them)")
        if (estimate := summary.estimate()) is not None:
            t.add_row("would send", estimate_text(estimate))
        if summary.resumed_skipped:
            t.add_row("resumed", f"{plural(summary.resumed_skipped, 'object')}, "
                      f"{human_bytes(summary.resumed_skipped_bytes)} done by the interrupted run (skipped)")


class KeyLines(Subscriber):
    """The output of the commands that report key by key outside the worker pool: `rm` (and
    --all-versions), `rm --incomplete-uploads`, `copy --version-id` / `--all-versions`. Each key's
    line goes out as it comes, flushed (a script follows the stream); with --json a JSON line
    each, else a plain line (with -v, or in a dry run). Failures go to stderr as lines, notices as
    "s3bulk: ..."; Progress only feeds --metrics. `start`, `error` and `summary` are the command's
    own JSON lines, written here so every JSON line of these commands comes from one place."""

    def __init__(self, *, json_out: bool, verbose: bool = False, metrics: "MetricsServer | None" = None,
                 out: TextIO | None = None, ascii_frame: bool = False) -> None:
        self.json_out, self.verbose, self.metrics = json_out, verbose, metrics
        self.out = out if out is not None else sys.stdout
        self._dumps = json.JSONEncoder(ensure_ascii=False).encode
        # start and summary with what is not ASCII escaped (`check --against-report` always wrote them so)
        self._frame_dumps = json.JSONEncoder().encode if ascii_frame else self._dumps

    def _json(self, fields: dict[str, Any], flush: bool = True, frame: bool = False) -> None:
        self.out.write((self._frame_dumps if frame else self._dumps)({**fields, "v": JSON_VERSION}) + "\n")
        if flush:
            self.out.flush()

    def _line(self, text: str) -> None:
        self.out.write(printable(text) + "\n")
        self.out.flush()

    def start(self, command: str, src: str, dst: str | None = None) -> None:
        if self.json_out:  # the stream begins with `start` and ends with `summary`, as copy's does
            self._json({"event": "start", "command": command, "src": src, "dst": dst}, frame=True)

    def summary(self, fields: dict[str, Any], flush: bool = True) -> None:
        if self.json_out:
            self._json({"event": "summary", **fields}, flush, frame=True)

    def error(self, message: str, summary: dict[str, Any] | None = None) -> None:
        """The run could not start or go on: with --json an `error` line (and the summary given),
        always the one line on stderr."""
        if self.json_out:
            self._json({"event": "error", "error": message}, flush=False)
            if summary is not None:
                self.summary(summary, flush=False)
        print(printable(f"s3bulk: error: {message}"), file=sys.stderr)

    def on_deleted(self, event: Deleted) -> None:
        if isinstance(event, UploadAborted):
            self._upload(event.json_fields(), event.url, False)
            return
        if not self.verbose:
            return
        if self.json_out:  # the line _json makes of {"event", "action", "dst"}, without its encoder
            self.out.write(f'{{"event": "deleted", "action": "delete", "dst": {encode_basestring(event.url)}, '
                           f'"v": {JSON_VERSION}}}\n')
            self.out.flush()
        else:
            self._line(f"delete: {event.url}")

    def on_dry_run(self, event: DryRunAction) -> None:
        if isinstance(event, UploadFound):
            self._upload(event.json_fields(), event.dst, True)
            return
        if self.json_out:
            self.out.write(f'{{"event": "dryrun", "action": "delete", "dst": {encode_basestring(event.dst)}, '
                           f'"v": {JSON_VERSION}}}\n')
            self.out.flush()
        else:
            self._line(f"(dryrun) delete: {event.dst}")

    def on_copied(self, event: Copied) -> None:
        if self.json_out:
            self._json({"event": "copied", "src": event.src, "dst": event.dst})
        elif self.verbose:
            self._line(f"copy: {event.src} -> {event.dst}")

    def _upload(self, fields: dict[str, Any], url: str, dry_run: bool) -> None:
        """rm --incomplete-uploads: an upload aborted, or (dry) found."""
        if self.json_out:
            self._json(fields)
        elif dry_run or self.verbose:
            self._line(f"{'(dryrun) ' if dry_run else ''}abort: {url}")

    def on_difference(self, event: Difference) -> None:
        """`check --against-report`: a line each, unflushed (there may be millions)."""
        if self.json_out:
            self.out.write(self._dumps({**event.json_fields(), "v": JSON_VERSION}) + "\n")
        else:
            write_line(self.out, event.line())

    def on_failure(self, event: Failure) -> None:
        if self.json_out:
            sides = {"src": event.src, "dst": event.dst} if event.dst else {"src": event.src}
            self._json({"event": "failure", "op": event.op, **sides, "error": event.error})
        else:
            op = "abort" if event.op == "abort multipart upload" else event.op
            where = f"{event.src} -> {event.dst}" if event.dst else event.src
            print(printable(f"ERROR {op} {where}: {event.error}"), file=sys.stderr, flush=True)

    def on_notice(self, event: Notice) -> None:
        print(f"s3bulk: {event.message}", file=sys.stderr, flush=True)

    def on_progress(self, event: Progress) -> None:
        if self.metrics is not None:
            self.metrics.progress(event.counters)


# Keys and server answers are not ours: a newline in one must not start a line that looks like
# another message, and an escape sequence must not reach the terminal.
_ESCAPES = {c: f"\\x{c:02x}" for c in [*range(0x20), *range(0x7f, 0xa0)]}
_ESCAPES.update({ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t"})


def plural(n: int, noun: str) -> str:
    """'1 object', '2 objects', '1,000 objects'."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def estimate_text(estimate: dict[str, Any], moving: bool = True) -> str:
    """A dry run's estimate in one line: '7 requests (LIST 1, PUT 3, ...), moving 19.1 MiB'."""
    requests: dict[str, int] = estimate["requests"]
    each = ", ".join(f"{op} {n:,}" for op, n in requests.items())
    return (f"{plural(sum(requests.values()), 'request')}" + (f" ({each})" if each else "")
            + (f", moving {human_bytes(estimate['bytes'])}" if moving else ""))


def printable(text: str) -> str:
    """Text as one line with control characters shown escaped (\\n, \\x1b, ...)."""
    return text.translate(_ESCAPES)


def _failure_line(f: Failure) -> str:
    where = f"{f.src} -> {f.dst}" if f.dst else f.src
    return printable(f"ERROR {f.op} {where}: {f.error}")


def make_renderer(command: str, src: str, dst: str, *, json_mode: bool, quiet: bool,
                  progress: bool | None, verbose: bool = False) -> Renderer:
    if json_mode:
        return JsonRenderer(command, src, dst)
    if quiet:
        return QuietRenderer(command, src, dst)
    live = sys.stderr.isatty() if progress is None else progress
    return HumanRenderer(command, src, dst, live=live, verbose=verbose)
