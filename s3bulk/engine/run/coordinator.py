"""The coordinator's loop: hands work units to the workers and adds up what they report.

Only work units and aggregated counters cross process boundaries. The coordinator holds the
frontier of the listing (units waiting for a worker) and a count of units not yet finished; the
run is over when that count reaches zero. It alone writes the resume journal (engine/journal/units.py): units
finished, multipart uploads open.

A run goes through these phases (`Phase`):

    LISTING   units are handed out and some are not listed yet
    COPYING   everything is listed; the last pages are being copied
    STOPPING  `should_stop()` turned true (the Lambda handler's deadline): no new units are handed
              out and workers start no new object; transfers in flight finish, the rest is handed
              back as `summary.resume`
    DRAINING  a first Ctrl-C or SIGTERM: workers get SIGUSR1 and take no new objects; transfers in
              flight finish (a multipart upload finishes its parts in flight and stays open for the
              resume); units not finished come back; the summary says `interrupted`
    DONE      the loop has ended (all done, a fatal error, or a stop that ran its course)

A second Ctrl-C (or DRAINING for longer than DRAIN_SECONDS) ends the loop at once with the workers
terminated (`forced`). Either way the journal holds only units whose every object was copied.

Starting the workers (processes, a thread, a Dask cluster) is launch.py's job; this module sees them
as handles that look like a multiprocessing.Process.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import os
import queue
import resource
import signal
import threading
import time
from collections import deque
from typing import TYPE_CHECKING, Any, Callable

from .peak_rss import peak_rss_bytes
from ...errors import S3BulkError
from ...model import Counters, Failure, Summary, WorkUnit
from ..messages import (Abandoned, Deletes, Exited, Fatal, Listed, ObjectNote, ObjectsReported, Planned,
                        ProgressReport, UnitDone, UploadEnded, UploadStarted, WorkerMessage)
from ..listing import hints
from ..events import Copied, Deleted, Event, Notice, Progress, Restarted, Skipped, Stopping
from ..plan import Plan
from ..listing.units import join_units

if TYPE_CHECKING:
    from dataclasses import dataclass
else:  # the same classes at less compiling (quick_dataclass.py says why)
    from ...quick_dataclass import dataclass

MAX_FAILURES_KEPT = 1000
DRAIN_SECONDS = 30.0  # a graceful stop that takes longer than this becomes an immediate one
PROGRESS_SECONDS = 0.25
DELETE_BATCHES_IN_FLIGHT = 8  # DeleteObjects requests (1,000 keys each) of the delete phase at once
Emit = Callable[[Event], None]  # Subscriber.notify of the run's subscriber (engine/events.py)


class Phase(enum.Enum):
    LISTING = "listing"
    COPYING = "copying"
    STOPPING = "stopping"
    DRAINING = "draining"
    DONE = "done"


class Signals:
    """Counts SIGINT and SIGTERM while a run is on (main thread only) instead of raising
    KeyboardInterrupt at whatever line the coordinator is on: the loop looks at the count, so the
    journal is never written half-way. Restores the previous handlers."""

    def __init__(self) -> None:
        self.count = 0
        self._old: dict[int, Any] = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._old[sig] = signal.signal(sig, self._on_signal)

    def _on_signal(self, signum: int, frame: Any) -> None:
        self.count += 1

    def restore(self) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old = {}


@dataclass(frozen=True)
class Crew:
    """The workers a run started (launch.py), as the coordinator drives them: their handles, the
    queue they take units from and the one they report on, whether they run on a thread of this
    process, the signals counted meanwhile, and what closes a runner's connection at the end."""

    handles: list[Any]
    units_q: Any
    events_q: Any
    signals: Signals
    in_process: bool
    close: Callable[[], None] | None = None


class Coordinator:
    """One run's loop over started workers (`handles`, fed through `units_q`, reporting on
    `events_q`). `run()` returns the finished summary; it also closes the journal and the cluster
    connection and restores the signal handlers, whatever happens."""

    def __init__(self, plan: Plan, summary: Summary, crew: Crew, starts: list[WorkUnit], *, emit: Emit,
                 started: float, journal: Any = None, should_stop: Callable[[], bool] | None = None) -> None:
        handles, units_q, events_q, signals = crew.handles, crew.units_q, crew.events_q, crew.signals
        in_process, close = crew.in_process, crew.close
        self.plan, self.summary, self.handles = plan, summary, handles
        self.units_q, self.events_q = units_q, events_q
        self.signals, self.emit, self.started = signals, emit, started
        self.in_process, self.journal, self.should_stop = in_process, journal, should_stop
        self._close = close
        self.workers = summary.workers
        # Units that may exist at once: a few times the pages the workers can list at a time, so
        # listing runs through many chains without the coordinator holding (or the store answering) a
        # flood of them. A run that may be asked to stop and hand back one unit to continue from
        # (should_stop, the Lambda handler) lists through one chain.
        self.max_units = 1 if should_stop is not None else max(16, 8 * self.workers * plan.options.pages_ahead)
        # a fresh run of an ordered source starts from where the last run's pages ended (engine/listing/hints.py)
        # and keeps where its own end, for the next run
        self.sample: hints.BoundarySample | None = None
        fresh = starts == [WorkUnit()] and should_stop is None and not (journal is not None and journal.resumed)
        if fresh and hints.applies(plan):
            self.sample = hints.BoundarySample()
            starts = hints.start_units(plan.src, max(2, self.max_units // 2)) or starts
        self.frontier: deque[WorkUnit] = deque(starts)
        self.pending = len(starts)    # units handed out or waiting, not yet done
        self.unlisted = len(starts)   # units whose page has not been listed yet
        self.unit_failures = 0        # units with a failed object: not journaled, a resume redoes them
        self.exited: dict[int, tuple[int, float]] = {}  # worker id -> (peak RSS, CPU seconds)
        self.phase = Phase.LISTING
        self.draining_since: float | None = None
        self.forced = False
        self._last_progress = 0.0
        self._told: set[str] = set()  # notices of the workers already passed on
        # --max-transfer / --max-duration (caps.py): reached, the run stops as a first Ctrl-C stops it
        from .caps import Caps

        self.caps = Caps.of(plan, started) if should_stop is None else None
        # sync --delete (engine/run/deletes.py): the keys to delete once every copy succeeded
        self.deletes: Any = None
        self.deletes_left = False  # the delete phase did not finish: the journal stays for --resume
        self.backed_up = 0  # --backup-dir: objects copied there (by the workers and the delete phase)
        if plan.sync is not None and plan.sync.delete and not plan.sync.dry_run:
            from .deletes import DeferredDeletes

            self.deletes = DeferredDeletes(journal)

    # --- what workers report ------------------------------------------------------------------
    def handle(self, msg: WorkerMessage) -> None:
        summary, journal = self.summary, self.journal
        if isinstance(msg, ProgressReport):
            summary.counters.add(msg.counters)
            for f in msg.failures:
                if f.kind == "UploadLeftOpen":  # worker.py LEFT_OPEN: named in the summary too
                    summary.open_uploads.append(f.src)
                _keep_failure(summary, f)
                self.emit(f)
        elif isinstance(msg, Planned):
            for event in msg.events:
                if isinstance(event, Notice):  # each worker may say it: once is enough
                    if event.message in self._told:
                        continue
                    self._told.add(event.message)
                self.emit(event)
        elif isinstance(msg, ObjectsReported):
            _emit_objects(self.emit, msg.notes, _restart_reason(self.plan))
        elif isinstance(msg, Listed):
            pieces = msg.pieces
            self.unlisted -= 1
            if self.sample is not None and pieces and pieces[0].after is not None:
                self.sample.add(pieces[0].after)  # where the listed page ended
            if len(pieces) > 1 and self.pending + len(pieces) - 1 > self.max_units:
                pieces = [join_units(pieces)]  # enough units already: this one stays a chain for now
            self.frontier.extend(pieces)
            self.pending += len(pieces)
            self.unlisted += len(pieces)
            if self.unlisted == 0 and self.phase is Phase.LISTING:
                self.phase = Phase.COPYING
        elif isinstance(msg, Deletes):
            self.backed_up += msg.backed_up
            if self.deletes is not None:
                self.deletes.found(msg.wid, msg.unit, msg.keys, msg.dst_seen, msg.skipped)
        elif isinstance(msg, UnitDone):
            self.pending -= 1
            summary.counters.units += 1
            if self.deletes is not None:
                self.deletes.unit_done(msg.wid, msg.unit, bool(msg.failed))
            if msg.failed:
                self.unit_failures += 1  # a resume does the unit again (its object log keeps the rest)
            elif journal is not None:
                journal.unit_done(msg.unit, msg.rest, msg.objects, msg.nbytes, msg.object_log)
        elif isinstance(msg, Abandoned):  # a graceful stop: back where it came from, unfinished
            self.frontier.append(msg.unit)
            if msg.was_listed:
                self.unlisted += 1
        elif isinstance(msg, UploadStarted):
            if journal is not None:
                n = msg.note
                journal.upload_started(n.key, n.upload_id, n.size, n.part_size, n.src_size, n.src_mtime, n.src_etag)
        elif isinstance(msg, UploadEnded):
            if journal is not None:
                journal.upload_ended(msg.note.key, msg.note.upload_id)
        elif isinstance(msg, Fatal):
            if summary.fatal is None:
                summary.fatal = msg.message
                summary.fatal_code = msg.exit_code
        elif isinstance(msg, Exited):
            self.exited[msg.wid] = (msg.peak_rss_bytes, msg.cpu_seconds)

    def drain_events(self, first_timeout: float) -> None:
        """Handle what the workers sent: wait up to first_timeout for one message, then take what
        else is queued (bounded), and write the journal when due."""
        try:
            self.handle(self.events_q.get(timeout=first_timeout))
            for _ in range(256):
                self.handle(self.events_q.get_nowait())
        except queue.Empty:
            pass
        if self.journal is not None:
            self.journal.maybe_commit()

    def snapshot(self) -> Progress:
        """The counts as they are now: a copy, so an event kept by a subscriber stays as it was."""
        c = self.summary.counters
        return Progress(dataclasses.replace(c, requests=dict(c.requests), planned=dict(c.planned)), self.unlisted == 0,
                        time.monotonic() - self.started, self.workers)

    # --- the phases ------------------------------------------------------------------------------
    def _begin_draining(self, tell: bool = True) -> None:
        """First Ctrl-C / SIGTERM (or a cap reached: caps.py, which says so itself, `tell` False):
        tell every worker, take back what nobody claimed, and give each worker the None that makes
        it hand back whatever it still takes from the queue."""
        self.draining_since = time.monotonic()
        self.phase = Phase.DRAINING
        self.summary.interrupted = True
        if tell:
            self.emit(Stopping())
        for p in self.handles:
            _request_stop(p)
        _take_back(self.units_q, self.frontier)
        for _ in self.handles:
            try:
                self.units_q.put(None, timeout=1)
            except queue.Full:
                break

    def _begin_stopping(self) -> None:
        """should_stop() turned true (a Lambda near its deadline): workers start no new object, even
        inside a page they are copying (a page is up to 1,000 objects: finishing it could outlast the
        deadline); the transfers in flight finish, and units no worker claimed come back. What was
        copied of an unfinished page is in its object log, so a journaled run resumes per object."""
        self.phase = Phase.STOPPING
        for p in self.handles:
            _request_stop(p)
        _take_back(self.units_q, self.frontier)

    @property
    def _stopping(self) -> bool:
        return self.phase in (Phase.STOPPING, Phase.DRAINING)

    def _hand_out(self) -> None:
        """Units from the frontier into the workers' queue, as many as it takes now."""
        while self.frontier:
            try:
                self.units_q.put_nowait(self.frontier[0])
                self.frontier.popleft()
            except queue.Full:
                break

    def _step(self) -> bool:
        """One turn of the loop; False when the loop must end."""
        signals = self.signals
        if signals.count and self.draining_since is None:
            self._begin_draining()
        if self.caps is not None and self.draining_since is None and not self._stopping:
            cap = self.caps.reached(self.summary.counters)
            if cap is not None:
                self.summary.capped = cap
                self.emit(Notice(f"--{cap} reached: no new object starts; finishing the transfers in flight"))
                self._begin_draining(tell=False)
        if signals.count >= 2 or (self.draining_since is not None
                                  and time.monotonic() - self.draining_since > DRAIN_SECONDS):
            self.forced = True
            return False
        if not self._stopping and self.should_stop is not None and self.should_stop():
            self._begin_stopping()
        if self._stopping and self.pending == len(self.frontier):
            return False  # nothing in flight any more
        if not self._stopping:
            self._hand_out()
        self.drain_events(0.1)
        now = time.monotonic()
        if now - self._last_progress >= PROGRESS_SECONDS:
            self._last_progress = now
            self.emit(self.snapshot())
            return self._judge_dead_workers()
        return True

    def _judge_dead_workers(self) -> bool:
        """A worker that exited without its Exited message died (OOM killer, a crash): the run stops
        with a fatal error. False when the loop must end."""
        if not _dead_workers(self.handles, self.exited):
            return True
        # its last words may still be in the queue: read them before judging
        until = time.monotonic() + 1.0
        while time.monotonic() < until and _dead_workers(self.handles, self.exited) and self.pending > 0:
            self.drain_events(0.2)
        dead = _dead_workers(self.handles, self.exited)
        if dead and self.pending > 0:
            if self.draining_since is not None:
                return False  # stopped from outside as well (e.g. SIGTERM to the process group)
            self.summary.fatal = dead
        return True

    def run(self) -> Summary:
        summary = self.summary
        try:
            while self.pending > 0 and summary.fatal is None and self._step():
                pass
            self._shutdown(force=self.forced or summary.fatal is not None, now=lambda: self.signals.count >= 2)
            if summary.capped and self.pending == 0 and not self.forced and not self.signals.count:
                summary.capped, summary.interrupted = None, False  # the cap came with the last objects: all done
            if self.phase is Phase.STOPPING and self.frontier:
                summary.resume = min(self.frontier, key=lambda u: u.seq)
            if self.deletes is not None:
                self._settle_deletes()
            if self.backed_up and self.plan.backup is not None:
                done = "deleted or overwritten" if self.plan.sync is not None else "overwritten"  # copy, mv
                them = "object" if self.backed_up == 1 else "objects"
                self.emit(Notice(f"{self.backed_up:,} {them} backed up to {self.plan.backup.raw} "
                                 f"before {'it was' if self.backed_up == 1 else 'they were'} {done}"))
        except KeyboardInterrupt:
            summary.interrupted = self.forced = True
            self._shutdown(force=True)
        except BaseException:  # a bug here: the workers must not outlive it (the process would hang)
            self.forced = True
            self._shutdown(force=True)
            raise
        finally:
            self.phase = Phase.DONE
            self._finish()
        summary.resumed_skipped += summary.counters.resumed
        summary.resumed_skipped_bytes += summary.counters.resumed_bytes
        summary.elapsed = time.monotonic() - self.started
        own = resource.getrusage(resource.RUSAGE_SELF)
        summary.cpu_seconds = own.ru_utime + own.ru_stime + sum(cpu for _, cpu in self.exited.values())
        summary.peak_rss_bytes = peak_rss_bytes() + sum(rss for rss, _ in self.exited.values())
        self.emit(self.snapshot())
        return summary

    def _finish(self) -> None:
        """Temporary files of a cut-off in-process worker, the journal's last commit, the signal
        handlers, the cluster connection: in that order."""
        summary, journal = self.summary, self.journal
        if self.forced and self.in_process:
            from ...stores.files.landing import remove_open_temps

            remove_open_temps()
        if self.deletes is not None:
            self.deletes.close(remove=journal is None or not self.deletes_left)
        if journal is not None:
            complete = (self.pending == 0 and self.unit_failures == 0 and summary.fatal is None
                        and not summary.interrupted and not self.deletes_left)
            if complete and journal.uploads:
                # left by an earlier run for objects no longer listed, or aborted by a worker but
                # still listed by the server after every try (stores/base.py why_still_open)
                from ..leftover_uploads import abort_uploads

                rows = list(journal.uploads.values())
                left = quietly(abort_uploads, self.plan.dst, self.plan.options, rows)
                left = rows if left is None else left
                if left:  # kept in the journal: the next run of this command aborts them again
                    complete = False
                    named = [f"{self.plan.dst.url_for(r['dst_key'])}?uploadId={r['upload_id']}" for r in left]
                    summary.open_uploads += [u for u in named if u not in summary.open_uploads]
            journal.finish(complete=complete)
            if complete:
                summary.journal = None
        if self.sample is not None and self.pending == 0 and self.unit_failures == 0 and summary.fatal is None \
                and not summary.interrupted:
            hints.save(self.plan.src, self.sample)
        self.signals.restore()  # only now: a further Ctrl-C cannot cut the journal's last commit short
        if self._close is not None:
            self._close()

    def _settle_deletes(self) -> None:
        """The delete phase (engine/run/deletes.py): the spooled deletes go only when every unit is
        done and nothing failed, within the caps; otherwise none, said in one line."""
        from .deletes import refuse

        summary, deletes, sync = self.summary, self.deletes, self.plan.sync
        assert sync is not None
        c = summary.counters
        waiting = deletes.spool.count
        everything = self.pending == 0 and summary.fatal is None and not summary.interrupted
        if not everything or c.failed or self.unit_failures or deletes.skipped:
            self.deletes_left = bool(waiting)
            left = waiting + deletes.skipped
            if left:
                why = (f"{c.failed:,} objects failed" if c.failed else
                       "the run was interrupted (--resume does them)" if summary.interrupted else
                       "the run stopped" if summary.fatal else "not every unit finished")
                self.emit(Notice(f"{left:,} deletes not done: {why}"))
            return
        if not waiting:
            return
        src_objects = -1 if self.plan.manifest is not None else c.listed + c.resumed + summary.resumed_skipped
        try:
            refuse(sync, waiting, deletes.spool.nbytes, deletes.dst_seen, src_objects)
        except S3BulkError as exc:
            self.deletes_left = True  # the journal keeps them: a --resume with a cap that allows them deletes
            summary.fatal, summary.fatal_code = str(exc), exc.exit_code
            return
        self.deletes_left = True  # until the last batch is done
        try:
            asyncio.run(self._delete_phase())
        except S3BulkError as exc:
            summary.fatal = f"the delete phase stopped: {exc}"
            summary.fatal_code = exc.exit_code
            return
        if not summary.interrupted and not c.failed:
            self.deletes_left = False

    async def _delete_phase(self) -> None:
        """Every spooled key deleted in batches of 1,000 (backed up first with --backup-dir),
        DELETE_BATCHES_IN_FLIGHT batches at once (as rm), counted and reported as the workers'
        deletes were; a Ctrl-C stops between batches."""
        from ...stores import Writer, open_store
        from ...stores.requests import counts_of, take as take_requests
        from .deletes import delete_batch

        plan, summary = self.plan, self.summary
        assert plan.sync is not None
        dst = await open_store(plan.dst, plan.options.store_options())
        assert isinstance(dst, Writer)  # the planner refused a DST that cannot be written
        counted = counts_of(dst)  # the requests sent, counted as the workers count theirs
        backup = None
        window = asyncio.Semaphore(DELETE_BATCHES_IN_FLIGHT)
        tasks: set[asyncio.Task[None]] = set()

        async def one(batch: list[tuple[str, int]]) -> None:
            try:
                counts = Counters()
                failures: list[Failure] = []
                notes: list[ObjectNote] | None = [] if plan.report_objects else None
                await delete_batch(dst, batch, backup, plan.dst.url_for, counts, failures, notes)
                if counted:
                    take_requests(counted, counts.requests)
                summary.counters.add(counts)
                for f in failures:
                    _keep_failure(summary, f)
                    self.emit(f)
                if notes:
                    _emit_objects(self.emit, notes, "")
                self.emit(self.snapshot())
            finally:
                window.release()

        try:
            if plan.backup is not None:
                from ..transfer.backup import open_backup

                backup = await open_backup(dst, plan.dst, plan.backup, plan.sync.suffix, plan.options)
            for batch in self.deletes.spool.batches():
                await window.acquire()
                if self.signals.count:
                    summary.interrupted = True
                    window.release()
                    break
                task = asyncio.ensure_future(one(batch))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            if backup is not None:
                self.backed_up += backup.saved
                await backup.close()
            await dst.close()

    def _shutdown(self, *, force: bool, now: Callable[[], bool] = lambda: False) -> None:
        """Tell every worker to stop, collect their last counters, and reap them. `now()` turning
        true (a second Ctrl-C) while waiting makes it a forced stop."""
        handles, units_q, events_q, exited = self.handles, self.units_q, self.events_q, self.exited
        if force:
            for p in handles:
                if p.is_alive():
                    p.terminate()
        for _ in handles:  # also frees a thread worker blocked waiting for a unit
            try:
                units_q.put(None, timeout=0 if force else 5)
            except queue.Full:
                break
        deadline = time.monotonic() + (5 if force else 60)
        while len(exited) < len(handles) and time.monotonic() < deadline:
            if not force and now():
                force = True
                deadline = time.monotonic() + 5
                for p in handles:
                    if p.is_alive():
                        p.terminate()
            try:
                self.handle(events_q.get(timeout=0.1))
            except queue.Empty:
                if all(p.exitcode is not None for p in handles):
                    # drain what is left, then stop waiting for workers that cannot speak any more
                    try:
                        while True:
                            self.handle(events_q.get_nowait())
                    except queue.Empty:
                        break
        for p in handles:
            p.join(timeout=5)
            if p.is_alive():
                p.kill()
                p.join(timeout=5)


def _restart_reason(plan: Plan) -> str:
    """Why an object of this run starts over: its source is a local file (held to one identity while
    it is read) or an object read with If-Match; the restart's reason is the one line its second
    change would fail with (stores/conditions.py)."""
    from ...errors import SourceChanged, SourceFileChanged

    return (SourceFileChanged if plan.src.is_local else SourceChanged).final_message


def _emit_objects(emit: Emit, notes: list[ObjectNote], restart_reason: str) -> None:
    """Per-object notes (plan.report_objects) as events: Copied, Skipped, and Deleted (side "src"
    for mv's sources, "dst" for sync --delete); and, whatever report_objects says, Restarted for an
    object started over because its source changed while it was read."""
    for kind, url, other, size, etag, checksum in notes:
        if kind == "copied":
            emit(Copied(url, other, size or 0, etag))
        elif kind == "skipped":
            emit(Skipped(url, other, size, etag, checksum))
        elif kind == "kept":  # --no-clobber, --update: the last field is the reason (worker.py _count_kept)
            emit(Skipped(url, other, size, etag, None, checksum))
        elif kind == "restarted":
            emit(Restarted(url, other, restart_reason))
        elif kind == "moved":
            emit(Deleted(url, "src", other, size, etag))
        else:
            emit(Deleted(url, "dst"))


def _request_stop(p: Any) -> None:
    """Ask one worker for a graceful stop (SIGUSR1 to a process; a flag for the in-process one)."""
    if hasattr(p, "request_stop"):
        p.request_stop()
    elif p.pid is not None and p.exitcode is None:
        try:
            os.kill(p.pid, signal.SIGUSR1)
        except ProcessLookupError:
            pass


def _take_back(units_q: Any, frontier: deque[WorkUnit]) -> None:
    """Units still waiting in the queue (no worker claimed them) go back to the frontier."""
    try:
        while True:
            unit = units_q.get_nowait()
            if unit is not None:
                frontier.append(unit)
    except queue.Empty:
        pass


def quietly(fn: Callable[..., Any], *args: Any) -> Any:
    """Run a best-effort async clean-up (aborting uploads) from the coordinator: its result, None
    when it failed."""
    import asyncio

    try:
        return asyncio.run(fn(*args))
    except Exception:
        return None


def _keep_failure(summary: Summary, failure: Failure) -> None:
    if len(summary.failures) < MAX_FAILURES_KEPT:
        summary.failures.append(failure)
    else:
        summary.failures_dropped += 1


def _dead_workers(handles: list[Any], exited: dict[int, Any]) -> str | None:
    for wid, p in enumerate(handles):
        if p.exitcode is not None and wid not in exited:
            how = f"killed by signal {-p.exitcode}" if p.exitcode < 0 else f"exit code {p.exitcode}"
            return f"worker {wid} died unexpectedly ({how})"
    return None
